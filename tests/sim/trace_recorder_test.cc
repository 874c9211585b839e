// The trace recorder (sim/trace/) on real runs of the chip model, written to an in-memory sink:
// exact cases (a DMA and the vld that reads it; merging back-to-back operations) and the
// attention workload's trace against its run statistics and module report.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <variant>

#include "compiler/lower/compile.h"
#include "isa/assembler.h"
#include "models/clock_domain.h"
#include "sim/chip/chip.h"
#include "sim/compile_options.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"
#include "sim/module_loading.h"
#include "sim/module_report.h"
#include "sim/trace/trace_recorder.h"
#include "sim/trace/xla_lines.h"
#include "tests/sim/trace_recording_sink.h"

namespace {

using tpusim::sim::TraceLevel;
using tpusim::trace_test::AnnotationOf;
using tpusim::trace_test::RecordingSink;

// A fresh chip for each run (nothing in it is an sc_module, so it can be made between sc_start
// calls; a chip's DMA statistics count over all its runs, so each traced run gets its own). The
// last one is kept alive until the next: its DMA threads may still be referenced until then.
tpusim::sim::Chip& ChipFor(const std::string& preset) {
  static std::unique_ptr<tpusim::sim::Chip> chip;
  chip = std::make_unique<tpusim::sim::Chip>(tpusim::sim::LoadArchConfig(tpusim::sim::ResolveConfigPath(preset), {}));
  return *chip;
}

tpusim::sim::TraceRecorderSetup SetupFor(const tpusim::sim::Chip& chip, TraceLevel level) {
  tpusim::sim::TraceRecorderSetup setup;
  setup.process_name = "/device:TPU:0 (" + chip.config().name() + ")";
  setup.clock_mhz = chip.config().tensor_core().clock_mhz();
  setup.mxu_count = chip.params().mxu_count;
  setup.dma_engine_names = chip.dma_engine_names();
  setup.level = level;
  return setup;
}

struct TracedRun {
  RecordingSink sink;
  tpusim::sim::RunReport run;
};

// Runs `code` (after a .target line `tiny` satisfies) on `tiny`, traced at `level`.
std::unique_ptr<TracedRun> RunProgram(const std::string& code, TraceLevel level) {
  const std::string text =
      ".program traced\n"
      ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=16, mxu_cols=16, dma_engines=1, semaphores=1, "
      "cmem=false\n" + code;
  const tpusim::isa::Program program = tpusim::isa::Assemble(text, "(test)");
  tpusim::sim::Chip& chip = ChipFor("tiny");
  auto traced = std::make_unique<TracedRun>();
  tpusim::sim::TraceRecorder recorder(traced->sink, SetupFor(chip, level), program);
  chip.set_marked_labels({});
  chip.set_observer(0, &recorder);
  traced->run = chip.Run(program, {}, true);
  chip.clear_observers();
  recorder.Finish(traced->run.cycles, {{"traced", 0, traced->run.cycles, {}}}, {});
  return traced;
}

uint64_t UintOf(const tpusim::traces::Slice& slice, const std::string& name) {
  const tpusim::traces::Annotation* annotation = AnnotationOf(slice, name);
  REQUIRE(annotation != nullptr);
  return std::get<uint64_t>(annotation->value);
}

double DoubleOf(const tpusim::traces::Slice& slice, const std::string& name) {
  const tpusim::traces::Annotation* annotation = AnnotationOf(slice, name);
  REQUIRE(annotation != nullptr);
  return std::get<double>(annotation->value);
}

// A 4 KiB DMA from HBM into VMEM, the wait for it, a vld of its first vreg, then four adds with
// distinct destinations (no register waits between them: they issue back to back).
constexpr const char* kDmaThenLoad =
    ".buffer a, hbm[0x0], size=0x1000, shape=f32[8,128]{1,0}, role=parameter(0)\n"
    ".buffer b, vmem[0x0], size=0x1000, shape=f32[8,128]{1,0}, role=temporary\n"
    "  dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n"
    "  sem.wait sem[0], 1\n"
    "  vld v0, vmem[0x0]\n"
    "  vadd.f32 v1, v0, v0\n"
    "  vadd.f32 v2, v0, v0\n"
    "  vadd.f32 v3, v0, v0\n"
    "  vadd.f32 v4, v0, v0\n"
    "  halt\n";

TEST_CASE("trace recorder: a DMA into VMEM starts a flow that the vld reading it ends", "[trace]") {
  for (TraceLevel level : {TraceLevel::kUnits, TraceLevel::kAll}) {
    const auto traced = RunProgram(kDmaThenLoad, level);
    const RecordingSink& sink = traced->sink;
    INFO("level " << static_cast<int>(level));
    CHECK(sink.problems.empty());
    CHECK(sink.finished);
    const auto dmas = sink.SlicesOn(traced->run.cores[0].dma_engines.at(0).name);
    REQUIRE(dmas.size() == 1);
    const tpusim::traces::Slice& dma = *dmas[0];
    CHECK(dma.name == "hbm -> vmem");
    CHECK(UintOf(dma, "bytes") == 8 * 128 * 4);
    CHECK(UintOf(dma, "pc") == 0);
    REQUIRE(dma.flow_out.size() == 1);
    // The engine's busy time is the transfer's begin to completion, rounded up to whole cycles
    // (tiny: 1000 MHz, 1 cycle = 1000 ps).
    CHECK((dma.end_ps - dma.begin_ps + 999) / 1000 == traced->run.cores[0].dma_engines.at(0).busy_cycles);
    const auto loads = sink.SlicesOn("VPU load/store");
    REQUIRE(loads.size() == 1);
    CHECK(loads[0]->name == "vld");
    CHECK(loads[0]->flow_in == dma.flow_out);
    // The vld waited for the DMA's semaphore: it begins after the transfer ended.
    CHECK(loads[0]->begin_ps >= dma.end_ps);
  }
}

TEST_CASE("trace recorder: a unit's operations within one kernel step merge into one slice at --trace-level units",
          "[trace]") {
  // tiny's element-wise unit takes one vreg per cycle: the four vadds occupy four consecutive
  // cycles, 1 busy cycle each (VpuStats: operations / throughput = 4).
  const auto units = RunProgram(kDmaThenLoad, TraceLevel::kUnits);
  CHECK(units->sink.problems.empty());
  const auto vpu = units->sink.SlicesOn("VPU");
  REQUIRE(vpu.size() == 1);
  CHECK(vpu[0]->name == "vadd.f32");
  CHECK(UintOf(*vpu[0], "instructions") == 4);
  CHECK(DoubleOf(*vpu[0], "busy_cycles") == 4.0);
  CHECK(vpu[0]->end_ps - vpu[0]->begin_ps == 4000);
  CHECK(units->run.cores[0].vpu.units[0].busy_cycles == 4.0);
  // The scalar core issued 8 instructions in 8 distinct cycles (ScalarCoreStats::issue_cycles);
  // its slices' busy cycles add up to that.
  double scalar_busy = 0;
  for (const auto* slice : units->sink.SlicesOn("Scalar core")) scalar_busy += DoubleOf(*slice, "busy_cycles");
  CHECK(scalar_busy == static_cast<double>(units->run.cores[0].scalar_core.issue_cycles));
  // The sem.wait ends the first step: dma and sem.wait, then vld, the vadds and halt.
  const auto scalar = units->sink.SlicesOn("Scalar core");
  REQUIRE(scalar.size() == 2);
  CHECK(scalar[0]->name == "dma, sem.wait");
  CHECK(UintOf(*scalar[0], "instructions") == 2);
  CHECK(scalar[1]->name == "vld, vadd.f32, halt");
  CHECK(UintOf(*scalar[1], "instructions") == 6);

  const auto all = RunProgram(kDmaThenLoad, TraceLevel::kAll);
  CHECK(all->sink.problems.empty());
  const auto each = all->sink.SlicesOn("VPU");
  REQUIRE(each.size() == 4);
  for (std::size_t i = 0; i < each.size(); ++i) {
    CHECK(each[i]->name == "vadd.f32");
    CHECK(UintOf(*each[i], "pc") == 3 + i);
    CHECK(each[i]->end_ps - each[i]->begin_ps == 1000);
    if (i > 0) CHECK(each[i]->begin_ps == each[i - 1]->end_ps);
  }
  CHECK(all->sink.SlicesOn("Scalar core").size() == 8);

  const auto ops = RunProgram(kDmaThenLoad, TraceLevel::kOps);
  CHECK(ops->sink.problems.empty());
  CHECK(ops->sink.Named("VPU") == nullptr);
  CHECK(ops->sink.Named("Scalar core") == nullptr);
  CHECK(ops->sink.slices.size() == 1);  // XLA Modules: the program
}

// The attention workload, compiled and run in-process (timing only: the times are the same).
struct TracedModule {
  RecordingSink sink;
  tpusim::compiler::CompiledModule compiled;
  tpusim::sim::RunReport run;
  tpusim::sim::ModuleReport report;
  double clock_mhz = 0;
};

std::unique_ptr<TracedModule> RunAttention(TraceLevel level) {
  tpusim::sim::Chip& chip = ChipFor(tpusim::sim::kDefaultPreset);
  auto traced = std::make_unique<TracedModule>();
  traced->clock_mhz = chip.config().tensor_core().clock_mhz();
  auto module = tpusim::sim::LoadModule(TPUSIM_SOURCE_DIR "/tests/workloads/mha_block_1x12x128x64_bf16.hlo", true);
  traced->compiled = tpusim::compiler::Compile(*module, tpusim::sim::CompileOptionsFor(chip.config()));
  tpusim::sim::TraceRecorder recorder(traced->sink, SetupFor(chip, level), traced->compiled.program);
  chip.set_marked_labels(tpusim::sim::MarkedLabels(traced->compiled));
  chip.set_observer(0, &recorder);
  traced->run = chip.Run(traced->compiled.program, {}, true);
  chip.clear_observers();
  traced->report = tpusim::sim::MakeModuleReport(traced->compiled, traced->run, chip.config());
  recorder.Finish(traced->run.cycles, tpusim::sim::XlaModuleSlices(module->name(), traced->run),
                  tpusim::sim::XlaOpSlices(traced->report, traced->run));
  return traced;
}

double BusyOn(const RecordingSink& sink, const std::string& track) {
  double busy = 0;
  for (const auto* slice : sink.SlicesOn(track)) busy += DoubleOf(*slice, "busy_cycles");
  return busy;
}

TEST_CASE("trace recorder: the attention workload's trace matches its statistics and report", "[trace]") {
  const TraceLevel level = GENERATE(TraceLevel::kUnits, TraceLevel::kAll);
  INFO("level " << static_cast<int>(level));
  const auto traced = RunAttention(level);
  const RecordingSink& sink = traced->sink;
  const tpusim::sim::RunReport& run = traced->run;
  REQUIRE(sink.problems.empty());
  // The layout: the process, then its tracks in the documented order.
  REQUIRE(sink.tracks.size() > 2);
  CHECK(sink.tracks[0].process);
  CHECK(sink.tracks[0].name == "/device:TPU:0 (tpu_v4)");
  std::vector<std::string> expected = {"XLA Modules", "XLA Ops", "Scalar core"};
  for (std::size_t i = 0; i < run.cores[0].mxus.size(); ++i) expected.push_back("MXU " + std::to_string(i));
  for (const char* name : {"VPU", "VPU transcendental", "VPU cross-lane", "VPU load/store"}) expected.push_back(name);
  for (const auto& engine : run.cores[0].dma_engines) expected.push_back(engine.name);
  for (const char* name : {"PCIe link", "HBM read bandwidth", "HBM write bandwidth", "VMEM in use", "MXU utilization",
                           "Outstanding DMAs"}) {
    expected.push_back(name);
  }
  std::vector<std::string> got;
  for (const auto& track : sink.tracks) {
    if (track.parent == sink.tracks[0].id) {
      CHECK(track.order == static_cast<int32_t>(got.size()));
      got.push_back(track.name);
    }
  }
  CHECK(got == expected);

  // XLA Ops: one slice per kernel run, the report's names, starts and times (cycles exact).
  const auto modules = sink.SlicesOn("XLA Modules");
  REQUIRE(modules.size() == 1);
  const uint64_t begin_cycle = run.label_cycles.at("device_begin").front();
  CHECK(UintOf(*modules[0], "cycles") == traced->report.device_cycles);
  const auto ops = sink.SlicesOn("XLA Ops");
  REQUIRE(ops.size() == traced->report.ops.size());  // every kernel of this module runs once
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const tpusim::sim::OpReport& op = traced->report.ops[i];
    CHECK(ops[i]->name == op.kernel->name);
    CHECK(UintOf(*ops[i], "cycles") == op.cycles);
    CHECK(std::get<std::string>(AnnotationOf(*ops[i], "hlo_op")->value) == op.kernel->opcode);
    CHECK(std::get<std::string>(AnnotationOf(*ops[i], "long_name")->value) == op.kernel->long_name);
    // Slice times are ps from the start of the run; the report's start_us counts from device_begin.
    const double period_ps = 1e6 / traced->clock_mhz;
    CHECK(std::abs(static_cast<double>(ops[i]->begin_ps) - (begin_cycle + op.start_cycle) * period_ps) <= 0.5);
    CHECK(std::abs(static_cast<double>(ops[i]->end_ps - ops[i]->begin_ps) - op.time_us * 1e6) <= 1.0);
  }

