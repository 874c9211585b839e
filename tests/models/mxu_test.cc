// The MXU model: what it computes (exactly docs/isa.md's "MXU" semantics, against references
// written here with the documented accumulation order) and when (docs/timing.md's "MXU"
// equations, with expected times worked out from the parameters in each test).
//
// Vregs are built the way a program gets them: the T(8,128)(2,1) / (4,1) / T(8,128) device image
// of P rows x 128 columns, made by isa::Materialize, is what one 4 KiB vld reads.
#include "models/mxu.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "isa/convert.h"
#include "isa/error.h"
#include "isa/instruction_set.h"
#include "isa/materialize.h"
#include "isa/shape.h"
#include "models/cycles.h"

namespace {

using namespace tpusim::models;
using tpusim::isa::ElementType;

constexpr uint32_t kS = 8;
constexpr uint32_t kL = 128;

MxuParams Params(uint32_t rows, uint32_t columns, uint32_t buffers = 2) {
  MxuParams p;
  p.rows = rows;
  p.columns = columns;
  p.sublanes = kS;
  p.lanes = kL;
  p.pipeline_fill_cycles = rows;  // the presets' choice: fill = R, drain = C, load = R
  p.pipeline_drain_cycles = columns;
  p.weight_load_cycles = rows;
  p.weight_buffer_count = buffers;
  p.bf16_passes = 1;
  p.f32_passes = 6;
  p.f16_passes = 1;
  p.s8_passes = 0.5;
  p.f8_passes = 1;
  return p;
}

uint32_t Rows(ElementType type) { return tpusim::isa::PackedRowsPerVreg(type, kS); }

std::string TileLayout(ElementType type) {
  const int bits = tpusim::isa::ElementBitWidth(type);
  return bits == 32 ? "T(8,128)" : bits == 16 ? "T(8,128)(2,1)" : "T(8,128)(4,1)";
}

// A vreg holding P rows x 128 columns of raw `type` elements (row-major, low bits of each
// value), as their tiled device image.
Vreg PackedVreg(ElementType type, const std::vector<uint32_t>& raw) {
  const uint32_t rows = Rows(type);
  const int bytes = tpusim::isa::ElementByteWidth(type);
  REQUIRE(raw.size() == size_t{rows} * kL);
  std::vector<uint8_t> logical(raw.size() * bytes);
  for (size_t i = 0; i < raw.size(); ++i) std::memcpy(&logical[i * bytes], &raw[i], bytes);
  const std::string shape = std::string(tpusim::isa::ElementTypeName(type)) + "[" +
                            std::to_string(rows) + ",128]{1,0:" + TileLayout(type) + "}";
  const std::vector<uint8_t> image =
      tpusim::isa::Materialize(tpusim::isa::ParseShape(shape), logical);
  REQUIRE(image.size() == 4 * kS * kL);
  Vreg vreg(kS, kL);
  std::memcpy(vreg.words().data(), image.data(), image.size());  // little-endian words
  return vreg;
}

// A matrix of raw elements with their f32 values (exact for every input type).
struct Matrix {
  ElementType type;
  uint32_t rows, columns;
  std::vector<uint32_t> raw;
  std::vector<float> value;
  uint32_t at(uint32_t r, uint32_t c) const { return raw[size_t{r} * columns + c]; }
  float f(uint32_t r, uint32_t c) const { return value[size_t{r} * columns + c]; }
};

uint32_t Encode(ElementType type, float x) {
  switch (type) {
    case ElementType::kBF16: return tpusim::isa::F32ToBf16(x);
    case ElementType::kF16: return tpusim::isa::F32ToF16(x);
    case ElementType::kF8E4M3FN: return tpusim::isa::F32ToF8E4M3FN(x);
    case ElementType::kF8E5M2: return tpusim::isa::F32ToF8E5M2(x);
    case ElementType::kF32: return std::bit_cast<uint32_t>(x);
    default: break;
  }
  FAIL("no float encoding for this type");
  return 0;
}
float Decode(ElementType type, uint32_t raw) {
  switch (type) {
    case ElementType::kBF16: return tpusim::isa::Bf16ToF32(static_cast<uint16_t>(raw));
    case ElementType::kF16: return tpusim::isa::F16ToF32(static_cast<uint16_t>(raw));
    case ElementType::kF8E4M3FN: return tpusim::isa::F8E4M3FNToF32(static_cast<uint8_t>(raw));
    case ElementType::kF8E5M2: return tpusim::isa::F8E5M2ToF32(static_cast<uint8_t>(raw));
    case ElementType::kF32: return std::bit_cast<float>(raw);
    default: break;
  }
  FAIL("no float decoding for this type");
  return 0;
}

Matrix RandomFloats(ElementType type, uint32_t rows, uint32_t columns, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  Matrix m{type, rows, columns, {}, {}};
  for (uint32_t i = 0; i < rows * columns; ++i) {
    m.raw.push_back(Encode(type, dist(rng)));
    m.value.push_back(Decode(type, m.raw.back()));
  }
  return m;
}

Matrix RandomS8(uint32_t rows, uint32_t columns, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-128, 127);
  Matrix m{ElementType::kS8, rows, columns, {}, {}};
  for (uint32_t i = 0; i < rows * columns; ++i) {
    const int v = dist(rng);
    m.raw.push_back(static_cast<uint8_t>(static_cast<int8_t>(v)));
    m.value.push_back(static_cast<float>(v));
  }
  return m;
}

