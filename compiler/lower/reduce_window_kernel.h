// reduce-window (XLA's ReduceWindow, ../shared/seeds operation semantics): output element o is
// the reducer folded from the init value over the window taps k (row-major over the window
// dims) that land on an operand element, position o * stride + k * window_dilation - padding_low
// in the operand dilated by base_dilation; taps on padding or between dilated elements are
// skipped (as the evaluator does; with an identity init that is also "padding = init").
//
// Lowered on the VPU, tap by tap, as the depthwise convolution does (docs/compiler.md,
// "Reduce-window"): the whole result is an accumulator in VMEM with the result's layout, filled
// with the init value; for each tap a (strided) DMA writes the operand elements that tap reads
// into a staging copy of the result's image, prefilled with the reducer's identity where the tap
// reads nothing, and the VPU folds the staging image into the accumulator word by word. Staging
// buffers for several taps let their DMAs run together. Lowered: one operand, a reducer that is
// one add, multiply, maximum, minimum, and, or or xor of its two parameters, 32-bit element types
// (f32, s32, u32), rank >= 1. Refused with CannotLower: variadic reduce-windows, other reducers or
// types, window reversal, results that do not fit twice in VMEM.
#pragma once

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

void EmitReduceWindowKernel(KernelContext& context);

}  // namespace tpusim::compiler
