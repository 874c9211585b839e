// One instruction on one device: the mapping from an HLO instruction's operands and attributes to
// the kernels of this folder. Control flow and collectives are in evaluator.cc and
// collective_ops.cc.
#include <optional>
#include <string>

#include "compiler/eval/batch_norm.h"
#include "compiler/eval/compare.h"
#include "compiler/eval/convert_ops.h"
#include "compiler/eval/convolution.h"
#include "compiler/eval/dot.h"
#include "compiler/eval/elementwise.h"
#include "compiler/eval/evaluator_impl.h"
#include "compiler/eval/gather_scatter.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/reduce.h"
#include "compiler/eval/reduce_window.h"
#include "compiler/eval/rng.h"
#include "compiler/eval/shape_ops.h"
#include "compiler/eval/sort.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;
using Operands = std::span<const Literal* const>;

std::vector<int64_t> IntsOr(const Instruction& instruction, std::string_view name) {
  const auto* values = instruction.Find<std::vector<int64_t>>(name);
  return values ? *values : std::vector<int64_t>{};
}

std::vector<Literal> Values(Operands operands, std::size_t begin, std::size_t end) {
  std::vector<Literal> values;
  for (std::size_t i = begin; i < end; ++i) values.push_back(*operands[i]);
  return values;
}

std::vector<int64_t> ScalarInts(Operands operands, std::size_t begin) {
  std::vector<int64_t> values;
  for (std::size_t i = begin; i < operands.size(); ++i) values.push_back(operands[i]->GetInt(0));
  return values;
}

std::vector<WindowDimension> WindowOf(const Instruction& instruction, std::size_t rank) {
  std::vector<WindowDimension> window;
  const auto* written = instruction.Find<hlo::Window>("window");
  if (!written) return std::vector<WindowDimension>(rank);  // no window: size 1, stride 1
  for (const hlo::WindowDimension& d : written->dimensions) {
    window.push_back({d.size, d.stride, d.padding_low, d.padding_high, d.lhs_dilation,
                      d.rhs_dilation, d.reversal});
  }
  return window;
}

ConvolutionDimensions ConvolutionDimensionsOf(const Instruction& instruction) {
  const hlo::ConvolutionDimensionNumbers& n = instruction.GetConvolutionDimensionNumbers();
  return {n.input_batch_dimension,          n.input_feature_dimension,
          n.input_spatial_dimensions,       n.kernel_input_feature_dimension,
          n.kernel_output_feature_dimension, n.kernel_spatial_dimensions,
          n.output_batch_dimension,         n.output_feature_dimension,
          n.output_spatial_dimensions};
}

GatherDimensions GatherDimensionsOf(const Instruction& instruction) {
  return {IntsOr(instruction, "offset_dims"),
          IntsOr(instruction, "collapsed_slice_dims"),
          IntsOr(instruction, "start_index_map"),
          instruction.GetInt("index_vector_dim"),
          IntsOr(instruction, "operand_batching_dims"),
          IntsOr(instruction, "start_indices_batching_dims")};
}

ScatterDimensions ScatterDimensionsOf(const Instruction& instruction) {
  return {IntsOr(instruction, "update_window_dims"),
          IntsOr(instruction, "inserted_window_dims"),
          IntsOr(instruction, "scatter_dims_to_operand_dims"),
          instruction.GetInt("index_vector_dim"),
          IntsOr(instruction, "input_batching_dims"),
          IntsOr(instruction, "scatter_indices_batching_dims")};
}

Literal ConstantValue(const Instruction& instruction) {
  switch (instruction.constant_form()) {
    case hlo::ConstantForm::kLiteral:
      return *instruction.literal();
    case hlo::ConstantForm::kElided:
      // XLA's parser fills an elided `{...}` with arbitrary values; zeros are reproducible.
      return Literal(instruction.shape());
    case hlo::ConstantForm::kText:
      break;
  }
  FailAt(instruction, "a constant of " + isa::ToString(instruction.shape()) +
                          " cannot be evaluated (its element type is not supported)");
}

Literal DotOf(const Instruction& instruction, Operands operands) {
  const DotDimensions dims{IntsOr(instruction, "lhs_batch_dims"), IntsOr(instruction, "rhs_batch_dims"),
                           IntsOr(instruction, "lhs_contracting_dims"),
                           IntsOr(instruction, "rhs_contracting_dims")};
  return Dot(*operands[0], *operands[1], dims, instruction.shape().element_type);
}

Literal ConvolutionOf(const Instruction& instruction, Operands operands) {
  const ConvolutionDimensions dims = ConvolutionDimensionsOf(instruction);
  return Convolution(*operands[0], *operands[1], WindowOf(instruction, dims.input_spatial_dims.size()),
                     dims, instruction.GetInt("feature_group_count", 1),
                     instruction.GetInt("batch_group_count", 1), instruction.shape().element_type);
}

