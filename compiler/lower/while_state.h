// Which of a while loop's state decides whether it ends: what the simulator watches for a state
// that comes back (isa::Loop, models/loop_watch.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "isa/element_type.h"

namespace tpusim::compiler {

// The leaves of `loop`'s state (flattening order, tuple_leaves.h), ascending, on which whether it
// ends depends: those its condition reads, and, closed under the body, those the body computes
// them from. A computation's instructions see nothing but their operands, so what a value reads
// is what its operands reach back to; a use of the whole parameter (not through
// get-tuple-element) reads every leaf. The body's result is followed through tuple instructions
// to its elements; each leaf of an element that is not one is taken to depend on everything the
// element reads. A condition that is a constant reads none.
std::vector<std::size_t> WhileEndingLeaves(const hlo::Instruction& loop);

// A while loop's counter (XLA's while-loop analysis: its induction variable): the condition is
// `compare(c, K)` or `compare(K, c)` of a scalar integer leaf c of the state and a scalar constant
// K, and the body's result sets that leaf to `add(c, S)`, `add(S, c)` or `subtract(c, S)` of a
// scalar constant S. Then c alone decides whether the loop goes on, and it steps by S each
// iteration, which lets the simulator tell from c's first value whether the loop can ever end
// (isa::LoopCounter, models/loop_watch.h).
struct WhileCounter {
  std::size_t leaf = 0;         // the counter's leaf of the state (flattening order)
  isa::ElementType type = isa::ElementType::kS32;
  int64_t step = 0;             // S (negated for subtract), two's complement in the type's width
  std::string compare;          // EQ, NE, LT, LE, GT or GE: the loop goes on while `c compare bound`
  int64_t bound = 0;            // K
};
std::optional<WhileCounter> FindWhileCounter(const hlo::Instruction& loop);

}  // namespace tpusim::compiler
