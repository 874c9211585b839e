// A row statistic's chain in its consumer's kernel (compiler/passes/lane_broadcast_sinking.h and
// the strip-shared operations of compiler/lower/elementwise_kernel.cc), run end to end on tpu_v4.
#include <catch2/catch.hpp>

#include <string>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

}  // namespace

TEST_CASE("lane-broadcast chain: 1/sqrt of a row mean runs in the consumer, once per strip, its values checked",
          "[lane_broadcast_sinking]") {
  // y = x / bf16(sqrt(|mean(x)| + 1)) over bf16[512,1024]: the divide by 1024, abs, add, sqrt
  // and convert run in the divide's kernel, where they were a kernel of their own (and so, now,
  // do the row sums). A strip is 8 rows of 1024 lanes (8 tiles): its tiles share the chain,
  // computed by its first, so the chip's transcendental unit runs 512 / 8 = 64 square roots, one
  // a strip; computed per tile it would be 512 x 1024 / 1024 = 512.
  const fs::path dir = TempDir("lane_broadcast_chain");
  WriteText(dir / "m.hlo", R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = bf16[512,1024] parameter(0)
  xf = f32[512,1024] convert(x)
  z = f32[] constant(0)
  s = f32[512] reduce(xf, z), dimensions={1}, to_apply=add
  n = f32[] constant(1024)
  nb = f32[512] broadcast(n), dimensions={}
  m = f32[512] divide(s, nb)
  am = f32[512] abs(m)
  one = f32[] constant(1)
  ob = f32[512] broadcast(one), dimensions={}
  a = f32[512] add(am, ob)
  q = f32[512] sqrt(a)
  c = bf16[512] convert(q)
  w = bf16[512,1024] broadcast(c), dimensions={0}
  ROOT d = bf16[512,1024] divide(x, w)
}
)");
  const std::string output =
      RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  const std::string report = ReadText(dir / "r.json");
  // The divide alone: the chain is no kernel of its own, and the row sum is folded in the
  // divide's kernel too (a row fold, tests/sim/row_fold_run_test.cc).
  CHECK(report.find("\"name\": \"s\"") == std::string::npos);
  CHECK(report.find("\"name\": \"d\"") != std::string::npos);
  CHECK(report.find("\"name\": \"c\"") == std::string::npos);
  CHECK(report.find("\"name\": \"q\"") == std::string::npos);
  double square_roots = 0;
  for (std::size_t at = report.find("\"transcendental\""); at != std::string::npos;
       at = report.find("\"transcendental\"", at + 1)) {
    square_roots += JsonNumber(report, "operations", at);
  }
  CHECK(square_roots == 64);
}
