#include "compiler/eval/elementwise.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/eval/element_data.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/scalar_ops.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using isa::ElementType;

constexpr std::array<std::pair<UnaryOp, std::string_view>, 23> kUnaryNames{{
    {UnaryOp::kAbs, "abs"},
    {UnaryOp::kNegate, "negate"},
    {UnaryOp::kSign, "sign"},
    {UnaryOp::kFloor, "floor"},
    {UnaryOp::kCeil, "ceil"},
    {UnaryOp::kRoundNearestAfz, "round-nearest-afz"},
    {UnaryOp::kRoundNearestEven, "round-nearest-even"},
    {UnaryOp::kExponential, "exponential"},
    {UnaryOp::kExponentialMinusOne, "exponential-minus-one"},
    {UnaryOp::kLog, "log"},
    {UnaryOp::kLogPlusOne, "log-plus-one"},
    {UnaryOp::kSqrt, "sqrt"},
    {UnaryOp::kRsqrt, "rsqrt"},
    {UnaryOp::kCbrt, "cbrt"},
    {UnaryOp::kTanh, "tanh"},
    {UnaryOp::kLogistic, "logistic"},
    {UnaryOp::kSine, "sine"},
    {UnaryOp::kCosine, "cosine"},
    {UnaryOp::kTan, "tan"},
    {UnaryOp::kIsFinite, "is-finite"},
    {UnaryOp::kNot, "not"},
    {UnaryOp::kPopcnt, "popcnt"},
    {UnaryOp::kCountLeadingZeros, "count-leading-zeros"},
}};

constexpr std::array<std::pair<BinaryOp, std::string_view>, 15> kBinaryNames{{
    {BinaryOp::kAdd, "add"},
    {BinaryOp::kSubtract, "subtract"},
    {BinaryOp::kMultiply, "multiply"},
    {BinaryOp::kDivide, "divide"},
    {BinaryOp::kRemainder, "remainder"},
    {BinaryOp::kPower, "power"},
    {BinaryOp::kMaximum, "maximum"},
    {BinaryOp::kMinimum, "minimum"},
    {BinaryOp::kAtan2, "atan2"},
    {BinaryOp::kAnd, "and"},
    {BinaryOp::kOr, "or"},
    {BinaryOp::kXor, "xor"},
    {BinaryOp::kShiftLeft, "shift-left"},
    {BinaryOp::kShiftRightArithmetic, "shift-right-arithmetic"},
    {BinaryOp::kShiftRightLogical, "shift-right-logical"},
}};

[[noreturn]] void ThrowUndefined(std::string_view op, ElementType type) {
  throw Error(std::string(op) + " is not defined for " + std::string(isa::ElementTypeName(type)) +
              " operands");
}

template <typename T, typename Fn>
void TransformInPlace(std::vector<T>& values, Fn fn) {
  for (T& value : values) value = fn(value);
}

template <typename T, typename Fn>
void TransformInPlace(std::vector<T>& lhs, const std::vector<T>& rhs, Fn fn) {
  for (std::size_t i = 0; i < lhs.size(); ++i) lhs[i] = fn(lhs[i], rhs[i]);
}

// Ties to even without depending on the floating-point environment's rounding mode.
template <typename T>
T RoundNearestEven(T x) {
  const T rounded = std::round(x);  // ties away from zero
  if (std::fabs(rounded - x) != T(0.5)) return rounded;
  return T(2) * std::round(x / T(2));
}

// sign: -1, 0 or 1; a float keeps the sign of zero and NaN stays NaN.
template <typename T>
T Sign(T x) {
  if constexpr (scalar::kIsInt<T>) {
    return static_cast<T>((x > 0) - (x < 0));
  } else {
    if (std::isnan(x) || x == 0) return x;
    return std::copysign(T(1), x);
  }
}

