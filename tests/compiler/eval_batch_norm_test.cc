// Tests for compiler/eval/batch_norm.h. Expected values: seed 003's BatchNormTraining and
// BatchNormInference formulas evaluated by hand on small arrays; for BatchNormGrad, XLA's current
// formulas evaluated by hand and checked against finite differences of the training formula (the
// definition of a gradient), since seed 003's older grad formulas are not the derivative.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "compiler/eval/batch_norm.h"
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
Literal F64(std::vector<int64_t> dims, const std::vector<double>& values) {
  return Literal::FromDoubles(ElementType::kF64, std::move(dims), values);
}

TEST_CASE("batch-norm-training: seed 003's mean, variance and normalisation", "[eval]") {
  // Feature dim 1 of {{1, 2}, {3, 6}}: feature 0 is {1, 3} (mean 2, variance 1), feature 1 is
  // {2, 6} (mean 4, variance 4). scale {1, 2}, offset {0, 1}, epsilon 0:
  // y = {{(1-2)/1, 2*(2-4)/2 + 1}, {(3-2)/1, 2*(6-4)/2 + 1}} = {{-1, -1}, {1, 3}}.
  const Literal result =
      BatchNormTraining(F32({2, 2}, {1, 2, 3, 6}), F32({2}, {1, 2}), F32({2}, {0, 1}), 0, 1);
  REQUIRE(result.is_tuple());
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{-1, -1, 1, 3});
  CHECK(ToDoubles(result.elements()[1]) == std::vector<double>{2, 4});
  CHECK(ToDoubles(result.elements()[2]) == std::vector<double>{1, 4});
  // epsilon 3 on feature 0: sqrt(1 + 3) = 2, so y = -0.5 and 0.5.
  const Literal with_epsilon =
      BatchNormTraining(F32({2, 2}, {1, 2, 3, 6}), F32({2}, {1, 2}), F32({2}, {0, 1}), 3, 1);
  CHECK(ToDoubles(with_epsilon.elements()[0])[0] == -0.5);
  CHECK(ToDoubles(with_epsilon.elements()[0])[2] == 0.5);
}

TEST_CASE("batch-norm-training: the feature dim may be any dim", "[eval]") {
  // Feature dim 0 of {{1, 3}, {2, 6}} is the transpose of the case above.
  const Literal result =
      BatchNormTraining(F32({2, 2}, {1, 3, 2, 6}), F32({2}, {1, 2}), F32({2}, {0, 1}), 0, 0);
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{-1, 1, -1, 3});
  CHECK_THROWS_WITH(
      BatchNormTraining(F32({2, 2}, {1, 3, 2, 6}), F32({2}, {1, 2}), F32({2}, {0, 1}), 0, 2),
      Catch::Contains("feature_index 2"));
  CHECK_THROWS_WITH(
      BatchNormTraining(F32({2, 2}, {1, 3, 2, 6}), F32({3}, {1, 2, 3}), F32({2}, {0, 1}), 0, 0),
      Catch::Contains("scale must have dims [2]"));
}

TEST_CASE("batch-norm-inference: seed 003's normalisation with the given statistics", "[eval]") {
  // mean {0, 1}, variance {4, 1}, epsilon 0, scale {1, 3}, offset {1, 0}:
  // {{(2 - 0)/2 + 1, 3*(3 - 1)/1}} = {{2, 6}}.
  const Literal y = BatchNormInference(F32({1, 2}, {2, 3}), F32({2}, {1, 3}), F32({2}, {1, 0}),
                                       F32({2}, {0, 1}), F32({2}, {4, 1}), 0, 1);
  CHECK(ToDoubles(y) == std::vector<double>{2, 6});
}

