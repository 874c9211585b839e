// XLA's text form of shapes and layouts: parse, print, validate.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <string>

#include "isa/error.h"
#include "isa/shape.h"

using namespace tpusim::isa;

TEST_CASE("shapes print exactly as they parse", "[shape_text]") {
  const char* kShapes[] = {
      "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}",  // seed 002
      "u32[]{:S(2)}",
      "s32[]{:T(128)}",
      "f32[]",
      "pred[7]{0}",
      "f32[<=10,5]{1,0}",
      "f32[?,5]",
      "token[]",
      "()",
      "(f32[2,3]{1,0}, (s32[], u8[4]{0:T(512)(128)(4,1)}), ())",
      "(f16[1024,1024]{1,0:T(8,128)(2,1)S(3)}, f16[1024,1024]{1,0:T(8,128)(2,1)}, u32[]{:S(2)})",
      "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
      "bf16[2048]{0:T(1024)(128)(2,1)}",
      "f32[3]{0:L(8)}",
      "s4[16]{0:E(4)}",
      "f32[10]{0:D(C)T(128)L(4)#(s32)*(s64)E(32)S(1)SC(0:5,7)(0:9)P(f32[12]{0})M(8)}",
      "f32[4,4]{1,0:D(D,C+~)}",
      "c64[2]{0}",
      "f8e4m3fn[16,128]{1,0:T(8,128)(4,1)}",
  };
  for (const char* text : kShapes) {
    INFO(text);
    CHECK(ToString(ParseShape(text)) == text);
  }
}

TEST_CASE("a parsed shape has the fields its text says", "[shape_text]") {
  const Shape shape = ParseShape("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}");
  CHECK_FALSE(shape.is_tuple);
  CHECK(shape.element_type == ElementType::kBF16);
  CHECK(shape.dims == std::vector<int64_t>{8, 1, 1280, 16384});
  REQUIRE(shape.layout.has_value());
  CHECK(shape.layout->minor_to_major == std::vector<int64_t>{3, 2, 0, 1});
  REQUIRE(shape.layout->tiles.size() == 2);
  CHECK(shape.layout->tiles[0].dims == std::vector<int64_t>{8, 128});
  CHECK(shape.layout->tiles[1].dims == std::vector<int64_t>{2, 1});
  CHECK(shape.layout->memory_space == kMemorySpaceVmem);

  const Shape dynamic = ParseShape("s32[<=4,?,3]");
  CHECK(dynamic.dims == std::vector<int64_t>{4, kUnboundedSize, 3});
  CHECK(dynamic.dynamic_dims == std::vector<bool>{true, true, false});
  CHECK_FALSE(dynamic.layout.has_value());

  const Shape combined = ParseShape("f32[2,3]{1,0:T(*,2)}");
  CHECK(combined.layout->tiles[0].dims == std::vector<int64_t>{kCombineDimension, 2});

  const Shape tuple = ParseShape("( f32[2] , (s8[]) )");
  REQUIRE(tuple.is_tuple);
  REQUIRE(tuple.tuple_shapes.size() == 2);
  CHECK(tuple.tuple_shapes[1].tuple_shapes[0].element_type == ElementType::kS8);
  CHECK(ToString(tuple) == "(f32[2], (s8[]))");
}

TEST_CASE("ParseShapeAt reads one shape out of a longer text", "[shape_text]") {
  const std::string line = "%x = f32[2,3]{1,0} parameter(0)";
  std::size_t pos = 5;
  const Shape shape = ParseShapeAt(line, pos);
  CHECK(ToString(shape) == "f32[2,3]{1,0}");
  CHECK(line.substr(pos) == " parameter(0)");
  // A '{' that does not start with an integer or ':' is not a layout (XLA's rule).
  const std::string literal = "f32[2] {a}";
  pos = 0;
  CHECK_FALSE(ParseShapeAt(literal, pos).layout.has_value());
  CHECK(pos == 6);
}