  // Unit busy time equals the run statistics: the sums of the busy_cycles annotations, within
  // 1e-9 relative (the MXU's per-operation busy cycles are differences of its running total, so
  // their sum may differ from the total in the last bits).
  CHECK(BusyOn(sink, "Scalar core") == static_cast<double>(run.cores[0].scalar_core.issue_cycles));
  CHECK(BusyOn(sink, "VPU") == run.cores[0].vpu.units[0].busy_cycles);
  CHECK(BusyOn(sink, "VPU transcendental") == run.cores[0].vpu.units[1].busy_cycles);
  CHECK(BusyOn(sink, "VPU cross-lane") == run.cores[0].vpu.units[2].busy_cycles);
  for (std::size_t i = 0; i < run.cores[0].mxus.size(); ++i) {
    CHECK(BusyOn(sink, "MXU " + std::to_string(i)) == Approx(run.cores[0].mxus[i].busy_cycles).epsilon(1e-9));
  }
  uint64_t transfers = 0;
  for (const auto& engine : run.cores[0].dma_engines) {
    // The slices' durations add up to the engine's busy time in ps; the statistic converts that
    // sum to cycles as Chip does (the first whole cycle at or after it).
    uint64_t busy_ps = 0;
    for (const auto* slice : sink.SlicesOn(engine.name)) busy_ps += slice->end_ps - slice->begin_ps;
    const tpusim::models::ClockDomain clock(traced->clock_mhz);
    const sc_core::sc_time busy(static_cast<double>(busy_ps), sc_core::SC_PS);
    uint64_t busy_cycles = clock.ToCycles(busy);
    if (clock.ToTime(busy_cycles) < busy) ++busy_cycles;
    CHECK(busy_cycles == engine.busy_cycles);
    CHECK(sink.SlicesOn(engine.name).size() == engine.transfers);
    transfers += engine.transfers;
  }
  CHECK(run.cores[0].vpu.units[0].busy_cycles > 0);
  CHECK(run.cores[0].vpu.units[1].busy_cycles > 0);  // exp
  CHECK(run.cores[0].mxus.at(0).busy_cycles > 0);

