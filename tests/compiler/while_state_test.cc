// Issue 21, item 5: which leaves of a while loop's state decide whether it ends
// (compiler/lower/while_state.h), and the `.loop` lines the compiler writes for the simulator's
// loop watch (models/loop_watch.h).
#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "compiler/lower/while_state.h"
#include "tests/compiler/compile_test_support.h"

using namespace tpusim;

namespace {

// A loop over (s32 i, s32 j, f32[8,128] a, (s32 k, f32[8,128] b)): CONDITION is the condition's
// root, reading the parameter `s`; BODY the body's instructions and root, also reading `s`.
std::unique_ptr<hlo::Module> LoopModule(const std::string& condition, const std::string& body) {
  const std::string state = "(s32[], s32[], f32[8,128], (s32[], f32[8,128]))";
  const std::string text = "HloModule w\ncond {\n  s = " + state + " parameter(0)\n" + condition + "\n}\nbody {\n  s = " + state +
                           " parameter(0)\n" + body + "\n}\nENTRY e {\n  x = " + state + " parameter(0)\n  ROOT w = " + state +
                           " while(x), condition=cond, body=body\n}\n";
  return hlo::ParseModule(text, "w.hlo");
}

std::vector<std::size_t> EndingLeaves(const std::string& condition, const std::string& body) {
  return compiler::WhileEndingLeaves(*LoopModule(condition, body)->entry()->root());
}

std::optional<compiler::WhileCounter> Counter(const std::string& condition, const std::string& body) {
  return compiler::FindWhileCounter(*LoopModule(condition, body)->entry()->root());
}

const std::string kGets = R"(  i = s32[] get-tuple-element(s), index=0
  j = s32[] get-tuple-element(s), index=1
  a = f32[8,128] get-tuple-element(s), index=2
  n = (s32[], f32[8,128]) get-tuple-element(s), index=3
  k = s32[] get-tuple-element(n), index=0
  b = f32[8,128] get-tuple-element(n), index=1)";

}  // namespace

TEST_CASE("while state: the condition's leaves, closed under what the body computes them from", "[compiler][while_state]") {
  // Leaves in flattening order: i 0, j 1, a 2, k 3, b 4.
  const std::string i_less_than_ten = kGets + "\n  ten = s32[] constant(10)\n  ROOT c = pred[] compare(i, ten), direction=LT";
  // i counts up by itself: only i decides; a, b, j and k change as they like.
  CHECK(EndingLeaves(i_less_than_ten, kGets + R"(
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  j1 = s32[] add(j, one)
  a1 = f32[8,128] add(a, b)
  t = (s32[], f32[8,128]) tuple(k, b)
  ROOT r = (s32[], s32[], f32[8,128], (s32[], f32[8,128])) tuple(i1, j1, a1, t))") == std::vector<std::size_t>{0});
  // i's next value comes from j, j's from the nested k: i, j and k decide, not the arrays.
  CHECK(EndingLeaves(i_less_than_ten, kGets + R"(
  t = (s32[], f32[8,128]) tuple(k, b)
  ROOT r = (s32[], s32[], f32[8,128], (s32[], f32[8,128])) tuple(j, k, a, t))") == std::vector<std::size_t>{0, 1, 3});
  // k's next value from a reduce of b: i depends on k, k on b.
  CHECK(EndingLeaves(i_less_than_ten, kGets + R"(
  zero = f32[] constant(0)
  sum = f32[] reduce(b, zero), dimensions={0,1}, to_apply=add
  ki = s32[] convert(sum)
  t = (s32[], f32[8,128]) tuple(ki, b)
  ROOT r = (s32[], s32[], f32[8,128], (s32[], f32[8,128])) tuple(k, j, a, t)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y))") == std::vector<std::size_t>{0, 3, 4});
}

TEST_CASE("while state: a constant condition decides on nothing, a whole-state use or a non-tuple root on everything it reads",
          "[compiler][while_state]") {
  const std::string body_passes = "  ROOT r = (s32[], s32[], f32[8,128], (s32[], f32[8,128])) copy(s)";
  CHECK(EndingLeaves("  ROOT c = pred[] constant(true)", body_passes).empty());
  // The condition reads i, the body's root is no tuple: i depends on all the root reads, the whole state.
  CHECK(EndingLeaves(kGets + "\n  ten = s32[] constant(10)\n  ROOT c = pred[] compare(i, ten), direction=LT", body_passes) ==
        std::vector<std::size_t>{0, 1, 2, 3, 4});
}

TEST_CASE("while state: the compiled program names the counter's 4 bytes as the loop's deciding state", "[compiler][while_state]") {
  auto module = hlo::ParseModule(R"(HloModule loop
cond {
  s = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f32[8,128] get-tuple-element(s), index=1
  a1 = f32[8,128] add(a, a)
  ROOT t = (s32[], f32[8,128]) tuple(i1, a1)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8,128]) tuple(zero, x)
  ROOT w = (s32[], f32[8,128]) while(init), condition=cond, body=body
}
)", "loop.hlo");
  const compiler::CompiledModule compiled = compiler::Compile(*module, compiler_test::SmallTargetOptions());
  REQUIRE(compiled.program.loops_size() == 1);
  const isa::Loop& loop = compiled.program.loops(0);
  CHECK(loop.label() == "w.condition");
  REQUIRE(loop.state_size() == 1);
  CHECK(loop.state(0).space() == isa::MEMORY_SPACE_HBM);
  CHECK(loop.state(0).size_bytes() == 4);  // the s32 counter, not the 4 KiB array
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".loop w.condition, hbm["));
}

