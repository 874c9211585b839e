#include "isa/convert.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "isa/error.h"

namespace tpusim::isa {
namespace {

static_assert(std::endian::native == std::endian::little,
              "element data is little-endian and is read with memcpy");

// --- The narrow float formats ---------------------------------------------------------------
//
// All four are binary formats with a sign bit, `exponent_bits` of biased exponent and
// `mantissa_bits` of fraction. They differ only in the parameters and in what the all-ones
// exponent means: IEEE-like formats (bf16, f16, f8e5m2) use it for inf/NaN; f8e4m3fn ("finite,
// NaN") keeps it for ordinary values and spends only the all-ones code on NaN. One encoder and one
// decoder handle all of them, so a rounding fix lands everywhere at once.

struct NarrowFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;

  constexpr uint32_t SignBit() const { return 1u << (exponent_bits + mantissa_bits); }
  constexpr uint32_t MaxExponentField() const { return (1u << exponent_bits) - 1; }
  constexpr uint32_t InfinityCode() const { return MaxExponentField() << mantissa_bits; }
  constexpr uint32_t MaxFiniteCode() const {
    return has_infinity ? InfinityCode() - 1 : SignBit() - 2;
  }
  // The quiet bit is the top mantissa bit for IEEE-like formats; f8e4m3fn has a single NaN.
  constexpr uint32_t QuietNanCode() const {
    return has_infinity ? InfinityCode() | (1u << (mantissa_bits - 1)) : SignBit() - 1;
  }
  constexpr uint32_t OverflowCode() const { return has_infinity ? InfinityCode() : QuietNanCode(); }
};

constexpr NarrowFormat kBf16Format{8, 7, 127, true};
constexpr NarrowFormat kF16Format{5, 10, 15, true};
constexpr NarrowFormat kF8E4M3FNFormat{4, 3, 7, false};
constexpr NarrowFormat kF8E5M2Format{5, 2, 15, true};

constexpr int kF32MantissaBits = 23;
constexpr int kF32Bias = 127;
constexpr uint32_t kF32SignBit = 0x80000000u;
constexpr uint32_t kF32Infinity = 0x7F800000u;

// value >> shift, rounded to nearest with ties to even.
uint32_t ShiftRightRoundingToNearestEven(uint32_t value, int shift) {
  if (shift == 0) return value;
  // Callers pass values below 2^24, which are below half of 2^shift for shift >= 26: they round
  // to 0. Clamping also keeps the shifts below defined.
  if (shift > 31) return 0;
  const uint32_t kept = value >> shift;
  const uint32_t dropped = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  const bool round_up = dropped > half || (dropped == half && (kept & 1) != 0);
  return kept + (round_up ? 1 : 0);
}

uint32_t EncodeFromF32(float value, NarrowFormat format) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits & kF32SignBit) != 0 ? format.SignBit() : 0;
  const uint32_t magnitude = bits & ~kF32SignBit;
  if (magnitude > kF32Infinity) return sign | format.QuietNanCode();
  if (magnitude == kF32Infinity) return sign | format.OverflowCode();

  // Write the f32 as significand * 2^(exponent - bias - 23) with the implicit bit made explicit;
  // an f32 denormal has the scale of exponent 1 and no implicit bit.
  int exponent = static_cast<int>(magnitude >> kF32MantissaBits);
  uint32_t significand = magnitude & ((1u << kF32MantissaBits) - 1);
  if (exponent == 0) {
    exponent = 1;
  } else {
    significand |= 1u << kF32MantissaBits;
  }

  // Biased exponent the value would have in the narrow format. Below 1 the result is a narrow
  // denormal, whose scale is fixed at exponent 1, so the extra distance is shifted out too.
  const int narrow_exponent = exponent - kF32Bias + format.bias;
  const int shift =
      (kF32MantissaBits - format.mantissa_bits) + std::max(0, 1 - narrow_exponent);
  const uint32_t rounded = ShiftRightRoundingToNearestEven(significand, shift);

  // For a normal result `rounded` holds the implicit bit at position mantissa_bits, so adding
  // (narrow_exponent - 1) there produces the exponent field; a mantissa that rounded up to 2.0
  // carries into the exponent, and a denormal that rounded up to the smallest normal becomes it,
  // both for free. Anything past the largest finite code overflowed.
  const uint32_t code =
      (static_cast<uint32_t>(std::max(narrow_exponent, 1) - 1) << format.mantissa_bits) + rounded;
  if (code > format.MaxFiniteCode()) return sign | format.OverflowCode();
  return sign | code;
}

