// Tests for compiler/eval/rng.h and collectives.h. RNG: seed 003's RngUniform / RngNormal /
// RngBernoulli define ranges and distributions, so the checks are determinism, ranges and sample
// moments. Collectives: seed 003's CrossReplicaSum example ((1.0, 2.5) and (3.0, 5.1) sum to
// (4.0, 7.6) on both replicas) and the other collectives' definitions worked out by hand.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "compiler/eval/collectives.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/rng.h"
#include "compiler/hlo/literal.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Literal;
using isa::ElementType;

Literal F32(std::vector<int64_t> dims, const std::vector<double>& values) {
  return Literal::FromDoubles(ElementType::kF32, std::move(dims), values);
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// --- RNG ------------------------------------------------------------------------------------

TEST_CASE("rng: the same seed gives the same bytes, another seed other bytes", "[eval]") {
  std::mt19937_64 a(42), b(42), c(43);
  const std::vector<int64_t> dims = {1000};
  const Literal lo = F32({}, {0}), hi = F32({}, {1});
  CHECK(RngUniform(lo, hi, dims, a) == RngUniform(lo, hi, dims, b));
  CHECK(!(RngUniform(lo, hi, dims, a) == RngUniform(lo, hi, dims, c)));
  // The engine moves on: a second draw differs from the first.
  std::mt19937_64 d(42);
  const Literal first = RngUniform(lo, hi, dims, d);
  CHECK(!(first == RngUniform(lo, hi, dims, d)));
}

TEST_CASE("rng uniform: floats and ints from a up to but not including b, every int value hit", "[eval]") {
  std::mt19937_64 engine(7);
  const std::vector<int64_t> dims = {20000};
  const std::vector<double> floats =
      ToDoubles(RngUniform(F32({}, {-2}), F32({}, {3}), dims, engine));
  CHECK(std::all_of(floats.begin(), floats.end(), [](double x) { return x >= -2 && x < 3; }));
  CHECK(Mean(floats) == Approx(0.5).margin(0.05));
  // bf16 [1, 1 + 2^-7): only 1 is below b, rounding up to b is redrawn.
  const std::vector<double> tight =
      ToDoubles(RngUniform(Literal::FromDoubles(ElementType::kBF16, {}, {1}),
                           Literal::FromDoubles(ElementType::kBF16, {}, {1 + 0x1p-7}),
                           std::vector<int64_t>{100}, engine));
  CHECK(std::all_of(tight.begin(), tight.end(), [](double x) { return x == 1; }));
  const std::vector<int64_t> ints = ToInts(
      RngUniform(ScalarInt(ElementType::kS32, -3), ScalarInt(ElementType::kS32, 4), dims, engine));
  std::vector<int> counts(7, 0);
  REQUIRE(std::all_of(ints.begin(), ints.end(), [](int64_t v) { return v >= -3 && v < 4; }));
  for (int64_t v : ints) ++counts[v + 3];
  for (int count : counts) CHECK(count == Approx(20000 / 7.0).epsilon(0.1));
  // b <= a: every element is a.
  CHECK(ToInts(RngUniform(ScalarInt(ElementType::kU8, 9), ScalarInt(ElementType::kU8, 9),
                          std::vector<int64_t>{3}, engine)) == std::vector<int64_t>{9, 9, 9});
}

TEST_CASE("rng normal and bernoulli: sample moments", "[eval]") {
  std::mt19937_64 engine(11);
  const std::vector<int64_t> dims = {40000};
  const std::vector<double> normal = ToDoubles(RngNormal(F32({}, {3}), F32({}, {2}), dims, engine));
  const double mean = Mean(normal);
  double variance = 0;
  for (double x : normal) variance += (x - mean) * (x - mean);
  variance /= static_cast<double>(normal.size());
  CHECK(mean == Approx(3).margin(0.05));
  CHECK(std::sqrt(variance) == Approx(2).epsilon(0.03));
  const Literal coin = RngBernoulli(F32({}, {0.25}), dims, ElementType::kU32, engine);
  CHECK(coin.element_type() == ElementType::kU32);
  std::vector<double> values = ToDoubles(coin);
  CHECK(std::all_of(values.begin(), values.end(), [](double v) { return v == 0 || v == 1; }));
  CHECK(Mean(values) == Approx(0.25).margin(0.01));
}

// --- Collectives ----------------------------------------------------------------------------

TEST_CASE("all-reduce: seed 003's CrossReplicaSum example", "[eval]") {
  const std::vector<Literal> inputs = {F32({2}, {1.0, 2.5}), F32({2}, {3.0, 5.1})};
  for (const Reducer& add :
       {Reducer::Of(BinaryOp::kAdd), Reducer::Of([](std::span<const Literal> args) {
          return Binary(BinaryOp::kAdd, args[0], args[1]);
        })}) {
    const std::vector<Literal> out = AllReduce(inputs, {}, add);
    REQUIRE(out.size() == 2);
    // 7.6 as the f32 nearest to 2.5f + 5.1f: both replicas hold the same bytes.
    CHECK(out[0] == F32({2}, {4.0, 7.6}));
    CHECK(out[1] == out[0]);
  }
}

TEST_CASE("all-reduce: replica groups reduce separately, tuples element by element", "[eval]") {
  const std::vector<Literal> inputs = {F32({1}, {1}), F32({1}, {2}), F32({1}, {4}), F32({1}, {8})};
  const std::vector<Literal> out =
      AllReduce(inputs, {{0, 2}, {1, 3}}, Reducer::Of(BinaryOp::kMaximum));
  CHECK(ToDoubles(out[0]) == std::vector<double>{4});
  CHECK(ToDoubles(out[1]) == std::vector<double>{8});
  CHECK(ToDoubles(out[2]) == std::vector<double>{4});
  CHECK(ToDoubles(out[3]) == std::vector<double>{8});
  const std::vector<Literal> tuples = {
      Literal::Tuple({F32({1}, {1}), ScalarInt(ElementType::kS32, 5)}),
      Literal::Tuple({F32({1}, {2}), ScalarInt(ElementType::kS32, 6)})};
  const std::vector<Literal> summed = AllReduce(tuples, {}, Reducer::Of(BinaryOp::kAdd));
  CHECK(ToDoubles(summed[1].elements()[0]) == std::vector<double>{3});
  CHECK(ToInts(summed[1].elements()[1]) == std::vector<int64_t>{11});
  CHECK_THROWS_WITH(AllReduce(inputs, {{0, 1}, {1, 2, 3}}, Reducer::Of(BinaryOp::kAdd)),
                    Catch::Contains("replica 1 appears 2 times"));
}

TEST_CASE("all-gather concatenates the group's inputs in group order", "[eval]") {
  const std::vector<Literal> inputs = {F32({1, 2}, {1, 2}), F32({1, 2}, {3, 4}),
                                       F32({1, 2}, {5, 6})};
  const std::vector<Literal> out = AllGather(inputs, {{2, 0, 1}}, 0);
  CHECK(out[0].dims() == std::vector<int64_t>{3, 2});
  CHECK(ToDoubles(out[1]) == std::vector<double>{5, 6, 1, 2, 3, 4});
  CHECK(ToDoubles(AllGather(inputs, {}, 1)[0]) == std::vector<double>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("reduce-scatter: member i of a group gets block i of the sum", "[eval]") {
  const std::vector<Literal> inputs = {F32({4}, {1, 2, 3, 4}), F32({4}, {10, 20, 30, 40})};
  const std::vector<Literal> out = ReduceScatter(inputs, {}, 0, Reducer::Of(BinaryOp::kAdd));
  CHECK(ToDoubles(out[0]) == std::vector<double>{11, 22});
  CHECK(ToDoubles(out[1]) == std::vector<double>{33, 44});
  const std::vector<Literal> odd = {F32({3}, {1, 2, 3}), F32({3}, {1, 2, 3})};
  CHECK_THROWS_WITH(ReduceScatter(odd, {}, 0, Reducer::Of(BinaryOp::kAdd)),
                    Catch::Contains("equal blocks"));
}

TEST_CASE("all-to-all: block j of member i goes to member j, concatenated in member order",
          "[eval]") {
  // Replica 0 {a0, a1}, replica 1 {b0, b1} (split dim 0 into 2): replica 0 gets {a0, b0},
  // replica 1 gets {a1, b1}, concatenated along dim 1 here.
  const std::vector<Literal> inputs = {F32({2, 1}, {1, 2}), F32({2, 1}, {3, 4})};
  const std::vector<Literal> out = AllToAll(inputs, {}, 0, 1);
  CHECK(out[0].dims() == std::vector<int64_t>{1, 2});
  CHECK(ToDoubles(out[0]) == std::vector<double>{1, 3});
  CHECK(ToDoubles(out[1]) == std::vector<double>{2, 4});
}

TEST_CASE("collective-permute: sources to targets, untargeted replicas get zeros", "[eval]") {
  const std::vector<Literal> inputs = {F32({2}, {1, 2}), F32({2}, {3, 4}), F32({2}, {5, 6})};
  const std::vector<std::pair<int64_t, int64_t>> pairs = {{0, 1}, {1, 2}};
  const std::vector<Literal> out = CollectivePermute(inputs, pairs);
  CHECK(ToDoubles(out[0]) == std::vector<double>{0, 0});
  CHECK(ToDoubles(out[1]) == std::vector<double>{1, 2});
  CHECK(ToDoubles(out[2]) == std::vector<double>{3, 4});
  const std::vector<std::pair<int64_t, int64_t>> twice = {{0, 1}, {2, 1}};
  CHECK_THROWS_WITH(CollectivePermute(inputs, twice), Catch::Contains("targeted twice"));
}

}  // namespace
}  // namespace tpusim::eval
