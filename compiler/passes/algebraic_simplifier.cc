#include "compiler/passes/algebraic_simplifier.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/new_instruction.h"
#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// Whether `x`'s result is `source`'s bytes as they are: the same dims and type, and the same
// layout where both are written.
bool SameArray(const Instruction& x, const Instruction& source) {
  const isa::Shape& a = x.shape();
  const isa::Shape& b = source.shape();
  if (a.is_tuple || b.is_tuple || a.dims != b.dims || a.element_type != b.element_type) return false;
  return !a.layout || !b.layout || *a.layout == *b.layout;
}

bool IsIota(const std::vector<int64_t>& v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// A reshape that only drops size-1 dims of a transpose, as the transpose of x without them:
// reshape(transpose(x)) -> transpose(reshape(x)), so that a dot reading it can fold the transpose
// (dot_transpose_folding.h). The attention block's K^T is such a squeeze of a transpose: two
// data-movement kernels, 4.3 us. Null where `x` is not such a reshape.
Instruction* TransposeOfSqueeze(Instruction& x) {
  if (x.opcode() != Opcode::kReshape || x.operand(0)->opcode() != Opcode::kTranspose) return nullptr;
  const Instruction& transpose = *x.operand(0);
  Instruction* source = transpose.operand(0);
  const std::vector<int64_t>& permutation = transpose.GetIntList("dimensions");
  const std::vector<int64_t>& t = transpose.shape().dims;
  std::vector<int64_t> kept;  // the transpose's dims the reshape keeps, in order
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] != 1) kept.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> kept_dims;
  for (int64_t i : kept) kept_dims.push_back(t[static_cast<std::size_t>(i)]);
  if (kept.size() == t.size() || x.shape().dims != kept_dims || x.shape().is_tuple) return nullptr;
  // x's dims without the 1s, in their order; the new transpose permutes those.
  std::vector<int64_t> source_kept;
  for (int64_t i : kept) source_kept.push_back(permutation[static_cast<std::size_t>(i)]);
  std::vector<int64_t> sorted = source_kept;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> squeezed_dims, new_permutation;
  for (int64_t d : sorted) squeezed_dims.push_back(source->shape().dims[static_cast<std::size_t>(d)]);
  for (int64_t d : source_kept) {
    new_permutation.push_back(std::lower_bound(sorted.begin(), sorted.end(), d) - sorted.begin());
  }
  Instruction* squeezed = AddInstructionFor(x, x.name() + ".squeezed", Opcode::kReshape,
                                            isa::Shape::Array(source->shape().element_type, squeezed_dims));
  squeezed->AddOperand(source);
  isa::Shape result = x.shape();
  Instruction* moved = AddInstructionFor(x, x.name() + ".transpose", Opcode::kTranspose, std::move(result));
  moved->AddOperand(squeezed);
  moved->AddAttribute({"dimensions", new_permutation, {}});
  return moved;
}

// Whether `x` is a float constant `value`, or a broadcast of one.
bool IsFloatConstant(const Instruction& x, double value) {
  const Instruction& scalar = x.opcode() == Opcode::kBroadcast ? *x.operand(0) : x;
  if (scalar.opcode() != Opcode::kConstant || scalar.shape().rank() != 0 || scalar.literal() == nullptr) return false;
  if (!isa::IsFloat(scalar.shape().element_type)) return false;
  return scalar.literal()->GetDouble(0) == value;
}

// maximum(x, -inf) and minimum(x, +inf), either order, are x (a NaN x stays NaN, as XLA's
// maximum propagates it): the attention block's row maxima go through such a maximum, a kernel of
// its own. Null where `x` is not one.
Instruction* IdentityOfExtremum(Instruction& x) {
  if ((x.opcode() != Opcode::kMaximum && x.opcode() != Opcode::kMinimum) || x.operand_count() != 2) return nullptr;
  const double identity = x.opcode() == Opcode::kMaximum ? -std::numeric_limits<double>::infinity()
                                                           : std::numeric_limits<double>::infinity();
  for (int i = 0; i < 2; ++i) {
    Instruction* other = x.operand(1 - i);
    if (IsFloatConstant(*x.operand(i), identity) && SameArray(x, *other)) return other;
  }
  return nullptr;
}

