#include "compiler/lower/accumulations.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "compiler/hlo/reducer_pattern.h"
#include "compiler/passes/tuple_leaves.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;
using Accumulations = std::vector<Accumulation>;

// Reduce (reduce_kernel.cc, docs/compiler.md "Reduce"): a float add adds in f32 (lanes in
// parallel, then a tree), where the evaluator sums in double and rounds once; a float multiply
// over lanes or sublanes rounds each product in another order (over major dims it multiplies in
// the evaluator's order: exact); max, min and integer ops are exact.
std::optional<Accumulation> ReduceAccumulation(const Instruction& reduce) {
  const std::optional<hlo::ReduceOp> op = hlo::ReducerOpOf(reduce);
  const isa::Shape& operand = reduce.operand(0)->shape();
  if (!op || operand.is_tuple || !isa::IsFloat(operand.element_type)) return std::nullopt;
  int64_t n = 1;
  bool lanes_or_sublanes = false;
  for (int64_t d : reduce.GetIntList("dimensions")) {
    n *= operand.dims.at(d);
    if (d + 2 >= operand.rank()) lanes_or_sublanes = true;
  }
  if (*op == hlo::ReduceOp::kAdd && n > 1) {
    return Accumulation{.kind = Accumulation::Kind::kSum, .depth = n,
                        .source = fmt::format("float add-reduce '{}' of {} elements", reduce.name(), n),
                        .order = "adds in f32 in another order than the evaluator's double sum"};
  }
  if (*op == hlo::ReduceOp::kMultiply && lanes_or_sublanes && n > 1) {
    return Accumulation{.kind = Accumulation::Kind::kProduct, .depth = n,
                        .source = fmt::format("float multiply-reduce '{}' of {} elements", reduce.name(), n),
                        .order = "rounds its products in another order"};
  }
  return std::nullopt;
}

// Batch norm (passes/batch_norm_expansion.h), expanded as XLA's BatchNormExpander writes it:
// training and grad sum each feature's N elements in f32; inference folds scale and shift in f32.
std::optional<Accumulation> BatchNormAccumulation(const Instruction& op) {
  if (op.opcode() == Opcode::kBatchNormInference) {
    return Accumulation{.kind = Accumulation::Kind::kBatchNormInference, .epsilon = op.GetDouble("epsilon"),
                        .source = fmt::format("batch-norm-inference '{}'", op.name()),
                        .order = "folds scale and shift in f32 (XLA's expansion)"};
  }
  if (op.opcode() != Opcode::kBatchNormTraining && op.opcode() != Opcode::kBatchNormGrad) return std::nullopt;
  const isa::Shape& operand = op.operand(0)->shape();
  const int64_t feature = op.GetInt("feature_index");
  int64_t n = 1;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (d != feature) n *= operand.dims.at(d);
  }
  return Accumulation{.kind = Accumulation::Kind::kSum, .depth = std::max<int64_t>(n, 1),
                      .source = fmt::format("{} '{}'", hlo::OpcodeName(op.opcode()), op.name()),
                      .order = fmt::format("sums {} elements per feature in f32 (XLA's expansion) where the evaluator "
                                           "sums in double", n)};
}

// Dots and convolutions (docs/compiler.md, "Dot", "Convolution"): the evaluator adds the K
// products of an output in increasing k into one f32 sum; the MXU kernels add each K block of
// the array's depth in increasing k, then the blocks' sums in order (mxu.pop.acc). A
// convolution's K is its window taps x input features per group.
std::optional<Accumulation> DotAccumulation(const Instruction& x) {
  int64_t k = 1;
  if (x.opcode() == Opcode::kDot) {
    if (const auto* contracting = x.Find<std::vector<int64_t>>("lhs_contracting_dims")) {
      for (int64_t d : *contracting) k *= x.operand(0)->shape().dims.at(d);
    }
  } else {
    const auto& dn = x.GetConvolutionDimensionNumbers();
    const isa::Shape& kernel = x.operand(1)->shape();
    k = kernel.dims.at(dn.kernel_input_feature_dimension);
    for (int64_t d : dn.kernel_spatial_dimensions) k *= kernel.dims.at(d);
  }
  return Accumulation{.kind = Accumulation::Kind::kSum, .depth = k,
                      .source = fmt::format("{} '{}' with K = {}", hlo::OpcodeName(x.opcode()), x.name(), k),
                      .order = "sums its products in MXU blocks, not in XLA's order (docs/compiler.md, Dot and "
                               "Convolution)"};
}

std::optional<Accumulation> OwnAccumulation(const Instruction& x) {
  switch (x.opcode()) {
    case Opcode::kDot:
    case Opcode::kConvolution:
      return DotAccumulation(x);
    case Opcode::kReduce:
      return ReduceAccumulation(x);
    default:
      return BatchNormAccumulation(x);
  }
}

void Merge(Accumulations& into, const Accumulations& from) {
  for (const Accumulation& a : from) {
    if (std::find(into.begin(), into.end(), a) == into.end()) into.push_back(a);
  }
}

// The accumulations of every value: its instruction's own, its operands', and those of every
// instruction of the computations it calls, whose rounding errors flow into it; memoized, walked
// with an explicit stack (a model's chains are thousands deep).
class Dataflow {
 public:
  const Accumulations& Of(const Instruction& value) {
    std::vector<std::pair<const Instruction*, bool>> stack = {{&value, false}};
    while (!stack.empty()) {
      const auto [x, inputs_done] = stack.back();
      if (of_.contains(x)) {
        stack.pop_back();
        continue;
      }
      const std::vector<const Instruction*> inputs = Inputs(*x);
      if (!inputs_done) {
        stack.back().second = true;
        for (const Instruction* input : inputs) {
          if (!of_.contains(input)) stack.emplace_back(input, false);
        }
        continue;
      }
      stack.pop_back();
      Accumulations own;
      if (std::optional<Accumulation> a = OwnAccumulation(*x)) own.push_back(std::move(*a));
      for (const Instruction* input : inputs) Merge(own, of_.at(input));
      of_.emplace(x, std::move(own));
    }
    return of_.at(&value);
  }

 private:
  static std::vector<const Instruction*> Inputs(const Instruction& x) {
    std::vector<const Instruction*> inputs(x.operands().begin(), x.operands().end());
    for (const hlo::Computation* called : x.CalledComputations()) {
      for (const auto& inner : called->instructions()) inputs.push_back(inner.get());
    }
    return inputs;
  }

  std::unordered_map<const Instruction*, Accumulations> of_;
};

// The accumulations of each output leaf of `value`: a tuple instruction's leaves are its
// operands'; any other value's leaves all come from it.
void LeafAccumulations(const Instruction& value, Dataflow& dataflow, std::vector<Accumulations>& out) {
  if (value.opcode() == Opcode::kTuple) {
    for (const Instruction* operand : value.operands()) LeafAccumulations(*operand, dataflow, out);
    return;
  }
  const Accumulations& of = dataflow.Of(value);
  for (const isa::Shape* leaf : ArrayLeaves(value.shape())) {
    if (leaf->element_type != isa::ElementType::kToken) out.push_back(of);
  }
}

}  // namespace

std::vector<std::vector<Accumulation>> OutputAccumulations(const hlo::Module& module) {
  Dataflow dataflow;
  std::vector<Accumulations> out;
  LeafAccumulations(*module.entry()->root(), dataflow, out);
  return out;
}

}  // namespace tpusim::compiler
