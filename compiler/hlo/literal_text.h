// The text form of constant values in HLO: `0.125`, `-inf`, `nan`, `true`, `{1, 2}`,
// `{ {1, 2}, {3, 4} }` (nesting depth = rank), tuples `({1, 2}, 3)`. Parsing needs the shape
// (the text does not say the element type); printing writes floats with the fewest digits that
// read back to the same value of the element type.
#pragma once

#include <string>
#include <string_view>

#include "compiler/hlo/lexer.h"
#include "compiler/hlo/literal.h"
#include "isa/shape.h"

namespace tpusim::hlo {

// True if a Literal can hold a value of `shape`: every array in it has an element type that
// isa::IsSupported accepts. Constants of other shapes keep their text (ConstantForm::kText).
bool LiteralCanHold(const isa::Shape& shape);

// Parses the value of a constant of `shape` at the lexer's cursor. Throws ParseError.
Literal ParseLiteral(Lexer& lexer, const isa::Shape& shape);
// Parses all of `text` as a value of `shape`. Throws ParseError (offsets into `text`).
Literal ParseLiteralText(std::string_view text, const isa::Shape& shape);

// The canonical text of `literal`, which ParseLiteralText reads back to an equal literal.
std::string LiteralToText(const Literal& literal);

}  // namespace tpusim::hlo