// compare(y, y) of integers or preds is a constant (XLA's rule; not for floats, where NaN != NaN):
// true for EQ, GE and LE, false for NE, GT and LT. A loop condition `i == i` is then seen to be
// constant (models/loop_watch.h). Null where `x` is not one.
Instruction* CompareWithItself(Instruction& x) {
  if (x.opcode() != Opcode::kCompare || x.operand(0) != x.operand(1) || x.shape().is_tuple) return nullptr;
  const isa::ElementType type = x.operand(0)->shape().element_type;
  if (!isa::IsInteger(type) && type != isa::ElementType::kPred) return nullptr;
  const std::string& direction = x.GetIdentifier("direction");
  const bool value = direction == "EQ" || direction == "GE" || direction == "LE";
  Instruction* scalar = AddInstructionFor(x, x.name() + ".constant", Opcode::kConstant,
                                          isa::Shape::Array(isa::ElementType::kPred, {}));
  scalar->set_constant(hlo::ConstantForm::kLiteral, hlo::Literal::FromDoubles(isa::ElementType::kPred, {}, {value ? 1.0 : 0.0}),
                       value ? "true" : "false");
  if (x.shape().rank() == 0) return scalar;
  Instruction* spread = AddInstructionFor(x, x.name() + ".broadcast", Opcode::kBroadcast, x.shape());
  spread->AddOperand(scalar);
  spread->AddAttribute({"dimensions", std::vector<int64_t>{}, {}});
  return spread;
}

// broadcast(reshape(y)) where the reshape only adds size-1 dims to y (which has none): the
// broadcast of y itself, each dim of y going where the reshape's dim of its size went (XLA's
// rule). A norm's scale or a rotary table reshaped to one row and then spread is read by its
// consumers' kernel (an array broadcast), where the reshape was a kernel of its own. Null where
// `x` is not one.
Instruction* BroadcastOfUnitReshape(Instruction& x) {
  if (x.opcode() != Opcode::kBroadcast || x.operand(0)->opcode() != Opcode::kReshape || x.shape().is_tuple) return nullptr;
  const Instruction& reshape = *x.operand(0);
  Instruction* source = reshape.operand(0);
  const std::vector<int64_t>& from = source->shape().dims;
  const std::vector<int64_t>& to = reshape.shape().dims;
  if (source->shape().is_tuple || from.empty() || std::find(from.begin(), from.end(), 1) != from.end()) return nullptr;
  const std::vector<int64_t>& dimensions = x.GetIntList("dimensions");
  std::vector<int64_t> composed;
  for (std::size_t d = 0; d < to.size(); ++d) {
    if (to[d] != 1) composed.push_back(dimensions.at(d));
  }
  if (isa::DimsWithoutOnes(to) != from) return nullptr;
  Instruction* spread = AddInstructionFor(x, x.name() + ".unreshaped", Opcode::kBroadcast, x.shape());
  spread->AddOperand(source);
  spread->AddAttribute({"dimensions", composed, {}});
  return spread;
}

// A dynamic-update-slice whose update is as large as its operand writes all of it (its start
// indices are clamped to 0): the update itself (XLA's rule). Gemma 3's key/value caches of its 11
// positions are updated whole, each a kernel of 2 us that copied the cache parameter and wrote
// the update over it. Null where `x` is not one.
Instruction* WholeUpdate(Instruction& x) {
  if (x.opcode() != Opcode::kDynamicUpdateSlice || x.operand_count() < 2) return nullptr;
  Instruction* update = x.operand(1);
  return SameArray(x, *update) ? update : nullptr;
}

