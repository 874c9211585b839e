// Small helpers on hlo::Literal that the kernels and their callers share: scalars, element copies,
// whole-array views as doubles or ints, and argument checks with clear messages.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/literal.h"
#include "isa/element_type.h"

namespace tpusim::eval {

// A rank-0 array of `type` holding `value` (converted with XLA's convert semantics).
hlo::Literal Scalar(isa::ElementType type, double value);
hlo::Literal ScalarInt(isa::ElementType type, int64_t value);

// Element `linear` of `array` as a rank-0 literal of the same type (bytes copied, NaN payloads
// kept).
hlo::Literal ElementAt(const hlo::Literal& array, int64_t linear);

// Copies element `from_linear` of `from` into element `to_linear` of `to`; same element type.
inline void CopyElement(const hlo::Literal& from, int64_t from_linear, hlo::Literal& to,
                        int64_t to_linear) {
  const int width = from.element_bytes();
  const uint8_t* src = from.bytes().data() + from_linear * width;
  uint8_t* dst = to.mutable_bytes().data() + to_linear * width;
  for (int i = 0; i < width; ++i) dst[i] = src[i];
}

// All elements as doubles / as int64 (GetDouble / GetInt per element). For tests and callers that
// want plain values; the kernels use element_data.h.
std::vector<double> ToDoubles(const hlo::Literal& array);
std::vector<int64_t> ToInts(const hlo::Literal& array);

// An array of `type` and `dims` from ints (SetInt: wrapping for ints, exact for floats up to 2^53).
hlo::Literal FromInts(isa::ElementType type, std::vector<int64_t> dims,
                      const std::vector<int64_t>& values);

// "[2,3]" for messages.
std::string DimsToString(std::span<const int64_t> dims);

// Throws tpusim::Error("<op>: <what> must be an array, got a tuple ...") for a tuple literal.
void RequireArray(const hlo::Literal& literal, std::string_view op, std::string_view what);
// Throws unless `literal` is a rank-0 array.
void RequireScalar(const hlo::Literal& literal, std::string_view op, std::string_view what);
// Checks the operands and init values of a variadic reduction (reduce, reduce-window): N >= 1
// arrays of equal dims and N scalar inits of the same types. Messages start with `op`.
void RequireReductionOperands(std::string_view op, std::span<const hlo::Literal> operands,
                              std::span<const hlo::Literal> inits);

// Throws unless `a` and `b` have the same element type.
void RequireSameType(const hlo::Literal& a, const hlo::Literal& b, std::string_view op);

}  // namespace tpusim::eval
