// HLO ops that change how elements are represented: convert, bitcast-convert, reduce-precision.
#pragma once

#include "compiler/hlo/literal.h"
#include "isa/element_type.h"

namespace tpusim::eval {

// convert: every element converted with XLA's semantics (isa/convert.h: round to nearest even
// for narrower floats, float -> int truncating and saturating with NaN -> 0, int -> int wrapping).
hlo::Literal Convert(const hlo::Literal& operand, isa::ElementType to);

// bitcast-convert: the same bytes read as `to`. With equal widths the dims stay; converting to a
// narrower type appends a minor dim of (old width / new width); converting to a wider type needs
// a minor dim of (new width / old width) and removes it (XLA's rule). Bytes are row-major and
// little-endian, so element 0 of the new minor dim holds the lowest bytes.
hlo::Literal BitcastConvert(const hlo::Literal& operand, isa::ElementType to);

// reduce-precision: each float rounded to the nearest value with `mantissa_bits` of mantissa
// (ties to even) and clipped to the range of `exponent_bits` of exponent: above it -> infinity,
// at or below its smallest normal exponent -> zero with the sign kept (denormals flush, as in
// XLA's evaluator); NaN stays NaN (infinity when mantissa_bits is 0). Narrow floats are reduced
// as f32 and rounded back. Throws for non-float operands, exponent_bits < 1, mantissa_bits < 0.
hlo::Literal ReducePrecision(const hlo::Literal& operand, int exponent_bits, int mantissa_bits);

}  // namespace tpusim::eval
