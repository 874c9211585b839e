#include "compiler/hlo/shape_inference_util.h"

#include <algorithm>

#include "compiler/hlo/shape_inference.h"
#include "isa/error.h"

namespace tpusim::hlo::inference {

using isa::ElementType;
using isa::Shape;

// ---- failing ----------------------------------------------------------------------------------

void Fail(const Instruction& instruction, const std::string& message) {
  throw Error(instruction.Describe() + ": " + message);
}

std::string Str(const Shape& shape) { return ShapeToStringWithoutLayout(shape); }

std::string Str(const std::vector<int64_t>& values) { return IntListToString(values); }

std::string Quote(std::string_view name) { return "'" + std::string(name) + "'"; }

// ---- building shapes --------------------------------------------------------------------------

Shape Array(ElementType type, std::vector<int64_t> dims) { return Shape::Array(type, std::move(dims)); }

Shape Scalar(ElementType type) { return Shape::Array(type, {}); }

Shape Logical(const Shape& shape) {
  if (!shape.is_tuple) return Shape::Array(shape.element_type, shape.dims);
  std::vector<Shape> elements;
  elements.reserve(shape.tuple_shapes.size());
  for (const Shape& element : shape.tuple_shapes) elements.push_back(Logical(element));
  return Shape::Tuple(std::move(elements));
}

Shape Written(const Instruction& instruction) { return Logical(instruction.shape()); }

// ---- operands ---------------------------------------------------------------------------------

namespace {

// How many operands an opcode takes: at least `min`, at most `max` (-1: no limit), and, for the
// variadic ops that pair inputs with init values, an even or odd count.
struct OperandCount {
  int64_t min = 0;
  int64_t max = -1;
  enum Parity { kAny, kEven, kOdd } parity = kAny;
};

OperandCount Exactly(int64_t n) { return {n, n}; }
OperandCount AtLeast(int64_t n) { return {n, -1}; }

OperandCount ExpectedOperandCount(Opcode opcode) {
  switch (opcode) {
    case Opcode::kConstant: case Opcode::kParameter: case Opcode::kIota: case Opcode::kReplicaId:
    case Opcode::kPartitionId: case Opcode::kRngGetAndUpdateState:
      return Exactly(0);
    case Opcode::kAbs: case Opcode::kCbrt: case Opcode::kCeil: case Opcode::kClz: case Opcode::kCos:
    case Opcode::kErf: case Opcode::kExp: case Opcode::kExpm1: case Opcode::kFloor: case Opcode::kImag:
    case Opcode::kIsFinite: case Opcode::kLog: case Opcode::kLog1p: case Opcode::kLogistic:
    case Opcode::kNegate: case Opcode::kNot: case Opcode::kPopulationCount: case Opcode::kReal:
    case Opcode::kRoundNearestAfz: case Opcode::kRoundNearestEven: case Opcode::kRsqrt: case Opcode::kSign:
    case Opcode::kSin: case Opcode::kSqrt: case Opcode::kTan: case Opcode::kTanh: case Opcode::kCopy:
    case Opcode::kConvert: case Opcode::kBitcastConvert: case Opcode::kReducePrecision: case Opcode::kBitcast:
    case Opcode::kBroadcast: case Opcode::kReshape: case Opcode::kTranspose: case Opcode::kSlice:
    case Opcode::kReverse: case Opcode::kGetTupleElement: case Opcode::kCopyStart: case Opcode::kCopyDone:
    case Opcode::kAllReduceDone: case Opcode::kAllGatherDone: case Opcode::kCollectivePermuteDone:
    case Opcode::kDomain: case Opcode::kGetDimensionSize: case Opcode::kFft: case Opcode::kTopK:
    case Opcode::kOptimizationBarrier: case Opcode::kWhile: case Opcode::kCholesky: case Opcode::kInfeed:
    case Opcode::kRecv: case Opcode::kRecvDone: case Opcode::kSendDone: case Opcode::kRngBitGenerator:
    case Opcode::kAsyncUpdate: case Opcode::kAsyncDone:
      return Exactly(1);
    case Opcode::kAdd: case Opcode::kAnd: case Opcode::kAtan2: case Opcode::kCompare: case Opcode::kComplex:
    case Opcode::kDivide: case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kMultiply: case Opcode::kOr:
    case Opcode::kPower: case Opcode::kRemainder: case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical: case Opcode::kSubtract: case Opcode::kXor: case Opcode::kPad:
    case Opcode::kSetDimensionSize: case Opcode::kAddDependency: case Opcode::kTriangularSolve:
    case Opcode::kStochasticConvert: case Opcode::kOutfeed: case Opcode::kSend: case Opcode::kRng:
    case Opcode::kConvolution: case Opcode::kGather:
      return Exactly(2);
    case Opcode::kSelect: case Opcode::kClamp: case Opcode::kSelectAndScatter: case Opcode::kBatchNormTraining:
      return Exactly(3);
    case Opcode::kBatchNormInference: case Opcode::kBatchNormGrad:
      return Exactly(5);
    case Opcode::kDot:  // a sparse dot adds its metadata operands
      return AtLeast(2);
    case Opcode::kDynamicSlice:
      return AtLeast(2);
    case Opcode::kDynamicUpdateSlice:
      return AtLeast(3);
    case Opcode::kReduce: case Opcode::kReduceWindow:
      return {2, -1, OperandCount::kEven};
    case Opcode::kScatter:
      return {3, -1, OperandCount::kOdd};
    case Opcode::kConditional:
      return AtLeast(2);
    case Opcode::kMap: case Opcode::kSort: case Opcode::kConcatenate: case Opcode::kAllReduce:
    case Opcode::kAllReduceStart: case Opcode::kAllGather: case Opcode::kAllGatherStart:
    case Opcode::kReduceScatter: case Opcode::kAllToAll: case Opcode::kCollectivePermute:
    case Opcode::kCollectivePermuteStart: case Opcode::kCollectiveBroadcast: case Opcode::kDynamicReshape:
      return AtLeast(1);
    case Opcode::kTuple: case Opcode::kAfterAll: case Opcode::kCall: case Opcode::kFusion:
    case Opcode::kCustomCall: case Opcode::kAsyncStart: case Opcode::kRaggedAllToAll: case Opcode::kRaggedDot:
    case Opcode::kScaledDot:
      return AtLeast(0);
  }
  return AtLeast(0);
}

}  // namespace

void CheckOperandCount(const Instruction& instruction) {
  const OperandCount expected = ExpectedOperandCount(instruction.opcode());
  const auto count = static_cast<int64_t>(instruction.operand_count());
  const auto plural = [](int64_t n) { return std::to_string(n) + (n == 1 ? " operand" : " operands"); };
  std::string wanted = expected.min == expected.max ? plural(expected.min) : "at least " + plural(expected.min);
  if (expected.parity == OperandCount::kEven) wanted = "an even number of operands (at least 2)";
  if (expected.parity == OperandCount::kOdd) wanted = "an odd number of operands (at least 3)";
  const bool parity_ok = expected.parity == OperandCount::kAny ||
                         (count % 2 == 0) == (expected.parity == OperandCount::kEven);
  if (count < expected.min || (expected.max >= 0 && count > expected.max) || !parity_ok) {
    Fail(instruction, std::string(OpcodeName(instruction.opcode())) + " takes " + wanted + ", got " +
                          std::to_string(count));
  }
}

std::string OperandName(std::size_t i, std::string_view role) {
  return role.empty() ? "operand " + std::to_string(i) : std::string(role);
}

const Shape& ArrayOperand(const Instruction& instruction, std::size_t i, std::string_view role) {
  const Shape& shape = instruction.operand(i)->shape();
  if (shape.is_tuple) {
    Fail(instruction, OperandName(i, role) + " of " + std::string(OpcodeName(instruction.opcode())) +
                          " must be an array, got the tuple " + Str(shape));
  }
  return shape;
}

const Shape& TupleOperand(const Instruction& instruction, std::size_t i, std::string_view role) {
  const Shape& shape = instruction.operand(i)->shape();
  if (!shape.is_tuple) {
    Fail(instruction, OperandName(i, role) + " of " + std::string(OpcodeName(instruction.opcode())) +
                          " must be a tuple, got " + Str(shape));
  }
  return shape;
}

const Shape& ScalarOperand(const Instruction& instruction, std::size_t i, std::string_view role, bool integer) {
  const Shape& shape = ArrayOperand(instruction, i, role);
  if (shape.rank() != 0 || (integer && !isa::IsInteger(shape.element_type))) {
    Fail(instruction, OperandName(i, role) + " of " + std::string(OpcodeName(instruction.opcode())) + " must be " +
                          (integer ? "an integer scalar" : "a scalar") + ", got " + Str(shape));
  }
  return shape;
}

// ---- attributes -------------------------------------------------------------------------------

void CheckDimension(const Instruction& instruction, int64_t dimension, int64_t rank, std::string_view what) {
  if (dimension < 0 || dimension >= rank) {
    Fail(instruction, std::string(what) + " names dimension " + std::to_string(dimension) +
                          ", out of range for rank " + std::to_string(rank));
  }
}

void CheckDimensions(const Instruction& instruction, const std::vector<int64_t>& dimensions, int64_t rank,
                     std::string_view what) {
  std::vector<bool> seen(static_cast<std::size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t dimension : dimensions) {
    CheckDimension(instruction, dimension, rank, what);
    if (seen[dimension]) {
      Fail(instruction, std::string(what) + "=" + Str(dimensions) + " names dimension " +
                            std::to_string(dimension) + " twice");
    }
    seen[dimension] = true;
  }
}

const std::vector<int64_t>& IntListOr(const Instruction& instruction, std::string_view name,
                                      const std::vector<int64_t>& fallback) {
  return instruction.HasAttribute(name) ? instruction.GetIntList(name) : fallback;
}

// ---- element types ----------------------------------------------------------------------------

bool IsNumeric(ElementType type) { return type != ElementType::kToken && type != ElementType::kOpaque; }

bool SameTypeIgnoringFpPrecision(ElementType a, ElementType b) {
  return a == b || (isa::IsFloat(a) && isa::IsFloat(b));
}

ElementType RealType(ElementType type) {
  if (type == ElementType::kC64) return ElementType::kF32;
  if (type == ElementType::kC128) return ElementType::kF64;
  return type;
}

ElementType HigherPrecision(ElementType a, ElementType b) {
  // XLA's primitive_util::HigherPrecisionType: floats beat ints, then more bits win, ties keep a.
  const auto rank = [](ElementType t) {
    return std::pair<int, int>(isa::IsFloat(t) || isa::IsComplex(t) ? 1 : 0, isa::ElementBitWidth(t));
  };
  return rank(b) > rank(a) ? b : a;
}

// ---- called computations ----------------------------------------------------------------------

const Computation& Called(const Instruction& instruction, std::string_view name) {
  const Computation* computation = instruction.GetComputation(name);
  if (!computation) Fail(instruction, "attribute '" + std::string(name) + "' names no computation");
  return *computation;
}

Shape RootShape(const Computation& computation) {
  if (!computation.root()) throw Error("computation " + Quote(computation.name()) + " has no root");
  return Logical(computation.root()->shape());
}

namespace {

bool Matches(const Shape& expected, const Shape& actual, bool ignore_fp_precision) {
  if (!ignore_fp_precision) return SameShapeIgnoringLayout(expected, actual);
  if (expected.is_tuple || actual.is_tuple) {
    if (expected.is_tuple != actual.is_tuple || expected.tuple_shapes.size() != actual.tuple_shapes.size()) {
      return false;
    }
    for (std::size_t i = 0; i < expected.tuple_shapes.size(); ++i) {
      if (!Matches(expected.tuple_shapes[i], actual.tuple_shapes[i], true)) return false;
    }
    return true;
  }
  Shape retyped = actual;
  if (SameTypeIgnoringFpPrecision(expected.element_type, actual.element_type)) {
    retyped.element_type = expected.element_type;
  }
  return SameShapeIgnoringLayout(expected, retyped);
}

}  // namespace

void CheckParameters(const Instruction& instruction, std::string_view role, const Computation& computation,
                     const std::vector<Shape>& parameters, bool ignore_fp_precision) {
  const auto& actual = computation.parameters();
  if (actual.size() != parameters.size()) {
    Fail(instruction, std::string(role) + " computation " + Quote(computation.name()) + " takes " +
                          std::to_string(actual.size()) + " parameter" + (actual.size() == 1 ? "" : "s") + ", " +
                          std::string(OpcodeName(instruction.opcode())) + " passes it " +
                          std::to_string(parameters.size()));
  }
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!Matches(parameters[i], actual[i]->shape(), ignore_fp_precision)) {
      Fail(instruction, std::string(role) + " computation " + Quote(computation.name()) + " takes parameter " +
                            std::to_string(i) + " as " + Str(actual[i]->shape()) + ", " +
                            std::string(OpcodeName(instruction.opcode())) + " passes " + Str(parameters[i]));
    }
  }
}