// The reference: out[i][c] = the f32 sum over k in increasing order of lhs[i][k] * w[k][c],
// starting from the first product; products exact for narrow types (in this test's range an f32
// multiply is exact for them), rounded to f32 for f32 inputs (an f32 multiply rounds once).
uint32_t ReferenceF32(const Matrix& lhs, uint32_t i, const Matrix& w, uint32_t c) {
  float acc = lhs.f(i, 0) * w.f(0, c);
  for (uint32_t k = 1; k < w.rows; ++k) {
    const float product = lhs.f(i, k) * w.f(k, c);
    acc = acc + product;
  }
  return std::bit_cast<uint32_t>(acc);
}
uint32_t ReferenceS32(const Matrix& lhs, uint32_t i, const Matrix& w, uint32_t c) {
  uint32_t acc = 0;
  for (uint32_t k = 0; k < w.rows; ++k) {
    acc +=
        static_cast<uint32_t>(static_cast<int32_t>(lhs.f(i, k)) * static_cast<int32_t>(w.f(k, c)));
  }
  return acc;
}

// The P x 128 block of `m` at rows [row0, row0 + P), columns [col0, col0 + 128), zero outside m.
Vreg Block(const Matrix& m, uint32_t row0, uint32_t col0) {
  const uint32_t rows = Rows(m.type);
  std::vector<uint32_t> raw(size_t{rows} * kL, 0);
  for (uint32_t r = 0; r < rows && row0 + r < m.rows; ++r) {
    for (uint32_t l = 0; l < kL && col0 + l < m.columns; ++l)
      raw[size_t{r} * kL + l] = m.at(row0 + r, col0 + l);
  }
  return PackedVreg(m.type, raw);
}

uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// Loads `w` (R x C) as the weights: push b fills rows [gP, gP + P), columns [jL, jL + L).
void LoadWeights(Mxu& mxu, const Matrix& w, uint64_t cycle = 0) {
  const uint32_t nc = CeilDiv(w.columns, kL);
  const uint32_t groups = CeilDiv(w.rows, Rows(w.type));
  for (uint32_t b = 0; b < groups * nc; ++b) {
    mxu.WeightPush(w.type, Block(w, b / nc * Rows(w.type), b % nc * kL), cycle);
  }
  mxu.Latch(cycle);
}

// Pushes LHS rows [row0, row0 + P) (all K) and pops their S-row blocks; returns the popped vregs
// in order (per S rows, nc column blocks).
std::vector<Vreg> PushAndPop(Mxu& mxu, const Matrix& lhs, uint32_t row0) {
  const uint32_t nk = CeilDiv(mxu.params().rows, kL);
  const uint32_t nc = CeilDiv(mxu.params().columns, kL);
  for (uint32_t b = 0; b < nk; ++b) mxu.Push(lhs.type, Block(lhs, row0, b * kL), 0);
  std::vector<Vreg> out;
  for (uint32_t p = 0; p < Rows(lhs.type) / kS * nc; ++p) {
    Vreg vd(kS, kL);
    mxu.Pop(vd, 0);
    out.push_back(vd);
  }
  return out;
}

// Runs lhs (M x R) x w (R x C) through the MXU and checks every output word against the
// reference, and that lanes past C read 0.
void CheckMatmul(const MxuParams& params, const Matrix& lhs, const Matrix& w) {
  Mxu mxu(params);
  LoadWeights(mxu, w);
  const uint32_t p_rows = Rows(lhs.type);
  const uint32_t nc = CeilDiv(params.columns, kL);
  uint64_t mismatches = 0;
  for (uint32_t row0 = 0; row0 < lhs.rows; row0 += p_rows) {
    const std::vector<Vreg> out = PushAndPop(mxu, lhs, row0);
    for (uint32_t blk = 0; blk < out.size(); ++blk) {
      const uint32_t first_row = row0 + blk / nc * kS;
      const uint32_t first_col = blk % nc * kL;
      for (uint32_t s = 0; s < kS; ++s) {
        for (uint32_t l = 0; l < kL; ++l) {
          const uint32_t c = first_col + l;
          const uint32_t expected = c >= params.columns ? 0
                                    : lhs.type == ElementType::kS8
                                        ? ReferenceS32(lhs, first_row + s, w, c)
                                        : ReferenceF32(lhs, first_row + s, w, c);
          if (out[blk].word(s, l) != expected && ++mismatches <= 5) {
            INFO("row " << first_row + s << " column " << c);
            CHECK(out[blk].word(s, l) == expected);
          }
        }
      }
    }
  }
  CHECK(mismatches == 0);
  CHECK(mxu.result_rows() == 0);
}

}  // namespace

TEST_CASE("packed vregs are the tiled images the ISA names", "[models][mxu]") {
  // docs/isa.md: row r of a packed vreg at sublane r / (32 / w), bits w * (r mod 32 / w).
  std::vector<uint32_t> raw(16 * kL);
  for (uint32_t i = 0; i < raw.size(); ++i) raw[i] = i & 0xFFFF;
  const Vreg v = PackedVreg(ElementType::kBF16, raw);
  for (uint32_t r = 0; r < 16; ++r) {
    for (uint32_t c = 0; c < kL; c += 17) {
      CHECK(((v.word(r / 2, c) >> (16 * (r % 2))) & 0xFFFF) == raw[r * kL + c]);
    }
  }
  CHECK(Rows(ElementType::kBF16) == 16);
  CHECK(Rows(ElementType::kF32) == 8);
  CHECK(Rows(ElementType::kS8) == 32);
}

TEST_CASE("a 128x128x128 bf16 matmul equals the ordered f32 reference exactly", "[models][mxu]") {
  const Matrix w = RandomFloats(ElementType::kBF16, 128, 128, 1);
  const Matrix lhs = RandomFloats(ElementType::kBF16, 128, 128, 2);
  CheckMatmul(Params(128, 128), lhs, w);
}

