// Tests for isa/convert.h. Expected values come from the formats' definitions (REFERENCE.md's
// bf16 formula, the compiler's IEEE binary16 `_Float16`, the OCP FP8 tables, nearest-value
// searches over code tables built from those definitions), never from the code under test.
#include "isa/convert.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "isa/element_type.h"
#include "isa/error.h"

namespace tpusim::isa {
namespace {

// Deterministic, fast pseudo-random bits (SplitMix64), so failures reproduce.
class Bits {
 public:
  explicit Bits(uint64_t seed) : state_(seed) {}
  uint64_t Next64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t Next32() { return static_cast<uint32_t>(Next64() >> 32); }

 private:
  uint64_t state_;
};

float F(uint32_t bits) { return std::bit_cast<float>(bits); }
uint32_t B(float value) { return std::bit_cast<uint32_t>(value); }

std::string Hex(uint64_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << std::uppercase << value;
  return out.str();
}

// Collects mismatches over a large sweep and reports the first few, instead of one assertion
// per input (millions of REQUIREs would drown the report).
class MismatchLog {
 public:
  void Check(uint32_t input, uint32_t got, uint32_t want) {
    ++checked_;
    if (got == want) return;
    if (failures_.size() < 5) {
      failures_.push_back("input " + Hex(input) + ": got " + Hex(got) + ", want " + Hex(want));
    }
    ++mismatches_;
  }
  void Require() const {
    std::string report;
    for (const std::string& failure : failures_) report += failure + "\n";
    INFO("checked " << checked_ << " inputs\n" << report);
    REQUIRE(mismatches_ == 0);
  }

