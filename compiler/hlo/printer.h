// Writes an hlo::Module as HLO text in tpusim's canonical style (docs/hlo.md): the style of
// current XLA dumps (names without '%', operand shapes left out, ROOT and ENTRY always, every
// computation with its signature, shapes with the layouts they were given). ParseModule reads it
// back to the same module, and printing that again gives the same text.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"

namespace tpusim::hlo {

std::string ToString(const Module& module);
// One computation: signature line, instructions, closing brace (no trailing newline).
std::string ToString(const Computation& computation);
// One instruction as a line of its computation, without indentation or newline (with `ROOT `
// if it is its computation's root).
std::string ToString(const Instruction& instruction);
// The text after `name=` of an attribute.
std::string ToString(const AttributeValue& value);

}  // namespace tpusim::hlo
