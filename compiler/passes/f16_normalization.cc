#include "compiler/passes/f16_normalization.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;
using isa::ElementType;

bool IsF16(const Instruction& x) { return !x.shape().is_tuple && x.shape().element_type == ElementType::kF16; }

// An f16 arithmetic operation the VPU computes on f32 values: every element-wise operation but the
// conversions, which read or give the f16 value itself.
bool ComputesOnF16(const Instruction& x) {
  if (!IsElementwiseOpcode(x.opcode()) || x.opcode() == Opcode::kConvert ||
      x.opcode() == Opcode::kBitcastConvert || x.opcode() == Opcode::kReducePrecision) {
    return false;
  }
  if (IsF16(x)) return true;
  for (const Instruction* operand : x.operands()) {
    if (IsF16(*operand)) return true;
  }
  return false;
}

// `shape` holding f32 (no layout: layout assignment gives the f32 value its default one).
isa::Shape AsF32(const isa::Shape& shape) { return isa::Shape::Array(ElementType::kF32, shape.dims); }

class Normalizer {
 public:
  explicit Normalizer(hlo::Computation& computation) : computation_(computation) {}

  int Run() {
    std::vector<Instruction*> order;
    for (const auto& x : computation_.instructions()) order.push_back(x.get());
    int rewritten = 0;
    for (Instruction* x : order) {
      if (x->opcode() == Opcode::kConvert && x->shape().element_type == ElementType::kF32) {
        // convert-to-f32(convert-to-f16(y)) is y (SimplifyFPConversions).
        const auto wide = wide_.find(x->operand(0));
        if (wide != wide_.end()) {
          computation_.ReplaceUses(x, wide->second);
          dead_.push_back(x);
        }
        continue;
      }
      if (!ComputesOnF16(*x)) continue;
      ++rewritten;
      if (!IsF16(*x)) {  // a compare: pred from the operands' f32 values
        for (std::size_t i = 0; i < x->operand_count(); ++i) x->ReplaceOperand(i, Wide(x->operand(i)));
        continue;
      }
      Rebuild(x);
    }
    RemoveDead();
    computation_.OrderOperandsFirst();
    return rewritten;
  }

 private:
  // The f32 value of f16 `value`: its excess-precision value where it has one, else a convert.
  Instruction* Wide(Instruction* value) {
    if (!IsF16(*value)) return value;
    const auto it = wide_.find(value);
    if (it != wide_.end()) return it->second;
    Instruction* widened = AddInstructionFor(*value, value->name() + ".f32", Opcode::kConvert, AsF32(value->shape()));
    widened->AddOperand(value);
    wide_[value] = widened;
    return widened;
  }

  // `x` (f16) becomes `<name>.f32`, the same operation on f32 values, and a convert of it to f16
  // under x's own name for the users that read an f16.
  void Rebuild(Instruction* x) {
    const std::string name = x->name();
    const isa::Shape shape = x->shape();
    Instruction* f32 = AddInstructionFor(*x, name + ".f32", x->opcode(), AsF32(shape));
    for (Instruction* operand : x->operands()) f32->AddOperand(Wide(operand));
    for (const hlo::Attribute& attribute : x->attributes()) f32->AddAttribute(attribute);
    // Every user of x comes after it and is not rewritten yet: they read f32's f16 convert.
    computation_.ReplaceUses(x, f32);
    computation_.RemoveInstruction(x);
    Instruction* f16 = AddInstructionFor(*f32, name, Opcode::kConvert, shape);
    computation_.ReplaceUses(f32, f16);
    f16->AddOperand(f32);
    wide_[f16] = f32;
    dead_.push_back(f16);  // removed if nothing reads the f16 value in the end
  }

  void RemoveDead() {
    std::unordered_set<const Instruction*> read;
    for (const auto& x : computation_.instructions()) {
      for (const Instruction* operand : x->operands()) read.insert(operand);
    }
    for (Instruction* x : dead_) {
      if (!read.contains(x) && x != computation_.root()) computation_.RemoveInstruction(x);
    }
  }

  hlo::Computation& computation_;
  std::unordered_map<const Instruction*, Instruction*> wide_;  // f16 value -> its f32 value
  std::vector<Instruction*> dead_;  // candidates: removed where nothing reads them
};

// The entry and what it runs through control flow, each once.
std::vector<hlo::Computation*> ProgramComputations(hlo::Module& module) {
  std::vector<hlo::Computation*> computations{module.entry()};
  std::unordered_set<hlo::Computation*> seen{module.entry()};
  for (std::size_t i = 0; i < computations.size(); ++i) {
    for (const auto& x : computations[i]->instructions()) {
      if (x->opcode() != Opcode::kWhile && x->opcode() != Opcode::kConditional && x->opcode() != Opcode::kCall) continue;
      for (const hlo::Attribute& attribute : x->attributes()) {
        std::vector<hlo::Computation*> called;
        if (const auto* one = std::get_if<hlo::Computation*>(&attribute.value)) called.push_back(*one);
        if (const auto* list = std::get_if<std::vector<hlo::Computation*>>(&attribute.value)) called = *list;
        for (hlo::Computation* c : called) {
          if (c != nullptr && seen.insert(c).second) computations.push_back(c);
        }
      }
    }
  }
  return computations;
}

}  // namespace

int NormalizeF16(hlo::Module& module) {
  int rewritten = 0;
  for (hlo::Computation* computation : ProgramComputations(module)) rewritten += Normalizer(*computation).Run();
  return rewritten;
}

}  // namespace tpusim::compiler
