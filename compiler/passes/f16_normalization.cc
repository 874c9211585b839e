#include "compiler/passes/f16_normalization.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/lower/control_flow.h"
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

  // One pass in order (operands before users), then one removal of what nothing reads: linear in
  // the computation's size.
  int Run() {
    std::vector<Instruction*> order;
    for (const auto& x : computation_.instructions()) order.push_back(x.get());
    int rewritten = 0;
    for (Instruction* x : order) {
      for (std::size_t i = 0; i < x->operand_count(); ++i) {
        const auto replaced = replaced_.find(x->operand(i));
        if (replaced != replaced_.end()) x->ReplaceOperand(i, replaced->second);
      }
      if (x->opcode() == Opcode::kConvert && x->shape().element_type == ElementType::kF32) {
        // convert-to-f32(convert-to-f16(y)) is y (SimplifyFPConversions).
        const auto wide = wide_.find(x->operand(0));
        if (wide != wide_.end()) {
          replaced_[x] = wide->second;
          candidates_.push_back(x);
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
    const auto root = replaced_.find(computation_.root());
    if (root != replaced_.end()) computation_.set_root(root->second);
    RemoveUnread();
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
  // takes x's name for the users that read an f16 (the later ones read it through replaced_).
  void Rebuild(Instruction* x) {
    const std::string name = x->name();
    const isa::Shape shape = x->shape();
    std::string f32_name = name + ".f32";
    while (computation_.FindInstruction(f32_name) != nullptr) f32_name += "_";
    computation_.RenameInstruction(x, f32_name);
    x->set_shape(AsF32(shape));
    for (std::size_t i = 0; i < x->operand_count(); ++i) x->ReplaceOperand(i, Wide(x->operand(i)));
    Instruction* f16 = AddInstructionFor(*x, name, Opcode::kConvert, shape);
    f16->AddOperand(x);
    replaced_[x] = f16;
    wide_[f16] = x;
    candidates_.push_back(f16);  // removed if nothing reads the f16 value in the end
  }

  // Removes the candidates nothing reads (an f16 value read only by a convert-to-f32 that is
  // itself removed goes too).
  void RemoveUnread() {
    std::unordered_set<const Instruction*> dead;
    for (bool grew = true; grew;) {
      std::unordered_set<const Instruction*> read;
      for (const auto& x : computation_.instructions()) {
        if (dead.contains(x.get())) continue;
        for (const Instruction* operand : x->operands()) read.insert(operand);
      }
      grew = false;
      for (const Instruction* x : candidates_) {
        if (!read.contains(x) && x != computation_.root() && dead.insert(x).second) grew = true;
      }
    }
    computation_.RemoveInstructions(dead);
  }

  hlo::Computation& computation_;
  std::unordered_map<const Instruction*, Instruction*> wide_;      // f16 value -> its f32 value
  std::unordered_map<const Instruction*, Instruction*> replaced_;  // rewritten -> what users read
  std::vector<const Instruction*> candidates_;  // removed where nothing reads them
};

// The entry and what it runs through control flow (ControlFlowCallees), each once, in module
// order.
std::vector<hlo::Computation*> ProgramComputations(hlo::Module& module) {
  std::vector<const hlo::Computation*> reached{module.entry()};
  std::unordered_set<const hlo::Computation*> seen{module.entry()};
  for (std::size_t i = 0; i < reached.size(); ++i) {
    for (const auto& x : reached[i]->instructions()) {
      for (const hlo::Computation* callee : ControlFlowCallees(*x)) {
        if (callee != nullptr && seen.insert(callee).second) reached.push_back(callee);
      }
    }
  }
  std::vector<hlo::Computation*> computations;
  for (const auto& computation : module.computations()) {
    if (seen.contains(computation.get())) computations.push_back(computation.get());
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