Literal PadOf(const Instruction& instruction, Operands operands) {
  std::vector<PadDimension> padding;
  for (const hlo::PaddingDimension& d : instruction.GetPaddingConfig().dimensions) {
    padding.push_back({d.low, d.high, d.interior});
  }
  return Pad(*operands[0], *operands[1], padding);
}

Literal SliceOf(const Instruction& instruction, Operands operands) {
  std::vector<int64_t> starts, limits, strides;
  for (const hlo::SliceDimension& d : instruction.GetSlice()) {
    starts.push_back(d.start);
    limits.push_back(d.limit);
    strides.push_back(d.stride);
  }
  return Slice(*operands[0], starts, limits, strides);
}

Literal RngOf(const Instruction& instruction, Operands operands, std::mt19937_64& engine) {
  const std::string& distribution = instruction.GetIdentifier("distribution");
  const std::vector<int64_t>& dims = instruction.shape().dims;
  if (distribution == "rng_uniform") return RngUniform(*operands[0], *operands[1], dims, engine);
  if (distribution == "rng_normal") return RngNormal(*operands[0], *operands[1], dims, engine);
  FailAt(instruction, "unknown rng distribution '" + distribution + "'");
}

Literal InfeedOf(const Instruction& instruction, std::deque<Literal>& queue) {
  if (queue.empty()) FailAt(instruction, "infeed has no data left (give the evaluator infeed values)");
  Literal value(instruction.shape());  // (data, token)
  value.mutable_elements().at(0) = std::move(queue.front());
  queue.pop_front();
  if (!(value.elements()[0].shape().dims == instruction.shape().tuple_shapes.at(0).dims)) {
    FailAt(instruction, "the infeed value has shape " + isa::ToString(value.elements()[0].shape()));
  }
  return value;
}

}  // namespace

