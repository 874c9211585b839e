// Which rule infers which opcode. The rules live in one file per op family
// (shape_inference_*.cc, declared in shape_inference_util.h).
#include "compiler/hlo/shape_inference.h"

#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo {

using namespace inference;

namespace {

bool IsAcceptedAsWritten(Opcode opcode) {
  switch (opcode) {
    // Their shape depends on what the text does not say: a target's ABI (custom-call), a
    // reinterpretation of bytes in some layout (bitcast), an FFT's lengths and type (fft), or an
    // operation tpusim does not model yet.
    case Opcode::kCustomCall: case Opcode::kBitcast: case Opcode::kFft: case Opcode::kRaggedAllToAll:
    case Opcode::kRaggedDot: case Opcode::kScaledDot:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool InfersShape(const Instruction& instruction) { return !IsAcceptedAsWritten(instruction.opcode()); }

isa::Shape InferShape(const Instruction& instruction) {
  CheckOperandCount(instruction);
  if (IsAcceptedAsWritten(instruction.opcode())) return Written(instruction);
  switch (instruction.opcode()) {
    case Opcode::kAbs: case Opcode::kCbrt: case Opcode::kCeil: case Opcode::kClz: case Opcode::kCos:
    case Opcode::kErf: case Opcode::kExp: case Opcode::kExpm1: case Opcode::kFloor: case Opcode::kImag:
    case Opcode::kIsFinite: case Opcode::kLog: case Opcode::kLog1p: case Opcode::kLogistic:
    case Opcode::kNegate: case Opcode::kNot: case Opcode::kPopulationCount: case Opcode::kReal:
    case Opcode::kRoundNearestAfz: case Opcode::kRoundNearestEven: case Opcode::kRsqrt: case Opcode::kSign:
    case Opcode::kSin: case Opcode::kSqrt: case Opcode::kTan: case Opcode::kTanh: case Opcode::kCopy:
      return InferUnary(instruction);
    case Opcode::kAdd: case Opcode::kAnd: case Opcode::kAtan2: case Opcode::kComplex: case Opcode::kDivide:
    case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kMultiply: case Opcode::kOr: case Opcode::kPower:
    case Opcode::kRemainder: case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical: case Opcode::kSubtract: case Opcode::kXor:
      return InferBinary(instruction);
    case Opcode::kCompare: return InferCompare(instruction);
    case Opcode::kSelect: return InferSelect(instruction);
    case Opcode::kClamp: return InferClamp(instruction);
    case Opcode::kConvert: return InferConvert(instruction);
    case Opcode::kBitcastConvert: return InferBitcastConvert(instruction);
    case Opcode::kStochasticConvert: return InferStochasticConvert(instruction);
    case Opcode::kReducePrecision: return InferReducePrecision(instruction);
    case Opcode::kMap: return InferMap(instruction);

    case Opcode::kBroadcast: return InferBroadcast(instruction);
    case Opcode::kReshape: return InferReshape(instruction);
    case Opcode::kDynamicReshape: return InferDynamicReshape(instruction);
    case Opcode::kTranspose: return InferTranspose(instruction);
    case Opcode::kSlice: return InferSlice(instruction);
    case Opcode::kDynamicSlice: return InferDynamicSlice(instruction);
    case Opcode::kDynamicUpdateSlice: return InferDynamicUpdateSlice(instruction);
    case Opcode::kConcatenate: return InferConcatenate(instruction);
    case Opcode::kPad: return InferPad(instruction);
    case Opcode::kReverse: return InferReverse(instruction);
    case Opcode::kIota: return InferIota(instruction);
    case Opcode::kGather: return InferGather(instruction);
    case Opcode::kScatter: return InferScatter(instruction);

    case Opcode::kDot: return InferDot(instruction);
    case Opcode::kConvolution: return InferConvolution(instruction);

    case Opcode::kReduce: return InferReduce(instruction);
    case Opcode::kReduceWindow: return InferReduceWindow(instruction);
    case Opcode::kSelectAndScatter: return InferSelectAndScatter(instruction);
    case Opcode::kSort: return InferSort(instruction);
    case Opcode::kTopK: return InferTopK(instruction);
    case Opcode::kBatchNormTraining: case Opcode::kBatchNormInference: case Opcode::kBatchNormGrad:
      return InferBatchNorm(instruction);

    case Opcode::kParameter: return InferParameter(instruction);
    case Opcode::kConstant: return InferConstant(instruction);
    case Opcode::kTuple: return InferTuple(instruction);
    case Opcode::kGetTupleElement: return InferGetTupleElement(instruction);
    case Opcode::kWhile: return InferWhile(instruction);
    case Opcode::kConditional: return InferConditional(instruction);
    case Opcode::kCall: case Opcode::kFusion: return InferCall(instruction);
    case Opcode::kAsyncStart: case Opcode::kAsyncUpdate: case Opcode::kAsyncDone: return InferAsync(instruction);
    // These pass their operand through (opt-barrier a tuple of anything, domain an annotation).
    case Opcode::kOptimizationBarrier: case Opcode::kDomain: return Logical(instruction.operand(0)->shape());

    case Opcode::kAllReduce: case Opcode::kAllReduceStart: return InferAllReduce(instruction);
    case Opcode::kAllGather: case Opcode::kAllGatherStart: return InferAllGather(instruction);
    case Opcode::kReduceScatter: return InferReduceScatter(instruction);
    case Opcode::kAllToAll: return InferAllToAll(instruction);
    case Opcode::kCollectivePermute: case Opcode::kCollectivePermuteStart: return InferCollectivePermute(instruction);
    case Opcode::kAllReduceDone: case Opcode::kAllGatherDone: case Opcode::kCollectivePermuteDone:
      return InferCollectiveDone(instruction);
    case Opcode::kCollectiveBroadcast: return InferAllToAll(instruction);  // same rule: operands unchanged
    case Opcode::kReplicaId: case Opcode::kPartitionId: return Scalar(isa::ElementType::kU32);

    case Opcode::kAfterAll: return InferAfterAll(instruction);
    case Opcode::kAddDependency: return InferAddDependency(instruction);
    case Opcode::kInfeed: return InferInfeed(instruction);
    case Opcode::kOutfeed: return InferOutfeed(instruction);
    case Opcode::kSend: return InferSend(instruction);
    case Opcode::kSendDone: return InferSendDone(instruction);
    case Opcode::kRecv: return InferRecv(instruction);
    case Opcode::kRecvDone: return InferRecvDone(instruction);
    case Opcode::kCopyStart: return InferCopyStart(instruction);
    case Opcode::kCopyDone: return InferCopyDone(instruction);
    case Opcode::kRng: return InferRng(instruction);
    case Opcode::kRngBitGenerator: return InferRngBitGenerator(instruction);
    case Opcode::kRngGetAndUpdateState: return Array(isa::ElementType::kU64, {2});
    case Opcode::kGetDimensionSize: return InferGetDimensionSize(instruction);
    case Opcode::kSetDimensionSize: return InferSetDimensionSize(instruction);
    case Opcode::kCholesky: return InferCholesky(instruction);
    case Opcode::kTriangularSolve: return InferTriangularSolve(instruction);

    case Opcode::kCustomCall: case Opcode::kBitcast: case Opcode::kFft: case Opcode::kRaggedAllToAll:
    case Opcode::kRaggedDot: case Opcode::kScaledDot:
      break;  // accepted as written, above
  }
  return Written(instruction);
}

bool SameShapeIgnoringLayout(const isa::Shape& a, const isa::Shape& b) {
  if (a.is_tuple || b.is_tuple) {
    if (a.is_tuple != b.is_tuple || a.tuple_shapes.size() != b.tuple_shapes.size()) return false;
    for (std::size_t i = 0; i < a.tuple_shapes.size(); ++i) {
      if (!SameShapeIgnoringLayout(a.tuple_shapes[i], b.tuple_shapes[i])) return false;
    }
    return true;
  }
  if (a.element_type != b.element_type || a.dims.size() != b.dims.size()) return false;
  for (std::size_t i = 0; i < a.dims.size(); ++i) {
    const bool unbounded = a.dims[i] == isa::kUnboundedSize || b.dims[i] == isa::kUnboundedSize;
    if (!unbounded && a.dims[i] != b.dims[i]) return false;
  }
  return true;
}

std::string ShapeToStringWithoutLayout(const isa::Shape& shape) {
  if (shape.is_tuple) {
    std::string out = "(";
    for (std::size_t i = 0; i < shape.tuple_shapes.size(); ++i) {
      if (i > 0) out += ", ";
      out += ShapeToStringWithoutLayout(shape.tuple_shapes[i]);
    }
    return out + ")";
  }
  isa::Shape array = shape;
  array.layout.reset();
  return isa::ToString(array);
}

}  // namespace tpusim::hlo