 private:
  int64_t checked_ = 0;
  int64_t mismatches_ = 0;
  std::vector<std::string> failures_;
};

bool IsF32Nan(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

// f32 bit patterns that exercise every rounding class of a format that drops `dropped_bits`
// low mantissa bits: for every value of the upper bits, the low bits at 0, just above 0, just
// below the tie, the tie, just above it, and all ones.
std::vector<uint32_t> RoundingClassPatterns(int dropped_bits) {
  const uint32_t half = 1u << (dropped_bits - 1);
  const uint32_t all = (1u << dropped_bits) - 1;
  const uint32_t lows[] = {0, 1, half - 1, half, half + 1, all};
  std::vector<uint32_t> patterns;
  for (uint64_t upper = 0; upper < (1ull << (32 - dropped_bits)); ++upper) {
    for (uint32_t low : lows) {
      patterns.push_back(static_cast<uint32_t>(upper << dropped_bits) | low);
    }
  }
  return patterns;
}

// --- bf16 ------------------------------------------------------------------------------------

// REFERENCE.md section 2: round to nearest even on the upper 16 bits; NaN -> quiet NaN by sign.
uint16_t ReferenceBf16(uint32_t bits) {
  if (IsF32Nan(bits)) return (bits >> 31) != 0 ? 0xFFC0 : 0x7FC0;
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

TEST_CASE("f32 -> bf16 matches the round-to-nearest-even formula", "[convert][bf16]") {
  MismatchLog log;
  Bits random(1);
  for (int i = 0; i < 4'000'000; ++i) {
    const uint32_t bits = random.Next32();
    log.Check(bits, F32ToBf16(F(bits)), ReferenceBf16(bits));
  }
  // Every upper half (sign, exponent, kept mantissa, so zeros, denormals, the largest finite
  // values, infinities and NaNs) with each rounding class in the dropped half.
  for (uint32_t bits : RoundingClassPatterns(16)) {
    log.Check(bits, F32ToBf16(F(bits)), ReferenceBf16(bits));
  }
  log.Require();
}

TEST_CASE("f32 -> bf16 edge cases", "[convert][bf16]") {
  SECTION("exact ties round to even") {
    CHECK(F32ToBf16(F(0x3F808000)) == 0x3F80);  // 1 + 2^-8: tie, 0x3F80 is even
    CHECK(F32ToBf16(F(0x3F818000)) == 0x3F82);  // tie, 0x3F81 is odd: up
    CHECK(F32ToBf16(F(0x3F808001)) == 0x3F81);  // just above the tie
    CHECK(F32ToBf16(F(0x3F817FFF)) == 0x3F81);  // just below the tie
  }
  SECTION("NaN becomes a quiet NaN with the sign kept, signalling NaNs too") {
    CHECK(F32ToBf16(std::numeric_limits<float>::quiet_NaN()) == 0x7FC0);
    CHECK(F32ToBf16(-std::numeric_limits<float>::quiet_NaN()) == 0xFFC0);
    CHECK(F32ToBf16(F(0x7F800001)) == 0x7FC0);  // signalling, payload only in the low bits
    CHECK(F32ToBf16(F(0xFF800001)) == 0xFFC0);
    CHECK(F32ToBf16(F(0x7FFFFFFF)) == 0x7FC0);  // would carry out of the word if rounded
  }
  SECTION("overflow becomes infinity; the largest value that rounds down stays finite") {
    CHECK(F32ToBf16(F(0x7F7FFFFF)) == 0x7F80);  // f32 max
    CHECK(F32ToBf16(F(0xFF7FFFFF)) == 0xFF80);
    CHECK(F32ToBf16(F(0x7F7F8000)) == 0x7F80);  // tie with odd 0x7F7F: up, to infinity
    CHECK(F32ToBf16(F(0x7F7F7FFF)) == 0x7F7F);  // largest f32 below that tie
    CHECK(F32ToBf16(std::numeric_limits<float>::infinity()) == 0x7F80);
    CHECK(F32ToBf16(-std::numeric_limits<float>::infinity()) == 0xFF80);
  }
  SECTION("denormals are rounded, not flushed; -0 is kept") {
    CHECK(F32ToBf16(F(0x00010000)) == 0x0001);
    CHECK(F32ToBf16(F(0x00008000)) == 0x0000);  // tie with even 0
    CHECK(F32ToBf16(F(0x00018000)) == 0x0002);  // tie with odd 1
    CHECK(F32ToBf16(F(0x00008001)) == 0x0001);
    CHECK(F32ToBf16(F(0x007FFFFF)) == 0x0080);  // largest denormal rounds up to the min normal
    CHECK(F32ToBf16(-0.0f) == 0x8000);
    CHECK(F32ToBf16(0.0f) == 0x0000);
  }
}

TEST_CASE("bf16 -> f32 is bits << 16 for all 65536 patterns", "[convert][bf16]") {
  MismatchLog log;
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    log.Check(bits, B(Bf16ToF32(static_cast<uint16_t>(bits))), bits << 16);
  }
  log.Require();
}

// --- f16 -------------------------------------------------------------------------------------

#ifdef __FLT16_MAX__
// The compiler's IEEE binary16 conversions (libgcc's soft-float on x86-64), round to nearest even.
uint16_t CompilerF16(float value) { return std::bit_cast<uint16_t>(static_cast<_Float16>(value)); }

void CheckF16AgainstCompiler(MismatchLog& log, uint32_t bits) {
  const uint16_t got = F32ToF16(F(bits));
  if (IsF32Nan(bits)) {
    // Payloads aside: a quiet NaN with the input's sign.
    log.Check(bits, got, (bits >> 31) != 0 ? 0xFE00 : 0x7E00);
    return;
  }
  log.Check(bits, got, CompilerF16(F(bits)));
}
#endif

TEST_CASE("f32 -> f16 matches the compiler's _Float16", "[convert][f16]") {
#ifdef __FLT16_MAX__
  MismatchLog log;
  Bits random(2);
  for (int i = 0; i < 1'000'000; ++i) CheckF16AgainstCompiler(log, random.Next32());
  // Most random patterns are far outside f16's range; these keep the exponent where f16 has
  // values (2^-27 .. 2^17), denormals and overflow included.
  for (int i = 0; i < 3'000'000; ++i) {
    const uint32_t bits = random.Next32();
    const uint32_t exponent = 100 + (bits >> 23) % 45;
    CheckF16AgainstCompiler(log, (bits & 0x807FFFFFu) | (exponent << 23));
  }
  for (uint32_t bits : RoundingClassPatterns(13)) CheckF16AgainstCompiler(log, bits);
  // Every f16 value, every midpoint between neighbours, and the f32s on either side of each
  // (denormal midpoints need this: they are not at a fixed bit position in the f32).
  for (uint32_t code = 0; code < 0x7C00; ++code) {
    const float low = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(code)));
    const float high =
        static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(code + 1)));
    const float mid = code + 1 == 0x7C00 ? 65520.0f : (low + high) / 2;
    for (float value : {low, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, high)}) {
      CheckF16AgainstCompiler(log, B(value));
      CheckF16AgainstCompiler(log, B(-value));
    }
  }
  log.Require();
#else
  WARN("compiler has no _Float16: skipping the comparison");
#endif
}

