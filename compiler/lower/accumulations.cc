#include "compiler/lower/accumulations.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_set>

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

// The instructions whose rounding errors flow into a value: its operands, and every instruction
// of the computations it calls.
std::vector<const Instruction*> Inputs(const Instruction& x) {
  std::vector<const Instruction*> inputs(x.operands().begin(), x.operands().end());
  for (const hlo::Computation* called : x.CalledComputations()) {
    for (const auto& inner : called->instructions()) inputs.push_back(inner.get());
  }
  return inputs;
}

// The accumulations of `value`: its instruction's own, then its inputs' in order, depth first,
// each once. One walk with an explicit stack (a model's chains are thousands deep) that visits
// each instruction once; until 2026-11-28 every value kept a merged copy of its inputs' lists,
// hundreds long downstream of a model's dots (Gemma 3's 26 layers), which took most of a second.
Accumulations AccumulationsOf(const Instruction& value) {
  Accumulations out;
  std::unordered_set<const Instruction*> visited;
  std::vector<const Instruction*> stack = {&value};
  while (!stack.empty()) {
    const Instruction* x = stack.back();
    stack.pop_back();
    if (!visited.insert(x).second) continue;
    if (std::optional<Accumulation> a = OwnAccumulation(*x); a && std::find(out.begin(), out.end(), *a) == out.end()) {
      out.push_back(std::move(*a));
    }
    const std::vector<const Instruction*> inputs = Inputs(*x);
    for (auto input = inputs.rbegin(); input != inputs.rend(); ++input) {
      if (!visited.contains(*input)) stack.push_back(*input);
    }
  }
  return out;
}

// The accumulations of each output leaf of `value`: a tuple instruction's leaves are its
// operands'; any other value's leaves all come from it.
void LeafAccumulations(const Instruction& value, std::vector<Accumulations>& out) {
  if (value.opcode() == Opcode::kTuple) {
    for (const Instruction* operand : value.operands()) LeafAccumulations(*operand, out);
    return;
  }
  const Accumulations of = AccumulationsOf(value);
  for (const isa::Shape* leaf : ArrayLeaves(value.shape())) {
    if (leaf->element_type != isa::ElementType::kToken) out.push_back(of);
  }
}

}  // namespace

std::vector<std::vector<Accumulation>> OutputAccumulations(const hlo::Module& module) {
  std::vector<Accumulations> out;
  LeafAccumulations(*module.entry()->root(), out);
  return out;
}

}  // namespace tpusim::compiler