void CheckResult(const Instruction& instruction, std::string_view role, const Computation& computation,
                 const Shape& result, bool ignore_fp_precision) {
  const Shape root = RootShape(computation);
  if (!Matches(result, root, ignore_fp_precision)) {
    Fail(instruction, std::string(role) + " computation " + Quote(computation.name()) + " returns " + Str(root) +
                          ", " + std::string(OpcodeName(instruction.opcode())) + " needs " + Str(result));
  }
}

void CheckReducer(const Instruction& instruction, std::string_view role, const Computation& computation,
                  const std::vector<ElementType>& accumulators, const std::vector<ElementType>& inputs) {
  // XLA's VerifyReducerShape: the accumulators must match exactly; an input may differ from its
  // accumulator in floating-point precision (a bf16 array reduced by an f32 computation).
  std::vector<Shape> accumulator_shapes;
  std::vector<Shape> parameters;
  for (ElementType type : accumulators) {
    accumulator_shapes.push_back(Scalar(type));
    parameters.push_back(Scalar(type));
  }
  const auto& actual = computation.parameters();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    // An input parameter of another float precision than the input is fine: keep what it says.
    ElementType type = inputs[i];
    const std::size_t index = accumulators.size() + i;
    if (index < actual.size() && !actual[index]->shape().is_tuple &&
        SameTypeIgnoringFpPrecision(type, actual[index]->shape().element_type)) {
      type = actual[index]->shape().element_type;
    }
    parameters.push_back(Scalar(type));
  }
  CheckParameters(instruction, role, computation, parameters);
  const Shape result = accumulator_shapes.size() == 1 ? accumulator_shapes[0] : Shape::Tuple(accumulator_shapes);
  CheckResult(instruction, role, computation, result);
}

