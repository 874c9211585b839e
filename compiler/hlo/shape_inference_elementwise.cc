// Element-wise operations: the result has the operands' dims. HLO has no implicit broadcasting
// (XLA's verifier: "Implicit broadcast is not allowed in HLO"), so operands agree in dims, and,
// as XLA's verifier requires without mixed precision, in element type, except where an operation
// says otherwise (select's predicate, clamp's scalar bounds, convert's target).
#include <string>

#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo::inference {

using isa::ElementType;
using isa::Shape;

namespace {

std::string Name(const Instruction& instruction) { return std::string(OpcodeName(instruction.opcode())); }

bool IsFloatOrComplex(ElementType type) { return isa::IsFloat(type) || isa::IsComplex(type); }
bool IsIntOrPred(ElementType type) { return isa::IsInteger(type) || type == ElementType::kPred; }

// Checks operand i's element type with `accepts`; `kinds` says what it accepts, for the message.
void RequireType(const Instruction& instruction, std::size_t i, bool (*accepts)(ElementType),
                 std::string_view kinds) {
  const Shape& shape = ArrayOperand(instruction, i);
  if (!accepts(shape.element_type)) {
    Fail(instruction, Name(instruction) + " needs " + std::string(kinds) + " operand" +
                          (instruction.operand_count() > 1 ? "s" : "") + ", got " + Str(shape));
  }
}

// Operands `a` and `b` must have the same dims; the same element type too when `same_type`.
void RequireSameShape(const Instruction& instruction, std::size_t a, std::size_t b, bool same_type,
                      std::string_view role_a = "", std::string_view role_b = "") {
  const Shape& x = ArrayOperand(instruction, a, role_a);
  const Shape& y = ArrayOperand(instruction, b, role_b);
  if (!SameShapeIgnoringLayout(Array(x.element_type, x.dims), Array(x.element_type, y.dims))) {
    Fail(instruction, OperandName(a, role_a) + " " + Str(x) + " and " + OperandName(b, role_b) + " " + Str(y) +
                          " of " + Name(instruction) + " have different dims (HLO does not broadcast implicitly)");
  }
  if (same_type && x.element_type != y.element_type) {
    Fail(instruction, OperandName(a, role_a) + " " + Str(x) + " and " + OperandName(b, role_b) + " " + Str(y) +
                          " of " + Name(instruction) + " have different element types");
  }
}

}  // namespace

Shape InferUnary(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0);
  const ElementType type = operand.element_type;
  switch (instruction.opcode()) {
    case Opcode::kFloor: case Opcode::kCeil: case Opcode::kRoundNearestAfz: case Opcode::kRoundNearestEven:
      RequireType(instruction, 0, isa::IsFloat, "a floating-point");
      break;
    case Opcode::kCos: case Opcode::kSin: case Opcode::kTan: case Opcode::kExp: case Opcode::kExpm1:
    case Opcode::kLog: case Opcode::kLog1p: case Opcode::kLogistic: case Opcode::kRsqrt: case Opcode::kSqrt:
    case Opcode::kCbrt: case Opcode::kTanh: case Opcode::kErf:
      RequireType(instruction, 0, IsFloatOrComplex, "a floating-point or complex");
      break;
    case Opcode::kIsFinite:
      RequireType(instruction, 0, isa::IsFloat, "a floating-point");
      return Array(ElementType::kPred, operand.dims);
    case Opcode::kAbs:
      RequireType(instruction, 0, [](ElementType t) { return isa::IsSignedInt(t) || IsFloatOrComplex(t); },
                  "a signed integer, floating-point or complex");
      return Array(RealType(type), operand.dims);  // |complex| is real
    case Opcode::kReal: case Opcode::kImag:
      RequireType(instruction, 0, IsFloatOrComplex, "a floating-point or complex");
      return Array(RealType(type), operand.dims);
    case Opcode::kSign:
      RequireType(instruction, 0, [](ElementType t) { return isa::IsSignedInt(t) || IsFloatOrComplex(t); },
                  "a signed integer, floating-point or complex");
      break;
    case Opcode::kNegate:
      RequireType(instruction, 0, [](ElementType t) { return isa::IsInteger(t) || IsFloatOrComplex(t); },
                  "an integer, floating-point or complex");
      break;
    case Opcode::kNot:
      RequireType(instruction, 0, IsIntOrPred, "a pred or integer");
      break;
    case Opcode::kPopulationCount: case Opcode::kClz:
      RequireType(instruction, 0, isa::IsInteger, "an integer");
      break;
    default:  // copy: anything
      break;
  }
  return Array(type, operand.dims);
}

