// f32 as the machine computes it: results are IEEE binary32 with round to nearest even and
// denormals kept, and every NaN an arithmetic operation produces is the canonical quiet NaN
// 0x7FC00000, so results are the same bits on every host (x86 would give 0xFFC00000 for
// inf - inf, Arm 0x7FC00000). docs/isa.md, "VPU: element-wise".
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tpusim::models {

inline constexpr uint32_t kCanonicalNanBits = 0x7FC00000u;
inline constexpr uint32_t kF32SignBit = 0x80000000u;

inline float BitsToF32(uint32_t bits) { return std::bit_cast<float>(bits); }
inline uint32_t F32ToBits(float value) { return std::bit_cast<uint32_t>(value); }

// The bits of an arithmetic result: `value`'s bits, or the canonical NaN.
inline uint32_t ResultBits(float value) {
  return std::isnan(value) ? kCanonicalNanBits : F32ToBits(value);
}

// max / min as the VPU defines them: NaN if either input is NaN, and -0 ordered below +0.
inline float MaxF32(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return BitsToF32(kCanonicalNanBits);
  if (a == b) return std::signbit(a) ? b : a;  // equal: only the sign of a zero can differ
  return a > b ? a : b;
}
inline float MinF32(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return BitsToF32(kCanonicalNanBits);
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

}  // namespace tpusim::models
