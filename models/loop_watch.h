// Catches a run that would go round a loop forever: the program's `.loop`s (isa::Loop) name each
// while loop's top and the bytes its ending depends on; a deterministic machine that reaches the
// top again with all of those bytes as they were on an earlier iteration will repeat what it did
// since then, forever. Brent's cycle detection over a hash of the state at each iteration finds a
// cycle of length L that starts after M iterations within M + 2L iterations (a loop whose
// condition is a constant, or whose state stops changing: at its second iteration), keeping one
// earlier hash a loop. A loop whose state keeps changing is caught where the program names its
// counter (isa::LoopCounter): from the counter's value as the loop starts, the values it will take
// are known, and where none of them ends the loop it faults at its first iteration (a counter
// stepping by 2 from 0 against `!= -1`). Any other loop is left to the run's instruction limit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.pb.h"
#include "models/memory.h"

namespace tpusim::models {

// Whether a counter that starts at `start` (its bits, little-endian in counter.place()'s width)
// ever takes a value for which `counter COMPARE bound` is false: it takes exactly the values
// start + k * g modulo 2^width (g the largest power of two dividing its step; one value for a
// step of 0), whose least and greatest in the counter's order and whose residue modulo g decide
// each comparison.
bool CounterEverEnds(const isa::LoopCounter& counter, uint64_t start);

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
    std::string never_ends = "";   // why, where its counter's start shows it never ends: "" otherwise
    uint64_t iteration = 0;        // branches back to the top since the loop last started
    uint64_t saved_hash = 0;       // the state's hash at iteration saved_iteration
    uint64_t saved_iteration = 0;
    uint64_t power = 1;            // Brent: the saved state is replaced after this many iterations
  };
  uint64_t StateHash(const isa::Loop& loop) const;
  // Why the loop never ends, from its counter's value now (as it starts); "" where it may end.
  std::string CounterNeverEnds(const isa::Loop& loop) const;

  MemoryMap memories_{};
  std::vector<int32_t> loop_at_;  // per instruction: index into watched_, or -1
  std::vector<Watched> watched_;
};

}  // namespace tpusim::models
