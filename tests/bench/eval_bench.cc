// Reference-evaluator kernel speed (compiler/eval). Targets: a bf16 [1024,1024] x [1024,1024] dot
// in under 2 s on one core; the layer-norm workload's reduce (3M elements) well under 1 s.
// Run: build/tests/tpusim_eval_bench --benchmark_counters_tabular=true (times are one core's CPU
// time; the Time column is wall time and grows when the machine is shared).
// Figures and the machine they were taken on are in docs/evaluator.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "compiler/eval/computation.h"
#include "compiler/eval/convert_ops.h"
#include "compiler/eval/dot.h"
#include "compiler/eval/elementwise.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/reduce.h"
#include "compiler/eval/shape_ops.h"
#include "compiler/hlo/literal.h"
#include "isa/convert.h"

namespace {

using tpusim::hlo::Literal;
using tpusim::isa::ElementType;
namespace eval = tpusim::eval;

// A bf16 array of pseudo-random values in [-1, 1) (a fixed LCG, so every run sees the same data).
Literal RandomBf16(std::vector<int64_t> dims) {
  Literal literal(tpusim::isa::Shape::Array(ElementType::kBF16, std::move(dims)));
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto bytes = literal.mutable_bytes();
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float value = static_cast<float>(static_cast<int32_t>(state >> 32)) * 0x1p-31f;
    const uint16_t bits = tpusim::isa::F32ToBf16(value);
    bytes[2 * i] = static_cast<uint8_t>(bits);
    bytes[2 * i + 1] = static_cast<uint8_t>(bits >> 8);
  }
  return literal;
}

void BM_Dot_bf16_1024x1024x1024(benchmark::State& state) {
  const Literal lhs = RandomBf16({1024, 1024});
  const Literal rhs = RandomBf16({1024, 1024});
  eval::DotDimensions dims;
  dims.lhs_contracting_dims = {1};
  dims.rhs_contracting_dims = {0};
  for (auto _ : state) {
    Literal out = eval::Dot(lhs, rhs, dims, ElementType::kBF16);
    benchmark::DoNotOptimize(out.bytes().data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * 1024 * 1024 * 1024 * state.iterations(),
                                                 benchmark::Counter::kIsRate);
}

// The layer-norm workload: convert bf16[1,4096,768] to f32, reduce dim 2 with an add reducer.
void BM_Reduce_bf16_1x4096x768_dim2_add_f32(benchmark::State& state) {
  const Literal x = RandomBf16({1, 4096, 768});
  const Literal zero = Literal::FromDoubles(ElementType::kF32, {}, {0});
  const std::vector<int64_t> dims = {2};
  for (auto _ : state) {
    const Literal f32 = eval::Convert(x, ElementType::kF32);
    Literal sum = eval::Reduce(f32, zero, dims, eval::Reducer::Of(eval::BinaryOp::kAdd));
    benchmark::DoNotOptimize(sum.bytes().data());
  }
  state.SetItemsProcessed(state.iterations() * x.element_count());
}

// The same reduce through a generic (callback) reducer, for comparison with the native loop.
void BM_Reduce_f32_1x4096x768_dim2_generic_add(benchmark::State& state) {
  const Literal f32 = eval::Convert(RandomBf16({1, 4096, 768}), ElementType::kF32);
  const Literal zero = Literal::FromDoubles(ElementType::kF32, {}, {0});
  const std::vector<int64_t> dims = {2};
  const eval::Reducer add = eval::Reducer::Of([](std::span<const Literal> args) {
    return eval::Binary(eval::BinaryOp::kAdd, args[0], args[1]);
  });
  for (auto _ : state) {
    Literal sum = eval::Reduce(f32, zero, dims, add);
    benchmark::DoNotOptimize(sum.bytes().data());
  }
  state.SetItemsProcessed(state.iterations() * f32.element_count());
}

// Every kernel call of ../shared/workloads/xla/layer_norm_1x4096x768_bf16.hlo, in its order, as
// the dispatcher will make them (less the dispatch itself).
void BM_LayerNorm_1x4096x768_bf16_kernels(benchmark::State& state) {
  const Literal x = RandomBf16({1, 4096, 768});
  const std::vector<int64_t> full = {1, 4096, 768}, column = {1, 4096, 1}, rows = {1, 4096};
  const std::vector<int64_t> reduced = {2}, keep01 = {0, 1}, keep012 = {0, 1, 2}, none = {};
  const eval::Reducer add = eval::Reducer::Of(eval::BinaryOp::kAdd);
  const Literal zero = eval::Scalar(ElementType::kF32, 0);
  for (auto _ : state) {
    const Literal f32 = eval::Convert(x, ElementType::kF32);
    const Literal sum = eval::Reshape(eval::Reduce(f32, zero, reduced, add), column);
    const Literal count = eval::Broadcast(eval::Scalar(ElementType::kF32, 768), column, none);
    const Literal mean =
        eval::Convert(eval::Binary(eval::BinaryOp::kDivide, sum, count), ElementType::kBF16);
    const Literal mean_full =
        eval::Broadcast(eval::Reshape(eval::Broadcast(mean, column, keep012), rows), full, keep01);
    const Literal centered = eval::Binary(eval::BinaryOp::kSubtract, x, mean_full);
    const Literal square = eval::Binary(eval::BinaryOp::kMultiply, centered, centered);
    const Literal square_sum = eval::Reshape(
        eval::Reduce(eval::Convert(square, ElementType::kF32), zero, reduced, add), column);
    const Literal variance =
        eval::Convert(eval::Binary(eval::BinaryOp::kDivide, square_sum, count), ElementType::kBF16);
    const Literal epsilon =
        eval::Broadcast(eval::Scalar(ElementType::kBF16, 1.001e-05), column, none);
    const Literal deviation =
        eval::Unary(eval::UnaryOp::kSqrt, eval::Binary(eval::BinaryOp::kAdd, variance, epsilon));
    const Literal deviation_full = eval::Broadcast(
        eval::Reshape(eval::Broadcast(deviation, column, keep012), rows), full, keep01);
    Literal out = eval::Binary(eval::BinaryOp::kDivide, centered, deviation_full);
    benchmark::DoNotOptimize(out.bytes().data());
  }
  state.SetItemsProcessed(state.iterations() * x.element_count());
}

}  // namespace

BENCHMARK(BM_Dot_bf16_1024x1024x1024)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Reduce_bf16_1x4096x768_dim2_add_f32)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LayerNorm_1x4096x768_bf16_kernels)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduce_f32_1x4096x768_dim2_generic_add)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