TEST_CASE("a 16x16 MXU uses the first 16 lanes and pops zeros beyond its columns",
          "[models][mxu]") {
  // One wpush fills the whole 16 x 16 tile (P = 16 rows, columns clipped to 16); LHS lanes past
  // K = 16 are ignored, so they are filled with junk here.
  const Matrix w = RandomFloats(ElementType::kBF16, 16, 16, 3);
  Matrix lhs = RandomFloats(ElementType::kBF16, 32, 128, 4);
  Matrix lhs16{ElementType::kBF16, 32, 16, {}, {}};
  for (uint32_t r = 0; r < 32; ++r) {
    for (uint32_t c = 0; c < 16; ++c) {
      lhs16.raw.push_back(lhs.at(r, c));
      lhs16.value.push_back(lhs.f(r, c));
    }
  }
  const MxuParams params = Params(16, 16);
  Mxu mxu(params);
  LoadWeights(mxu, w);
  CHECK(mxu.stats().weight_pushes == 1);
  for (uint32_t row0 = 0; row0 < 32; row0 += 16) {
    mxu.Push(ElementType::kBF16, Block(lhs, row0, 0), 0);  // 128 lanes, 112 of them junk
    for (uint32_t half = 0; half < 2; ++half) {
      Vreg vd(kS, kL);
      mxu.Pop(vd, 0);
      for (uint32_t s = 0; s < kS; ++s) {
        for (uint32_t l = 0; l < kL; ++l) {
          const uint32_t expected = l < 16 ? ReferenceF32(lhs16, row0 + half * 8 + s, w, l) : 0;
          REQUIRE(vd.word(s, l) == expected);
        }
      }
    }
  }
  CheckMatmul(params, RandomFloats(ElementType::kBF16, 48, 16, 5), w);
}

TEST_CASE("a 256x256 MXU takes two pushes per row group and two pops per 8 rows", "[models][mxu]") {
  // nk = nc = 2: weight push b fills rows [16(b/2), +16), columns [128(b%2), +128).
  CheckMatmul(Params(256, 256), RandomFloats(ElementType::kBF16, 32, 256, 6),
              RandomFloats(ElementType::kBF16, 256, 256, 7));
}

TEST_CASE("every MXU input type computes as documented", "[models][mxu]") {
  for (ElementType type :
       {ElementType::kF32, ElementType::kF16, ElementType::kF8E4M3FN, ElementType::kF8E5M2}) {
    INFO(tpusim::isa::ElementTypeName(type));
    CheckMatmul(Params(128, 128), RandomFloats(type, 2 * Rows(type), 128, 8),
                RandomFloats(type, 128, 128, 9));
  }
  CheckMatmul(Params(128, 128), RandomS8(64, 128, 10), RandomS8(128, 128, 11));
}

// One row of LHS against one column of weights, K = 128: lhs[k] and w[k] given, the rest 0.
uint32_t DotOf(ElementType type, const std::vector<float>& a, const std::vector<float>& b) {
  Matrix w{type, 128, 128, {}, {}};
  Matrix lhs{type, Rows(type), 128, {}, {}};
  for (uint32_t i = 0; i < 128 * 128; ++i) {
    const uint32_t k = i / 128;
    w.raw.push_back(Encode(type, k < b.size() ? b[k] : 0.0f));
    w.value.push_back(0);
  }
  for (uint32_t i = 0; i < Rows(type) * 128; ++i) {
    const uint32_t k = i % 128;
    lhs.raw.push_back(Encode(type, k < a.size() ? a[k] : 0.0f));
    lhs.value.push_back(0);
  }
  Mxu mxu(Params(128, 128));
  LoadWeights(mxu, w);
  return PushAndPop(mxu, lhs, 0)[0].word(0, 0);
}

TEST_CASE("f32 inputs round each product before adding it", "[models][mxu]") {
  // (1 + 2^-23)(1 + 3 x 2^-23) = 1 + 2^-21 + 3 x 2^-46, rounded to 1 + 2^-21; after -1 the sum is
  // 2^-21. An exact product would leave 2^-21 + 2^-44.
  const float x = 1.0f + 0x1p-23f, y = 1.0f + 3 * 0x1p-23f;
  CHECK(DotOf(ElementType::kF32, {1.0f, x}, {-1.0f, y}) == std::bit_cast<uint32_t>(0x1p-21f));
}

TEST_CASE("bf16 products are exact even below f32's range", "[models][mxu]") {
  // 3 x 2^-149 (an f32 denormal) plus the exact product 2^-75 x 2^-75 = 2^-150: a tie between
  // 3 and 4 x 2^-149, to even: 2^-147. An f32 multiply would have rounded 2^-150 to 0 first.
  const float three_min = 1.5f * 0x1p-74f;  // times 2^-74: 3 x 2^-149
  CHECK(DotOf(ElementType::kBF16, {three_min, 0x1p-75f}, {0x1p-74f, 0x1p-75f}) ==
        std::bit_cast<uint32_t>(0x1p-147f));
  // The sum starts from the first product: 128 products of -1 x 0 sum to -0 (from +0: +0).
  CHECK(DotOf(ElementType::kBF16, std::vector<float>(128, -1.0f), {0.0f}) == 0x80000000u);
}