TEST_CASE("batch-norm-grad: XLA's gradient, worked by hand", "[eval]") {
  // One feature (dim 1 of [3, 1]), x = {0, 0, 3}: mean 1, variance 2; scale 1, epsilon 0,
  // dy = {1, 0, 0}. sum(dy) = 1, sum(dy * (x - mean)) = -1.
  //   grad_offset = 1, grad_scale = -1 / sqrt(2),
  //   grad_x = (dy - 1/3 - (x - 1) * (-1) / (3 * 2)) / sqrt(2) = {1/2, -1/2, 0} / sqrt(2).
  const Literal result = BatchNormGrad(F64({3, 1}, {0, 0, 3}), F64({1}, {1}), F64({1}, {1}),
                                       F64({1}, {2}), F64({3, 1}, {1, 0, 0}), 0, 1);
  REQUIRE(result.is_tuple());
  const std::vector<double> grad_x = ToDoubles(result.elements()[0]);
  const double r = 0.5 / std::sqrt(2.0);
  CHECK(grad_x[0] == Approx(r).epsilon(1e-15));
  CHECK(grad_x[1] == Approx(-r).epsilon(1e-15));
  CHECK(grad_x[2] == Approx(0).margin(1e-15));
  CHECK(ToDoubles(result.elements()[1])[0] ==
        Approx(-1 / std::sqrt(2.0)).epsilon(1e-15));                 // grad_scale
  CHECK(ToDoubles(result.elements()[2]) == std::vector<double>{1});  // grad_offset
}

TEST_CASE("batch-norm-grad matches finite differences of batch-norm-training", "[eval]") {
  // L(x, scale, offset) = sum(dy * y); the grads of L are what batch-norm-grad returns when mean
  // and variance are the batch statistics of x.
  const std::vector<double> x = {0.3, -1.2, 2.5, 0.7, 1.1, -0.4};  // [3, 2], feature dim 1
  const std::vector<double> scale = {1.5, -0.5};
  const std::vector<double> offset = {0.2, 0.1};
  const std::vector<double> dy = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5};
  const float epsilon = 0.125f;
  auto loss = [&](const std::vector<double>& xs, const std::vector<double>& gamma,
                  const std::vector<double>& beta) {
    const Literal y =
        BatchNormTraining(F64({3, 2}, xs), F64({2}, gamma), F64({2}, beta), epsilon, 1)
            .elements()[0];
    double sum = 0;
    for (std::size_t i = 0; i < dy.size(); ++i) sum += dy[i] * y.GetDouble(static_cast<int64_t>(i));
    return sum;
  };
  const Literal stats =
      BatchNormTraining(F64({3, 2}, x), F64({2}, scale), F64({2}, offset), epsilon, 1);
  const Literal grads = BatchNormGrad(F64({3, 2}, x), F64({2}, scale), stats.elements()[1],
                                      stats.elements()[2], F64({3, 2}, dy), epsilon, 1);
  const double h = 1e-6;
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::vector<double> up = x, down = x;
    up[i] += h;
    down[i] -= h;
    const double numeric = (loss(up, scale, offset) - loss(down, scale, offset)) / (2 * h);
    INFO("x[" << i << "]");
    CHECK(grads.elements()[0].GetDouble(static_cast<int64_t>(i)) == Approx(numeric).epsilon(1e-6));
  }
  for (std::size_t l = 0; l < 2; ++l) {
    std::vector<double> up = scale, down = scale;
    up[l] += h;
    down[l] -= h;
    CHECK(grads.elements()[1].GetDouble(static_cast<int64_t>(l)) ==
          Approx((loss(x, up, offset) - loss(x, down, offset)) / (2 * h)).epsilon(1e-6));
    std::vector<double> up_b = offset, down_b = offset;
    up_b[l] += h;
    down_b[l] -= h;
    CHECK(grads.elements()[2].GetDouble(static_cast<int64_t>(l)) ==
          Approx((loss(x, scale, up_b) - loss(x, scale, down_b)) / (2 * h)).epsilon(1e-6));
  }
}

TEST_CASE("batch norm rounds once to the operand type", "[eval]") {
  // bf16 {1, 3} (one feature): mean 2, variance 1, y = {-1, 1} exactly; results are bf16.
  const Literal result =
      BatchNormTraining(Literal::FromDoubles(ElementType::kBF16, {2, 1}, {1, 3}),
                        Literal::FromDoubles(ElementType::kBF16, {1}, {1}),
                        Literal::FromDoubles(ElementType::kBF16, {1}, {0}), 0, 1);
  CHECK(result.elements()[0].element_type() == ElementType::kBF16);
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{-1, 1});
}

}  // namespace
}  // namespace tpusim::eval
