// Dots in other forms whose operands or result already hold the canonical array's bytes
// (compiler/lower/dot_general_kernel.cc, InPlace): the dot kernel reads and writes them where
// they are, with no copies; the others are copied to or from the canonical array in one pass, a
// box per index of the merged dims' outer dims (EmitMergeCopy), or through row-major untiled
// scratch where that would take more than 256 boxes.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

// The DMA lines of the compiled program that move a row-major untiled array of `type` (the
// general dot's scratch copies; every array of a compiled bf16 dot is tiled otherwise).
int UntiledDmas(const std::string& tpuasm, const std::string& type) {
  std::istringstream lines(tpuasm);
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("  dma ") != 0) continue;
    for (std::size_t at = line.find(type + "["); at != std::string::npos; at = line.find(type + "[", at + 1)) {
      const std::size_t close = line.find('}', at);
      if (line.substr(at, close - at).find(":T(") == std::string::npos) ++count;
    }
  }
  return count;
}

struct Case {
  const char* name;
  const char* hlo;
  int untiled_dmas;  // bf16 DMAs through row-major scratch: 2 per operand or result copied so
};

}  // namespace

TEST_CASE("tpusim run --check: dot operands and results already canonical are used in place and others copied once", "[sim][dot]") {
  const Case cases[] = {
      // Llama's layer dots: [1,S,D] x [D,F] -> [1,S,F]; the leading 1 changes no byte.
      {"leading_one", R"(HloModule g
ENTRY e {
  a = bf16[1,64,256] parameter(0)
  b = bf16[256,384] parameter(1)
  ROOT d = bf16[1,64,384] dot(a, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
})", 0},
      // Llama's weight gradients: contracting [1,S] on both sides: K first, read transposed.
      {"contracting_first", R"(HloModule g
ENTRY e {
  a = bf16[2,64,128] parameter(0)
  b = bf16[2,64,256] parameter(1)
  ROOT d = bf16[128,256] dot(a, b), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
})", 0},
      // Free dims [2,32] and [2,128] above K merge into M = 64 and N = 256 (32 and 128 are
      // multiples of the 8-row tile): in place, the rhs transposed. The result [2,32,2,128] tiles
      // its [2,128] minor dims, not [64,256]'s bytes: copied, a box per index of its dim 0.
      {"result_copied", R"(HloModule g
ENTRY e {
  a = bf16[2,32,256] parameter(0)
  b = bf16[2,128,256] parameter(1)
  ROOT d = bf16[2,32,2,128] dot(a, b), lhs_contracting_dims={2}, rhs_contracting_dims={2}
})", 0},
      // The lhs's free dims [4,2] merge into M = 8 but [4,2,128]'s tiles hold 2 rows each: copied
      // (and the result), a box per index of the dim of 4. Batch dims leading on both sides: the
      // rhs is in place.
      {"lhs_copied", R"(HloModule g
ENTRY e {
  a = bf16[3,4,2,128] parameter(0)
  b = bf16[3,128,128] parameter(1)
  ROOT d = bf16[3,4,2,128] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={3}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})", 0},
      // Gemma's query projection: W [1152,4,256] (its [4,256] tiles hold 4 rows each) merges
      // into N = 1024 in 4 boxes, 2.25 MiB split over the DMA engines; the result in 4 more.
      {"query_projection", R"(HloModule g
ENTRY e {
  x = bf16[1,11,1152] parameter(0)
  w = bf16[1152,4,256] parameter(1)
  ROOT q = bf16[1,11,4,256] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
})", 0},
      // Gemma's query projection as it lies: W [4,1152,256], a [1152,256] matrix per head. The
      // heads become the batch (BatchOuterFreeDims): W in place, x replicated 4 times (100 KB
      // against the weights' 2.25 MiB), and the canonical [4,11,256] seen in the result's dims
      // [1,11,4,256] is one DMA's source.
      {"outer_dims_of_the_rhs", R"(HloModule g
ENTRY e {
  x = bf16[1,11,1152] parameter(0)
  w = bf16[4,1152,256] parameter(1)
  ROOT q = bf16[1,11,4,256] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={1}
})", 0},
      // Gemma's key/value projection: the weights on the lhs, [2,1] outer dims, read transposed
      // ([K, M]); x replicated twice and read transposed ([N, K]). The result [2,1,256,1,11] (its
      // size-1 dims laid out major) holds the canonical [2,1,256,11]'s bytes: written in place.
      {"outer_dims_of_the_lhs", R"(HloModule g
ENTRY e {
  w = bf16[2,1,1152,256] parameter(0)
  x = bf16[1,11,1152] parameter(1)
  ROOT kv = bf16[2,1,256,1,11] dot(w, x), lhs_contracting_dims={2}, rhs_contracting_dims={2}
})", 0},
      // MaxText's attention backward (probabilities x values): the lhs [B,H,K,M,1] laid out
      // {2,3,4,1,0} (K minor) holds the canonical [B,H,M,K]'s bytes: read in place, permuted.
      // The rhs [B,K,H,N] has a batch dim between K and N: copied in tiles, a box per batch
      // element, no untiled DMA.
      {"lhs_permuted_by_its_layout", R"(HloModule g
ENTRY e {
  a = bf16[2,3,256,384,1]{2,3,4,1,0} parameter(0)
  b = bf16[2,256,3,128] parameter(1)
  ROOT d = bf16[2,3,384,1,128] dot(a, b), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
})", 0},
      // M merged from two dims above 1 ([2,8]: in place, 8 rows a tile): the canonical
      // [4,16,128] goes to [2,8,4,128] through row-major scratch, out and back permuted.
      {"outer_dims_result_through_rows", R"(HloModule g
ENTRY e {
  a = bf16[2,8,64] parameter(0)
  w = bf16[4,64,128] parameter(1)
  ROOT d = bf16[2,8,4,128] dot(a, w), lhs_contracting_dims={2}, rhs_contracting_dims={1}
})", 2},
      // The same with a dim of 260 (260 boxes each way) and rows of 32 (shorter than the 128
      // lanes): both go through row-major scratch (each copy under 64 KiB: one DMA per pass, not
      // split over the engines).
      {"lhs_copied_through_rows", R"(HloModule g
ENTRY e {
  a = bf16[1,260,2,32] parameter(0)
  b = bf16[1,32,32] parameter(1)
  ROOT d = bf16[1,260,2,32] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={3}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})", 4},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const fs::path dir = TempDir(std::string("dot_in_place_") + c.name);
    WriteText(dir / "m.hlo", c.hlo);
    const std::string output = RunOk("run " + (dir / "m.hlo").string() + " --check --seed 11");
    CHECK_THAT(output, Catch::Contains("check passed"));
    RunOk("compile " + (dir / "m.hlo").string() + " -o " + (dir / "m.tpuasm").string());
    CHECK(UntiledDmas(ReadText(dir / "m.tpuasm"), "bf16") == c.untiled_dmas);
  }
}

TEST_CASE("tpusim run: Gemma 3's query projection reads its weights in place, the heads as the batch", "[sim][dot]") {
  // bf16[1,11,1152] x bf16[4,1152,256] on tpu_v4: with the weights copied into one [1152,1024]
  // matrix (read, written and read again) 11.0 us; with the heads as the batch, x replicated
  // (4 x 22.5 KB) and the result written by one DMA, 6.9 us. Moving the weights once at HBM's
  // 1228.8 GB/s takes 1.9 us.
  const fs::path dir = TempDir("dot_outer_dims_time");
  WriteText(dir / "m.hlo", R"(HloModule g
ENTRY e {
  x = bf16[1,11,1152] parameter(0)
  w = bf16[4,1152,256] parameter(1)
  ROOT q = bf16[1,11,4,256] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={1}
})");
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  const double us = ReportNumber(dir / "r.json", "device_time_us");
  CHECK(us > 1.9);
  CHECK(us < 8.0);
}

TEST_CASE("tpusim run --check: seeded random dots whose weights have free dims on both sides of K", "[sim][dot]") {
  // x [free..., K...] against w [outer..., K..., inner] (or w first: the weights on the lhs), bf16
  // and f32, 1 or 2 dims of each kind, sizes off the tiles (3, 11, 130, 200) among them: the
  // outer dims become the batch where x is in place and small enough (BatchOuterFreeDims), else
  // the copies; either way every output within the dot's bound.
  std::mt19937 random(17);
  const auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(random));
  };
  const auto dims = [&](std::initializer_list<int64_t> values) {
    std::vector<int64_t> d(std::uniform_int_distribution<int>(1, 2)(random));
    for (int64_t& v : d) v = pick(values);
    return d;
  };
  const auto text = [](const std::vector<int64_t>& d) {
    std::string s;
    for (int64_t v : d) s += (s.empty() ? "" : ",") + std::to_string(v);
    return s;
  };
  const auto range = [](std::size_t first, std::size_t count) {
    std::vector<int64_t> r(count);
    std::iota(r.begin(), r.end(), static_cast<int64_t>(first));
    return r;
  };
  for (int t = 0; t < 8; ++t) {
    const std::vector<int64_t> free = dims({1, 3, 8, 11, 16}), k = dims({32, 64, 128, 200}), outer = dims({1, 2, 3, 4});
    const std::vector<int64_t> inner = {pick({64, 128, 130, 256})};
    const std::string type = pick({0, 1}) ? "bf16" : "f32";
    const bool weights_first = pick({0, 1});
    std::vector<int64_t> x = free, w = outer, out;
    x.insert(x.end(), k.begin(), k.end());
    w.insert(w.end(), k.begin(), k.end());
    w.insert(w.end(), inner.begin(), inner.end());
    const std::string x_k = text(range(free.size(), k.size())), w_k = text(range(outer.size(), k.size()));
    std::string dot;
    if (weights_first) {
      out = outer;
      out.insert(out.end(), inner.begin(), inner.end());
      out.insert(out.end(), free.begin(), free.end());
      dot = "dot(w, x), lhs_contracting_dims={" + w_k + "}, rhs_contracting_dims={" + x_k + "}";
    } else {
      out = free;
      out.insert(out.end(), outer.begin(), outer.end());
      out.insert(out.end(), inner.begin(), inner.end());
      dot = "dot(x, w), lhs_contracting_dims={" + x_k + "}, rhs_contracting_dims={" + w_k + "}";
    }
    const std::string hlo = "HloModule r\nENTRY e {\n  x = " + type + "[" + text(x) + "] parameter(0)\n  w = " + type + "[" +
                            text(w) + "] parameter(1)\n  ROOT d = " + type + "[" + text(out) + "] " + dot + "\n}\n";
    INFO(hlo);
    const fs::path dir = TempDir("dot_outer_random_" + std::to_string(t));
    WriteText(dir / "m.hlo", hlo);
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --seed " + std::to_string(t)),
               Catch::Contains("check passed"));
  }
}

