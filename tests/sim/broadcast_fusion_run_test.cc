// End-to-end tests of broadcasts of arrays fused into element-wise kernels
// (compiler/passes/elementwise_fusion.h, compiler/lower/broadcast_block_dmas.h): the kernel loads
// the broadcast's operand from HBM into its tiles with replicating DMAs, so the module has no
// broadcast kernel and writes no broadcast array. Results are compared bit for bit with values
// computed here (f32 add/subtract/multiply are correctly rounded, bf16 results are the f32 result
// rounded to nearest even, as XLA computes bf16 arithmetic), and --check compares with the
// evaluator. Shapes are not multiples of the 8 x 128 tile, so the padding paths run too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "isa/convert.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

std::vector<float> RandomF32(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng);
  return values;
}

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

struct Input {
  ElementType type;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

// Runs `hlo` with --check and a report; returns the output bytes and the report text.
std::pair<std::vector<uint8_t>, std::string> Run(const std::string& name, const std::string& hlo,
                                                 const std::vector<Input>& inputs, ElementType out_type,
                                                 const std::string& preset = "tpu_v4", const std::string& extra = "") {
  const fs::path dir = TempDir(name + "_" + preset);
  WriteText(dir / "m.hlo", hlo);
  std::string args = "run " + (dir / "m.hlo").string() + " --config " + preset + " --check --out " + (dir / "out").string() +
                     " --report " + (dir / "r.json").string() + extra;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const fs::path path = dir / fmt::format("in{}.npy", i);
    tpusim::isa::WriteNpy(path.string(), inputs[i].type, inputs[i].dims, inputs[i].bytes);
    args += fmt::format(" --input {}={}", i, path.string());
  }
  RunOk(args);
  return {ReadOutput(dir / "out" / "output_0.npy", out_type).data, ReadText(dir / "r.json")};
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// 1 MiB of VMEM, the least a config may have: small enough that the arrays below, a few
// thousand columns wide, cannot hold two strips of every stream, so blocks are pieces of a strip.
const std::string kSmallVmem = " --set tensor_core.vmem.capacity_mib=1";

// The element-wise blocks of `hlo` compiled for tpu_v4 with kSmallVmem (the `// block i of n`
// comment starts each).
int Blocks(const std::string& name, const std::string& hlo) {
  const fs::path dir = TempDir(name + "_compile");
  WriteText(dir / "m.hlo", hlo);
  const Result run = RunTpusim("compile " + (dir / "m.hlo").string() + " --config tpu_v4" + kSmallVmem + " -o " +
                               (dir / "m.tpuasm").string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  return CountOf(ReadText(dir / "m.tpuasm"), "// block ");
}

}  // namespace

TEST_CASE("fused broadcasts: x - broadcast(a[M]) + broadcast(b[N]) in f32 is one kernel", "[sim][broadcast_fusion]") {
  const int64_t m = 20, n = 300;
  const std::vector<float> x = RandomF32(m * n, 1), a = RandomF32(m, 2), b = RandomF32(n, 3);
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float s = x[i * n + j] - a[i];
      want[i * n + j] = s + b[j];
    }
  }
  const std::string hlo = R"(HloModule m
ENTRY main {
  x = f32[20,300] parameter(0)
  a = f32[20] parameter(1)
  b = f32[300] parameter(2)
  ba = f32[20,300] broadcast(a), dimensions={0}
  bb = f32[20,300] broadcast(b), dimensions={1}
  s = f32[20,300] subtract(x, ba)
  ROOT r = f32[20,300] add(s, bb)
}
)";
  for (const char* preset : kPresets) {
    INFO(preset);
    const auto [got, report] = Run("bcast_f32", hlo,
                                   {{ElementType::kF32, {m, n}, Bytes(x)}, {ElementType::kF32, {m}, Bytes(a)},
                                    {ElementType::kF32, {n}, Bytes(b)}},
                                   ElementType::kF32, preset);
    CHECK(got == Bytes(want));
    // Both broadcasts and the subtract are computed in r's kernel: one kernel, no broadcast kernel
    // (the only thing that would write a broadcast array).
    CHECK(CountOf(report, "\"opcode\":") == 1);
    CHECK(CountOf(report, "\"opcode\": \"broadcast\"") == 0);
  }
}

