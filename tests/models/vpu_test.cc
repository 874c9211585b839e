// The VPU model: each operation's value on chosen inputs with exact expected results
// (docs/isa.md, "VPU"), and its timing from first principles (docs/timing.md, "VPU").
#include "models/vpu.h"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "isa/convert.h"
#include "isa/error.h"
#include "isa/instruction_set.h"
#include "isa/materialize.h"
#include "isa/shape.h"
#include "models/f32_bits.h"
#include "models/vpu_semantics.h"

namespace {

using namespace tpusim::models;
using O = VpuOp;

constexpr uint32_t kS = 8;
constexpr uint32_t kL = 128;
constexpr uint32_t kNan = 0x7FC00000u;

uint32_t Bits(float x) { return std::bit_cast<uint32_t>(x); }
float F(uint32_t bits) { return std::bit_cast<float>(bits); }

// A register file and helpers to fill registers and run one op on them.
struct Regs {
  VectorRegisterFile file{16, kS, kL};

  void Fill(uint32_t v, uint32_t word) {
    for (uint32_t& w : file.vreg(v).words()) w = word;
  }
  void FillF(uint32_t v, float x) { Fill(v, Bits(x)); }
  // vreg v word i = f(i) for i in sublane-major order.
  template <typename F>
  void Set(uint32_t v, F f) {
    auto words = file.vreg(v).words();
    for (uint32_t i = 0; i < words.size(); ++i) words[i] = f(i);
  }
  const Vreg& Run(VpuOp op, uint32_t a = 1, uint32_t b = 2, int64_t scalar = 0) {
    ExecuteVpuOp({op, 0, a, b, 0, scalar}, file);
    return file.vreg(0);
  }
  // The result word of `op` on one pair of words (every element the same).
  uint32_t Word(VpuOp op, uint32_t a, uint32_t b = 0) {
    Fill(1, a);
    Fill(2, b);
    return Run(op).word(3, 77);
  }
  uint32_t WordF(VpuOp op, float a, float b = 0) { return Word(op, Bits(a), Bits(b)); }
  bool Compare(VpuOp op, uint32_t a, uint32_t b) {
    Fill(1, a);
    Fill(2, b);
    ExecuteVpuOp({op, 5, 1, 2, 0, 0}, file);
    return file.mask(5).get(2, 9);
  }
  bool CompareF(VpuOp op, float a, float b) { return Compare(op, Bits(a), Bits(b)); }
};

VpuParams Params(uint32_t issue_width = 1) {
  VpuParams p;
  p.sublanes = kS;
  p.lanes = kL;
  p.issue_instructions_per_cycle = issue_width;
  p.elementwise = {2, 1};
  p.transcendental = {16, 0.25};
  p.cross_lane = {16, 0.5};
  return p;
}

}  // namespace

TEST_CASE("the VPU op table matches the ISA's instruction table", "[models][vpu]") {
  // Every VPU instruction but the loads, stores and vpu.signal is a VpuOp with the same
  // mnemonic, sub-unit and operands (vector, mask, scalar) in the same order, and back.
  using tpusim::isa::OperandKind;
  using tpusim::isa::Unit;
  size_t vpu_instructions = 0;
  for (const tpusim::isa::InstructionInfo& info : tpusim::isa::InstructionTable()) {
    if (info.unit != Unit::kVpu && info.unit != Unit::kVpuTranscendental &&
        info.unit != Unit::kVpuCrossLane) {
      continue;
    }
    if (info.mnemonic == "vld" || info.mnemonic == "vst" || info.mnemonic == "vpu.signal") continue;
    ++vpu_instructions;
    INFO(info.mnemonic);
    const VpuOpInfo* op = FindVpuOp(info.mnemonic);
    REQUIRE(op != nullptr);
    const VpuSubUnit unit = info.unit == Unit::kVpu                 ? VpuSubUnit::kElementwise
                            : info.unit == Unit::kVpuTranscendental ? VpuSubUnit::kTranscendental
                                                                    : VpuSubUnit::kCrossLane;
    CHECK(op->unit == unit);
    std::vector<VpuOperand> isa_operands;
    for (const tpusim::isa::OperandSpec& spec : info.operands) {
      isa_operands.push_back(spec.kind == OperandKind::kVReg   ? VpuOperand::kVreg
                             : spec.kind == OperandKind::kMReg ? VpuOperand::kMask
                                                               : VpuOperand::kScalar);
    }
    std::vector<VpuOperand> ours = {op->dst};
    if (op->reads_select_mask) ours.push_back(VpuOperand::kMask);
    for (VpuOperand kind : {op->a, op->b}) {
      if (kind != VpuOperand::kNone) ours.push_back(kind);
    }
    CHECK(ours == isa_operands);
  }
  CHECK(vpu_instructions == VpuOpTable().size());
  for (size_t i = 0; i < VpuOpTable().size(); ++i)
    CHECK(static_cast<size_t>(VpuOpTable()[i].op) == i);
}