template <typename T>
void ApplyFloatUnary(UnaryOp op, std::vector<T>& v, ElementType type) {
  switch (op) {
    case UnaryOp::kAbs: return TransformInPlace(v, [](T x) { return std::fabs(x); });
    case UnaryOp::kNegate: return TransformInPlace(v, [](T x) { return -x; });
    case UnaryOp::kSign: return TransformInPlace(v, [](T x) { return Sign(x); });
    case UnaryOp::kFloor: return TransformInPlace(v, [](T x) { return std::floor(x); });
    case UnaryOp::kCeil: return TransformInPlace(v, [](T x) { return std::ceil(x); });
    case UnaryOp::kRoundNearestAfz: return TransformInPlace(v, [](T x) { return std::round(x); });
    case UnaryOp::kRoundNearestEven:
      return TransformInPlace(v, [](T x) { return RoundNearestEven(x); });
    case UnaryOp::kExponential: return TransformInPlace(v, [](T x) { return std::exp(x); });
    case UnaryOp::kExponentialMinusOne:
      return TransformInPlace(v, [](T x) { return std::expm1(x); });
    case UnaryOp::kLog: return TransformInPlace(v, [](T x) { return std::log(x); });
    case UnaryOp::kLogPlusOne: return TransformInPlace(v, [](T x) { return std::log1p(x); });
    case UnaryOp::kSqrt: return TransformInPlace(v, [](T x) { return std::sqrt(x); });
    // XLA's evaluator: 1 / sqrt(x) and 1 / (1 + exp(-x)), each step in the compute type.
    case UnaryOp::kRsqrt: return TransformInPlace(v, [](T x) { return T(1) / std::sqrt(x); });
    case UnaryOp::kCbrt: return TransformInPlace(v, [](T x) { return std::cbrt(x); });
    case UnaryOp::kTanh: return TransformInPlace(v, [](T x) { return std::tanh(x); });
    case UnaryOp::kLogistic:
      return TransformInPlace(v, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
    case UnaryOp::kSine: return TransformInPlace(v, [](T x) { return std::sin(x); });
    case UnaryOp::kCosine: return TransformInPlace(v, [](T x) { return std::cos(x); });
    case UnaryOp::kTan: return TransformInPlace(v, [](T x) { return std::tan(x); });
    case UnaryOp::kIsFinite:  // handled by the caller: its result is pred
    case UnaryOp::kNot:
    case UnaryOp::kPopcnt:
    case UnaryOp::kCountLeadingZeros: break;
  }
  ThrowUndefined(UnaryOpName(op), type);
}

template <typename T>
void ApplyIntegerUnary(UnaryOp op, std::vector<T>& v, ElementType type) {
  const int bits = IntegerBitWidth(type);
  const uint64_t mask = scalar::WidthMask(bits);
  const bool is_pred = type == ElementType::kPred;
  switch (op) {
    case UnaryOp::kAbs:
      if (is_pred) break;
      return TransformInPlace(v, [](T x) { return x < 0 ? scalar::Subtract<T>(0, x) : x; });
    case UnaryOp::kNegate:
      if (is_pred) break;
      return TransformInPlace(v, [](T x) { return scalar::Subtract<T>(0, x); });
    case UnaryOp::kSign:
      if (is_pred) break;
      return TransformInPlace(v, [](T x) { return Sign(x); });
    case UnaryOp::kNot:
      if (is_pred) return TransformInPlace(v, [](T x) { return static_cast<T>(x == 0 ? 1 : 0); });
      return TransformInPlace(v, [](T x) { return static_cast<T>(~x); });
    case UnaryOp::kPopcnt:
      if (is_pred) break;
      return TransformInPlace(v, [mask](T x) {
        return static_cast<T>(std::popcount(static_cast<uint64_t>(x) & mask));
      });
    case UnaryOp::kCountLeadingZeros:
      if (is_pred) break;
      return TransformInPlace(v, [mask, bits](T x) {
        return static_cast<T>(std::countl_zero(static_cast<uint64_t>(x) & mask) - (64 - bits));
      });
    default: break;
  }
  ThrowUndefined(UnaryOpName(op), type);
}

hlo::Literal IsFinite(const hlo::Literal& operand) {
  if (!isa::IsFloat(operand.element_type())) ThrowUndefined("is-finite", operand.element_type());
  const std::vector<double> values = Widen<double>(operand);  // exact for every float type
  std::vector<uint64_t> finite(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) finite[i] = std::isfinite(values[i]) ? 1 : 0;
  return Narrow<uint64_t>(ElementType::kPred, operand.dims(), finite);
}

template <typename T>
void ApplyFloatBinary(BinaryOp op, std::vector<T>& a, const std::vector<T>& b, ElementType type) {
  switch (op) {
    case BinaryOp::kAdd: return TransformInPlace(a, b, scalar::Add<T>);
    case BinaryOp::kSubtract: return TransformInPlace(a, b, scalar::Subtract<T>);
    case BinaryOp::kMultiply: return TransformInPlace(a, b, scalar::Multiply<T>);
    case BinaryOp::kDivide: return TransformInPlace(a, b, scalar::Divide<T>);
    case BinaryOp::kRemainder: return TransformInPlace(a, b, scalar::Remainder<T>);
    case BinaryOp::kPower: return TransformInPlace(a, b, scalar::Power<T>);
    case BinaryOp::kMaximum: return TransformInPlace(a, b, scalar::Maximum<T>);
    case BinaryOp::kMinimum: return TransformInPlace(a, b, scalar::Minimum<T>);
    case BinaryOp::kAtan2: return TransformInPlace(a, b, [](T y, T x) { return std::atan2(y, x); });
    default: break;
  }
  ThrowUndefined(BinaryOpName(op), type);
}

template <typename T>
void ApplyIntegerBinary(BinaryOp op, std::vector<T>& a, const std::vector<T>& b, ElementType type) {
  const int bits = IntegerBitWidth(type);
  switch (op) {
    case BinaryOp::kAdd: return TransformInPlace(a, b, scalar::Add<T>);
    case BinaryOp::kSubtract: return TransformInPlace(a, b, scalar::Subtract<T>);
    case BinaryOp::kMultiply: return TransformInPlace(a, b, scalar::Multiply<T>);
    case BinaryOp::kDivide: return TransformInPlace(a, b, scalar::Divide<T>);
    case BinaryOp::kRemainder: return TransformInPlace(a, b, scalar::Remainder<T>);
    case BinaryOp::kPower: return TransformInPlace(a, b, scalar::Power<T>);
    case BinaryOp::kMaximum: return TransformInPlace(a, b, scalar::Maximum<T>);
    case BinaryOp::kMinimum: return TransformInPlace(a, b, scalar::Minimum<T>);
    case BinaryOp::kAnd:
      return TransformInPlace(a, b, [](T x, T y) { return static_cast<T>(x & y); });
    case BinaryOp::kOr:
      return TransformInPlace(a, b, [](T x, T y) { return static_cast<T>(x | y); });
    case BinaryOp::kXor:
      return TransformInPlace(a, b, [](T x, T y) { return static_cast<T>(x ^ y); });
    case BinaryOp::kShiftLeft:
      return TransformInPlace(a, b, [bits](T x, T y) { return scalar::ShiftLeft(x, y, bits); });
    case BinaryOp::kShiftRightArithmetic:
      return TransformInPlace(
          a, b, [bits](T x, T y) { return scalar::ShiftRightArithmetic(x, y, bits); });
    case BinaryOp::kShiftRightLogical:
      return TransformInPlace(a, b,
                              [bits](T x, T y) { return scalar::ShiftRightLogical(x, y, bits); });
    case BinaryOp::kAtan2: break;
  }
  ThrowUndefined(BinaryOpName(op), type);
}

void RequireSameShape(const hlo::Literal& a, const hlo::Literal& b, std::string_view op) {
  RequireSameType(a, b, op);
  if (a.dims() == b.dims()) return;
  throw Error(std::string(op) + ": operands must have the same dims, got " +
              isa::ToString(a.shape()) + " and " + isa::ToString(b.shape()));
}

// `bound` (clamp's min or max) has `dims` or is a scalar.
void RequireClampBound(const hlo::Literal& bound, const hlo::Literal& operand, const char* which) {
  RequireArray(bound, "clamp", which);
  RequireSameType(bound, operand, "clamp");
  if (bound.dims().empty() || bound.dims() == operand.dims()) return;
  throw Error(std::string("clamp: ") + which + " must be a scalar or have the operand's dims " +
              DimsToString(operand.dims()) + ", got " + isa::ToString(bound.shape()));
}

}  // namespace

