#include "compiler/lower/f16_emulation.h"

namespace tpusim::compiler {
namespace {

constexpr uint32_t kSign = 0x80000000u;
constexpr uint32_t kFour = 4;                       // ((h << 16) << 1) >> 4 = (h & 0x7fff) << 13
constexpr uint32_t kTwoPow112 = 0x77800000u;        // 2^112 = 2^(127 - 15): rebias the exponent
constexpr uint32_t kF32Inf = 0x7f800000u;
constexpr uint32_t kHalf = 0x3f000000u;             // 0.5f: adding it rounds at 2^-24, f16's denormal step
constexpr uint32_t kF16MinNormal = 0x38800000u;     // 2^-14 as f32 bits
constexpr uint32_t kF16Overflow = 0x47800000u;      // 2^16 as f32 bits: every value from here is inf
constexpr uint32_t kThirteen = 13;
constexpr uint32_t kOne = 1;
constexpr uint32_t kRebiasRound = 0xc8000fffu;      // ((15 - 127) << 23) + 0xfff: rebias, round half down
constexpr uint32_t kF16QuietNan = 0x7e00;
constexpr uint32_t kF16Inf = 0x7c00;
constexpr uint32_t kSixteen = 16;

}  // namespace

std::vector<uint32_t> F16Emulation::WideningConstants() {
  return {kSign, kOne, kFour, kTwoPow112, kF16Overflow, kF32Inf};
}

std::vector<uint32_t> F16Emulation::NarrowingConstants() {
  return {kSign, kHalf, kF16MinNormal, kF16Overflow, kF32Inf, kThirteen, kOne, kRebiasRound, kF16QuietNan, kF16Inf,
          kSixteen};
}

void F16Emulation::EmitWiden(ProgramBuilder& out, const std::vector<Regs>& copies) const {
  using namespace isa::ops;
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VAND, {V(r.t1), V(r.x), V(K(kSign))});
  // The f16 exponent and mantissa moved to the f32 positions (the sign shifted out).
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSHL, {V(r.t2), V(r.x), V(K(kOne))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSHR, {V(r.t2), V(r.t2), V(K(kFour))});
  // Normals and denormals at once: the f16 fields read as an f32 are the value x 2^-112 (an f32
  // denormal for an f16 denormal, kept by the VPU), so one exact multiply rebiases them.
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VMUL_F32, {V(r.d), V(r.t2), V(K(kTwoPow112))});
  // Infinity and NaN (exponent 31) come out at 2^16 or above, every finite f16 below.
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VCMP_GE_S32, {M(r.m), V(r.d), V(K(kF16Overflow))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VOR, {V(r.t2), V(r.t2), V(K(kF32Inf))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSEL, {V(r.d), M(r.m), V(r.t2), V(r.d)});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VOR, {V(r.d), V(r.d), V(r.t1)});
}

void F16Emulation::EmitNarrow(ProgramBuilder& out, const std::vector<Regs>& copies) const {
  using namespace isa::ops;
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VAND, {V(r.t1), V(r.x), V(K(kSign))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VXOR, {V(r.t2), V(r.x), V(r.t1)});  // |x| as bits
  // Below 2^-14 (f16 denormals and zero): 0.5 + |x| rounds |x| to a multiple of 2^-24 (nearest
  // even, by the f32 add); the low bits of the sum are then the f16 bits.
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VADD_F32, {V(r.t3), V(r.t2), V(K(kHalf))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSUB_S32, {V(r.t3), V(r.t3), V(K(kHalf))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VCMP_LT_S32, {M(r.m), V(r.t2), V(K(kF16MinNormal))});
  // Normals: rebias the exponent and round the 13 dropped bits to nearest even (add 0xfff plus the
  // kept mantissa's lowest bit, then shift); a carry out of the mantissa rounds up to infinity.
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSHR, {V(r.d), V(r.t2), V(K(kThirteen))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VAND, {V(r.d), V(r.d), V(K(kOne))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VADD_S32, {V(r.d), V(r.d), V(r.t2)});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VADD_S32, {V(r.d), V(r.d), V(K(kRebiasRound))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSHR, {V(r.d), V(r.d), V(K(kThirteen))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSEL, {V(r.d), M(r.m), V(r.t3), V(r.d)});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VCMP_GT_S32, {M(r.m), V(r.t2), V(K(kF32Inf))});  // NaN
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSEL, {V(r.t3), M(r.m), V(K(kF16QuietNan)), V(K(kF16Inf))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VCMP_GE_S32, {M(r.m), V(r.t2), V(K(kF16Overflow))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSEL, {V(r.d), M(r.m), V(r.t3), V(r.d)});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VSHL, {V(r.d), V(r.d), V(K(kSixteen))});
  for (const Regs& r : copies) out.Emit(isa::OPCODE_VOR, {V(r.d), V(r.d), V(r.t1)});
}

}  // namespace tpusim::compiler
