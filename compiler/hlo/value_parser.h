// Parsers for the typed attribute values and shapes of HLO text (parser.cc's helpers; the
// grammar of each is in REFERENCE.md section 1). Each reads at the lexer's cursor, leaves the
// cursor after the value, and throws ParseError at the offending offset. `attribute` is the
// attribute's name, for messages.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/hlo/attribute.h"
#include "compiler/hlo/lexer.h"
#include "isa/shape.h"

namespace tpusim::hlo {

// Deepest nesting of tuple shapes, tuple literals and array literal braces the parser follows.
inline constexpr int kMaxNesting = 64;

// A shape as HLO text writes it: an array shape (isa::ParseShapeAt) or a tuple, whose elements
// may be separated by comments (`/*index=5*/`). Dimension sizes must not be negative.
isa::Shape ParseShape(Lexer& lexer, int depth = 0);
// Shapes equal but for layouts (XLA's ShapeUtil::Compatible).
bool Compatible(const isa::Shape& a, const isa::Shape& b);
// The shape text without layouts, as XLA prints computation signatures.
isa::Shape WithoutLayouts(const isa::Shape& shape);

int64_t ParseIntValue(Lexer& lexer, std::string_view attribute);
bool ParseBoolValue(Lexer& lexer, std::string_view attribute);
double ParseDoubleValue(Lexer& lexer, std::string_view attribute);
std::string ParseQuotedValue(Lexer& lexer, std::string_view attribute);
std::string_view ParseIdentifierValue(Lexer& lexer, std::string_view attribute);
std::vector<int64_t> ParseIntList(Lexer& lexer, std::string_view attribute);
IdentifierList ParseIdentifierList(Lexer& lexer, std::string_view attribute);
Window ParseWindow(Lexer& lexer, std::string_view attribute);
ConvolutionDimensionNumbers ParseDimLabels(Lexer& lexer, std::string_view attribute);
std::vector<SliceDimension> ParseSlice(Lexer& lexer, std::string_view attribute);
PaddingConfig ParsePadding(Lexer& lexer, std::string_view attribute);
ReplicaGroups ParseReplicaGroups(Lexer& lexer, std::string_view attribute);
std::vector<SourceTargetPair> ParseSourceTargetPairs(Lexer& lexer, std::string_view attribute);
ProgramShape ParseProgramShape(Lexer& lexer, std::string_view attribute);

// A name (with or without '%') and where it starts.
struct NameRef {
  std::string_view name;
  std::size_t offset = 0;
};
NameRef ParseNameRef(Lexer& lexer, std::string_view what);
// `{%a, %b}` (possibly empty).
std::vector<NameRef> ParseNameList(Lexer& lexer, std::string_view attribute, std::string_view what);

}  // namespace tpusim::hlo
