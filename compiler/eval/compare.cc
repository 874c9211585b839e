#include "compiler/eval/compare.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "compiler/eval/element_data.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/scalar_ops.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using isa::ElementType;

constexpr std::array<std::pair<CompareDirection, std::string_view>, 6> kDirectionNames{{
    {CompareDirection::kEq, "EQ"},
    {CompareDirection::kNe, "NE"},
    {CompareDirection::kLt, "LT"},
    {CompareDirection::kLe, "LE"},
    {CompareDirection::kGt, "GT"},
    {CompareDirection::kGe, "GE"},
}};

constexpr std::array<std::pair<CompareType, std::string_view>, 4> kTypeNames{{
    {CompareType::kFloat, "FLOAT"},
    {CompareType::kTotalOrder, "TOTALORDER"},
    {CompareType::kSigned, "SIGNED"},
    {CompareType::kUnsigned, "UNSIGNED"},
}};

template <typename T>
bool Holds(CompareDirection direction, T a, T b) {
  switch (direction) {
    case CompareDirection::kEq: return a == b;
    case CompareDirection::kNe: return a != b;
    case CompareDirection::kLt: return a < b;
    case CompareDirection::kLe: return a <= b;
    case CompareDirection::kGt: return a > b;
    case CompareDirection::kGe: return a >= b;
  }
  return false;
}

// A signed integer whose order is the total order of the float with these bits: flipping the
// magnitude bits of negative values makes more negative floats smaller integers, and puts -0
// (all magnitude bits flipped: -1) just below +0 and -NaN below -inf.
int64_t TotalOrderKey(int64_t bits, int width) {
  const int64_t magnitude_mask =
      width == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (width - 1)) - 1;
  return bits < 0 ? bits ^ magnitude_mask : bits;
}

// Narrow floats go through their exact f32 value, whose bits order the same way (the widening
// keeps the sign and moves NaN payloads to the top of the mantissa, so it is monotonic).
std::vector<int64_t> TotalOrderKeys(const hlo::Literal& array) {
  std::vector<int64_t> keys(array.element_count());
  if (array.element_type() == ElementType::kF64) {
    const std::vector<double> values = Widen<double>(array);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      keys[i] = TotalOrderKey(std::bit_cast<int64_t>(values[i]), 64);
    }
    return keys;
  }
  const std::vector<float> values = Widen<float>(array);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    keys[i] = TotalOrderKey(std::bit_cast<int32_t>(values[i]), 32);
  }
  return keys;
}

// The integer elements as 64-bit patterns (signed ones sign-extended; the kernels only look at
// the low `width` bits of these).
std::vector<uint64_t> IntegerBits(const hlo::Literal& array) {
  if (!isa::IsSignedInt(array.element_type())) return Widen<uint64_t>(array);
  const std::vector<int64_t> values = Widen<int64_t>(array);
  return std::vector<uint64_t>(values.begin(), values.end());
}

// Integer keys: the element bits of the element width read signed, or unsigned (moved into int64
// order by flipping the top bit, so u64 values above 2^63 stay in order).
std::vector<int64_t> IntegerKeys(const hlo::Literal& array, bool as_signed) {
  const int bits = IntegerBitWidth(array.element_type());
  const std::vector<uint64_t> raw = IntegerBits(array);
  std::vector<int64_t> keys(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (as_signed) {
      keys[i] = scalar::SignExtend(raw[i], bits);
    } else {
      const uint64_t value = raw[i] & scalar::WidthMask(bits);
      keys[i] = static_cast<int64_t>(value ^ (uint64_t{1} << 63));
    }
  }
  return keys;
}

void RequireTypeFits(CompareType type, ElementType element_type) {
  const bool is_float = isa::IsFloat(element_type);
  const bool float_compare = type == CompareType::kFloat || type == CompareType::kTotalOrder;
  if (is_float == float_compare) return;
  throw Error("compare: comparison type " + std::string(CompareTypeName(type)) +
              " does not apply to " + std::string(isa::ElementTypeName(element_type)) +
              " operands");
}

std::vector<int64_t> KeysOf(const hlo::Literal& array, CompareType type) {
  if (type == CompareType::kTotalOrder) return TotalOrderKeys(array);
  return IntegerKeys(array, type == CompareType::kSigned);
}

