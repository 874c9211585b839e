// Linear indexing under layouts. Expected values come from XLA's documents (seeds 000, 002, 004)
// and XLA's own tests, as quoted in ../shared/seeds/README.md.
#include "isa/layout_index.h"

#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <vector>

#include "isa/error.h"

using namespace tpusim::isa;

namespace {

int64_t Linear(const char* shape, std::vector<int64_t> index) {
  return LayoutMap(ParseShape(shape)).LinearIndex(index);
}

}  // namespace

TEST_CASE("seed 000: minor_to_major orders a [2 x 3] array", "[layout]") {
  // a b c / d e f: {0,1} (column-major) stores a d b e c f; {1,0} stores a b c d e f.
  const LayoutMap col(ParseShape("u8[2,3]{0,1}"));
  const LayoutMap row(ParseShape("u8[2,3]{1,0}"));
  const int64_t a[] = {0, 0}, b[] = {0, 1}, c[] = {0, 2}, d[] = {1, 0}, e[] = {1, 1}, f[] = {1, 2};
  CHECK(col.LinearIndex(a) == 0);
  CHECK(col.LinearIndex(d) == 1);
  CHECK(col.LinearIndex(b) == 2);
  CHECK(col.LinearIndex(e) == 3);
  CHECK(col.LinearIndex(c) == 4);
  CHECK(col.LinearIndex(f) == 5);
  CHECK(row.LinearIndex(a) == 0);
  CHECK(row.LinearIndex(b) == 1);
  CHECK(row.LinearIndex(c) == 2);
  CHECK(row.LinearIndex(d) == 3);
  CHECK(row.LinearIndex(e) == 4);
  CHECK(row.LinearIndex(f) == 5);
}

TEST_CASE("seed 000: padded_dimensions [3,5] column-major", "[layout]") {
  // Linear memory a d 0 b e 0 c f 0 0 0 0 0 0 0: each column padded to 3, 5 columns.
  Layout layout;
  layout.minor_to_major = {0, 1};
  layout.padded_dimensions = {3, 5};
  const LayoutMap map(Shape::Array(ElementType::kU8, {2, 3}, layout));
  CHECK(map.physical_element_count() == 15);
  CHECK(map.byte_size() == 15);
  const int64_t e[] = {1, 1}, f[] = {1, 2};
  CHECK(map.LinearIndex(e) == 4);
  CHECK(map.LinearIndex(f) == 7);
  CHECK_FALSE(map.LogicalIndex(2).has_value());  // the 0 after a d
  CHECK(map.LogicalIndex(6) == std::vector<int64_t>{0, 2});
}

TEST_CASE("seed 004 figure 1: F32[3,5]{1,0:T(2,2)}", "[layout]") {
  // Element (2,3): tile index (1,1), in-tile (0,1); (1,1,0,1) over bounds (2,3,2,2) -> 17.
  CHECK(Linear("f32[3,5]{1,0:T(2,2)}", {2, 3}) == 17);
  const LayoutMap map(ParseShape("f32[3,5]{1,0:T(2,2)}"));
  CHECK(map.tiled_dims() == std::vector<std::vector<int64_t>>{{2, 3, 2, 2}});
  CHECK(map.physical_element_count() == 24);
  CHECK(map.byte_size() == 96);
  CHECK(map.LogicalIndex(17) == std::vector<int64_t>{2, 3});
  CHECK_FALSE(map.LogicalIndex(18).has_value());  // (1,1,1,0) would be row 3: padding
}

TEST_CASE("golden values from XLA's tests", "[layout]") {
  CHECK(Linear("bf16[2,8,128]{2,1,0:T(8,128)(2,1)}", {0, 2, 0}) == 256);
  CHECK(Linear("bf16[2048]{0:T(1024)(128)(2,1)}", {128}) == 1);
  CHECK(Linear("bf16[2048]{0:T(1024)(128)(2,1)}", {1}) == 2);
  CHECK(Linear("f32[8,4]{1,0:T(2,2)}", {3, 1}) == 11);
}

