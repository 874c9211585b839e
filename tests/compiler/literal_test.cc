#include "compiler/hlo/literal.h"

#include <catch2/catch.hpp>

#include <cmath>

#include "isa/error.h"

using tpusim::hlo::Literal;
using namespace tpusim::isa;

TEST_CASE("a literal is zero-filled, row-major and dense whatever the layout", "[literal]") {
  const Literal literal(ParseShape("bf16[2,3]{0,1:T(8,128)(2,1)}"));
  CHECK(literal.element_count() == 6);
  CHECK(literal.bytes().size() == 12);  // 6 bf16 elements, no tile padding on the host
  for (uint8_t byte : literal.bytes()) CHECK(byte == 0);
}

TEST_CASE("literal elements convert with XLA's rules", "[literal]") {
  Literal bf16 = Literal::FromDoubles(ElementType::kBF16, {3}, {1.0, 1.0 + 1.0 / 256, -0.0});
  CHECK(bf16.GetDouble(0) == 1.0);
  CHECK(bf16.GetDouble(1) == 1.0);  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1
  CHECK(std::signbit(bf16.GetDouble(2)));
  CHECK(bf16.bytes()[0] == 0x80);  // 1.0 = 0x3F80, little-endian
  CHECK(bf16.bytes()[1] == 0x3F);

  Literal s8(Shape::Array(ElementType::kS8, {2}));
  s8.SetInt(0, 300);  // wraps: 300 - 256
  s8.SetDouble(1, 1e9);  // float -> int saturates
  CHECK(s8.GetInt(0) == 44);
  CHECK(s8.GetInt(1) == 127);
}

TEST_CASE("tuples, tokens and equality", "[literal]") {
  const Literal tuple(ParseShape("(f32[2], (s32[], pred[]), token[])"));
  REQUIRE(tuple.is_tuple());
  REQUIRE(tuple.elements().size() == 3);
  CHECK(tuple.elements()[1].elements()[0].bytes().size() == 4);
  CHECK(tuple.elements()[2].bytes().empty());  // a token has no data
  Literal a = Literal::FromDoubles(ElementType::kF32, {2}, {1, 2});
  Literal b = Literal::FromDoubles(ElementType::kF32, {2}, {1, 2});
  CHECK(a == b);
  b.SetDouble(1, 3);
  CHECK_FALSE(a == b);
  CHECK_FALSE(Literal::FromDoubles(ElementType::kS32, {2}, {1, 2}) == a);
  CHECK(Literal::Tuple({a}) == Literal::Tuple({a}));
}

TEST_CASE("literal errors", "[literal]") {
  CHECK_THROWS_WITH(Literal(ParseShape("c64[2]")), Catch::Contains("c64 is not supported"));
  CHECK_THROWS_WITH(Literal::FromBytes(ParseShape("f32[2]"), std::vector<uint8_t>(7)),
                    Catch::Contains("holds 8 bytes, got 7"));
  CHECK_THROWS_WITH(Literal::FromDoubles(ElementType::kF32, {2}, {1}), Catch::Contains("1 values for 2"));
}

TEST_CASE("row-major index helpers", "[literal]") {
  const std::vector<int64_t> dims = {2, 3, 4};
  CHECK(tpusim::hlo::RowMajorLinear(std::vector<int64_t>{1, 2, 3}, dims) == 23);
  CHECK(tpusim::hlo::RowMajorIndex(23, dims) == std::vector<int64_t>{1, 2, 3});
  CHECK(tpusim::hlo::RowMajorIndex(0, std::vector<int64_t>{}) == std::vector<int64_t>{});
}
