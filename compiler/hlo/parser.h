// Parses XLA's HLO text (REFERENCE.md section 1; docs/hlo.md) into an hlo::Module.
#pragma once

#include <memory>
#include <string_view>

#include "compiler/hlo/ir.h"

namespace tpusim::hlo {

// Parses a whole module. `source_name` (a file name, or a description such as "<test>") starts
// every error message. Throws tpusim::Error whose what() is already formatted by
// FormatParseError: `source:line:col: message`, the offending line, and a caret under the column.
//
// Beyond syntax it checks what a reader of the text can check without knowing what operations
// mean: names are unique (instructions within their computation, computations within the
// module), operands name earlier instructions of the same computation and match any shape
// printed with them, computation references resolve (before or after their definition) without
// a cycle, parameter numbers are 0..n-1 and agree with the signature and the
// entry_computation_layout, at most one ROOT per computation and one ENTRY per module.
std::unique_ptr<Module> ParseModule(std::string_view text, std::string_view source_name);

}  // namespace tpusim::hlo
