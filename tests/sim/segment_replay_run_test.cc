// Issue 18, item 3: a timing-only run replays a segment (the run between two rounds of core.sync)
// that starts from a quiet machine in a state it already simulated, instead of simulating it
// again (sim/chip/segment_replay.h). Replaying changes nothing a user sees: every run here is made
// with and without --no-reuse and the reports (cycles, every unit's and memory's statistics, each
// kernel's time) and printed summaries must be byte-identical; the loops must replay some
// segments, or the test would compare two simulations.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "sim/chip/chip.h"
#include "sim/compile_options.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

struct Reuse {
  std::string report;
  std::string summary;  // stdout
  uint64_t recorded = 0;
  uint64_t replayed = 0;
};

// Runs `module` with `flags` (and --report), returns its report, its summary and the replay
// counts `--log-level info` prints.
Reuse RunWith(const fs::path& module, const std::string& flags, const fs::path& dir, const std::string& name) {
  const fs::path report = dir / (name + ".json");
  const Result result = RunTpusim("--log-level info run " + module.string() + " " + flags + " --quiet --report " +
                                  report.string());
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  Reuse run;
  run.report = ReadText(report);
  std::smatch match;
  static const std::regex kCounts(R"((\d+) segments recorded, (\d+) replayed)");
  REQUIRE(std::regex_search(result.output, match, kCounts));
  run.recorded = std::stoull(match[1]);
  run.replayed = std::stoull(match[2]);
  // The summary lines (stdout): the log's lines start with "tpusim:".
  std::string line;
  for (std::size_t at = 0; at < result.output.size();) {
    const std::size_t end = result.output.find('\n', at);
    line = result.output.substr(at, end == std::string::npos ? std::string::npos : end - at + 1);
    if (line.rfind("tpusim:", 0) != 0) run.summary += line;
    at = end == std::string::npos ? result.output.size() : end + 1;
  }
  return run;
}

// Runs `module` timing-only both ways and requires the same report and summary; returns the
// replaying run's counts.
Reuse BothWays(const fs::path& module, const std::string& flags = "") {
  const fs::path dir = TempDir("segment_replay");
  const std::string stem = module.stem().string();
  const Reuse reused = RunWith(module, "--timing-only " + flags, dir, stem + "_reuse");
  const Reuse simulated = RunWith(module, "--timing-only --no-reuse " + flags, dir, stem + "_no_reuse");
  CHECK(simulated.replayed == 0);
  CHECK(simulated.recorded == 0);
  CHECK(reused.report == simulated.report);
  CHECK(reused.summary == simulated.summary);
  CHECK(!reused.summary.empty());
  return reused;
}

// A loop of `trips` iterations over (i, a): a = tanh(a x W), W the same array every iteration;
// with `sliced`, W is the i-th of a stack of them (a dynamic-slice by the counter).
std::string MatmulLoop(int trips, bool sliced) {
  const std::string weights = sliced ? "f32[8,256,256]" : "f32[256,256]";
  const std::string w = sliced ? R"(
  z = s32[] constant(0)
  ws = f32[1,256,256] dynamic-slice(stack, i, z, z), dynamic_slice_sizes={1,256,256}
  w = f32[256,256] reshape(ws))"
                               : "";
  const std::string stack = sliced ? "stack" : "w";
  return R"(HloModule matmul_loop
cond {
  s = (s32[], f32[256,256], )" + weights + R"() parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant()" + std::to_string(trips) + R"()
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[256,256], )" + weights + R"() parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[256,256] get-tuple-element(s), index=1
  )" + stack + " = " + weights + R"( get-tuple-element(s), index=2)" + w + R"(
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  d = f32[256,256] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[256,256] tanh(d)
  ROOT r = (s32[], f32[256,256], )" + weights + R"() tuple(i2, t, )" + stack + R"()
}
ENTRY e {
  x = f32[256,256] parameter(0)
  p = )" + weights + R"( parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[256,256], )" + weights + R"() tuple(zero, x, p)
  ROOT loop = (s32[], f32[256,256], )" + weights + R"() while(init), condition=cond, body=body
}
)";
}

}  // namespace

