// Megacore: a chip's TensorCores all run the one program, each from its first instruction
// (.target cores=N). Kernels run one after another on all of them: a kernel is either split into
// `parts` pieces, core c running piece c (the dot's rows, the element-wise kernel's blocks), or
// run by core 0 while the others pass it; after it every core meets the others at a `core.sync`,
// so the next kernel reads what this one wrote, whichever core wrote it. With one core the kernel
// is emitted as it is, and the sync after it (one issue slot) only ends its segment: a run
// replays a segment it already simulated (sim/chip/segment_replay.h).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "compiler/lower/program_builder.h"
#include "compiler/lower/kernel.h"
#include "isa/program_check.h"

namespace tpusim::compiler {

// Core part.index's equal share [first, end) of `count` items in order (all of them for {0, 1}).
std::pair<int64_t, int64_t> PartRange(int64_t count, const CorePart& part);

// Emits `piece` for part c of `parts` (1 <= parts <= the target's cores) on core c, the other
// cores passing, then the cores' sync. Uses s0 before the pieces (every kernel starts with its
// registers free).
void EmitOnCores(ProgramBuilder& out, int parts, const std::function<void(const CorePart&)>& piece);

}  // namespace tpusim::compiler
