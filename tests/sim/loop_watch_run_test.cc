// Issue 21, item 5: a `while` that never ends faults with its pc, at the default
// --max-instructions, in --timing-only and with data, well within 60 s of wall time (each stops
// at an iteration Brent's method bounds: models/loop_watch.h); loops that end, nested ones
// included, run to their end with --check.
#include <catch2/catch.hpp>

#include <string>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

// A loop over (s32 i, f32[8,128] a): the condition is i >= 0 (or CONDITION, which may name
// `minus_one`), i's next value NEXT (which may name `one` and `two`), a doubled every iteration
// (state the loop's ending does not depend on).
std::string Loop(const std::string& next, const std::string& condition = "compare(i, zero), direction=GE") {
  return R"(HloModule loop
cond {
  s = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  zero = s32[] constant(0)
  minus_one = s32[] constant(-1)
  ROOT c = pred[] )" + condition + R"(
}
body {
  s = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  two = s32[] constant(2)
  n = s32[] )" + next + R"(
  a = f32[8,128] get-tuple-element(s), index=1
  a2 = f32[8,128] add(a, a)
  ROOT t = (s32[], f32[8,128]) tuple(n, a2)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8,128]) tuple(zero, x)
  ROOT w = (s32[], f32[8,128]) while(init), condition=cond, body=body
}
)";
}

// Runs `module` (`flags` added) within 60 s and requires the loop watch's fault.
std::string NeverEnds(const std::string& module, const std::string& flags) {
  const fs::path dir = TempDir("loop_watch");
  WriteText(dir / "m.hlo", module);
  const Result result = RunTpusimWithin("run " + (dir / "m.hlo").string() + " " + flags, 60);
  INFO(result.output);
  CHECK(result.exit_code == 1);
  return result.output;
}

}  // namespace

TEST_CASE("loop watch: a loop whose counter does not move faults at its top at iteration 1", "[run][loop_watch]") {
  // i = i * 1: the counter stays 0 while the array doubles. The pc is the loop's top (its
  // condition's first instruction), as `tpusim compile` writes it.
  for (const char* flags : {"--timing-only", ""}) {
    INFO(flags);
    const std::string out = NeverEnds(Loop("multiply(i, one)"), flags);
    CHECK_THAT(out, Catch::Matches(
        "(.|\n)*fault at pc [0-9]+ \\(`[^`]+`\\): the loop at 'w.condition' never ends: at iteration 1 the 4 bytes of "
        "state its ending depends on are as they were at iteration 0, so it would repeat iteration 0 forever(.|\n)*"));
  }
}

TEST_CASE("loop watch: a counter that toggles between 0 and 1 is caught at iteration 3", "[run][loop_watch]") {
  CHECK_THAT(NeverEnds(Loop("subtract(one, i)"), "--timing-only"),
             Catch::Contains("at iteration 3 the 4 bytes of state its ending depends on are as they were at iteration 1, "
                             "so it would repeat iterations 1 to 2 forever"));
}

TEST_CASE("loop watch: a condition that compares the counter with itself is a constant, caught at once", "[run][loop_watch]") {
  // i == i is true whatever i is (the algebraic simplifier's rule for integers): the counter may count.
  CHECK_THAT(NeverEnds(Loop("add(i, one)", "compare(i, i), direction=EQ"), "--timing-only"),
             Catch::Contains("the loop at 'w.condition' never ends: whether it ends depends on no state (its condition is "
                             "a constant), so it would repeat iteration 0 forever"));
}

TEST_CASE("loop watch: a counter whose values never end the loop faults at iteration 1, naming it", "[run][loop_watch]") {
  // i = 0, 2, 4, ... never equals -1 (it wraps through the even values only): the compiler names
  // the counter (`.loop w.condition, counter=...`), the simulator reads its start and faults at
  // once, where the state's hash would not come back for 2^31 iterations.
  const std::string module = Loop("add(i, two)", "compare(i, minus_one), direction=NE");
  const fs::path dir = TempDir("loop_watch");
  WriteText(dir / "m.hlo", module);
  const Result compiled = RunTpusimWithin("compile " + (dir / "m.hlo").string() + " -o " + (dir / "m.tpuasm").string(), 60);
  REQUIRE(compiled.exit_code == 0);
  CHECK_THAT(ReadText(dir / "m.tpuasm"),
             Catch::Matches("(.|\n)*\n\\.loop w\\.condition, counter=hbm\\[0x[0-9a-f]+\\], type=s32, step=2, while=NE, "
                            "bound=-1\n(.|\n)*"));
  for (const char* flags : {"--timing-only", ""}) {
    INFO(flags);
    CHECK_THAT(NeverEnds(module, flags),
               Catch::Matches("(.|\n)*fault at pc [0-9]+ \\(`[^`]+`\\): the loop at 'w.condition' never ends: its counter "
                              "\\(s32 at hbm\\[0x[0-9a-f]+\\]\\) is 0 as the loop starts and adds 2 each iteration, so it "
                              "takes only the values congruent to 0 modulo 2, for each of which `counter NE -1` holds(.|\n)*"));
  }
}

TEST_CASE("loop watch: loops that end run to their end, a nested one entered afresh each time", "[run][loop_watch]") {
  // The outer loop runs 3 times, the inner one 4 times from j = 0 on each: the inner loop's top
  // sees j = 0 again on every entry, which is no repetition (it was entered, not branched back to).
  const fs::path dir = TempDir("loop_watch");
  const std::string module = R"(HloModule nested
inner_cond {
  s = (s32[], f32[8,128]) parameter(0)
  j = s32[] get-tuple-element(s), index=0
  four = s32[] constant(4)
  ROOT c = pred[] compare(j, four), direction=LT
}
inner_body {
  s = (s32[], f32[8,128]) parameter(0)
  j = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j1 = s32[] add(j, one)
  a = f32[8,128] get-tuple-element(s), index=1
  half = f32[] constant(0.5)
  halves = f32[8,128] broadcast(half), dimensions={}
  a1 = f32[8,128] add(a, halves)
  ROOT t = (s32[], f32[8,128]) tuple(j1, a1)
}
outer_cond {
  s = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  three = s32[] constant(3)
  ROOT c = pred[] compare(i, three), direction=LT
}
outer_body {
  s = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f32[8,128] get-tuple-element(s), index=1
  zero = s32[] constant(0)
  init = (s32[], f32[8,128]) tuple(zero, a)
  w = (s32[], f32[8,128]) while(init), condition=inner_cond, body=inner_body
  a1 = f32[8,128] get-tuple-element(w), index=1
  ROOT t = (s32[], f32[8,128]) tuple(i1, a1)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8,128]) tuple(zero, x)
  ROOT w = (s32[], f32[8,128]) while(init), condition=outer_cond, body=outer_body
}
)";
  // --check: 12 additions of 0.5 to the random input, as the reference evaluator computes them.
  CHECK_THAT(RunModuleChecked(dir, module, "tpu_v4", 0),
             Catch::Contains("check passed: 2 output(s) within 0 ulp of the reference evaluator"));
}
