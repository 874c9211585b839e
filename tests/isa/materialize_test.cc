// Materialization: the device byte image of a logical array, and back.
#include "isa/materialize.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "isa/error.h"

using namespace tpusim::isa;

namespace {

std::vector<uint8_t> Bytes(const std::string& text) { return {text.begin(), text.end()}; }

}  // namespace

TEST_CASE("seed 000: the [2 x 3] array a..f under {0,1} and {1,0}", "[materialize]") {
  const std::vector<uint8_t> abcdef = Bytes("abcdef");  // row-major a b c / d e f
  CHECK(Materialize(ParseShape("u8[2,3]{0,1}"), abcdef) == Bytes("adbecf"));
  CHECK(Materialize(ParseShape("u8[2,3]{1,0}"), abcdef) == Bytes("abcdef"));
}

TEST_CASE("seed 000: padded_dimensions [3,5], column-major", "[materialize]") {
  Layout layout;
  layout.minor_to_major = {0, 1};
  layout.padded_dimensions = {3, 5};
  const Shape shape = Shape::Array(ElementType::kU8, {2, 3}, layout);
  const std::vector<uint8_t> expected = {'a', 'd', 0, 'b', 'e', 0, 'c', 'f', 0, 0, 0, 0, 0, 0, 0};
  CHECK(Materialize(shape, Bytes("abcdef")) == expected);
  CHECK(Dematerialize(shape, expected) == Bytes("abcdef"));
}

TEST_CASE("seed 000 padding_value fills the padding", "[materialize]") {
  Layout layout;
  layout.minor_to_major = {0};
  layout.padded_dimensions = {3};
  layout.padding_value = PaddingValue::kOne;
  const std::vector<uint8_t> two_f32(8, 0);  // 0.0f, 0.0f
  const auto image = Materialize(Shape::Array(ElementType::kF32, {2}, layout), two_f32);
  const std::vector<uint8_t> expected = {0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x80, 0x3F};  // 1.0f
  CHECK(image == expected);
  layout.padding_value = PaddingValue::kLowest;
  const auto s16 = Materialize(Shape::Array(ElementType::kS16, {2}, layout), std::vector<uint8_t>(4, 0));
  CHECK(s16 == std::vector<uint8_t>{0, 0, 0, 0, 0x00, 0x80});  // INT16_MIN
}

TEST_CASE("bf16 T(8,128)(2,1) image, byte for byte, with ragged edges", "[materialize]") {
  // bf16[10,130]: 2 x 2 tiles of 8x128; element (r,c) is at tile (r/8, c/128), offset
  // (r%8/2)*256 + 2*(c%128) + r%2 inside it (seed README). Everything else is zero padding.
  const int64_t rows = 10, cols = 130;
  std::vector<uint8_t> logical(rows * cols * 2);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint16_t value = static_cast<uint16_t>(0x100 * r + c + 1);  // never zero
      std::memcpy(&logical[(r * cols + c) * 2], &value, 2);
    }
  }
  std::vector<uint8_t> expected(4 * 1024 * 2, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t tile = (r / 8) * 2 + c / 128;
      const int64_t element = tile * 1024 + (r % 8 / 2) * 256 + 2 * (c % 128) + r % 2;
      std::memcpy(&expected[element * 2], &logical[(r * cols + c) * 2], 2);
    }
  }
  const Shape shape = ParseShape("bf16[10,130]{1,0:T(8,128)(2,1)}");
  CHECK(Materialize(shape, logical) == expected);
  CHECK(Dematerialize(shape, expected) == logical);
}