TEST_CASE("seed 004 figure 2: a 4x8 array tiled (2,4)(2,1)", "[layout]") {
  // Each 2x4 tile holds 8 elements; inside it the (2,1) tile pairs rows, so the two rows of a
  // column are adjacent: the numbering of the figure.
  const int64_t expected[4][8] = {
      {0, 2, 4, 6, 8, 10, 12, 14},
      {1, 3, 5, 7, 9, 11, 13, 15},
      {16, 18, 20, 22, 24, 26, 28, 30},
      {17, 19, 21, 23, 25, 27, 29, 31},
  };
  const LayoutMap map(ParseShape("f32[4,8]{1,0:T(2,4)(2,1)}"));
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 8; ++c) {
      const int64_t index[] = {r, c};
      INFO("element (" << r << "," << c << ")");
      CHECK(map.LinearIndex(index) == expected[r][c]);
    }
  }
}

TEST_CASE("bf16 T(8,128)(2,1): two rows share each 32-bit word", "[layout]") {
  // Element (r,c) of an 8x128 tile sits at element offset (r/2)*256 + 2*c + r%2.
  const LayoutMap map(ParseShape("bf16[8,128]{1,0:T(8,128)(2,1)}"));
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t c = 0; c < 128; ++c) {
      const int64_t index[] = {r, c};
      REQUIRE(map.LinearIndex(index) == (r / 2) * 256 + 2 * c + r % 2);
    }
  }
}

TEST_CASE("seed 002: bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)} is 335,544,320 bytes", "[layout]") {
  const LayoutMap map(ParseShape("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}"));
  CHECK(map.byte_size() == 335544320);
  CHECK(map.physical_order() == std::vector<int64_t>{1, 0, 2, 3});
  CHECK(map.physical_dims() == std::vector<int64_t>{1, 8, 1280, 16384});
}

TEST_CASE("seed 004: combining dims with '*'", "[layout]") {
  // F32[2,7,8,11,10]{4,3,2,1,0} with T(*,*,2,*,3) behaves like F32[112,110]{1,0:T(2,3)}.
  const LayoutMap combined(ParseShape("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}"));
  const LayoutMap flat(ParseShape("f32[112,110]{1,0:T(2,3)}"));
  CHECK(combined.byte_size() == flat.byte_size());
  CHECK(combined.tiled_dims() == flat.tiled_dims());
  CHECK_FALSE(combined.is_separable());
  int64_t checked = 0;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 7; ++b)
      for (int64_t c = 0; c < 8; ++c)
        for (int64_t d = 0; d < 11; ++d)
          for (int64_t e = 0; e < 10; ++e) {
            const int64_t index[] = {a, b, c, d, e};
            const int64_t flat_index[] = {(a * 7 + b) * 8 + c, d * 10 + e};
            REQUIRE(combined.LinearIndex(index) == flat.LinearIndex(flat_index));
            ++checked;
          }
  CHECK(checked == 12320);
}

TEST_CASE("tail padding, element bits and scalars", "[layout]") {
  CHECK(LayoutMap(ParseShape("f32[3]{0:L(8)}")).byte_size() == 32);
  CHECK(LayoutMap(ParseShape("s4[16]{0:E(4)}")).byte_size() == 8);
  CHECK(LayoutMap(ParseShape("s4[3]{0}")).byte_size() == 2);  // 3 x 4 bits, rounded up
  CHECK(LayoutMap(ParseShape("u32[]{:S(2)}")).byte_size() == 4);
  // XLA gives TPU scalars tiles: the scalar is padded out to a whole tile.
  const LayoutMap scalar(ParseShape("s32[]{:T(128)}"));
  CHECK(scalar.physical_element_count() == 128);
  CHECK(scalar.byte_size() == 512);
  CHECK(scalar.LinearIndex(std::vector<int64_t>{}) == 0);
  CHECK(scalar.LogicalIndex(0) == std::vector<int64_t>{});
  CHECK_FALSE(scalar.LogicalIndex(1).has_value());
  CHECK(LayoutMap(ParseShape("f32[0,5]{1,0:T(8,128)}")).byte_size() == 0);
}

TEST_CASE("default TPU layouts are laid out as the seeds describe", "[layout]") {
  // bf16 [16,256] in T(8,128)(2,1): 2 x 2 tiles of 8x128 elements, 2 bytes each.
  Shape shape = ParseShape("bf16[16,256]");
  shape.layout = DefaultTpuLayout(shape.element_type, shape.rank());
  const LayoutMap map(shape);
  CHECK(map.byte_size() == 16 * 256 * 2);
  CHECK(map.LinearIndex(std::vector<int64_t>{9, 130}) == (1 * 2 + 1) * 1024 + 0 * 256 + 2 * 2 + 1);
  // f32 [9,129] pads to 2 x 2 tiles of 8x128 words.
  Shape f32 = ParseShape("f32[9,129]");
  f32.layout = DefaultTpuLayout(f32.element_type, f32.rank());
  CHECK(LayoutMap(f32).byte_size() == 4 * 1024 * 4);
}

