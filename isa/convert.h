// Element conversions with XLA's semantics: the narrow float formats (bf16, f16, f8e4m3fn,
// f8e5m2) to and from f32, and ConvertElements, which converts arrays between any two supported
// element types the way XLA's `convert` does. docs/numerics.md states every rule and its source.
#pragma once

#include <cstdint>

#include "isa/element_type.h"

namespace tpusim::isa {

// f32 -> narrow: round to nearest, ties to even; NaN becomes the format's quiet NaN with the sign
// kept; overflow becomes infinity (NaN for f8e4m3fn, which has none); denormals are rounded, not
// flushed; -0 stays -0.
uint16_t F32ToBf16(float value);
uint16_t F32ToF16(float value);
uint8_t F32ToF8E4M3FN(float value);
uint8_t F32ToF8E5M2(float value);

// narrow -> f32: exact (every narrow value is an f32 value). A NaN keeps its sign and its payload
// bits, moved to the top of the f32 mantissa, so Bf16ToF32(b) has the bits b << 16.
float Bf16ToF32(uint16_t bits);
float F16ToF32(uint16_t bits);
float F8E4M3FNToF32(uint8_t bits);
float F8E5M2ToF32(uint8_t bits);

// Converts `count` elements stored little-endian at `src` (of type `from`) into `dst` (of type
// `to`), following XLA's convert semantics:
//   float -> narrower float: round to nearest even as above; f64 -> bf16/f16/f8 goes through f32
//     (two roundings, as XLA does).
//   float -> int: truncate toward zero, saturate at the int's range, NaN -> 0.
//   int -> int: wrap (two's complement). int -> float: round to nearest (through f32 for
//     bf16/f16/f8).
//   pred: reading, any nonzero byte is true (1); writing, x != 0 (NaN is true).
//   same type: a byte copy.
// Throws tpusim::Error naming the type if `from` or `to` is not IsSupported(), or if count < 0.
// `src` and `dst` must not overlap unless they are the same type.
void ConvertElements(ElementType from, const void* src, ElementType to, void* dst, int64_t count);

}  // namespace tpusim::isa
