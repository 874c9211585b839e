// Tests for compiler/eval/reduce.h and reduce_window.h. Expected values: seed 003's Reduce
// example (the 4x2x3 array holding 1..6 in each 2x3 slice, reduced over each set of dims), its
// SelectAndScatter figure description (9 selected by two overlapping windows, scattered as
// 2 + 6 = 8), REFERENCE.md section 2 ("a float add-reduce may be summed in double"), and windows
// worked out by hand from seed 003's ReduceWindow definition.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "compiler/eval/literal_util.h"
#include "compiler/eval/reduce.h"
#include "compiler/eval/reduce_window.h"
#include "compiler/hlo/literal.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Literal;
using isa::ElementType;

Literal F32(std::vector<int64_t> dims, const std::vector<double>& values) {
  return Literal::FromDoubles(ElementType::kF32, std::move(dims), values);
}

// Seed 003: "a 3D array of shape (4,2,3); for simplicity the numbers 1 to 6 are copied 4 times
// along dim 0".
Literal SeedCube() {
  std::vector<double> values;
  for (int i = 0; i < 4; ++i) {
    for (int v = 1; v <= 6; ++v) values.push_back(v);
  }
  return F32({4, 2, 3}, values);
}

// The add computation as the evaluator would pass an HLO computation: a function on Literals.
Reducer GenericAdd() {
  return Reducer::Of([](std::span<const Literal> args) {
    return Literal::FromDoubles(args[0].element_type(), {},
                                {args[0].GetDouble(0) + args[1].GetDouble(0)});
  });
}

TEST_CASE("reduce: seed 003's sums of the 4x2x3 array", "[eval]") {
  const Literal cube = SeedCube();
  const Literal zero = F32({}, {0});
  for (const Reducer& add : {Reducer::Of(BinaryOp::kAdd), GenericAdd()}) {
    // Over dim 0: | 4 8 12 | 16 20 24 |
    const Literal d0 = Reduce(cube, zero, std::vector<int64_t>{0}, add);
    CHECK(d0.dims() == std::vector<int64_t>{2, 3});
    CHECK(ToDoubles(d0) == std::vector<double>{4, 8, 12, 16, 20, 24});
    // Over dim 2: | 6 15 | four times.
    const Literal d2 = Reduce(cube, zero, std::vector<int64_t>{2}, add);
    CHECK(d2.dims() == std::vector<int64_t>{4, 2});
    CHECK(ToDoubles(d2) == std::vector<double>{6, 15, 6, 15, 6, 15, 6, 15});
    // Over dims 0 and 1: | 20 28 36 |
    CHECK(ToDoubles(Reduce(cube, zero, std::vector<int64_t>{0, 1}, add)) ==
          std::vector<double>{20, 28, 36});
    // Over everything: 84.
    const Literal all = Reduce(cube, zero, std::vector<int64_t>{0, 1, 2}, add);
    CHECK(all.dims().empty());
    CHECK(ToDoubles(all) == std::vector<double>{84});
    // The dims may be listed in any order (seed 003: "unordered").
    CHECK(ToDoubles(Reduce(cube, zero, std::vector<int64_t>{2, 0, 1}, add)) ==
          std::vector<double>{84});
  }
}

TEST_CASE("reduce: init first, then elements in row-major order of the reduced dims", "[eval]") {
  // f(acc, x) = 10 * acc + x spells the visiting order out in decimal digits.
  const Reducer digits = Reducer::Of([](std::span<const Literal> args) {
    return ScalarInt(ElementType::kS64, 10 * args[0].GetInt(0) + args[1].GetInt(0));
  });
  const Literal x = FromInts(ElementType::kS64, {2, 2}, {1, 2, 3, 4});
  CHECK(ToInts(Reduce(x, ScalarInt(ElementType::kS64, 9), std::vector<int64_t>{0, 1}, digits)) ==
        std::vector<int64_t>{91234});
  CHECK(ToInts(Reduce(x, ScalarInt(ElementType::kS64, 0), std::vector<int64_t>{0}, digits)) ==
        std::vector<int64_t>{13, 24});
  CHECK(ToInts(Reduce(x, ScalarInt(ElementType::kS64, 0), std::vector<int64_t>{1}, digits)) ==
        std::vector<int64_t>{12, 34});
}