TEST_CASE("indices out of range are errors", "[layout]") {
  const LayoutMap map(ParseShape("f32[3,5]{1,0:T(2,2)}"));
  CHECK_THROWS_WITH(map.LinearIndex(std::vector<int64_t>{3, 0}),
                    Catch::Contains("index 3 is out of bounds for dimension 0"));
  CHECK_THROWS_WITH(map.LinearIndex(std::vector<int64_t>{0}), Catch::Contains("has rank 2"));
  CHECK_THROWS_WITH(map.LogicalIndex(24), Catch::Contains("outside the 24 elements"));
  CHECK_THROWS_WITH(LayoutMap(ParseShape("f32[?,4]")), Catch::Contains("unbounded dynamic"));
  CHECK_THROWS_WITH(LayoutMap(ParseShape("(f32[2])")), Catch::Contains("tuple"));
  CHECK_THROWS_WITH(LayoutMap(ParseShape("f32[4294967296,4294967296]")), Catch::Contains("too large"));
}

namespace {

// A random array shape with a random valid layout: permuted dims, up to three tiles (sometimes
// with `*` dims), sometimes seed 000 padding and L(n) tail padding.
Shape RandomShape(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const ElementType types[] = {ElementType::kS8, ElementType::kBF16, ElementType::kF32,
                               ElementType::kS64};
  const int64_t rank = pick(0, 4);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i) dims.push_back(pick(1, 11));
  Layout layout;
  layout.minor_to_major = MajorToMinorOrder(rank);
  std::shuffle(layout.minor_to_major.begin(), layout.minor_to_major.end(), rng);
  int64_t current_rank = rank;
  const int64_t tiles = rank == 0 ? pick(0, 1) : pick(0, 3);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t tile_rank = rank == 0 ? 1 : pick(1, std::min<int64_t>(current_rank, 3));
    Tile tile;
    int64_t combined = 0;
    for (int64_t i = 0; i < tile_rank; ++i) {
      const bool star = i + 1 < tile_rank && pick(0, 5) == 0;
      tile.dims.push_back(star ? kCombineDimension : pick(1, 6));
      combined += star ? 1 : 0;
    }
    current_rank = std::max(current_rank, tile_rank) + tile_rank - 2 * combined;
    layout.tiles.push_back(tile);
  }
  if (rank > 0 && pick(0, 4) == 0) {
    for (int64_t d : dims) layout.padded_dimensions.push_back(d + pick(0, 3));
  }
  if (pick(0, 4) == 0) layout.tail_padding_alignment_in_elements = pick(2, 9);
  return Shape::Array(types[pick(0, 3)], dims, layout);
}

}  // namespace

TEST_CASE("property: every element has its own place and LogicalIndex inverts LinearIndex", "[layout][property]") {
  std::mt19937 rng(20261121);
  for (int trial = 0; trial < 2000; ++trial) {
    const Shape shape = RandomShape(rng);
    INFO(ToString(shape) << " padded_dimensions " << shape.layout->padded_dimensions.size());
    const LayoutMap map(shape);
    std::set<int64_t> seen;
    std::vector<int64_t> index(shape.dims.size(), 0);
    for (int64_t k = 0; k < map.element_count(); ++k) {
      const int64_t linear = map.LinearIndex(index);
      REQUIRE(linear >= 0);
      REQUIRE(linear < map.physical_element_count());
      REQUIRE(seen.insert(linear).second);  // distinct elements never share a place
      REQUIRE(map.LogicalIndex(linear) == index);
      for (std::size_t d = index.size(); d-- > 0;) {
        if (++index[d] < shape.dims[d]) break;
        index[d] = 0;
      }
    }
    // Every other place is padding.
    int64_t padding = 0;
    for (int64_t linear = 0; linear < map.physical_element_count(); ++linear) {
      padding += map.LogicalIndex(linear).has_value() ? 0 : 1;
    }
    REQUIRE(padding == map.physical_element_count() - map.element_count());
  }
}