TEST_CASE("VPU f32 arithmetic rounds, keeps denormals and canonicalizes NaN", "[models][vpu]") {
  Regs r;
  CHECK(r.WordF(O::kAddF32, 1.5f, 2.25f) == Bits(3.75f));
  CHECK(r.WordF(O::kSubF32, 1.0f, 0x1p-24f) == Bits(1.0f - 0x1p-24f));
  CHECK(r.WordF(O::kAddF32, 1.0f, 0x1p-24f) == Bits(1.0f));        // a tie, to even
  CHECK(r.WordF(O::kMulF32, 0x1p-126f, 0.5f) == Bits(0x1p-127f));  // a denormal, not flushed
  CHECK(r.WordF(O::kDivF32, 1.0f, 3.0f) == Bits(1.0f / 3.0f));
  CHECK(r.WordF(O::kDivF32, 1.0f, 0.0f) == Bits(std::numeric_limits<float>::infinity()));
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(r.WordF(O::kAddF32, inf, -inf) == kNan);  // x86 would give 0xFFC00000
  CHECK(r.WordF(O::kDivF32, 0.0f, 0.0f) == kNan);
  CHECK(r.Word(O::kAddF32, 0xFFC01234u, Bits(1.0f)) == kNan);  // NaN payloads do not survive
  // max / min: NaN if either is NaN, -0 below +0.
  CHECK(r.WordF(O::kMaxF32, F(kNan), 1.0f) == kNan);
  CHECK(r.WordF(O::kMinF32, 1.0f, F(0xFF800001u)) == kNan);
  CHECK(r.WordF(O::kMaxF32, -0.0f, 0.0f) == Bits(0.0f));
  CHECK(r.WordF(O::kMaxF32, 0.0f, -0.0f) == Bits(0.0f));
  CHECK(r.WordF(O::kMinF32, 0.0f, -0.0f) == Bits(-0.0f));
  CHECK(r.WordF(O::kMaxF32, -3.0f, 2.0f) == Bits(2.0f));
  CHECK(r.WordF(O::kMinF32, -3.0f, 2.0f) == Bits(-3.0f));
  // abs and neg touch only the sign bit, NaN payload included.
  CHECK(r.Word(O::kAbsF32, 0xFFC01234u) == 0x7FC01234u);
  CHECK(r.Word(O::kNegF32, 0x7FC01234u) == 0xFFC01234u);
  CHECK(r.WordF(O::kNegF32, 0.0f) == Bits(-0.0f));
}

TEST_CASE("VPU integer arithmetic wraps and divides totally", "[models][vpu]") {
  Regs r;
  const uint32_t min = 0x80000000u, max = 0x7FFFFFFFu, minus1 = 0xFFFFFFFFu;
  CHECK(r.Word(O::kAddS32, max, 1) == min);
  CHECK(r.Word(O::kSubS32, min, 1) == max);
  CHECK(r.Word(O::kMulS32, 0x10000u, 0x10001u) == 0x10000u);  // low 32 bits
  CHECK(r.Word(O::kMulS32, minus1, 7) == static_cast<uint32_t>(-7));
  CHECK(r.Word(O::kDivS32, static_cast<uint32_t>(-7), 2) == static_cast<uint32_t>(-3));  // toward 0
  CHECK(r.Word(O::kRemS32, static_cast<uint32_t>(-7), 2) ==
        static_cast<uint32_t>(-1));  // sign of a
  CHECK(r.Word(O::kDivS32, 5, 0) == minus1);
  CHECK(r.Word(O::kRemS32, 5, 0) == 5);
  CHECK(r.Word(O::kDivS32, min, minus1) == min);
  CHECK(r.Word(O::kRemS32, min, minus1) == 0);
  CHECK(r.Word(O::kDivU32, minus1, 2) == 0x7FFFFFFFu);
  CHECK(r.Word(O::kDivU32, 5, 0) == minus1);
  CHECK(r.Word(O::kRemU32, 5, 0) == 5);
  CHECK(r.Word(O::kRemU32, minus1, 10) == 5);
  CHECK(r.Word(O::kMaxS32, minus1, 1) == 1);
  CHECK(r.Word(O::kMaxU32, minus1, 1) == minus1);
  CHECK(r.Word(O::kMinS32, minus1, 1) == minus1);
  CHECK(r.Word(O::kMinU32, minus1, 1) == 1);
  CHECK(r.Word(O::kAbsS32, static_cast<uint32_t>(-5)) == 5);
  CHECK(r.Word(O::kAbsS32, min) == min);
  CHECK(r.Word(O::kNegS32, min) == min);
  CHECK(r.Word(O::kNegS32, 5) == static_cast<uint32_t>(-5));
  CHECK(r.Word(O::kAnd, 0xF0F0F0F0u, 0xFF00FF00u) == 0xF000F000u);
  CHECK(r.Word(O::kOr, 0xF0F0F0F0u, 0x0F000000u) == 0xFFF0F0F0u);
  CHECK(r.Word(O::kXor, 0xFFFF0000u, 0xFF00FF00u) == 0x00FFFF00u);
  CHECK(r.Word(O::kNot, 0x0F0F0F0Fu) == 0xF0F0F0F0u);
}

