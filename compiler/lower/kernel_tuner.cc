#include "compiler/lower/kernel_tuner.h"

#include <algorithm>

#include <google/protobuf/util/message_differencer.h>

namespace tpusim::compiler {

std::size_t KernelTuner::Choose(const std::string& key, const std::function<std::vector<isa::Program>()>& candidates) {
  if (const auto it = chosen_.find(key); it != chosen_.end()) return it->second;
  const std::vector<isa::Program> programs = candidates();
  std::size_t best = 0;
  uint64_t best_cycles = 0;
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const auto earlier = programs.begin() + static_cast<std::ptrdiff_t>(i);
    const auto same = [&](const isa::Program& p) {
      return google::protobuf::util::MessageDifferencer::Equals(p, programs[i]);
    };
    if (std::find_if(programs.begin(), earlier, same) != earlier) continue;
    ++trials_;
    const uint64_t cycles = cycles_(programs[i]);
    if (i == 0 || cycles < best_cycles) {
      best = i;
      best_cycles = cycles;
    }
  }
  chosen_.emplace(key, best);
  return best;
}

}  // namespace tpusim::compiler