float DecodeToF32(uint32_t code, NarrowFormat format) {
  const uint32_t sign = (code & format.SignBit()) != 0 ? kF32SignBit : 0;
  const uint32_t exponent = (code >> format.mantissa_bits) & format.MaxExponentField();
  const uint32_t mantissa = code & ((1u << format.mantissa_bits) - 1);
  const int mantissa_shift = kF32MantissaBits - format.mantissa_bits;

  const bool is_nan = format.has_infinity
                          ? exponent == format.MaxExponentField() && mantissa != 0
                          : (code & ~format.SignBit()) == format.QuietNanCode();
  const bool is_infinity =
      format.has_infinity && exponent == format.MaxExponentField() && mantissa == 0;
  if (is_nan || is_infinity) {
    return std::bit_cast<float>(sign | kF32Infinity | (mantissa << mantissa_shift));
  }
  if (exponent == 0) {
    // Denormal: mantissa * 2^(1 - bias - mantissa_bits). Every narrow denormal is an f32 value
    // (bf16's are f32 denormals), so ldexp is exact; copysign keeps -0.
    const float magnitude = std::ldexp(static_cast<float>(mantissa),
                                       1 - format.bias - format.mantissa_bits);
    return std::copysign(magnitude, sign != 0 ? -1.0f : 1.0f);
  }
  const uint32_t f32_exponent = exponent - format.bias + kF32Bias;
  return std::bit_cast<float>(sign | (f32_exponent << kF32MantissaBits) |
                              (mantissa << mantissa_shift));
}

// --- Element storage types for ConvertElements ------------------------------------------------
//
// C++ arithmetic types stand for the ints, f32 and f64; the types C++ has none for are wrapped
// in a struct holding their bits, so overloads and `if constexpr` can tell them apart.

struct Pred { uint8_t bits; };
struct Bf16 { uint16_t bits; };
struct F16 { uint16_t bits; };
struct F8E4M3FN { uint8_t bits; };
struct F8E5M2 { uint8_t bits; };

template <typename T>
constexpr bool kIsNarrowFloat = std::is_same_v<T, Bf16> || std::is_same_v<T, F16> ||
                                std::is_same_v<T, F8E4M3FN> || std::is_same_v<T, F8E5M2>;

template <typename T>
constexpr bool kIsInt = std::is_integral_v<T>;  // Pred is a struct, so not an int here.

float NarrowToF32(Bf16 x) { return Bf16ToF32(x.bits); }
float NarrowToF32(F16 x) { return F16ToF32(x.bits); }
float NarrowToF32(F8E4M3FN x) { return F8E4M3FNToF32(x.bits); }
float NarrowToF32(F8E5M2 x) { return F8E5M2ToF32(x.bits); }

template <typename T>
T NarrowFromF32(float value) {
  if constexpr (std::is_same_v<T, Bf16>) {
    return {F32ToBf16(value)};
  } else if constexpr (std::is_same_v<T, F16>) {
    return {F32ToF16(value)};
  } else if constexpr (std::is_same_v<T, F8E4M3FN>) {
    return {F32ToF8E4M3FN(value)};
  } else {
    static_assert(std::is_same_v<T, F8E5M2>);
    return {F32ToF8E5M2(value)};
  }
}

// Any non-pred source as f32. The only rounding steps are f64 and wide ints, where static_cast
// rounds to nearest even, as XLA's (Eigen's) conversions do.
template <typename From>
float ToF32(From x) {
  if constexpr (kIsNarrowFloat<From>) {
    return NarrowToF32(x);
  } else {
    return static_cast<float>(x);
  }
}

// Any float source as f64; exact.
template <typename From>
double FloatToF64(From x) {
  if constexpr (std::is_same_v<From, double>) {
    return x;
  } else {
    return static_cast<double>(ToF32(x));
  }
}

// Truncates toward zero and saturates; NaN becomes 0 (XLA's float -> int rule). The bounds are
// compared in double, where -2^(n-1), 0 and 2^n are exact, so no value near them is misjudged.
template <typename Int>
Int SaturatingTruncate(double value) {
  if (std::isnan(value)) return 0;
  constexpr double kLowest = static_cast<double>(std::numeric_limits<Int>::lowest());
  const double first_too_large = std::ldexp(1.0, std::numeric_limits<Int>::digits);
  if (value <= kLowest) return std::numeric_limits<Int>::lowest();
  if (value >= first_too_large) return std::numeric_limits<Int>::max();
  return static_cast<Int>(value);
}

template <typename From>
bool IsNonZero(From x) {
  if constexpr (kIsInt<From>) {
    return x != 0;
  } else {
    return FloatToF64(x) != 0.0;  // f64, not f32: a tiny f64 must not flush to false. NaN: true.
  }
}