TEST_CASE("fused broadcasts: rank-4 bf16 along the minor dim and along major dims", "[sim][broadcast_fusion]") {
  // (x - broadcast(m[2,3,20]) along the lanes) * broadcast(w[3,130]) along dims 0 and 2.
  const std::vector<int64_t> dims = {2, 3, 20, 130};
  const std::vector<uint8_t> x = RandomBf16(Count(dims), 4), m = RandomBf16(2 * 3 * 20, 5), w = RandomBf16(3 * 130, 6);
  const std::vector<float> xf = Bf16Values(x), mf = Bf16Values(m), wf = Bf16Values(w);
  std::vector<uint16_t> want(Count(dims));
  for (int64_t i0 = 0; i0 < 2; ++i0) {
    for (int64_t i1 = 0; i1 < 3; ++i1) {
      for (int64_t i2 = 0; i2 < 20; ++i2) {
        for (int64_t i3 = 0; i3 < 130; ++i3) {
          const int64_t at = ((i0 * 3 + i1) * 20 + i2) * 130 + i3;
          const uint16_t s = tpusim::isa::F32ToBf16(xf[at] - mf[(i0 * 3 + i1) * 20 + i2]);
          uint32_t word = uint32_t{s} << 16;
          float sf;
          std::memcpy(&sf, &word, 4);
          want[at] = tpusim::isa::F32ToBf16(sf * wf[i1 * 130 + i3]);
        }
      }
    }
  }
  const auto [got, report] = Run("bcast_bf16", R"(HloModule m
ENTRY main {
  x = bf16[2,3,20,130] parameter(0)
  m = bf16[2,3,20] parameter(1)
  w = bf16[3,130] parameter(2)
  bm = bf16[2,3,20,130] broadcast(m), dimensions={0,1,2}
  bw = bf16[2,3,20,130] broadcast(w), dimensions={1,3}
  s = bf16[2,3,20,130] subtract(x, bm)
  ROOT r = bf16[2,3,20,130] multiply(s, bw)
}
)",
                                 {{ElementType::kBF16, dims, x}, {ElementType::kBF16, {2, 3, 20}, m},
                                  {ElementType::kBF16, {3, 130}, w}},
                                 ElementType::kBF16);
  CHECK(got == Bytes(want));
  CHECK(CountOf(report, "\"opcode\":") == 1);
}

TEST_CASE("fused broadcasts: the softmax pattern x - broadcast(reduce_max(x)) in f32", "[sim][broadcast_fusion]") {
  // As the attention block's sub.6: the broadcast joins the subtract, and the maximum too (a row
  // fold: 130 columns, the second tile's padding lanes folded as -inf).
  const std::vector<int64_t> dims = {1, 12, 20, 130};
  const std::vector<float> x = RandomF32(Count(dims), 7);
  std::vector<float> want(x.size());
  for (int64_t row = 0; row < 12 * 20; ++row) {
    float max = x[row * 130];
    for (int64_t j = 1; j < 130; ++j) max = std::max(max, x[row * 130 + j]);
    for (int64_t j = 0; j < 130; ++j) want[row * 130 + j] = x[row * 130 + j] - max;
  }
  const auto [got, report] = Run("bcast_softmax", R"(HloModule m
max_f32 {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT mx = f32[] maximum(p, q)
}
ENTRY main {
  x = f32[1,12,20,130] parameter(0)
  lo = f32[] constant(-inf)
  mx = f32[1,12,20] reduce(x, lo), dimensions={3}, to_apply=max_f32
  b = f32[1,12,20,130] broadcast(mx), dimensions={0,1,2}
  ROOT r = f32[1,12,20,130] subtract(x, b)
}
)",
                                 {{ElementType::kF32, dims, Bytes(x)}}, ElementType::kF32);
  CHECK(got == Bytes(want));
  CHECK(CountOf(report, "\"opcode\":") == 1);  // the subtract, the maximum folded in it
  CHECK(CountOf(report, "\"opcode\": \"broadcast\"") == 0);
}