TEST_CASE("VPU shifts read the amount as unsigned and saturate at 32", "[models][vpu]") {
  Regs r;
  CHECK(r.Word(O::kShl, 1, 31) == 0x80000000u);
  CHECK(r.Word(O::kShl, 1, 32) == 0);
  CHECK(r.Word(O::kShl, 1, 0xFFFFFFFFu) == 0);  // -1 is 2^32 - 1: all out
  CHECK(r.Word(O::kShr, 0x80000000u, 31) == 1);
  CHECK(r.Word(O::kShr, 0x80000000u, 33) == 0);
  CHECK(r.Word(O::kSra, 0x80000000u, 31) == 0xFFFFFFFFu);
  CHECK(r.Word(O::kSra, 0x80000000u, 40) == 0xFFFFFFFFu);
  CHECK(r.Word(O::kSra, 0x40000000u, 40) == 0);
  CHECK(r.Word(O::kSra, 0xFFFFFF00u, 4) == 0xFFFFFFF0u);
}

TEST_CASE("VPU compares write masks, IEEE for f32", "[models][vpu]") {
  Regs r;
  const float nan = F(kNan);
  CHECK_FALSE(r.CompareF(O::kCmpEqF32, nan, nan));
  CHECK(r.CompareF(O::kCmpNeF32, nan, nan));
  CHECK_FALSE(r.CompareF(O::kCmpLtF32, nan, 1.0f));
  CHECK_FALSE(r.CompareF(O::kCmpGeF32, nan, 1.0f));
  CHECK(r.CompareF(O::kCmpEqF32, -0.0f, 0.0f));
  CHECK_FALSE(r.CompareF(O::kCmpLtF32, -0.0f, 0.0f));
  CHECK(r.CompareF(O::kCmpLeF32, -1.0f, 1.0f));
  CHECK(r.CompareF(O::kCmpGtF32, 2.0f, 1.0f));
  CHECK(r.Compare(O::kCmpLtS32, 0xFFFFFFFFu, 0));  // -1 < 0
  CHECK_FALSE(r.Compare(O::kCmpLtU32, 0xFFFFFFFFu, 0));
  CHECK(r.Compare(O::kCmpGeU32, 0xFFFFFFFFu, 0));
  CHECK(r.Compare(O::kCmpEqS32, 7, 7));
  CHECK(r.Compare(O::kCmpNeS32, 7, 8));
  CHECK(r.Compare(O::kCmpLeS32, 7, 7));
  CHECK(r.Compare(O::kCmpGtS32, 8, 7));
  CHECK(r.Compare(O::kCmpGeS32, 7, 7));
  CHECK(r.Compare(O::kCmpLeU32, 7, 0x80000000u));
  CHECK(r.Compare(O::kCmpGtU32, 0x80000000u, 7));
}

TEST_CASE("VPU select and mask logic", "[models][vpu]") {
  Regs r;
  r.Set(1, [](uint32_t i) { return i; });
  r.Set(2, [](uint32_t) { return 0xAAAAAAAAu; });
  r.Set(3, [](uint32_t i) { return i % 3 == 0 ? 0u : 1u; });
  r.Fill(4, 0);
  ExecuteVpuOp({O::kCmpEqS32, 1, 3, 4, 0, 0}, r.file);  // m1: i % 3 == 0
  ExecuteVpuOp({O::kSel, 0, 1, 2, 1, 0}, r.file);       // v0 = m1 ? v1 : v2
  for (uint32_t i = 0; i < kS * kL; ++i) {
    REQUIRE(r.file.vreg(0).words()[i] == (i % 3 == 0 ? i : 0xAAAAAAAAu));
  }
  r.Set(5, [](uint32_t i) { return i % 2; });
  ExecuteVpuOp({O::kCmpEqS32, 2, 5, 4, 0, 0}, r.file);  // m2: i even
  ExecuteVpuOp({O::kMaskAnd, 3, 1, 2, 0, 0}, r.file);
  ExecuteVpuOp({O::kMaskOr, 4, 1, 2, 0, 0}, r.file);
  ExecuteVpuOp({O::kMaskXor, 5, 1, 2, 0, 0}, r.file);
  ExecuteVpuOp({O::kMaskNot, 6, 1, 0, 0, 0}, r.file);
  for (uint32_t i = 0; i < kS * kL; ++i) {
    const bool three = i % 3 == 0, even = i % 2 == 0;
    const uint32_t s = i / kL, l = i % kL;
    REQUIRE(r.file.mask(3).get(s, l) == (three && even));
    REQUIRE(r.file.mask(4).get(s, l) == (three || even));
    REQUIRE(r.file.mask(5).get(s, l) == (three != even));
    REQUIRE(r.file.mask(6).get(s, l) == !three);
  }
}

TEST_CASE("VPU moves, broadcasts and position ids", "[models][vpu]") {
  Regs r;
  CHECK(r.Run(O::kBcast, 0, 0, -1).word(7, 127) == 0xFFFFFFFFu);
  CHECK(r.Run(O::kBcast, 0, 0, 0x100000005LL).word(0, 0) == 5);  // the low 32 bits
  CHECK(r.Run(O::kBcast, 0, 0, 0xFFFFFFFFLL).word(4, 3) == 0xFFFFFFFFu);
  const Vreg& lanes = r.Run(O::kLaneId);
  CHECK(lanes.word(5, 99) == 99);
  const Vreg& sublanes = r.Run(O::kSublaneId);
  CHECK(sublanes.word(5, 99) == 5);
  r.Set(1, [](uint32_t i) { return i * 7; });
  CHECK(r.Run(O::kMov) == r.file.vreg(1));
}

