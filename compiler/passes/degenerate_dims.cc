#include "compiler/passes/degenerate_dims.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/layout_assignment.h"
#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

bool HasOnes(const isa::Shape& shape) {
  return isa::DimsWithoutOnes(shape.dims).size() != shape.dims.size();
}

class Rewriter {
 public:
  explicit Rewriter(Instruction& reduce) : reduce_(reduce), computation_(*reduce.parent()) {}

  // Returns the original operand, which the squeezed reduce may no longer read.
  Instruction* Run() {
    const isa::Shape& operand = reduce_.operand(0)->shape();
    const isa::Shape& result = reduce_.shape();
    // Operand dim d -> its number without the size-1 dims; the reduced ones that remain.
    std::vector<int64_t> dims;
    std::vector<int64_t> renumbered(operand.dims.size(), -1);
    int64_t next = 0;
    for (std::size_t d = 0; d < operand.dims.size(); ++d) {
      if (operand.dims[d] != 1) renumbered[d] = next++;
    }
    for (int64_t d : reduce_.GetIntList("dimensions")) {
      if (renumbered.at(d) >= 0) dims.push_back(renumbered[d]);
    }
    Instruction* flat_operand = Squeezed(reduce_.operand(0), isa::DimsWithoutOnes(operand.dims), kSinkDepth);
    Instruction* flat = Add(Opcode::kReduce, Array(result.element_type, isa::DimsWithoutOnes(result.dims)), "reduce");
    flat->AddOperand(flat_operand);
    flat->AddOperand(reduce_.operand(1));
    for (const hlo::Attribute& attribute : reduce_.attributes()) {
      if (attribute.name == "dimensions") {
        flat->AddAttribute({"dimensions", dims, {}});
      } else {
        flat->AddAttribute(attribute);
      }
    }
    Instruction* back = Add(Opcode::kReshape, result, "result");
    back->AddOperand(flat);
    computation_.ReplaceUses(&reduce_, back);
    Instruction* original = reduce_.operand(0);
    computation_.RemoveInstruction(&reduce_);
    return original;
  }

 private:
  // How many element-wise operations deep the squeeze of the operand is moved (XLA's ReshapeMover).
  static constexpr int kSinkDepth = 4;

  // `x` without its size-1 dims (`dims`). A reshape is put through cheap element-wise operations
  // (their squeezed copies read squeezed operands) and scalar broadcasts (broadcast into `dims`):
  // a reshape between a reduce and its producers kept them out of its input fusion (the attention
  // block's f32 convert of its exponential and its scaled scores were kernels of their own, 1.5
  // and 1.7 us). The copies compute what x did, for the reduce alone (x stays for its other
  // readers, and goes where it has none).
  // An operand read twice (multiply(d, d)) is squeezed once.
  Instruction* Squeezed(Instruction* x, const std::vector<int64_t>& dims, int depth) {
    Instruction*& squeezed = squeezed_[x];
    if (squeezed == nullptr) squeezed = SqueezedCopy(x, dims, depth);
    return squeezed;
  }
  Instruction* SqueezedCopy(Instruction* x, const std::vector<int64_t>& dims, int depth) {
    if (x->opcode() == Opcode::kBroadcast && x->operand(0)->shape().rank() == 0) {
      Instruction* broadcast = Add(Opcode::kBroadcast, Array(x->shape().element_type, dims), "operand");
      broadcast->AddOperand(x->operand(0));
      broadcast->AddAttribute({"dimensions", std::vector<int64_t>{}, {}});
      return broadcast;
    }
    if (x->opcode() == Opcode::kReshape) return Reshape(x->operand(0), dims, "operand");
    if (depth > 0 && IsElementwiseOpcode(x->opcode()) && !IsExpensive(*x) && !x->shape().is_tuple) {
      Instruction* copy = Add(x->opcode(), Array(x->shape().element_type, dims), "operand");
      for (Instruction* operand : x->operands()) copy->AddOperand(Squeezed(operand, dims, depth - 1));
      for (const hlo::Attribute& attribute : x->attributes()) copy->AddAttribute(attribute);
      return copy;
    }
    return Reshape(x, dims, "operand");
  }

  static isa::Shape Array(isa::ElementType type, std::vector<int64_t> dims) {
    return WithDefaultLayouts(isa::Shape::Array(type, std::move(dims)));
  }
  Instruction* Reshape(Instruction* x, std::vector<int64_t> dims, const char* role) {
    Instruction* reshape = Add(Opcode::kReshape, Array(x->shape().element_type, std::move(dims)), role);
    reshape->AddOperand(x);
    return reshape;
  }
  Instruction* Add(Opcode opcode, isa::Shape shape, const char* role) {
    return AddInstructionFor(reduce_, reduce_.name() + ".squeezed_" + role, opcode, std::move(shape));
  }

  Instruction& reduce_;
  hlo::Computation& computation_;
  std::unordered_map<const Instruction*, Instruction*> squeezed_;  // Squeezed's, by original
};

// One array operand and init, and at least two dims left on the operand and on a result that
// loses some (the kernels' 2-D tiles: a rank-1 array has another layout, T(1024), so reshaping it
// would be a copy, not an alias).
bool Applies(const Instruction& x) {
  if (x.opcode() != Opcode::kReduce || x.operand_count() != 2 || x.shape().is_tuple) return false;
  const isa::Shape& operand = x.operand(0)->shape();
  if (operand.is_tuple || !(HasOnes(operand) || HasOnes(x.shape()))) return false;
  return isa::DimsWithoutOnes(operand.dims).size() >= 2 &&
         (!HasOnes(x.shape()) || isa::DimsWithoutOnes(x.shape().dims).size() >= 2);
}

// A row statistic that every user broadcasts back along its rows (RowFoldReduce), over a
// row-major operand: element-wise fusion folds it in its consumers' kernel over the consumers'
// own dims (a softmax's maximum over bf16[1,12,128,128] beside its subtraction), which the
// squeezed form, reshaped, would keep out; the reduce kernel takes the row-major operand as it is.
bool IsRowFold(const Instruction& x, const std::vector<const Instruction*>& users) {
  const isa::Shape& operand = x.operand(0)->shape();
  return operand.layout && operand.layout->minor_to_major == isa::MajorToMinorOrder(operand.rank()) && OnlyRowFolded(x, users);
}

}  // namespace

void RemoveDegenerateReduceDims(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    std::unordered_map<const Instruction*, std::vector<const Instruction*>> users;
    for (const auto& instruction : computation->instructions()) {
      for (const Instruction* operand : instruction->operands()) users[operand].push_back(instruction.get());
    }
    std::vector<Instruction*> reduces;
    for (const auto& instruction : computation->instructions()) {
      if (Applies(*instruction) && !IsRowFold(*instruction, users[instruction.get()])) reduces.push_back(instruction.get());
    }
    std::vector<Instruction*> originals;
    for (Instruction* reduce : reduces) originals.push_back(Rewriter(*reduce).Run());
    // The operands whose squeezed copies the reduces read go where nothing else reads them.
    RemoveUnread(*computation, std::move(originals), [](const Instruction& x) {
      return IsElementwiseOpcode(x.opcode()) || x.opcode() == Opcode::kBroadcast || x.opcode() == Opcode::kReshape;
    });
    // The reshapes it appends are read by instructions written before them.
    if (!reduces.empty()) computation->OrderOperandsFirst();
  }
}

}  // namespace tpusim::compiler