TEST_CASE("fused broadcasts: s32 along the rows only, replicated over a major dim and the lanes", "[sim][broadcast_fusion]") {
  const std::vector<int64_t> dims = {4, 20, 130};
  std::vector<int32_t> x(Count(dims)), c(20);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i * 7919 % 100003) - 50000;
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<int32_t>(i * 1000 + 1);
  std::vector<int32_t> want(x.size());
  for (int64_t k = 0; k < 4; ++k) {
    for (int64_t i = 0; i < 20; ++i) {
      for (int64_t j = 0; j < 130; ++j) want[(k * 20 + i) * 130 + j] = x[(k * 20 + i) * 130 + j] + c[i];
    }
  }
  const auto [got, report] = Run("bcast_s32", R"(HloModule m
ENTRY main {
  x = s32[4,20,130] parameter(0)
  c = s32[20] parameter(1)
  bc = s32[4,20,130] broadcast(c), dimensions={1}
  ROOT r = s32[4,20,130] add(x, bc)
}
)",
                                 {{ElementType::kS32, dims, Bytes(x)}, {ElementType::kS32, {20}, Bytes(c)}},
                                 ElementType::kS32);
  CHECK(got == Bytes(want));
  CHECK(CountOf(report, "\"opcode\":") == 1);
}

TEST_CASE("fused broadcasts: the result's layout padding stays zero after VMEM held other values", "[sim][broadcast_fusion]") {
  // The replicating DMAs write a broadcast's elements only; the tiles' padding keeps what VMEM
  // held. The exp kernel runs first and leaves exp(p) > 0 in VMEM where r's kernel puts its
  // broadcast tiles, so r's padding (rows 20..23 and lanes 300..383 of its 24 x 384 tile image)
  // is zero only because the kernel masks its results there.
  const fs::path dir = TempDir("bcast_padding");
  WriteText(dir / "m.hlo", R"(HloModule m
ENTRY main {
  p = f32[24,384] parameter(0)
  x = f32[20,300] parameter(1)
  a = f32[20] parameter(2)
  t = f32[24,384] exponential(p)
  ba = f32[20,300] broadcast(a), dimensions={0}
  r = f32[20,300] subtract(x, ba)
  ROOT o = (f32[24,384], f32[20,300]) tuple(t, r)
}
)");
  RunOk("run " + (dir / "m.hlo").string() + " --config tpu_v4 --check --dump-memory " +
        (dir / "dump").string());
  const std::string bytes = ReadText(dir / "dump" / "output_1.bin");
  REQUIRE(bytes.size() == 3 * 3 * 4096);  // 3 x 3 tiles of 8 x 128 f32
  int64_t nonzero_padding = 0, nonzero_elements = 0;
  for (int64_t i = 0; i < 24; ++i) {
    for (int64_t j = 0; j < 384; ++j) {
      const std::size_t at = static_cast<std::size_t>(((i / 8) * 3 + j / 128) * 4096 + ((i % 8) * 128 + j % 128) * 4);
      const bool zero = bytes.compare(at, 4, std::string(4, '\0')) == 0;
      if (i >= 20 || j >= 300) {
        nonzero_padding += zero ? 0 : 1;
      } else {
        nonzero_elements += zero ? 0 : 1;
      }
    }
  }
  CHECK(nonzero_padding == 0);
  CHECK(nonzero_elements > 0);  // the dump is r's image, not an untouched buffer
}

