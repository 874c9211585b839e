// End to end: `tpusim run` and `tpusim exec` with --trace, the written file read back with the
// project's Perfetto schema and self-check (traces/trace_check.h), compared with the --report
// JSON of the same run.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <regex>
#include <string>
#include <variant>
#include <vector>

#include "tests/sim/exec_support.h"
#include "traces/trace_check.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::traces::ParsedSlice;
using tpusim::traces::ParsedTrace;

const std::string kAttention = std::string(TPUSIM_SOURCE_DIR) + "/tests/workloads/mha_block_1x12x128x64_bf16.hlo";

// Every match of `pattern`'s groups in `text`.
std::vector<std::smatch> Matches(const std::string& text, const std::string& pattern) {
  std::vector<std::smatch> found;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    found.push_back(*it);
  }
  return found;
}

const tpusim::traces::ParsedTrack* Track(const ParsedTrace& trace, const std::string& name) {
  for (const auto& track : trace.tracks) {
    if (track.name == name) return &track;
  }
  return nullptr;
}

std::vector<const ParsedSlice*> SlicesOn(const ParsedTrace& trace, const std::string& name) {
  std::vector<const ParsedSlice*> found;
  const auto* track = Track(trace, name);
  for (const auto& slice : trace.slices) {
    if (track != nullptr && slice.track == track->uuid) found.push_back(&slice);
  }
  return found;
}

double BusyOn(const ParsedTrace& trace, const std::string& name) {
  double busy = 0;
  for (const ParsedSlice* slice : SlicesOn(trace, name)) {
    for (const auto& annotation : slice->annotations) {
      if (annotation.name == "busy_cycles") busy += std::get<double>(annotation.value);
    }
  }
  return busy;
}

uint64_t UintAnnotation(const ParsedSlice& slice, const std::string& name) {
  for (const auto& annotation : slice.annotations) {
    if (annotation.name == name) return std::get<uint64_t>(annotation.value);
  }
  FAIL("no annotation " << name << " on " << slice.name);
  return 0;
}

struct TracedCli {
  fs::path trace;
  std::string report;
  ParsedTrace parsed;
};

TracedCli RunTraced(const std::string& module, const std::string& level, const std::string& name) {
  const fs::path dir = TempDir("trace_run_" + name);
  TracedCli traced;
  traced.trace = dir / "t.perfetto-trace";
  RunOk("run " + module + " --timing-only --report " + (dir / "r.json").string() +
        " --trace " + traced.trace.string() + " --trace-level " + level);
  traced.report = ReadText(dir / "r.json");
  traced.parsed = tpusim::traces::ReadAndCheckPerfettoTrace(traced.trace.string());
  return traced;
}