TEST_CASE("reduce: a float add sums in double and rounds once", "[eval]") {
  // In f32, 1 + 2^-24 rounds back to 1 (a tie, to even), so a left-to-right f32 sum of
  // {1, 2^-24 x 4} is 1; in double it is 1 + 2^-22, which f32 holds exactly.
  const Literal x = F32({5}, {1, 0x1p-24, 0x1p-24, 0x1p-24, 0x1p-24});
  CHECK(ToDoubles(Reduce(x, F32({}, {0}), std::vector<int64_t>{0}, Reducer::Of(BinaryOp::kAdd))) ==
        std::vector<double>{1 + 0x1p-22});
  // bf16: {1, 2^-8, 2^-8} sums to 1 + 2^-7 (a bf16 value); bf16 steps would stay at 1.
  const Literal b = Literal::FromDoubles(ElementType::kBF16, {3}, {1, 0x1p-8, 0x1p-8});
  const Literal sum = Reduce(b, Literal::FromDoubles(ElementType::kBF16, {}, {0}),
                             std::vector<int64_t>{0}, Reducer::Of(BinaryOp::kAdd));
  CHECK(sum.element_type() == ElementType::kBF16);
  CHECK(ToDoubles(sum) == std::vector<double>{1 + 0x1p-7});
}

TEST_CASE("reduce: max and min propagate NaN, integer sums wrap, and/or on pred", "[eval]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Literal x = F32({2, 3}, {1, nan, 3, 4, 5, 6});
  const Literal lowest = F32({}, {-std::numeric_limits<double>::infinity()});
  const std::vector<double> max =
      ToDoubles(Reduce(x, lowest, std::vector<int64_t>{1}, Reducer::Of(BinaryOp::kMaximum)));
  CHECK(std::isnan(max[0]));
  CHECK(max[1] == 6);
  const Literal s8 = FromInts(ElementType::kS8, {2}, {100, 100});
  CHECK(ToInts(Reduce(s8, ScalarInt(ElementType::kS8, 0), std::vector<int64_t>{0},
                      Reducer::Of(BinaryOp::kAdd))) == std::vector<int64_t>{-56});
  const Literal p = FromInts(ElementType::kPred, {2, 2}, {1, 1, 1, 0});
  CHECK(ToInts(Reduce(p, ScalarInt(ElementType::kPred, 1), std::vector<int64_t>{1},
                      Reducer::Of(BinaryOp::kAnd))) == std::vector<int64_t>{1, 0});
  CHECK(ToInts(Reduce(p, ScalarInt(ElementType::kPred, 0), std::vector<int64_t>{0},
                      Reducer::Of(BinaryOp::kOr))) == std::vector<int64_t>{1, 1});
  CHECK(ToDoubles(Reduce(F32({3}, {2, 3, 4}), F32({}, {1}), std::vector<int64_t>{0},
                         Reducer::Of(BinaryOp::kMultiply))) == std::vector<double>{24});
}

TEST_CASE("reduce: empty arrays give the init value, no dims applies f(init, x)", "[eval]") {
  const Literal empty = F32({0, 3}, {});
  CHECK(ToDoubles(Reduce(empty, F32({}, {7}), std::vector<int64_t>{0},
                         Reducer::Of(BinaryOp::kAdd))) == std::vector<double>{7, 7, 7});
  CHECK(Reduce(empty, F32({}, {7}), std::vector<int64_t>{1}, Reducer::Of(BinaryOp::kAdd)).dims() ==
        std::vector<int64_t>{0});
  CHECK(ToDoubles(Reduce(F32({2}, {1, 2}), F32({}, {10}), std::vector<int64_t>{},
                         Reducer::Of(BinaryOp::kAdd))) == std::vector<double>{11, 12});
  CHECK(ToDoubles(Reduce(F32({}, {5}), F32({}, {10}), std::vector<int64_t>{}, GenericAdd())) ==
        std::vector<double>{15});
  CHECK_THROWS_WITH(
      Reduce(F32({2}, {1, 2}), F32({}, {0}), std::vector<int64_t>{1}, Reducer::Of(BinaryOp::kAdd)),
      Catch::Contains("out of range"));
}

