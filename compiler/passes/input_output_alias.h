// The entry parameters a module donates to its outputs: the `HloModule` line's
// `input_output_alias={ {0}: (0, {}, may-alias), {1}: (2, {1}, must-alias) }` (output shape index:
// (parameter number, parameter shape index, kind)). A donated parameter's buffer may hold the
// output it is paired with, as on a TPU where JAX's donate_argnums lets XLA update weights in place.
#pragma once

#include <cstddef>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

struct DonatedParameter {
  std::size_t output_leaf = 0;  // in the flattened entry result (tuple leaves depth first)
  const hlo::Instruction* parameter = nullptr;
  std::size_t parameter_leaf = 0;  // in the parameter's flattening
  bool must_alias = false;
};

// The module's input_output_alias, checked against the entry's shapes (an index that names no
// array, or a pair of different shapes, is a tpusim::Error at the attribute's file:line:col).
// Empty when the module has none.
std::vector<DonatedParameter> ParseInputOutputAlias(const hlo::Module& module);

}  // namespace tpusim::compiler
