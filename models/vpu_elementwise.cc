// The element-wise sub-unit: every result word (s, l) depends only on the operands' words (s, l),
// except vlaneid / vsublaneid (the position itself) and the bf16 pack/unpack (the (2,1) row
// pairing moves rows between sublanes). Results are built in a fresh Vreg or Mask and then
// assigned, so the destination may be a source.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "isa/convert.h"
#include "isa/error.h"
#include "models/f32_bits.h"
#include "models/packed_rows.h"
#include "models/vpu_semantics.h"

namespace tpusim::models {
namespace {

constexpr int32_t kS32Min = std::numeric_limits<int32_t>::min();

template <typename F>
Vreg MapBits(const Vreg& a, const Vreg& b, F f) {
  Vreg out(a.sublanes(), a.lanes());
  const auto aw = a.words();
  const auto bw = b.words();
  auto ow = out.words();
  for (size_t i = 0; i < ow.size(); ++i) ow[i] = f(aw[i], bw[i]);
  return out;
}
template <typename F>
Vreg MapBits(const Vreg& a, F f) {
  return MapBits(a, a, [&](uint32_t x, uint32_t) { return f(x); });
}
// f32 arithmetic: rounded by the host's IEEE operations, NaN results canonical.
template <typename F>
Vreg MapF32(const Vreg& a, const Vreg& b, F f) {
  return MapBits(a, b,
                 [&](uint32_t x, uint32_t y) { return ResultBits(f(BitsToF32(x), BitsToF32(y))); });
}
template <typename F>
Mask CompareBits(const Vreg& a, const Vreg& b, F f) {
  Mask out(a.sublanes(), a.lanes());
  const auto aw = a.words();
  const auto bw = b.words();
  auto ob = out.bits();
  for (size_t i = 0; i < ob.size(); ++i) ob[i] = f(aw[i], bw[i]) ? 1 : 0;
  return out;
}
template <typename F>
Mask CompareF32(const Vreg& a, const Vreg& b, F f) {
  return CompareBits(a, b, [&](uint32_t x, uint32_t y) { return f(BitsToF32(x), BitsToF32(y)); });
}
template <typename F>
Mask CompareS32(const Vreg& a, const Vreg& b, F f) {
  return CompareBits(a, b, [&](uint32_t x, uint32_t y) {
    return f(static_cast<int32_t>(x), static_cast<int32_t>(y));
  });
}
template <typename F>
Mask MapMask(const Mask& a, const Mask& b, F f) {
  Mask out(a.sublanes(), a.lanes());
  const auto ab = a.bits();
  const auto bb = b.bits();
  auto ob = out.bits();
  for (size_t i = 0; i < ob.size(); ++i) ob[i] = f(ab[i] != 0, bb[i] != 0) ? 1 : 0;
  return out;
}

int32_t S32(uint32_t x) { return static_cast<int32_t>(x); }

// Integer division and remainder at 32 bits with the scalar core's total rules (docs/isa.md).
uint32_t DivS32(uint32_t a, uint32_t b) {
  if (b == 0) return 0xFFFFFFFFu;                   // x / 0 = -1
  if (S32(a) == kS32Min && S32(b) == -1) return a;  // MIN / -1 = MIN
  return static_cast<uint32_t>(S32(a) / S32(b));
}
uint32_t RemS32(uint32_t a, uint32_t b) {
  if (b == 0) return a;                             // x % 0 = x
  if (S32(a) == kS32Min && S32(b) == -1) return 0;  // MIN % -1 = 0
  return static_cast<uint32_t>(S32(a) % S32(b));
}
uint32_t DivU32(uint32_t a, uint32_t b) { return b == 0 ? 0xFFFFFFFFu : a / b; }
uint32_t RemU32(uint32_t a, uint32_t b) { return b == 0 ? a : a % b; }

// Shift amounts are read as unsigned; at 32 or more the bits are all shifted out.
uint32_t Shl(uint32_t a, uint32_t b) { return b >= 32 ? 0 : a << b; }
uint32_t Shr(uint32_t a, uint32_t b) { return b >= 32 ? 0 : a >> b; }
uint32_t Sra(uint32_t a, uint32_t b) {
  return static_cast<uint32_t>(S32(a) >> (b >= 32 ? 31 : b));  // C++20: arithmetic shift
}

// f32 -> s32 as XLA converts: toward zero, saturating, NaN -> 0.
uint32_t F32ToS32(uint32_t bits) {
  const float x = BitsToF32(bits);
  if (std::isnan(x)) return 0;
  if (x >= 2147483648.0f) return static_cast<uint32_t>(std::numeric_limits<int32_t>::max());
  if (x <= -2147483648.0f) return static_cast<uint32_t>(kS32Min);
  return static_cast<uint32_t>(static_cast<int32_t>(x));
}

// f32 rounded to bf16 (isa::F32ToBf16: nearest even, NaN -> 0x7FC0 / 0xFFC0 by sign), as an f32.
uint32_t RoundToBf16(uint32_t bits) { return uint32_t{isa::F32ToBf16(BitsToF32(bits))} << 16; }

// vpack.bf16: rows 0..S-1 from a, S..2S-1 from b, packed two rows per sublane (even row low).
Vreg PackBf16(const Vreg& a, const Vreg& b) {
  const uint32_t rows = 2 * a.sublanes();
  Vreg out(a.sublanes(), a.lanes());
  for (uint32_t r = 0; r < rows; ++r) {
    const Vreg& from = r < a.sublanes() ? a : b;
    const uint32_t s = r < a.sublanes() ? r : r - a.sublanes();
    for (uint32_t l = 0; l < a.lanes(); ++l) {
      SetPackedBits(out, 16, r, l, isa::F32ToBf16(from.f32(s, l)));
    }
  }
  return out;
}

// vunpack.lo.bf16 (first_row 0) / vunpack.hi.bf16 (first_row S): packed rows as f32, exactly.
Vreg UnpackBf16(const Vreg& a, uint32_t first_row) {
  Vreg out(a.sublanes(), a.lanes());
  for (uint32_t s = 0; s < a.sublanes(); ++s) {
    for (uint32_t l = 0; l < a.lanes(); ++l) {
      out.set_word(s, l, PackedBits(a, 16, first_row + s, l) << 16);
    }
  }
  return out;
}

Vreg Positions(uint32_t sublanes, uint32_t lanes, bool lane) {
  Vreg out(sublanes, lanes);
  for (uint32_t s = 0; s < sublanes; ++s) {
    for (uint32_t l = 0; l < lanes; ++l) out.set_word(s, l, lane ? l : s);
  }
  return out;
}

Vreg Select(const Mask& m, const Vreg& a, const Vreg& b) {
  Vreg out(a.sublanes(), a.lanes());
  const auto mb = m.bits();
  const auto aw = a.words();
  const auto bw = b.words();
  auto ow = out.words();
  for (size_t i = 0; i < ow.size(); ++i) ow[i] = mb[i] ? aw[i] : bw[i];
  return out;
}

// The ops whose result is a vreg.
Vreg VregResult(const VpuInstr& instr, const VectorRegisterFile& regs) {
  using O = VpuOp;
  const VpuOpInfo& info = GetVpuOpInfo(instr.op);
  const Vreg* a_ptr = info.a == VpuOperand::kVreg ? &regs.vreg(instr.a) : nullptr;
  const Vreg* b_ptr = info.b == VpuOperand::kVreg ? &regs.vreg(instr.b) : nullptr;
  const uint32_t sublanes = regs.sublanes();
  const uint32_t lanes = regs.lanes();
  switch (instr.op) {
    case O::kLaneId: return Positions(sublanes, lanes, true);
    case O::kSublaneId: return Positions(sublanes, lanes, false);
    case O::kBcast: {
      Vreg out(sublanes, lanes);
      for (uint32_t& word : out.words()) word = static_cast<uint32_t>(instr.scalar);
      return out;
    }
    default: break;
  }
  const Vreg& a = *a_ptr;
  switch (instr.op) {
    case O::kMov: return a;
    case O::kNot: return MapBits(a, [](uint32_t x) { return ~x; });
    case O::kAbsF32: return MapBits(a, [](uint32_t x) { return x & ~kF32SignBit; });
    case O::kNegF32: return MapBits(a, [](uint32_t x) { return x ^ kF32SignBit; });
    case O::kAbsS32: return MapBits(a, [](uint32_t x) { return S32(x) < 0 ? 0u - x : x; });
    case O::kNegS32: return MapBits(a, [](uint32_t x) { return 0u - x; });
    case O::kCvtF32S32:
      return MapBits(a, [](uint32_t x) { return F32ToBits(static_cast<float>(S32(x))); });
    case O::kCvtS32F32: return MapBits(a, F32ToS32);
    case O::kCvtBf16F32: return MapBits(a, RoundToBf16);
    case O::kUnpackLoBf16: return UnpackBf16(a, 0);
    case O::kUnpackHiBf16: return UnpackBf16(a, sublanes);
    case O::kSel: return Select(regs.mask(instr.m), a, *b_ptr);
    default: break;
  }
  const Vreg& b = *b_ptr;
  switch (instr.op) {
    case O::kAddF32: return MapF32(a, b, [](float x, float y) { return x + y; });
    case O::kSubF32: return MapF32(a, b, [](float x, float y) { return x - y; });
    case O::kMulF32: return MapF32(a, b, [](float x, float y) { return x * y; });
    case O::kDivF32: return MapF32(a, b, [](float x, float y) { return x / y; });
    case O::kMaxF32: return MapF32(a, b, MaxF32);
    case O::kMinF32: return MapF32(a, b, MinF32);
    case O::kAddS32: return MapBits(a, b, [](uint32_t x, uint32_t y) { return x + y; });
    case O::kSubS32: return MapBits(a, b, [](uint32_t x, uint32_t y) { return x - y; });
    case O::kMulS32: return MapBits(a, b, [](uint32_t x, uint32_t y) { return x * y; });
    case O::kDivS32: return MapBits(a, b, DivS32);
    case O::kRemS32: return MapBits(a, b, RemS32);
    case O::kMaxS32:
      return MapBits(a, b, [](uint32_t x, uint32_t y) { return S32(x) >= S32(y) ? x : y; });
    case O::kMinS32:
      return MapBits(a, b, [](uint32_t x, uint32_t y) { return S32(x) <= S32(y) ? x : y; });
    case O::kDivU32: return MapBits(a, b, DivU32);
    case O::kRemU32: return MapBits(a, b, RemU32);
    case O::kMaxU32: return MapBits(a, b, [](uint32_t x, uint32_t y) { return x >= y ? x : y; });
    case O::kMinU32: return MapBits(a, b, [](uint32_t x, uint32_t y) { return x <= y ? x : y; });
    case O::kAnd: return MapBits(a, b, [](uint32_t x, uint32_t y) { return x & y; });
    case O::kOr: return MapBits(a, b, [](uint32_t x, uint32_t y) { return x | y; });
    case O::kXor: return MapBits(a, b, [](uint32_t x, uint32_t y) { return x ^ y; });
    case O::kShl: return MapBits(a, b, Shl);
    case O::kShr: return MapBits(a, b, Shr);
    case O::kSra: return MapBits(a, b, Sra);
    case O::kPackBf16: return PackBf16(a, b);
    default: break;
  }
  throw Error("VPU op " + std::string(info.mnemonic) + " is not element-wise with a vreg result");
}

// The ops whose result is a mask.
Mask MaskResult(const VpuInstr& instr, const VectorRegisterFile& regs) {
  using O = VpuOp;
  switch (instr.op) {
    case O::kMaskAnd:
      return MapMask(regs.mask(instr.a), regs.mask(instr.b), [](bool x, bool y) { return x && y; });
    case O::kMaskOr:
      return MapMask(regs.mask(instr.a), regs.mask(instr.b), [](bool x, bool y) { return x || y; });
    case O::kMaskXor:
      return MapMask(regs.mask(instr.a), regs.mask(instr.b), [](bool x, bool y) { return x != y; });
    case O::kMaskNot:
      return MapMask(regs.mask(instr.a), regs.mask(instr.a), [](bool x, bool) { return !x; });
    default: break;
  }
  const Vreg& a = regs.vreg(instr.a);
  const Vreg& b = regs.vreg(instr.b);
  // f32 compares are C++'s, which are IEEE's: false with a NaN except !=, and -0 == +0.
  switch (instr.op) {
    case O::kCmpEqF32: return CompareF32(a, b, [](float x, float y) { return x == y; });
    case O::kCmpNeF32: return CompareF32(a, b, [](float x, float y) { return x != y; });
    case O::kCmpLtF32: return CompareF32(a, b, [](float x, float y) { return x < y; });
    case O::kCmpLeF32: return CompareF32(a, b, [](float x, float y) { return x <= y; });
    case O::kCmpGtF32: return CompareF32(a, b, [](float x, float y) { return x > y; });
    case O::kCmpGeF32: return CompareF32(a, b, [](float x, float y) { return x >= y; });
    case O::kCmpEqS32: return CompareS32(a, b, [](int32_t x, int32_t y) { return x == y; });
    case O::kCmpNeS32: return CompareS32(a, b, [](int32_t x, int32_t y) { return x != y; });
    case O::kCmpLtS32: return CompareS32(a, b, [](int32_t x, int32_t y) { return x < y; });
    case O::kCmpLeS32: return CompareS32(a, b, [](int32_t x, int32_t y) { return x <= y; });
    case O::kCmpGtS32: return CompareS32(a, b, [](int32_t x, int32_t y) { return x > y; });
    case O::kCmpGeS32: return CompareS32(a, b, [](int32_t x, int32_t y) { return x >= y; });
    case O::kCmpLtU32: return CompareBits(a, b, [](uint32_t x, uint32_t y) { return x < y; });
    case O::kCmpLeU32: return CompareBits(a, b, [](uint32_t x, uint32_t y) { return x <= y; });
    case O::kCmpGtU32: return CompareBits(a, b, [](uint32_t x, uint32_t y) { return x > y; });
    case O::kCmpGeU32: return CompareBits(a, b, [](uint32_t x, uint32_t y) { return x >= y; });
    default: break;
  }
  throw Error("VPU op " + std::string(GetVpuOpInfo(instr.op).mnemonic) +
              " is not element-wise with a mask result");
}

}  // namespace

void ExecuteElementwise(const VpuInstr& instr, VectorRegisterFile& regs) {
  if (GetVpuOpInfo(instr.op).dst == VpuOperand::kMask) {
    Mask result = MaskResult(instr, regs);
    regs.mask(instr.dst) = std::move(result);
  } else {
    Vreg result = VregResult(instr, regs);
    regs.vreg(instr.dst) = std::move(result);
  }
}

}  // namespace tpusim::models
