// Catches a run that would go round a loop forever: the program's `.loop`s (isa::Loop) name each
// while loop's top and the bytes its ending depends on; a deterministic machine that reaches the
// top again with all of those bytes as they were on an earlier iteration will repeat what it did
// since then, forever. Brent's cycle detection over a hash of the state at each iteration finds a
// cycle of length L that starts after M iterations within M + 2L iterations (a loop whose
// condition is a constant, or whose state stops changing: at its second iteration), keeping one
// earlier hash a loop. A loop whose state keeps changing (a counter without a bound) is left to
// the run's instruction limit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.pb.h"
#include "models/memory.h"

namespace tpusim::models {

class LoopWatch {
 public:
  // The program's loops at their tops' instructions; state regions are checked against their
  // memories (throws tpusim::Error naming the loop and the region). `program` must outlive the
  // watch's use (as the scalar core's run).
  void Start(const isa::Program& program, const MemoryMap& memories);

  bool IsTop(uint64_t pc) const { return pc < loop_at_.size() && loop_at_[pc] >= 0; }

  // The run reached the top at `pc` (IsTop): by a taken branch (the next iteration), or
  // otherwise (the loop starts afresh). Returns why the run can never end, or "".
  std::string Reached(uint64_t pc, bool by_branch);

 private:
  struct Watched {
    const isa::Loop* loop = nullptr;
    uint64_t iteration = 0;        // branches back to the top since the loop last started
    uint64_t saved_hash = 0;       // the state's hash at iteration saved_iteration
    uint64_t saved_iteration = 0;
    uint64_t power = 1;            // Brent: the saved state is replaced after this many iterations
  };
  uint64_t StateHash(const isa::Loop& loop) const;

  MemoryMap memories_{};
  std::vector<int32_t> loop_at_;  // per instruction: index into watched_, or -1
  std::vector<Watched> watched_;
};

}  // namespace tpusim::models
