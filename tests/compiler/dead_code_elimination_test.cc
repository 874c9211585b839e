// XLA's HloDCE (compiler/passes/dead_code_elimination.h): HLO in, HLO out; and through `tpusim
// run`, values nothing reads are no kernels.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/dead_code_elimination.h"
#include "tests/sim/exec_support.h"

namespace {

std::string WithoutDeadCode(const std::string& text, std::size_t expected_removed) {
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  CHECK(tpusim::compiler::EliminateDeadCode(*module) == expected_removed);
  tpusim::hlo::Verify(*module);
  return tpusim::hlo::ToString(*module);
}

}  // namespace

TEST_CASE("dce: values nothing reads go, and what only they read, while parameters and the root stay", "[compiler][dce]") {
  // a and its reader b are dead (b is read by nothing, a only by b); c is the root; y is a
  // parameter nothing reads, which stays (the signature does not change).
  CHECK(WithoutDeadCode(R"(HloModule d

ENTRY e {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  a = f32[8] negate(x)
  b = f32[8] multiply(a, a)
  ROOT c = f32[8] add(x, x)
}
)", 2) == R"(HloModule d

ENTRY e (x: f32[8], y: f32[8]) -> f32[8] {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  ROOT c = f32[8] add(x, x)
}
)");
}

TEST_CASE("dce: side effects stay: a marked custom-call, a channelled all-reduce, a loop whose body has one", "[compiler][dce]") {
  const std::string text = R"(HloModule d

add {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}

body {
  b = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(b), channel_id=1, replica_groups={}, to_apply=add
}

cond {
  c = f32[8] parameter(0)
  ROOT f = pred[] constant(false)
}

ENTRY e {
  x = f32[8] parameter(0)
  k = f32[8] custom-call(x), custom_call_target="log", custom_call_has_side_effect=true
  a = f32[8] all-reduce(x), channel_id=2, replica_groups={}, to_apply=add
  w = f32[8] while(x), condition=cond, body=body
  n = f32[8] all-reduce(x), replica_groups={}, to_apply=add
  ROOT c = f32[8] add(x, x)
}
)";
  // Only n goes: an all-reduce without a channel has no side effect (XLA's rule).
  const std::string out = WithoutDeadCode(text, 1);
  CHECK_THAT(out, Catch::Contains("k = f32[8] custom-call(x)"));
  CHECK_THAT(out, Catch::Contains("a = f32[8] all-reduce(x), channel_id=2"));
  CHECK_THAT(out, Catch::Contains("w = f32[8] while(x)"));
  CHECK_THAT(out, !Catch::Contains("n = f32[8]"));
}

TEST_CASE("dce: an instruction named in another's control-predecessors stays", "[compiler][dce]") {
  const std::string out = WithoutDeadCode(R"(HloModule d

ENTRY e {
  x = f32[8] parameter(0)
  a = f32[8] negate(x)
  b = f32[8] negate(x)
  ROOT c = f32[8] add(x, x), control-predecessors={a}
}
)", 1);
  CHECK_THAT(out, Catch::Contains("a = f32[8] negate(x)"));
  CHECK_THAT(out, !Catch::Contains("b = f32[8]"));
}

TEST_CASE("dce: a chain's values that nothing reads are no kernels in `tpusim run`", "[compiler][dce][run]") {
  // v1 and v2 are read by nothing: before the pass each was a kernel that wrote its 10.6 MB
  // result to HBM (4 kernels, 74.9 us); now one kernel, at its HBM roofline.
  using namespace tpusim::exec_test;
  const fs::path dir = TempDir("dce_run");
  WriteText(dir / "m.hlo", R"(HloModule m
ENTRY e {
  p = f32[860,3086] parameter(0)
  v0 = f32[860,3086] negate(p)
  v1 = f32[860,3086] multiply(v0, v0)
  v2 = f32[860,3086] abs(p)
  ROOT v3 = f32[860,3086] subtract(v0, p)
}
)");
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"v3"});
}
