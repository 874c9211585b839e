// Tests for compiler/eval/shape_ops.h. Expected values are seed 003's worked examples (Broadcast,
// Collapse, Concatenate, Reshape, Slice, DynamicSlice, DynamicUpdateSlice), copied from the
// document, and for the ops it only defines in words (Pad, Rev, Transpose, iota, clamped dynamic
// indices) values worked out by hand from those definitions, shown in the comments.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/eval/literal_util.h"
#include "compiler/eval/shape_ops.h"
#include "compiler/hlo/literal.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Literal;
using isa::ElementType;

Literal F32(std::vector<int64_t> dims, const std::vector<double>& values) {
  return Literal::FromDoubles(ElementType::kF32, std::move(dims), values);
}

// Seed 003's v = f32[4x2x3] {{{10, 11, 12}, {15, 16, 17}}, {{20, 21, 22}, {25, 26, 27}},
// {{30, 31, 32}, {35, 36, 37}}, {{40, 41, 42}, {45, 46, 47}}}.
Literal SeedV() {
  return F32({4, 2, 3}, {10, 11, 12, 15, 16, 17, 20, 21, 22, 25, 26, 27,
                         30, 31, 32, 35, 36, 37, 40, 41, 42, 45, 46, 47});
}

// Seed 003's b = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10, 11}} (Slice, DynamicSlice, ...).
Literal SeedB() { return F32({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}); }
Literal SeedA() { return F32({5}, {0, 1, 2, 3, 4}); }

TEST_CASE("broadcast: seed 003's scalar 2.0f with broadcast_sizes {2, 3}", "[eval]") {
  const Literal result = Broadcast(F32({}, {2.0}), std::vector<int64_t>{2, 3}, {});
  CHECK(result.dims() == std::vector<int64_t>{2, 3});
  CHECK(ToDoubles(result) == std::vector<double>(6, 2.0));
}

TEST_CASE("broadcast: seed 003's prepended dims, output[i0, j0] = operand[j0]", "[eval]") {
  // Broadcast(operand {1, 2, 3}, broadcast_sizes {2}) has dims {2, 3}; operand dim 0 -> output
  // dim 1.
  const Literal result =
      Broadcast(F32({3}, {1, 2, 3}), std::vector<int64_t>{2, 3}, std::vector<int64_t>{1});
  CHECK(ToDoubles(result) == std::vector<double>{1, 2, 3, 1, 2, 3});
  // HLO's dimensions={0}: operand dim 0 -> output dim 0 (each row constant).
  const Literal rows =
      Broadcast(F32({2}, {1, 2}), std::vector<int64_t>{2, 3}, std::vector<int64_t>{0});
  CHECK(ToDoubles(rows) == std::vector<double>{1, 1, 1, 2, 2, 2});
  CHECK_THROWS_WITH(
      Broadcast(F32({3}, {1, 2, 3}), std::vector<int64_t>{2, 4}, std::vector<int64_t>{1}),
      Catch::Contains("size 3"));
}

TEST_CASE("reshape: seed 003's Collapse and Reshape examples", "[eval]") {
  const Literal v = SeedV();
  // Collapse(v, {0,1,2}) and Reshape(v, {0,1,2}, {24}).
  CHECK(ToDoubles(Reshape(v, std::vector<int64_t>{24})) ==
        std::vector<double>{10, 11, 12, 15, 16, 17, 20, 21, 22, 25, 26, 27,
                            30, 31, 32, 35, 36, 37, 40, 41, 42, 45, 46, 47});
  // Collapse(v, {0,1}) == f32[4x6] {{10, 11, 12, 15, 16, 17}, ...}.
  const Literal v01 = Reshape(v, std::vector<int64_t>{4, 6});
  CHECK(v01.dims() == std::vector<int64_t>{4, 6});
  CHECK(ToDoubles(v01)[6] == 20);
  // Collapse(v, {1,2}) == f32[8x3] and Reshape(v, {0,1,2}, {8,3}): {{10,11,12}, {15,16,17}, ...}.
  const Literal v83 = Reshape(v, std::vector<int64_t>{8, 3});
  CHECK(ToDoubles(v83) == ToDoubles(v));
  CHECK(v83.dims() == std::vector<int64_t>{8, 3});
  // Reshape(f32[1x1] {{5}}, {0,1}, {}) == 5 and Reshape(5, {}, {1,1}) == f32[1x1] {{5}}.
  const Literal scalar = Reshape(F32({1, 1}, {5}), std::vector<int64_t>{});
  CHECK(scalar.dims().empty());
  CHECK(ToDoubles(scalar) == std::vector<double>{5});
  CHECK(Reshape(scalar, std::vector<int64_t>{1, 1}).dims() == std::vector<int64_t>{1, 1});
  CHECK_THROWS_WITH(Reshape(v, std::vector<int64_t>{5, 5}), Catch::Contains("24 elements"));
}