TEST_CASE("tpusim run --trace: the attention workload's trace passes the self-check and matches its report",
          "[trace]") {
  const TracedCli traced = RunTraced(kAttention, "units", "attention_units");
  const ParsedTrace& trace = traced.parsed;
  for (const std::string& problem : trace.problems) FAIL_CHECK(problem);
  REQUIRE(!trace.tracks.empty());
  CHECK(trace.tracks[0].is_process);

  // The tracks under the process, in their order: the XLA lines first, then the units.
  std::vector<std::string> names;
  for (const auto& track : trace.tracks) {
    if (track.parent_uuid == trace.tracks[0].uuid) names.push_back(track.name);
  }
  REQUIRE(names.size() > 6);
  CHECK(names[0] == "XLA Modules");
  CHECK(names[1] == "XLA Ops");
  CHECK(names[2] == "Scalar core");
  CHECK(names[3] == "MXU 0");

  // XLA Ops == the report's ops (each ran once): names in order, start (from XLA Modules' begin, device_begin)
  // and time within 1 ns of the report's microseconds (the trace rounds ps to ns; the report
  // prints 6 decimals of us = 1 ps).
  const auto ops = Matches(traced.report, R"re(\{"name": "([^"]+)", "opcode": "[^"]*", "category": "[^"]*", "start_us": ([0-9.]+), "occurrences": 1, "time_us": ([0-9.]+))re");
  const auto slices = SlicesOn(trace, "XLA Ops");
  const auto modules = SlicesOn(trace, "XLA Modules");
  REQUIRE(modules.size() == 1);
  REQUIRE(!ops.empty());
  REQUIRE(slices.size() == ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    CHECK(slices[i]->name == ops[i][1].str());
    const double start_ns = std::stod(ops[i][2].str()) * 1000;
    const double time_ns = std::stod(ops[i][3].str()) * 1000;
    CHECK(std::abs(static_cast<double>(slices[i]->begin_ns - modules[0]->begin_ns) - start_ns) <= 1.0);
    CHECK(std::abs(static_cast<double>(slices[i]->end_ns - slices[i]->begin_ns) - time_ns) <= 1.0);
  }

  // Unit busy time == the run statistics (the report prints VPU and MXU busy cycles with one
  // decimal, so within 0.05; the scalar core's and the DMA engines' are whole cycles). tpu_v4 has
  // two TensorCores: the first tracks of a name are core 0's, compared with core 0's statistics
  // (the DMA engines' names are the cores' own).
  const std::string core0 = traced.report.substr(0, traced.report.find("{\"index\": 1"));
  const auto scalar = Matches(core0, R"re("taken_branches": \d+, "busy_cycles": (\d+))re");
  REQUIRE(scalar.size() == 1);
  CHECK(BusyOn(trace, "Scalar core") == std::stod(scalar[0][1].str()));
  for (const auto& [unit, track] : std::vector<std::pair<std::string, std::string>>{
           {"element-wise", "VPU"}, {"transcendental", "VPU transcendental"}, {"cross-lane", "VPU cross-lane"}}) {
    const auto stat = Matches(core0, "\"" + unit + R"re(": \{"operations": \d+, "busy_cycles": ([0-9.]+))re");
    REQUIRE(stat.size() == 1);
    CHECK(BusyOn(trace, track) == Approx(std::stod(stat[0][1].str())).margin(0.05));
  }
  const auto mxus = Matches(core0, R"re("name": "mxu(\d+)", "rows": \d+, "macs": \d+, "busy_cycles": ([0-9.]+))re");
  REQUIRE(!mxus.empty());
  for (const auto& mxu : mxus) {
    CHECK(BusyOn(trace, "MXU " + mxu[1].str()) == Approx(std::stod(mxu[2].str())).margin(0.05));
  }
  const auto engines = Matches(traced.report, R"re(\{"name": "([^"]+)", "transfers": (\d+), "payload_bytes": \d+, "busy_cycles": (\d+))re");
  REQUIRE(!engines.empty());
  for (const auto& engine : engines) {
    const std::string track = engine[1].str();
    CHECK(SlicesOn(trace, track).size() == std::stoull(engine[2].str()));
    // The statistic rounds the summed busy time (ps) up to whole cycles once; the annotations
    // are each transfer's exact ps / period, so their sum can sit just across a whole cycle from
    // the ps-rounded clock's conversion: within 1 cycle.
    CHECK(std::abs(std::ceil(BusyOn(trace, track)) - std::stod(engine[3].str())) <= 1.0);
  }

  // Flows from DMAs into VMEM to their first vld; counters on counter tracks.
  std::size_t started = 0, ended = 0;
  for (const auto& slice : trace.slices) {
    started += slice.flow_out.size();
    ended += slice.flow_in.size();
  }
  CHECK(started > 0);
  CHECK(ended > 0);
  for (const char* name : {"HBM read bandwidth", "HBM write bandwidth", "VMEM in use", "MXU utilization",
                           "Outstanding DMAs"}) {
    const auto* track = Track(trace, name);
    REQUIRE(track != nullptr);
    CHECK(track->is_counter);
    std::size_t samples = 0;
    for (const auto& sample : trace.counters) samples += sample.track == track->uuid;
    INFO(name);
    CHECK(samples > 1);
  }

  // At --trace-level ops: the XLA lines and the counters only, in a smaller file.
  const TracedCli ops_only = RunTraced(kAttention, "ops", "attention_ops");
  for (const std::string& problem : ops_only.parsed.problems) FAIL_CHECK(problem);
  CHECK(Track(ops_only.parsed, "Scalar core") == nullptr);
  CHECK(Track(ops_only.parsed, "MXU 0") == nullptr);
  CHECK(ops_only.parsed.slices.size() == 1 + ops.size());
  CHECK(Track(ops_only.parsed, "MXU utilization") != nullptr);
  CHECK(fs::file_size(ops_only.trace) < fs::file_size(traced.trace));

  // At --trace-level all: every instruction a slice, still a valid trace, and larger.
  const TracedCli all = RunTraced(kAttention, "all", "attention_all");
  for (const std::string& problem : all.parsed.problems) FAIL_CHECK(problem);
  CHECK(SlicesOn(all.parsed, "Scalar core").size() > SlicesOn(trace, "Scalar core").size());
  CHECK(fs::file_size(all.trace) > fs::file_size(traced.trace));
}

TEST_CASE("tpusim run --trace-level all: a tiny module, every instruction its own slice", "[trace]") {
  const fs::path dir = TempDir("trace_run_tiny");
  WriteText(dir / "add.hlo",
            "HloModule add\n\nENTRY main {\n  a = f32[8,128] parameter(0)\n  b = f32[8,128] parameter(1)\n"
            "  ROOT c = f32[8,128] add(a, b)\n}\n");
  const TracedCli all = RunTraced((dir / "add.hlo").string(), "all", "tiny_all");
  for (const std::string& problem : all.parsed.problems) FAIL_CHECK(problem);
  const auto ops = SlicesOn(all.parsed, "XLA Ops");
  REQUIRE(ops.size() == 1);
  CHECK(ops[0]->name == "c");
  // Each scalar-core slice is one instruction, its pc annotated.
  const auto scalar = SlicesOn(all.parsed, "Scalar core");
  REQUIRE(!scalar.empty());
  CHECK(UintAnnotation(*scalar[0], "pc") == 0);
  const TracedCli units = RunTraced((dir / "add.hlo").string(), "units", "tiny_units");
  CHECK(SlicesOn(units.parsed, "Scalar core").size() < scalar.size());
}

TEST_CASE("tpusim run --trace-format json writes Chrome JSON, and bad trace options are errors", "[trace]") {
  const fs::path dir = TempDir("trace_run_json");
  const fs::path json = dir / "t.json";
  const std::string run = RunOk("run " + kAttention + " --timing-only --trace " + json.string());
  const std::string text = ReadText(json);
  REQUIRE(!text.empty());
  CHECK(text[0] == '{');
  CHECK(text.find("\"process_name\"") != std::string::npos);
  CHECK(text.find("\"ph\":\"M\"") != std::string::npos);

  const std::string level = RunExpectingError("run " + kAttention + " --timing-only --trace " + json.string() + " --trace-level some");
  CHECK_THAT(level, Catch::Contains("--trace-level some: expected ops, units or all"));
  const std::string format = RunExpectingError("run " + kAttention + " --timing-only --trace " + json.string() + " --trace-format svg");
  CHECK_THAT(format, Catch::Contains("--trace-format svg: expected perfetto or json"));
}

TEST_CASE("tpusim exec --trace: the program's run in XLA Modules, the units below", "[trace]") {
  const fs::path dir = TempDir("trace_exec");
  WriteText(dir / "p.tpuasm",
            ".program one_dma\n"
            ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=16, mxu_cols=16, dma_engines=1, "
            "semaphores=1, cmem=false\n"
            ".buffer a, hbm[0x0], size=0x1000, shape=f32[8,128]{1,0}, role=parameter(0)\n"
            ".buffer b, vmem[0x0], size=0x1000, shape=f32[8,128]{1,0}, role=output(0)\n"
            "  dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], "
            "sem=sem[0], engine=0\n"
            "  sem.wait sem[0], 1\n"
            "  vld v0, vmem[0x0]\n"
            "  halt\n");
  const fs::path trace = dir / "t.pftrace";
  RunOk("exec " + (dir / "p.tpuasm").string() + " --config tiny --timing-only --report " +
        (dir / "r.json").string() + " --trace " + trace.string());
  const ParsedTrace parsed = tpusim::traces::ReadAndCheckPerfettoTrace(trace.string());
  for (const std::string& problem : parsed.problems) FAIL_CHECK(problem);
  const auto modules = SlicesOn(parsed, "XLA Modules");
  REQUIRE(modules.size() == 1);
  CHECK(modules[0]->name == "one_dma");
  CHECK(UintAnnotation(*modules[0], "cycles") == ReportCycles(dir / "r.json"));
  CHECK(SlicesOn(parsed, "XLA Ops").empty());
  const auto loads = SlicesOn(parsed, "VPU load/store");
  REQUIRE(loads.size() == 1);
  REQUIRE(loads[0]->flow_in.size() == 1);
}

}  // namespace

namespace {

TEST_CASE("tpusim run --trace: a functional run and a timing-only run write the same trace", "[trace]") {
  // Timing-only gives identical times (DESIGN.md), and the trace holds nothing but times, names
  // and addresses, so the two files are byte for byte equal.
  const fs::path dir = TempDir("trace_run_functional");
  RunOk("run " + kAttention + " --trace " + (dir / "f.pftrace").string());
  RunOk("run " + kAttention + " --timing-only --trace " + (dir / "t.pftrace").string());
  const std::string a = ReadText(dir / "f.pftrace");
  CHECK(!a.empty());
  CHECK(a == ReadText(dir / "t.pftrace"));
}

}  // namespace

TEST_CASE("tpusim run --trace: a dot's MXUs start on its first K slice while later slices land", "[trace][dot]") {
  // bf16[512,512] x [512,512]: one job, four K blocks. The panels go out slice by slice (one K
  // block each) on every engine, so MXU 0 starts pushing once slice 0 of both panels has landed,
  // before the last panel DMA completes; waiting for whole panels it started after them.
  const fs::path dir = TempDir("trace_dot_slices");
  WriteText(dir / "m.hlo", "HloModule m\nENTRY e {\n  a = bf16[512,512] parameter(0)\n  b = bf16[512,512] parameter(1)\n"
                           "  ROOT d = bf16[512,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  const TracedCli traced = RunTraced((dir / "m.hlo").string(), "units", "dot_slices");
  uint64_t first_push = UINT64_MAX;
  for (const ParsedSlice* slice : SlicesOn(traced.parsed, "MXU 0")) first_push = std::min(first_push, slice->begin_ns);
  uint64_t panels_landed = 0;
  int panel_dmas = 0;
  for (int engine = 0; engine < 4; ++engine) {
    for (const ParsedSlice* slice : SlicesOn(traced.parsed, "dma engine " + std::to_string(engine))) {
      if (slice->name != "hbm -> vmem") continue;
      panels_landed = std::max(panels_landed, slice->end_ns);
      ++panel_dmas;
    }
  }
  CHECK(panel_dmas == 2 * 4 * 4);  // two panels x four slices x a piece per engine
  REQUIRE(first_push != UINT64_MAX);
  CHECK(first_push < panels_landed);
}
