#include "compiler/lower/cost.h"

#include <algorithm>

#include "compiler/lower/array_view.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/dot_output_fusion.h"

namespace tpusim::compiler {
using hlo::Opcode;

bool IsTranscendental(Opcode opcode) {
  switch (opcode) {
    case Opcode::kExp: case Opcode::kExpm1: case Opcode::kLog: case Opcode::kLog1p: case Opcode::kRsqrt:
    case Opcode::kSqrt: case Opcode::kCbrt: case Opcode::kTanh: case Opcode::kLogistic: case Opcode::kSin:
    case Opcode::kCos: case Opcode::kTan: case Opcode::kPower: case Opcode::kAtan2: case Opcode::kErf:
      return true;
    default:
      return false;
  }
}

namespace {

double ElementwiseFlops(const hlo::Instruction& instruction) {
  if (IsTranscendental(instruction.opcode()) || instruction.opcode() == Opcode::kConvert ||
      !IsElementwiseOpcode(instruction.opcode()) || instruction.shape().is_tuple) {
    return 0;
  }
  int64_t elements = 1;
  for (int64_t d : instruction.shape().dims) elements *= d;
  return static_cast<double>(elements);
}

double DotFlops(const hlo::Instruction& dot) {
  // 2 x (result elements) x (contracted elements).
  int64_t result = 1;
  for (int64_t d : dot.shape().dims) result *= d;
  int64_t contracted = 1;
  if (const auto* dims = dot.Find<std::vector<int64_t>>("lhs_contracting_dims")) {
    for (int64_t d : *dims) contracted *= dot.operand(0)->shape().dims.at(d);
  }
  return 2.0 * static_cast<double>(result) * static_cast<double>(contracted);
}

// 2 x (output elements) x (kernel elements per output feature): each output element is a sum
// over the kernel's window and the input features of its group (XLA's HloCostAnalysis, ignoring
// the taps that fall on padding, as it does).
double ConvolutionFlops(const hlo::Instruction& convolution) {
  const hlo::ConvolutionDimensionNumbers& dims = convolution.GetConvolutionDimensionNumbers();
  const isa::Shape& kernel = convolution.operand(1)->shape();
  double output = 1;
  for (int64_t d : convolution.shape().dims) output *= static_cast<double>(d);
  double kernel_elements = 1;
  for (int64_t d : kernel.dims) kernel_elements *= static_cast<double>(d);
  const double output_features = static_cast<double>(kernel.dims.at(dims.kernel_output_feature_dimension));
  return 2.0 * output * kernel_elements / output_features;
}

}  // namespace

uint64_t LogicalBytes(const isa::Shape& shape) {
  if (shape.is_tuple) {
    uint64_t total = 0;
    for (const isa::Shape& element : shape.tuple_shapes) total += LogicalBytes(element);
    return total;
  }
  if (shape.element_type == isa::ElementType::kToken || !isa::IsSupported(shape.element_type)) return 0;
  uint64_t elements = 1;
  for (int64_t d : shape.dims) elements *= static_cast<uint64_t>(d);
  return elements * static_cast<uint64_t>(isa::ElementBitWidth(shape.element_type)) / 8;
}

KernelCost CostOf(const hlo::Instruction& instruction) {
  KernelCost cost;
  cost.bytes_accessed = LogicalBytes(instruction.shape());
  for (const hlo::Instruction* operand : instruction.operands()) cost.bytes_accessed += LogicalBytes(operand->shape());
  switch (instruction.opcode()) {
    case Opcode::kFusion: {
      const hlo::Computation* fused = instruction.GetComputation("calls");
      bool has_dot = false;
      for (const auto& inner : fused->instructions()) {
        if (inner->opcode() == Opcode::kDot) {
          cost.flops += DotFlops(*inner);
          has_dot = true;
        } else if (inner->opcode() == Opcode::kConvolution) {
          cost.flops += ConvolutionFlops(*inner);
          has_dot = true;
        } else {
          cost.flops += ElementwiseFlops(*inner);
        }
      }
      cost.category = has_dot ? "convolution fusion" : "loop fusion";
      break;
    }
    case Opcode::kDot:
    case Opcode::kConvolution:
      cost.flops = instruction.opcode() == Opcode::kDot ? DotFlops(instruction) : ConvolutionFlops(instruction);
      cost.category = "convolution";
      break;
    case Opcode::kCopy:
    case Opcode::kTranspose:
    case Opcode::kReshape:
    case Opcode::kBroadcast:
    case Opcode::kSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kReverse:
    case Opcode::kIota:
      cost.category = "data formatting";
      break;
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
      cost.category = "reduction";
      break;
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kCollectivePermute:
      cost.category = "collective";  // the XLA profiler's category for cross-device ops
      break;
    default:
      cost.flops = ElementwiseFlops(instruction);
      cost.category = IsElementwiseOpcode(instruction.opcode()) ? "non-fusion elementwise" : "other";
      break;
  }
  return cost;
}

KernelCost CostOf(const KernelGroup& group) {
  if (!group.fused()) return CostOf(*group.root);
  KernelCost cost;
  // A reduce with its operand's element-wise producers (XLA's input fusion) is a reduction; a dot
  // with its element-wise consumers (output fusion), as XLA's profiler names it, a convolution
  // fusion.
  const hlo::Instruction* dot = FusedContraction(group);
  cost.category = group.root->opcode() == Opcode::kReduce ? "reduction" : dot != nullptr ? "convolution fusion" : "loop fusion";
  cost.bytes_accessed = LogicalBytes(group.root->shape());
  for (const hlo::Instruction* operand : group.operands) {
    // An operand read only through array views (compiler/lower/array_view.h): the boxes they read.
    uint64_t viewed = 0;
    bool only_viewed = true;
    for (const hlo::Instruction* member : group.members) {
      const auto& reads = member->operands();
      if (std::find(reads.begin(), reads.end(), operand) == reads.end()) continue;
      if (IsArrayViewStep(*member)) {
        viewed += LogicalBytes(member->shape());
      } else {
        only_viewed = false;
      }
    }
    cost.bytes_accessed += only_viewed ? std::min(viewed, LogicalBytes(operand->shape())) : LogicalBytes(operand->shape());
  }
  for (const hlo::Instruction* member : group.members) {
    cost.flops += member != dot                             ? ElementwiseFlops(*member)
                  : member->opcode() == Opcode::kDot ? DotFlops(*member)
                                                     : ConvolutionFlops(*member);
  }
  return cost;
}

}  // namespace tpusim::compiler