TEST_CASE("reduce: variadic, an argmax as a tuple-returning computation", "[eval]") {
  // (value, index) pairs; keep the larger value, the lower index on ties.
  const Reducer argmax = Reducer::Of([](std::span<const Literal> args) {
    const double a = args[0].GetDouble(0), b = args[2].GetDouble(0);
    const int64_t ia = args[1].GetInt(0), ib = args[3].GetInt(0);
    const bool take_b = b > a || (b == a && ib < ia);
    return Literal::Tuple({Literal::FromDoubles(ElementType::kF32, {}, {take_b ? b : a}),
                           ScalarInt(ElementType::kS32, take_b ? ib : ia)});
  });
  const std::vector<Literal> operands = {F32({2, 3}, {1, 7, 7, 9, 2, 3}),
                                         FromInts(ElementType::kS32, {2, 3}, {0, 1, 2, 0, 1, 2})};
  const std::vector<Literal> inits = {F32({}, {-1e30}), ScalarInt(ElementType::kS32, -1)};
  const Literal result = Reduce(operands, inits, std::vector<int64_t>{1}, argmax);
  REQUIRE(result.is_tuple());
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{7, 9});
  CHECK(ToInts(result.elements()[1]) == std::vector<int64_t>{1, 0});
}

TEST_CASE("map: a computation applied to each element tuple", "[eval]") {
  const ScalarFunction fma = [](std::span<const Literal> args) {
    return Literal::FromDoubles(ElementType::kF32, {},
                                {args[0].GetDouble(0) * args[1].GetDouble(0) + 1});
  };
  const std::vector<Literal> operands = {F32({3}, {1, 2, 3}), F32({3}, {4, 5, 6})};
  CHECK(ToDoubles(Map(operands, fma, ElementType::kF32)) == std::vector<double>{5, 11, 19});
  CHECK_THROWS_WITH(Map(operands, fma, ElementType::kS32),
                    Catch::Contains("expected a s32 scalar"));
}

// --- reduce-window --------------------------------------------------------------------------

std::vector<WindowDimension> Windows1D(int64_t size, int64_t stride, int64_t lo = 0, int64_t hi = 0,
                                       int64_t base_dilation = 1, int64_t window_dilation = 1) {
  return {WindowDimension{size, stride, lo, hi, base_dilation, window_dilation, false}};
}

TEST_CASE("reduce-window: seed 003's 4x6 max with 2x3 windows and strides", "[eval]") {
  // Seed 003's setup (values our own): rows {1..6}, {7..12}, {13..18}, {19..24}. The four
  // non-overlapping 2x3 windows have maxima 9, 12, 21, 24.
  std::vector<double> values;
  for (int v = 1; v <= 24; ++v) values.push_back(v);
  const std::vector<WindowDimension> window = {{2, 2}, {3, 3}};
  const Literal result = ReduceWindow(F32({4, 6}, values), F32({}, {-3.4e38}), window,
                                      Reducer::Of(BinaryOp::kMaximum));
  CHECK(result.dims() == std::vector<int64_t>{2, 2});
  CHECK(ToDoubles(result) == std::vector<double>{9, 12, 21, 24});
}

