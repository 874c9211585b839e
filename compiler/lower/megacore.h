// Megacore: a chip's TensorCores all run the one program, each from its first instruction
// (.target cores=N). Kernels run one after another on all of them: a kernel is either split into
// `parts` pieces, core c running piece c (the dot's rows, the element-wise kernel's blocks), or
// run by core 0 while the others pass it; after it every core meets the others at a `core.sync`,
// so the next kernel reads what this one wrote, whichever core wrote it. With one core the kernel
// is emitted as it is, without a sync.
#pragma once

#include <functional>

#include "compiler/lower/asm_builder.h"
#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// The TensorCores a program for `target` runs on (`.target cores`; 0, left out, is one).
int TensorCores(const isa::Target& target);

// Emits `piece` for part c of `parts` (1 <= parts <= cores) on core c, the other cores passing,
// then the cores' sync. Uses s0 before the pieces (every kernel starts with its registers free).
void EmitOnCores(AsmBuilder& out, int cores, int parts, const std::function<void(const CorePart&)>& piece);

}  // namespace tpusim::compiler