TEST_CASE("VPU converts: s32 <-> f32 and f32 -> bf16 with ties to even", "[models][vpu]") {
  Regs r;
  CHECK(r.Word(O::kCvtF32S32, 16777217u) == Bits(16777216.0f));  // tie, to even
  CHECK(r.Word(O::kCvtF32S32, 16777219u) == Bits(16777220.0f));
  CHECK(r.Word(O::kCvtF32S32, 0xFFFFFFFFu) == Bits(-1.0f));
  CHECK(r.WordF(O::kCvtS32F32, 2.9f) == 2);
  CHECK(r.WordF(O::kCvtS32F32, -2.9f) == static_cast<uint32_t>(-2));
  CHECK(r.WordF(O::kCvtS32F32, 3e9f) == 0x7FFFFFFFu);
  CHECK(r.WordF(O::kCvtS32F32, -3e9f) == 0x80000000u);
  CHECK(r.WordF(O::kCvtS32F32, -2147483648.0f) == 0x80000000u);
  CHECK(r.WordF(O::kCvtS32F32, std::numeric_limits<float>::infinity()) == 0x7FFFFFFFu);
  CHECK(r.WordF(O::kCvtS32F32, F(kNan)) == 0);
  // bf16 keeps the top 16 bits, rounded to nearest even.
  CHECK(r.Word(O::kCvtBf16F32, 0x3F808000u) == 0x3F800000u);  // 1 + 2^-8: tie, to even (down)
  CHECK(r.Word(O::kCvtBf16F32, 0x3F818000u) == 0x3F820000u);  // tie, to even (up)
  CHECK(r.Word(O::kCvtBf16F32, 0x3F808001u) == 0x3F810000u);  // above the tie
  CHECK(r.Word(O::kCvtBf16F32, 0x7F7FFFFFu) == 0x7F800000u);  // overflow: infinity
  CHECK(r.Word(O::kCvtBf16F32, 0x00008000u) == 0x00000000u);  // a denormal tie, to even
  CHECK(r.Word(O::kCvtBf16F32, 0x00018000u) == 0x00020000u);
  CHECK(r.Word(O::kCvtBf16F32, 0x7F812345u) == 0x7FC00000u);  // NaN: quiet, sign kept
  CHECK(r.Word(O::kCvtBf16F32, 0xFF812345u) == 0xFFC00000u);
}

TEST_CASE("bf16 pack and unpack use the T(8,128)(2,1) pairing", "[models][vpu]") {
  // Rows 0..15 of a bf16 array, 128 columns: va holds rows 0..7 (as f32), vb rows 8..15.
  Regs r;
  auto value = [](uint32_t row, uint32_t c) {
    return tpusim::isa::Bf16ToF32(tpusim::isa::F32ToBf16(static_cast<float>(row * 1000 + c) / 7));
  };
  r.Set(1, [&](uint32_t i) { return Bits(value(i / kL, i % kL)); });
  r.Set(2, [&](uint32_t i) { return Bits(value(8 + i / kL, i % kL)); });
  ExecuteVpuOp({O::kPackBf16, 3, 1, 2, 0, 0}, r.file);
  const Vreg packed = r.file.vreg(3);
  // Element (row, c) in word (row / 2) * 128 + c, the low half for the even row.
  for (uint32_t row = 0; row < 16; ++row) {
    for (uint32_t c = 0; c < kL; ++c) {
      const uint32_t word = packed.words()[(row / 2) * kL + c];
      REQUIRE(((word >> (16 * (row % 2))) & 0xFFFF) == tpusim::isa::F32ToBf16(value(row, c)));
    }
  }
  // It is the device image of bf16[16,128]{1,0:T(8,128)(2,1)}: what one 4 KiB vld reads.
  std::vector<uint8_t> logical(16 * kL * 2);
  for (uint32_t row = 0; row < 16; ++row) {
    for (uint32_t c = 0; c < kL; ++c) {
      const uint16_t bits = tpusim::isa::F32ToBf16(value(row, c));
      std::memcpy(&logical[(row * kL + c) * 2], &bits, 2);
    }
  }
  const std::vector<uint8_t> image =
      tpusim::isa::Materialize(tpusim::isa::ParseShape("bf16[16,128]{1,0:T(8,128)(2,1)}"), logical);
  REQUIRE(image.size() == 4096);
  CHECK(std::memcmp(image.data(), packed.words().data(), 4096) == 0);
  // Unpacking gives the rows back exactly.
  ExecuteVpuOp({O::kUnpackLoBf16, 4, 3, 0, 0, 0}, r.file);
  ExecuteVpuOp({O::kUnpackHiBf16, 5, 3, 0, 0, 0}, r.file);
  CHECK(r.file.vreg(4) == r.file.vreg(1));
  CHECK(r.file.vreg(5) == r.file.vreg(2));
  // Packing rounds each f32 as vcvt.bf16.f32 does.
  r.Fill(1, 0x3F818000u);
  r.Fill(2, 0xFF812345u);
  ExecuteVpuOp({O::kPackBf16, 3, 1, 2, 0, 0}, r.file);
  CHECK(r.file.vreg(3).word(0, 0) == 0x3F823F82u);  // rows 0, 1
  CHECK(r.file.vreg(3).word(7, 0) == 0xFFC0FFC0u);  // rows 14, 15
  // The destination may be a source.
  r.Set(1, [&](uint32_t i) { return Bits(value(i / kL, i % kL)); });
  r.Set(2, [&](uint32_t i) { return Bits(value(8 + i / kL, i % kL)); });
  ExecuteVpuOp({O::kPackBf16, 2, 1, 2, 0, 0}, r.file);
  CHECK(r.file.vreg(2) == packed);
}

