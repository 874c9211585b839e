// Strided convolutions as stride-1 convolutions over a space-to-depth image (the rewrite XLA's
// TPU pipeline applies to strided convolutions with few input features, the stems of ResNet and
// MobileNet): with strides (sh, sw), input pixel (y sh + i, x sw + j) becomes pixel (y, x) of an
// image with sh sw C features, feature (i sw + j) C + c, and the kernel [KH, KW, C, O] (padded to
// multiples of the strides) becomes [KH / sh, KW / sw, sh sw C, O] the same way; the stride-1
// convolution of the two computes exactly the strided one's sums (tap (a sh + i, b sw + j) of
// output (y, x) reads input (y sh + a sh + i, ...)), plus products with the kernel's zero padding.
// The image is padded (the window's padding, then up to whole strides and enough rows for every
// output), the output sliced to the strided one's dims; operands go to canonical order (input
// [B, H, W, C], kernel [KH, KW, I, O]) and the output back by transposes. The reshapes and
// transposes are data-movement kernels.
//
// Applies to 2-D convolutions with feature_group_count and batch_group_count 1, no base or window
// dilation, no reversal and padding >= 0 (others stay as they are and are refused by the kernel).
// Runs before layout assignment: what it writes gets default layouts.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void RewriteStridedConvolutions(hlo::Module& module);

}  // namespace tpusim::compiler
