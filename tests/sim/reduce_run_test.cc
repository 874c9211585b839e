// End-to-end runs of the reduce kernel through the built binary: `tpusim run --check` against the
// reference evaluator for every way the reduced dims can fall on tiles (whole tiles, lanes,
// sublanes, both; major dims kept and reduced; partial tiles; rank 1 to scalar), for each op and
// type, and results compared with values computed here from first principles.
#include <catch2/catch.hpp>


#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "isa/npy.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

// A module whose root reduces x (TYPE[DIMS]) over REDUCED with op(a, b) from init INIT.
std::string ReduceModule(const std::string& type, const std::string& dims, const std::string& reduced,
                         const std::string& out_dims, const std::string& op, const std::string& init) {
  return "HloModule r\nreducer {\n  a = " + type + "[] parameter(0)\n  b = " + type +
         "[] parameter(1)\n  ROOT c = " + type + "[] " + op + "(a, b)\n}\nENTRY e {\n  x = " + type + "[" + dims +
         "] parameter(0)\n  i = " + type + "[] constant(" + init + ")\n  ROOT y = " + type + "[" + out_dims +
         "] reduce(x, i), dimensions={" + reduced + "}, to_apply=reducer\n}\n";
}

fs::path WriteModule(const fs::path& dir, const std::string& text) {
  const fs::path path = dir / "module.hlo";
  std::ofstream(path) << text;
  return path;
}

struct Case {
  const char* name;
  const char* type;
  const char* dims;
  const char* reduced;
  const char* out_dims;
  const char* op;
  const char* init;
};

// The fraction of the chip's HBM bandwidth `module` moves its bytes at on tpu_v4 (timing-only),
// its report written to `report`.
double HbmFraction(const fs::path& module, const fs::path& report) {
  RunOk("run " + module.string() + " --timing-only --report " + report.string());
  const double seconds = ReportNumber(report, "device_time_us") * 1e-6;
  return ReportNumber(report, "bytes_accessed") / seconds / ReportNumber(report, "hbm_bytes_per_s");
}

}  // namespace

