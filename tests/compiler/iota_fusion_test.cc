// Iotas in element-wise fusion (compiler/passes/elementwise_fusion.h): an iota of rank >= 2 is
// recomputed in every group that reads it, has a kernel of its own only where something outside
// the groups reads it, and goes to a kernel of its own where its readers' kernel cannot compute it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/layout_assignment.h"
#include "tests/compiler/fusion_test_support.h"

namespace {

using tpusim::compiler::KernelGroup;
using tpusim::fusion_test::Groups;
using tpusim::fusion_test::HasMember;
using tpusim::fusion_test::Roots;

// An iota read by two element-wise groups (the exponential is an output, so a kernel of its
// own) and, with `dot_reads` set, by a dot too.
std::string Module(bool dot_reads) {
  return std::string(R"(HloModule t
ENTRY e {
  x = f32[64,256] parameter(0)
  w = f32[256,128] parameter(1)
  i = f32[64,256] iota(), iota_dimension=1
  a = f32[64,256] add(x, i)
  ex = f32[64,256] exponential(a)
  b = f32[64,256] multiply(ex, i)
)") + (dot_reads ? "  d = f32[64,128] dot(i, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                   "  ROOT r = (f32[64,256], f32[64,256], f32[64,128]) tuple(ex, b, d)\n}\n"
                 : "  ROOT r = (f32[64,256], f32[64,256]) tuple(ex, b)\n}\n");
}

}  // namespace

TEST_CASE("iotas: computed in each group that reads them, a kernel of their own only for other readers",
          "[compiler][fusion]") {
  auto alone = tpusim::hlo::ParseModule(Module(false), "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*alone);
  REQUIRE(Roots(groups) == std::vector<std::string>{"ex", "b"});
  CHECK(HasMember(groups[0], "i"));
  CHECK(HasMember(groups[1], "i"));
  for (const KernelGroup& group : groups) {
    for (const auto* operand : group.operands) CHECK(operand->name() != "i");
  }
  // A dot reads the iota from HBM: the iota is a kernel of its own for it, and still computed
  // in the element-wise groups.
  auto read_by_dot = tpusim::hlo::ParseModule(Module(true), "t.hlo");
  const std::vector<KernelGroup> with_dot = Groups(*read_by_dot);
  CHECK(Roots(with_dot) == std::vector<std::string>{"i", "ex", "b", "d"});
  CHECK(HasMember(with_dot[1], "i"));
}

TEST_CASE("iotas: a group whose kernel cannot compute its iota reads it from a kernel of its own", "[compiler][fusion]") {
  auto module = tpusim::hlo::ParseModule(Module(false), "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module, [](const KernelGroup& group) {
    return std::none_of(group.members.begin(), group.members.end(),
                        [](const auto* m) { return m->opcode() == tpusim::hlo::Opcode::kIota; });
  });
  REQUIRE(Roots(groups) == std::vector<std::string>{"i", "ex", "b"});
  CHECK_FALSE(HasMember(groups[1], "i"));
  CHECK(std::find(groups[1].operands.begin(), groups[1].operands.end(), groups[0].root) != groups[1].operands.end());
}
