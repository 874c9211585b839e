// Convolution kernels (docs/compiler.md, "Convolution"): 2-D convolutions with stride 1, any
// padding >= 0, window (rhs) dilation, any dim_labels.
//   - feature_group_count = 1, f32: on the MXUs as shifted matmuls over a zero-padded image in
//     VMEM (one [pixels, Cin] x [Cin, Cout] matmul per window tap, accumulated in registers);
//   - depthwise (feature_group_count = input features = output features), f32 or bf16: on the
//     VPU, one DMA-shifted copy of the input per tap, multiplied by the per-channel weight.
// Everything else (strides, lhs dilation, reversal, other groupings and types) is refused.
// A convolution output fusion (compiler/passes/dot_output_fusion.h) applies its epilogue
// (dot_epilogue.h: biases along the output features, constants, f32/bf16 operations, an f32
// result) to the MXU path's accumulators before they are stored.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// With context.part of several: that core's share of the image groups (MXU) or chunks (depthwise).
void EmitConvolutionKernel(KernelContext& context);
// Megacore: the TensorCores a convolution splits over: its image groups (on the MXUs) or its
// chunks of channels (depthwise) where every core gets one and none zeroes output padding.
int ConvolutionCoreParts(const KernelContext& context);

}  // namespace tpusim::compiler
