// Broadcasts of arrays in element-wise fusion (compiler/passes/elementwise_fusion.h): a broadcast
// of an array whose users are all in one element-wise group joins it (its operand becomes a group
// operand, read from HBM); one read from outside a group, or the module's root, keeps its own
// kernel.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/layout_assignment.h"
#include "tests/compiler/fusion_test_support.h"

namespace {

using tpusim::compiler::KernelGroup;
using tpusim::fusion_test::Groups;

std::vector<std::string> Names(const std::vector<const tpusim::hlo::Instruction*>& list) {
  std::vector<std::string> names;
  for (const auto* x : list) names.push_back(x->name());
  return names;
}

}  // namespace

TEST_CASE("broadcasts of a row vector and of a column vector join their consumer's group", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  x = f32[20,300] parameter(0)
  a = f32[20] parameter(1)
  b = f32[300] parameter(2)
  ba = f32[20,300] broadcast(a), dimensions={0}
  bb = f32[20,300] broadcast(b), dimensions={1}
  s = f32[20,300] subtract(x, ba)
  ROOT r = f32[20,300] add(s, bb)
})", "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].root->name() == "r");
  // Schedule order: the schedule puts a broadcast just before its first reader.
  CHECK(Names(groups[0].members) == std::vector<std::string>{"ba", "s", "bb", "r"});
  // The broadcasts' operands are read from HBM; no broadcast array is an operand.
  std::vector<std::string> operands = Names(groups[0].operands);
  std::sort(operands.begin(), operands.end());
  CHECK(operands == std::vector<std::string>{"a", "b", "x"});
}

TEST_CASE("a broadcast of an array also read outside the group, or the root, keeps its own kernel", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  x = f32[8,128] parameter(0)
  a = f32[8] parameter(1)
  ba = f32[8,128] broadcast(a), dimensions={0}
  s = f32[8,128] subtract(x, ba)
  t = f32[128,8] transpose(ba), dimensions={1,0}
  ROOT r = (f32[8,128], f32[128,8]) tuple(s, t)
})", "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  std::vector<std::string> roots;
  for (const KernelGroup& g : groups) roots.push_back(g.root->name());
  CHECK(roots == std::vector<std::string>{"ba", "s", "t"});
  for (const KernelGroup& g : groups) CHECK(g.members.size() == 1);

  auto root_module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  a = f32[8] parameter(0)
  ROOT ba = f32[8,128] broadcast(a), dimensions={0}
})", "t.hlo");
  const std::vector<KernelGroup> alone = Groups(*root_module);
  REQUIRE(alone.size() == 1);
  CHECK(alone[0].root->name() == "ba");
  CHECK(!alone[0].fused());
}

TEST_CASE("a broadcast member is a load of its operand that does not keep the padding zero", "[compiler][fusion]") {
  // x - broadcast(a): x's padding is zero, the broadcast's tiles' padding is whatever VMEM held
  // (its DMAs write elements only), so the result must be masked; x - y needs no mask.
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  x = f32[20,300] parameter(0)
  a = f32[20] parameter(1)
  y = f32[20,300] parameter(2)
  ba = f32[20,300] broadcast(a), dimensions={0}
  s = f32[20,300] subtract(x, ba)
  ROOT r = f32[20,300] subtract(s, y)
})", "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(groups.size() == 1);
  const tpusim::compiler::ElementwiseExpr expr = tpusim::compiler::BuildElementwiseExpr(groups[0]);
  int broadcast_loads = 0;
  for (const auto& node : expr.nodes) {
    if (node.kind != tpusim::compiler::ExprNode::Kind::kLoad) continue;
    if (node.view != nullptr) {
      ++broadcast_loads;
      CHECK(node.view->name() == "ba");
      CHECK(groups[0].operands.at(node.operand)->name() == "a");
    }
  }
  CHECK(broadcast_loads == 1);
  REQUIRE(expr.outputs.size() == 1);
  CHECK(!tpusim::compiler::PreservesZero(expr, expr.outputs[0]));
  // The same expression's x - y part (node of s's first operand, x) alone keeps zeros.
  for (std::size_t n = 0; n < expr.nodes.size(); ++n) {
    const auto& node = expr.nodes[n];
    if (node.kind == tpusim::compiler::ExprNode::Kind::kLoad && node.view == nullptr) {
      CHECK(tpusim::compiler::PreservesZero(expr, static_cast<int>(n)));
    }
  }
}