TEST_CASE("VPU transcendentals follow the C++ library", "[models][vpu]") {
  Regs r;
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(r.WordF(O::kExpF32, 0.0f) == Bits(1.0f));
  CHECK(r.WordF(O::kExpF32, -inf) == Bits(0.0f));
  CHECK(r.WordF(O::kExpF32, 100.0f) == Bits(inf));
  CHECK(r.WordF(O::kLogF32, 1.0f) == Bits(0.0f));
  CHECK(r.WordF(O::kLogF32, 0.0f) == Bits(-inf));
  CHECK(r.WordF(O::kLogF32, -1.0f) == kNan);
  CHECK(r.WordF(O::kRsqrtF32, 4.0f) == Bits(0.5f));
  CHECK(r.WordF(O::kRsqrtF32, 0.0f) == Bits(inf));
  CHECK(r.WordF(O::kRsqrtF32, -1.0f) == kNan);
  CHECK(r.WordF(O::kSqrtF32, 2.0f) == Bits(std::sqrt(2.0f)));  // correctly rounded
  CHECK(r.WordF(O::kSqrtF32, -0.0f) == Bits(-0.0f));
  CHECK(r.WordF(O::kTanhF32, 0.0f) == Bits(0.0f));
  CHECK(r.WordF(O::kTanhF32, 20.0f) == Bits(1.0f));
  CHECK(r.WordF(O::kRcpF32, 4.0f) == Bits(0.25f));
  CHECK(r.WordF(O::kRcpF32, 3.0f) == Bits(1.0f / 3.0f));
  CHECK(r.WordF(O::kRcpF32, -0.0f) == Bits(-inf));
  CHECK(r.WordF(O::kLogisticF32, 0.0f) == Bits(0.5f));
  CHECK(r.WordF(O::kLogisticF32, -200.0f) == Bits(0.0f));
  CHECK(r.WordF(O::kLogisticF32, 200.0f) == Bits(1.0f));
  CHECK(r.Word(O::kExpF32, 0xFFC01234u) == kNan);

  // Accuracy against f64 over a sweep (models/vpu_transcendental.cc has glibc's figures), with a
  // bit of room for another C library.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-20.0f, 20.0f);
  auto ulps = [](float got, double want) {
    const float w = static_cast<float>(want);
    return std::abs(static_cast<double>(got) - want) / std::abs(std::nextafter(w, INFINITY) - w);
  };
  double worst_exp = 0, worst_log = 0, worst_tanh = 0, worst_rsqrt = 0, worst_logistic = 0;
  for (int round = 0; round < 8; ++round) {
    r.Set(1, [&](uint32_t) { return Bits(dist(rng)); });
    const Vreg x = r.file.vreg(1);
    const Vreg e = r.Run(O::kExpF32);
    const Vreg t = r.Run(O::kTanhF32);
    const Vreg s = r.Run(O::kLogisticF32);
    ExecuteVpuOp({O::kAbsF32, 1, 1, 0, 0, 0}, r.file);
    const Vreg ax = r.file.vreg(1);
    const Vreg l = r.Run(O::kLogF32);
    const Vreg q = r.Run(O::kRsqrtF32);
    for (uint32_t i = 0; i < kS * kL; ++i) {
      const double xi = F(x.words()[i]), ai = F(ax.words()[i]);
      worst_exp = std::max(worst_exp, ulps(F(e.words()[i]), std::exp(xi)));
      worst_tanh = std::max(worst_tanh, ulps(F(t.words()[i]), std::tanh(xi)));
      worst_logistic = std::max(worst_logistic, ulps(F(s.words()[i]), 1 / (1 + std::exp(-xi))));
      if (ai != 1.0) worst_log = std::max(worst_log, ulps(F(l.words()[i]), std::log(ai)));
      worst_rsqrt = std::max(worst_rsqrt, ulps(F(q.words()[i]), 1 / std::sqrt(ai)));
    }
  }
  CHECK(worst_exp <= 2);
  CHECK(worst_log <= 2);
  CHECK(worst_tanh <= 3);
  CHECK(worst_rsqrt <= 2);
  CHECK(worst_logistic <= 3);
}

TEST_CASE("VPU lane rotate and permute", "[models][vpu]") {
  Regs r;
  r.Set(1, [](uint32_t i) { return i; });  // v1[s][l] = s * 128 + l
  auto check_rotation = [&](int64_t n, uint32_t k) {
    INFO("n = " << n);
    const Vreg& out = r.Run(O::kRot, 1, 0, n);
    for (uint32_t s = 0; s < kS; ++s) {
      for (uint32_t l = 0; l < kL; ++l) REQUIRE(out.word(s, (l + k) % kL) == s * kL + l);
    }
  };
  check_rotation(1, 1);
  check_rotation(-1, 127);
  check_rotation(130, 2);
  check_rotation(-258, 126);
  check_rotation(0, 0);
  // Reverse the lanes; indices are taken mod L, unsigned.
  r.Set(2, [](uint32_t i) { return (127 - i % kL) + (i / kL % 2 ? 128u * 5 : 0u); });
  const Vreg& reversed = r.Run(O::kPerm, 1, 2);
  for (uint32_t s = 0; s < kS; ++s) {
    for (uint32_t l = 0; l < kL; ++l) REQUIRE(reversed.word(s, l) == s * kL + (127 - l));
  }
  r.Fill(2, 0xFFFFFFFFu);  // 2^32 - 1 mod 128 = 127
  CHECK(r.Run(O::kPerm, 1, 2).word(3, 0) == 3 * kL + 127);
}