TEST_CASE("f16 -> f32 matches _Float16 for all 65536 patterns", "[convert][f16]") {
#ifdef __FLT16_MAX__
  MismatchLog log;
  for (uint32_t code = 0; code <= 0xFFFF; ++code) {
    const uint32_t got = B(F16ToF32(static_cast<uint16_t>(code)));
    const uint32_t want =
        B(static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(code))));
    if (IsF32Nan(want)) {
      // Payloads aside: NaN stays NaN with its sign.
      log.Check(code, IsF32Nan(got) ? got >> 31 : 2, want >> 31);
    } else {
      log.Check(code, got, want);
    }
  }
  log.Require();
#else
  WARN("compiler has no _Float16: skipping the comparison");
#endif
}

TEST_CASE("f16 edge cases from the binary16 definition", "[convert][f16]") {
  CHECK(F32ToF16(65504.0f) == 0x7BFF);                                  // max finite
  CHECK(F32ToF16(65520.0f) == 0x7C00);                                  // tie with odd max: inf
  CHECK(F32ToF16(std::nextafter(65520.0f, 0.0f)) == 0x7BFF);
  CHECK(F32ToF16(-65520.0f) == 0xFC00);
  CHECK(F32ToF16(std::ldexp(1.0f, -24)) == 0x0001);                     // min denormal
  CHECK(F32ToF16(std::ldexp(1.0f, -25)) == 0x0000);                     // tie with even 0
  CHECK(F32ToF16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(F32ToF16(3 * std::ldexp(1.0f, -26)) == 0x0001);                 // 0.75 * 2^-24
  CHECK(F32ToF16(3 * std::ldexp(1.0f, -25)) == 0x0002);                 // 1.5 * 2^-24: even 2
  CHECK(F32ToF16(1023 * std::ldexp(1.0f, -24)) == 0x03FF);              // max denormal
  CHECK(F32ToF16(std::ldexp(1.0f, -14)) == 0x0400);                     // min normal
  CHECK(F32ToF16(1.0f) == 0x3C00);
  CHECK(F32ToF16(-0.0f) == 0x8000);
  CHECK(F32ToF16(std::numeric_limits<float>::infinity()) == 0x7C00);
  CHECK(F32ToF16(std::numeric_limits<float>::quiet_NaN()) == 0x7E00);
  CHECK(F32ToF16(-std::numeric_limits<float>::quiet_NaN()) == 0xFE00);
  CHECK(F32ToF16(F(0x7F800001)) == 0x7E00);
  CHECK(F16ToF32(0x7BFF) == 65504.0f);
  CHECK(F16ToF32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(F16ToF32(0x03FF) == 1023 * std::ldexp(1.0f, -24));
  CHECK(F16ToF32(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(B(F16ToF32(0x8000)) == 0x80000000u);
  CHECK(std::isnan(F16ToF32(0x7E00)));
}

// --- f8: nearest-value search over a code table ------------------------------------------------

// The magnitudes of codes 0, 1, ..., n-1 (ascending, as codes of both f8 formats are), and what
// rounding past the last one gives.
struct CodeTable {
  std::vector<double> values;
  double beyond;         // the value the next code up would have; reaching it overflows
  uint8_t overflow;      // infinity, or NaN where the format has none
  uint8_t nan;
  uint8_t sign;
};

// Round to nearest by searching the table: ties go to the even code (the one whose mantissa ends
// in 0), and rounding up to `beyond` overflows. Independent of the shift-based code under test.
uint8_t NearestCode(const CodeTable& table, float x) {
  const uint8_t sign = std::signbit(x) ? table.sign : 0;
  if (std::isnan(x)) return sign | table.nan;
  const double magnitude = std::fabs(static_cast<double>(x));
  if (magnitude >= table.beyond) return sign | table.overflow;
  const auto above = std::upper_bound(table.values.begin(), table.values.end(), magnitude);
  const auto low = static_cast<std::size_t>(above - table.values.begin()) - 1;
  const double high_value = low + 1 < table.values.size() ? table.values[low + 1] : table.beyond;
  const double to_low = magnitude - table.values[low];
  const double to_high = high_value - magnitude;
  std::size_t code = low;
  if (to_high < to_low || (to_high == to_low && low % 2 == 1)) code = low + 1;
  if (code == table.values.size()) return sign | table.overflow;
  return static_cast<uint8_t>(sign | code);
}

template <typename Encode>
void CheckRoundingAgainstTable(const CodeTable& table, Encode encode, uint64_t seed) {
  MismatchLog log;
  auto check = [&](float x) {
    log.Check(B(x), encode(x), NearestCode(table, x));
    log.Check(B(-x), encode(-x), NearestCode(table, -x));
  };
  std::vector<double> points = table.values;
  points.push_back(table.beyond);
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    const auto low = static_cast<float>(points[i]);
    const auto mid = static_cast<float>((points[i] + points[i + 1]) / 2);  // exact in f32
    for (float x : {low, std::nextafter(low, 0.0f), std::nextafter(low, 1e30f), mid,
                    std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      check(x);
    }
  }
  Bits random(seed);
  for (int i = 0; i < 1'000'000; ++i) {
    const uint32_t bits = random.Next32();
    const uint32_t exponent = 100 + (bits >> 23) % 50;  // 2^-27 .. 2^22
    check(F((bits & 0x807FFFFFu) | (exponent << 23)));
    check(F(random.Next32()));
  }
  for (float x : {0.0f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), F(0x7F800001)}) {
    check(x);
  }
  log.Require();
}

// --- f8e4m3fn ----------------------------------------------------------------------------------

// OCP FP8 E4M3 (bias 7, no infinity, S.1111.111 is NaN): every positive code 0x00..0x7E as its
// value times 2^9 (the minimum denormal is 2^-9), one row per exponent field.
constexpr int kE4M3FNTimes512[] = {
    0, 1, 2, 3, 4, 5, 6, 7,                                                  // E=0, denormals
    8, 9, 10, 11, 12, 13, 14, 15,                                            // E=1
    16, 18, 20, 22, 24, 26, 28, 30,                                          // E=2
    32, 36, 40, 44, 48, 52, 56, 60,                                          // E=3
    64, 72, 80, 88, 96, 104, 112, 120,                                       // E=4
    128, 144, 160, 176, 192, 208, 224, 240,                                  // E=5
    256, 288, 320, 352, 384, 416, 448, 480,                                  // E=6
    512, 576, 640, 704, 768, 832, 896, 960,                                  // E=7 (1.0 ..)
    1024, 1152, 1280, 1408, 1536, 1664, 1792, 1920,                          // E=8
    2048, 2304, 2560, 2816, 3072, 3328, 3584, 3840,                          // E=9
    4096, 4608, 5120, 5632, 6144, 6656, 7168, 7680,                          // E=10
    8192, 9216, 10240, 11264, 12288, 13312, 14336, 15360,                    // E=11
    16384, 18432, 20480, 22528, 24576, 26624, 28672, 30720,                  // E=12
    32768, 36864, 40960, 45056, 49152, 53248, 57344, 61440,                  // E=13
    65536, 73728, 81920, 90112, 98304, 106496, 114688, 122880,               // E=14
    131072, 147456, 163840, 180224, 196608, 212992, 229376,                  // E=15, 448 = 0x7E
};
static_assert(std::size(kE4M3FNTimes512) == 0x7F);

double E4M3FNValue(int code) { return std::ldexp(kE4M3FNTimes512[code], -9); }

TEST_CASE("f8e4m3fn: every code decodes to its OCP FP8 value", "[convert][f8]") {
  for (int code = 0; code < 256; ++code) {
    INFO("code " << Hex(code));
    const float got = F8E4M3FNToF32(static_cast<uint8_t>(code));
    const int magnitude = code & 0x7F;
    if (magnitude == 0x7F) {
      CHECK(std::isnan(got));
      CHECK(std::signbit(got) == (code >= 0x80));
      continue;
    }
    const double want = code >= 0x80 ? -E4M3FNValue(magnitude) : E4M3FNValue(magnitude);
    CHECK(static_cast<double>(got) == want);
    CHECK(std::signbit(got) == (code >= 0x80));  // 0x80 is -0
  }
  CHECK(F8E4M3FNToF32(0x01) == std::ldexp(1.0f, -9));
  CHECK(F8E4M3FNToF32(0x08) == std::ldexp(1.0f, -6));
  CHECK(F8E4M3FNToF32(0x38) == 1.0f);
  CHECK(F8E4M3FNToF32(0x7E) == 448.0f);
  CHECK(F8E4M3FNToF32(0xFE) == -448.0f);
}

TEST_CASE("f8e4m3fn: every non-NaN code round trips through f32", "[convert][f8]") {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    INFO("code " << Hex(code));
    CHECK(F32ToF8E4M3FN(F8E4M3FNToF32(static_cast<uint8_t>(code))) == code);
  }
}

TEST_CASE("f8e4m3fn: rounding matches a nearest-value search", "[convert][f8]") {
  CodeTable table{{}, 480.0, 0x7F, 0x7F, 0x80};
  for (int code = 0; code < 0x7F; ++code) table.values.push_back(E4M3FNValue(code));
  CheckRoundingAgainstTable(table, F32ToF8E4M3FN, 3);
}

TEST_CASE("f8e4m3fn: overflow, NaN and denormals", "[convert][f8]") {
  CHECK(F32ToF8E4M3FN(448.0f) == 0x7E);
  CHECK(F32ToF8E4M3FN(450.0f) == 0x7E);
  // 464 is halfway between 448 (mantissa 110, even) and 480 (mantissa 111, the NaN code):
  // ties-to-even keeps 448, as ml_dtypes does. Anything above it overflows.
  CHECK(F32ToF8E4M3FN(464.0f) == 0x7E);
  CHECK(F32ToF8E4M3FN(std::nextafter(464.0f, 1e30f)) == 0x7F);
  CHECK(F32ToF8E4M3FN(-std::nextafter(464.0f, 1e30f)) == 0xFF);
  CHECK(F32ToF8E4M3FN(480.0f) == 0x7F);
  CHECK(F32ToF8E4M3FN(1e10f) == 0x7F);
  CHECK(F32ToF8E4M3FN(std::numeric_limits<float>::infinity()) == 0x7F);   // no infinity: NaN
  CHECK(F32ToF8E4M3FN(-std::numeric_limits<float>::infinity()) == 0xFF);
  CHECK(F32ToF8E4M3FN(std::numeric_limits<float>::quiet_NaN()) == 0x7F);
  CHECK(F32ToF8E4M3FN(-std::numeric_limits<float>::quiet_NaN()) == 0xFF);
  CHECK(F32ToF8E4M3FN(std::ldexp(1.0f, -9)) == 0x01);                      // min denormal
  CHECK(F32ToF8E4M3FN(std::ldexp(1.0f, -10)) == 0x00);                     // tie with even 0
  CHECK(F32ToF8E4M3FN(3 * std::ldexp(1.0f, -11)) == 0x01);
  CHECK(F32ToF8E4M3FN(3 * std::ldexp(1.0f, -10)) == 0x02);                 // tie: even 2
  CHECK(F32ToF8E4M3FN(std::ldexp(1.0f, -6)) == 0x08);                      // min normal
  CHECK(F32ToF8E4M3FN(-0.0f) == 0x80);
  CHECK(F32ToF8E4M3FN(1e-30f) == 0x00);
}

// --- f8e5m2 ------------------------------------------------------------------------------------

// OCP FP8 E5M2: IEEE-like, bias 15, two mantissa bits; exponent field 31 is inf (mantissa 0) or
// NaN. Written from the definition, not from the code under test.
double E5M2Value(int magnitude_code) {
  const int exponent = magnitude_code >> 2;
  const int mantissa = magnitude_code & 3;
  if (exponent == 0) return std::ldexp(mantissa, -16);  // mantissa/4 * 2^(1-15)
  return std::ldexp(4 + mantissa, exponent - 15 - 2);   // (1 + mantissa/4) * 2^(exponent-15)
}

TEST_CASE("f8e5m2: every code decodes to its OCP FP8 value", "[convert][f8]") {
  for (int code = 0; code < 256; ++code) {
    INFO("code " << Hex(code));
    const float got = F8E5M2ToF32(static_cast<uint8_t>(code));
    const int magnitude = code & 0x7F;
    CHECK(std::signbit(got) == (code >= 0x80));
    if (magnitude > 0x7C) {
      CHECK(std::isnan(got));
    } else if (magnitude == 0x7C) {
      CHECK(std::isinf(got));
    } else {
      const double want = code >= 0x80 ? -E5M2Value(magnitude) : E5M2Value(magnitude);
      CHECK(static_cast<double>(got) == want);
    }
#ifdef __FLT16_MAX__
    // E5M2 is binary16 with the low 8 mantissa bits dropped.
    const auto f16_bits = static_cast<uint16_t>(code << 8);
    const float as_f16 = static_cast<float>(std::bit_cast<_Float16>(f16_bits));
    if (!std::isnan(as_f16)) CHECK(got == as_f16);
#endif
  }
  CHECK(F8E5M2ToF32(0x01) == std::ldexp(1.0f, -16));
  CHECK(F8E5M2ToF32(0x3C) == 1.0f);
  CHECK(F8E5M2ToF32(0x7B) == 57344.0f);
}

TEST_CASE("f8e5m2: every non-NaN code round trips through f32", "[convert][f8]") {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) > 0x7C) continue;
    INFO("code " << Hex(code));
    CHECK(F32ToF8E5M2(F8E5M2ToF32(static_cast<uint8_t>(code))) == code);
  }
}

