// Tests for compiler/eval/dot.h. Expected values: seed 003's Dot table (vector.vector -> scalar,
// matrix.vector -> vector, matrix.matrix -> matrix) on small hand-multiplied arrays; REFERENCE.md
// section 2 and DESIGN.md's numerics (accumulate in f32 for bf16, in row-major order of the
// contracting index, round once), checked on sums whose f32 and bf16 results are worked out below.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "compiler/eval/dot.h"
#include "compiler/eval/literal_util.h"
#include "compiler/hlo/literal.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Literal;
using isa::ElementType;

Literal F32(std::vector<int64_t> dims, const std::vector<double>& values) {
  return Literal::FromDoubles(ElementType::kF32, std::move(dims), values);
}

DotDimensions Contract(std::vector<int64_t> lhs, std::vector<int64_t> rhs) {
  DotDimensions dims;
  dims.lhs_contracting_dims = std::move(lhs);
  dims.rhs_contracting_dims = std::move(rhs);
  return dims;
}

TEST_CASE("dot: seed 003's three forms", "[eval]") {
  // vector [n] dot vector [n] -> scalar: {1, 2, 3} . {4, 5, 6} = 32.
  const Literal vv =
      Dot(F32({3}, {1, 2, 3}), F32({3}, {4, 5, 6}), Contract({0}, {0}), ElementType::kF32);
  CHECK(vv.dims().empty());
  CHECK(ToDoubles(vv) == std::vector<double>{32});
  // matrix [m x k] dot vector [k] -> vector [m]: {{1, 2}, {3, 4}} . {5, 6} = {17, 39}.
  const Literal m = F32({2, 2}, {1, 2, 3, 4});
  CHECK(ToDoubles(Dot(m, F32({2}, {5, 6}), Contract({1}, {0}), ElementType::kF32)) ==
        std::vector<double>{17, 39});
  // matrix . matrix: {{1, 2}, {3, 4}} . {{5, 6}, {7, 8}} = {{19, 22}, {43, 50}}.
  const Literal mm = Dot(m, F32({2, 2}, {5, 6, 7, 8}), Contract({1}, {0}), ElementType::kF32);
  CHECK(mm.dims() == std::vector<int64_t>{2, 2});
  CHECK(ToDoubles(mm) == std::vector<double>{19, 22, 43, 50});
}

TEST_CASE("dot: general dimension numbers, output is batch, lhs free, rhs free", "[eval]") {
  // lhs [k=2, m=3] contracting dim 0 is lhs^T: {{1, 2, 3}, {4, 5, 6}}^T . {{1}, {1}} = {5, 7, 9}.
  const Literal lhs = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Literal t = Dot(lhs, F32({2, 1}, {1, 1}), Contract({0}, {0}), ElementType::kF32);
  CHECK(t.dims() == std::vector<int64_t>{3, 1});
  CHECK(ToDoubles(t) == std::vector<double>{5, 7, 9});
  // Batch: lhs [b=2, m=1, k=2], rhs [k=2, b=2] (batch dim last on the rhs).
  // batch 0: {1, 2} . {1, 3} = 7; batch 1: {3, 4} . {2, 4} = 22. Output [b, m] = {{7}, {22}}.
  DotDimensions dims = Contract({2}, {0});
  dims.lhs_batch_dims = {0};
  dims.rhs_batch_dims = {1};
  const Literal b =
      Dot(F32({2, 1, 2}, {1, 2, 3, 4}), F32({2, 2}, {1, 2, 3, 4}), dims, ElementType::kF32);
  CHECK(b.dims() == std::vector<int64_t>{2, 1});
  CHECK(ToDoubles(b) == std::vector<double>{7, 22});
  // Two contracting dims: the full contraction of {{1, 2}, {3, 4}} with itself is 30.
  const Literal m = F32({2, 2}, {1, 2, 3, 4});
  CHECK(ToDoubles(Dot(m, m, Contract({0, 1}, {0, 1}), ElementType::kF32)) ==
        std::vector<double>{30});
  // No contracting dims: the outer product.
  CHECK(ToDoubles(Dot(F32({2}, {1, 2}), F32({2}, {3, 4}), Contract({}, {}), ElementType::kF32)) ==
        std::vector<double>{3, 4, 6, 8});
}

