// Tests for compiler/eval/gather_scatter.h and sort.h. Seed 003 has no gather or scatter and only
// names Sort, so the expected values are worked out by hand from XLA's definitions (gather: an
// index vector per batch position picks the start of a slice, clamped to fit; batching dims pair
// an operand dim with an index dim; scatter: the inverse, with out-of-bounds windows skipped;
// sort: the comparator says "goes before"), shown next to each case.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "compiler/eval/gather_scatter.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/sort.h"
#include "compiler/hlo/literal.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Literal;
using isa::ElementType;

Literal F32(std::vector<int64_t> dims, const std::vector<double>& values) {
  return Literal::FromDoubles(ElementType::kF32, std::move(dims), values);
}
Literal S32(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  return FromInts(ElementType::kS32, std::move(dims), values);
}
Literal Matrix3x3() { return F32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }

TEST_CASE("gather: rows by index (take along dim 0)", "[eval]") {
  GatherDimensions dims;
  dims.offset_dims = {1};
  dims.collapsed_slice_dims = {0};
  dims.start_index_map = {0};
  dims.index_vector_dim = 1;  // == rank of the indices: each index is a 1-vector
  const Literal result = Gather(Matrix3x3(), S32({2}, {2, 0}), dims, std::vector<int64_t>{1, 3});
  CHECK(result.dims() == std::vector<int64_t>{2, 3});
  CHECK(ToDoubles(result) == std::vector<double>{7, 8, 9, 1, 2, 3});
}

TEST_CASE("gather: columns by index, offset dim before the batch dim", "[eval]") {
  GatherDimensions dims;
  dims.offset_dims = {0};
  dims.collapsed_slice_dims = {1};
  dims.start_index_map = {1};
  dims.index_vector_dim = 1;
  // out[i][b] = operand[i][index[b]]: {{3, 1}, {6, 4}, {9, 7}}
  const Literal result = Gather(Matrix3x3(), S32({2}, {2, 0}), dims, std::vector<int64_t>{3, 1});
  CHECK(result.dims() == std::vector<int64_t>{3, 2});
  CHECK(ToDoubles(result) == std::vector<double>{3, 1, 6, 4, 9, 7});
}

TEST_CASE("gather: 2x2 windows, start indices clamped so the window fits", "[eval]") {
  std::vector<double> values;
  for (int v = 0; v < 16; ++v) values.push_back(v);
  GatherDimensions dims;
  dims.offset_dims = {1, 2};
  dims.start_index_map = {0, 1};
  dims.index_vector_dim = 1;
  // Start (1, 1): {{5, 6}, {9, 10}}. Start (3, 3) clamps to (2, 2): {{10, 11}, {14, 15}}.
  // Start (-5, 1) clamps to (0, 1): {{1, 2}, {5, 6}}.
  const Literal result = Gather(F32({4, 4}, values), S32({3, 2}, {1, 1, 3, 3, -5, 1}), dims,
                                std::vector<int64_t>{2, 2});
  CHECK(result.dims() == std::vector<int64_t>{3, 2, 2});
  CHECK(ToDoubles(result) == std::vector<double>{5, 6, 9, 10, 10, 11, 14, 15, 1, 2, 5, 6});
}

TEST_CASE("gather: operand batching dims (take_along_axis)", "[eval]") {
  // The argsort workload's form: operand_batching_dims={0}, start_indices_batching_dims={0}.
  GatherDimensions dims;
  dims.collapsed_slice_dims = {1};
  dims.start_index_map = {1};
  dims.index_vector_dim = 2;
  dims.operand_batching_dims = {0};
  dims.start_indices_batching_dims = {0};
  // Row 0 takes columns 2, 0, 1 of {1, 2, 3}; row 1 takes 1, 1, 0 of {4, 5, 6}.
  const Literal result = Gather(F32({2, 3}, {1, 2, 3, 4, 5, 6}), S32({2, 3, 1}, {2, 0, 1, 1, 1, 0}),
                                dims, std::vector<int64_t>{1, 1});
  CHECK(result.dims() == std::vector<int64_t>{2, 3});
  CHECK(ToDoubles(result) == std::vector<double>{3, 1, 2, 5, 5, 4});
}

