// HLO batch-norm-training, batch-norm-inference and batch-norm-grad. Every statistic and every
// result is computed in f64 (sums in row-major order) and rounded once to the operand's type.
#pragma once

#include <cstdint>

#include "compiler/hlo/literal.h"

namespace tpusim::eval {

// Seed 003: per feature l (operand dim `feature_index`), over all other dims (N elements):
//   mean_l = sum(x) / N,  var_l = sum((x - mean_l)^2) / N,
//   y = scale_l * (x - mean_l) / sqrt(var_l + epsilon) + offset_l.
// Returns the tuple (y, mean, var); scale, offset, mean and var are rank-1 of the feature size.
hlo::Literal BatchNormTraining(const hlo::Literal& operand, const hlo::Literal& scale,
                               const hlo::Literal& offset, float epsilon, int64_t feature_index);

// Seed 003: the same normalisation with the given mean and variance. Returns y.
hlo::Literal BatchNormInference(const hlo::Literal& operand, const hlo::Literal& scale,
                                const hlo::Literal& offset, const hlo::Literal& mean,
                                const hlo::Literal& variance, float epsilon, int64_t feature_index);

// The gradient as XLA defines it (current "Operation semantics" and XLA's BatchNormExpander; seed
// 003's older formulas are not the derivative and are not used, see docs/evaluator.md):
//   grad_offset_l = sum(dy),  grad_scale_l = sum(dy * (x - mean_l)) / sqrt(var_l + epsilon),
//   grad_x = scale_l / sqrt(var_l + epsilon) *
//            (dy - sum(dy) / N - (x - mean_l) * sum(dy * (x - mean_l)) / (N * (var_l + epsilon))).
// Returns the tuple (grad_operand, grad_scale, grad_offset), XLA's order.
hlo::Literal BatchNormGrad(const hlo::Literal& operand, const hlo::Literal& scale,
                           const hlo::Literal& mean, const hlo::Literal& variance,
                           const hlo::Literal& grad_output, float epsilon, int64_t feature_index);

}  // namespace tpusim::eval