// ---- windows ----------------------------------------------------------------------------------

int64_t WindowOutputSize(const Instruction& instruction, int64_t base, const WindowDimension& window,
                         std::size_t dimension) {
  const std::string where = "window dimension " + std::to_string(dimension);
  if (window.size <= 0) Fail(instruction, where + " has size " + std::to_string(window.size) + " (must be positive)");
  if (window.stride <= 0) {
    Fail(instruction, where + " has stride " + std::to_string(window.stride) + " (must be positive)");
  }
  if (window.lhs_dilation <= 0 || window.rhs_dilation <= 0) {
    Fail(instruction, where + " has a dilation below 1 (lhs_dilate " + std::to_string(window.lhs_dilation) +
                          ", rhs_dilate " + std::to_string(window.rhs_dilation) + ")");
  }
  const int64_t dilated_base = base == 0 ? 0 : (base - 1) * window.lhs_dilation + 1;
  const int64_t padded = window.padding_low + dilated_base + window.padding_high;
  const int64_t dilated_window = (window.size - 1) * window.rhs_dilation + 1;
  if (padded < 0) {
    Fail(instruction, where + ": padding " + std::to_string(window.padding_low) + "_" +
                          std::to_string(window.padding_high) + " leaves a negative size");
  }
  return padded < dilated_window ? 0 : (padded - dilated_window) / window.stride + 1;
}

}  // namespace tpusim::hlo::inference