std::string_view UnaryOpName(UnaryOp op) {
  for (const auto& [known, name] : kUnaryNames) {
    if (known == op) return name;
  }
  return "unknown-unary-op";
}

std::string_view BinaryOpName(BinaryOp op) {
  for (const auto& [known, name] : kBinaryNames) {
    if (known == op) return name;
  }
  return "unknown-binary-op";
}

std::optional<UnaryOp> ParseUnaryOp(std::string_view opcode) {
  for (const auto& [op, name] : kUnaryNames) {
    if (name == opcode) return op;
  }
  return std::nullopt;
}

std::optional<BinaryOp> ParseBinaryOp(std::string_view opcode) {
  for (const auto& [op, name] : kBinaryNames) {
    if (name == opcode) return op;
  }
  return std::nullopt;
}

hlo::Literal Unary(UnaryOp op, const hlo::Literal& operand) {
  RequireArray(operand, UnaryOpName(op), "the operand");
  if (op == UnaryOp::kIsFinite) return IsFinite(operand);
  const ElementType type = operand.element_type();
  return VisitComputeType(type, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> values = Widen<T>(operand);
    if constexpr (scalar::kIsInt<T>) {
      ApplyIntegerUnary(op, values, type);
    } else {
      ApplyFloatUnary(op, values, type);
    }
    return Narrow<T>(type, operand.dims(), values);
  });
}