TEST_CASE("reshape with a dimension order: seed 003's out-of-order collapses", "[eval]") {
  // Reshape(v, dims, sizes) = Reshape(Transpose(v, dims), sizes) (seed 003, Transpose section).
  const Literal t = Transpose(SeedV(), std::vector<int64_t>{1, 2, 0});
  CHECK(t.dims() == std::vector<int64_t>{2, 3, 4});
  // v021_24 == f32[24] {10, 20, 30, 40, 11, 21, 31, 41, 12, 22, 32, 42,
  //                     15, 25, 35, 45, 16, 26, 36, 46, 17, 27, 37, 47}
  const std::vector<double> v021 = {10, 20, 30, 40, 11, 21, 31, 41, 12, 22, 32, 42,
                                    15, 25, 35, 45, 16, 26, 36, 46, 17, 27, 37, 47};
  CHECK(ToDoubles(Reshape(t, std::vector<int64_t>{24})) == v021);
  // v021_83 == f32[8x3] {{10, 20, 30}, {40, 11, 21}, ...} and v021_262 == f32[2x6x2]: same order.
  CHECK(ToDoubles(Reshape(t, std::vector<int64_t>{8, 3})) == v021);
  const Literal v262 = Reshape(t, std::vector<int64_t>{2, 6, 2});
  CHECK(v262.dims() == std::vector<int64_t>{2, 6, 2});
  CHECK(ToDoubles(v262) == v021);
}

TEST_CASE("transpose: input_dimensions[permutation[i]] = output_dimensions[i] (seed 003)",
          "[eval]") {
  // {{1, 2, 3}, {4, 5, 6}} transposed is {{1, 4}, {2, 5}, {3, 6}}.
  const Literal t = Transpose(F32({2, 3}, {1, 2, 3, 4, 5, 6}), std::vector<int64_t>{1, 0});
  CHECK(t.dims() == std::vector<int64_t>{3, 2});
  CHECK(ToDoubles(t) == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK_THROWS_AS(Transpose(t, std::vector<int64_t>{0, 0}), Error);
  CHECK(Transpose(F32({}, {7}), std::vector<int64_t>{}).dims().empty());
}

TEST_CASE("concatenate: seed 003's 1-D and 2-D examples", "[eval]") {
  // Concat({{2, 3}, {4, 5}, {6, 7}}, 0) >>> {2, 3, 4, 5, 6, 7}
  const std::vector<Literal> parts = {F32({2}, {2, 3}), F32({2}, {4, 5}), F32({2}, {6, 7})};
  CHECK(ToDoubles(Concatenate(parts, 0)) == std::vector<double>{2, 3, 4, 5, 6, 7});
  // a = {{1, 2}, {3, 4}, {5, 6}}, b = {{7, 8}}: Concat({a, b}, 0) >>> {{1,2},{3,4},{5,6},{7,8}}
  const std::vector<Literal> ab = {F32({3, 2}, {1, 2, 3, 4, 5, 6}), F32({1, 2}, {7, 8})};
  const Literal rows = Concatenate(ab, 0);
  CHECK(rows.dims() == std::vector<int64_t>{4, 2});
  CHECK(ToDoubles(rows) == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8});
  // Along dim 1: {{1, 2}, {3, 4}} ++ {{5}, {6}} = {{1, 2, 5}, {3, 4, 6}}.
  const std::vector<Literal> cols = {F32({2, 2}, {1, 2, 3, 4}), F32({2, 1}, {5, 6})};
  CHECK(ToDoubles(Concatenate(cols, 1)) == std::vector<double>{1, 2, 5, 3, 4, 6});
  CHECK_THROWS_WITH(Concatenate(ab, 1), Catch::Contains("does not match"));
}

TEST_CASE("slice: seed 003's 1-D and 2-D examples", "[eval]") {
  // Slice(a, {2}, {4}) produces {2.0, 3.0}
  CHECK(ToDoubles(Slice(SeedA(), std::vector<int64_t>{2}, std::vector<int64_t>{4},
                        std::vector<int64_t>{1})) == std::vector<double>{2, 3});
  // Slice(b, {2, 1}, {4, 3}) produces {{7.0, 8.0}, {10.0, 11.0}}
  const Literal s = Slice(SeedB(), std::vector<int64_t>{2, 1}, std::vector<int64_t>{4, 3},
                          std::vector<int64_t>{1, 1});
  CHECK(s.dims() == std::vector<int64_t>{2, 2});
  CHECK(ToDoubles(s) == std::vector<double>{7, 8, 10, 11});
  // With strides: rows 0, 2 and columns 0, 2 of b: {{0, 2}, {6, 8}}.
  CHECK(ToDoubles(Slice(SeedB(), std::vector<int64_t>{0, 0}, std::vector<int64_t>{4, 3},
                        std::vector<int64_t>{2, 2})) == std::vector<double>{0, 2, 6, 8});
  CHECK_THROWS_AS(
      Slice(SeedA(), std::vector<int64_t>{2}, std::vector<int64_t>{6}, std::vector<int64_t>{1}),
      Error);
  // An empty slice is allowed.
  CHECK(Slice(SeedA(), std::vector<int64_t>{3}, std::vector<int64_t>{3}, std::vector<int64_t>{1})
            .element_count() == 0);
}

