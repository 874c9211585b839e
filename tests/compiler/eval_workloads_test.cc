// The real workloads of ../shared/workloads/xla/ on the reference evaluator, with random inputs
// from tpusim's input generator, and checks of what each one computes that follow from the
// module itself (a sort sorts, a mean is a sum over 1024, ...).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "compiler/eval/evaluator.h"
#include "compiler/eval/literal_util.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/shape_inference.h"
#include "sim/inputs.h"

using namespace tpusim;
using hlo::Literal;

namespace {

struct Workload {
  std::unique_ptr<hlo::Module> module;
  std::vector<Literal> arguments;
  Literal result;
};

Workload RunWorkload(const std::string& name, uint64_t seed = 1) {
  const std::string path = std::string(TPUSIM_SHARED_DIR) + "/workloads/xla/" + name + ".hlo";
  std::ifstream in(path);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  Workload workload;
  workload.module = hlo::ParseModule(text.str(), path);
  workload.arguments = sim::PrepareArguments(*workload.module->entry(), {}, seed);
  workload.result = eval::Evaluate(*workload.module, workload.arguments);
  return workload;
}

}  // namespace

TEST_CASE("every small workload evaluates to its root's shape", "[eval][workloads]") {
  // Left out, by size: fp8_gemm_loop runs 20 dots of 32768x1024x8192 (11 TFLOP); gemma3_1b has 1B
  // parameters; the MaxText and Llama train steps hold tens of GB of f32 state.
  const char* kWorkloads[] = {
      "argsort_axis_1024x512_bf16", "depthwise_conv_3x3_1x256x56x56_bf16", "dot_bf16_0", "dot_bf16_1",
      "dynamic_slice_loop_1x2048x768_bf16", "fully_connected_reference_model", "isolated_convolution",
      "layer_norm_1x4096x768_bf16", "mean_axis_1x4096x1024_bf16", "mha_block_1x12x128x64_bf16",
      "sort_full_1024x4096_bf16", "sum_axis_1x4096x1024_bf16", "topk_logits_k10_1x50000_bf16", "while"};
  for (const char* name : kWorkloads) {
    INFO(name);
    const Workload workload = RunWorkload(name);
    CHECK(hlo::SameShapeIgnoringLayout(workload.result.shape(), workload.module->entry()->root()->shape()));
  }
}

TEST_CASE("sort_full sorts every row ascending", "[eval][workloads]") {
  const Workload w = RunWorkload("sort_full_1024x4096_bf16");
  const std::vector<double> in = eval::ToDoubles(w.arguments[0]);
  const std::vector<double> out = eval::ToDoubles(w.result);
  for (int64_t row = 0; row < 1024; ++row) {
    std::vector<double> expected(in.begin() + row * 4096, in.begin() + (row + 1) * 4096);
    std::sort(expected.begin(), expected.end());
    REQUIRE(std::equal(expected.begin(), expected.end(), out.begin() + row * 4096));
  }
}

TEST_CASE("argsort then take_along_axis gives each row in ascending order", "[eval][workloads]") {
  // The module's root gathers x at the argsort indices: the sorted values of each row.
  const Workload w = RunWorkload("argsort_axis_1024x512_bf16");
  const std::vector<double> in = eval::ToDoubles(w.arguments[0]);
  const std::vector<double> out = eval::ToDoubles(w.result);
  for (int64_t row = 0; row < 1024; ++row) {
    std::vector<double> expected(in.begin() + row * 512, in.begin() + (row + 1) * 512);
    std::sort(expected.begin(), expected.end());
    REQUIRE(std::equal(expected.begin(), expected.end(), out.begin() + row * 512));
  }
}

TEST_CASE("topk returns the 10 largest logits in order", "[eval][workloads]") {
  const Workload w = RunWorkload("topk_logits_k10_1x50000_bf16");
  std::vector<double> in = eval::ToDoubles(w.arguments[0]);
  std::sort(in.begin(), in.end(), std::greater<>());
  const std::vector<double> top(in.begin(), in.begin() + 10);
  CHECK(eval::ToDoubles(w.result) == top);
}

TEST_CASE("sum_axis and mean_axis: f32 sums of bf16 rows, rounded once", "[eval][workloads]") {
  const Workload sum = RunWorkload("sum_axis_1x4096x1024_bf16");
  const Workload mean = RunWorkload("mean_axis_1x4096x1024_bf16");
  const std::vector<double> in = eval::ToDoubles(sum.arguments[0]);  // same seed: same input
  REQUIRE(in == eval::ToDoubles(mean.arguments[0]));
  const std::vector<double> sums = eval::ToDoubles(sum.result);
  const std::vector<double> means = eval::ToDoubles(mean.result);
  for (int64_t row = 0; row < 4096; ++row) {
    const double exact = std::accumulate(in.begin() + row * 1024, in.begin() + (row + 1) * 1024, 0.0);
    // One bf16 rounding of the f32 sum: within 2^-8 relative (bf16 has 8 significant bits), plus
    // the f32 accumulation error, far smaller.
    REQUIRE(std::abs(sums[row] - exact) <= std::abs(exact) * 0x1p-8 + 1e-6);
    REQUIRE(std::abs(means[row] - exact / 1024) <= std::abs(exact / 1024) * 0x1p-8 + 1e-9);
  }
}
