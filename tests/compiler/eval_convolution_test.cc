// Tests for compiler/eval/convolution.h. Expected values follow seed 003's ConvWithGeneralPadding
// pseudocode (output(b, oz, oy, ox) = sum over iz, ky, kx of input(b, iz, oy*stride + ky - pad_low,
// ...) * kernel(oz, iz, ky, kx), skipping padding; lhs dilation inserts holes into the input, rhs
// dilation into the kernel), worked out by hand for each case; groups follow XLA's definitions.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "compiler/eval/convolution.h"
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

// bf01_oi01->bf01 with n spatial dims (NCHW input, OIHW kernel).
ConvolutionDimensions Nchw(int n) {
  ConvolutionDimensions dims;
  dims.input_batch_dim = 0;
  dims.input_feature_dim = 1;
  dims.kernel_output_feature_dim = 0;
  dims.kernel_input_feature_dim = 1;
  dims.output_batch_dim = 0;
  dims.output_feature_dim = 1;
  for (int i = 0; i < n; ++i) {
    dims.input_spatial_dims.push_back(2 + i);
    dims.kernel_spatial_dims.push_back(2 + i);
    dims.output_spatial_dims.push_back(2 + i);
  }
  return dims;
}

WindowDimension Win(int64_t size, int64_t stride = 1, int64_t lo = 0, int64_t hi = 0,
                    int64_t lhs_dilation = 1, int64_t rhs_dilation = 1, bool reversal = false) {
  return WindowDimension{size, stride, lo, hi, lhs_dilation, rhs_dilation, reversal};
}

const Literal kImage = F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
const Literal kDiagonal = F32({1, 1, 2, 2}, {1, 0, 0, 1});

Literal Conv1D(const std::vector<double>& input, const std::vector<double>& kernel,
               WindowDimension w) {
  const std::vector<WindowDimension> window = {w};
  return Convolution(F32({1, 1, static_cast<int64_t>(input.size())}, input),
                     F32({1, 1, static_cast<int64_t>(kernel.size())}, kernel), window, Nchw(1), 1,
                     1, ElementType::kF32);
}

TEST_CASE("convolution: seed 003's pseudocode, 2-D, valid", "[eval]") {
  // out(y, x) = in(y, x) + in(y + 1, x + 1): {{1 + 5, 2 + 6}, {4 + 8, 5 + 9}}.
  const std::vector<WindowDimension> window = {Win(2), Win(2)};
  const Literal out = Convolution(kImage, kDiagonal, window, Nchw(2), 1, 1, ElementType::kF32);
  CHECK(out.dims() == std::vector<int64_t>{1, 1, 2, 2});
  CHECK(ToDoubles(out) == std::vector<double>{6, 8, 12, 14});
}

TEST_CASE("convolution: padding adds zeros around the input", "[eval]") {
  // Pad 1 on every side: out(y, x) = in(y - 1, x - 1) + in(y, x), zero outside.
  const std::vector<WindowDimension> window = {Win(2, 1, 1, 1), Win(2, 1, 1, 1)};
  const Literal out = Convolution(kImage, kDiagonal, window, Nchw(2), 1, 1, ElementType::kF32);
  CHECK(out.dims() == std::vector<int64_t>{1, 1, 4, 4});
  CHECK(ToDoubles(out) == std::vector<double>{1, 2, 3, 0, 4, 6, 8, 3, 7, 12, 14, 6, 0, 7, 8, 9});
}

TEST_CASE("convolution: stride, dilations, negative padding and window reversal", "[eval]") {
  // Stride 2 with kernel {1, 1}: windows at 0 and 2 of {1..5}: {3, 7}.
  CHECK(ToDoubles(Conv1D({1, 2, 3, 4, 5}, {1, 1}, Win(2, 2))) == std::vector<double>{3, 7});
  // lhs dilation 2: the input is {1, 0, 2, 0, 3}: {1, 2, 2, 3}.
  CHECK(ToDoubles(Conv1D({1, 2, 3}, {1, 1}, Win(2, 1, 0, 0, 2, 1))) ==
        std::vector<double>{1, 2, 2, 3});
  // rhs dilation 2: taps 0 and 2: {1 + 3, 2 + 4, 3 + 5}.
  CHECK(ToDoubles(Conv1D({1, 2, 3, 4, 5}, {1, 1}, Win(2, 1, 0, 0, 1, 2))) ==
        std::vector<double>{4, 6, 8});
  // Negative low padding removes the first input element: {2, 3, 4} with {1, 1}: {5, 7}.
  CHECK(ToDoubles(Conv1D({1, 2, 3, 4}, {1, 1}, Win(2, 1, -1, 0))) == std::vector<double>{5, 7});
  // Kernel {1, 2}: plain {1*1 + 2*2, 2*1 + 3*2} = {5, 8}; reversed (read as {2, 1}) {4, 7}.
  CHECK(ToDoubles(Conv1D({1, 2, 3}, {1, 2}, Win(2))) == std::vector<double>{5, 8});
  CHECK(ToDoubles(Conv1D({1, 2, 3}, {1, 2}, Win(2, 1, 0, 0, 1, 1, true))) ==
        std::vector<double>{4, 7});
}

