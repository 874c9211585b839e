// Element-wise HLO ops on Literals: unary and binary arithmetic, select and clamp. Numerics follow
// XLA's HloEvaluator (docs/evaluator.md): bf16, f16 and f8 compute in f32 and round once to their
// type (to nearest, ties to even); f32 computes in f32 and f64 in f64; integers wrap. Comparisons
// are in compare.h, conversions in convert_ops.h.
#pragma once

#include <optional>
#include <string_view>

#include "compiler/hlo/literal.h"

namespace tpusim::eval {

enum class UnaryOp {
  kAbs,
  kNegate,
  kSign,
  kFloor,
  kCeil,
  kRoundNearestAfz,
  kRoundNearestEven,
  kExponential,
  kExponentialMinusOne,
  kLog,
  kLogPlusOne,
  kSqrt,
  kRsqrt,
  kCbrt,
  kTanh,
  kLogistic,
  kSine,
  kCosine,
  kTan,
  kIsFinite,  // float -> pred
  // Integers only (not also on pred, as logical not):
  kNot,
  kPopcnt,
  kCountLeadingZeros,
};

enum class BinaryOp {
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kRemainder,
  kPower,
  kMaximum,
  kMinimum,
  kAtan2,
  kAnd,
  kOr,
  kXor,
  kShiftLeft,
  kShiftRightArithmetic,
  kShiftRightLogical,
};

// HLO opcode names ("exponential-minus-one", "shift-right-logical", "count-leading-zeros") and
// their inverse: nullopt if `opcode` is not such an op.
std::string_view UnaryOpName(UnaryOp op);
std::string_view BinaryOpName(BinaryOp op);
std::optional<UnaryOp> ParseUnaryOp(std::string_view opcode);
std::optional<BinaryOp> ParseBinaryOp(std::string_view opcode);

// Applies `op` to every element. The result has the operand's shape and type (pred for
// is-finite). Throws tpusim::Error for a tuple, an unsupported type, or an op the type does not
// have (a float op on integers, not/popcnt/count-leading-zeros on floats).
hlo::Literal Unary(UnaryOp op, const hlo::Literal& operand);

// Applies `op` element by element to two arrays of the same shape and type (HLO broadcasts
// explicitly). Integer division by zero gives -1 (all ones), x % 0 gives x, INT_MIN / -1 gives
// INT_MIN and INT_MIN % -1 gives 0; shifts by the width or more give 0 (arithmetic right shift:
// the sign); maximum and minimum propagate NaN.
hlo::Literal Binary(BinaryOp op, const hlo::Literal& lhs, const hlo::Literal& rhs);

// select(pred, on_true, on_false): `pred` is a pred array of the operands' dims, or a pred scalar
// (which also selects between two tuples, as whole values).
hlo::Literal Select(const hlo::Literal& pred, const hlo::Literal& on_true,
                    const hlo::Literal& on_false);

// clamp(min, operand, max) = minimum(maximum(operand, min), max), NaN propagating; `min` and
// `max` have the operand's dims or are scalars (seed 003).
hlo::Literal Clamp(const hlo::Literal& min, const hlo::Literal& operand, const hlo::Literal& max);

}  // namespace tpusim::eval