TEST_CASE("materialization errors say what is wrong", "[materialize]") {
  CHECK_THROWS_WITH(Materialize(ParseShape("f32[2,3]{1,0}"), std::vector<uint8_t>(20)),
                    Catch::Contains("the logical array of f32[2,3]{1,0} must be 24 bytes, got 20"));
  CHECK_THROWS_WITH(Dematerialize(ParseShape("f32[2,3]{1,0:T(8,128)}"), std::vector<uint8_t>(24)),
                    Catch::Contains("the device image of f32[2,3]{1,0:T(8,128)} must be 4096 bytes"));
  CHECK_THROWS_WITH(Materialize(ParseShape("c64[2]{0}"), std::vector<uint8_t>(16)),
                    Catch::Contains("element type c64 is not supported"));
  CHECK_THROWS_WITH(Materialize(ParseShape("s8[2]{0:E(4)}"), std::vector<uint8_t>(2)),
                    Catch::Contains("E(4) packing"));
}

namespace {

// The definition, one element at a time: image[LinearIndex(index)] = logical[k].
std::vector<uint8_t> ReferenceImage(const LayoutMap& map, const std::vector<uint8_t>& logical) {
  const int64_t width = ElementByteWidth(map.shape().element_type);
  std::vector<uint8_t> image(map.byte_size(), 0);
  std::vector<int64_t> index(map.shape().dims.size(), 0);
  for (int64_t k = 0; k < map.element_count(); ++k) {
    std::memcpy(&image[map.LinearIndex(index) * width], &logical[k * width], width);
    for (std::size_t d = index.size(); d-- > 0;) {
      if (++index[d] < map.shape().dims[d]) break;
      index[d] = 0;
    }
  }
  return image;
}

}  // namespace

TEST_CASE("property: materialize matches the definition and dematerialize inverts it", "[materialize][property]") {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const char* layouts_2d[] = {"{1,0}", "{0,1}", "{1,0:T(8,128)}", "{0,1:T(8,128)(2,1)}",
                              "{1,0:T(2,3)(2,1)}", "{1,0:T(4,4)(2,2)}", "{1,0:T(*,4)}",
                              "{1,0:T(8,128)(4,1)}", "{0,1:T(3)(2)L(7)}"};
  const char* types[] = {"u8", "bf16", "f32", "s64"};
  for (int trial = 0; trial < 300; ++trial) {
    const std::string text = std::string(types[pick(0, 3)]) + "[" + std::to_string(pick(1, 20)) +
                             "," + std::to_string(pick(1, 300)) + "]" + layouts_2d[pick(0, 8)];
    INFO(text);
    const LayoutMap map(ParseShape(text));
    std::vector<uint8_t> logical(map.element_count() * ElementByteWidth(map.shape().element_type));
    for (auto& byte : logical) byte = static_cast<uint8_t>(pick(0, 255));
    std::vector<uint8_t> image(map.byte_size(), 0xAA);  // stale bytes must be overwritten
    MaterializeInto(map, logical, image);
    REQUIRE(image == ReferenceImage(map, logical));
    std::vector<uint8_t> back(logical.size());
    DematerializeInto(map, image, back);
    REQUIRE(back == logical);
  }
}

TEST_CASE("rank 3 and rank 4 layouts with permuted dims", "[materialize][property]") {
  std::mt19937 rng(11);
  const char* shapes[] = {"bf16[3,17,260]{2,0,1:T(8,128)(2,1)}", "f32[2,3,5,7]{0,2,1,3:T(2,4)}",
                          "s8[4,33,129]{1,2,0:T(8,128)(4,1)}", "f32[5,6,7]{2,1,0:T(*,*,4)}",
                          "bf16[5]{0:T(1024)(128)(2,1)}"};
  for (const char* text : shapes) {
    INFO(text);
    const LayoutMap map(ParseShape(text));
    std::vector<uint8_t> logical(map.element_count() * ElementByteWidth(map.shape().element_type));
    for (auto& byte : logical) byte = static_cast<uint8_t>(rng());
    const auto image = Materialize(map.shape(), logical);
    CHECK(image == ReferenceImage(map, logical));
    CHECK(Dematerialize(map.shape(), image) == logical);
  }
}
