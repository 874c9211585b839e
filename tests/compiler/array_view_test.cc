// Array views (compiler/lower/array_view.h) and their fusion (compiler/passes/elementwise_fusion.h):
// which instructions are view steps, the box a chain reads, its DMA index space, the groups that
// take views in, and the bytes a fused kernel is charged for them (compiler/lower/cost.h).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/lower/cost.h"
#include "compiler/lower/array_view.h"
#include "tests/compiler/fusion_test_support.h"

namespace {

using tpusim::compiler::KernelGroup;
using tpusim::fusion_test::Groups;
using tpusim::fusion_test::HasMember;
using tpusim::fusion_test::Roots;

const tpusim::hlo::Instruction& Named(const tpusim::hlo::Module& module, const std::string& name) {
  for (const auto& x : module.entry()->instructions()) {
    if (x->name() == name) return *x;
  }
  FAIL("no instruction " << name);
  throw;
}

// The MLP's halves (JAX's jnp.split of one dot's output), and what is no view.
constexpr const char* kModule = R"(HloModule t
ENTRY e {
  x = bf16[1,11,1152] parameter(0)
  w = bf16[2,6920,1152] parameter(1)
  d = bf16[1,11,2,6920] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={2}
  g = bf16[1,11,1,6912] slice(d), slice={[0:1], [0:11], [0:1], [0:6912]}
  gr = bf16[1,11,6912] reshape(g)
  u = bf16[1,11,1,6912] slice(d), slice={[0:1], [0:11], [1:2], [3:6915]}
  ur = bf16[1,11,6912] reshape(u)
  t = bf16[1,11,6912] tanh(gr)
  m = bf16[1,11,6912] multiply(t, ur)
  strided = bf16[1,11,1,3460] slice(d), slice={[0:1], [0:11], [0:1], [0:6920:2]}
  swapped = bf16[11,1,6920,2] reshape(d)
  same = bf16[1,11,6912] reshape(m)
  permuted = bf16[6920,2,11,1] transpose(d), dimensions={3,2,1,0}
  ROOT r = (bf16[1,11,6912], bf16[1,11,1,3460], bf16[11,1,6920,2], bf16[1,11,6912], bf16[6920,2,11,1]) tuple(m, strided, swapped, same, permuted)
}
)";

}  // namespace

TEST_CASE("array views: stride-1 slices, transposes and reshapes of size-1 dims are steps, nothing else",
          "[compiler][array_view]") {
  auto module = tpusim::hlo::ParseModule(kModule, "t.hlo");
  using tpusim::compiler::IsArrayViewStep;
  CHECK(IsArrayViewStep(Named(*module, "g")));
  CHECK(IsArrayViewStep(Named(*module, "gr")));   // drops the size-1 dim
  CHECK_FALSE(IsArrayViewStep(Named(*module, "strided")));  // stride 2
  CHECK_FALSE(IsArrayViewStep(Named(*module, "swapped")));  // [..,2,6920] -> [..,6920,2]: moves elements
  CHECK_FALSE(IsArrayViewStep(Named(*module, "same")));     // same dims: no view
  CHECK_FALSE(IsArrayViewStep(Named(*module, "t")));
  CHECK(IsArrayViewStep(Named(*module, "permuted")));
}

TEST_CASE("array views: the box a chain reads, and its DMA index space", "[compiler][array_view]") {
  auto module = tpusim::hlo::ParseModule(kModule, "t.hlo");
  const auto& d = Named(*module, "d");
  const auto view = tpusim::compiler::ResolveArrayView(Named(*module, "ur"), [&](const auto& x) { return &x == &d; });
  REQUIRE(view);
  CHECK(view->source == &d);
  // ur's dims [1, 11, 6912]: its size-1 dim 0 is no source dim after the reshape; 11 is d's dim
  // 1, 6912 d's dim 3; d's dim 2 is read at index 1, its dim 3 from 3.
  CHECK(view->source_dim == std::vector<int64_t>{-1, 1, 3});
  CHECK(view->start == std::vector<int64_t>{0, 0, 1, 3});
  // Stopping at a source above the bottom: u is then the source, nothing sliced.
  const auto& u = Named(*module, "u");
  const auto short_view = tpusim::compiler::ResolveArrayView(Named(*module, "ur"), [&](const auto& x) { return &x == &u; });
  REQUIRE(short_view);
  CHECK(short_view->source == &u);
  CHECK(short_view->start == std::vector<int64_t>{0, 0, 0, 0});
  CHECK_FALSE(tpusim::compiler::ResolveArrayView(Named(*module, "t"), [](const auto&) { return false; }));
  // A transpose reverses the dims: result dim i walks d's dim 3 - i.
  const auto permuted = tpusim::compiler::ResolveArrayView(Named(*module, "permuted"), [&](const auto& x) { return &x == &d; });
  REQUIRE(permuted);
  CHECK(permuted->source_dim == std::vector<int64_t>{3, 2, 1, 0});
  CHECK(permuted->start == std::vector<int64_t>{0, 0, 0, 0});

  // The DMA space: d's dims 0 and 2 (no result dim walks them) first, then ur's three dims.
  const auto shape = [](const std::string& text) { return tpusim::isa::ParseShape(text); };
  const auto space = tpusim::compiler::ArrayViewDmaSpace(*view, shape("bf16[1,11,6912]{2,1,0:T(8,128)(2,1)}"),
                                                         shape("bf16[1,11,2,6920]{3,2,1,0:T(8,128)(2,1)}"));
  CHECK(space.tiles.dims == std::vector<int64_t>{1, 1, 1, 11, 6912});
  CHECK(space.tiles.layout->minor_to_major == std::vector<int64_t>{4, 3, 2, 1, 0});
  // d's dims 0, 1, 2, 3 are space dims 0, 3, 1, 4; ur's size-1 dim (2) is no dim of d: most major.
  CHECK(space.source.dims == std::vector<int64_t>{1, 2, 1, 11, 6920});
  CHECK(space.source.layout->minor_to_major == std::vector<int64_t>{4, 1, 3, 0, 2});
  CHECK(space.start == std::vector<int64_t>{0, 1, 0, 0, 3});
}