TEST_CASE("VPU transpose of S x S blocks", "[models][vpu]") {
  Regs r;
  r.Set(1, [](uint32_t i) { return i; });
  const Vreg& out = r.Run(O::kXpose, 1);
  for (uint32_t b = 0; b < kL / kS; ++b) {
    for (uint32_t s = 0; s < kS; ++s) {
      for (uint32_t t = 0; t < kS; ++t) REQUIRE(out.word(s, b * kS + t) == t * kL + b * kS + s);
    }
  }
  ExecuteVpuOp({O::kXpose, 1, 1, 0, 0, 0}, r.file);  // in place, twice: the identity
  ExecuteVpuOp({O::kXpose, 1, 1, 0, 0, 0}, r.file);
  for (uint32_t i = 0; i < kS * kL; ++i) REQUIRE(r.file.vreg(1).words()[i] == i);
  VectorRegisterFile odd(4, 8, 12);
  CHECK_THROWS_WITH(ExecuteVpuOp({O::kXpose, 0, 1, 0, 0, 0}, odd),
                    Catch::Contains("vxpose") && Catch::Contains("multiple of the sublane count"));
}

TEST_CASE("VPU lane reductions", "[models][vpu]") {
  Regs r;
  // f32 add by the halving tree: lanes 2^24, 1, ..., with lane 65 = 1. The tree adds lane 65 to
  // lane 1 first (2), then 2^24 + 2 is exact; a left-to-right sum would lose both ones.
  r.Set(1, [](uint32_t i) {
    const uint32_t l = i % kL;
    return Bits(l == 0 ? 0x1p24f : (l == 1 || l == 65) ? 1.0f : 0.0f);
  });
  const Vreg& sum = r.Run(O::kRedAddF32, 1);
  CHECK(sum.f32(3, 0) == 16777218.0f);
  CHECK(sum.word(3, 1) == 0);
  CHECK(sum.word(3, 127) == 0);
  const Vreg& bsum = r.Run(O::kRedbAddF32, 1);
  CHECK(bsum.f32(6, 0) == 16777218.0f);
  CHECK(bsum.f32(6, 127) == 16777218.0f);
  // A non-power-of-two lane count uses h = ceil(n / 2): 12 lanes of 1..12.
  VectorRegisterFile twelve(4, 2, 12);
  for (uint32_t l = 0; l < 12; ++l) twelve.vreg(1).set_f32(1, l, static_cast<float>(l + 1));
  ExecuteVpuOp({O::kRedAddF32, 0, 1, 0, 0, 0}, twelve);
  CHECK(twelve.vreg(0).f32(1, 0) == 78.0f);

  r.Set(1, [](uint32_t i) { return Bits(static_cast<float>(i % kL) - 60.0f); });
  CHECK(r.Run(O::kRedMaxF32, 1).f32(0, 0) == 67.0f);
  CHECK(r.Run(O::kRedMinF32, 1).f32(0, 0) == -60.0f);
  CHECK(r.Run(O::kRedbMinF32, 1).f32(4, 100) == -60.0f);
  r.file.vreg(1).set_word(2, 77, kNan);
  CHECK(r.Run(O::kRedMaxF32, 1).word(2, 0) == kNan);
  CHECK(r.Run(O::kRedbMinF32, 1).word(2, 9) == kNan);
  CHECK(r.Run(O::kRedMaxF32, 1).f32(1, 0) == 67.0f);  // other sublanes unaffected
  // -0 below +0.
  r.Set(1, [](uint32_t i) { return i % 2 ? Bits(-0.0f) : Bits(0.0f); });
  CHECK(r.Run(O::kRedMaxF32, 1).word(0, 0) == Bits(0.0f));
  CHECK(r.Run(O::kRedMinF32, 1).word(0, 0) == Bits(-0.0f));

  r.Fill(1, 0x7FFFFFFFu);
  CHECK(r.Run(O::kRedAddS32, 1).word(0, 0) == 0x7FFFFFFFu * 128u);  // wraps
  r.Set(1, [](uint32_t i) { return static_cast<uint32_t>(static_cast<int32_t>(i % kL) - 64); });
  CHECK(r.Run(O::kRedMaxS32, 1).s32(5, 0) == 63);
  CHECK(r.Run(O::kRedMinS32, 1).s32(5, 0) == -64);
  CHECK(r.Run(O::kRedbMaxS32, 1).s32(5, 50) == 63);
  CHECK(r.Run(O::kRedbAddS32, 1).s32(5, 50) == -64);
  CHECK(r.Run(O::kRedbMinS32, 1).s32(5, 50) == -64);
}

