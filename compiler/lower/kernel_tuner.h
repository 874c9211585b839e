// Kernel plans tried in simulation, as XLA's autotuner tries a kernel's candidate configurations
// on the hardware and keeps the fastest. A kernel whose cost estimate cannot tell its candidates
// apart (the dot kernel's MXUs per N group: docs/compiler.md, "Dot", "Plans tried in simulation")
// emits each as a program of its own, the kernel and `halt`, and the tuner runs them on the
// configured chip from an idle start, timing-only, and chooses the one that ends first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "isa/program.pb.h"

namespace tpusim::compiler {

class KernelTuner {
 public:
  // The cycles a program runs for on the configured chip, timing-only (sim/ gives it: the
  // compiler does not know the machine).
  using Cycles = std::function<uint64_t(const isa::Program&)>;
  explicit KernelTuner(Cycles cycles) : cycles_(std::move(cycles)) {}

  // The index of the candidate whose program (`candidates()`) runs in the fewest cycles, the first
  // on a tie; a candidate whose program equals an earlier one's is not run again. Remembered under `key`: a kernel of the same key (the same shapes, layouts and core
  // parts) gets the same answer without trying again, whatever its addresses.
  std::size_t Choose(const std::string& key, const std::function<std::vector<isa::Program>()>& candidates);

  // Programs run so far, for reports and tests.
  std::size_t trials() const { return trials_; }

 private:
  Cycles cycles_;
  std::map<std::string, std::size_t> chosen_;
  std::size_t trials_ = 0;
};

}  // namespace tpusim::compiler