TEST_CASE("f8e5m2: rounding matches a nearest-value search", "[convert][f8]") {
  CodeTable table{{}, 65536.0, 0x7C, 0x7E, 0x80};
  for (int code = 0; code < 0x7C; ++code) table.values.push_back(E5M2Value(code));
  CheckRoundingAgainstTable(table, F32ToF8E5M2, 4);
}

TEST_CASE("f8e5m2: overflow, NaN and denormals", "[convert][f8]") {
  CHECK(F32ToF8E5M2(57344.0f) == 0x7B);                                 // max finite
  CHECK(F32ToF8E5M2(61440.0f) == 0x7C);                                 // tie with odd max: inf
  CHECK(F32ToF8E5M2(std::nextafter(61440.0f, 0.0f)) == 0x7B);
  CHECK(F32ToF8E5M2(-61440.0f) == 0xFC);
  CHECK(F32ToF8E5M2(std::numeric_limits<float>::infinity()) == 0x7C);
  CHECK(F32ToF8E5M2(-std::numeric_limits<float>::infinity()) == 0xFC);
  CHECK(F32ToF8E5M2(std::numeric_limits<float>::quiet_NaN()) == 0x7E);
  CHECK(F32ToF8E5M2(-std::numeric_limits<float>::quiet_NaN()) == 0xFE);
  CHECK(F32ToF8E5M2(F(0x7F800001)) == 0x7E);
  CHECK(F32ToF8E5M2(std::ldexp(1.0f, -16)) == 0x01);                    // min denormal
  CHECK(F32ToF8E5M2(std::ldexp(1.0f, -17)) == 0x00);                    // tie with even 0
  CHECK(F32ToF8E5M2(std::nextafter(std::ldexp(1.0f, -17), 1.0f)) == 0x01);
  CHECK(F32ToF8E5M2(std::ldexp(1.0f, -14)) == 0x04);                    // min normal
  CHECK(F32ToF8E5M2(-0.0f) == 0x80);
}

