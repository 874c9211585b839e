// Materialization throughput (issue 2 target: >= 1 GB/s for a 64 MiB bf16 array into
// T(8,128)(2,1) on one core). Run: build/tests/tpusim_bench --benchmark_counters_tabular=true
// Bytes/s counts the logical array's bytes.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "isa/layout_index.h"
#include "isa/materialize.h"
#include "isa/shape.h"

namespace {

using namespace tpusim::isa;

std::vector<uint8_t> Pattern(int64_t bytes) {
  std::vector<uint8_t> data(bytes);
  for (int64_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  return data;
}

void Run(benchmark::State& state, const char* shape_text, bool to_image) {
  const LayoutMap map(ParseShape(shape_text));
  const int64_t logical_bytes = map.element_count() * ElementByteWidth(map.shape().element_type);
  std::vector<uint8_t> logical = Pattern(logical_bytes);
  std::vector<uint8_t> image(map.byte_size());
  MaterializeInto(map, logical, image);
  for (auto _ : state) {
    if (to_image) {
      MaterializeInto(map, logical, image);
      benchmark::DoNotOptimize(image.data());
    } else {
      DematerializeInto(map, image, logical);
      benchmark::DoNotOptimize(logical.data());
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * logical_bytes);
}

// 64 MiB of bf16: 4096 x 8192 elements.
void BM_Materialize_bf16_64MiB_T8x128_2x1(benchmark::State& state) {
  Run(state, "bf16[4096,8192]{1,0:T(8,128)(2,1)}", true);
}
void BM_Dematerialize_bf16_64MiB_T8x128_2x1(benchmark::State& state) {
  Run(state, "bf16[4096,8192]{1,0:T(8,128)(2,1)}", false);
}
// Ragged edges: the last row and column tiles are partly padding.
void BM_Materialize_bf16_ragged_T8x128_2x1(benchmark::State& state) {
  Run(state, "bf16[4093,8189]{1,0:T(8,128)(2,1)}", true);
}
// Column-major (the transposed operand of a dot).
void BM_Materialize_bf16_64MiB_colmajor_T8x128_2x1(benchmark::State& state) {
  Run(state, "bf16[4096,8192]{0,1:T(8,128)(2,1)}", true);
}
void BM_Materialize_f32_64MiB_T8x128(benchmark::State& state) {
  Run(state, "f32[4096,4096]{1,0:T(8,128)}", true);
}
void BM_Materialize_s8_64MiB_T8x128_4x1(benchmark::State& state) {
  Run(state, "s8[8192,8192]{1,0:T(8,128)(4,1)}", true);
}
// A layout with `*` dims takes the general per-element path.
void BM_Materialize_f32_4MiB_combined(benchmark::State& state) {
  Run(state, "f32[8,128,1024]{2,1,0:T(*,8,128)}", true);
}

BENCHMARK(BM_Materialize_bf16_64MiB_T8x128_2x1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Dematerialize_bf16_64MiB_T8x128_2x1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Materialize_bf16_ragged_T8x128_2x1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Materialize_bf16_64MiB_colmajor_T8x128_2x1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Materialize_f32_64MiB_T8x128)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Materialize_s8_64MiB_T8x128_4x1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Materialize_f32_4MiB_combined)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