hlo::Literal Binary(BinaryOp op, const hlo::Literal& lhs, const hlo::Literal& rhs) {
  RequireArray(lhs, BinaryOpName(op), "lhs");
  RequireArray(rhs, BinaryOpName(op), "rhs");
  RequireSameShape(lhs, rhs, BinaryOpName(op));
  const ElementType type = lhs.element_type();
  return VisitComputeType(type, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> a = Widen<T>(lhs);
    const std::vector<T> b = Widen<T>(rhs);
    if constexpr (scalar::kIsInt<T>) {
      ApplyIntegerBinary(op, a, b, type);
    } else {
      ApplyFloatBinary(op, a, b, type);
    }
    return Narrow<T>(type, lhs.dims(), a);
  });
}

hlo::Literal Select(const hlo::Literal& pred, const hlo::Literal& on_true,
                    const hlo::Literal& on_false) {
  RequireArray(pred, "select", "pred");
  if (pred.element_type() != ElementType::kPred) {
    throw Error("select: pred must have element type pred, got " + isa::ToString(pred.shape()));
  }
  if (!(on_true.shape().is_tuple == on_false.shape().is_tuple &&
        on_true.element_type() == on_false.element_type() && on_true.dims() == on_false.dims())) {
    throw Error("select: on_true and on_false must have the same shape, got " +
                isa::ToString(on_true.shape()) + " and " + isa::ToString(on_false.shape()));
  }
  if (pred.dims().empty()) return pred.bytes()[0] != 0 ? on_true : on_false;
  if (on_true.is_tuple() || pred.dims() != on_true.dims()) {
    throw Error("select: pred must be a scalar or have the dims of the selected arrays, got " +
                isa::ToString(pred.shape()) + " for " + isa::ToString(on_true.shape()));
  }
  hlo::Literal result = on_false;
  for (int64_t i = 0; i < pred.element_count(); ++i) {
    if (pred.bytes()[i] != 0) CopyElement(on_true, i, result, i);
  }
  return result;
}

hlo::Literal Clamp(const hlo::Literal& min, const hlo::Literal& operand, const hlo::Literal& max) {
  RequireArray(operand, "clamp", "the operand");
  RequireClampBound(min, operand, "min");
  RequireClampBound(max, operand, "max");
  const ElementType type = operand.element_type();
  return VisitComputeType(type, [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> values = Widen<T>(operand);
    const std::vector<T> lo = Widen<T>(min);
    const std::vector<T> hi = Widen<T>(max);
    const bool lo_scalar = lo.size() == 1;
    const bool hi_scalar = hi.size() == 1;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const T raised = scalar::Maximum(values[i], lo[lo_scalar ? 0 : i]);
      values[i] = scalar::Minimum(raised, hi[hi_scalar ? 0 : i]);
    }
    return Narrow<T>(type, operand.dims(), values);
  });
}

}  // namespace tpusim::eval