TEST_CASE("fused broadcasts: a broadcast of a parameter inside an HLO fusion", "[sim][broadcast_fusion]") {
  // A `fusion` instruction's computation is one element-wise kernel; its broadcast of a
  // parameter is filled the same way (this was refused before: "broadcast of a non-scalar").
  const int64_t m = 20, n = 300;
  const std::vector<float> x = RandomF32(m * n, 8), a = RandomF32(n, 9);
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) want[i * n + j] = x[i * n + j] - a[j];
  }
  const auto [got, report] = Run("bcast_fusion_instruction", R"(HloModule m
fused {
  p0 = f32[20,300] parameter(0)
  p1 = f32[300] parameter(1)
  b = f32[20,300] broadcast(p1), dimensions={1}
  ROOT s = f32[20,300] subtract(p0, b)
}
ENTRY main {
  x = f32[20,300] parameter(0)
  a = f32[300] parameter(1)
  ROOT r = f32[20,300] fusion(x, a), kind=kLoop, calls=fused
}
)",
                                 {{ElementType::kF32, {m, n}, Bytes(x)}, {ElementType::kF32, {n}, Bytes(a)}},
                                 ElementType::kF32);
  CHECK(got == Bytes(want));
  CHECK(CountOf(report, "\"opcode\":") == 1);
}

// Pieces of strips (compiler/lower/elementwise_kernel.cc, PlanPieces): the fill writes the piece's
// column tiles of its strip. 9000 columns = 70 x 128 + 40: a strip is 71 tiles and its last tile
// has 40 valid lanes; 20 rows: the last strip of each matrix has 4 valid rows.

TEST_CASE("fused broadcasts in blocks of part of a strip: f32 row vector and column vector", "[sim][broadcast_fusion]") {
  const int64_t m = 20, n = 9000;
  const std::vector<float> x = RandomF32(m * n, 10), v = RandomF32(n, 11), c = RandomF32(m, 12);
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float s = x[i * n + j] + v[j];
      want[i * n + j] = s * c[i];
    }
  }
  const std::string hlo = R"(HloModule m
ENTRY main {
  x = f32[20,9000] parameter(0)
  v = f32[9000] parameter(1)
  c = f32[20] parameter(2)
  bv = f32[20,9000] broadcast(v), dimensions={1}
  bc = f32[20,9000] broadcast(c), dimensions={0}
  s = f32[20,9000] add(x, bv)
  ROOT r = f32[20,9000] multiply(s, bc)
}
)";
  // Streams x, bv, bc, r: a strip of each is 71 x 4 KiB, 1136 KiB in all, so not two fit 1 MiB.
  // A piece fits three deep with 4 KiB alignment slack per stream and buffer:
  // (1024 - 3 x 4 x 4) KiB / (3 x 16 KiB) = 20 tiles, so 4 equal pieces of 18 tiles (the last 17);
  // 3 strips x 4 pieces = 12 blocks (whole strips would be at most 3).
  CHECK(Blocks("bcast_pieces_f32", hlo) == 12);
  const auto [got, report] = Run("bcast_pieces_f32", hlo,
                                 {{ElementType::kF32, {m, n}, Bytes(x)}, {ElementType::kF32, {n}, Bytes(v)},
                                  {ElementType::kF32, {m}, Bytes(c)}},
                                 ElementType::kF32, "tpu_v4", kSmallVmem);
  CHECK(got == Bytes(want));
  CHECK(CountOf(report, "\"opcode\":") == 1);
}

TEST_CASE("fused broadcasts in blocks of part of a strip: rank-3 bf16 from [B,S], [V] and [B,V]", "[sim][broadcast_fusion]") {
  const std::vector<int64_t> dims = {2, 10, 9000};
  const int64_t b = 2, s = 10, n = 9000;
  const std::vector<uint8_t> x = RandomBf16(Count(dims), 13), a = RandomBf16(b * s, 14), v = RandomBf16(n, 15),
                             w = RandomBf16(b * n, 16);
  const std::vector<float> xf = Bf16Values(x), af = Bf16Values(a), vf = Bf16Values(v), wf = Bf16Values(w);
  const auto widen = [](uint16_t h) {
    const uint32_t word = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &word, 4);
    return f;
  };
  std::vector<uint16_t> want(Count(dims));
  for (int64_t i0 = 0; i0 < b; ++i0) {
    for (int64_t i1 = 0; i1 < s; ++i1) {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = (i0 * s + i1) * n + j;
        const float d = widen(tpusim::isa::F32ToBf16(xf[at] - af[i0 * s + i1]));
        const float p = widen(tpusim::isa::F32ToBf16(d * vf[j]));
        want[at] = tpusim::isa::F32ToBf16(p + wf[i0 * n + j]);
      }
    }
  }
  const std::string hlo = R"(HloModule m