// --- ConvertElements ---------------------------------------------------------------------------

template <typename To, typename From>
std::vector<To> Convert(ElementType from, const std::vector<From>& input, ElementType to) {
  std::vector<To> output(input.size());
  ConvertElements(from, input.data(), to, output.data(), static_cast<int64_t>(input.size()));
  return output;
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
using I32 = std::numeric_limits<int32_t>;
using I64 = std::numeric_limits<int64_t>;

TEST_CASE("ConvertElements: float -> int truncates and saturates, NaN -> 0", "[convert]") {
  SECTION("f32 -> s32") {
    const std::vector<float> in = {3e9f, -3e9f, kNan, -1.9f, 1.9f, -0.0f, 2147483520.0f,
                                   2147483648.0f, -2147483648.0f, kInf, -kInf};
    const std::vector<int32_t> want = {I32::max(), I32::min(), 0, -1, 1, 0, 2147483520,
                                       I32::max(), I32::min(), I32::max(), I32::min()};
    CHECK(Convert<int32_t>(ElementType::kF32, in, ElementType::kS32) == want);
  }
  SECTION("f32 -> u8") {
    const std::vector<float> in = {-1.0f, 300.0f, 255.9f, 0.5f, -0.5f, kNan, 7.99f};
    const std::vector<uint8_t> want = {0, 255, 255, 0, 0, 0, 7};
    CHECK(Convert<uint8_t>(ElementType::kF32, in, ElementType::kU8) == want);
  }
  SECTION("f64 -> s64 and f32 -> u64 at 2^63 and 2^64") {
    const std::vector<double> in = {9.3e18, -9.3e18, std::ldexp(1.0, 63), -std::ldexp(1.0, 63),
                                    std::ldexp(1.0, 62)};
    const std::vector<int64_t> want = {I64::max(), I64::min(), I64::max(), I64::min(),
                                       int64_t{1} << 62};
    CHECK(Convert<int64_t>(ElementType::kF64, in, ElementType::kS64) == want);
    const std::vector<float> in_u = {std::ldexp(1.0f, 63), std::ldexp(1.0f, 64), -5.0f};
    const std::vector<uint64_t> want_u = {uint64_t{1} << 63, ~uint64_t{0}, 0};
    CHECK(Convert<uint64_t>(ElementType::kF32, in_u, ElementType::kU64) == want_u);
  }
  SECTION("narrow floats -> int") {
    const std::vector<uint8_t> in = {0x7E, 0xFE, 0x7F};  // 448, -448, NaN
    CHECK(Convert<int8_t>(ElementType::kF8E4M3FN, in, ElementType::kS8) ==
          std::vector<int8_t>{127, -128, 0});
    CHECK(Convert<int16_t>(ElementType::kF8E4M3FN, in, ElementType::kS16) ==
          std::vector<int16_t>{448, -448, 0});
    const std::vector<uint16_t> bf16 = {0x3FC0, 0xC020};  // 1.5, -2.5
    CHECK(Convert<int32_t>(ElementType::kBF16, bf16, ElementType::kS32) ==
          std::vector<int32_t>{1, -2});
  }
}

TEST_CASE("ConvertElements: int -> int wraps", "[convert]") {
  CHECK(Convert<int8_t>(ElementType::kS32, std::vector<int32_t>{300, -129, 128, -1},
                        ElementType::kS8) == std::vector<int8_t>{44, 127, -128, -1});
  CHECK(Convert<uint32_t>(ElementType::kS32, std::vector<int32_t>{-1}, ElementType::kU32) ==
        std::vector<uint32_t>{0xFFFFFFFFu});
  CHECK(Convert<int8_t>(ElementType::kU8, std::vector<uint8_t>{200}, ElementType::kS8) ==
        std::vector<int8_t>{-56});
  CHECK(Convert<int64_t>(ElementType::kS8, std::vector<int8_t>{-1}, ElementType::kS64) ==
        std::vector<int64_t>{-1});
  CHECK(Convert<int64_t>(ElementType::kU32, std::vector<uint32_t>{0xFFFFFFFFu},
                         ElementType::kS64) == std::vector<int64_t>{4294967295});
}

TEST_CASE("ConvertElements: int -> float rounds to nearest even", "[convert]") {
  // 2^53 + 2^29 + 1 is just above the midpoint between two f32s, so it rounds up; going through
  // f64 first would land exactly on the midpoint and round down to 2^53.
  const int64_t two53 = int64_t{1} << 53;
  const std::vector<int64_t> in = {16777217, 16777219, two53 + (int64_t{1} << 29) + 1,
                                   I64::max(), I64::min(), -3};
  const std::vector<float> want = {16777216.0f,
                                   16777220.0f,
                                   std::ldexp(1.0f, 53) + std::ldexp(1.0f, 30),
                                   std::ldexp(1.0f, 63),
                                   -std::ldexp(1.0f, 63),
                                   -3.0f};
  CHECK(Convert<float>(ElementType::kS64, in, ElementType::kF32) == want);
  CHECK(Convert<double>(ElementType::kU64, std::vector<uint64_t>{~uint64_t{0}},
                        ElementType::kF64) == std::vector<double>{std::ldexp(1.0, 64)});
  // int -> bf16 goes through f32: 257 is a tie between 256 and 258 in bf16, to even 256.
  CHECK(Convert<uint16_t>(ElementType::kS32, std::vector<int32_t>{1, 257, 259, -2},
                          ElementType::kBF16) ==
        std::vector<uint16_t>{0x3F80, 0x4380, 0x4382, 0xC000});
  CHECK(Convert<uint16_t>(ElementType::kS32, std::vector<int32_t>{65504, 70000},
                          ElementType::kF16) == std::vector<uint16_t>{0x7BFF, 0x7C00});
}

TEST_CASE("ConvertElements: between float types", "[convert]") {
  SECTION("bf16 -> f16") {
    // 1.0; 65536 overflows f16; 2^-24 is f16's min denormal; 0x3EAB = 1.0101011b * 2^-2 is exact
    // in f16; NaN and -0 keep their sign.
    const std::vector<uint16_t> in = {0x3F80, 0x4780, 0x3380, 0x3EAB, 0x7FC0, 0xFFC0, 0x8000};
    const std::vector<uint16_t> want = {0x3C00, 0x7C00, 0x0001, 0x3558, 0x7E00, 0xFE00, 0x8000};
    CHECK(Convert<uint16_t>(ElementType::kBF16, in, ElementType::kF16) == want);
  }
  SECTION("f64 -> bf16 goes through f32 (double rounding, as XLA)") {
    // 1 + 2^-8 + 2^-40 is above bf16's midpoint 1 + 2^-8, so direct rounding gives 0x3F81; but
    // f32 first rounds it onto the midpoint, and the tie then goes to even 0x3F80.
    const std::vector<double> in = {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40), 1e-300,
                                    1e300, std::numeric_limits<double>::quiet_NaN(), -0.0};
    const std::vector<uint16_t> want = {0x3F80, 0x0000, 0x7F80, 0x7FC0, 0x8000};
    CHECK(Convert<uint16_t>(ElementType::kF64, in, ElementType::kBF16) == want);
  }
  SECTION("f64 <-> f32 and f8") {
    CHECK(Convert<float>(ElementType::kF64, std::vector<double>{0.1, 1e39, -1e-50},
                         ElementType::kF32) == std::vector<float>{0.1f, kInf, -0.0f});
    CHECK(Convert<double>(ElementType::kF32, std::vector<float>{0.1f}, ElementType::kF64) ==
          std::vector<double>{static_cast<double>(0.1f)});
    CHECK(Convert<uint8_t>(ElementType::kF64, std::vector<double>{448.0, 1e6, 1.0},
                           ElementType::kF8E4M3FN) == std::vector<uint8_t>{0x7E, 0x7F, 0x38});
    CHECK(Convert<uint8_t>(ElementType::kF8E4M3FN, std::vector<uint8_t>{0x7E, 0x01},
                           ElementType::kF8E5M2) == std::vector<uint8_t>{0x5F, 0x18});
  }
}