TEST_CASE("dynamic-slice: seed 003's 1-D and 2-D examples", "[eval]") {
  // DynamicSlice(a, {2}, {2}) produces {2.0, 3.0}
  CHECK(ToDoubles(DynamicSlice(SeedA(), std::vector<int64_t>{2}, std::vector<int64_t>{2})) ==
        std::vector<double>{2, 3});
  // DynamicSlice(b, {2, 1}, {2, 2}) produces {{7.0, 8.0}, {10.0, 11.0}}
  CHECK(ToDoubles(DynamicSlice(SeedB(), std::vector<int64_t>{2, 1}, std::vector<int64_t>{2, 2})) ==
        std::vector<double>{7, 8, 10, 11});
}

TEST_CASE("dynamic-slice: out-of-range starts are clamped so the slice fits", "[eval]") {
  // Start 4 with size 2 in a 5-element array clamps to 3: {3, 4}; start -7 clamps to 0.
  CHECK(ToDoubles(DynamicSlice(SeedA(), std::vector<int64_t>{4}, std::vector<int64_t>{2})) ==
        std::vector<double>{3, 4});
  CHECK(ToDoubles(DynamicSlice(SeedA(), std::vector<int64_t>{-7}, std::vector<int64_t>{2})) ==
        std::vector<double>{0, 1});
  // b with start {9, -1}, size {2, 2}: rows clamp to 2, columns to 0: {{6, 7}, {9, 10}}.
  CHECK(ToDoubles(DynamicSlice(SeedB(), std::vector<int64_t>{9, -1}, std::vector<int64_t>{2, 2})) ==
        std::vector<double>{6, 7, 9, 10});
}

TEST_CASE("dynamic-update-slice: seed 003's 1-D and 2-D examples", "[eval]") {
  // DynamicUpdateSlice(a, {5.0, 6.0}, {2}) produces {0.0, 1.0, 5.0, 6.0, 4.0}
  CHECK(ToDoubles(DynamicUpdateSlice(SeedA(), F32({2}, {5, 6}), std::vector<int64_t>{2})) ==
        std::vector<double>{0, 1, 5, 6, 4});
  // u = {{12, 13}, {14, 15}, {16, 17}}, s = {1, 1}:
  // {{0, 1, 2}, {3, 12, 13}, {6, 14, 15}, {9, 16, 17}}
  CHECK(ToDoubles(DynamicUpdateSlice(SeedB(), F32({3, 2}, {12, 13, 14, 15, 16, 17}),
                                     std::vector<int64_t>{1, 1})) ==
        std::vector<double>{0, 1, 2, 3, 12, 13, 6, 14, 15, 9, 16, 17});
}

TEST_CASE("dynamic-update-slice: out-of-range starts are clamped so the update fits", "[eval]") {
  // Start 4 for a 2-element update in 5 elements clamps to 3: {0, 1, 2, 5, 6}.
  CHECK(ToDoubles(DynamicUpdateSlice(SeedA(), F32({2}, {5, 6}), std::vector<int64_t>{4})) ==
        std::vector<double>{0, 1, 2, 5, 6});
  CHECK(ToDoubles(DynamicUpdateSlice(SeedA(), F32({2}, {5, 6}), std::vector<int64_t>{-3})) ==
        std::vector<double>{5, 6, 2, 3, 4});
}

// Pad: seed 003 defines edge padding (low, high; negative removes elements) and interior padding
// between neighbours, interior applied first. Each expected array below is written out by hand.
TEST_CASE("pad: edge padding on both ends", "[eval]") {
  // {1, 2, 3} with low 2, high 1, value 0: {0, 0, 1, 2, 3, 0}
  const PadDimension pad{2, 1, 0};
  CHECK(ToDoubles(Pad(F32({3}, {1, 2, 3}), F32({}, {0}), std::span(&pad, 1))) ==
        std::vector<double>{0, 0, 1, 2, 3, 0});
}

TEST_CASE("pad: interior padding", "[eval]") {
  // {1, 2, 3} with interior 2, value 9: {1, 9, 9, 2, 9, 9, 3}
  const PadDimension pad{0, 0, 2};
  CHECK(ToDoubles(Pad(F32({3}, {1, 2, 3}), F32({}, {9}), std::span(&pad, 1))) ==
        std::vector<double>{1, 9, 9, 2, 9, 9, 3});
}

