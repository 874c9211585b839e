// Which binary operation a reduce's (or reduce-window's) `to_apply` computation is, when it is one
// of its two parameters: an HLO fact the reduce kernels lower from and `--check` bounds from.
#pragma once

#include <optional>

#include "compiler/hlo/ir.h"

namespace tpusim::hlo {

enum class ReduceOp { kAdd, kMultiply, kMaximum, kMinimum, kAnd, kOr, kXor };

// The op when `reduce`'s (or a reduce-window's) to_apply is one binary op of its two parameters
// (op(p0, p1), or op(p1, p0) for these commutative ops) on scalars; nullopt for any other reducer.
std::optional<ReduceOp> ReducerOpOf(const Instruction& reduce);

}  // namespace tpusim::hlo
