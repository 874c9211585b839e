// Which of a while loop's state decides whether it ends: what the simulator watches for a state
// that comes back (isa::Loop, models/loop_watch.h).
#pragma once

#include <cstddef>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

// The leaves of `loop`'s state (flattening order, tuple_leaves.h), ascending, on which whether it
// ends depends: those its condition reads, and, closed under the body, those the body computes
// them from. A computation's instructions see nothing but their operands, so what a value reads
// is what its operands reach back to; a use of the whole parameter (not through
// get-tuple-element) reads every leaf. The body's result is followed through tuple instructions
// to its elements; each leaf of an element that is not one is taken to depend on everything the
// element reads. A condition that is a constant reads none.
std::vector<std::size_t> WhileEndingLeaves(const hlo::Instruction& loop);

}  // namespace tpusim::compiler