// Every NaN as the type's +NaN, -0 as +0 (CompareSpec::canonical_nan_and_zero).
hlo::Literal CanonicalNanAndZero(const hlo::Literal& array) {
  hlo::Literal canonical = array;
  for (int64_t i = 0; i < array.element_count(); ++i) {
    const double value = array.GetDouble(i);
    if (std::isnan(value)) {
      canonical.SetDouble(i, std::numeric_limits<double>::quiet_NaN());
    } else if (value == 0) {
      canonical.SetDouble(i, 0.0);
    }
  }
  return canonical;
}

}  // namespace

std::string_view CompareDirectionName(CompareDirection direction) {
  for (const auto& [known, name] : kDirectionNames) {
    if (known == direction) return name;
  }
  return "?";
}

std::string_view CompareTypeName(CompareType type) {
  for (const auto& [known, name] : kTypeNames) {
    if (known == type) return name;
  }
  return "?";
}

std::optional<CompareDirection> ParseCompareDirection(std::string_view text) {
  for (const auto& [direction, name] : kDirectionNames) {
    if (name == text) return direction;
  }
  return std::nullopt;
}

std::optional<CompareType> ParseCompareType(std::string_view text) {
  for (const auto& [type, name] : kTypeNames) {
    if (name == text) return type;
  }
  return std::nullopt;
}

CompareType DefaultCompareType(ElementType type) {
  if (isa::IsFloat(type)) return CompareType::kFloat;
  if (isa::IsSignedInt(type)) return CompareType::kSigned;
  return CompareType::kUnsigned;
}

hlo::Literal Compare(const hlo::Literal& lhs, const hlo::Literal& rhs, CompareDirection direction,
                     std::optional<CompareType> type) {
  RequireArray(lhs, "compare", "lhs");
  RequireArray(rhs, "compare", "rhs");
  RequireSameType(lhs, rhs, "compare");
  if (lhs.dims() != rhs.dims()) {
    throw Error("compare: operands must have the same dims, got " + isa::ToString(lhs.shape()) +
                " and " + isa::ToString(rhs.shape()));
  }
  isa::RequireSupported(lhs.element_type(), "compare");
  const CompareType compare_type = type.value_or(DefaultCompareType(lhs.element_type()));
  RequireTypeFits(compare_type, lhs.element_type());

  std::vector<uint64_t> result(lhs.element_count());
  if (compare_type == CompareType::kFloat) {
    const std::vector<double> a = Widen<double>(lhs);
    const std::vector<double> b = Widen<double>(rhs);
    for (std::size_t i = 0; i < result.size(); ++i) result[i] = Holds(direction, a[i], b[i]);
  } else {
    const std::vector<int64_t> a = KeysOf(lhs, compare_type);
    const std::vector<int64_t> b = KeysOf(rhs, compare_type);
    for (std::size_t i = 0; i < result.size(); ++i) result[i] = Holds(direction, a[i], b[i]);
  }
  return Narrow<uint64_t>(ElementType::kPred, lhs.dims(), result);
}

ElementOrder::ElementOrder(const hlo::Literal& array, CompareSpec spec)
    : direction_(spec.direction), use_doubles_(spec.type == CompareType::kFloat) {
  RequireArray(array, "compare", "the operand");
  isa::RequireSupported(array.element_type(), "compare");
  RequireTypeFits(spec.type, array.element_type());
  if (spec.canonical_nan_and_zero && !isa::IsFloat(array.element_type())) {
    throw Error("compare: canonicalizing NaN and -0 needs a float operand");
  }
  std::optional<hlo::Literal> canonical;
  if (spec.canonical_nan_and_zero) canonical = CanonicalNanAndZero(array);
  const hlo::Literal& values = canonical ? *canonical : array;
  if (use_doubles_) {
    doubles_ = Widen<double>(values);
  } else {
    keys_ = KeysOf(values, spec.type);
  }
}

bool ElementOrder::Compare(int64_t i, int64_t j) const {
  if (use_doubles_) return Holds(direction_, doubles_[i], doubles_[j]);
  return Holds(direction_, keys_[i], keys_[j]);
}

}  // namespace tpusim::eval
