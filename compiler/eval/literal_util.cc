#include "compiler/eval/literal_util.h"

#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {

hlo::Literal Scalar(isa::ElementType type, double value) {
  hlo::Literal scalar(isa::Shape::Array(type, {}));
  scalar.SetDouble(0, value);
  return scalar;
}

hlo::Literal ScalarInt(isa::ElementType type, int64_t value) {
  hlo::Literal scalar(isa::Shape::Array(type, {}));
  scalar.SetInt(0, value);
  return scalar;
}

hlo::Literal ElementAt(const hlo::Literal& array, int64_t linear) {
  hlo::Literal scalar(isa::Shape::Array(array.element_type(), {}));
  CopyElement(array, linear, scalar, 0);
  return scalar;
}

std::vector<double> ToDoubles(const hlo::Literal& array) {
  RequireArray(array, "ToDoubles", "the literal");
  std::vector<double> values(array.element_count());
  for (int64_t i = 0; i < array.element_count(); ++i) values[i] = array.GetDouble(i);
  return values;
}

std::vector<int64_t> ToInts(const hlo::Literal& array) {
  RequireArray(array, "ToInts", "the literal");
  std::vector<int64_t> values(array.element_count());
  for (int64_t i = 0; i < array.element_count(); ++i) values[i] = array.GetInt(i);
  return values;
}

hlo::Literal FromInts(isa::ElementType type, std::vector<int64_t> dims,
                      const std::vector<int64_t>& values) {
  hlo::Literal array(isa::Shape::Array(type, std::move(dims)));
  if (static_cast<int64_t>(values.size()) != array.element_count()) {
    throw Error("FromInts: " + std::to_string(values.size()) + " values for " +
                std::to_string(array.element_count()) + " elements");
  }
  for (int64_t i = 0; i < array.element_count(); ++i) array.SetInt(i, values[i]);
  return array;
}

std::string DimsToString(std::span<const int64_t> dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

void RequireArray(const hlo::Literal& literal, std::string_view op, std::string_view what) {
  if (!literal.is_tuple()) return;
  throw Error(std::string(op) + ": " + std::string(what) + " must be an array, got the tuple " +
              isa::ToString(literal.shape()));
}

void RequireScalar(const hlo::Literal& literal, std::string_view op, std::string_view what) {
  RequireArray(literal, op, what);
  if (literal.dims().empty()) return;
  throw Error(std::string(op) + ": " + std::string(what) + " must be a scalar, got " +
              isa::ToString(literal.shape()));
}

void RequireSameType(const hlo::Literal& a, const hlo::Literal& b, std::string_view op) {
  if (a.element_type() == b.element_type()) return;
  throw Error(std::string(op) + ": operands must have the same element type, got " +
              isa::ToString(a.shape()) + " and " + isa::ToString(b.shape()));
}

void RequireReductionOperands(std::string_view op, std::span<const hlo::Literal> operands,
                              std::span<const hlo::Literal> inits) {
  if (operands.empty() || operands.size() != inits.size()) {
    throw Error(std::string(op) + " needs N >= 1 operands and as many init values, got " +
                std::to_string(operands.size()) + " and " + std::to_string(inits.size()));
  }
  for (std::size_t i = 0; i < operands.size(); ++i) {
    RequireArray(operands[i], op, "every operand");
    RequireScalar(inits[i], op, "every init value");
    RequireSameType(operands[i], inits[i], op);
    if (operands[i].dims() != operands[0].dims()) {
      throw Error(std::string(op) + ": operand " + std::to_string(i) + " " +
                  isa::ToString(operands[i].shape()) + " and operand 0 " +
                  isa::ToString(operands[0].shape()) + " differ in dims");
    }
  }
}

}  // namespace tpusim::eval
