// Input fusion and producer duplication (compiler/passes/elementwise_fusion.h): a reduce takes the
// element-wise producers of its operand into its group, an element-wise operation read by several
// groups is computed in each (up to four, and not an expensive one such as exp), and a reduce whose fused group the kernel cannot lower
// reads its operand from HBM. Also the call inliner (compiler/passes/call_inliner.h), which lets a
// callee's element-wise operations fuse with the caller's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/call_inliner.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/layout_assignment.h"
#include "tests/compiler/fusion_test_support.h"

namespace {

using tpusim::compiler::KernelGroup;
using tpusim::fusion_test::Groups;

std::vector<std::string> Names(std::vector<const tpusim::hlo::Instruction*> list, bool sorted = false) {
  std::vector<std::string> names;
  for (const auto* x : list) names.push_back(x->name());
  if (sorted) std::sort(names.begin(), names.end());
  return names;
}

const KernelGroup* GroupOf(const std::vector<KernelGroup>& groups, const std::string& root) {
  for (const KernelGroup& group : groups) {
    if (group.root->name() == root) return &group;
  }
  return nullptr;
}

// Softmax's denominator over rows of bf16 logits, with `readers` more reduces of the exponential.
std::string Softmax(const std::string& more_reduces, const std::string& root) {
  return R"(HloModule t
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = bf16[16,256] parameter(0)
  m = f32[16] parameter(1)
  xf = f32[16,256] convert(x)
  mb = f32[16,256] broadcast(m), dimensions={0}
  d = f32[16,256] subtract(xf, mb)
  ex = f32[16,256] exponential(d)
  z = f32[] constant(0)
  s = f32[16] reduce(ex, z), dimensions={1}, to_apply=add
)" + more_reduces + "  ROOT r = " + root + "\n}\n";
}

}  // namespace

TEST_CASE("a reduce takes the element-wise producers of its operand into its group", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(Softmax("", "f32[16] negate(s)"), "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(groups.size() == 2);  // the fused reduce, and the negate of its result
  const KernelGroup* s = GroupOf(groups, "s");
  REQUIRE(s != nullptr);
  CHECK(Names(s->members) == std::vector<std::string>{"xf", "mb", "d", "ex", "s"});
  // The init first (the reduce kernel reads it from HBM), then what the producers read: the
  // logits and the row maxima, never the f32 arrays.
  CHECK(Names(s->operands) == std::vector<std::string>{"z", "x", "m"});
}

TEST_CASE("an element-wise chain read by two reduces is computed in both (producer duplication)", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(
      Softmax("  c = f32[256] reduce(d, z), dimensions={0}, to_apply=add\n", "(f32[16], f32[256]) tuple(s, c)"), "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(groups.size() == 2);
  const KernelGroup* s = GroupOf(groups, "s");
  const KernelGroup* c = GroupOf(groups, "c");
  REQUIRE(s != nullptr);
  REQUIRE(c != nullptr);
  CHECK(Names(s->members) == std::vector<std::string>{"xf", "mb", "d", "ex", "s"});
  CHECK(Names(c->members) == std::vector<std::string>{"xf", "mb", "d", "c"});
  CHECK(GroupOf(groups, "d") == nullptr);  // no kernel writes the difference to HBM
}

TEST_CASE("an exponential read by two groups is computed once, as XLA does not duplicate expensive ops", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(
      Softmax("  c = f32[256] reduce(ex, z), dimensions={0}, to_apply=add\n", "(f32[16], f32[256]) tuple(s, c)"), "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(groups.size() == 3);
  const KernelGroup* ex = GroupOf(groups, "ex");
  REQUIRE(ex != nullptr);
  CHECK(Names(ex->members) == std::vector<std::string>{"xf", "mb", "d", "ex"});
  CHECK_FALSE(GroupOf(groups, "s")->fused());
  CHECK_FALSE(GroupOf(groups, "c")->fused());
}

TEST_CASE("a chain read by more than four groups is computed once, in a kernel of its own", "[compiler][fusion]") {
  std::string more;
  std::string tuple = "(f32[16]";
  std::string elements = "s";
  for (int k = 1; k <= 4; ++k) {
    more += "  s" + std::to_string(k) + " = f32[16] reduce(d, z), dimensions={1}, to_apply=add\n";
    tuple += ", f32[16]";
    elements += ", s" + std::to_string(k);
  }
  auto module = tpusim::hlo::ParseModule(Softmax(more, tuple + ") tuple(" + elements + ")"), "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  // Five groups read d (s through ex, and s1..s4): it is one group (with its own producers).
  const KernelGroup* d = GroupOf(groups, "d");
  REQUIRE(d != nullptr);
  CHECK(Names(d->members) == std::vector<std::string>{"xf", "mb", "d"});
  REQUIRE(groups.size() == 6);
  CHECK(Names(GroupOf(groups, "s")->members) == std::vector<std::string>{"ex", "s"});
  for (int k = 1; k <= 4; ++k) CHECK_FALSE(GroupOf(groups, "s" + std::to_string(k))->fused());
}

TEST_CASE("a reduce whose fused group would not lower reads its operand from HBM", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(Softmax("", "f32[16] negate(s)"), "t.hlo");
  int asked = 0;
  const std::vector<KernelGroup> groups = Groups(*module, [&](const KernelGroup& group) {
    ++asked;
    CHECK(group.root->name() == "s");
    return false;
  });
  CHECK(asked == 1);
  REQUIRE(groups.size() == 3);
  const KernelGroup* ex = GroupOf(groups, "ex");
  REQUIRE(ex != nullptr);
  CHECK(Names(ex->members) == std::vector<std::string>{"xf", "mb", "d", "ex"});
  REQUIRE(GroupOf(groups, "s") != nullptr);
  CHECK_FALSE(GroupOf(groups, "s")->fused());
}

TEST_CASE("calls are inlined under the call's name, nested ones too, and their element-wise ops fuse", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
inner {
  a = f32[8,128] parameter(0)
  ROOT s = f32[8,128] add(a, a)
}
outer {
  a = f32[8,128] parameter(0)
  c = f32[8,128] call(a), to_apply=inner
  ROOT m = f32[8,128] multiply(c, a)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  ROOT r = f32[8,128] call(x), to_apply=outer
})", "t.hlo");
  tpusim::compiler::InlineCalls(*module);
  const tpusim::hlo::Computation& entry = *module->entry();
  for (const auto& x : entry.instructions()) CHECK(x->opcode() != tpusim::hlo::Opcode::kCall);
  REQUIRE(entry.root()->name() == "r.m");
  const tpusim::hlo::Instruction* s = entry.FindInstruction("r.c.s");
  REQUIRE(s != nullptr);
  // The copies read the call's operands where the callees read their parameters.
  CHECK(Names({entry.root()->operand(0), entry.root()->operand(1)}) == std::vector<std::string>{"r.c.s", "x"});
  CHECK(Names({s->operand(0), s->operand(1)}) == std::vector<std::string>{"x", "x"});
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(groups.size() == 1);
  CHECK(Names(groups[0].members) == std::vector<std::string>{"r.c.s", "r.m"});
}