TEST_CASE("pad: negative edge padding crops the interior-padded operand", "[eval]") {
  // {1, 2, 3} interior 1 is {1, 0, 2, 0, 3}; low -1, high -2 removes the first element and the
  // last two: {0, 2}.
  const PadDimension pad{-1, -2, 1};
  CHECK(ToDoubles(Pad(F32({3}, {1, 2, 3}), F32({}, {0}), std::span(&pad, 1))) ==
        std::vector<double>{0, 2});
  // Negative low with positive high: {1, 2, 3} low -2, high 2: {3, 0, 0}.
  const PadDimension mixed{-2, 2, 0};
  CHECK(ToDoubles(Pad(F32({3}, {1, 2, 3}), F32({}, {0}), std::span(&mixed, 1))) ==
        std::vector<double>{3, 0, 0});
  // Cropping everything leaves an empty array.
  const PadDimension all{-3, 0, 0};
  CHECK(Pad(F32({3}, {1, 2, 3}), F32({}, {0}), std::span(&all, 1)).element_count() == 0);
  const PadDimension too_much{-4, 0, 0};
  CHECK_THROWS_WITH(Pad(F32({3}, {1, 2, 3}), F32({}, {0}), std::span(&too_much, 1)),
                    Catch::Contains("size -1"));
}

TEST_CASE("pad: two dims with edge and interior padding", "[eval]") {
  // {{1, 2}, {3, 4}}: dim 0 low 1, interior 1; dim 1 high 1. With value 0:
  // {{0, 0, 0}, {1, 2, 0}, {0, 0, 0}, {3, 4, 0}}
  const std::vector<PadDimension> pads = {{1, 0, 1}, {0, 1, 0}};
  const Literal result = Pad(F32({2, 2}, {1, 2, 3, 4}), F32({}, {0}), pads);
  CHECK(result.dims() == std::vector<int64_t>{4, 3});
  CHECK(ToDoubles(result) == std::vector<double>{0, 0, 0, 1, 2, 0, 0, 0, 0, 3, 4, 0});
  // An empty operand padded: [0] with low 1 and high 2 is three padding values.
  const PadDimension pad{1, 2, 5};
  CHECK(ToDoubles(Pad(F32({0}, {}), F32({}, {7}), std::span(&pad, 1))) ==
        std::vector<double>{7, 7, 7});
}

TEST_CASE("reverse: index i of a reversed dim becomes N - 1 - i (seed 003's Rev)", "[eval]") {
  const Literal x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(ToDoubles(Reverse(x, std::vector<int64_t>{1})) == std::vector<double>{3, 2, 1, 6, 5, 4});
  CHECK(ToDoubles(Reverse(x, std::vector<int64_t>{0})) == std::vector<double>{4, 5, 6, 1, 2, 3});
  CHECK(ToDoubles(Reverse(x, std::vector<int64_t>{0, 1})) == std::vector<double>{6, 5, 4, 3, 2, 1});
  CHECK(Reverse(F32({0, 2}, {}), std::vector<int64_t>{0, 1}).element_count() == 0);
}

TEST_CASE("iota: the index along the iota dimension", "[eval]") {
  const Literal rows = Iota(ElementType::kS32, std::vector<int64_t>{2, 3}, 0);
  CHECK(ToInts(rows) == std::vector<int64_t>{0, 0, 0, 1, 1, 1});
  const Literal cols = Iota(ElementType::kF32, std::vector<int64_t>{2, 3}, 1);
  CHECK(ToDoubles(cols) == std::vector<double>{0, 1, 2, 0, 1, 2});
  // bf16 holds 257 as 256 (halfway between 256 and 258; ties to even).
  CHECK(ToDoubles(Iota(ElementType::kBF16, std::vector<int64_t>{258}, 0))[257] == 256);
  CHECK_THROWS_AS(Iota(ElementType::kS32, std::vector<int64_t>{2}, 1), Error);
}

TEST_CASE("data movement keeps bytes: NaN payloads and bf16 survive", "[eval]") {
  Literal x(isa::Shape::Array(ElementType::kF32, {2}));
  const uint32_t payload_nan = 0x7FA00001;  // a signalling NaN with a payload
  std::memcpy(x.mutable_bytes().data(), &payload_nan, 4);
  const Literal moved = Reverse(Broadcast(x, std::vector<int64_t>{3, 2}, std::vector<int64_t>{1}),
                                std::vector<int64_t>{1});
  uint32_t bits;
  std::memcpy(&bits, moved.bytes().data() + 4, 4);  // element (0, 1) is x[0]
  CHECK(bits == payload_nan);
  CHECK(Copy(moved) == moved);
}

}  // namespace
}  // namespace tpusim::eval
