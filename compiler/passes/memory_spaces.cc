#include "compiler/passes/memory_spaces.h"

#include <vector>

#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// `shape` (and its tuple elements) with every memory space but host memory made HBM's.
isa::Shape InHbm(isa::Shape shape) {
  for (isa::Shape& element : shape.tuple_shapes) element = InHbm(std::move(element));
  if (shape.layout && shape.layout->memory_space != isa::kMemorySpaceHost) shape.layout->memory_space = isa::kMemorySpaceHbm;
  return shape;
}

bool IsPrefetchDone(const Instruction& x) {
  return x.opcode() == Opcode::kCopyDone && x.operand(0)->opcode() == Opcode::kCopyStart;
}

// What reads the copied array instead of `copy_done`: the array itself, or a copy where the
// layouts differ.
Instruction* Prefetched(Instruction& copy_done) {
  Instruction* source = copy_done.operand(0)->operand(0);
  if (source->shape() == copy_done.shape()) return source;
  Instruction* copy = AddInstructionFor(copy_done, copy_done.name() + ".copy", Opcode::kCopy, copy_done.shape());
  copy->AddOperand(source);
  return copy;
}

}  // namespace

void PlaceInHbm(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& x : computation->instructions()) x->set_shape(InHbm(x->shape()));
  }
  RewriteEach(module, IsPrefetchDone, Prefetched);
  // The copy-starts their dones no longer read.
  for (const auto& computation : module.computations()) {
    std::vector<Instruction*> starts;
    for (const auto& x : computation->instructions()) {
      if (x->opcode() == Opcode::kCopyStart) starts.push_back(x.get());
    }
    RemoveUnread(*computation, std::move(starts), [](const Instruction& x) { return x.opcode() == Opcode::kCopyStart; });
  }
}

}  // namespace tpusim::compiler
