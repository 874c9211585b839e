#include "sim/progress_line.h"

#include <fmt/format.h>

#include <algorithm>

namespace tpusim::sim {

ProgressLine::ProgressLine(uint64_t kernels, std::FILE* out, double delay_seconds)
    : kernels_(kernels), out_(out), delay_seconds_(delay_seconds) {}

ProgressLine::~ProgressLine() {
  if (width_ == 0) return;
  fmt::print(out_, "\r{}\r", std::string(width_, ' '));
  std::fflush(out_);
}

void ProgressLine::Update(const Chip::Progress& progress) {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (progress.marks > 0 && kernels_start_ < 0) kernels_start_ = wall;
  if (wall < delay_seconds_ || (last_shown_ >= 0 && wall - last_shown_ < kRefreshSeconds)) return;
  last_shown_ = wall;
  const std::string text =
      Text(progress.marks, kernels_, progress.device_time_us, wall, kernels_start_ < 0 ? 0 : wall - kernels_start_);
  // Pad over a longer line before it.
  fmt::print(out_, "\r{}{}", text, std::string(width_ > text.size() ? width_ - text.size() : 0, ' '));
  std::fflush(out_);
  width_ = std::max(width_, text.size());
}

std::string ProgressLine::Text(uint64_t marks, uint64_t kernels, double device_time_us, double wall_seconds,
                               double kernels_seconds) {
  const std::string device = device_time_us >= 1000 ? fmt::format("{:.3f} ms", device_time_us / 1000)
                                                     : fmt::format("{:.1f} us", device_time_us);
  if (marks == 0) {
    return fmt::format("tpusim: copying the parameters to the device, {} simulated, {:.0f} s", device, wall_seconds);
  }
  const uint64_t run = (marks - 1) / 2;
  if (run > kernels) {
    return fmt::format("tpusim: {} kernels run ({} in the program), {} simulated, {:.0f} s", run, kernels, device,
                       wall_seconds);
  }
  std::string text = fmt::format("tpusim: {} of {} kernels, {} simulated, {:.0f} s", run, kernels, device, wall_seconds);
  if (run > 0) {
    text += fmt::format(", about {:.0f} s left",
                        kernels_seconds * static_cast<double>(kernels - run) / static_cast<double>(run));
  }
  return text;
}

}  // namespace tpusim::sim
