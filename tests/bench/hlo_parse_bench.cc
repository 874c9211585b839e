// HLO front-end speed (issue 3 target: gemma3_1b_flax_call.hlo, 2.3 MB, parses in well under a
// second in a Release build). Run: build/tests/tpusim_hlo_bench --benchmark_counters_tabular=true
// Bytes/s counts the HLO text.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"

namespace {

std::string ReadWorkload(const char* name) {
  std::ifstream file(std::string(TPUSIM_SHARED_DIR "/workloads/xla/") + name, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

void Parse(benchmark::State& state, const char* name) {
  const std::string text = ReadWorkload(name);
  if (text.empty()) {
    state.SkipWithError("workload not found");
    return;
  }
  for (auto _ : state) {
    auto module = tpusim::hlo::ParseModule(text, name);
    benchmark::DoNotOptimize(module.get());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

void ParseAndPrint(benchmark::State& state, const char* name) {
  const std::string text = ReadWorkload(name);
  if (text.empty()) {
    state.SkipWithError("workload not found");
    return;
  }
  for (auto _ : state) {
    auto module = tpusim::hlo::ParseModule(text, name);
    std::string printed = tpusim::hlo::ToString(*module);
    benchmark::DoNotOptimize(printed.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

void Print(benchmark::State& state, const char* name) {
  const std::string text = ReadWorkload(name);
  if (text.empty()) {
    state.SkipWithError("workload not found");
    return;
  }
  const auto module = tpusim::hlo::ParseModule(text, name);
  for (auto _ : state) {
    std::string printed = tpusim::hlo::ToString(*module);
    benchmark::DoNotOptimize(printed.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

BENCHMARK_CAPTURE(Parse, gemma3_1b, "gemma3_1b_flax_call.hlo")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(ParseAndPrint, gemma3_1b, "gemma3_1b_flax_call.hlo")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Print, gemma3_1b, "gemma3_1b_flax_call.hlo")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Parse, maxtext, "maxtext_train_step_before_optimization.hlo")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Parse, llama3_spmd, "llama3_8b_bf16_activation_offloading_1x8.hlo")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
