#include "compiler/hlo/literal.h"

#include <cstring>

#include "isa/convert.h"
#include "isa/error.h"

namespace tpusim::hlo {
namespace {

using isa::ElementType;

bool SameArrayShape(const isa::Shape& a, const isa::Shape& b) {
  return a.is_tuple == b.is_tuple && a.element_type == b.element_type && a.dims == b.dims;
}

}  // namespace

Literal::Literal(const isa::Shape& shape) : shape_(shape) {
  if (shape.is_tuple) {
    for (const isa::Shape& element : shape.tuple_shapes) elements_.emplace_back(element);
    return;
  }
  // Tokens (after-all, infeed) are values with no data.
  if (shape.element_type != ElementType::kToken) {
    isa::RequireSupported(shape.element_type, "a literal of " + isa::ToString(shape));
  }
  element_count_ = isa::ElementCount(shape);
  bytes_.assign(element_count_ * element_bytes(), 0);
}

Literal Literal::FromBytes(const isa::Shape& shape, std::vector<uint8_t> bytes) {
  Literal literal(shape);
  if (shape.is_tuple) throw Error("Literal::FromBytes needs an array shape, got " + isa::ToString(shape));
  if (bytes.size() != literal.bytes_.size()) {
    throw Error("a literal of " + isa::ToString(shape) + " holds " +
                std::to_string(literal.bytes_.size()) + " bytes, got " + std::to_string(bytes.size()));
  }
  literal.bytes_ = std::move(bytes);
  return literal;
}

Literal Literal::Tuple(std::vector<Literal> elements) {
  std::vector<isa::Shape> shapes;
  for (const Literal& element : elements) shapes.push_back(element.shape());
  Literal literal(isa::Shape::Tuple(std::move(shapes)));
  literal.elements_ = std::move(elements);
  return literal;
}

Literal Literal::FromDoubles(ElementType type, std::vector<int64_t> dims,
                             const std::vector<double>& values) {
  Literal literal(isa::Shape::Array(type, std::move(dims)));
  if (static_cast<int64_t>(values.size()) != literal.element_count()) {
    throw Error("Literal::FromDoubles: " + std::to_string(values.size()) + " values for " +
                std::to_string(literal.element_count()) + " elements");
  }
  for (std::size_t i = 0; i < values.size(); ++i) literal.SetDouble(static_cast<int64_t>(i), values[i]);
  return literal;
}

double Literal::GetDouble(int64_t linear) const {
  double value = 0;
  isa::ConvertElements(element_type(), bytes_.data() + linear * element_bytes(), ElementType::kF64,
                       &value, 1);
  return value;
}

void Literal::SetDouble(int64_t linear, double value) {
  isa::ConvertElements(ElementType::kF64, &value, element_type(),
                       bytes_.data() + linear * element_bytes(), 1);
}

int64_t Literal::GetInt(int64_t linear) const {
  int64_t value = 0;
  isa::ConvertElements(element_type(), bytes_.data() + linear * element_bytes(), ElementType::kS64,
                       &value, 1);
  return value;
}

void Literal::SetInt(int64_t linear, int64_t value) {
  isa::ConvertElements(ElementType::kS64, &value, element_type(),
                       bytes_.data() + linear * element_bytes(), 1);
}

bool Literal::operator==(const Literal& other) const {
  if (!SameArrayShape(shape_, other.shape_) && !(is_tuple() && other.is_tuple())) return false;
  return bytes_ == other.bytes_ && elements_ == other.elements_;
}

int64_t RowMajorLinear(std::span<const int64_t> index, std::span<const int64_t> dims) {
  int64_t linear = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) linear = linear * dims[i] + index[i];
  return linear;
}

std::vector<int64_t> RowMajorIndex(int64_t linear, std::span<const int64_t> dims) {
  std::vector<int64_t> index(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    index[i] = linear % dims[i];
    linear /= dims[i];
  }
  return index;
}

}  // namespace tpusim::hlo