TEST_CASE("dot: bf16 inputs accumulate in f32 and round once", "[eval]") {
  // 1 + 256 * 2^-8: in f32 the sum is exactly 2. Accumulating in bf16 would stop at 1, because
  // 1 + 2^-8 is a tie that rounds back to 1 at every step.
  std::vector<double> lhs(257, 0x1p-8);
  lhs[0] = 1;
  const std::vector<double> ones(257, 1);
  const Literal result = Dot(Literal::FromDoubles(ElementType::kBF16, {257}, lhs),
                             Literal::FromDoubles(ElementType::kBF16, {257}, ones),
                             Contract({0}, {0}), ElementType::kBF16);
  CHECK(result.element_type() == ElementType::kBF16);
  CHECK(ToDoubles(result) == std::vector<double>{2});
  // The f32 sum 1 + 2^-8 + 2^-9 + 2^-9 = 1 + 2^-7 exactly; rounded once to bf16 it is 1 + 2^-7
  // (per-product rounding to bf16 partial sums would give 1).
  const Literal once =
      Dot(Literal::FromDoubles(ElementType::kBF16, {4}, {1, 0x1p-8, 0x1p-9, 0x1p-9}),
          Literal::FromDoubles(ElementType::kBF16, {4}, {1, 1, 1, 1}), Contract({0}, {0}),
          ElementType::kBF16);
  CHECK(ToDoubles(once) == std::vector<double>{1 + 0x1p-7});
}

TEST_CASE("dot: f32 sums run in increasing order of the contracting index", "[eval]") {
  // 2^24 + 1 rounds to 2^24 (a tie, to even), then - 2^24 gives 0; the reverse order would give 1.
  CHECK(ToDoubles(Dot(F32({3}, {0x1p24, 1, -0x1p24}), F32({3}, {1, 1, 1}), Contract({0}, {0}),
                      ElementType::kF32)) == std::vector<double>{0});
  // -2^24 + 1 = -(2^24 - 1) is exact in f32, so this order gives 1.
  CHECK(ToDoubles(Dot(F32({3}, {-0x1p24, 1, 0x1p24}), F32({3}, {1, 1, 1}), Contract({0}, {0}),
                      ElementType::kF32)) == std::vector<double>{1});
  CHECK(ToDoubles(Dot(F32({3}, {1, 0x1p24, -0x1p24}), F32({3}, {1, 1, 1}), Contract({0}, {0}),
                      ElementType::kF32)) == std::vector<double>{0});
  CHECK(ToDoubles(Dot(F32({3}, {0x1p24, -0x1p24, 1}), F32({3}, {1, 1, 1}), Contract({0}, {0}),
                      ElementType::kF32)) == std::vector<double>{1});
}

TEST_CASE("dot: integers multiply and add with wrapping in the output type", "[eval]") {
  const Literal a = FromInts(ElementType::kS8, {2}, {127, -128});
  const Literal b = FromInts(ElementType::kS8, {2}, {127, 127});
  // 127 * 127 - 128 * 127 = -127, as s32; as s8 it would wrap the same way (-127 fits).
  CHECK(ToInts(Dot(a, b, Contract({0}, {0}), ElementType::kS32)) == std::vector<int64_t>{-127});
  // s8 output: 127 * 127 = 16129 = 63 * 256 + 1 -> 1.
  CHECK(ToInts(Dot(FromInts(ElementType::kS8, {1}, {127}), FromInts(ElementType::kS8, {1}, {127}),
                   Contract({0}, {0}), ElementType::kS8)) == std::vector<int64_t>{1});
  // s32: 65536 * 65536 + 5 wraps to 5.
  CHECK(ToInts(Dot(FromInts(ElementType::kS32, {2}, {65536, 5}),
                   FromInts(ElementType::kS32, {2}, {65536, 1}), Contract({0}, {0}),
                   ElementType::kS32)) == std::vector<int64_t>{5});
}

TEST_CASE("dot: mixed operand types convert to the accumulator first", "[eval]") {
  // s8 x bf16 -> f32 (the dot_bf16 workloads convert s8 first; a direct mixed dot also works).
  const Literal result = Dot(FromInts(ElementType::kS8, {2}, {3, -2}),
                             Literal::FromDoubles(ElementType::kBF16, {2}, {0.5, 1.5}),
                             Contract({0}, {0}), ElementType::kF32);
  CHECK(ToDoubles(result) == std::vector<double>{-1.5});
}

TEST_CASE("dot: empty contraction gives zeros, bad dimension numbers are errors", "[eval]") {
  CHECK(ToDoubles(Dot(F32({2, 0}, {}), F32({0, 3}, {}), Contract({1}, {0}), ElementType::kF32)) ==
        std::vector<double>(6, 0));
  CHECK_THROWS_WITH(
      Dot(F32({2, 3}, std::vector<double>(6, 1)), F32({2, 3}, std::vector<double>(6, 1)),
          Contract({1}, {0}), ElementType::kF32),
      Catch::Contains("differ in size"));
  CHECK_THROWS_WITH(Dot(F32({2}, {1, 2}), F32({2}, {1, 2}), Contract({1}, {0}), ElementType::kF32),
                    Catch::Contains("out of range"));
}

}  // namespace
}  // namespace tpusim::eval
