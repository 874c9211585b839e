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

}  // namespace

void PlaceInHbm(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& x : computation->instructions()) x->set_shape(InHbm(x->shape()));
    std::vector<Instruction*> done;
    for (const auto& x : computation->instructions()) {
      if (x->opcode() == Opcode::kCopyDone && x->operand(0)->opcode() == Opcode::kCopyStart) done.push_back(x.get());
    }
    if (done.empty()) continue;
    for (Instruction* copy_done : done) {
      Instruction* copy_start = copy_done->operand(0);
      Instruction* source = copy_start->operand(0);
      Instruction* value = source;
      if (source->shape() != copy_done->shape()) {
        value = AddInstructionFor(*copy_done, copy_done->name() + ".copy", Opcode::kCopy, copy_done->shape());
        value->AddOperand(source);
      }
      computation->ReplaceUses(copy_done, value);
      computation->RemoveInstruction(copy_done);
    }
    std::vector<Instruction*> unread;
    for (const auto& x : computation->instructions()) {
      if (x->opcode() != Opcode::kCopyStart || x.get() == computation->root()) continue;
      bool read = false;
      for (const auto& y : computation->instructions()) {
        for (const Instruction* operand : y->operands()) read = read || operand == x.get();
      }
      if (!read) unread.push_back(x.get());
    }
    for (Instruction* copy_start : unread) computation->RemoveInstruction(copy_start);
    computation->OrderOperandsFirst();
  }
}

}  // namespace tpusim::compiler