TEST_CASE("while state: a counter compared with a constant and stepped by one (XLA's induction variable)", "[compiler][while_state]") {
  // Leaves: i 0, j 1, a 2, k 3, b 4. The nested k counts down by 3; the condition is 7 > k.
  const std::string k_below_seven = kGets + "\n  seven = s32[] constant(7)\n  ROOT c = pred[] compare(seven, k), direction=GT";
  const std::string k_down_by_three = kGets + R"(
  three = s32[] constant(3)
  k1 = s32[] subtract(k, three)
  t = (s32[], f32[8,128]) tuple(k1, b)
  ROOT r = (s32[], s32[], f32[8,128], (s32[], f32[8,128])) tuple(i, j, a, t))";
  const std::optional<compiler::WhileCounter> counter = Counter(k_below_seven, k_down_by_three);
  REQUIRE(counter);
  CHECK(counter->leaf == 3);
  CHECK(counter->type == isa::ElementType::kS32);
  CHECK(counter->step == -3);
  CHECK(counter->compare == "LT");  // 7 > k is k < 7
  CHECK(counter->bound == 7);
  // Not a counter: a step that is no constant (k - j), 3 - k (not k minus a step), a bound that
  // is no constant (k < i), a condition that is no comparison.
  CHECK_FALSE(Counter(k_below_seven, kGets + R"(
  k1 = s32[] subtract(k, j)
  t = (s32[], f32[8,128]) tuple(k1, b)
  ROOT r = (s32[], s32[], f32[8,128], (s32[], f32[8,128])) tuple(i, j, a, t))"));
  CHECK_FALSE(Counter(k_below_seven, kGets + R"(
  three = s32[] constant(3)
  k1 = s32[] subtract(three, k)
  t = (s32[], f32[8,128]) tuple(k1, b)
  ROOT r = (s32[], s32[], f32[8,128], (s32[], f32[8,128])) tuple(i, j, a, t))"));
  CHECK_FALSE(Counter(kGets + "\n  ROOT c = pred[] compare(k, i), direction=LT", k_down_by_three));
  CHECK_FALSE(Counter("  ROOT c = pred[] constant(true)", k_down_by_three));
}