TEST_CASE("gather: mismatched dimension numbers are errors", "[eval]") {
  GatherDimensions dims;
  dims.offset_dims = {1};
  dims.collapsed_slice_dims = {0};
  dims.start_index_map = {0, 1};  // two components, but the index vectors have one
  dims.index_vector_dim = 1;
  CHECK_THROWS_WITH(Gather(Matrix3x3(), S32({2}, {2, 0}), dims, std::vector<int64_t>{1, 3}),
                    Catch::Contains("components"));
  dims.start_index_map = {0};
  // A collapsed dim must have slice size 1.
  CHECK_THROWS_WITH(Gather(Matrix3x3(), S32({2}, {2, 0}), dims, std::vector<int64_t>{2, 3}),
                    Catch::Contains("slice size 1"));
  // start_index_map naming a dim the operand does not have.
  dims.start_index_map = {4};
  CHECK_THROWS_WITH(Gather(Matrix3x3(), S32({2}, {2, 0}), dims, std::vector<int64_t>{1, 3}),
                    Catch::Contains("start_index_map"));
}

ScatterDimensions RowScatter() {
  ScatterDimensions dims;
  dims.update_window_dims = {1};
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  return dims;
}

TEST_CASE("scatter: rows added at indices, repeated indices accumulate", "[eval]") {
  const Literal zeros = F32({3, 3}, std::vector<double>(9, 0));
  const Literal updates = F32({3, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3});
  const std::vector<Literal> operands = {zeros};
  const std::vector<Literal> update_list = {updates};
  // Rows 0, 2, 0: row 0 gets 1 + 3, row 2 gets 2.
  const Literal result = Scatter(operands, S32({3}, {0, 2, 0}), update_list, RowScatter(),
                                 Reducer::Of(BinaryOp::kAdd));
  CHECK(ToDoubles(result) == std::vector<double>{4, 4, 4, 0, 0, 0, 2, 2, 2});
}

TEST_CASE("scatter: windows that do not fit are skipped, later updates win for assignment",
          "[eval]") {
  const std::vector<Literal> operands = {F32({3, 2}, {0, 0, 0, 0, 0, 0})};
  const std::vector<Literal> updates = {F32({4, 2}, {1, 1, 2, 2, 3, 3, 4, 4})};
  // The combiner returns its second argument: assignment, as JAX's .at[].set emits.
  const Reducer assign = Reducer::Of([](std::span<const Literal> args) { return args[1]; });
  // Indices 1, 5 (out of bounds: skipped), -1 (skipped), 1 (overwrites the first).
  const Literal result = Scatter(operands, S32({4}, {1, 5, -1, 1}), updates, RowScatter(), assign);
  CHECK(ToDoubles(result) == std::vector<double>{0, 0, 4, 4, 0, 0});
}

TEST_CASE("scatter: operand batching dims", "[eval]") {
  ScatterDimensions dims;
  dims.inserted_window_dims = {1};
  dims.scatter_dims_to_operand_dims = {1};
  dims.index_vector_dim = 2;
  dims.input_batching_dims = {0};
  dims.scatter_indices_batching_dims = {0};
  const std::vector<Literal> operands = {F32({2, 3}, std::vector<double>(6, 0))};
  const std::vector<Literal> updates = {F32({2, 1}, {7, 8})};
  // Batch 0 writes column 2 of row 0; batch 1 writes column 0 of row 1.
  const Literal result =
      Scatter(operands, S32({2, 1, 1}, {2, 0}), updates, dims, Reducer::Of(BinaryOp::kAdd));
  CHECK(ToDoubles(result) == std::vector<double>{0, 0, 7, 8, 0, 0});
}

TEST_CASE("scatter: variadic operands with a tuple-returning combiner", "[eval]") {
  ScatterDimensions dims;
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  const std::vector<Literal> operands = {F32({2}, {0, 0}), S32({2}, {0, 0})};
  const std::vector<Literal> updates = {F32({2}, {1.5, 2.5}), S32({2}, {10, 20})};
  const Reducer add_both = Reducer::Of([](std::span<const Literal> a) {
    return Literal::Tuple(
        {Literal::FromDoubles(ElementType::kF32, {}, {a[0].GetDouble(0) + a[2].GetDouble(0)}),
         ScalarInt(ElementType::kS32, a[1].GetInt(0) + a[3].GetInt(0))});
  });
  const Literal result = Scatter(operands, S32({2}, {1, 1}), updates, dims, add_both);
  REQUIRE(result.is_tuple());
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{0, 4});
  CHECK(ToInts(result.elements()[1]) == std::vector<int64_t>{0, 30});
}

TEST_CASE("scatter: each combine is rounded to the element type", "[eval]") {
  ScatterDimensions dims;
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  // bf16 1 + 2^-8 is a tie that rounds to 1, twice: the result stays 1.
  const std::vector<Literal> operands = {Literal::FromDoubles(ElementType::kBF16, {1}, {1})};
  const std::vector<Literal> updates = {
      Literal::FromDoubles(ElementType::kBF16, {2}, {0x1p-8, 0x1p-8})};
  CHECK(ToDoubles(Scatter(operands, S32({2}, {0, 0}), updates, dims,
                          Reducer::Of(BinaryOp::kAdd))) == std::vector<double>{1});
}