Literal EvaluatorImpl::EvaluateOnDevice(const Instruction& instruction, Operands operands,
                                        int64_t device) {
  const isa::Shape& shape = instruction.shape();
  const Opcode opcode = instruction.opcode();
  if (auto unary = ParseUnaryOp(hlo::OpcodeName(opcode))) return Unary(*unary, *operands[0]);
  if (auto binary = ParseBinaryOp(hlo::OpcodeName(opcode))) {
    return Binary(*binary, *operands[0], *operands[1]);
  }
  switch (opcode) {
    case Opcode::kConstant:
      return ConstantValue(instruction);
    case Opcode::kIota:
      return Iota(shape.element_type, shape.dims, instruction.GetInt("iota_dimension"));
    case Opcode::kCompare: {
      std::optional<CompareType> type;
      if (instruction.HasAttribute("type")) type = ParseCompareType(instruction.GetIdentifier("type"));
      const auto direction = ParseCompareDirection(instruction.GetIdentifier("direction"));
      if (!direction) FailAt(instruction, "unknown comparison direction");
      return Compare(*operands[0], *operands[1], *direction, type);
    }
    case Opcode::kSelect:
      return Select(*operands[0], *operands[1], *operands[2]);
    case Opcode::kClamp:
      return Clamp(*operands[0], *operands[1], *operands[2]);
    case Opcode::kConvert:
      return Convert(*operands[0], shape.element_type);
    case Opcode::kBitcastConvert:
      return BitcastConvert(*operands[0], shape.element_type);
    case Opcode::kReducePrecision:
      return ReducePrecision(*operands[0], static_cast<int>(instruction.GetInt("exponent_bits")),
                             static_cast<int>(instruction.GetInt("mantissa_bits")));
    case Opcode::kBroadcast:
      return Broadcast(*operands[0], shape.dims, IntsOr(instruction, "dimensions"));
    case Opcode::kReshape:
      return Reshape(*operands[0], shape.dims);
    case Opcode::kBitcast:
      // Without layout assignment a bitcast of the same element type is a reshape.
      if (operands[0]->element_type() != shape.element_type) {
        FailAt(instruction, "a bitcast that changes the element type is not supported; use bitcast-convert");
      }
      return Reshape(*operands[0], shape.dims);
    case Opcode::kTranspose:
      return Transpose(*operands[0], instruction.GetIntList("dimensions"));
    case Opcode::kReverse:
      return Reverse(*operands[0], instruction.GetIntList("dimensions"));
    case Opcode::kSlice:
      return SliceOf(instruction, operands);
    case Opcode::kDynamicSlice:
      return DynamicSlice(*operands[0], ScalarInts(operands, 1), instruction.GetIntList("dynamic_slice_sizes"));
    case Opcode::kDynamicUpdateSlice:
      return DynamicUpdateSlice(*operands[0], *operands[1], ScalarInts(operands, 2));
    case Opcode::kConcatenate:
      return Concatenate(Values(operands, 0, operands.size()), instruction.GetIntList("dimensions").at(0));
    case Opcode::kPad:
      return PadOf(instruction, operands);
    case Opcode::kCopy:
      return Copy(*operands[0]);
    case Opcode::kCopyStart: {  // (destination, source, context)
      Literal start(shape);
      start.mutable_elements().at(0) = *operands[0];
      start.mutable_elements().at(1) = *operands[0];
      return start;
    }
    case Opcode::kCopyDone:
      return operands[0]->elements().at(0);
    case Opcode::kTuple:
      return Literal::Tuple(Values(operands, 0, operands.size()));
    case Opcode::kGetTupleElement:
      return operands[0]->elements().at(instruction.GetInt("index"));
    case Opcode::kDot:
      return DotOf(instruction, operands);
    case Opcode::kConvolution:
      return ConvolutionOf(instruction, operands);
    case Opcode::kReduce: {
      const std::size_t n = operands.size() / 2;
      return Reduce(Values(operands, 0, n), Values(operands, n, 2 * n),
                    instruction.GetIntList("dimensions"),
                    ReducerFor(*instruction.GetComputation("to_apply")));
    }
    case Opcode::kReduceWindow: {
      const std::size_t n = operands.size() / 2;
      return ReduceWindow(Values(operands, 0, n), Values(operands, n, 2 * n),
                          WindowOf(instruction, operands[0]->dims().size()),
                          ReducerFor(*instruction.GetComputation("to_apply")));
    }
    case Opcode::kSelectAndScatter:
      return SelectAndScatter(*operands[0], *operands[1], *operands[2],
                              WindowOf(instruction, operands[0]->dims().size()),
                              ComparatorFor(*instruction.GetComputation("select")),
                              ReducerFor(*instruction.GetComputation("scatter")));
    case Opcode::kMap:
      return Map(Values(operands, 0, operands.size()),
                 FunctionFor(*instruction.GetComputation("to_apply")), shape.element_type);
    case Opcode::kSort:
      return Sort(Values(operands, 0, operands.size()), instruction.GetIntList("dimensions").at(0),
                  ComparatorFor(*instruction.GetComputation("to_apply")),
                  instruction.GetBool("is_stable", false));
    case Opcode::kTopK:
      return TopK(*operands[0], instruction.GetInt("k"), instruction.GetBool("largest", true));
    case Opcode::kGather:
      return Gather(*operands[0], *operands[1], GatherDimensionsOf(instruction),
                    instruction.GetIntList("slice_sizes"));
    case Opcode::kScatter: {
      const std::size_t n = (operands.size() - 1) / 2;
      return Scatter(Values(operands, 0, n), *operands[n], Values(operands, n + 1, 2 * n + 1),
                     ScatterDimensionsOf(instruction),
                     ReducerFor(*instruction.GetComputation("to_apply")));
    }
    case Opcode::kRng:
      return RngOf(instruction, operands, rng_);
    case Opcode::kBatchNormTraining:
      return BatchNormTraining(*operands[0], *operands[1], *operands[2],
                               static_cast<float>(instruction.GetDouble("epsilon")),
                               instruction.GetInt("feature_index"));
    case Opcode::kBatchNormInference:
      return BatchNormInference(*operands[0], *operands[1], *operands[2], *operands[3], *operands[4],
                                static_cast<float>(instruction.GetDouble("epsilon")),
                                instruction.GetInt("feature_index"));
    case Opcode::kBatchNormGrad:
      return BatchNormGrad(*operands[0], *operands[1], *operands[2], *operands[3], *operands[4],
                           static_cast<float>(instruction.GetDouble("epsilon")),
                           instruction.GetInt("feature_index"));
    case Opcode::kReplicaId:
      return ScalarInt(isa::ElementType::kU32, device / num_partitions_);
    case Opcode::kPartitionId:
      return ScalarInt(isa::ElementType::kU32, device % num_partitions_);
    case Opcode::kAfterAll:
      return Literal(shape);
    case Opcode::kAddDependency: case Opcode::kOptimizationBarrier: case Opcode::kDomain:
    case Opcode::kSetDimensionSize:
      return *operands[0];
    case Opcode::kGetDimensionSize:
      return ScalarInt(isa::ElementType::kS32,
                       operands[0]->dims().at(instruction.GetIntList("dimensions").at(0)));
    case Opcode::kInfeed:
      return InfeedOf(instruction, options_.infeed);
    case Opcode::kOutfeed:
      if (device == 0) outfeed_.push_back(*operands[0]);
      return Literal(shape);
    case Opcode::kCustomCall:
      return EvaluateCustomCall(instruction, operands);
    default:
      FailAt(instruction, "the evaluator does not support '" + std::string(hlo::OpcodeName(opcode)) + "'");
  }
}

}  // namespace tpusim::eval
