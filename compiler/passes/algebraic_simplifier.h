// A few of XLA's AlgebraicSimplifier rewrites, the ones JAX's unoptimized HLO needs before tpusim's
// kernels see it (each would otherwise be a data-movement kernel of its own):
//   - broadcast(x) into x's own dims in order (dimensions={0,1,...}) is x;
//   - transpose(x) with the identity permutation is x;
//   - reshape(x) to x's own dims is x, and reshape(reshape(x)) is reshape(x);
// where the result's layout, if written, is x's (else the op moves bytes). The attention block's
// softmax broadcasts its row maximum and sum through [1,12,128,1] identity broadcasts and
// reshapes back and forth: two kernels of 1 us each.
//   - a reshape that only drops size-1 dims of a transpose is the transpose of the operand without
//     them (so a dot reading it folds the transpose);
//   - maximum(x, -inf) and minimum(x, +inf) are x;
//   - a convert read only by a reshape or a broadcast goes after it.
// Runs before layout assignment.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void SimplifyAlgebraically(hlo::Module& module);

}  // namespace tpusim::compiler
