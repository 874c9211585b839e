#include "compiler/passes/host_offload.h"

#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/lower/kernel.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/tuple_leaves.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

bool IsCustomCallTo(const Instruction& instruction, std::string_view target) {
  if (instruction.opcode() != Opcode::kCustomCall) return false;
  const auto* name = instruction.Find<hlo::QuotedString>("custom_call_target");
  return name != nullptr && name->value == target;
}

// Array leaves of a shape in flattening order (tuple elements depth first), as buffer
// assignment numbers them.
void Leaves(isa::Shape& shape, std::vector<isa::Shape*>& out) {
  if (!shape.is_tuple) {
    out.push_back(&shape);
    return;
  }
  for (isa::Shape& element : shape.tuple_shapes) Leaves(element, out);
}

// Which array leaves of which instruction are in host memory, grown to a fixed point.
class HostLeaves {
 public:
  bool Get(const Instruction* x, std::size_t leaf) { return Of(x).at(leaf); }
  void Mark(const Instruction* x, std::size_t leaf) {
    std::vector<bool>& host = Of(x);
    if (leaf < host.size() && !host[leaf]) {
      host[leaf] = true;
      changed_ = true;
    }
  }
  // b's leaf is host when a's is.
  void Forward(const Instruction* a, std::size_t la, const Instruction* b, std::size_t lb) {
    if (Get(a, la)) Mark(b, lb);
  }
  // Same buffer (or a buffer that must be in the same memory): host on both sides or neither.
  void Same(const Instruction* a, std::size_t la, const Instruction* b, std::size_t lb) {
    Forward(a, la, b, lb);
    Forward(b, lb, a, la);
  }
  void SameAll(const Instruction* a, const Instruction* b) {
    const std::size_t n = std::min(Of(a).size(), Of(b).size());
    for (std::size_t k = 0; k < n; ++k) Same(a, k, b, k);
  }
  void ForwardAll(const Instruction* a, const Instruction* b) {
    const std::size_t n = std::min(Of(a).size(), Of(b).size());
    for (std::size_t k = 0; k < n; ++k) Forward(a, k, b, k);
  }
  bool AnyHost(const Instruction* x) {
    for (bool host : Of(x)) {
      if (host) return true;
    }
    return false;
  }
  bool TakeChanged() {
    const bool changed = changed_;
    changed_ = false;
    return changed;
  }

 private:
  std::vector<bool>& Of(const Instruction* x) {
    auto it = host_.find(x);
    if (it == host_.end()) it = host_.emplace(x, std::vector<bool>(LeafCount(x->shape()), false)).first;
    return it->second;
  }
  std::unordered_map<const Instruction*, std::vector<bool>> host_;
  bool changed_ = false;
};

// The instruction and leaf that define `x`'s leaf: through tuples and get-tuple-elements.
std::pair<const Instruction*, std::size_t> DefiningLeaf(const Instruction* x, std::size_t leaf) {
  while (true) {
    if (x->opcode() == Opcode::kTuple) {
      std::size_t first = 0;
      std::size_t k = 0;
      for (; k < x->operand_count(); ++k) {
        const std::size_t n = LeafCount(x->operand(k)->shape());
        if (leaf < first + n) break;
        first += n;
      }
      if (k == x->operand_count()) return {x, leaf};
      leaf -= first;
      x = x->operand(k);
    } else if (x->opcode() == Opcode::kGetTupleElement) {
      leaf += ElementFirstLeaf(x->operand(0)->shape(), x->GetInt("index"));
      x = x->operand(0);
    } else {
      return {x, leaf};
    }
  }
}

