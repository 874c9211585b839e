// A memory-aware schedule of one computation's kernels: a list scheduler (as XLA's
// ListScheduler, hlo_memory_scheduler.cc) whose next kernel is, of those whose operands are
// computed, the one that frees the most bytes net of what it defines, and where none frees any,
// the text's next one. So the text's order (JAX's program order, which XLA's schedulers start
// from too) stays, except that a kernel that frees memory runs as early as its operands allow:
// over the span it moved, fewer bytes are live. A control-flow instruction counts its called
// computations' bytes as defined (XLA's memory_by_computation). XLA's pure list order (largest
// net first, always) peaked at 55.5 GB on MaxText's train step where the text's order needs
// 39.2 GB. Buffer assignment keeps whichever of this schedule and the text's order peaks lower
// (compiler/lower/compile.cc, as XLA keeps the best of its schedulers).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"

namespace tpusim::compiler {

// The instructions of `schedule` (every instruction of one computation, operands first) in the
// list scheduler's order. Kernels (`groups`) are scheduled whole: the instructions computed
// inside one go just before its root (one computed in several kernels, with the first).
// `callee_bytes(x)` is the HBM a control-flow instruction's called computations need while it
// runs (0 for others). Ties go to the earlier instruction of `schedule`.
std::vector<const hlo::Instruction*> ListSchedule(const std::vector<const hlo::Instruction*>& schedule,
                                                  const std::vector<KernelGroup>& groups,
                                                  const std::function<uint64_t(const hlo::Instruction&)>& callee_bytes);

}  // namespace tpusim::compiler
