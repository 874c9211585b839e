// Issue 18: `tpusim run`'s progress line on stderr (sim/progress_line.h): its text, and that it
// shows on a terminal only, not with --quiet, and leaves the run's results as they were.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/progress_line.h"
#include "tests/sim/exec_support.h"

using namespace tpusim::exec_test;

TEST_CASE("the progress line counts kernels by their labels, estimates at the kernels' pace, and counts a loop's runs",
          "[run][progress]") {
  using tpusim::sim::ProgressLine;
  // No label yet: the parameters are still being copied in.
  CHECK(ProgressLine::Text(0, 10, 50.0, 3, 0) == "tpusim: copying the parameters to the device, 50.0 us simulated, 3 s");
  // The device's begin label and two kernels' pairs: 2 of 10, the other 8 at 1 s a kernel.
  CHECK(ProgressLine::Text(5, 10, 1500.0, 4, 2) == "tpusim: 2 of 10 kernels, 1.500 ms simulated, 4 s, about 8 s left");
  // The begin label alone: none run, no estimate.
  CHECK(ProgressLine::Text(1, 10, 2.0, 2, 0) == "tpusim: 0 of 10 kernels, 2.0 us simulated, 2 s");
  // More kernel runs than kernels: a loop's body ran again; no estimate.
  CHECK(ProgressLine::Text(41, 10, 2500.0, 9, 8) == "tpusim: 20 kernels run (10 in the program), 2.500 ms simulated, 9 s");
}

namespace {

// Runs `tpusim ARGS` on a pseudo-terminal (util-linux `script`), so stderr is a terminal; returns
// what it printed.
std::string RunOnTerminal(const std::string& args) {
  const fs::path log = TempDir("progress") / "terminal.log";
  const std::string command = "script -qec \"" + std::string(TPUSIM_BINARY) + " " + args + "\" " + log.string() +
                              " > /dev/null 2>&1";
  std::system(command.c_str());
  return ReadText(log);
}

}  // namespace

TEST_CASE("tpusim run shows its progress on a terminal, not with --quiet or into a pipe, and erases it",
          "[run][progress]") {
  // A while loop that never ends, stopped by --max-instructions: every 20 us of simulated time
  // the line is redrawn (--progress-after 0: from the first), counting the loop's kernel runs.
  // Its counter (0, 1, 2, ...) meets -1 only after 2^32 - 1 iterations, and its state comes
  // back only then, so the loop watch (models/loop_watch.h) does not stop it first.
  const fs::path dir = TempDir("progress");
  WriteText(dir / "forever.hlo",
            "HloModule forever\ncond {\n  a = s32[] parameter(0)\n  last = s32[] constant(-1)\n"
            "  ROOT c = pred[] compare(a, last), direction=NE\n}\n"
            "body {\n  b = s32[] parameter(0)\n  one = s32[] constant(1)\n  ROOT n = s32[] add(b, one)\n}\n"
            "ENTRY e {\n  zero = s32[] constant(0)\n  ROOT w = s32[] while(zero), condition=cond, body=body\n}\n");
  const std::string run = "run " + (dir / "forever.hlo").string() + " --timing-only --max-instructions 20000 --progress-after 0";
  const std::string shown = RunOnTerminal(run);
  CHECK_THAT(shown, Catch::Contains("kernels run (4 in the program)"));
  CHECK_THAT(shown, Catch::Contains("more than 20000 instructions executed"));
  // Erased before the error: blanks over the line, then a carriage return.
  CHECK_THAT(shown, Catch::Contains("   \r"));
  CHECK_THAT(RunOnTerminal(run + " --quiet"), !Catch::Contains("kernels run"));
  CHECK_THAT(RunExpectingError(run), !Catch::Contains("kernels run"));
}
