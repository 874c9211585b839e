// Unit reduces as element-wise operations (compiler/passes/unit_reduces.h): a reduce that folds
// one operand element into each output element is the reducer written out over the result,
// reducer(broadcast(init), reshape(x)), HLO in, HLO out; what it cannot write out stays a reduce
// and the lowering names why.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/passes/unit_reduces.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim;

std::unique_ptr<hlo::Module> Reduce(const std::string& reducer, const std::string& operand, const std::string& result,
                                    const std::string& dims) {
  return hlo::ParseModule("HloModule u\nreducer {\n" + reducer + "}\nENTRY e {\n  x = " + operand +
                              " parameter(0)\n  i = s32[] constant(100)\n  ROOT y = " + result +
                              " reduce(x, i), dimensions={" + dims + "}, to_apply=reducer\n}\n",
                          "u.hlo");
}

// The instruction `x` as `opcode(operand names)`, its operands the same way, depth first.
std::string Tree(const hlo::Instruction& x) {
  if (x.operand_count() == 0) return std::string(hlo::OpcodeName(x.opcode()));
  std::string text = std::string(hlo::OpcodeName(x.opcode())) + "(";
  for (std::size_t k = 0; k < x.operand_count(); ++k) text += (k ? ", " : "") + Tree(*x.operand(k));
  return text + ")";
}

constexpr char kSubtract[] = "  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT c = s32[] subtract(a, b)\n";

}  // namespace

TEST_CASE("unit reduces: reducer(init, x) over the result's dims, the init first", "[compiler][reduce]") {
  // subtract is not commutative: 100 - x, parameter 0 the init value.
  auto module = Reduce(kSubtract, "s32[3,1,130]", "s32[3,130]", "1");
  compiler::ExpandUnitReduces(*module);
  const hlo::Instruction& root = *module->entry()->root();
  CHECK(Tree(root) == "subtract(broadcast(constant), reshape(parameter))");
  CHECK(root.shape().dims == std::vector<int64_t>{3, 130});
  CHECK(root.operand(0)->operand(0)->name() == "i");
  CHECK(root.operand(1)->operand(0)->name() == "x");
  // A reduce over no dims is one too, reading its operand as it is.
  auto none = Reduce(kSubtract, "s32[3,130]", "s32[3,130]", "");
  compiler::ExpandUnitReduces(*none);
  CHECK(Tree(*none->entry()->root()) == "subtract(broadcast(constant), parameter)");
}

TEST_CASE("unit reduces: the reducer's scalar constants are broadcast, its root may be a parameter", "[compiler][reduce]") {
  auto module = Reduce("  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  c = s32[] add(a, b)\n"
                       "  two = s32[] constant(2)\n  ROOT d = s32[] multiply(c, two)\n",
                       "s32[4,1,8]", "s32[4,8]", "1");
  compiler::ExpandUnitReduces(*module);
  CHECK(Tree(*module->entry()->root()) ==
        "multiply(add(broadcast(constant), reshape(parameter)), broadcast(constant))");
  auto first = Reduce("  a = s32[] parameter(0)\n  ROOT b = s32[] parameter(1)\n", "s32[4,1,8]", "s32[4,8]", "1");
  compiler::ExpandUnitReduces(*first);
  CHECK(Tree(*first->entry()->root()) == "reshape(parameter)");
}

TEST_CASE("unit reduces: a reduce over a dim above 1 stays a reduce", "[compiler][reduce]") {
  auto module = Reduce(kSubtract, "s32[3,2,130]", "s32[3,130]", "1");
  compiler::ExpandUnitReduces(*module);
  CHECK(module->entry()->root()->opcode() == hlo::Opcode::kReduce);
}

TEST_CASE("tpusim run --check: a unit reduce is one element-wise kernel with its producers", "[sim][reduce]") {
  // argsort's bounds check form: and over a trailing size-1 dim of a compare. Before, the copy of
  // the operand to the result's dims was a kernel step of its own (22.2 us in argsort; 10.7 now).
  const exec_test::fs::path dir = exec_test::TempDir("unit_reduce_fused");
  exec_test::WriteText(dir / "m.hlo",
                       "HloModule u\nreducer {\n  a = pred[] parameter(0)\n  b = pred[] parameter(1)\n"
                       "  ROOT c = pred[] and(a, b)\n}\nENTRY e {\n  x = s32[40,300] parameter(0)\n"
                       "  z = s32[] constant(0)\n  zb = s32[40,300] broadcast(z), dimensions={}\n"
                       "  p = pred[40,300] compare(x, zb), direction=GE\n  t = pred[] constant(true)\n"
                       "  ROOT y = pred[40,300] reduce(p, t), dimensions={}, to_apply=reducer\n}\n");
  const std::string output = exec_test::RunOk("run " + (dir / "m.hlo").string() + " --check --seed 3 --report " +
                                              (dir / "r.json").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  CHECK(exec_test::KernelNames(dir / "r.json").size() == 1);
}
