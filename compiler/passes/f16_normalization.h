// f16 arithmetic in f32, with excess precision: what XLA's FloatNormalization (for a type the
// backend does not compute in) followed by SimplifyFPConversions (under
// `xla_allow_excess_precision`, true by default) make of f16 element-wise work on TPU.
//
// The VPU holds no f16 (compiler/lower/f16_emulation.h): every f16 element-wise operation is
// computed on f32 values. Normalization writes each as convert-to-f16(op-in-f32(convert-to-f32(
// operands))); simplification then drops every convert-to-f32(convert-to-f16(y)) pair, so a chain
// of f16 operations keeps its intermediate values in f32 and rounds to f16 only where an f16
// value is needed: an output, an operand of a non-element-wise instruction (dot, reduce, data
// movement), a convert to a non-float type. Rounding an f16 on the VPU takes 17 instructions and
// widening one 8 (against 1 per f32 operation), so this is the difference between an
// activation function costing one f16 rounding and costing one per operation.
//
// Rewritten: the element-wise operations (compiler/lower/elementwise_expr.h's list, converts and
// bitcast-converts aside) with an f16 result or operand, in the entry computation and the
// computations it runs through while, conditional and call; each keeps its name and now computes
// in f32 (a compare still gives pred), and an `<name>.f16` convert gives the f16 value to the users
// that need one. A convert from f16 to f32 of such a value reads the f32 value itself. f16
// reductions' to_apply computations and `fusion` computations are left as written. bf16 is not
// rewritten: the VPU rounds an f32 to bf16 in one instruction (vcvt.bf16.f32), and tpusim keeps
// XLA's per-operation bf16 rounding.
//
// `run --check` evaluates the reference after the same rewrite, so the simulated f16 results are
// compared bit for bit with the evaluator's on the values XLA's pipeline computes.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

// Rewrites the module; returns the number of operations now computed in f32.
int NormalizeF16(hlo::Module& module);

}  // namespace tpusim::compiler