TEST_CASE("every shape in the real TPU v4 HLO lines parses and prints back", "[shape_text][validation]") {
  const std::string path = std::string(TPUSIM_SHARED_DIR) + "/validation/tpu_v4/tpu_hlo_instructions.txt";
  std::ifstream in(path);
  INFO("reading " << path << " (the shared/ folder beside the checkout; set TPUSIM_SHARED_DIR)");
  REQUIRE(in.good());
  // An array shape starts at a type name followed by '['; a tuple shape at "= (" (an instruction's
  // result) or "((" (a tuple operand of copy-done).
  const std::regex array_start(R"(\b(pred|bf16|[suf][0-9]+|f8e[0-9a-z]+)\[)");
  int lines = 0, arrays = 0, tuples = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++lines;
    auto check_at = [&](std::size_t start) {
      std::size_t pos = start;
      const Shape shape = ParseShapeAt(line, pos);
      INFO(line);
      REQUIRE(ToString(shape) == line.substr(start, pos - start));
      ValidateLayout(shape);
    };
    for (auto it = std::sregex_iterator(line.begin(), line.end(), array_start);
         it != std::sregex_iterator(); ++it) {
      check_at(static_cast<std::size_t>(it->position()));
      ++arrays;
    }
    for (const char* opener : {"= (", "(("}) {
      const std::size_t at = line.find(opener);
      if (at == std::string::npos) continue;
      check_at(at + std::string(opener).size() - 1);
      ++tuples;
    }
  }
  // Counts from the file itself: 180 lines; `grep -oE '[a-z0-9]+\[' | wc -l` gives 620 array
  // shapes (540 f16, 80 u32); 40 copy-start results and 40 copy-done operands are tuples.
  CHECK(lines == 180);
  CHECK(arrays == 620);
  CHECK(tuples == 80);
}

TEST_CASE("malformed shapes are errors with the offset of the problem", "[shape_text]") {
  struct Case {
    const char* text;
    std::size_t offset;
    const char* message;
  };
  const Case kCases[] = {
      {"f32[2,3", 7, "expected ']' to close the dimensions, found end of text"},
      {"f33[2]", 0, "unknown element type 'f33'"},
      {"F32[2]", 0, "unknown element type 'F32'"},
      {"f32(2)", 3, "expected '[' after the element type"},
      {"f32[2,x]", 6, "expected a dimension size"},
      {"f32[2]{0", 8, "expected '}' to close the layout"},
      {"f32[2]{0:T(8,}", 13, "expected a tile size or '*'"},
      {"f32[2]{0:T}", 10, "expected '(' after T"},
      {"f32[2]{0:Q(1)}", 9, "unknown layout attribute 'Q'"},
      {"f32[2]{0:S(x)}", 11, "expected an integer in S(...)"},
      {"f32[2]{0:#(q)}", 11, "expected an element type in #(...)"},
      {"f32[<5]", 5, "expected '<=' for a bounded dynamic dimension"},
      {"(f32[2], ", 9, "expected a shape"},
      {"f32[99999999999999999999]", 4, "a dimension size is too large"},
      {"f32[20000000000000000000]", 4, "a dimension size is too large"},  // wraps uint64 if unchecked
      {"f32[9223372036854775808]", 4, "a dimension size is too large"},   // INT64_MAX + 1
      {"f32[2] x", 7, "unexpected text after the shape"},
      {"", 0, "expected a shape"},
  };
  for (const Case& c : kCases) {
    INFO(c.text);
    try {
      ParseShape(c.text);
      FAIL("parsed");
    } catch (const tpusim::ParseError& error) {
      CHECK(error.offset() == c.offset);
      CHECK_THAT(error.what(), Catch::Contains(c.message));
    }
  }
}