TEST_CASE("ConvertElements: pred", "[convert]") {
  const std::vector<uint8_t> pred = {0, 1, 2, 255};
  CHECK(Convert<int32_t>(ElementType::kPred, pred, ElementType::kS32) ==
        std::vector<int32_t>{0, 1, 1, 1});
  CHECK(Convert<float>(ElementType::kPred, pred, ElementType::kF32) ==
        std::vector<float>{0, 1, 1, 1});
  CHECK(Convert<uint16_t>(ElementType::kPred, pred, ElementType::kBF16) ==
        std::vector<uint16_t>{0, 0x3F80, 0x3F80, 0x3F80});
  CHECK(Convert<uint8_t>(ElementType::kF32,
                         std::vector<float>{0.0f, -0.0f, kNan, 1e-30f, -2.0f, kInf},
                         ElementType::kPred) == std::vector<uint8_t>{0, 0, 1, 1, 1, 1});
  CHECK(Convert<uint8_t>(ElementType::kF64, std::vector<double>{1e-300},
                         ElementType::kPred) == std::vector<uint8_t>{1});
  CHECK(Convert<uint8_t>(ElementType::kS8, std::vector<int8_t>{0, -1, 5}, ElementType::kPred) ==
        std::vector<uint8_t>{0, 1, 1});
  CHECK(Convert<uint8_t>(ElementType::kBF16, std::vector<uint16_t>{0x8000, 0x0001},
                         ElementType::kPred) == std::vector<uint8_t>{0, 1});
}