  // Flows: started by DMAs into VMEM, at least one ended by a vld.
  std::size_t started = 0, ended = 0;
  for (const auto& slice : sink.slices) {
    started += slice.flow_out.size();
    ended += slice.flow_in.size();
  }
  CHECK(started > 0);
  CHECK(ended > 0);
  CHECK(ended <= started);
  // Every counter track has samples; outstanding DMAs go up once per transfer.
  for (const char* name : {"HBM read bandwidth", "HBM write bandwidth", "VMEM in use", "MXU utilization",
                           "Outstanding DMAs"}) {
    const auto* track = sink.Named(name);
    REQUIRE(track != nullptr);
    std::size_t samples = 0;
    double peak = 0;
    for (const auto& sample : sink.counters) {
      if (sample.track == track->id) {
        ++samples;
        peak = std::max(peak, sample.value);
      }
    }
    INFO(name);
    CHECK(samples > 1);
    CHECK(peak > 0);
  }
  std::size_t outstanding_samples = 0;
  for (const auto& sample : sink.counters) outstanding_samples += sample.track == sink.Named("Outstanding DMAs")->id;
  CHECK(outstanding_samples == 2 * transfers);
}

TEST_CASE("trace recorder: an ops-level trace of the attention workload has no unit slices", "[trace]") {
  const auto traced = RunAttention(TraceLevel::kOps);
  CHECK(traced->sink.problems.empty());
  CHECK(traced->sink.Named("Scalar core") == nullptr);
  CHECK(traced->sink.Named("MXU 0") == nullptr);
  // XLA Modules (1) and XLA Ops (one per kernel): nothing else.
  CHECK(traced->sink.slices.size() == 1 + traced->report.ops.size());
  CHECK(traced->sink.Named("MXU utilization") != nullptr);
}

}  // namespace
