// The kernels compute on widened copies of their operands, in the type XLA's evaluator computes
// each element type in:
//   bf16, f16, f8 and f32 -> float   (narrow floats compute in f32 and round once to their type)
//   f64                   -> double
//   s8..s64               -> int64_t (results wrap back to the operand's width when narrowed)
//   u8..u64 and pred      -> uint64_t (pred as 0/1; narrowing back to pred is `x != 0`)
// Widen and Narrow move whole arrays between a Literal and such a vector with XLA's convert
// semantics (isa/convert.h), so the rounding to the result type happens in exactly one place.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/hlo/literal.h"
#include "isa/convert.h"
#include "isa/element_type.h"
#include "isa/error.h"

namespace tpusim::eval {

template <typename T>
constexpr isa::ElementType ElementTypeOf() {
  if constexpr (std::is_same_v<T, float>) {
    return isa::ElementType::kF32;
  } else if constexpr (std::is_same_v<T, double>) {
    return isa::ElementType::kF64;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return isa::ElementType::kS64;
  } else {
    static_assert(std::is_same_v<T, uint64_t>,
                  "compute types are float, double, int64_t, uint64_t");
    return isa::ElementType::kU64;
  }
}

// The elements of `array` (which must not be a tuple) converted to T.
template <typename T>
std::vector<T> Widen(const hlo::Literal& array) {
  if (array.is_tuple()) throw Error("internal error: widening a tuple literal");
  std::vector<T> values(array.element_count());
  isa::ConvertElements(array.element_type(), array.bytes().data(), ElementTypeOf<T>(),
                       values.data(), array.element_count());
  return values;
}

// An array of `type` and `dims` holding `values` converted with XLA's convert semantics.
template <typename T>
hlo::Literal Narrow(isa::ElementType type, std::vector<int64_t> dims, std::span<const T> values) {
  hlo::Literal result(isa::Shape::Array(type, std::move(dims)));
  if (static_cast<int64_t>(values.size()) != result.element_count()) {
    throw Error("internal error: narrowing " + std::to_string(values.size()) + " values into " +
                std::to_string(result.element_count()) + " elements");
  }
  isa::ConvertElements(ElementTypeOf<T>(), values.data(), type, result.mutable_bytes().data(),
                       result.element_count());
  return result;
}

template <typename T>
hlo::Literal Narrow(isa::ElementType type, std::vector<int64_t> dims,
                    const std::vector<T>& values) {
  return Narrow<T>(type, std::move(dims), std::span<const T>(values));
}

// Calls fn(T{}) with the compute type of `type` (table above) and returns what it returns.
// Throws tpusim::Error for types tpusim does not compute with.
template <typename Fn>
decltype(auto) VisitComputeType(isa::ElementType type, Fn&& fn) {
  isa::RequireSupported(type, "evaluating");
  if (type == isa::ElementType::kF64) return fn(double{});
  if (isa::IsFloat(type)) return fn(float{});
  if (isa::IsSignedInt(type)) return fn(int64_t{});
  return fn(uint64_t{});  // unsigned ints and pred
}

// Bits of an integer or pred element (pred: 1), for shifts, popcnt and clz.
int IntegerBitWidth(isa::ElementType type);

// `value` (a compute-type value for elements of `type`) rounded to what an element of `type` can
// hold, still in the compute type: narrow floats round to nearest even, ints wrap to their width,
// pred becomes 0/1. For kernels that store a result element after every step (scatter).
float RoundToElement(isa::ElementType type, float value);
double RoundToElement(isa::ElementType type, double value);
int64_t RoundToElement(isa::ElementType type, int64_t value);
uint64_t RoundToElement(isa::ElementType type, uint64_t value);

}  // namespace tpusim::eval
