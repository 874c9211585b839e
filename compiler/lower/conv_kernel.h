// Convolution kernels (docs/compiler.md, "Convolution"): 2-D convolutions with stride 1, any
// padding >= 0, window (rhs) dilation, any dim_labels.
//   - feature_group_count = 1, f32: on the MXUs as shifted matmuls over a zero-padded image in
//     VMEM (one [pixels, Cin] x [Cin, Cout] matmul per window tap, accumulated in registers);
//   - depthwise (feature_group_count = input features = output features), f32 or bf16: on the
//     VPU, one DMA-shifted copy of the input per tap, multiplied by the per-channel weight.
// Everything else (strides, lhs dilation, reversal, other groupings and types) is refused.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// With context.part of several (a depthwise convolution): that core's share of the chunks.
void EmitConvolutionKernel(KernelContext& context);
// Megacore: the TensorCores a convolution splits over: a depthwise one its chunks (cc channels of
// an image) where every core gets one and none zeroes output padding; the MXU one stays on core 0.
int ConvolutionCoreParts(const KernelContext& context);

}  // namespace tpusim::compiler
