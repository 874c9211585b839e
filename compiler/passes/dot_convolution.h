// Convolutions without spatial dims as the dots they are. XLA's TPU pipeline writes matmuls as
// such convolutions (`convolution(a, b), dim_labels=bf_io->bf` in optimized dumps, inside kOutput
// fusions); the MXU dot kernel lowers dots: lhs [b, f] x rhs [i, o] -> [b, o] is
// dot(lhs, rhs, lhs_contracting_dims={f}, rhs_contracting_dims={i}), its result transposed where
// the convolution's output labels put o before b. Only feature_group_count and
// batch_group_count 1 (other convolutions stay as they are). Runs before layout assignment.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void RewriteDotConvolutions(hlo::Module& module);

}  // namespace tpusim::compiler
