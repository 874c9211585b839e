// Layout assignment (compiler/passes/layout_assignment.h): the TPU default tiles, and size-1 dims
// moved to the major end so that no tile pads them.
#include <catch2/catch.hpp>

#include "compiler/passes/layout_assignment.h"
#include "isa/layout_index.h"
#include "isa/shape.h"

namespace tpusim::compiler {
namespace {

using isa::ElementType;

TEST_CASE("layout assignment moves size-1 dims major and keeps the others' order", "[layout]") {
  // bf16[16,8,2048,2048,1] (MaxText's attention scores): row-major would tile (2048, 1) as
  // (2048, 128), 128 times its 1 GiB; with dim 4 major the tiles cover (2048, 2048).
  const isa::Shape scores = WithDefaultLayouts(isa::Shape::Array(ElementType::kBF16, {16, 8, 2048, 2048, 1}));
  CHECK(scores.layout->minor_to_major == std::vector<int64_t>{3, 2, 1, 0, 4});
  CHECK(isa::LayoutMap(scores).byte_size() == 16ull * 8 * 2048 * 2048 * 2);
  // A written order is kept for the other dims: {2,3,4,1,0} with dim 2 of size 1 -> {3,4,1,0,2}.
  isa::Shape written = isa::Shape::Array(ElementType::kBF16, {16, 8, 1, 2048, 2048});
  written.layout = isa::Layout{};
  written.layout->minor_to_major = {2, 3, 4, 1, 0};
  CHECK(WithDefaultLayouts(written).layout->minor_to_major == std::vector<int64_t>{3, 4, 1, 0, 2});
  // f32[16,2048,1]: 128 KiB of elements, not 16 MiB of padded tiles.
  const isa::Shape column = WithDefaultLayouts(isa::Shape::Array(ElementType::kF32, {16, 2048, 1}));
  CHECK(column.layout->minor_to_major == std::vector<int64_t>{1, 0, 2});
  CHECK(isa::LayoutMap(column).byte_size() == 16 * 2048 * 4);
  // Without size-1 dims nothing changes: row-major with T(8,128).
  const isa::Shape plain = WithDefaultLayouts(isa::Shape::Array(ElementType::kF32, {4, 8, 256}));
  CHECK(plain.layout->minor_to_major == std::vector<int64_t>{2, 1, 0});
  // Tiles written in the module are kept as written, size-1 dims included.
  isa::Shape tiled = isa::ParseShape("f32[16,1]{1,0:T(8,128)}");
  CHECK(WithDefaultLayouts(tiled).layout->minor_to_major == std::vector<int64_t>{1, 0});
}

}  // namespace
}  // namespace tpusim::compiler
