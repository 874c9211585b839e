#include "isa/element_type.h"

#include <catch2/catch.hpp>

#include "isa/error.h"

using namespace tpusim::isa;

TEST_CASE("every XLA primitive type name parses and prints back", "[element_type]") {
  // The names of REFERENCE.md section 1 (XLA's lexer), with their bit widths from
  // primitive_util::BitWidth.
  const std::pair<const char*, int> kNames[] = {
      {"pred", 8},        {"s1", 1},          {"s2", 2},        {"s4", 4},
      {"s8", 8},          {"s16", 16},        {"s32", 32},      {"s64", 64},
      {"u1", 1},          {"u2", 2},          {"u4", 4},        {"u8", 8},
      {"u16", 16},        {"u32", 32},        {"u64", 64},      {"f16", 16},
      {"bf16", 16},       {"f32", 32},        {"f64", 64},      {"f8e5m2", 8},
      {"f8e4m3", 8},      {"f8e4m3fn", 8},    {"f8e4m3b11fnuz", 8}, {"f8e3m4", 8},
      {"f8e5m2fnuz", 8},  {"f8e4m3fnuz", 8},  {"f4e2m1fn", 4},  {"f8e8m0fnu", 8},
      {"f6e3m2fn", 6},    {"f6e2m3fn", 6},    {"c64", 64},      {"c128", 128},
      {"token", 0},       {"opaque", 0},
  };
  for (const auto& [name, bits] : kNames) {
    INFO(name);
    const auto type = ParseElementType(name);
    REQUIRE(type.has_value());
    CHECK(ElementTypeName(*type) == name);
    CHECK(ElementBitWidth(*type) == bits);
  }
  CHECK_FALSE(ParseElementType("f128").has_value());
  CHECK_FALSE(ParseElementType("BF16").has_value());
  CHECK_FALSE(ParseElementType("").has_value());
}

TEST_CASE("byte widths of the supported types", "[element_type]") {
  CHECK(ElementByteWidth(ElementType::kPred) == 1);
  CHECK(ElementByteWidth(ElementType::kBF16) == 2);
  CHECK(ElementByteWidth(ElementType::kF16) == 2);
  CHECK(ElementByteWidth(ElementType::kF32) == 4);
  CHECK(ElementByteWidth(ElementType::kS64) == 8);
  CHECK(ElementByteWidth(ElementType::kF8E4M3FN) == 1);
  CHECK(ElementByteWidth(ElementType::kF8E5M2) == 1);
}

TEST_CASE("exactly the issue's types are supported", "[element_type]") {
  int supported = 0;
  for (int i = 0; i <= static_cast<int>(ElementType::kOpaque); ++i) {
    supported += IsSupported(static_cast<ElementType>(i)) ? 1 : 0;
  }
  // pred, s8..s64, u8..u64, f16, bf16, f32, f64, f8e4m3fn, f8e5m2.
  CHECK(supported == 15);
  CHECK(IsSupported(ElementType::kF8E4M3FN));
  CHECK_FALSE(IsSupported(ElementType::kF8E4M3));
  CHECK_FALSE(IsSupported(ElementType::kS4));
  CHECK_FALSE(IsSupported(ElementType::kC64));
}

TEST_CASE("an unsupported type is a clear error", "[element_type]") {
  CHECK_NOTHROW(RequireSupported(ElementType::kBF16, "materializing"));
  CHECK_THROWS_WITH(RequireSupported(ElementType::kC64, "materializing"),
                    Catch::Contains("element type c64 is not supported by tpusim for materializing"));
  CHECK_THROWS_AS(RequireSupported(ElementType::kToken, ""), tpusim::Error);
}

TEST_CASE("type classes", "[element_type]") {
  CHECK(IsFloat(ElementType::kBF16));
  CHECK(IsFloat(ElementType::kF8E5M2));
  CHECK_FALSE(IsFloat(ElementType::kS32));
  CHECK(IsSignedInt(ElementType::kS8));
  CHECK(IsUnsignedInt(ElementType::kU64));
  CHECK_FALSE(IsInteger(ElementType::kPred));
  CHECK(IsComplex(ElementType::kC128));
}