TEST_CASE("reduce-window: padding, strides and dilations", "[eval]") {
  const Literal x = F32({5}, {1, 2, 3, 4, 5});
  const Literal zero = F32({}, {0});
  const Reducer add = Reducer::Of(BinaryOp::kAdd);
  // Padded (1, 1): [p 1 2 3 4 5 p]; windows of 3 at stride 2: p+1+2, 2+3+4, 4+5+p.
  CHECK(ToDoubles(ReduceWindow(x, zero, Windows1D(3, 2, 1, 1), add)) ==
        std::vector<double>{3, 9, 9});
  // Window dilation 2: taps 0 and 2 -> 1+3, 2+4, 3+5.
  CHECK(ToDoubles(ReduceWindow(x, zero, Windows1D(2, 1, 0, 0, 1, 2), add)) ==
        std::vector<double>{4, 6, 8});
  // Base dilation 2 on {1, 2, 3}: [1 h 2 h 3]; windows of 2: 1, 2, 2, 3 (holes skipped).
  CHECK(ToDoubles(ReduceWindow(F32({3}, {1, 2, 3}), zero, Windows1D(2, 1, 0, 0, 2, 1), add)) ==
        std::vector<double>{1, 2, 2, 3});
  // Negative padding crops: (-1, 0) leaves [2 3 4 5]; windows of 2 at stride 2: 5, 9.
  CHECK(ToDoubles(ReduceWindow(x, zero, Windows1D(2, 2, -1, 0), add)) == std::vector<double>{5, 9});
  // The init value enters once per window, padding adds nothing: init 10, windows of 2.
  CHECK(ToDoubles(ReduceWindow(F32({3}, {1, 2, 3}), F32({}, {10}), Windows1D(2, 1),
                               GenericAdd())) == std::vector<double>{13, 15});
  CHECK(ToDoubles(ReduceWindow(F32({3}, {1, 2, 3}), F32({}, {10}), Windows1D(2, 1, 1, 0), add)) ==
        std::vector<double>{11, 13, 15});
  // A window larger than the padded base: no positions.
  CHECK(ReduceWindow(x, zero, Windows1D(6, 1), add).element_count() == 0);
}

// --- select-and-scatter ---------------------------------------------------------------------

TEST_CASE("select-and-scatter: seed 003's overlapping windows both selecting 9", "[eval]") {
  // Windows of 2 at stride 1 over {1, 9, 2} both select 9; scatter add gives 2 + 6 = 8 there.
  const std::vector<WindowDimension> window = Windows1D(2, 1);
  for (const Comparator& ge :
       {Comparator::Of(CompareSpec{CompareDirection::kGe, CompareType::kFloat}),
        Comparator::Of([](std::span<const Literal> args) {
          return ScalarInt(ElementType::kPred, args[0].GetDouble(0) >= args[1].GetDouble(0));
        })}) {
    for (const Reducer& add : {Reducer::Of(BinaryOp::kAdd), GenericAdd()}) {
      CHECK(ToDoubles(SelectAndScatter(F32({3}, {1, 9, 2}), F32({2}, {2, 6}), F32({}, {0}), window,
                                       ge, add)) == std::vector<double>{0, 8, 0});
    }
  }
}

TEST_CASE("select-and-scatter: max-pool gradient with ties going to the first element", "[eval]") {
  // Windows (1, 5), (3, 3), (4, 6) at stride 2: GE keeps the earlier of equals.
  const Comparator ge = Comparator::Of(CompareSpec{CompareDirection::kGe, CompareType::kFloat});
  CHECK(ToDoubles(SelectAndScatter(
            F32({6}, {1, 5, 3, 3, 4, 6}), F32({3}, {10, 20, 30}), F32({}, {0}), Windows1D(2, 2), ge,
            Reducer::Of(BinaryOp::kAdd))) == std::vector<double>{0, 10, 20, 0, 0, 30});
  CHECK_THROWS_WITH(SelectAndScatter(F32({6}, {1, 5, 3, 3, 4, 6}), F32({2}, {1, 2}), F32({}, {0}),
                                     Windows1D(2, 2), ge, Reducer::Of(BinaryOp::kAdd)),
                    Catch::Contains("[3]"));
}

}  // namespace
}  // namespace tpusim::eval
