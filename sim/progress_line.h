// The progress line `tpusim run` shows on stderr while a long simulation runs (issue 18): the
// kernels run of those in the program, the device time simulated so far, the wall time, and
// what is left at that pace. Shown once a run has taken `delay_seconds` of wall time (`tpusim run
// --progress-after`, kDelaySeconds by default), redrawn in place at most every kRefreshSeconds,
// and erased when the run ends, so the printed summary on stdout is the same with it or without
// (`--quiet`, or stderr not a terminal: never shown).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "sim/chip/chip.h"

namespace tpusim::sim {

class ProgressLine {
 public:
  static constexpr double kDelaySeconds = 2;
  static constexpr double kRefreshSeconds = 0.5;

  // `kernels`: the program's kernels (each passes a begin and an end label on core 0).
  ProgressLine(uint64_t kernels, std::FILE* out, double delay_seconds = kDelaySeconds);
  ~ProgressLine();  // erases the line, if shown

  void Update(const Chip::Progress& progress);

  // The line's text: before the device's begin label, the parameters' copy to the device; then
  // kernels run (a label pair each) of the program's, with an estimate at the pace since the
  // first kernel began (`kernels_seconds` ago) while no kernel has run twice (a loop's body runs
  // again: then the kernels run so far, and no estimate).
  static std::string Text(uint64_t marks, uint64_t kernels, double device_time_us, double wall_seconds,
                          double kernels_seconds);

 private:
  uint64_t kernels_;
  std::FILE* out_;
  double delay_seconds_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_shown_ = -1;     // wall seconds since the start; < 0: not shown yet
  double kernels_start_ = -1;  // when the device's begin label was first seen; < 0: not yet
  std::size_t width_ = 0;   // of the line shown, to erase it
};

}  // namespace tpusim::sim