TEST_CASE("segment replay: a loop's repeated kernels replay with the cycles and report of simulating them",
          "[run][reuse]") {
  const fs::path dir = TempDir("segment_replay_loop");
  for (const bool sliced : {false, true}) {
    INFO((sliced ? "weights sliced by the counter" : "the same weights"));
    const fs::path module = dir / (sliced ? "sliced.hlo" : "same.hlo");
    WriteText(module, MatmulLoop(12, sliced));
    for (const char* preset : {"tpu_v4", "tpu_v5e", "tiny"}) {
      INFO(preset);
      // tpu_v4's two TensorCores meet at a core.sync after every kernel; tiny's one core passes
      // its own core.sync there. The dot and tanh kernel starts alike every iteration (its
      // buffers are the loop's, its inputs none); the counter's kernel and the condition read i,
      // which changes, and (sliced) so does the dynamic-slice's copy of W. 12 iterations: at
      // least the last 10 replay.
      const Reuse run = BothWays(module, std::string("--config ") + preset);
      CHECK(run.replayed >= 10);
      CHECK(run.recorded >= 1);
    }
  }
}

TEST_CASE("segment replay: runs with data and traced runs simulate every segment", "[run][reuse]") {
  const fs::path dir = TempDir("segment_replay_off");
  const fs::path module = dir / "same.hlo";
  WriteText(module, MatmulLoop(6, false));
  // With data: bulk DMAs move bytes that no segment input covers.
  CHECK(RunWith(module, "", dir, "data").replayed == 0);
  // A trace records every unit's activity, which a replay does not redo.
  CHECK(RunWith(module, "--timing-only --trace " + (dir / "t.perfetto-trace").string(), dir, "traced").replayed == 0);
  CHECK(RunWith(module, "--timing-only", dir, "reuse").replayed >= 4);
}

TEST_CASE("segment replay: `exec` of a compiled program gives the same report with and without --no-reuse",
          "[run][reuse]") {
  const fs::path dir = TempDir("segment_replay_exec");
  WriteText(dir / "same.hlo", MatmulLoop(6, false));
  RunOk("compile " + (dir / "same.hlo").string() + " -o " + (dir / "same.tpuasm").string());
  const std::string exec = "exec " + (dir / "same.tpuasm").string() + " --timing-only --report ";
  RunOk(exec + (dir / "reuse.json").string());
  RunOk(exec + (dir / "no_reuse.json").string() + " --no-reuse");
  const std::string reused = ReadText(dir / "reuse.json");
  CHECK(!reused.empty());
  CHECK(reused == ReadText(dir / "no_reuse.json"));
}

TEST_CASE("segment replay: every shared workload but the two largest gives the same report both ways",
          "[run][reuse][workloads]") {
  // Llama 3 8B's and MaxText's train steps take minutes to compile and much longer to simulate
  // without reuse; docs/benchmarks.md records them both ways.
  const fs::path shared = fs::path(TPUSIM_SHARED_DIR) / "workloads/xla";
  uint64_t replayed = 0;
  for (const auto& entry : fs::directory_iterator(shared)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".hlo" || name.rfind("llama3_8b", 0) == 0 || name.rfind("maxtext_", 0) == 0) {
      continue;
    }
    INFO(name);
    replayed += BothWays(entry.path()).replayed;
  }
  // fp8_gemm_loop's matmuls repeat over its loop.
  CHECK(replayed > 0);
}

TEST_CASE("segment replay: one chip running program after program gives each a fresh chip's cycles", "[run][reuse]") {
  // tpusim_calibrate runs every row's program on one Chip. A program that halts while a segment is
  // being recorded left that segment's logs with the scalar cores, and the next program's first
  // instructions wrote into them after the chip had freed them: heap corruption after about 100 of
  // the medium gemms. Each of these dots (both TensorCores, K in several blocks) ends so.
  const tpusim::ArchConfig config = tpusim::sim::LoadArchConfig(tpusim::sim::ResolveConfigPath("tpu_v4"), {});
  tpusim::sim::Chip shared(config);
  for (const char* dims : {"384,512", "640,896", "256,1024", "896,384", "512,640", "1024,256"}) {
    for (const char* k : {"512", "768"}) {
      INFO(dims << " x " << k);
      const std::string text = std::string("HloModule m\nENTRY e {\n  a = f16[") + dims + std::string("]{1,0} parameter(0)\n") +
                               "  b = f16[" + std::string(dims).substr(std::string(dims).find(',') + 1) + "," + k +
                               "]{1,0} parameter(1)\n  ROOT d = f16[" + std::string(dims).substr(0, std::string(dims).find(',')) +
                               "," + k + "]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
      auto module = tpusim::hlo::ParseModule(text, "m.hlo");
      const tpusim::compiler::CompiledModule compiled =
          tpusim::compiler::Compile(*module, tpusim::sim::CompileOptionsFor(config));
      const uint64_t cycles = shared.Run(compiled.program, {}, /*timing_only=*/true).cycles;
      tpusim::sim::Chip fresh(config);
      CHECK(cycles == fresh.Run(compiled.program, {}, /*timing_only=*/true).cycles);
    }
  }
}