TEST_CASE("tpusim run --check: reduce over every placement of the reduced dims", "[sim][reduce]") {
  // Shapes with partial tiles (rows not a multiple of 8, columns not of 128) so padding must stay
  // out of every fold and zero in every result; inits other than the identity so the init is
  // applied exactly once.
  const Case cases[] = {
      {"lanes_add_f32", "f32", "2,20,300", "2", "2,20", "add", "0.5"},
      {"lanes_max_f32", "f32", "3,13,200", "2", "3,13", "maximum", "-inf"},
      {"lanes_add_bf16", "bf16", "1,100,1024", "2", "1,100", "add", "0"},
      {"lanes_add_s32", "s32", "4,9,150", "2", "4,9", "add", "3"},
      {"lanes_min_u32", "u32", "2,9,150", "2", "2,9", "minimum", "100"},
      {"lanes_major_add_f32", "f32", "4,16,256", "0,2", "16", "add", "0"},
      {"rows_add_f32", "f32", "2,20,300", "1", "2,300", "add", "1.5"},
      {"rows_max_bf16", "bf16", "3,13,200", "1", "3,200", "maximum", "-inf"},
      {"rows_and_s32", "s32", "2,20,130", "1", "2,130", "and", "-1"},
      {"rows_major_max_u32", "u32", "5,6,20,130", "0,2", "6,130", "maximum", "0"},
      {"both_add_f32", "f32", "3,13,200", "1,2", "3", "add", "0"},
      {"both_min_f32", "f32", "3,13,200", "1,2", "3", "minimum", "inf"},
      {"all_add_f32", "f32", "3,13,200", "0,1,2", "", "add", "0"},
      {"all_xor_s32", "s32", "3,13,200", "0,1,2", "", "xor", "0"},
      // Many matrices into one result element: one running fold over them (reduce_kernel.cc's
      // FoldsOnly strips, looped), across blocks; masked ops (max) fold strip by strip.
      {"all_add_f32_many_matrices", "f32", "300,3,8,128", "0,1,2,3", "", "add", "0"},
      {"outer_add_f32_many_matrices", "f32", "40,30,8,128", "1,2,3", "40", "add", "0.5"},
      {"outer_min_bf16_many_matrices", "bf16", "6,20,16,256", "1,2,3", "6", "minimum", "inf"},
      {"all_max_f32_partial_matrices", "f32", "50,7,13,200", "0,1,2,3", "", "maximum", "-inf"},
      // Lane folds over enough blocks that pairs of blocks are a loop (reduce_kernel.cc's
      // EmitBlocks), with the result row's address in a register: odd strips per matrix, a
      // partial last group of strips, kept major dims on the result's rows and above them, a
      // reduced major dim (each matrix's rows fold into the same result rows again).
      {"lanes_max_f32_looped_reduced_major", "f32", "3,5,300,200", "0,3", "5,300", "maximum", "-inf"},
      {"lanes_add_f32_looped", "f32", "9,100,1000", "2", "9,100", "add", "0.5"},
      {"lanes_add_s32_looped_two_kept", "s32", "3,11,100,300", "3", "3,11,100", "add", "-2"},
      {"lanes_add_bf16_looped", "bf16", "40,100,640", "2", "40,100", "add", "0"},
      // Lane folds in groups of strips (reduce_kernel.cc's EmitLaneGroups: 8 strips where a
      // matrix's strips and a result row's 16 are multiples of 8, else 4), each strip's sums
      // selected into its lane block of the result row: 16 strips per matrix (two groups per
      // row), 8 (a matrix ends mid-row) with partial rows and lanes, the butterfly (multiply,
      // and) instead of vredb, two tiles per strip, bf16, and groups of 4 over a reduced major dim.
      {"lanes_add_f32_groups", "f32", "12,128,128", "2", "12,128", "add", "0.5"},
      {"lanes_max_f32_groups_partial", "f32", "12,60,100", "2", "12,60", "maximum", "-inf"},
      {"lanes_multiply_f32_groups", "f32", "4,64,200", "2", "4,64", "multiply", "1"},
      {"lanes_and_s32_groups", "s32", "4,64,256", "2", "4,64", "and", "-1"},
      {"lanes_add_bf16_groups", "bf16", "3,128,300", "2", "3,128", "add", "0"},
      {"lanes_major_add_f32_groups_of_4", "f32", "4,32,256", "0,2", "32", "add", "0.5"},
      {"major_add_f32", "f32", "3,13,200", "0", "13,200", "add", "0.25"},
      {"major_multiply_f32", "f32", "3,13,200", "0", "13,200", "multiply", "1"},
      {"none_max_f32", "f32", "3,13,200", "", "3,13,200", "maximum", "0"},
      {"rank1_add_f32", "f32", "1000", "0", "", "add", "0.25"},
      {"rank1_max_bf16", "bf16", "3000", "0", "", "maximum", "-inf"},
      {"rank1_none_add_s32", "s32", "3000", "", "3000", "add", "7"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const fs::path dir = TempDir(c.name);
    const fs::path module = WriteModule(dir, ReduceModule(c.type, c.dims, c.reduced, c.out_dims, c.op, c.init));
    const std::string output = RunOk("run " + module.string() + " --check --seed 3");
    CHECK_THAT(output, Catch::Contains("check passed"));
  }
}

TEST_CASE("reduce sums s32 rows and finds f32 maxima exactly", "[sim][reduce]") {
  // x[m, r, c] = m * 1000 + r * 7 + c, s32, [2, 11, 200]: the sum over c of row (m, r) from init 5
  // is 5 + 200 * (m * 1000 + r * 7) + 199 * 200 / 2.
  const fs::path dir = TempDir("exact");
  std::vector<int32_t> x(2 * 11 * 200);
  for (int m = 0; m < 2; ++m) {
    for (int r = 0; r < 11; ++r) {
      for (int c = 0; c < 200; ++c) x[(m * 11 + r) * 200 + c] = m * 1000 + r * 7 + c;
    }
  }
  const std::vector<int64_t> dims = {2, 11, 200};
  std::vector<uint8_t> bytes(x.size() * 4);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  tpusim::isa::WriteNpy((dir / "x.npy").string(), ElementType::kS32, dims, bytes);
  const fs::path module = WriteModule(dir, ReduceModule("s32", "2,11,200", "2", "2,11", "add", "5"));
  RunOk("run " + module.string() + " --input 0=" + (dir / "x.npy").string() + " --out " +
        (dir / "out").string());
  const tpusim::isa::NpyArray out = tpusim::isa::ReadNpy((dir / "out" / "output_0.npy").string(), ElementType::kS32);
  REQUIRE(out.dims == std::vector<int64_t>{2, 11});
  for (int m = 0; m < 2; ++m) {
    for (int r = 0; r < 11; ++r) {
      int32_t got = 0;
      std::memcpy(&got, out.data.data() + (m * 11 + r) * 4, 4);
      CHECK(got == 5 + 200 * (m * 1000 + r * 7) + 199 * 200 / 2);
    }
  }

  // Maxima over rows of negative values: y[c] = max over r of -(r + 1) * (c + 1) = -(c + 1), so
  // zero padding (which is larger than every element) must not leak into the result.
  std::vector<float> v(13 * 130);
  for (int r = 0; r < 13; ++r) {
    for (int c = 0; c < 130; ++c) v[r * 130 + c] = -static_cast<float>((r + 1) * (c + 1));
  }
  std::vector<uint8_t> vbytes(v.size() * 4);
  std::memcpy(vbytes.data(), v.data(), vbytes.size());
  const std::vector<int64_t> vdims = {13, 130};
  tpusim::isa::WriteNpy((dir / "v.npy").string(), ElementType::kF32, vdims, vbytes);
  const fs::path max_module = dir / "max.hlo";
  std::ofstream(max_module) << ReduceModule("f32", "13,130", "0", "130", "maximum", "-inf");
  RunOk("run " + max_module.string() + " --input 0=" + (dir / "v.npy").string() +
        " --out " + (dir / "max_out").string());
  const tpusim::isa::NpyArray maxima =
      tpusim::isa::ReadNpy((dir / "max_out" / "output_0.npy").string(), ElementType::kF32);
  REQUIRE(maxima.dims == std::vector<int64_t>{130});
  for (int c = 0; c < 130; ++c) {
    float got = 0;
    std::memcpy(&got, maxima.data.data() + c * 4, 4);
    CHECK(got == -static_cast<float>(c + 1));
  }
}

TEST_CASE("tpusim run --check passes on the sum workload and states the reduce bound", "[sim][reduce]") {
  const fs::path workload = fs::path(TPUSIM_SHARED_DIR) / "workloads/xla/sum_axis_1x4096x1024_bf16.hlo";
  const std::string output = RunOk("run " + workload.string() + " --check");
  // A float add-reduce adds in f32 in its own order: 2n ulps of its f32 result for n = 1024
  // elements per sum (the accumulation the compiled module states, sim/output_check.cc, SumBound),
  // which the workload's bf16 output allows as 1 + 2048 / 2^16 of its ulps (UlpsFor). Rounded to
  // bf16, every element is equal.
  CHECK_THAT(output, Catch::Contains("within 2 ulp of the reference evaluator (float add-reduce 'reduce_sum.7' of 1024 "
                                     "elements adds in f32"));
  CHECK_THAT(output, Catch::Contains("every element equal"));
}

TEST_CASE("an f32 sum over lanes, split over both TensorCores, streams at more than 80% of the chip's HBM bandwidth",
          "[sim][reduce][timing]") {
  // f32[1,4096,1024] summed over its 1024 lanes: 16.8 MB in, 16 KB out. Plain f32 adds and the
  // cross-lane unit's vredb.add.f32 in groups of 8 strips, as the hardware's, the 4096 rows split
  // over tpu_v4's two TensorCores (2048 each, 256 strips: 32 groups, 288 cross-lane operations
  // each): 15.5 us, 88% of the chip's HBM. On core 0 alone 26.4 us (52%); in strip pairs, waiting
  // on vred, vxpose and vrot each, 47.3 us (29%); with compensated TwoSum sums, six adds per add,
  // 157.5 us (9%).
  const fs::path dir = TempDir("reduce_sum_rate");
  const fs::path module = WriteModule(dir, ReduceModule("f32", "1,4096,1024", "2", "1,4096", "add", "0"));
  const double fraction = HbmFraction(module, dir / "r.json");
  INFO("HBM bandwidth fraction " << fraction);
  CHECK(fraction >= 0.8);
  CHECK(fraction <= 1.0);
  const std::string report = ReadText(dir / "r.json");
  for (const char* core : {"\"index\": 0", "\"index\": 1"}) {
    INFO(core);
    const std::size_t at = report.find(core, report.find("\"tensor_cores\""));
    REQUIRE(at != std::string::npos);
    CHECK(JsonNumber(report, "operations", report.find("\"cross-lane\"", at)) == 288);
  }
}

TEST_CASE("a bf16 sum widened to f32 reads its bf16 operand and streams at more than 65% of the chip's HBM bandwidth",
          "[sim][reduce][timing]") {
  // The sum workload: reduce(convert(bf16[1,4096,1024] -> f32)) over the lanes, 8.4 MB in. Fused,
  // the convert wrote each block to VMEM as f32 and the fold read it back: 2 + 4 + 4 bytes of
  // VMEM traffic per element at VMEM's 1074.8 GB/s, 21.9 us (38% of HBM). Read as bf16 and
  // widened as each tile loads: 10.8 us; each tile's loads ahead of the tile before's fold: 9.5 us
  // (72%). What is left is each group's fold across lanes (8 cross-lane reductions, selects and
  // a transpose per 8 strips) and the first load and last fold.
  const fs::path workload = fs::path(TPUSIM_SHARED_DIR) / "workloads/xla/sum_axis_1x4096x1024_bf16.hlo";
  const double fraction = HbmFraction(workload, TempDir("reduce_widened_rate") / "r.json");
  INFO("HBM bandwidth fraction " << fraction);
  CHECK(fraction >= 0.65);
  CHECK(fraction <= 1.0);
}

TEST_CASE("a reduce's constant init is broadcast from its bits, a parameter init read from HBM", "[sim][reduce]") {
  // Every reduce XLA writes starts from a constant (0, -inf): the kernel broadcasts its bits, where
  // a round trip to HBM for it came before the first block's DMA (0.3 us on tpu_v4). An init that
  // is a parameter still goes HBM -> SMEM. Both exact against the evaluator.
  const fs::path dir = TempDir("reduce_init");
  const fs::path constant = dir / "constant.hlo";
  WriteText(constant, ReduceModule("f32", "64,300", "1", "64", "maximum", "-inf"));
  RunOk("compile " + constant.string() + " --config tpu_v4 --output " + (dir / "constant.s").string());
  const std::string text = ReadText(dir / "constant.s");
  CHECK(text.find("-> smem") == std::string::npos);
  CHECK(text.find("vbcast v29, 4286578688") != std::string::npos);  // 0xff800000, -inf, the init register
  CHECK_THAT(RunOk("run " + constant.string() + " --check --config tpu_v4"), Catch::Contains("check passed"));
  const fs::path parameter = dir / "parameter.hlo";
  WriteText(parameter,
            "HloModule r\nreducer {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
            "ENTRY e {\n  x = f32[64,300] parameter(0)\n  i = f32[] parameter(1)\n"
            "  ROOT y = f32[64] reduce(x, i), dimensions={1}, to_apply=reducer\n}\n");
  RunOk("compile " + parameter.string() + " --config tpu_v4 --output " + (dir / "parameter.s").string());
  CHECK(ReadText(dir / "parameter.s").find("-> smem") != std::string::npos);
  CHECK_THAT(RunOk("run " + parameter.string() + " --check --config tpu_v4"), Catch::Contains("check passed"));
}

TEST_CASE("a fused lane fold has its producer fold each strip's tiles in registers", "[sim][reduce]") {
  // reduce(f(x)) over the lanes, f element-wise: the producer folds the tiles of each strip (S rows)
  // into one f32 tile as it computes them and hands the fold that tile alone, where each tile was
  // stored to VMEM, loaded back and folded. Sums with and without padding lanes and rows (the
  // producer's padding zeroed), one whose strips span the producer's bodies (40 tiles a strip),
  // a bf16 producer widened for the sum, and a maximum (no padding lanes: 0 is not its identity):
  // all pass --check, and the producer's fold shows in the code as the strips' stores.
  const fs::path dir = TempDir("reduce_strip_fold");
  const auto module = [](const std::string& type, const std::string& rows, const std::string& cols,
                         const std::string& op, const std::string& init) {
    const bool bf16 = type == "bf16";
    return "HloModule r\nreducer {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] " + op +
           "(a, b)\n}\nENTRY e {\n  x = " + type + "[" + rows + "," + cols + "] parameter(0)\n  m = " + type + "[" + rows +
           "] parameter(1)\n  mb = " + type + "[" + rows + "," + cols + "] broadcast(m), dimensions={0}\n  d = " + type +
           "[" + rows + "," + cols + "] subtract(x, mb)\n  s = " + type + "[" + rows + "," + cols + "] multiply(d, d)\n" +
           (bf16 ? "  w = f32[" + rows + "," + cols + "] convert(s)\n" : "") + "  i = f32[] constant(" + init +
           ")\n  ROOT y = f32[" + rows + "] reduce(" + (bf16 ? "w" : "s") + ", i), dimensions={1}, to_apply=reducer\n}\n";
  };
  struct FoldCase {
    const char* name;
    std::string text;
    int64_t strips;  // strips of the produced array: each stores its folded tile once
  };
  const std::vector<FoldCase> cases = {
      {"f32 sum", module("f32", "64", "768", "add", "0"), 8},
      {"f32 sum, padding lanes and rows", module("f32", "61", "700", "add", "0"), 8},
      {"f32 sum, strips over bodies", module("f32", "16", "5120", "add", "0"), 2},
      {"bf16 sum", module("bf16", "128", "768", "add", "0"), 16},
      {"f32 maximum", module("f32", "40", "512", "maximum", "-inf"), 5},
  };
  for (const FoldCase& c : cases) {
    INFO(c.name);
    const fs::path hlo = dir / (std::string(c.name) + ".hlo");
    const fs::path assembly = dir / (std::string(c.name) + ".s");
    WriteText(hlo, c.text);
    RunOk("compile \"" + hlo.string() + "\" --config tpu_v4 --output \"" + assembly.string() + "\"");
    const std::string text = ReadText(assembly);
    int64_t fold_stores = 0;
    for (std::size_t at = text.find("vmem[s30 + "); at != std::string::npos; at = text.find("vmem[s30 + ", at + 1)) {
      ++fold_stores;
    }
    CHECK(fold_stores >= 1);
    CHECK(fold_stores <= c.strips);
    CHECK_THAT(RunOk("run \"" + hlo.string() + "\" --check --config tpu_v4"), Catch::Contains("check passed"));
  }
  // A layer norm's variance, (x - mean)^2 in bf16 summed over rows of 768 (the workload's
  // reduce_sum.15): 16.0 us when each tile went through VMEM, 12.4 us folded in registers.
  WriteText(dir / "variance.hlo", module("bf16", "4096", "768", "add", "0"));
  RunOk("run " + (dir / "variance.hlo").string() + " --timing-only --report " + (dir / "variance.json").string());
  CHECK(ReportNumber(dir / "variance.json", "device_time_us") < 13.0);
}