// --- sort -----------------------------------------------------------------------------------

Comparator Less(CompareType type = CompareType::kFloat) {
  return Comparator::Of(CompareSpec{CompareDirection::kLt, type});
}

TEST_CASE("sort: ascending along each dimension", "[eval]") {
  const std::vector<Literal> x = {F32({2, 3}, {3, 1, 2, 0, 5, -1})};
  CHECK(ToDoubles(Sort(x, 1, Less())) == std::vector<double>{1, 2, 3, -1, 0, 5});
  CHECK(ToDoubles(Sort(x, 0, Less())) == std::vector<double>{0, 1, -1, 3, 5, 2});
  const std::vector<Literal> ints = {S32({4}, {3, -2, 7, 0})};
  CHECK(ToInts(Sort(ints, 0,
                    Comparator::Of(CompareSpec{CompareDirection::kGt, CompareType::kSigned}))) ==
        std::vector<int64_t>{7, 3, 0, -2});
}

TEST_CASE("sort: several operands move together, equal keys keep their order", "[eval]") {
  const std::vector<Literal> operands = {F32({4}, {2, 1, 2, 1}), S32({4}, {0, 1, 2, 3})};
  const Literal result = Sort(operands, 0, Less(), true);
  REQUIRE(result.is_tuple());
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{1, 1, 2, 2});
  CHECK(ToInts(result.elements()[1]) == std::vector<int64_t>{1, 3, 0, 2});
}

TEST_CASE("sort: NaN and signed zeros under TOTALORDER", "[eval]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Literal> x = {
      Literal::FromDoubles(ElementType::kBF16, {6}, {nan, 1, -nan, -inf, 0.0, -0.0})};
  const std::vector<double> sorted = ToDoubles(Sort(x, 0, Less(CompareType::kTotalOrder)));
  CHECK(std::isnan(sorted[0]));
  CHECK(std::signbit(sorted[0]));
  CHECK(sorted[1] == -inf);
  CHECK(sorted[2] == 0);
  CHECK(std::signbit(sorted[2]));
  CHECK(sorted[3] == 0);
  CHECK(!std::signbit(sorted[3]));
  CHECK(sorted[4] == 1);
  CHECK(std::isnan(sorted[5]));
  CHECK(!std::signbit(sorted[5]));
}

TEST_CASE("sort: a comparator computation sees (lhs_0, rhs_0, lhs_1, rhs_1)", "[eval]") {
  // Sort by operand 1 descending: the computation only looks at parameters 2 and 3.
  const Comparator by_second = Comparator::Of([](std::span<const Literal> args) {
    REQUIRE(args.size() == 4);
    return ScalarInt(ElementType::kPred, args[2].GetInt(0) > args[3].GetInt(0));
  });
  const std::vector<Literal> operands = {F32({3}, {10, 20, 30}), S32({3}, {1, 3, 2})};
  const Literal result = Sort(operands, 0, by_second);
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{20, 30, 10});
  CHECK(ToInts(result.elements()[1]) == std::vector<int64_t>{3, 2, 1});
}

TEST_CASE("topk: the k largest or smallest with s32 indices, ties lower index first", "[eval]") {
  const Literal x = F32({2, 4}, {1, 3, 3, 2, 4, -1, 4, 0});
  const Literal top = TopK(x, 2, true);
  REQUIRE(top.is_tuple());
  CHECK(top.elements()[0].dims() == std::vector<int64_t>{2, 2});
  CHECK(ToDoubles(top.elements()[0]) == std::vector<double>{3, 3, 4, 4});
  CHECK(top.elements()[1].element_type() == ElementType::kS32);
  CHECK(ToInts(top.elements()[1]) == std::vector<int64_t>{1, 2, 0, 2});
  const Literal bottom = TopK(x, 2, false);
  CHECK(ToDoubles(bottom.elements()[0]) == std::vector<double>{1, 2, -1, 0});
  CHECK(ToInts(bottom.elements()[1]) == std::vector<int64_t>{0, 3, 1, 3});
  // NaN is above +inf in the total order.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Literal with_nan = TopK(F32({3}, {1, nan, 2}), 1, true);
  CHECK(ToInts(with_nan.elements()[1]) == std::vector<int64_t>{1});
  CHECK_THROWS_AS(TopK(x, 5, true), Error);
}

}  // namespace
}  // namespace tpusim::eval
