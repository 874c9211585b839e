// HLO convolution with XLA's general dimension numbers, window, and feature / batch groups.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compiler/eval/window.h"
#include "compiler/hlo/literal.h"
#include "isa/element_type.h"

namespace tpusim::eval {

// Which dim of each array plays which role (HLO's dim_labels, e.g. b01f_01io->b01f: input
// batch 0, feature 3, spatial {1, 2}; kernel input feature 2, output feature 3, spatial {0, 1};
// output batch 0, feature 3, spatial {1, 2}). Spatial dims correspond by position.
struct ConvolutionDimensions {
  int64_t input_batch_dim = 0;
  int64_t input_feature_dim = 1;
  std::vector<int64_t> input_spatial_dims;
  int64_t kernel_input_feature_dim = 1;
  int64_t kernel_output_feature_dim = 0;
  std::vector<int64_t> kernel_spatial_dims;
  int64_t output_batch_dim = 0;
  int64_t output_feature_dim = 1;
  std::vector<int64_t> output_spatial_dims;
};

// convolution (seed 003's pseudocode, generalised as XLA does): for each output element,
//   sum over kernel spatial taps (row-major, reversed where window reversal is set) and the
//   input features of its group of input[b, f, spatial] * kernel[f, o, tap],
// where the input spatial index of output position p and tap t is p*stride + t*rhs_dilation -
// pad_low in the lhs-dilated base, skipped on padding and on dilation holes. Feature groups:
// input features split into `feature_group_count` groups, output feature o uses group
// o / (output features / groups), the kernel's input feature dim has the group size. Batch
// groups: the input batch splits into `batch_group_count` groups, output feature o uses batch
// group o / (output features / batch_group_count), and the output batch is the group size.
// Accumulates like dot (dot.h): f32 for bf16/f16/f8/f32 results, f64 for f64, wrapping ints;
// the order is taps outer, input features inner, and the sum is rounded once to `result_type`.
hlo::Literal Convolution(const hlo::Literal& input, const hlo::Literal& kernel,
                         std::span<const WindowDimension> window, const ConvolutionDimensions& dims,
                         int64_t feature_group_count, int64_t batch_group_count,
                         isa::ElementType result_type);

}  // namespace tpusim::eval
