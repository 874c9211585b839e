// Issue 21: a run is deterministic. The same module and inputs (the inputs `run` draws from its
// default seed) give byte-identical outputs, reports, traces and printed summaries, run after run:
// nothing in them depends on the host (wall time, addresses, thread scheduling, hash order).
#include <catch2/catch.hpp>

#include <string>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

// Runs `module` (with `flags`) into `dir`/`name`: its outputs, report, trace and stdout.
fs::path RunInto(const fs::path& module, const std::string& flags, const fs::path& dir, const std::string& name) {
  const fs::path run = dir / name;
  fs::create_directories(run);
  const std::string stdout_text = RunOk("run " + module.string() + " " + flags + " --out " + (run / "out").string() +
                                        " --report " + (run / "report.json").string() + " --trace " +
                                        (run / "trace.perfetto-trace").string());
  WriteText(run / "stdout.txt", stdout_text);
  return run;
}

}  // namespace

TEST_CASE("a run gives byte-identical outputs, reports, traces and summaries every time", "[run][determinism]") {
  // Three workloads with data: the README's attention block (dots, softmax reduces, both cores),
  // layer norm (fused reduces, element-wise over both cores) and the sum (a lane fold split over
  // the cores); each twice.
  const fs::path shared = fs::path(TPUSIM_SHARED_DIR) / "workloads/xla";
  const fs::path modules[] = {fs::path(TPUSIM_SOURCE_DIR) / "tests/workloads/mha_block_1x12x128x64_bf16.hlo",
                              shared / "layer_norm_1x4096x768_bf16.hlo", shared / "sum_axis_1x4096x1024_bf16.hlo"};
  const fs::path dir = TempDir("determinism");
  for (const fs::path& module : modules) {
    INFO(module.filename().string());
    const fs::path first = RunInto(module, "", dir, module.stem().string() + "_1");
    const fs::path second = RunInto(module, "", dir, module.stem().string() + "_2");
    for (const char* file : {"out/output_0.npy", "report.json", "trace.perfetto-trace", "stdout.txt"}) {
      INFO(file);
      const std::string a = ReadText(first / file);
      CHECK(!a.empty());
      CHECK(a == ReadText(second / file));
    }
  }
}
