// f8 on a machine whose VPU has no f8 arithmetic and whose MXU passes are configured by the
// machine (docs/compiler.md, "f8"): the compiler rewrites every f8 value it computes with into
// operations the element-wise kernels already lower, before layout assignment.
//
// - convert from f8e5m2 / f8e4m3fn: the f8 array is reinterpreted as u8 (a `bitcast`, which moves
//   no bytes: both are 8-bit arrays with the same tiling), and integer and f32 operations build the
//   f32 bits exactly (the f8 fields shifted into place, read as an f32 and multiplied by
//   2^(127 - bias): exact, denormals included; inf/NaN spelled out). The convert then reads that
//   f32 (exact for every destination: f32 -> T is what the reference evaluator does after its own
//   exact widening).
// - convert to f8e5m2 / f8e4m3fn: the source goes to f32 (XLA: through f32), then integer ops round
//   to nearest even (the f16 recipe of compiler/lower/f16_emulation.h with the f8 parameters):
//   overflow to infinity (f8e5m2) or NaN (f8e4m3fn), NaN to the quiet NaN with the sign kept; the
//   u8 result is bitcast to the f8 type.
// - dot with an f8 operand: the operand is converted to bf16 (exact) first and the bf16 dot runs.
//   The compiler does not know the configured MXU's f8_passes (CompileOptions has no field for
//   it), so it converts always; on TPU v4, which has no f8 MXU mode, that is what XLA does too.
// Every other f8 variant (f8e4m3, f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz, f8e3m4, f8e8m0fnu) in a
// convert or dot is a CannotLower naming the type. The rewritten operations fuse into one
// element-wise kernel per convert (compiler/passes/elementwise_fusion.h).
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

// Rewrites every computation of the module; returns the number of converts rewritten (those it
// inserted for dot operands included).
int RewriteF8Conversions(hlo::Module& module);

}  // namespace tpusim::compiler