TEST_CASE("VPU faults name the register", "[models][vpu]") {
  Regs r;
  CHECK_THROWS_WITH(
      ExecuteVpuOp({O::kAddF32, 0, 1, 16, 0, 0}, r.file),
      Catch::Contains("v16 does not exist") && Catch::Contains("16 vector registers"));
  CHECK_THROWS_WITH(ExecuteVpuOp({O::kSel, 0, 1, 2, 8, 0}, r.file),
                    Catch::Contains("m8 does not exist"));
  Vpu vpu(Params(), r.file);
  CHECK_THROWS_AS(vpu.Execute({O::kMov, 99, 1, 0, 0, 0}, 0), tpusim::Error);
  CHECK(vpu.stats().instructions == 0);  // the fault changed nothing
  VpuParams bad = Params();
  bad.transcendental.throughput_vregs_per_cycle = 0;
  CHECK_THROWS_WITH(Vpu(bad, r.file),
                    Catch::Contains("VpuParams.transcendental.throughput_vregs_per_cycle"));
  VectorRegisterFile small(4, 4, 128);
  CHECK_THROWS_WITH(Vpu(Params(), small), Catch::Contains("register file of 4 x 128"));
}

TEST_CASE("VPU throughput-bound streams take n / throughput cycles", "[models][vpu][timing]") {
  VectorRegisterFile regs(32, kS, kL);
  Vpu vpu(Params(), regs);
  // 64 independent vexp (sources v0, destinations v1..v16 reused only after they are ready):
  // one every 4 cycles, the last result 16 cycles after the last issue.
  VpuTiming t;
  for (uint32_t i = 0; i < 64; ++i) {
    t = vpu.Execute({O::kExpF32, 1 + i % 4, 0, 0, 0, 0}, 0);
    CHECK(t.issue == 4 * i);
  }
  CHECK(t.ready == 4 * 63 + 16);
  const VpuStats stats = vpu.stats();
  CHECK(stats.units[1].operations == 64);
  CHECK(stats.units[1].busy_cycles == 256);
  CHECK(stats.units[0].operations == 0);
  CHECK(stats.all_complete == t.ready);
}

TEST_CASE("VPU dependent chains take n x latency", "[models][vpu][timing]") {
  VectorRegisterFile regs(32, kS, kL);
  Vpu vpu(Params(), regs);
  VpuTiming t;
  for (uint32_t i = 0; i < 50; ++i) t = vpu.Execute({O::kAddF32, 1, 1, 2, 0, 0}, 0);
  CHECK(t.ready == 50 * 2);
  for (uint32_t i = 0; i < 10; ++i) t = vpu.Execute({O::kRedAddF32, 1, 1, 0, 0, 0}, 0);
  CHECK(t.ready == 100 + 10 * 16);
}

TEST_CASE("VPU issue width and sub-unit throughput", "[models][vpu][timing]") {
  VectorRegisterFile regs(32, kS, kL);
  VpuParams p = Params(2);
  p.elementwise.throughput_vregs_per_cycle = 2;
  // Width 2, element-wise throughput 2: two independent adds per cycle.
  {
    Vpu vpu(p, regs);
    for (uint32_t i = 0; i < 40; ++i) {
      CHECK(vpu.Execute({O::kAddS32, 1 + i % 8, 0, 0, 0, 0}, 0).issue == i / 2);
    }
  }
  // Width 1: one per cycle, whatever the sub-unit could take.
  {
    VectorRegisterFile fresh(32, kS, kL);
    Vpu vpu(Params(1), fresh);
    for (uint32_t i = 0; i < 10; ++i)
      CHECK(vpu.Execute({O::kAddS32, 1 + i % 8, 0, 0, 0, 0}, 0).issue == i);
  }
  // Width 2 with throughput 1 in each sub-unit: an add and a rotate pair up in each cycle.
  {
    VectorRegisterFile fresh(32, kS, kL);
    VpuParams q = Params(2);
    q.cross_lane.throughput_vregs_per_cycle = 1;
    Vpu vpu(q, fresh);
    for (uint32_t i = 0; i < 10; ++i) {
      CHECK(vpu.Execute({O::kAddS32, 1 + i % 4, 0, 0, 0, 0}, 0).issue == i);
      CHECK(vpu.Execute({O::kRot, 5 + i % 20, 0, 0, 0, 1}, 0).issue == i);  // no register reuse
    }
  }
  // A throughput of 0.3: slots every 3.33 cycles, issued in the cycle each begins.
  {
    VectorRegisterFile fresh(32, kS, kL);
    VpuParams q = Params(1);
    q.transcendental = {4, 0.3};
    Vpu vpu(q, fresh);
    std::vector<uint64_t> issues;
    for (uint32_t i = 0; i < 7; ++i)
      issues.push_back(vpu.Execute({O::kExpF32, 1 + i % 8, 0, 0, 0, 0}, 0).issue);
    CHECK(issues == std::vector<uint64_t>{0, 3, 6, 10, 13, 16, 20});
  }
}