TEST_CASE("array views: fused into their readers' groups, the source read from HBM", "[compiler][fusion][array_view]") {
  auto module = tpusim::hlo::ParseModule(kModule, "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  // strided, swapped and permuted (read by no element-wise kernel) are kernels of their own; same
  // is an alias of m.
  REQUIRE(Roots(groups) == std::vector<std::string>{"d", "m", "strided", "swapped", "permuted"});
  const KernelGroup& mlp = groups[1];
  for (const char* member : {"g", "gr", "u", "ur", "t"}) CHECK(HasMember(mlp, member));
  REQUIRE(mlp.operands.size() == 1);
  CHECK(mlp.operands[0]->name() == "d");
  // The kernel reads the two views' boxes of d, not d twice.
  const auto cost = tpusim::compiler::CostOf(mlp);
  CHECK(cost.bytes_accessed == 3 * 11 * 6912 * 2);
}

TEST_CASE("array views: a view whose reader is no element-wise kernel stays a kernel, its producer unfused",
          "[compiler][fusion][array_view]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  a = f32[64,256] parameter(0)
  b = f32[64,256] parameter(1)
  w = f32[128,32] parameter(2)
  m = f32[64,256] multiply(a, b)
  s = f32[64,128] slice(m), slice={[0:64], [0:128]}
  d = f32[64,32] dot(s, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  h = f32[64,128] slice(m), slice={[0:64], [128:256]}
  n = f32[64,128] negate(h)
  ROOT r = (f32[64,32], f32[64,128]) tuple(d, n)
}
)", "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  // m is read through views: it is written once, not computed inside n's kernel.
  CHECK(Roots(groups) == std::vector<std::string>{"m", "s", "d", "n"});
  CHECK(HasMember(groups[3], "h"));
  CHECK_FALSE(HasMember(groups[3], "m"));
}

TEST_CASE("array views: a reshape that is its operand's bytes stays a plain stream unless it tops a view",
          "[compiler][fusion][array_view]") {
  // r adds a major size-1 dim: the same bytes as a (an alias), read tile for tile by a kernel that
  // loops over its blocks; gr drops one from a slice, so it tops the slice's view.
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  a = f32[12,128,128] parameter(0)
  r = f32[1,12,128,128] reshape(a)
  n = f32[1,12,128,128] negate(r)
  b = f32[2,12,128,128] parameter(1)
  g = f32[1,12,128,128] slice(b), slice={[1:2], [0:12], [0:128], [0:128]}
  gr = f32[12,128,128] reshape(g)
  m = f32[12,128,128] negate(gr)
  ROOT t = (f32[1,12,128,128], f32[12,128,128]) tuple(n, m)
}
)", "t.hlo");
  const std::vector<KernelGroup> groups = Groups(*module);
  REQUIRE(Roots(groups) == std::vector<std::string>{"n", "m"});
  CHECK_FALSE(HasMember(groups[0], "r"));
  REQUIRE(groups[0].operands.size() == 1);
  CHECK(groups[0].operands[0]->name() == "r");
  CHECK(HasMember(groups[1], "g"));
  CHECK(HasMember(groups[1], "gr"));
  REQUIRE(groups[1].operands.size() == 1);
  CHECK(groups[1].operands[0]->name() == "b");
}
