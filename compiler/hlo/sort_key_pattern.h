// JAX's canonicalization of a float sort key inside a comparator,
// select(x != x, +NaN, select(x == 0, +0, x)): NaNs made one quiet NaN, -0 made +0. The
// evaluator's fast sort path and the compiler's sort kernel both recognise it.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::hlo {

// x when `node` is that form, else nullptr.
const Instruction* CanonicalizedSortKey(const Instruction& node);

}  // namespace tpusim::hlo
