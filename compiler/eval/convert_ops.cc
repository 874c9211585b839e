#include "compiler/eval/convert_ops.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "compiler/eval/element_data.h"
#include "compiler/eval/literal_util.h"
#include "isa/convert.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using isa::ElementType;

// The output dims of a bitcast-convert from `from_bytes`-wide to `to_bytes`-wide elements.
std::vector<int64_t> BitcastDims(const hlo::Literal& operand, int from_bytes, int to_bytes,
                                 ElementType to) {
  std::vector<int64_t> dims = operand.dims();
  if (from_bytes == to_bytes) return dims;
  if (from_bytes > to_bytes) {
    dims.push_back(from_bytes / to_bytes);
    return dims;
  }
  const int64_t ratio = to_bytes / from_bytes;
  if (dims.empty() || dims.back() != ratio) {
    throw Error("bitcast-convert: converting " + isa::ToString(operand.shape()) + " to " +
                std::string(isa::ElementTypeName(to)) + " needs a minor dim of size " +
                std::to_string(ratio));
  }
  dims.pop_back();
  return dims;
}

// XLA's evaluator algorithm on the bits of a float with `kMantissa` mantissa and `kExponent`
// exponent bits held in UInt: add the round-to-nearest-even bias below the kept mantissa bits
// and mask them off (a carry into the exponent is correct), then force values whose exponent is
// out of the reduced range to infinity or zero.
template <typename UInt, int kMantissa, int kExponent>
UInt ReduceBits(UInt bits, int exponent_bits, int mantissa_bits) {
  constexpr int kWidth = 8 * sizeof(UInt);
  if (mantissa_bits < kMantissa) {
    const int dropped = kMantissa - mantissa_bits;
    const UInt last_kept_bit = UInt{1} << dropped;
    const UInt bias = (last_kept_bit >> 1) - 1 + ((bits & last_kept_bit) >> dropped);
    bits = (bits + bias) & ~(last_kept_bit - 1);
  }
  if (exponent_bits < kExponent) {
    const UInt sign_mask = UInt{1} << (kWidth - 1);
    const UInt exponent_mask = ((UInt{1} << kExponent) - 1) << kMantissa;
    const UInt exponent_bias = (UInt{1} << (kExponent - 1)) - 1;
    const UInt reduced_bias = (UInt{1} << (exponent_bits - 1)) - 1;
    const UInt max_exponent = exponent_bias + reduced_bias;
    const UInt min_exponent = exponent_bias - reduced_bias;
    const UInt exponent = bits & exponent_mask;
    const UInt signed_zero = bits & sign_mask;
    if (exponent > (max_exponent << kMantissa)) return signed_zero | exponent_mask;  // infinity
    if (exponent <= (min_exponent << kMantissa)) return signed_zero;
  }
  return bits;
}

template <typename T>
T ReduceValue(T value, int exponent_bits, int mantissa_bits) {
  if (std::isnan(value)) {
    if (mantissa_bits > 0) return value;
    return std::copysign(std::numeric_limits<T>::infinity(), value);
  }
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(
        ReduceBits<uint32_t, 23, 8>(std::bit_cast<uint32_t>(value), exponent_bits, mantissa_bits));
  } else {
    return std::bit_cast<double>(
        ReduceBits<uint64_t, 52, 11>(std::bit_cast<uint64_t>(value), exponent_bits, mantissa_bits));
  }
}

}  // namespace

hlo::Literal Convert(const hlo::Literal& operand, ElementType to) {
  RequireArray(operand, "convert", "the operand");
  hlo::Literal result(isa::Shape::Array(to, operand.dims()));
  isa::ConvertElements(operand.element_type(), operand.bytes().data(), to,
                       result.mutable_bytes().data(), operand.element_count());
  return result;
}

hlo::Literal BitcastConvert(const hlo::Literal& operand, ElementType to) {
  RequireArray(operand, "bitcast-convert", "the operand");
  isa::RequireSupported(operand.element_type(), "bitcast-convert");
  isa::RequireSupported(to, "bitcast-convert");
  const int from_bytes = operand.element_bytes();
  const int to_bytes = isa::ElementByteWidth(to);
  std::vector<uint8_t> bytes(operand.bytes().begin(), operand.bytes().end());
  return hlo::Literal::FromBytes(
      isa::Shape::Array(to, BitcastDims(operand, from_bytes, to_bytes, to)), std::move(bytes));
}

hlo::Literal ReducePrecision(const hlo::Literal& operand, int exponent_bits, int mantissa_bits) {
  RequireArray(operand, "reduce-precision", "the operand");
  const ElementType type = operand.element_type();
  if (!isa::IsFloat(type)) {
    throw Error("reduce-precision needs a float operand, got " + isa::ToString(operand.shape()));
  }
  if (exponent_bits < 1 || mantissa_bits < 0) {
    throw Error("reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0, got " +
                std::to_string(exponent_bits) + " and " + std::to_string(mantissa_bits));
  }
  return VisitComputeType(type, [&](auto tag) -> hlo::Literal {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      throw Error("internal error: reduce-precision on integers");
    } else {
      std::vector<T> values = Widen<T>(operand);
      for (T& value : values) value = ReduceValue(value, exponent_bits, mantissa_bits);
      return Narrow<T>(type, operand.dims(), values);
    }
  });
}

}  // namespace tpusim::eval
