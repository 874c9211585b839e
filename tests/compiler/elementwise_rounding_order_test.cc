// The element-wise kernel's bf16 roundings (compiler/lower/elementwise_kernel.cc, EmitBody): an
// operation's interleaved copies all issue before any of their roundings, so the in-order VPU
// waits once for the operation's latency, not once per tile.
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "tests/compiler/compile_test_support.h"

TEST_CASE("element-wise kernel: a bf16 exp's copies all issue before their roundings", "[compiler][elementwise]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule m

ENTRY e {
  x = bf16[1024,1024] parameter(0)
  a = bf16[1024,1024] exponential(x)
  ROOT b = bf16[1024,1024] multiply(a, x)
}
)", "test.hlo");
  const std::string text = tpusim::compiler::Compile(*module, tpusim::compiler_test::SmallTargetOptions()).assembly;
  // The loop body's operations in order, from the first vexp.
  std::vector<std::string> ops;
  const std::regex op(R"(\n  (vexp\.f32|vcvt\.bf16\.f32|vmul\.f32) )");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), op); it != std::sregex_iterator(); ++it) {
    ops.push_back((*it)[1]);
  }
  REQUIRE(ops.size() >= 4);
  std::size_t exps = 0;
  while (exps < ops.size() && ops[exps] == "vexp.f32") ++exps;
  INFO("copies " << exps);
  CHECK(exps >= 2);  // several tiles interleaved
  // Then exactly as many roundings, then the multiplies.
  for (std::size_t i = exps; i < 2 * exps; ++i) CHECK(ops.at(i) == "vcvt.bf16.f32");
  CHECK(ops.at(2 * exps) == "vmul.f32");
}