// One round of the propagation rules over `x` (the header lists them).
void Propagate(const Instruction* x, HostLeaves& host) {
  switch (x->opcode()) {
    case Opcode::kTuple:
    case Opcode::kOptimizationBarrier: {
      std::size_t first = 0;
      for (const Instruction* operand : x->operands()) {
        const std::size_t n = LeafCount(operand->shape());
        for (std::size_t k = 0; k < n; ++k) host.Same(operand, k, x, first + k);
        first += n;
      }
      return;
    }
    case Opcode::kGetTupleElement: {
      const std::size_t first = ElementFirstLeaf(x->operand(0)->shape(), x->GetInt("index"));
      const std::size_t n = LeafCount(x->shape());
      for (std::size_t k = 0; k < n; ++k) host.Same(x->operand(0), first + k, x, k);
      return;
    }
    case Opcode::kBitcast:
    case Opcode::kAddDependency:
      host.SameAll(x->operand(0), x);
      return;
    case Opcode::kReshape:
      if (IsAliasingReshape(*x)) {
        host.Same(x->operand(0), 0, x, 0);
      } else {
        host.Forward(x->operand(0), 0, x, 0);
      }
      return;
    case Opcode::kCopy:
    case Opcode::kDynamicSlice:
      host.Forward(x->operand(0), 0, x, 0);
      return;
    case Opcode::kDynamicUpdateSlice:
      host.Same(x->operand(0), 0, x, 0);
      host.Forward(x->operand(1), 0, x, 0);
      return;
    case Opcode::kCustomCall:
      if (IsMoveToHost(*x)) host.Mark(x, 0);
      return;
    case Opcode::kWhile: {
      const hlo::Computation& body = *x->GetComputation("body");
      const hlo::Computation& condition = *x->GetComputation("condition");
      const Instruction* init = x->operand(0);
      host.SameAll(x, body.parameters().at(0));
      host.SameAll(x, condition.parameters().at(0));
      host.SameAll(x, body.root());
      host.ForwardAll(init, x);
      // A host state element started by a broadcast: the broadcast is written to host memory.
      const std::size_t n = LeafCount(x->shape());
      for (std::size_t k = 0; k < n; ++k) {
        if (!host.Get(x, k)) continue;
        const auto [source, leaf] = DefiningLeaf(init, k);
        if (source->opcode() == Opcode::kBroadcast) host.Mark(init, k);
      }
      return;
    }
    case Opcode::kCall: {
      const hlo::Computation& callee = *x->GetComputation("to_apply");
      for (std::size_t i = 0; i < x->operand_count() && i < callee.parameters().size(); ++i) {
        host.ForwardAll(x->operand(i), callee.parameters()[i]);
      }
      host.ForwardAll(callee.root(), x);
      return;
    }
    case Opcode::kConditional: {
      const std::vector<hlo::Computation*>* branches = nullptr;
      std::vector<hlo::Computation*> pair;
      if (x->HasAttribute("branch_computations")) {
        branches = &x->GetComputations("branch_computations");
      } else {
        pair = {x->GetComputation("true_computation"), x->GetComputation("false_computation")};
        branches = &pair;
      }
      for (std::size_t i = 0; i < branches->size() && i + 1 < x->operand_count(); ++i) {
        const hlo::Computation& branch = *(*branches)[i];
        if (!branch.parameters().empty()) host.ForwardAll(x->operand(i + 1), branch.parameters()[0]);
        host.ForwardAll(branch.root(), x);
      }
      return;
    }
    default:
      return;
  }
}

// The instructions that only move bytes, the only ones that may touch host memory: which of
// their operands may be host arrays (`host_operands` of them from `first_host_operand`), and
// whether their result may be. Everything else computes, and reads and writes HBM only.
struct ByteMover {
  std::size_t first_host_operand;
  std::size_t host_operands;
  bool may_write_host;
};

constexpr std::size_t kAll = std::numeric_limits<std::size_t>::max();

constexpr std::pair<Opcode, ByteMover> kOpcodeByteMovers[] = {
    {Opcode::kTuple, {0, kAll, true}},
    {Opcode::kGetTupleElement, {0, kAll, true}},
    {Opcode::kBitcast, {0, kAll, true}},
    {Opcode::kReshape, {0, kAll, true}},
    {Opcode::kCopy, {0, kAll, true}},
    {Opcode::kOptimizationBarrier, {0, kAll, true}},
    {Opcode::kAddDependency, {0, 1, true}},
    {Opcode::kWhile, {0, kAll, true}},
    {Opcode::kCall, {0, kAll, true}},
    {Opcode::kConditional, {1, kAll, true}},  // not the branch index
    {Opcode::kDynamicSlice, {0, 1, true}},    // not the start indices
    {Opcode::kDynamicUpdateSlice, {0, 2, true}},
    {Opcode::kParameter, {0, 0, true}},
    {Opcode::kBroadcast, {0, 0, true}},  // the zeros a host buffer starts from (its operand is in HBM)
};
constexpr ByteMover kMoveToHost = {0, kAll, true};
constexpr ByteMover kMoveToDevice = {0, kAll, false};

// What `x` may do with host memory; nullptr if nothing (it computes).
const ByteMover* FindByteMover(const Instruction& x) {
  if (IsMoveToHost(x)) return &kMoveToHost;
  if (IsMoveToDevice(x)) return &kMoveToDevice;
  for (const auto& [opcode, mover] : kOpcodeByteMovers) {
    if (opcode == x.opcode()) return &mover;
  }
  return nullptr;
}

// Whether `x` may read a host array as operand `i`.
bool MayReadHost(const Instruction& x, std::size_t i) {
  const ByteMover* mover = FindByteMover(x);
  return mover != nullptr && i >= mover->first_host_operand && i - mover->first_host_operand < mover->host_operands;
}

// Whether `x` may write its result (or a leaf of it) to host memory.
bool MayWriteHost(const Instruction& x) {
  const ByteMover* mover = FindByteMover(x);
  return mover != nullptr && mover->may_write_host;
}

// The end of both errors: the byte moves that may read host arrays, from the table.
std::string ByteMoversText() {
  std::string names;
  for (const auto& [opcode, mover] : kOpcodeByteMovers) {
    if (mover.host_operands > 0) names += std::string(hlo::OpcodeName(opcode)) + ", ";
  }
  return "only byte moves (" + names + "MoveToHost, MoveToDevice) may touch host memory; MoveToDevice it first";
}