TEST_CASE("mxu.pop.acc accumulates K tiles", "[models][mxu]") {
  // K = 256 on a 128-deep MXU: two weight tiles, the second pop added onto the first.
  const Matrix w = RandomFloats(ElementType::kBF16, 256, 128, 12);
  const Matrix lhs = RandomFloats(ElementType::kBF16, 16, 256, 13);
  auto slice = [](const Matrix& m, uint32_t r0, uint32_t rows, uint32_t c0, uint32_t columns) {
    Matrix out{m.type, rows, columns, {}, {}};
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t c = 0; c < columns; ++c) {
        out.raw.push_back(m.at(r0 + r, c0 + c));
        out.value.push_back(m.f(r0 + r, c0 + c));
      }
    }
    return out;
  };
  const Matrix w0 = slice(w, 0, 128, 0, 128), w1 = slice(w, 128, 128, 0, 128);
  const Matrix a0 = slice(lhs, 0, 16, 0, 128), a1 = slice(lhs, 0, 16, 128, 128);
  Mxu mxu(Params(128, 128));
  std::vector<Vreg> acc(2, Vreg(kS, kL));
  LoadWeights(mxu, w0);
  mxu.Push(ElementType::kBF16, Block(a0, 0, 0), 0);
  for (Vreg& vd : acc) mxu.Pop(vd, 0);
  LoadWeights(mxu, w1);
  mxu.Push(ElementType::kBF16, Block(a1, 0, 0), 0);
  for (Vreg& vd : acc) mxu.PopAccumulate(vd, 0);
  for (uint32_t i = 0; i < 16; ++i) {
    for (uint32_t c = 0; c < 128; ++c) {
      const float expected = std::bit_cast<float>(ReferenceF32(a0, i, w0, c)) +
                             std::bit_cast<float>(ReferenceF32(a1, i, w1, c));
      REQUIRE(acc[i / 8].f32(i % 8, c) == expected);
    }
  }
}

TEST_CASE("s8 matmuls give s32, and pop.acc wraps", "[models][mxu]") {
  Matrix w{ElementType::kS8, 128, 128, {}, {}};
  Matrix lhs{ElementType::kS8, 32, 128, {}, {}};
  for (uint32_t i = 0; i < 128 * 128; ++i) {
    w.raw.push_back(0x80);  // -128
    w.value.push_back(-128);
  }
  for (uint32_t i = 0; i < 32 * 128; ++i) {
    lhs.raw.push_back(0x80);
    lhs.value.push_back(-128);
  }
  Mxu mxu(Params(128, 128));
  LoadWeights(mxu, w);
  mxu.Push(ElementType::kS8, Block(lhs, 0, 0), 0);
  Vreg vd(kS, kL);
  mxu.Pop(vd, 0);
  CHECK(vd.s32(0, 0) == 128 * 16384);  // 128 products of (-128)^2
  for (uint32_t& word : vd.words()) word = 0x7FFFFFFF;
  mxu.PopAccumulate(vd, 0);
  CHECK(vd.word(3, 5) == 0x7FFFFFFFu + 128u * 16384u);  // wrapped past INT32_MAX
  CHECK(vd.s32(3, 5) < 0);
}

TEST_CASE("MXU faults are errors that change nothing", "[models][mxu]") {
  Mxu mxu(Params(128, 128));
  const Vreg zero(kS, kL);
  Vreg vd(kS, kL);
  CHECK_THROWS_WITH(mxu.Pop(vd, 0), Catch::Contains("mxu.pop") && Catch::Contains("holds 0 rows"));
  CHECK_THROWS_WITH(mxu.Latch(0), Catch::Contains("nothing is staged"));
  CHECK_THROWS_WITH(mxu.Push(ElementType::kBF16, zero, 0),
                    Catch::Contains("no weights are latched"));

  for (int i = 0; i < 8; ++i) mxu.WeightPush(ElementType::kBF16, zero, 0);
  CHECK_THROWS_WITH(mxu.WeightPush(ElementType::kBF16, zero, 0),
                    Catch::Contains("takes 8 weight pushes"));
  CHECK_THROWS_WITH(mxu.WeightPush(ElementType::kF32, zero, 0), Catch::Contains("are bf16"));
  mxu.Latch(0);
  CHECK_THROWS_WITH(mxu.Push(ElementType::kF32, zero, 0),
                    Catch::Contains("mxu.push.f32") && Catch::Contains("latched weights are bf16"));
  CHECK_THROWS_WITH(mxu.Push(ElementType::kU8, zero, 0), Catch::Contains("not u8"));
  CHECK_THROWS_WITH(mxu.Push(ElementType::kBF16, Vreg(4, kL), 0), Catch::Contains("8 x 128 vregs"));
  mxu.Push(ElementType::kBF16, zero, 0);  // 16 rows: two pops, the third faults
  mxu.Pop(vd, 0);
  mxu.Pop(vd, 0);
  CHECK_THROWS_WITH(mxu.PopAccumulate(vd, 0), Catch::Contains("mxu.pop.acc"));
  const MxuStats stats = mxu.stats();
  CHECK(stats.weight_pushes == 8);
  CHECK(stats.latches == 1);
  CHECK(stats.pushes == 1);
  CHECK(stats.pops == 2);

  MxuParams no_f8 = Params(128, 128);
  no_f8.f8_passes = 0;
  Mxu v4(no_f8);
  CHECK_THROWS_WITH(v4.WeightPush(ElementType::kF8E4M3FN, zero, 0),
                    Catch::Contains("f8_passes is 0"));
  MxuParams bad = Params(128, 128);
  bad.bf16_passes = 0;
  CHECK_THROWS_WITH(Mxu(bad), Catch::Contains("MxuParams.bf16_passes"));
  bad = Params(128, 128, 0);
  CHECK_THROWS_WITH(Mxu(bad), Catch::Contains("MxuParams.weight_buffer_count"));
}

