#include "compiler/passes/common_subexpressions.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/passes/dead_code_elimination.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// Whether `x` may be merged with an instruction that computes the same value.
bool Mergeable(const Instruction& x, const std::unordered_set<const Instruction*>& ordered) {
  if (x.opcode() == Opcode::kParameter || ordered.contains(&x) || HasSideEffect(x)) return false;
  return x.opcode() != Opcode::kConstant || x.literal() != nullptr;
}

// What two instructions must share beyond their opcode, shape and operands (the bucket's key).
bool SameAttributes(const Instruction& a, const Instruction& b) {
  const auto compared = [](const Instruction& x) {
    std::vector<const hlo::Attribute*> attributes;
    for (const hlo::Attribute& attribute : x.attributes()) {
      if (attribute.name != "metadata") attributes.push_back(&attribute);
    }
    return attributes;
  };
  const std::vector<const hlo::Attribute*> left = compared(a), right = compared(b);
  if (left.size() != right.size()) return false;
  for (std::size_t i = 0; i < left.size(); ++i) {
    if (left[i]->name != right[i]->name || !(left[i]->value == right[i]->value)) return false;
  }
  if (a.opcode() != Opcode::kConstant) return true;
  const auto bytes_a = a.literal()->bytes();
  const auto bytes_b = b.literal()->bytes();
  return std::equal(bytes_a.begin(), bytes_a.end(), bytes_b.begin(), bytes_b.end());
}

// The bucket of instructions that may be the same as `x`: opcode, shape and operands.
std::string BucketKey(const Instruction& x) {
  std::string key = std::to_string(static_cast<int>(x.opcode())) + " " + isa::ToString(x.shape());
  for (const Instruction* operand : x.operands()) key += " " + operand->name();
  return key;
}

}  // namespace

std::size_t EliminateCommonSubexpressions(hlo::Module& module) {
  std::size_t merged = 0;
  for (const auto& computation : module.computations()) {
    computation->OrderOperandsFirst();  // an operand's merge is known before its readers'
    // Instructions in a control dependency keep their identity.
    std::unordered_set<const Instruction*> ordered;
    for (const auto& x : computation->instructions()) {
      for (Instruction* before : x->control_predecessors()) {
        ordered.insert(before);
        ordered.insert(x.get());
      }
    }
    std::unordered_map<const Instruction*, Instruction*> same_as;  // a merged instruction -> the one kept
    std::unordered_map<std::string, std::vector<Instruction*>> buckets;
    std::unordered_set<const Instruction*> gone;
    for (const auto& x : computation->instructions()) {
      for (std::size_t i = 0; i < x->operand_count(); ++i) {
        if (const auto it = same_as.find(x->operand(i)); it != same_as.end()) x->ReplaceOperand(i, it->second);
      }
      if (!Mergeable(*x, ordered)) continue;
      std::vector<Instruction*>& bucket = buckets[BucketKey(*x)];
      Instruction* kept = nullptr;
      for (Instruction* candidate : bucket) {
        if (SameAttributes(*candidate, *x)) {
          kept = candidate;
          break;
        }
      }
      if (kept == nullptr) {
        bucket.push_back(x.get());
        continue;
      }
      same_as[x.get()] = kept;
      gone.insert(x.get());
    }
    if (gone.empty()) continue;
    if (const auto it = same_as.find(computation->root()); it != same_as.end()) computation->set_root(it->second);
    computation->RemoveInstructions(gone);
    merged += gone.size();
  }
  return merged;
}

}  // namespace tpusim::compiler
