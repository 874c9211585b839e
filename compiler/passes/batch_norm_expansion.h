// Batch normalization as the ops it is made of, as XLA's BatchNormExpander writes it (TPU's
// pipeline runs that pass; no TPU kernel computes the three ops whole). Per feature l (the
// operand's dim feature_index), over the other dims (N elements each), in the operand's type:
//   batch-norm-training(x, scale, offset):
//     mean = sum(x) / N, var = sum(x * x) / N - mean * mean (XLA's E[X^2] - E[X]^2),
//     y = (x - mean) * rsqrt(var + epsilon) * scale + offset; the result (y, mean, var).
//   batch-norm-inference(x, scale, offset, mean, var):
//     s = scale * rsqrt(var + epsilon), y = x * s + (offset - mean * s).
//   batch-norm-grad(x, scale, mean, var, dy), with c = x - mean and r = rsqrt(var + epsilon):
//     grad_offset = sum(dy), grad_scale = sum(dy * c) * r,
//     grad_x = scale * r / N * (N * dy - sum(dy) - c * sum(dy * c) / (var + epsilon));
//     the result (grad_x, grad_scale, grad_offset).
// The sums are reduces over every dim but the feature dim (to_apply: an add computation the pass
// adds once per element type); the per-feature vectors reach the operand's dims by broadcasts.
// Runs first, on every computation: the reduce, broadcast and element-wise kernels (and their
// fusion) then lower what it writes.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void ExpandBatchNorms(hlo::Module& module);

}  // namespace tpusim::compiler
