// Row folds (compiler/passes/elementwise_fusion.h, RowFoldReduce in compiler/lower/elementwise_expr.h):
// a reduce over the lanes that every user broadcasts back along its rows joins those users'
// group, so a layer norm or a softmax is one kernel; anything else keeps its reduce kernel.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/layout_assignment.h"
#include "tests/compiler/fusion_test_support.h"
#include "tests/compiler/row_fold_modules.h"

namespace {

using tpusim::compiler::KernelGroup;
using tpusim::fusion_test::Groups;
using tpusim::fusion_test::HasMember;
using tpusim::fusion_test::Roots;
using tpusim::row_fold_test::LayerNorm;

}  // namespace

TEST_CASE("row folds: a layer norm is one group, both of its reduces folded in the output's kernel", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(LayerNorm("", "bf16[64,768] divide(d, sd)"), "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(Roots(groups) == std::vector<std::string>{"r"});
  for (const char* member : {"xf", "sum", "sb", "d", "d2f", "var", "vb", "sd"}) {
    CHECK(HasMember(groups[0], member));
  }
  // What the kernel reads from HBM: x alone (the reduces' inits are constants inside).
  REQUIRE(groups[0].operands.size() == 1);
  CHECK(groups[0].operands[0]->name() == "x");
}

TEST_CASE("row folds: a reduce with a user other than a broadcast along its rows keeps its kernel", "[compiler][fusion]") {
  // The variance is also an output: it goes to HBM anyway, so its kernel computes it (with its
  // producers, input fusion) and the output reads it broadcast. The mean's divide, read by both
  // of those kernels, is not duplicated (an expensive operation): it is a kernel of its own,
  // which folds the sum.
  auto module = tpusim::hlo::ParseModule(
      LayerNorm("  o = bf16[64,768] divide(d, sd)\n", "(bf16[64,768], f32[64]) tuple(o, var)"), "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(Roots(groups) == std::vector<std::string>{"mean", "var", "o"});
  CHECK(HasMember(groups[0], "sum"));
  CHECK(HasMember(groups[1], "d2f"));
  CHECK_FALSE(HasMember(groups[2], "var"));
}

TEST_CASE("row folds: only a fold over the last dim, broadcast back along it, from the reducer's identity",
          "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,256] parameter(0)
  z = f32[] constant(0)
  one = f32[] constant(1)
  rows = f32[64] reduce(x, z), dimensions={1}, to_apply=add
  columns = f32[256] reduce(x, z), dimensions={0}, to_apply=add
  from_one = f32[64] reduce(x, one), dimensions={1}, to_apply=add
  a = f32[64,256] broadcast(rows), dimensions={0}
  b = f32[64,256] broadcast(columns), dimensions={1}
  c = f32[64,256] broadcast(from_one), dimensions={0}
  ab = f32[64,256] add(a, b)
  ROOT r = f32[64,256] add(ab, c)
}
)",
                                         "t.hlo");
  const tpusim::hlo::Computation& entry = *module->entry();
  CHECK(tpusim::compiler::RowFoldReduce(*entry.FindInstruction("a")) == entry.FindInstruction("rows"));
  CHECK(tpusim::compiler::RowFoldReduce(*entry.FindInstruction("b")) == nullptr);  // a column sum
  CHECK(tpusim::compiler::RowFoldReduce(*entry.FindInstruction("c")) == nullptr);  // init 1 is not add's identity
  const std::vector<KernelGroup> groups = Groups(*module);
  CHECK(Roots(groups) == std::vector<std::string>{"columns", "from_one", "r"});
  CHECK(HasMember(groups[2], "rows"));
}

TEST_CASE("row folds: a group whose kernel would not lower goes without its folds", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(LayerNorm("", "bf16[64,768] divide(d, sd)"), "t.hlo");
  // A kernel that lowers no row fold: both reduces leave the output's group in one round and take
  // their producers (input fusion) as before row folds; the mean's divide, read by two groups
  // and not duplicated (expensive), is a kernel of its own. Asked: the output's group, then the
  // two reduces' groups.
  int asked = 0;
  const std::vector<KernelGroup> groups = Groups(*module, [&](const KernelGroup& group) {
    ++asked;
    for (const auto* member : group.members) {
      if (member != group.root && member->opcode() == tpusim::hlo::Opcode::kReduce) return false;
    }
    return true;
  });
  CHECK(Roots(groups) == std::vector<std::string>{"sum", "mean", "var", "r"});
  CHECK(asked == 3);
}

TEST_CASE("row folds: one fold per reduce, and equal nodes built once (the workload's copies of a chain)",
          "[compiler][fusion]") {
  // The shared layer norm as lane-broadcast sinking leaves it: the mean's chain copied for each of
  // its two broadcasts, and x - mean written twice (sub.11 and sub.15 in the workload).
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = bf16[64,768] parameter(0)
  xf = f32[64,768] convert(x)
  z = f32[] constant(0)
  sum = f32[64] reduce(xf, z), dimensions={1}, to_apply=add
  n = f32[] constant(768)
  sb1 = f32[64,768] broadcast(sum), dimensions={0}
  nb1 = f32[64,768] broadcast(n), dimensions={}
  m1 = f32[64,768] divide(sb1, nb1)
  mb1 = bf16[64,768] convert(m1)
  d1 = bf16[64,768] subtract(x, mb1)
  sb2 = f32[64,768] broadcast(sum), dimensions={0}
  nb2 = f32[64,768] broadcast(n), dimensions={}
  m2 = f32[64,768] divide(sb2, nb2)
  mb2 = bf16[64,768] convert(m2)
  d2 = bf16[64,768] subtract(x, mb2)
  sq = bf16[64,768] multiply(d2, d2)
  sqf = f32[64,768] convert(sq)
  var = f32[64] reduce(sqf, z), dimensions={1}, to_apply=add
  vb = f32[64,768] broadcast(var), dimensions={0}
  vbb = bf16[64,768] convert(vb)
  ROOT r = bf16[64,768] multiply(d1, vbb)
}
)",
                                         "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(Roots(groups) == std::vector<std::string>{"r"});
  const tpusim::compiler::ElementwiseExpr expr = tpusim::compiler::BuildElementwiseExpr(groups[0]);
  int folds = 0, subtracts = 0, divides = 0;
  for (const auto& node : expr.nodes) {
    if (node.kind == tpusim::compiler::ExprNode::Kind::kRowFold) ++folds;
    if (node.kind != tpusim::compiler::ExprNode::Kind::kOp) continue;
    if (node.hlo->opcode() == tpusim::hlo::Opcode::kSubtract) ++subtracts;
    if (node.hlo->opcode() == tpusim::hlo::Opcode::kDivide) ++divides;
  }
  CHECK(folds == 2);      // sum (two broadcasts, one fold) and var
  CHECK(subtracts == 1);  // x - mean once
  CHECK(divides == 1);    // the mean's divide once
}
