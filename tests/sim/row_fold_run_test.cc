// Row folds run end to end (compiler/passes/elementwise_fusion.h, ExprNode::kRowFold in
// compiler/lower/elementwise_kernel.cc): a softmax and a layer norm each run as one kernel whose
// values `--check` compares with the reference evaluator (rows that end in padding lanes too), and
// rows the kernel cannot fold (longer than a body) fall back to reduce kernels, still checked.
#include <catch2/catch.hpp>

#include <string>

#include "tests/compiler/row_fold_modules.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

const char* const kReducers = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
)";

// Softmax over the rows of f32[R, C]: exp(x - max) / sum.
std::string Softmax(int rows, int columns) {
  const std::string shape = "f32[" + std::to_string(rows) + "," + std::to_string(columns) + "]";
  const std::string row = "f32[" + std::to_string(rows) + "]";
  return std::string(kReducers) + "ENTRY e {\n  x = " + shape + " parameter(0)\n" +
         "  lo = f32[] constant(-inf)\n  mx = " + row + " reduce(x, lo), dimensions={1}, to_apply=max\n" +
         "  mb = " + shape + " broadcast(mx), dimensions={0}\n  d = " + shape + " subtract(x, mb)\n" +
         "  ex = " + shape + " exponential(d)\n  z = f32[] constant(0)\n" +
         "  s = " + row + " reduce(ex, z), dimensions={1}, to_apply=add\n" +
         "  sb = " + shape + " broadcast(s), dimensions={0}\n  ROOT r = " + shape + " divide(ex, sb)\n}\n";
}

std::vector<std::string> RunSoftmax(const std::string& name, int rows, int columns) {
  const fs::path dir = TempDir(name);
  WriteText(dir / "m.hlo", Softmax(rows, columns));
  const std::string output =
      RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  return KernelNames(dir / "r.json");
}

}  // namespace

TEST_CASE("row folds: a softmax over rows of 512 is one kernel, its maximum and sum folded in it, checked",
          "[row_fold]") {
  // 4 tiles a strip: the maximum's fold waits for all four, the exponentials then feed the sum's.
  CHECK(RunSoftmax("row_fold_softmax", 256, 512) == std::vector<std::string>{"r"});
}

TEST_CASE("row folds: a softmax masked by a pred array is one kernel, its mask loaded in the scheduled body",
          "[row_fold]") {
  // A causal or padding mask arrives as pred bytes (Gemma 3's attention): x where m, else -inf.
  // The mask's load and widening to a mask register are steps of the scheduled body, so the
  // maximum and the sum fold in the divide's kernel (before: the body was phased, which cannot
  // fold rows: four kernels, 4.709 us; now one, 1.296 us). Rows of 300: a partial second tile.
  for (const int columns : {256, 300}) {
    INFO(columns);
    const std::string shape = "f32[64," + std::to_string(columns) + "]";
    const std::string module =
        std::string(kReducers) + "ENTRY e {\n  x = " + shape + " parameter(0)\n  m = pred[64," + std::to_string(columns) +
        "] parameter(1)\n  lo = f32[] constant(-inf)\n  lob = " + shape + " broadcast(lo), dimensions={}\n" +
        "  xm = " + shape + " select(m, x, lob)\n  mx = f32[64] reduce(xm, lo), dimensions={1}, to_apply=max\n" +
        "  mb = " + shape + " broadcast(mx), dimensions={0}\n  d = " + shape + " subtract(xm, mb)\n" +
        "  ex = " + shape + " exponential(d)\n  z = f32[] constant(0)\n" +
        "  s = f32[64] reduce(ex, z), dimensions={1}, to_apply=add\n" +
        "  sb = " + shape + " broadcast(s), dimensions={0}\n  ROOT r = " + shape + " divide(ex, sb)\n}\n";
    const fs::path dir = TempDir("row_fold_masked");
    WriteText(dir / "m.hlo", module);
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string()),
               Catch::Contains("check passed"));
    CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"r"});
  }
}