// What `x` is to be replaced by, or null.
Instruction* Simplified(Instruction& x) {
  if (Instruction* moved = TransposeOfSqueeze(x)) return moved;
  if (Instruction* update = WholeUpdate(x)) return update;
  if (Instruction* constant = CompareWithItself(x)) return constant;
  if (x.operand_count() == 2) return IdentityOfExtremum(x);
  if (x.operand_count() != 1) return nullptr;
  Instruction* source = x.operand(0);
  switch (x.opcode()) {
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
      if (IsIota(x.GetIntListOrEmpty("dimensions")) && SameArray(x, *source)) return source;
      // (After the identity: an identity broadcast of a reshape goes, leaving a reshape of a
      // reshape, which reads the inner one's operand.)
      return BroadcastOfUnitReshape(x);
    case Opcode::kReshape:
      if (SameArray(x, *source)) return source;
      return nullptr;
    default:
      return nullptr;
  }
}

}  // namespace

// Converts read only by a reshape or a broadcast go after it: reshape(convert(x)) and
// broadcast(convert(x)) become the convert of the reshape or broadcast of x (the same values), so
// a convert of a small array that a broadcast spreads is computed in the broadcast's consumer, not
// as a kernel of its own (the attention block's row sums rounded to bf16). Where the layout is
// written with tiles (which depend on the type), the op stays. Returns the bypassed ops.
std::vector<Instruction*> SinkConverts(hlo::Computation& computation) {
  std::vector<Instruction*> bypassed;
  for (int round = 0; round < 8; ++round) {
    std::unordered_map<const Instruction*, int> readers;
    for (const auto& x : computation.instructions()) {
      for (const Instruction* operand : x->operands()) ++readers[operand];
    }
    std::vector<Instruction*> instructions;
    for (const auto& x : computation.instructions()) instructions.push_back(x.get());
    bool changed = false;
    for (Instruction* x : instructions) {
      if ((x->opcode() != Opcode::kReshape && x->opcode() != Opcode::kBroadcast) || x->operand_count() != 1) continue;
      Instruction* convert = x->operand(0);
      // (An op already bypassed, read by nothing, still reads its convert.)
      if (readers[x] == 0 && x != computation.root()) continue;
      if (convert->opcode() != Opcode::kConvert || readers[convert] != 1 || x->shape().is_tuple ||
          (x->shape().layout && !x->shape().layout->tiles.empty())) {
        continue;
      }
      Instruction* source = convert->operand(0);
      isa::Shape moved_shape = x->shape();
      moved_shape.element_type = source->shape().element_type;
      Instruction* moved = AddInstructionFor(*x, x->name() + ".before_convert", x->opcode(), std::move(moved_shape));
      moved->AddOperand(source);
      for (const hlo::Attribute& attribute : x->attributes()) moved->AddAttribute(attribute);
      Instruction* converted = AddInstructionFor(*x, x->name() + ".convert", Opcode::kConvert, x->shape());
      converted->AddOperand(moved);
      computation.ReplaceUses(x, converted);
      bypassed.push_back(x);
      changed = true;
    }
    if (!changed) break;
    computation.OrderOperandsFirst();
  }
  return bypassed;
}

void SimplifyAlgebraically(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    std::vector<Instruction*> bypassed = SinkConverts(*computation);  // instructions their readers no longer read
    std::vector<Instruction*> instructions;
    for (const auto& x : computation->instructions()) instructions.push_back(x.get());
    for (Instruction* x : instructions) {
      // reshape(reshape(y)) reads y: the inner reshape may then go unread.
      if (x->opcode() == Opcode::kReshape && x->operand(0)->opcode() == Opcode::kReshape) {
        bypassed.push_back(x->operand(0));
        x->ReplaceOperand(0, x->operand(0)->operand(0));
      }
      if (Instruction* replacement = Simplified(*x)) {
        computation->ReplaceUses(x, replacement);
        bypassed.push_back(x);
      }
    }
    if (bypassed.empty()) continue;
    // Drop what nothing reads any more, and what only those read (a whole update's start
    // indices), where it has no side effect (XLA's DCE after the simplifier).
    RemoveUnread(*computation, std::move(bypassed), [](const Instruction& x) { return !HasSideEffect(x); });
    // The transposes it appends are read by instructions written before them.
    computation->OrderOperandsFirst();
  }
}

}  // namespace tpusim::compiler