TEST_CASE("MXU timing of one row group from an idle array", "[models][mxu][timing]") {
  // 128 x 128, fill 128, drain 128, a tile loads in 128 cycles: 16 per bf16 push.
  Mxu mxu(Params(128, 128));
  const Vreg zero(kS, kL);
  for (uint64_t b = 0; b < 8; ++b) {
    const MxuTiming t = mxu.WeightPush(ElementType::kBF16, zero, 0);
    CHECK(t.start == 16 * b);
    CHECK(t.done == 16 * (b + 1));
  }
  const MxuTiming latch = mxu.Latch(0);
  CHECK(latch.start == 128);
  CHECK(latch.done == 129);
  // The group enters at 129, pays the fill (idle array), passes 16 rows from 257 to 273; row i's
  // results are ready 128 cycles after its pass ends at 257 + i + 1: fill + N + drain after 129.
  const MxuTiming push = mxu.Push(ElementType::kBF16, zero, 0);
  CHECK(push.start == 129);
  CHECK(push.done == 129 + 128 + 16 + 128);
  Vreg vd(kS, kL);
  const MxuTiming pop0 = mxu.Pop(vd, 0);
  CHECK(pop0.start == 257 + 8 + 128);  // rows 0..7 ready
  CHECK(pop0.done == pop0.start + 1);
  const MxuTiming pop1 = mxu.Pop(vd, 0);
  CHECK(pop1.start == 257 + 16 + 128);
  CHECK(mxu.quiescent_cycle() == pop1.done);
  const MxuStats stats = mxu.stats();
  CHECK(stats.fills == 1);
  CHECK(stats.busy_cycles == 128 + 16);
  CHECK(stats.pass_cycles == 16);
  CHECK(stats.macs == 16u * 128 * 128);
  CHECK(stats.weight_load_cycles == 128);
}

// Pushes `groups` row groups of zeros, popping each group `lag` groups after pushing it (so the
// pops find their rows ready and never hold up the queue when lag x group time > the drain).
// Returns the last pop's done cycle; `last_push` gets the last push's timing.
uint64_t Stream(Mxu& mxu, ElementType type, uint32_t groups, uint32_t lag,
                MxuTiming* last_push = nullptr) {
  const Vreg zero(kS, kL);
  Vreg vd(kS, kL);
  uint64_t end = 0;
  for (uint32_t g = 0; g < groups + lag; ++g) {
    if (g < groups) {
      const MxuTiming t = mxu.Push(type, zero, 0);
      if (last_push) *last_push = t;
    }
    if (g < lag) continue;
    for (uint32_t p = 0; p < Rows(type) / kS; ++p) end = mxu.Pop(vd, 0).done;
  }
  return end;
}

TEST_CASE("a long stream of row groups runs at the configured peak", "[models][mxu][timing]") {
  struct Case {
    ElementType type;
    double passes;
  };
  for (const Case c :
       {Case{ElementType::kBF16, 1}, Case{ElementType::kS8, 0.5}, Case{ElementType::kF32, 6}}) {
    INFO(tpusim::isa::ElementTypeName(c.type));
    Mxu mxu(Params(128, 128));
    const Vreg zero(kS, kL);
    for (uint32_t b = 0; b < CeilDiv(128, Rows(c.type)); ++b) mxu.WeightPush(c.type, zero, 0);
    const uint64_t latched = mxu.Latch(0).done;
    const uint32_t groups = 2000;
    MxuTiming last;
    const uint64_t end = Stream(mxu, c.type, groups, 10, &last);
    const double rows = double{groups} * Rows(c.type);
    // Exactly: fill once, then one group after another, then the drain and the last pop.
    CHECK(last.done == latched + 128 + CeilCycle(rows * c.passes) + 128);
    CHECK(end == last.done + 1);
    const double rate = rows / static_cast<double>(end - latched);
    CHECK(rate == Approx(1 / c.passes).epsilon(0.03));  // the peak, less fill and drain
    const MxuStats stats = mxu.stats();
    CHECK(stats.fills == 1);
    CHECK(stats.rows == rows);
    CHECK(stats.pass_cycles == Approx(rows * c.passes));
    CHECK(MxuUtilization(stats, end - latched) > 0.97);
  }
}

TEST_CASE("the fill is charged only when the array is empty", "[models][mxu][timing]") {
  Mxu mxu(Params(128, 128));
  const Vreg zero(kS, kL);
  LoadWeights(mxu, RandomFloats(ElementType::kBF16, 128, 128, 14));
  const MxuTiming first = mxu.Push(ElementType::kBF16, zero, 0);  // enters at 129, leaves at 401
  CHECK(first.done == 401);
  // Arriving while the first group's rows still drain: no fill, the rows follow at once.
  const MxuTiming second = mxu.Push(ElementType::kBF16, zero, 300);
  CHECK(second.start == 300);
  CHECK(second.done == 300 + 16 + 128);
  CHECK(mxu.stats().fills == 1);
  // Arriving after every row has left: the array fills again.
  const MxuTiming third = mxu.Push(ElementType::kBF16, zero, 1000);
  CHECK(third.done == 1000 + 128 + 16 + 128);
  CHECK(mxu.stats().fills == 2);
  CHECK(mxu.stats().fill_cycles == 256);
}

TEST_CASE("pops wait for their rows, and the queue waits for pops", "[models][mxu][timing]") {
  // A pop right after its push holds the in-order queue through the drain; the next push then
  // finds the array empty and pays the fill again: fill + 16 + drain per group, where a program
  // that pops eight groups (the drain) behind gets the peak.
  auto run = [&](uint32_t lag) {
    Mxu mxu(Params(128, 128));
    LoadWeights(mxu, RandomFloats(ElementType::kBF16, 128, 128, 15));
    return Stream(mxu, ElementType::kBF16, 200, lag);
  };
  const uint64_t peak = 129 + 128 + 200 * 16 + 128 + 1;
  CHECK(run(0) == 129 + 200 * (128 + 16 + 128) + 1);
  CHECK(run(10) == peak);
  CHECK(run(8) == peak);  // ceil(drain / 16) = 8 groups behind is enough
  CHECK(run(7) > peak);
}