Shape InferBinary(const Instruction& instruction) {
  RequireSameShape(instruction, 0, 1, /*same_type=*/true);
  const Shape& lhs = instruction.operand(0)->shape();
  switch (instruction.opcode()) {
    case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor:
      RequireType(instruction, 0, IsIntOrPred, "pred or integer");
      break;
    case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic: case Opcode::kShiftRightLogical:
      RequireType(instruction, 0, isa::IsInteger, "integer");
      break;
    case Opcode::kAtan2:
      RequireType(instruction, 0, IsFloatOrComplex, "floating-point or complex");
      break;
    case Opcode::kComplex:
      // complex(re, im): two f32 make a c64, two f64 a c128.
      if (lhs.element_type != ElementType::kF32 && lhs.element_type != ElementType::kF64) {
        Fail(instruction, "complex needs f32 or f64 operands, got " + Str(lhs));
      }
      return Array(lhs.element_type == ElementType::kF32 ? ElementType::kC64 : ElementType::kC128, lhs.dims);
    default:  // arithmetic: any number type
      RequireType(instruction, 0, IsNumeric, "numeric");
      break;
  }
  return Array(lhs.element_type, lhs.dims);
}

Shape InferCompare(const Instruction& instruction) {
  RequireSameShape(instruction, 0, 1, /*same_type=*/true);
  static const char* const kDirections[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  const std::string& direction = instruction.GetIdentifier("direction");
  bool known = false;
  for (const char* d : kDirections) known = known || direction == d;
  if (!known) Fail(instruction, "compare direction '" + direction + "' is not one of EQ, NE, LT, LE, GT, GE");
  return Array(ElementType::kPred, instruction.operand(0)->shape().dims);
}

Shape InferSelect(const Instruction& instruction) {
  const Shape& pred = ArrayOperand(instruction, 0, "the predicate");
  if (pred.element_type != ElementType::kPred) {
    Fail(instruction, "the predicate of select must be pred, got " + Str(pred));
  }
  RequireSameShape(instruction, 1, 2, /*same_type=*/true, "on_true", "on_false");
  // One predicate per element: XLA no longer accepts a scalar predicate choosing a whole operand.
  RequireSameShape(instruction, 0, 1, /*same_type=*/false, "the predicate", "on_true");
  const Shape& on_true = instruction.operand(1)->shape();
  return Array(on_true.element_type, on_true.dims);
}

Shape InferClamp(const Instruction& instruction) {
  // clamp(min, operand, max): the bounds are scalars or have the operand's dims; all of one type.
  const Shape& operand = ArrayOperand(instruction, 1, "the operand");
  for (std::size_t i : {std::size_t{0}, std::size_t{2}}) {
    const std::string_view role = i == 0 ? "min" : "max";
    const Shape& bound = ArrayOperand(instruction, i, role);
    if (bound.element_type != operand.element_type) {
      Fail(instruction, std::string(role) + " " + Str(bound) + " of clamp is not of the operand's type (" +
                            Str(operand) + ")");
    }
    if (bound.rank() != 0) RequireSameShape(instruction, i, 1, /*same_type=*/true, role, "the operand");
  }
  return Array(operand.element_type, operand.dims);
}

Shape InferConvert(const Instruction& instruction) {
  // The target type is what the text writes; the dims are the operand's.
  const Shape& operand = ArrayOperand(instruction, 0);
  const Shape& written = instruction.shape();
  if (written.is_tuple) Fail(instruction, "convert must produce an array, written " + Str(written));
  if (isa::IsComplex(operand.element_type) && !isa::IsComplex(written.element_type)) {
    Fail(instruction, "convert from complex " + Str(operand) + " to the real type " +
                          std::string(isa::ElementTypeName(written.element_type)) +
                          " is not defined (take real or imag first)");
  }
  for (ElementType type : {operand.element_type, written.element_type}) {
    if (!IsNumeric(type)) Fail(instruction, "convert cannot convert " + std::string(isa::ElementTypeName(type)));
  }
  return Array(written.element_type, operand.dims);
}

Shape InferBitcastConvert(const Instruction& instruction) {
  // XLA's InferBitcastConvertShape: equal widths keep the dims; a wider input gains a minor dim
  // of (input bits / output bits); a narrower input loses its minor dim, which must be the ratio.
  const Shape& operand = ArrayOperand(instruction, 0);
  const Shape& written = instruction.shape();
  if (written.is_tuple) Fail(instruction, "bitcast-convert must produce an array, written " + Str(written));
  const ElementType to = written.element_type;
  if (isa::IsComplex(operand.element_type) != isa::IsComplex(to)) {
    Fail(instruction, "bitcast-convert between complex and real types (" + Str(operand) + " to " +
                          std::string(isa::ElementTypeName(to)) + ") is not allowed");
  }
  const int in_bits = isa::ElementBitWidth(operand.element_type);
  const int out_bits = isa::ElementBitWidth(to);
  if (in_bits == 0 || out_bits == 0) {
    Fail(instruction, "bitcast-convert needs types with a bit width, got " + Str(operand) + " to " +
                          std::string(isa::ElementTypeName(to)));
  }
  std::vector<int64_t> dims = operand.dims;
  if (in_bits > out_bits) {
    if (in_bits % out_bits != 0) {
      Fail(instruction, "bitcast-convert from " + std::to_string(in_bits) + " to " + std::to_string(out_bits) +
                            " bits: the widths do not divide");
    }
    dims.push_back(in_bits / out_bits);
  } else if (in_bits < out_bits) {
    if (out_bits % in_bits != 0) {
      Fail(instruction, "bitcast-convert from " + std::to_string(in_bits) + " to " + std::to_string(out_bits) +
                            " bits: the widths do not divide");
    }
    const int64_t ratio = out_bits / in_bits;
    if (dims.empty() || dims.back() != ratio) {
      Fail(instruction, "bitcast-convert from " + Str(operand) + " to " + std::string(isa::ElementTypeName(to)) +
                            " needs a minor dimension of " + std::to_string(ratio) + " to merge");
    }
    dims.pop_back();
  }
  return Array(to, dims);
}

Shape InferStochasticConvert(const Instruction& instruction) {
  // stochastic-convert(operand, random): random bits of the operand's width, one per element.
  const Shape& operand = ArrayOperand(instruction, 0, "the operand");
  const Shape& random = ArrayOperand(instruction, 1, "the random bits");
  if (!isa::IsFloat(operand.element_type)) {
    Fail(instruction, "stochastic-convert needs a floating-point operand, got " + Str(operand));
  }
  if (!isa::IsUnsignedInt(random.element_type) ||
      isa::ElementBitWidth(random.element_type) != isa::ElementBitWidth(operand.element_type)) {
    Fail(instruction, "the random bits " + Str(random) + " of stochastic-convert must be unsigned integers as wide as " +
                          Str(operand));
  }
  RequireSameShape(instruction, 0, 1, /*same_type=*/false, "the operand", "the random bits");
  const Shape& written = instruction.shape();
  if (written.is_tuple) Fail(instruction, "stochastic-convert must produce an array, written " + Str(written));
  return Array(written.element_type, operand.dims);
}

Shape InferReducePrecision(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0);
  RequireType(instruction, 0, isa::IsFloat, "a floating-point");
  const int64_t exponent_bits = instruction.GetInt("exponent_bits");
  const int64_t mantissa_bits = instruction.GetInt("mantissa_bits");
  if (exponent_bits < 1 || mantissa_bits < 0) {
    Fail(instruction, "reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, got " +
                          std::to_string(exponent_bits) + " and " + std::to_string(mantissa_bits));
  }
  return Array(operand.element_type, operand.dims);
}

