// DMA planning (models/dma_plan.h) of the element-granular walks that dominated MaxText's and
// Llama's timing-only runs: row-major bf16 <-> T(8,128)(2,1) (2-byte runs) and a transposing
// relayout. Timing-only plans (no data) against plans that also move the bytes, which walk every
// run.
#include <benchmark/benchmark.h>

#include <string>

#include "isa/shape.h"
#include "models/dma_plan.h"
#include "models/hbm.h"

namespace {

using namespace tpusim::models;

void Plan(benchmark::State& state, const char* source, const char* destination, bool move_data) {
  Hbm hbm("hbm", HbmParams{uint64_t{1} << 30, 4, 512, 32, 300});
  const tpusim::isa::Shape from = tpusim::isa::ParseShape(source);
  const tpusim::isa::Shape to = tpusim::isa::ParseShape(destination);
  DmaTransfer transfer;
  transfer.source = {&hbm, 0, from, std::vector<int64_t>(from.dims.size(), 0)};
  transfer.destination = {&hbm, uint64_t{256} << 20, to, std::vector<int64_t>(to.dims.size(), 0)};
  transfer.sizes = from.dims;
  uint64_t requests = 0;
  for (auto _ : state) {
    const DmaPlan plan = PlanDma(transfer, 512, move_data);
    requests = plan.reads.size() + plan.writes.size();
    benchmark::DoNotOptimize(requests);
  }
  state.counters["requests"] = static_cast<double>(requests);
}

}  // namespace

// 32 MiB each way: a general dot's operand copies before they were read in place.
BENCHMARK_CAPTURE(Plan, rowmajor_to_tiled_bf16_4096x4096, "bf16[4096,4096]{1,0}", "bf16[4096,4096]{1,0:T(8,128)(2,1)}", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Plan, rowmajor_to_tiled_bf16_4096x4096_moving, "bf16[4096,4096]{1,0}", "bf16[4096,4096]{1,0:T(8,128)(2,1)}", true)
    ->Unit(benchmark::kMillisecond);
// Llama's attention relayout, one head block: the two minor dims swapped.
BENCHMARK_CAPTURE(Plan, transpose_bf16_8x128x8192, "bf16[8,128,8192]{1,2,0:T(8,128)(2,1)}", "bf16[8,128,8192]{2,1,0:T(8,128)(2,1)}", false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Plan, transpose_bf16_8x128x8192_moving, "bf16[8,128,8192]{1,2,0:T(8,128)(2,1)}", "bf16[8,128,8192]{2,1,0:T(8,128)(2,1)}", true)
    ->Unit(benchmark::kMillisecond);

// SystemC's library defines main() and calls sc_main (the memories are SystemC modules).
int sc_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
