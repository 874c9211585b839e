// The scalar semantics of XLA's element-wise arithmetic on the compute types of element_data.h
// (float, double, int64_t for signed ints, uint64_t for unsigned ints and pred). Source: XLA's
// HloEvaluator (hlo_evaluator_typed_visitor.h), restated in docs/evaluator.md. Header-only so that
// the kernels' loops inline them: elementwise.cc, reduce.cc and collectives.cc share these
// definitions, so a fast path computes exactly what the element-wise op would.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace tpusim::eval::scalar {

template <typename T>
constexpr bool kIsInt = std::is_integral_v<T>;

// Integer arithmetic wraps (two's complement): done on uint64_t, where overflow is defined, and
// narrowed to the element width afterwards by element_data.h's Narrow.
template <typename T>
T Add(T a, T b) {
  if constexpr (kIsInt<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T Subtract(T a, T b) {
  if constexpr (kIsInt<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  } else {
    return a - b;
  }
}

template <typename T>
T Multiply(T a, T b) {
  if constexpr (kIsInt<T>) {
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

// XLA: x / 0 is -1 (all ones: the unsigned max for unsigned types); INT_MIN / -1 is INT_MIN.
// Dividing by -1 as a wrapping negation covers INT_MIN of every width without overflow in C++.
template <typename T>
T Divide(T a, T b) {
  if constexpr (kIsInt<T>) {
    if (b == 0) return static_cast<T>(-1);
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(a));
    }
    return a / b;
  } else {
    return a / b;
  }
}

// XLA: x % 0 is x; INT_MIN % -1 is 0. Floats: fmod (the sign of the dividend, seed 003).
template <typename T>
T Remainder(T a, T b) {
  if constexpr (kIsInt<T>) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
    }
    return a % b;
  } else {
    return std::fmod(a, b);
  }
}

// XLA: 1^y = 1 and x^0 = 1 (even for NaN); a negative integer exponent gives 0 (x == 1 was
// handled); otherwise repeated squaring, wrapping. pred: x || !y, which the 0/1 cases give.
template <typename T>
T Power(T a, T b) {
  if (a == 1 || b == 0) return 1;
  if constexpr (kIsInt<T>) {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) return 0;
    }
    uint64_t base = static_cast<uint64_t>(a);
    uint64_t exponent = static_cast<uint64_t>(b);
    uint64_t result = 1;
    while (exponent != 0) {
      if ((exponent & 1) != 0) result *= base;
      base *= base;
      exponent >>= 1;
    }
    return static_cast<T>(result);
  } else {
    return std::pow(a, b);
  }
}

// XLA: a NaN operand is the result (the left one if both are); otherwise std::max / std::min,
// which return the left operand on ties (so max(+0, -0) is +0 and max(-0, +0) is -0).
template <typename T>
T Maximum(T a, T b) {
  if constexpr (!kIsInt<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return std::max(a, b);
}

template <typename T>
T Minimum(T a, T b) {
  if constexpr (!kIsInt<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return std::min(a, b);
}

// --- Integer-only helpers that need the element's bit width -------------------------------

inline uint64_t WidthMask(int bits) {
  return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// `value`'s low `bits` bits read as a signed number.
inline int64_t SignExtend(uint64_t value, int bits) {
  if (bits >= 64) return static_cast<int64_t>(value);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  const uint64_t low = value & WidthMask(bits);
  return static_cast<int64_t>((low ^ sign) - sign);
}

// XLA treats the shift amount as unsigned of the element width: a negative amount is huge, and
// any amount >= the width shifts everything out.
inline bool ShiftOutOfRange(uint64_t amount, int bits) {
  return (amount & WidthMask(bits)) >= static_cast<uint64_t>(bits);
}

template <typename T>
T ShiftLeft(T a, T b, int bits) {
  if (ShiftOutOfRange(static_cast<uint64_t>(b), bits)) return 0;
  return static_cast<T>(static_cast<uint64_t>(a) << (static_cast<uint64_t>(b) & WidthMask(bits)));
}

template <typename T>
T ShiftRightArithmetic(T a, T b, int bits) {
  const int64_t value = SignExtend(static_cast<uint64_t>(a), bits);
  if (ShiftOutOfRange(static_cast<uint64_t>(b), bits)) return static_cast<T>(value < 0 ? -1 : 0);
  return static_cast<T>(value >> (static_cast<uint64_t>(b) & WidthMask(bits)));
}

template <typename T>
T ShiftRightLogical(T a, T b, int bits) {
  if (ShiftOutOfRange(static_cast<uint64_t>(b), bits)) return 0;
  const uint64_t value = static_cast<uint64_t>(a) & WidthMask(bits);
  return static_cast<T>(value >> (static_cast<uint64_t>(b) & WidthMask(bits)));
}

}  // namespace tpusim::eval::scalar