TEST_CASE("tpusim run --check: a transpose of a dot that is a bitcast runs no kernel", "[sim][dot]") {
  // Gemma 3's key/value projection and its transpose ([2,1,256,1,11] -> [2,1,11,1,256]): with the
  // size-1 dims laid out major both are [2][256][11] in memory, so the transpose aliases the dot's
  // result (2.1 us a layer when it copied it).
  const fs::path dir = TempDir("dot_transpose_bitcast");
  WriteText(dir / "m.hlo", R"(HloModule g
ENTRY e {
  w = bf16[2,1,1152,256] parameter(0)
  x = bf16[1,11,1152] parameter(1)
  kv = bf16[2,1,256,1,11]{4,3,2,1,0} dot(w, x), lhs_contracting_dims={2}, rhs_contracting_dims={2}
  ROOT t = bf16[2,1,11,1,256]{2,1,4,3,0} transpose(kv), dimensions={0,3,4,1,2}
})");
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --seed 4"), Catch::Contains("check passed"));
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"kv"});
}

TEST_CASE("tpusim run: MaxText's attention-backward dot reads its probabilities in place", "[sim][dot]") {
  // bf16[2,8,2048,2048,1]{2,3,4,1,0} x bf16[2,2048,8,128] on tpu_v4: 1.7e10 FLOP (62 us at the
  // MXUs' 275 TFLOP/s) and 151 MB (123 us at HBM's 1228.8 GB/s). Copying the 128 MiB of
  // probabilities to the canonical [B,H,M,K] through untiled scratch took 1422.6 us; read in
  // place, 176.7 us: within issue 16's 1.5x of the HBM roofline.
  const fs::path dir = TempDir("dot_attention_backward_time");
  WriteText(dir / "m.hlo", R"(HloModule g
ENTRY e {
  a = bf16[2,8,2048,2048,1]{2,3,4,1,0} parameter(0)
  b = bf16[2,2048,8,128] parameter(1)
  ROOT d = bf16[2,8,2048,1,128] dot(a, b), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
})");
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  const double us = ReportNumber(dir / "r.json", "device_time_us");
  const double hbm_roofline_us = 150994944.0 / 1228.8e3;
  CHECK(us > hbm_roofline_us);
  CHECK(us < 1.5 * hbm_roofline_us);
}