template <typename To, typename From>
To ConvertOne(From x) {
  if constexpr (std::is_same_v<From, Pred>) {
    return ConvertOne<To>(static_cast<uint8_t>(x.bits != 0 ? 1 : 0));
  } else if constexpr (std::is_same_v<To, Pred>) {
    return Pred{static_cast<uint8_t>(IsNonZero(x) ? 1 : 0)};
  } else if constexpr (kIsInt<To>) {
    if constexpr (kIsInt<From>) {
      return static_cast<To>(x);  // wraps modulo 2^n (defined since C++20)
    } else {
      return SaturatingTruncate<To>(FloatToF64(x));
    }
  } else if constexpr (std::is_same_v<To, double>) {
    if constexpr (kIsInt<From>) {
      return static_cast<double>(x);
    } else {
      return FloatToF64(x);
    }
  } else if constexpr (std::is_same_v<To, float>) {
    return ToF32(x);
  } else {
    // bf16/f16/f8 from anything goes through f32, as XLA does; from f64 or a wide int that is a
    // second rounding (docs/numerics.md).
    return NarrowFromF32<To>(ToF32(x));
  }
}

template <typename From, typename To>
void ConvertArray(const unsigned char* src, unsigned char* dst, int64_t count) {
  static_assert(std::is_trivially_copyable_v<From> && std::is_trivially_copyable_v<To>);
  for (int64_t i = 0; i < count; ++i) {
    From x;
    std::memcpy(&x, src + i * sizeof(From), sizeof(From));
    const To y = ConvertOne<To>(x);
    std::memcpy(dst + i * sizeof(To), &y, sizeof(To));
  }
}

// Calls visit(T{}) with the storage type T of `type`. Only supported types reach here.
template <typename Visitor>
void VisitStorageType(ElementType type, Visitor&& visit) {
  switch (type) {
    case ElementType::kPred: return visit(Pred{});
    case ElementType::kS8: return visit(int8_t{});
    case ElementType::kS16: return visit(int16_t{});
    case ElementType::kS32: return visit(int32_t{});
    case ElementType::kS64: return visit(int64_t{});
    case ElementType::kU8: return visit(uint8_t{});
    case ElementType::kU16: return visit(uint16_t{});
    case ElementType::kU32: return visit(uint32_t{});
    case ElementType::kU64: return visit(uint64_t{});
    case ElementType::kF16: return visit(F16{});
    case ElementType::kBF16: return visit(Bf16{});
    case ElementType::kF32: return visit(float{});
    case ElementType::kF64: return visit(double{});
    case ElementType::kF8E4M3FN: return visit(F8E4M3FN{});
    case ElementType::kF8E5M2: return visit(F8E5M2{});
    default: break;
  }
  // IsSupported() and this switch disagree: a programming error, reported rather than ignored.
  throw Error("internal error: no storage type for supported element type " +
              std::string(ElementTypeName(type)));
}

}  // namespace

uint16_t F32ToBf16(float value) {
  return static_cast<uint16_t>(EncodeFromF32(value, kBf16Format));
}
uint16_t F32ToF16(float value) { return static_cast<uint16_t>(EncodeFromF32(value, kF16Format)); }
uint8_t F32ToF8E4M3FN(float value) {
  return static_cast<uint8_t>(EncodeFromF32(value, kF8E4M3FNFormat));
}
uint8_t F32ToF8E5M2(float value) {
  return static_cast<uint8_t>(EncodeFromF32(value, kF8E5M2Format));
}

float Bf16ToF32(uint16_t bits) { return DecodeToF32(bits, kBf16Format); }
float F16ToF32(uint16_t bits) { return DecodeToF32(bits, kF16Format); }
float F8E4M3FNToF32(uint8_t bits) { return DecodeToF32(bits, kF8E4M3FNFormat); }
float F8E5M2ToF32(uint8_t bits) { return DecodeToF32(bits, kF8E5M2Format); }

void ConvertElements(ElementType from, const void* src, ElementType to, void* dst,
                     int64_t count) {
  RequireSupported(from, "converting");
  RequireSupported(to, "converting");
  if (count < 0) {
    throw Error("cannot convert a negative number of elements (" + std::to_string(count) + ")");
  }
  if (count == 0) return;
  if (from == to) {
    std::memmove(dst, src, static_cast<std::size_t>(count) * ElementByteWidth(from));
    return;
  }
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  VisitStorageType(from, [&](auto from_tag) {
    VisitStorageType(to, [&](auto to_tag) {
      ConvertArray<decltype(from_tag), decltype(to_tag)>(in, out, count);
    });
  });
}

}  // namespace tpusim::isa