TEST_CASE("VPU issue is in order and waits for registers", "[models][vpu][timing]") {
  VectorRegisterFile regs(32, kS, kL);
  VpuParams p = Params(2);
  p.elementwise.throughput_vregs_per_cycle = 2;
  Vpu vpu(p, regs);
  // A long chain stalls everything behind it, even an independent add.
  CHECK(vpu.Execute({O::kExpF32, 1, 0, 0, 0, 0}, 0).ready == 16);
  CHECK(vpu.Execute({O::kAddF32, 2, 1, 0, 0, 0}, 0).issue == 16);
  CHECK(vpu.Execute({O::kAddF32, 3, 0, 0, 0, 0}, 0).issue == 16);  // the same cycle: width 2
  CHECK(vpu.Execute({O::kAddF32, 4, 0, 0, 0, 0}, 0).issue == 17);
  // Arrival later than everything else.
  CHECK(vpu.Execute({O::kAddF32, 5, 0, 0, 0, 0}, 40).issue == 40);
  // A register another unit writes (an mxu.pop ready at 100) holds its reader.
  regs.times({RegisterKind::kVreg, 9}).ready = 100;
  CHECK(vpu.Execute({O::kAddF32, 6, 9, 0, 0, 0}, 0).issue == 100);
  // A register another unit still has to read (an mxu.push at 120) holds its writer.
  regs.times({RegisterKind::kVreg, 10}).last_read = 120;
  CHECK(vpu.Execute({O::kMov, 10, 0, 0, 0, 0}, 0).issue == 120);
  // Masks are scoreboarded too: a compare (latency 2) then a select on its mask.
  const VpuTiming cmp = vpu.Execute({O::kCmpLtF32, 3, 0, 1, 0, 0}, 0);
  CHECK(vpu.Execute({O::kSel, 7, 0, 1, 3, 0}, 0).issue == cmp.ready);
  // Write after write: a quick write waits for a slow one to the same register to land.
  const VpuTiming slow = vpu.Execute({O::kLogF32, 11, 0, 0, 0, 0}, 0);
  CHECK(vpu.Execute({O::kMov, 11, 0, 0, 0, 0}, 0).issue == slow.ready);
  // vpu.signal waits for every earlier instruction to complete.
  const VpuTiming last = vpu.Execute({O::kTanhF32, 12, 0, 0, 0, 0}, 0);
  CHECK(vpu.Signal(0) == last.ready);
  CHECK(vpu.stats().all_complete == last.ready);
}

TEST_CASE("loads and stores take VPU issue slots through EarliestIssue and CommitIssue",
          "[models][vpu][timing]") {
  // A vld of v4 whose VMEM access the driver times (here: done 5 cycles after issue), then an
  // add that reads v4, then a vst of v4 and a signal that waits for the store.
  VectorRegisterFile regs(32, kS, kL);
  Vpu vpu(Params(1), regs);
  const RegisterUse load{{}, 0, {RegisterKind::kVreg, 4}, true};
  const uint64_t load_issue = vpu.EarliestIssue(3, load);
  CHECK(load_issue == 3);
  vpu.CommitIssue(load_issue, load, load_issue + 5);
  const VpuTiming add = vpu.Execute({O::kAddF32, 5, 4, 4, 0, 0}, 0);
  CHECK(add.issue == 8);
  RegisterUse store;
  store.reads[0] = {RegisterKind::kVreg, 5};
  store.read_count = 1;
  const uint64_t store_issue = vpu.EarliestIssue(0, store);
  CHECK(store_issue == add.ready);
  vpu.CommitIssue(store_issue, store, store_issue + 30);
  CHECK(vpu.Signal(0) == store_issue + 30);
  CHECK(vpu.stats().instructions == 4);
  CHECK_THROWS_WITH(vpu.CommitIssue(1, store, 2), Catch::Contains("out of queue order"));
}

TEST_CASE("timing-only VPU runs give identical times", "[models][vpu][timing]") {
  // A random program over every op, run twice: computing and timing-only.
  std::mt19937 program_rng(21);
  std::vector<VpuInstr> program;
  for (int i = 0; i < 2000; ++i) {
    auto& rng = program_rng;
    const auto op = static_cast<VpuOp>(rng() % VpuOpTable().size());
    program.push_back({op, static_cast<uint32_t>(rng() % 8), static_cast<uint32_t>(rng() % 8),
                       static_cast<uint32_t>(rng() % 8), static_cast<uint32_t>(rng() % 8),
                       static_cast<int64_t>(rng() % 300) - 150});
  }
  auto run = [&](bool timing_only, VectorRegisterFile& regs) {
    std::mt19937 rng(22);  // the same inputs and arrivals in both runs
    for (uint32_t v = 0; v < 8; ++v) {
      for (uint32_t& w : regs.vreg(v).words()) w = static_cast<uint32_t>(rng());
    }
    Vpu vpu(Params(2), regs);
    vpu.set_timing_only(timing_only);
    std::vector<uint64_t> times;
    uint64_t arrival = 0;
    for (const VpuInstr& instr : program) {
      const VpuTiming t = vpu.Execute(instr, arrival);
      times.insert(times.end(), {t.issue, t.ready});
      arrival += rng() % 3;
    }
    times.push_back(vpu.Signal(arrival));
    const VpuStats stats = vpu.stats();
    for (const VpuUnitStats& unit : stats.units) {
      times.insert(times.end(), {unit.operations, static_cast<uint64_t>(unit.busy_cycles * 4)});
    }
    return times;
  };
  VectorRegisterFile computed(8, kS, kL), skipped(8, kS, kL);
  const std::vector<uint64_t> functional = run(false, computed);
  CHECK(run(true, skipped) == functional);
  // Same inputs; only the computing run changed the registers.
  bool changed = false;
  for (uint32_t v = 0; v < 8; ++v) changed = changed || computed.vreg(v) != skipped.vreg(v);
  CHECK(changed);
}