ENTRY main {
  x = bf16[2,10,9000] parameter(0)
  a = bf16[2,10] parameter(1)
  v = bf16[9000] parameter(2)
  w = bf16[2,9000] parameter(3)
  ba = bf16[2,10,9000] broadcast(a), dimensions={0,1}
  bv = bf16[2,10,9000] broadcast(v), dimensions={2}
  bw = bf16[2,10,9000] broadcast(w), dimensions={0,2}
  d = bf16[2,10,9000] subtract(x, ba)
  p = bf16[2,10,9000] multiply(d, bv)
  ROOT r = bf16[2,10,9000] add(p, bw)
}
)";
  // Five streams of 2 KiB tiles: a strip of each is 142 KiB, 710 KiB in all, not twice in 1 MiB.
  // (1024 - 3 x 5 x 4) KiB / (3 x 10 KiB) = 32 tiles: 3 pieces of 24 (the last 23); 2 matrices x
  // 2 strips x 3 pieces = 12 blocks.
  CHECK(Blocks("bcast_pieces_bf16", hlo) == 12);
  const auto [got, report] = Run("bcast_pieces_bf16", hlo,
                                 {{ElementType::kBF16, dims, x}, {ElementType::kBF16, {b, s}, a},
                                  {ElementType::kBF16, {n}, v}, {ElementType::kBF16, {b, n}, w}},
                                 ElementType::kBF16, "tpu_v4", kSmallVmem);
  CHECK(got == Bytes(want));
  CHECK(CountOf(report, "\"opcode\":") == 1);
}

TEST_CASE("fused broadcasts in blocks of part of a strip: a one-hot from s32 token ids, as Llama's", "[sim][broadcast_fusion]") {
  // Llama's convert_element_type.253: convert(compare(broadcast(ids[1,S]), iota along V)) to bf16
  // over vocabulary-wide rows. Row i is 1.0 (bf16 0x3f80) at column ids[i], 0 elsewhere.
  const int64_t m = 20, n = 9000;
  std::vector<int32_t> ids(m);
  for (int64_t i = 0; i < m; ++i) ids[i] = static_cast<int32_t>((i * 4451 + 17) % n);
  ids[3] = n - 1;  // in the last tile's valid lanes
  ids[4] = -1;     // in no column
  std::vector<uint16_t> want(m * n, 0);
  for (int64_t i = 0; i < m; ++i) {
    if (ids[i] >= 0) want[i * n + ids[i]] = 0x3f80;
  }
  const std::string hlo = R"(HloModule m
ENTRY main {
  ids = s32[1,20] parameter(0)
  b = s32[1,20,9000] broadcast(ids), dimensions={0,1}
  i = s32[1,20,9000] iota(), iota_dimension=2
  e = pred[1,20,9000] compare(b, i), direction=EQ
  ROOT r = bf16[1,20,9000] convert(e)
}
)";
  // The iota is a kernel of its own; r's streams are b, i (4 KiB tiles) and r (2 KiB): 710 KiB a
  // strip. (1024 - 3 x 3 x 4) KiB / (3 x 10 KiB) = 32 tiles: 3 pieces of 24; 3 strips x 3 = 9.
  CHECK(Blocks("bcast_pieces_onehot", hlo) == 9);
  const auto [got, report] = Run("bcast_pieces_onehot", hlo, {{ElementType::kS32, {1, m}, Bytes(ids)}},
                                 ElementType::kBF16, "tpu_v4", kSmallVmem);
  CHECK(got == Bytes(want));
}

TEST_CASE("fused broadcasts in blocks of part of a strip: pred row and column masks select", "[sim][broadcast_fusion]") {
  const int64_t m = 20, n = 9000;
  const std::vector<float> x = RandomF32(m * n, 17), y = RandomF32(m * n, 18);
  std::vector<uint8_t> p(m), q(n);
  for (int64_t i = 0; i < m; ++i) p[i] = i % 3 != 0;
  for (int64_t j = 0; j < n; ++j) q[j] = (j * 7) % 5 < 3;
  std::vector<float> want(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) want[i * n + j] = p[i] && q[j] ? x[i * n + j] : y[i * n + j];
  }
  const std::string hlo = R"(HloModule m
