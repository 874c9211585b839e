#include "compiler/lower/kernel_tuner.h"

#include <algorithm>

#include "isa/assembler.h"

namespace tpusim::compiler {

std::size_t KernelTuner::Choose(const std::string& key, const std::function<std::vector<std::string>()>& candidates) {
  if (const auto it = chosen_.find(key); it != chosen_.end()) return it->second;
  const std::vector<std::string> texts = candidates();
  std::size_t best = 0;
  uint64_t best_cycles = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto earlier = texts.begin() + static_cast<std::ptrdiff_t>(i);
    if (std::find(texts.begin(), earlier, texts[i]) != earlier) continue;
    ++trials_;
    const uint64_t cycles = cycles_(isa::Assemble(texts[i], key + " (candidate " + std::to_string(i) + ")"));
    if (i == 0 || cycles < best_cycles) {
      best = i;
      best_cycles = cycles;
    }
  }
  chosen_.emplace(key, best);
  return best;
}

}  // namespace tpusim::compiler