TEST_CASE("deeply nested tuples are refused, not a stack overflow", "[shape_text]") {
  const std::string deep = std::string(100000, '(') + std::string(100000, ')');
  CHECK_THROWS_WITH(ParseShape(deep), Catch::Contains("nested more than"));
}

TEST_CASE("FormatParseError gives file:line:col and a caret", "[shape_text]") {
  const std::string text = "line one\nf32[2,3";
  try {
    ParseShape(std::string_view(text).substr(9));
    FAIL("parsed");
  } catch (const tpusim::ParseError& error) {
    const tpusim::ParseError shifted(error.offset() + 9, error.what());
    CHECK(tpusim::FormatParseError("model.hlo", text, shifted) ==
          "model.hlo:2:8: expected ']' to close the dimensions, found end of text\n"
          "  f32[2,3\n"
          "         ^");
  }
}

TEST_CASE("invalid layouts say what is wrong", "[shape_text]") {
  const std::pair<const char*, const char*> kCases[] = {
      {"f32[2,3]{0,0}", "minor_to_major {0,0} is not a permutation of the 2 dimensions"},
      {"f32[2,3]{0}", "minor_to_major {0} is not a permutation"},
      {"f32[2,3]{1,2}", "is not a permutation"},
      {"f32[2,3]{1,0:T(0,128)}", "has a dimension of size 0"},
      {"f32[2,3]{1,0:T(-2,128)}", "has a dimension of size -2"},
      {"f32[8]{0:T(8,128)}", "tile (8,128) of f32[8]{0:T(8,128)} has 2 dimensions but applies to a shape of rank 1"},
      {"f32[8,8]{1,0:T(2,*)}", "ends in '*'"},
      {"f32[8]{0:L(0)}", "L(0) must be at least 1"},
      {"f32[8]{0:E(-1)}", "E(-1) is negative"},
  };
  for (const auto& [text, message] : kCases) {
    INFO(text);
    CHECK_THROWS_WITH(ValidateLayout(ParseShape(text)), Catch::Contains(message));
  }
  // A later tile may be longer than the shape was, because the first tile added dims.
  CHECK_NOTHROW(ValidateLayout(ParseShape("bf16[256]{0:T(1024)(128)(2,1)}")));
  CHECK_NOTHROW(ValidateLayout(ParseShape("s32[]{:T(128)}")));
  // Tuples are validated element by element.
  CHECK_THROWS_WITH(ValidateLayout(ParseShape("(f32[2]{0}, f32[2,2]{0})")), Catch::Contains("f32[2,2]{0}"));

  Layout padded;
  padded.minor_to_major = {0};
  padded.padded_dimensions = {1};
  CHECK_THROWS_WITH(ValidateLayout(Shape::Array(ElementType::kF32, {2}, padded)),
                    Catch::Contains("padded dimension 0 (1) is smaller than the dimension (2)"));
}

TEST_CASE("default TPU layouts", "[shape_text]") {
  auto text = [](ElementType type, int64_t rank) { return ToString(DefaultTpuLayout(type, rank)); };
  CHECK(text(ElementType::kBF16, 2) == "{1,0:T(8,128)(2,1)}");
  CHECK(text(ElementType::kF16, 4) == "{3,2,1,0:T(8,128)(2,1)}");
  CHECK(text(ElementType::kF32, 2) == "{1,0:T(8,128)}");
  CHECK(text(ElementType::kS32, 3) == "{2,1,0:T(8,128)}");
  CHECK(text(ElementType::kS8, 2) == "{1,0:T(8,128)(4,1)}");
  CHECK(text(ElementType::kPred, 2) == "{1,0:T(8,128)(4,1)}");
  CHECK(text(ElementType::kF32, 0) == "{}");
  CHECK(text(ElementType::kBF16, 1) == "{0:T(1024)(128)(2,1)}");
  CHECK(text(ElementType::kF32, 1) == "{0:T(1024)}");
  CHECK(text(ElementType::kC64, 2) == "{1,0}");
}