TEST_CASE("two weight buffers hide weight loads and one does not", "[models][mxu][timing]") {
  // Four tiles of 16 row groups (256 rows, 256 cycles). A tile's pushes go to the queue one after
  // each of the previous tile's last 8 groups, so with two buffers the load runs under the
  // passes: tile n+1's staging buffer held tile n-1, whose rows left long before.
  const Vreg zero(kS, kL);
  const uint32_t tiles = 4, groups = 16;
  auto interleaved = [&](uint32_t buffers) {
    Mxu mxu(Params(128, 128, buffers));
    for (int b = 0; b < 8; ++b) mxu.WeightPush(ElementType::kBF16, zero, 0);
    mxu.Latch(0);
    for (uint32_t t = 0; t < tiles; ++t) {
      for (uint32_t g = 0; g < groups; ++g) {
        mxu.Push(ElementType::kBF16, zero, 0);
        if (t + 1 < tiles && g >= groups - 8) mxu.WeightPush(ElementType::kBF16, zero, 0);
      }
      if (t + 1 < tiles) mxu.Latch(0);
    }
    return mxu;
  };
  // Two buffers: the first load, one fill, the passes with one latch cycle between tiles, the
  // drain.
  const Mxu two = interleaved(2);
  CHECK(two.quiescent_cycle() == 128 + 1 + 128 + tiles * groups * 16 + (tiles - 1) + 128);
  CHECK(two.stats().fills == 1);
  // One buffer, same program: each load waits for the rows before it to leave; much slower.
  const Mxu one = interleaved(1);
  CHECK(one.quiescent_cycle() > 2 * two.quiescent_cycle());

  // One buffer with its best program (all of a tile's groups, then the next tile's load): each
  // tile after the first costs drain + load + latch + fill + passes.
  Mxu sequential(Params(128, 128, 1));
  for (uint32_t t = 0; t < tiles; ++t) {
    for (int b = 0; b < 8; ++b) sequential.WeightPush(ElementType::kBF16, zero, 0);
    sequential.Latch(0);
    for (uint32_t g = 0; g < groups; ++g) sequential.Push(ElementType::kBF16, zero, 0);
  }
  const uint64_t tile_period = 128 + 128 + 1 + 128 + groups * 16;
  CHECK(sequential.quiescent_cycle() ==
        128 + 1 + 128 + (tiles - 1) * tile_period + groups * 16 + 128);
  CHECK(sequential.stats().fills == tiles);
}

TEST_CASE("with two buffers a tile's buffer reloads once its last row has passed, not after the drain",
          "[models][mxu][timing]") {
  // A few-row dot streams one group per tile (decode's matrix-vector products): the load of tile
  // n + 2 goes into tile n's buffer, filled behind tile n's last row as it leaves the PEs.
  const Vreg zero(kS, kL);
  Mxu mxu(Params(128, 128, 2));
  for (int b = 0; b < 8; ++b) mxu.WeightPush(ElementType::kBF16, zero, 0);  // tile 0: 0..128
  CHECK(mxu.Latch(0).done == 129);
  // Group 1 enters at 129, pays the fill, passes 257..273, its results ready at 401.
  CHECK(mxu.Push(ElementType::kBF16, zero, 0).done == 401);
  // Tile 1 loads 129..257 (in order: after the push that began at 129).
  for (int b = 0; b < 8; ++b) mxu.WeightPush(ElementType::kBF16, zero, 0);
  CHECK(mxu.Latch(0).done == 258);
  // Group 2 follows group 1 without a gap: passes 273..289, ready 417.
  CHECK(mxu.Push(ElementType::kBF16, zero, 0).done == 417);
  // Tile 2 loads into tile 0's buffer from group 1's pass end (273), not its results (401).
  const MxuTiming first_load = mxu.WeightPush(ElementType::kBF16, zero, 0);
  CHECK(first_load.start == 273);
  for (int b = 1; b < 8; ++b) mxu.WeightPush(ElementType::kBF16, zero, 0);
  CHECK(mxu.Latch(0).done == 273 + 128 + 1);
  // Group 3 enters at 402 while group 2 still drains (ready 417): no fill.
  CHECK(mxu.Push(ElementType::kBF16, zero, 0).done == 402 + 16 + 128);
  CHECK(mxu.stats().fills == 1);
  // One buffer: the load overwrites the weights in use, so it waits for every row to leave.
  Mxu one(Params(128, 128, 1));
  for (int b = 0; b < 8; ++b) one.WeightPush(ElementType::kBF16, zero, 0);
  one.Latch(0);
  CHECK(one.Push(ElementType::kBF16, zero, 0).done == 401);
  CHECK(one.WeightPush(ElementType::kBF16, zero, 0).start == 401);
}

TEST_CASE("timing-only MXU runs give identical times", "[models][mxu][timing]") {
  const Matrix w = RandomFloats(ElementType::kBF16, 256, 256, 16);
  const Matrix lhs = RandomFloats(ElementType::kBF16, 64, 256, 17);
  auto run = [&](bool timing_only, Vreg& last) {
    Mxu mxu(Params(256, 256));
    mxu.set_timing_only(timing_only);
    std::vector<uint64_t> times;
    uint64_t cycle = 0;
    const uint32_t groups = 64 / 16;
    for (uint32_t b = 0; b < 32; ++b) {
      const MxuTiming t =
          mxu.WeightPush(ElementType::kBF16, Block(w, b / 2 * 16, b % 2 * kL), cycle);
      times.insert(times.end(), {t.start, t.done});
      cycle += 3;
    }
    const MxuTiming latch = mxu.Latch(cycle);
    times.insert(times.end(), {latch.start, latch.done});
    for (uint32_t g = 0; g < groups; ++g) {
      for (uint32_t b = 0; b < 2; ++b) {
        const MxuTiming t = mxu.Push(ElementType::kBF16, Block(lhs, g * 16, b * kL), cycle + 7 * g);
        times.insert(times.end(), {t.start, t.done});
      }
    }
    for (uint32_t p = 0; p < groups * 4; ++p) {
      const MxuTiming t = p % 2 ? mxu.PopAccumulate(last, 0) : mxu.Pop(last, 0);
      times.insert(times.end(), {t.start, t.done});
    }
    times.push_back(mxu.quiescent_cycle());
    const MxuStats s = mxu.stats();
    times.insert(times.end(), {s.rows, s.macs, s.fills, static_cast<uint64_t>(s.busy_cycles)});
    return times;
  };
  Vreg computed(kS, kL), skipped(kS, kL);
  const std::vector<uint64_t> functional = run(false, computed);
  CHECK(run(true, skipped) == functional);
  CHECK(computed != Vreg(kS, kL));  // it did compute; timing-only left its vreg alone
  CHECK(skipped == Vreg(kS, kL));
}