TEST_CASE("row folds: rows that end in padding lanes fold them as the identity, checked", "[row_fold]") {
  // 100 columns (one tile, 28 padding lanes), 11 (Gemma's attention over 11 keys: 117 padding
  // lanes, where the exponential of stale bytes may be anything) and 200 (two tiles, the second
  // with 56): the last tile's padding lanes fold as -inf for the maximum and +0 for the sum, so
  // each softmax is one kernel and equal to the evaluator's within the sum's bound (before: the
  // maximum, the exponential, the sum and the divide, four kernels).
  CHECK(RunSoftmax("row_fold_padding", 64, 100) == std::vector<std::string>{"r"});
  CHECK(RunSoftmax("row_fold_keys", 44, 11) == std::vector<std::string>{"r"});
  CHECK(RunSoftmax("row_fold_two_tiles", 40, 200) == std::vector<std::string>{"r"});
}

TEST_CASE("row folds: rows longer than a body go to reduce kernels, checked", "[row_fold]") {
  // 65 tiles a strip: more than a scheduled body holds, so the fusion pass asks the kernel, which
  // refuses, and the reduces keep kernels of their own (as before row folds: the exponential,
  // read by two of them and not duplicated, too).
  CHECK(RunSoftmax("row_fold_long", 8, 65 * 128) == std::vector<std::string>{"mx", "ex", "s", "r"});
}

TEST_CASE("row folds: a layer norm in bf16 is one kernel, its values equal to the evaluator's", "[row_fold]") {
  // The shared workload's form at 64 rows: mean, variance of x - mean, (x - mean) / sqrt(var +
  // eps), with bf16 roundings between. The folds add a strip's tiles in order and then across
  // lanes, as the reduce kernel does, so the output is the one reduce kernels give.
  const fs::path dir = TempDir("row_fold_layer_norm");
  WriteText(dir / "m.hlo", tpusim::row_fold_test::LayerNorm("", "bf16[64,768] divide(d, sd)"));
  const std::string output =
      RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  CHECK_THAT(output, Catch::Contains("every element equal"));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"r"});
  // One square root a strip (64 rows: 8 strips), not one a tile (48).
  const std::string report = ReadText(dir / "r.json");
  double square_roots = 0;
  for (std::size_t at = report.find("\"transcendental\""); at != std::string::npos;
       at = report.find("\"transcendental\"", at + 1)) {
    square_roots += JsonNumber(report, "operations", at);
  }
  CHECK(square_roots == 8);
  // x's f32 view (a convert) shares x's register, which the subtractions read again: no copy.
  RunOk("compile " + (dir / "m.hlo").string() + " -o " + (dir / "m.s").string());
  CHECK(ReadText(dir / "m.s").find("vmov") == std::string::npos);
}

TEST_CASE("row folds: a bf16 sum is rounded once, a bf16 maximum not at all", "[row_fold]") {
  // y = x - max + sum over bf16 rows of 256 (2 tiles): the reduces in bf16, as JAX writes them
  // for bf16 arrays; the fold adds in f32 and rounds the sum to bf16 once, as the reduce kernel.
  const fs::path dir = TempDir("row_fold_bf16");
  WriteText(dir / "m.hlo", R"(HloModule m
add {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(a, b)
}
max {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] maximum(a, b)
}
ENTRY e {
  x = bf16[1,32,256] parameter(0)
  lo = bf16[] constant(-inf)
  mx = bf16[1,32] reduce(x, lo), dimensions={2}, to_apply=max
  z = bf16[] constant(0)
  s = bf16[1,32] reduce(x, z), dimensions={2}, to_apply=add
  mb = bf16[1,32,256] broadcast(mx), dimensions={0,1}
  sb = bf16[1,32,256] broadcast(s), dimensions={0,1}
  d = bf16[1,32,256] subtract(x, mb)
  ROOT r = bf16[1,32,256] add(d, sb)
}
)");
  const std::string output =
      RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"r"});
}

TEST_CASE("row folds: a minimum over rows that end in padding lanes folds them as +inf", "[row_fold]") {
  // x - min(x) over 130 columns (the second tile's 126 padding lanes): one kernel, every element
  // equal to the evaluator's (a minimum rounds nothing).
  const CheckedRun run = RunCheckedWithReport("row_fold_min", R"(HloModule m
min {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] minimum(a, b)
}
ENTRY e {
  x = f32[24,130] parameter(0)
  hi = f32[] constant(inf)
  mn = f32[24] reduce(x, hi), dimensions={1}, to_apply=min
  mb = f32[24,130] broadcast(mn), dimensions={0}
  ROOT r = f32[24,130] subtract(x, mb)
}
)");
  CHECK_THAT(run.output, Catch::Contains("every element equal"));
  CHECK(run.ops == std::vector<std::string>{"r"});
}
