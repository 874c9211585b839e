// What a kernel emitter gets: the instruction it lowers, the HBM buffers of its operands and
// results, the program builder, and the machine. Every kernel starts with all of VMEM, SMEM,
// the semaphores and the DMA engines free, and must leave the semaphores at zero and every DMA
// and vector instruction complete when it ends (compile.cc runs kernels one after another).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lower/program_builder.h"
#include "compiler/lower/compile.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"

namespace tpusim::compiler {

// Megacore: a kernel split over the TensorCores of a chip runs piece `index` of `count` on core
// `index` (compile.cc, EmitOnCores); {0, 1} is the whole kernel.
struct CorePart {
  int index = 0;
  int count = 1;
};

struct KernelContext {
  ProgramBuilder& out;
  const CompileOptions& options;
  const hlo::Instruction& instruction;  // the group's root
  const KernelGroup& group;             // what the kernel computes (element-wise fusion)
  // Each operand's leaves: the instruction's operands in order, or, for element-wise groups,
  // group.operands.
  std::vector<std::vector<const DeviceBuffer*>> operands;
  std::vector<const DeviceBuffer*> results;  // the instruction's leaves
  // HBM free while the kernel runs (BufferAssignment::LargestFreeAt: above what is live, or the
  // largest hole between the buffers live here) that a kernel may use for intermediates during
  // its own run (a reshape's row-major copy when VMEM is too small).
  uint64_t hbm_scratch_address = 0;
  uint64_t hbm_scratch_bytes = 0;
  CorePart part;
};

// Whether `group`'s kernel plans without emitting anything, before its buffers exist: `plan`
// runs on a context whose buffers are stand-ins (shapes only), into a scratch builder, and
// throws (CannotLower) where the kernel would not lower. False also for tuple-shaped roots and
// operands, which the fused kernels do not take.
bool GroupPlans(const KernelGroup& group, const CompileOptions& options, const std::function<void(KernelContext&)>& plan);

// "file:line:col: instruction 'x': cannot lower <opcode> <shape>: why" as a tpusim::Error.
[[noreturn]] void CannotLower(const hlo::Instruction& instruction, std::string_view why);

// " (NAME is VALUE)" for a kernel's refusal that `limit` is too small: NAME is what the user set
// it as (CompileOptions::limit_names, e.g. tensor_core.scalar_core.semaphore_count), VALUE the
// target's.
std::string LimitNote(const CompileOptions& options, TargetLimit limit);

// A DMA of `bytes` contiguous bytes from `from_space[from]` to `to_space[to]`,
// signalling `semaphore` on `engine`.
void EmitFlatDma(ProgramBuilder& out, isa::MemorySpace from_space, uint64_t from, isa::MemorySpace to_space,
                 uint64_t to, uint64_t bytes, uint32_t semaphore, uint32_t engine);

// An address operand for a flat DMA: `space[s<base_register> + offset]`, or `space[offset]` when
// base_register < 0 (a loop walks a DMA by moving its base register).
struct DmaAddress {
  isa::MemorySpace space = isa::MEMORY_SPACE_HBM;
  uint64_t offset = 0;
  int base_register = -1;
};
void EmitFlatDma(ProgramBuilder& out, const DmaAddress& from, const DmaAddress& to, uint64_t bytes, uint32_t semaphore,
                 uint32_t engine);

}  // namespace tpusim::compiler