// ---- The accumulators (docs/isa.md, "MXU accumulators") ----

namespace {

MxuParams AccParams(uint32_t rows, uint32_t columns, uint32_t acc_rows) {
  MxuParams p = Params(rows, columns);
  p.accumulator_rows = acc_rows;
  return p;
}

// Rows [r0, r0 + rows) x columns [c0, c0 + columns) of m.
Matrix Slice(const Matrix& m, uint32_t r0, uint32_t rows, uint32_t c0, uint32_t columns) {
  Matrix out{m.type, rows, columns, {}, {}};
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < columns; ++c) {
      out.raw.push_back(m.at(r0 + r, c0 + c));
      out.value.push_back(m.f(r0 + r, c0 + c));
    }
  }
  return out;
}

// The documented order over all of K: one f32 sum from +0 (the cleared accumulator), products
// added in increasing k across the K blocks, each addition rounded.
uint32_t ReferenceChain(const Matrix& lhs, uint32_t i, const Matrix& w, uint32_t c) {
  float acc = 0.0f;
  for (uint32_t k = 0; k < w.rows; ++k) acc = acc + lhs.f(i, k) * w.f(k, c);
  return std::bit_cast<uint32_t>(acc);
}

}  // namespace

TEST_CASE("mxu.push.acc continues each row's sum over K blocks in increasing k", "[models][mxu][acc]") {
  // K = 384 on a 128-deep MXU (3 weight tiles), 32 rows at accumulator rows [64, 96): the result
  // is the one f32 chain over all 384 products, not a sum of per-tile partial sums.
  const uint32_t m = 32, k = 384;
  const Matrix w = RandomFloats(ElementType::kBF16, k, 128, 21);
  const Matrix lhs = RandomFloats(ElementType::kBF16, m, k, 22);
  Mxu mxu(AccParams(128, 128, 256));
  for (uint32_t kb = 0; kb < k / 128; ++kb) {
    LoadWeights(mxu, Slice(w, kb * 128, 128, 0, 128));
    const Matrix a = Slice(lhs, 0, m, kb * 128, 128);
    for (uint32_t g = 0; g < m / 16; ++g) mxu.PushAccumulate(ElementType::kBF16, Block(a, g * 16, 0), 64 + g * 16, 0);
  }
  CHECK(mxu.result_rows() == 0);  // nothing went to the FIFO
  uint64_t mismatches = 0;
  for (uint32_t t = 0; t < m / kS; ++t) {
    Vreg vd(kS, kL);
    mxu.AccumulatorRead(vd, 64 + t * kS, 0, /*clear=*/true, 0);
    for (uint32_t s = 0; s < kS; ++s) {
      for (uint32_t c = 0; c < kL; ++c) mismatches += vd.word(s, c) != ReferenceChain(lhs, t * kS + s, w, c);
    }
  }
  CHECK(mismatches == 0);
  // Cleared: a plain read now gives +0 words, and rows never used are +0 too.
  Vreg vd(kS, kL);
  mxu.AccumulatorRead(vd, 64, 0, false, 0);
  for (uint32_t s = 0; s < kS; ++s) CHECK(vd.word(s, 5) == 0);
  mxu.AccumulatorRead(vd, 0, 0, false, 0);
  CHECK(vd.word(0, 0) == 0);
}

TEST_CASE("mxu.acc.read without clear keeps the sums, and s8 accumulates in s32", "[models][mxu][acc]") {
  const Matrix w = RandomS8(128, 128, 31);
  const Matrix lhs = RandomS8(32, 128, 32);
  Mxu mxu(AccParams(128, 128, 32));
  LoadWeights(mxu, w);
  // The same 32 rows twice into rows [0, 32): every word is 2 x the s32 dot product (wrapping).
  for (int rep = 0; rep < 2; ++rep) mxu.PushAccumulate(ElementType::kS8, Block(lhs, 0, 0), 0, 0);
  for (uint32_t t = 0; t < 4; ++t) {
    Vreg vd(kS, kL), again(kS, kL);
    mxu.AccumulatorRead(vd, t * kS, 0, false, 0);
    mxu.AccumulatorRead(again, t * kS, 0, false, 0);
    for (uint32_t s = 0; s < kS; ++s) {
      for (uint32_t c = 0; c < kL; c += 17) {
        REQUIRE(vd.word(s, c) == 2u * ReferenceS32(lhs, t * kS + s, w, c));
        REQUIRE(again.word(s, c) == vd.word(s, c));
      }
    }
  }
}