TEST_CASE("ConvertElements: same type is a byte copy", "[convert]") {
  const std::vector<uint32_t> in = {0x7F800001u, 0x80000000u, 0x3F800000u};  // sNaN survives
  CHECK(Convert<uint32_t>(ElementType::kF32, in, ElementType::kF32) == in);
  CHECK(Convert<uint8_t>(ElementType::kPred, std::vector<uint8_t>{2}, ElementType::kPred) ==
        std::vector<uint8_t>{2});
}

TEST_CASE("ConvertElements: unsupported types and bad counts throw", "[convert]") {
  int32_t in = 1;
  int64_t out = 0;
  CHECK_THROWS_AS(ConvertElements(ElementType::kS4, &in, ElementType::kS32, &out, 1), Error);
  CHECK_THROWS_WITH(ConvertElements(ElementType::kS4, &in, ElementType::kS32, &out, 1),
                    Catch::Contains("s4"));
  CHECK_THROWS_AS(ConvertElements(ElementType::kF32, &in, ElementType::kC64, &out, 1), Error);
  CHECK_THROWS_WITH(ConvertElements(ElementType::kF32, &in, ElementType::kC64, &out, 1),
                    Catch::Contains("c64"));
  CHECK_THROWS_AS(ConvertElements(ElementType::kS32, &in, ElementType::kS64, &out, -1), Error);
  CHECK_NOTHROW(ConvertElements(ElementType::kS32, nullptr, ElementType::kS64, nullptr, 0));
}

}  // namespace
}  // namespace tpusim::isa
