// Control flow on the scalar core: `while`, `conditional` and `call` lowered as branches around
// the kernels of the computations they call, emitted in line at the call site.
//
// - The called computation's parameters name existing buffers (no copy): a call's and a branch's
//   operands, a while loop's state. Its own values get buffers in a region of HBM above
//   everything live in its caller (compile.cc; buffer_assignment.h's NestedBinding), so nothing
//   the caller still needs is overwritten, and its root's leaves are copied by DMA into the
//   instruction's result buffers (which the caller's buffer assignment placed).
// - `while`: the loop state is the while's result buffers. The init's leaves are copied into them
//   once; then, each iteration, the condition's kernels run on the state, its pred is read back
//   HBM -> SMEM -> a scalar register and a false one branches out; the body's kernels run on the
//   state and its root's leaves are copied into the state (a leaf that is already its state
//   buffer is not copied; a leaf lying in another state buffer, a body that permutes the state,
//   goes through a temporary first), and the loop branches back to the condition.
// - `conditional`: the selector (pred: true runs branch 0; s32 index: out of range runs the last
//   branch, XLA's rule) is read back the same way and branches to that branch's kernels.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lower/program_builder.h"
#include "compiler/lower/compile.h"
#include "compiler/passes/buffer_assignment.h"

namespace tpusim::compiler {

// What a called computation's emission produced: its root's leaves and the highest HBM address
// its values used.
struct NestedResult {
  std::vector<const DeviceBuffer*> root;
  uint64_t peak_bytes = 0;
};

// The driver's side (compile.cc): emitting a computation in line, and reporting a piece of
// control-flow code as a kernel.
class NestedEmitter {
 public:
  virtual ~NestedEmitter() = default;
  // Emits `computation`'s kernels with parameter i naming `parameters[i]` and its own values at
  // or above `base` (aligned); its kernels are reported as `prefix` + instruction name. A while
  // body's parameters are `writable` (NestedBinding::parameters_writable).
  virtual NestedResult EmitNested(const hlo::Computation& computation,
                                  const std::vector<std::vector<const DeviceBuffer*>>& parameters, uint64_t base,
                                  const std::string& prefix, bool writable = false) = 0;
  // Brackets what `body` emits with a kernel's labels, reported as `name`. Megacore: `body` runs
  // on core 0 and the cores sync after it, or, `every_core` (a read each core's control flow
  // needs, leaving its value in s0), on every core without a sync.
  virtual void EmitReported(const std::string& name, const std::string& opcode, const hlo::Instruction& instruction,
                            uint64_t bytes_accessed, const std::function<void()>& body, bool every_core = false) = 0;
};

struct ControlFlowContext {
  ProgramBuilder& out;
  const CompileOptions& options;
  const hlo::Instruction& instruction;
  std::vector<std::vector<const DeviceBuffer*>> operands;  // each operand's leaves
  std::vector<const DeviceBuffer*> results;               // the instruction's leaves
  uint64_t region_base = 0;  // aligned; HBM from here up is free while the instruction runs
  // Where the called computations' values go (aligned): the region buffer assignment reserved
  // for them (NestedBinding::regions), which may lie between the caller's buffers.
  uint64_t nested_base = 0;
  std::string prefix;        // of the caller's kernel names
  NestedEmitter& nested;
};

bool IsControlFlowOpcode(hlo::Opcode opcode);  // while, conditional, call

// The computations a control-flow instruction runs (condition and body; the branches; to_apply).
std::vector<const hlo::Computation*> ControlFlowCallees(const hlo::Instruction& instruction);

void EmitControlFlow(ControlFlowContext& context);

}  // namespace tpusim::compiler