Shape InferMap(const Instruction& instruction) {
  // map applies to_apply to each index: scalars of the operands' types in, a scalar out.
  const Shape& first = ArrayOperand(instruction, 0);
  std::vector<Shape> parameters;
  for (std::size_t i = 0; i < instruction.operand_count(); ++i) {
    RequireSameShape(instruction, 0, i, /*same_type=*/false);
    parameters.push_back(Scalar(instruction.operand(i)->shape().element_type));
  }
  if (instruction.HasAttribute("dimensions")) {
    const std::vector<int64_t>& dimensions = instruction.GetIntList("dimensions");
    bool all_in_order = dimensions.size() == first.dims.size();
    for (std::size_t i = 0; all_in_order && i < dimensions.size(); ++i) {
      all_in_order = dimensions[i] == static_cast<int64_t>(i);
    }
    if (!all_in_order) {
      Fail(instruction, "map applies to every dimension: dimensions=" + Str(dimensions) + " must list 0.." +
                            std::to_string(first.rank() - 1) + " in order");
    }
  }
  const Computation& to_apply = Called(instruction, "to_apply");
  CheckParameters(instruction, "to_apply", to_apply, parameters);
  const Shape root = RootShape(to_apply);
  if (root.is_tuple || root.rank() != 0) {
    Fail(instruction, "to_apply computation " + Quote(to_apply.name()) + " of map must return a scalar, returns " +
                          Str(root));
  }
  return Array(root.element_type, first.dims);
}

}  // namespace tpusim::hlo::inference