// Grows `host` to its fixed point over every computation.
void PropagateAll(const hlo::Module& module, HostLeaves& host) {
  do {
    for (const auto& computation : module.computations()) {
      for (const auto& x : computation->instructions()) Propagate(x.get(), host);
    }
  } while (host.TakeChanged());
}

int UseCount(const hlo::Computation& computation, const Instruction* value) {
  int count = 0;
  for (const auto& x : computation.instructions()) {
    for (const Instruction* operand : x->operands()) count += operand == value;
  }
  return count;
}

// A broadcast that starts a host loop-state element and is used elsewhere too (Llama: one bf16
// zeros for two stacked activations) gets a clone for that element, as XLA gives each its own
// AllocateBuffer: the loop state then takes its own broadcast's buffer over, instead of copying
// one shared array into each element (and keeping it), and other users keep the original in HBM.
// Returns whether it cloned any.
bool SplitSharedHostBroadcasts(hlo::Module& module, HostLeaves& host) {
  bool cloned = false;
  for (const auto& computation : module.computations()) {
    for (std::size_t index = 0; index < computation->instructions().size(); ++index) {
      Instruction* x = computation->instructions()[index].get();
      if (x->opcode() != Opcode::kWhile || x->operand(0)->opcode() != Opcode::kTuple) continue;
      Instruction* init = x->operand(0);
      std::size_t first = 0;
      for (std::size_t e = 0; e < init->operand_count(); ++e) {
        Instruction* element = init->operand(e);
        const std::size_t leaf = first;
        first += LeafCount(element->shape());
        if (element->opcode() != Opcode::kBroadcast || element->shape().is_tuple || !host.Get(x, leaf) ||
            UseCount(*computation, element) < 2) {
          continue;
        }
        std::string name;
        for (int n = 1; name.empty() || computation->FindInstruction(name) != nullptr; ++n) {
          name = element->name() + ".host" + std::to_string(n);
        }
        auto clone = std::make_unique<Instruction>(name, Opcode::kBroadcast, element->shape());
        clone->set_location(element->location());
        for (Instruction* operand : element->operands()) clone->AddOperand(operand);
        for (const hlo::Attribute& attribute : element->attributes()) clone->AddAttribute(attribute);
        init->ReplaceOperand(e, computation->AddInstruction(std::move(clone)));
        cloned = true;
      }
    }
  }
  return cloned;
}

void Check(const Instruction& x, HostLeaves& host) {
  for (std::size_t i = 0; i < x.operand_count(); ++i) {
    if (!host.AnyHost(x.operand(i)) || MayReadHost(x, i)) continue;
    CannotLower(x, "it computes on '" + x.operand(i)->name() + "' (operand " + std::to_string(i) +
                       "), an array in host memory (S(5)); " + ByteMoversText());
  }
  if (host.AnyHost(&x) && !MayWriteHost(x)) {
    CannotLower(x, "its result is in host memory (S(5)) but it computes it; " + ByteMoversText());
  }
  if (IsMoveToDevice(x) && host.AnyHost(&x)) {
    CannotLower(x, "MoveToDevice's result must be in device memory, but its layout says S(5)");
  }
}

}  // namespace

bool IsMoveToHost(const hlo::Instruction& instruction) { return IsCustomCallTo(instruction, "MoveToHost"); }
bool IsMoveToDevice(const hlo::Instruction& instruction) { return IsCustomCallTo(instruction, "MoveToDevice"); }

bool InHostMemory(const isa::Shape& array) {
  return !array.is_tuple && array.layout && array.layout->memory_space == isa::kMemorySpaceHost;
}

int AssignHostMemorySpace(hlo::Module& module) {
  HostLeaves host;
  // Seeds: arrays whose layout says S(5).
  for (const auto& computation : module.computations()) {
    for (const auto& x : computation->instructions()) {
      isa::Shape shape = x->shape();
      std::vector<isa::Shape*> leaves;
      Leaves(shape, leaves);
      for (std::size_t k = 0; k < leaves.size(); ++k) {
        if (InHostMemory(*leaves[k])) host.Mark(x.get(), k);
      }
    }
  }
  const HostLeaves seeds = host;
  PropagateAll(module, host);
  if (SplitSharedHostBroadcasts(module, host)) {
    // Again from the seeds: an original broadcast left with HBM users only is no host array.
    host = seeds;
    PropagateAll(module, host);
    // The broadcasts it appends are read by instructions written before them.
    for (const auto& computation : module.computations()) computation->OrderOperandsFirst();
  }
  int count = 0;
  for (const auto& computation : module.computations()) {
    for (const auto& x : computation->instructions()) {
      Check(*x, host);
      if (!host.AnyHost(x.get())) continue;
      isa::Shape shape = x->shape();
      std::vector<isa::Shape*> leaves;
      Leaves(shape, leaves);
      for (std::size_t k = 0; k < leaves.size(); ++k) {
        if (!host.Get(x.get(), k)) continue;
        if (!leaves[k]->layout) leaves[k]->layout.emplace();
        leaves[k]->layout->memory_space = isa::kMemorySpaceHost;
        ++count;
      }
      x->set_shape(std::move(shape));
    }
  }
  return count;
}

}  // namespace tpusim::compiler
