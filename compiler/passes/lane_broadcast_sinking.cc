#include "compiler/passes/lane_broadcast_sinking.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

// Operations a chain holds at most: each is a vector register and a few operations per strip.
constexpr int kMaxChainOperations = 8;

bool IsChainType(isa::ElementType type) { return type == isa::ElementType::kF32 || type == isa::ElementType::kBF16; }

// A scalar spread to an array: broadcast(s) of a rank-0 s, which the chain re-broadcasts.
bool IsScalarBroadcast(const Instruction& x) {
  return x.opcode() == Opcode::kBroadcast && x.operand_count() == 1 && x.operand(0)->shape().rank() == 0;
}

// What a broadcast of the chain's top rewrites: its operations, its leaves (the row values), and
// where each leaf's dims go in the broadcast's result.
class Chain {
 public:
  explicit Chain(const Instruction& broadcast) : broadcast_(broadcast) {}

  // Whether the broadcast spreads a chain of at least one operation along its result's lanes (or,
  // a chain of cheap operations, along any dims), and every leaf can be broadcast to its dims
  // directly.
  bool Applies() {
    const isa::Shape& result = broadcast_.shape();
    if (result.is_tuple || result.rank() < 2 || broadcast_.operand_count() != 1) return false;
    if (result.layout && !result.layout->tiles.empty()) return false;
    const std::vector<int64_t> dims = broadcast_.GetIntListOrEmpty("dimensions");
    const int64_t minor = result.layout ? result.layout->minor_to_major.at(0) : result.rank() - 1;
    const bool along_lanes = result.dims[static_cast<std::size_t>(minor)] != 1 &&
                             std::find(dims.begin(), dims.end(), minor) == dims.end();
    const Instruction& top = *broadcast_.operand(0);
    if (top.shape().is_tuple || top.shape().rank() == 0) return false;
    row_dims_ = isa::DimsWithoutOnes(top.shape().dims);
    // The result dims the operand's non-1 dims go to, in order.
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (top.shape().dims[i] != 1) targets_.push_back(dims[i]);
    }
    // Spread along rows or major dims, the chain is computed for every tile, not once a strip:
    // only operations XLA's fusion would duplicate too (a norm's `scale + 1` for its 11 rows).
    return Visit(top) && operations_ > 0 && (along_lanes || !expensive_);
  }

  // The chain over broadcasts of its leaves, on the broadcast's dims.
  Instruction* Build() { return Build(*broadcast_.operand(0)); }

 private:
  bool Visit(const Instruction& x) {
    if (x.shape().is_tuple || isa::DimsWithoutOnes(x.shape().dims) != row_dims_) return false;
    if (x.opcode() == Opcode::kReshape) return Visit(*x.operand(0));
    if (!IsElementwiseOpcode(x.opcode()) || x.opcode() == Opcode::kRng) return LeafDims(x).has_value();
    if (!IsChainType(x.shape().element_type) || ++operations_ > kMaxChainOperations) return false;
    expensive_ = expensive_ || IsExpensive(x);
    for (const Instruction* operand : x.operands()) {
      if (!IsScalarBroadcast(*operand) && !Visit(*operand)) return false;
    }
    return true;
  }

  // The broadcast dims of a leaf: its non-1 dims to the targets in order, each size-1 dim to an
  // unused size-1 dim of the result between them (a leaf is not reshaped: its tiles could differ).
  std::optional<std::vector<int64_t>> LeafDims(const Instruction& leaf) const {
    if (!IsChainType(leaf.shape().element_type)) return std::nullopt;
    const std::vector<int64_t>& result = broadcast_.shape().dims;
    std::vector<int64_t> dims;
    std::size_t next_target = 0;
    int64_t previous = -1;
    for (int64_t size : leaf.shape().dims) {
      if (size != 1) {
        dims.push_back(targets_.at(next_target++));
      } else {
        const int64_t bound =
            next_target < targets_.size() ? targets_[next_target] : static_cast<int64_t>(result.size());
        int64_t d = previous + 1;
        while (d < bound && (result[static_cast<std::size_t>(d)] != 1 ||
                             std::find(targets_.begin(), targets_.end(), d) != targets_.end())) {
          ++d;
        }
        if (d >= bound) return std::nullopt;
        dims.push_back(d);
      }
      if (dims.back() <= previous) return std::nullopt;
      previous = dims.back();
    }
    return dims;
  }

  isa::Shape ResultShape(isa::ElementType type) const {
    isa::Shape shape = broadcast_.shape();
    shape.element_type = type;
    return shape;
  }

  Instruction* Spread(Instruction& source, std::vector<int64_t> dims, const std::string& name) {
    Instruction* spread =
        AddInstructionFor(broadcast_, name, Opcode::kBroadcast, ResultShape(source.shape().element_type));
    spread->AddOperand(&source);
    spread->AddAttribute({"dimensions", std::move(dims), {}});
    return spread;
  }

  Instruction* Build(Instruction& x) {
    if (x.opcode() == Opcode::kReshape) return Build(*x.operand(0));
    const std::string name = broadcast_.name() + "." + x.name();
    if (!IsElementwiseOpcode(x.opcode()) || x.opcode() == Opcode::kRng) return Spread(x, *LeafDims(x), name);
    Instruction* op = AddInstructionFor(broadcast_, name, x.opcode(), ResultShape(x.shape().element_type));
    for (Instruction* operand : x.operands()) {
      op->AddOperand(IsScalarBroadcast(*operand) ? Spread(*operand->operand(0), {}, name + ".scalar")
                                                 : Build(*operand));
    }
    for (const hlo::Attribute& attribute : x.attributes()) op->AddAttribute(attribute);
    return op;
  }

  const Instruction& broadcast_;
  std::vector<int64_t> row_dims_;  // the chain's non-1 dims
  std::vector<int64_t> targets_;   // the result dims they go to
  int operations_ = 0;
  bool expensive_ = false;  // a transcendental or a divide in the chain (IsExpensive)
};

}  // namespace

void SinkLaneBroadcasts(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    std::vector<std::pair<Instruction*, Chain>> sunk;
    for (const auto& x : computation->instructions()) {
      if (x->opcode() != Opcode::kBroadcast) continue;
      Chain chain(*x);
      if (chain.Applies()) sunk.emplace_back(x.get(), std::move(chain));
    }
    if (sunk.empty()) continue;
    std::vector<Instruction*> chains;
    for (auto& [x, chain] : sunk) {
      computation->ReplaceUses(x, chain.Build());
      chains.push_back(x->operand(0));
      computation->RemoveInstruction(x);
    }
    // What only the chains read goes too (a row statistic's own kernel).
    RemoveUnread(*computation, std::move(chains), [](const Instruction& x) {
      return x.opcode() == Opcode::kReshape || x.opcode() == Opcode::kBroadcast || x.opcode() == Opcode::kConstant ||
             (IsElementwiseOpcode(x.opcode()) && x.opcode() != Opcode::kRng);
    });
    computation->OrderOperandsFirst();
  }
}

}  // namespace tpusim::compiler