TEST_CASE("convolution: features contract like a matrix product", "[eval]") {
  // A 1x1 convolution: out[o] = sum_i in[i] * k[o][i], k = {{1, 2}, {3, 4}}: {5, 11}.
  const std::vector<WindowDimension> window = {Win(1)};
  const Literal out = Convolution(F32({1, 2, 1}, {1, 2}), F32({2, 2, 1}, {1, 2, 3, 4}), window,
                                  Nchw(1), 1, 1, ElementType::kF32);
  CHECK(out.dims() == std::vector<int64_t>{1, 2, 1});
  CHECK(ToDoubles(out) == std::vector<double>{5, 11});
}

TEST_CASE("convolution: feature groups (depthwise)", "[eval]") {
  // Two groups of one feature: output feature 0 sees input feature 0 with {1, 1}, output feature 1
  // sees input feature 1 with {1, -1}: {{3, 5}, {-10, -10}}.
  const std::vector<WindowDimension> window = {Win(2)};
  const Literal out =
      Convolution(F32({1, 2, 3}, {1, 2, 3, 10, 20, 30}), F32({2, 1, 2}, {1, 1, 1, -1}), window,
                  Nchw(1), 2, 1, ElementType::kF32);
  CHECK(out.dims() == std::vector<int64_t>{1, 2, 2});
  CHECK(ToDoubles(out) == std::vector<double>{3, 5, -10, -10});
  CHECK_THROWS_WITH(
      Convolution(F32({1, 2, 3}, {1, 2, 3, 10, 20, 30}), F32({2, 1, 2}, {1, 1, 1, -1}), window,
                  Nchw(1), 3, 1, ElementType::kF32),
      Catch::Contains("feature groups"));
}

TEST_CASE("convolution: batch groups", "[eval]") {
  // Input batch {1, 2}, {3, 4} in two groups; output feature 0 uses batch 0 with weight 1, output
  // feature 1 uses batch 1 with weight 10. The output batch is 1: {{1, 2}, {30, 40}}.
  const std::vector<WindowDimension> window = {Win(1)};
  const Literal out = Convolution(F32({2, 1, 2}, {1, 2, 3, 4}), F32({2, 1, 1}, {1, 10}), window,
                                  Nchw(1), 1, 2, ElementType::kF32);
  CHECK(out.dims() == std::vector<int64_t>{1, 2, 2});
  CHECK(ToDoubles(out) == std::vector<double>{1, 2, 30, 40});
}

TEST_CASE("convolution: b01f_01io->b01f (NHWC) gives the same numbers", "[eval]") {
  ConvolutionDimensions dims;
  dims.input_batch_dim = 0;
  dims.input_spatial_dims = {1, 2};
  dims.input_feature_dim = 3;
  dims.kernel_spatial_dims = {0, 1};
  dims.kernel_input_feature_dim = 2;
  dims.kernel_output_feature_dim = 3;
  dims.output_batch_dim = 0;
  dims.output_spatial_dims = {1, 2};
  dims.output_feature_dim = 3;
  const std::vector<WindowDimension> window = {Win(2), Win(2)};
  const Literal out =
      Convolution(F32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), F32({2, 2, 1, 1}, {1, 0, 0, 1}),
                  window, dims, 1, 1, ElementType::kF32);
  CHECK(out.dims() == std::vector<int64_t>{1, 2, 2, 1});
  CHECK(ToDoubles(out) == std::vector<double>{6, 8, 12, 14});
}

TEST_CASE("convolution: bf16 accumulates in f32 and rounds once", "[eval]") {
  // 257 input features {1, 2^-8 x 256} against ones: the f32 sum is 2 (bf16 steps would stay at 1).
  std::vector<double> input(257, 0x1p-8);
  input[0] = 1;
  const std::vector<WindowDimension> window = {Win(1)};
  const Literal out = Convolution(
      Literal::FromDoubles(ElementType::kBF16, {1, 257, 1}, input),
      Literal::FromDoubles(ElementType::kBF16, {1, 257, 1}, std::vector<double>(257, 1)), window,
      Nchw(1), 1, 1, ElementType::kBF16);
  CHECK(ToDoubles(out) == std::vector<double>{2});
}

}  // namespace
}  // namespace tpusim::eval