TEST_CASE("a 256x256 MXU's accumulator reads name a column block, a 16x16 MXU reads zeros past C", "[models][mxu][acc]") {
  const Matrix w = RandomFloats(ElementType::kBF16, 256, 256, 41);
  const Matrix lhs = RandomFloats(ElementType::kBF16, 16, 256, 42);
  Mxu mxu(AccParams(256, 256, 16));
  LoadWeights(mxu, w);
  mxu.PushAccumulate(ElementType::kBF16, Block(lhs, 0, 0), 0, 0);
  mxu.PushAccumulate(ElementType::kBF16, Block(lhs, 0, 128), 0, 0);  // nk = 2 pushes per group
  for (uint32_t t = 0; t < 2; ++t) {
    for (uint32_t j = 0; j < 2; ++j) {
      Vreg vd(kS, kL);
      mxu.AccumulatorRead(vd, t * kS, j, true, 0);
      for (uint32_t s = 0; s < kS; ++s) {
        for (uint32_t l = 0; l < kL; l += 9) REQUIRE(vd.word(s, l) == ReferenceChain(lhs, t * kS + s, w, j * kL + l));
      }
    }
  }
  const Matrix w16 = RandomFloats(ElementType::kBF16, 16, 16, 43);
  const Matrix a16 = RandomFloats(ElementType::kBF16, 16, 16, 44);
  Mxu tiny(AccParams(16, 16, 16));
  LoadWeights(tiny, w16);
  tiny.PushAccumulate(ElementType::kBF16, Block(a16, 0, 0), 0, 0);
  Vreg vd(kS, kL);
  tiny.AccumulatorRead(vd, 8, 0, true, 0);
  CHECK(vd.word(3, 7) == ReferenceChain(a16, 11, w16, 7));
  CHECK(vd.word(3, 16) == 0);
  CHECK(vd.word(7, 127) == 0);
}

TEST_CASE("accumulator faults name the rows and change nothing", "[models][mxu][acc]") {
  const Vreg zero(kS, kL);
  Mxu mxu(AccParams(128, 128, 32));
  LoadWeights(mxu, RandomFloats(ElementType::kBF16, 128, 128, 51));
  // 16 rows at 24 end at 40 > 32.
  CHECK_THROWS_WITH(mxu.PushAccumulate(ElementType::kBF16, zero, 24, 0),
                    Catch::Contains("mxu.push.acc.bf16") && Catch::Contains("[24, 40)") && Catch::Contains("32 rows"));
  CHECK_THROWS_WITH(mxu.PushAccumulate(ElementType::kBF16, zero, ~uint64_t{0}, 0), Catch::Contains("past the 32 rows"));
  Vreg vd(kS, kL);
  CHECK_THROWS_WITH(mxu.AccumulatorRead(vd, 25, 0, true, 0), Catch::Contains("mxu.acc.read.clear") && Catch::Contains("[25, 33)"));
  CHECK_THROWS_WITH(mxu.AccumulatorRead(vd, 0, 1, false, 0), Catch::Contains("column block 1"));
  CHECK(mxu.stats().pushes == 0);
  CHECK(mxu.stats().accumulator_reads == 0);
  // A machine without accumulators faults on any row.
  Mxu none(Params(128, 128));
  LoadWeights(none, RandomFloats(ElementType::kBF16, 128, 128, 52));
  CHECK_THROWS_WITH(none.PushAccumulate(ElementType::kBF16, zero, 0, 0), Catch::Contains("past the 0 rows"));
  // A group goes to one place: a 256-deep MXU's group begun with push cannot end with push.acc.
  Mxu deep(AccParams(256, 128, 32));
  LoadWeights(deep, RandomFloats(ElementType::kBF16, 256, 128, 53));
  deep.Push(ElementType::kBF16, zero, 0);
  CHECK_THROWS_WITH(deep.PushAccumulate(ElementType::kBF16, zero, 0, 0), Catch::Contains("one place"));
}

TEST_CASE("push.acc costs a push, reads wait for their rows' completion and cost a pop", "[models][mxu][acc][timing]") {
  // As "MXU timing of one row group from an idle array": weights latched by 129, the group enters
  // at 129, passes after the fill (128) from 257, row i ready at 257 + i + 1 + drain (128).
  const MxuParams p = AccParams(128, 128, 64);
  for (const bool timing_only : {false, true}) {
    Mxu mxu(p);
    mxu.set_timing_only(timing_only);
    const Vreg zero(kS, kL);
    for (int b = 0; b < 8; ++b) mxu.WeightPush(ElementType::kBF16, zero, 0);
    CHECK(mxu.Latch(0).done == p.weight_load_cycles + 1);
    const MxuTiming push = mxu.PushAccumulate(ElementType::kBF16, zero, 16, 0);
    const uint64_t pass_begin = 129 + p.pipeline_fill_cycles;
    CHECK(push.start == 129);
    CHECK(push.done == pass_begin + 16 + p.pipeline_drain_cycles);
    // The next group follows without a gap: no fill, rows pass from pass_begin + 16.
    const MxuTiming push2 = mxu.PushAccumulate(ElementType::kBF16, zero, 32, 0);
    CHECK(push2.done == pass_begin + 32 + p.pipeline_drain_cycles);
    Vreg vd(kS, kL);
    // Rows 24..31 (the first group's rows 8..15) are ready at pass_begin + 16 + drain.
    const MxuTiming read = mxu.AccumulatorRead(vd, 24, 0, true, 0);
    CHECK(read.start == pass_begin + 16 + p.pipeline_drain_cycles);
    CHECK(read.done == read.start + 1);
    // Rows 32..39 (the second group's 0..7): ready at pass_begin + 16 + 8 + drain.
    const MxuTiming read2 = mxu.AccumulatorRead(vd, 32, 0, false, 0);
    CHECK(read2.start == pass_begin + 24 + p.pipeline_drain_cycles);
    // Rows never pushed are ready at once: the read only waits for the port and queue order.
    const MxuTiming read3 = mxu.AccumulatorRead(vd, 0, 0, false, 0);
    CHECK(read3.start == read2.done);
    const MxuStats stats = mxu.stats();
    CHECK(stats.pass_cycles == 32);
    CHECK(stats.row_groups == 2);
    CHECK(stats.accumulator_reads == 3);
    // The second group's last row drains after the reads: the MXU is quiet from then.
    CHECK(push2.done > read3.done);
    CHECK(mxu.quiescent_cycle() == push2.done);
  }
}