ENTRY main {
  x = f32[20,9000] parameter(0)
  y = f32[20,9000] parameter(1)
  p = pred[20] parameter(2)
  q = pred[9000] parameter(3)
  bp = pred[20,9000] broadcast(p), dimensions={0}
  bq = pred[20,9000] broadcast(q), dimensions={1}
  a = pred[20,9000] and(bp, bq)
  ROOT r = f32[20,9000] select(a, x, y)
}
)";
  // x, y, r with 4 KiB tiles and bp, bq with 1 KiB (8-bit) ones: 14 KiB a tile column, 994 KiB a
  // strip. (1024 - 3 x 5 x 4) KiB / (3 x 14 KiB) = 22 tiles: 4 pieces of 18; 3 strips x 4 = 12.
  CHECK(Blocks("bcast_pieces_pred", hlo) == 12);
  const auto [got, report] = Run("bcast_pieces_pred", hlo,
                                 {{ElementType::kF32, {m, n}, Bytes(x)}, {ElementType::kF32, {m, n}, Bytes(y)},
                                  {ElementType::kPred, {m}, p}, {ElementType::kPred, {n}, q}},
                                 ElementType::kF32, "tpu_v4", kSmallVmem);
  CHECK(got == Bytes(want));
  CHECK(CountOf(report, "\"opcode\":") == 1);
}

TEST_CASE("fused broadcasts along the lanes are replicated in registers: every body and block shape, --check",
          "[sim][broadcast_fusion]") {
  // A per-row value broadcast across its row: the DMAs write lane 0 of the first tile of each
  // strip (or of each body of a wide strip or piece) and the kernel replicates it with vperm, the
  // tiles of a strip sharing one load. Shapes: strips of 3 tiles, several to a body; strips of 40
  // tiles, two bodies each; a strip of 469 tiles in pieces; an f16 chain (the phase-order body);
  // and a layer norm's variance, fused into its reduce.
  struct Case {
    const char* name;
    std::string hlo;
  };
  const auto normalize = [](const std::string& type, const std::string& rows, const std::string& columns) {
    const std::string x = type + "[" + rows + "," + columns + "]";
    const std::string v = type + "[" + rows + "]";
    return "HloModule m\nENTRY e {\n  x = " + x + " parameter(0)\n  m = " + v + " parameter(1)\n  s = " + v +
           " parameter(2)\n  mb = " + x + " broadcast(m), dimensions={0}\n  sb = " + x +
           " broadcast(s), dimensions={0}\n  d = " + x + " subtract(x, mb)\n  ROOT q = " + x + " multiply(d, sb)\n}\n";
  };
  const std::vector<Case> cases = {
      {"narrow_f32", normalize("f32", "200", "300")},
      {"wide_bf16", normalize("bf16", "24", "5000")},
      {"pieces_f32", normalize("f32", "16", "60000")},
      {"f16", normalize("f16", "100", "700")},
      {"variance_bf16", R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = bf16[64,768] parameter(0)
  m = bf16[64] parameter(1)
  mb = bf16[64,768] broadcast(m), dimensions={0}
  d = bf16[64,768] subtract(x, mb)
  q = bf16[64,768] multiply(d, d)
  c = f32[64,768] convert(q)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(c, z), dimensions={1}, to_apply=add
}
)"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const fs::path dir = TempDir(std::string("lane_broadcast_") + c.name);
    WriteText(dir / "m.hlo", c.hlo);
    const std::string output = RunOk("run " + (dir / "m.hlo").string() + " --check");
    CHECK_THAT(output, Catch::Contains("check passed"));
    // The replication is the VPU's: the kernel has cross-lane work.
    const std::string assembly = RunOk("compile " + (dir / "m.hlo").string() + " -o " + (dir / "m.s").string());
    CHECK(ReadText(dir / "m.s").find("vperm") != std::string::npos);
  }
}
