// Rows of a w-bit type packed into a vreg the way TPU tiles pack them (docs/isa.md, "MXU"):
// a vreg of S sublanes holds P = S * 32 / w rows (isa::PackedRowsPerVreg), row r in sublane
// r / (32 / w), lane c, bits [w * (r mod 32 / w), ...): the lowest bits hold the earliest row.
// For w = 16 that is the (2,1) pairing of T(8,128)(2,1) (even row in the low half), for w = 8 the
// (4,1) of T(8,128)(4,1), for w = 32 one row per sublane. The MXU's pushes and the VPU's bf16
// pack and unpack read and write rows through these two functions.
#pragma once

#include <cstdint>

#include "models/vreg.h"

namespace tpusim::models {

// The w bits (zero-extended) of row `row`, lane `lane`. width is 8, 16 or 32; row < P.
inline uint32_t PackedBits(const Vreg& vreg, uint32_t width, uint32_t row, uint32_t lane) {
  const uint32_t per_word = 32 / width;
  const uint32_t word = vreg.word(row / per_word, lane);
  if (width == 32) return word;
  const uint32_t shift = width * (row % per_word);
  return (word >> shift) & ((uint32_t{1} << width) - 1);
}

// Writes the low w bits of `bits` as row `row`, lane `lane`, keeping the word's other rows.
inline void SetPackedBits(Vreg& vreg, uint32_t width, uint32_t row, uint32_t lane, uint32_t bits) {
  const uint32_t per_word = 32 / width;
  const uint32_t s = row / per_word;
  if (width == 32) {
    vreg.set_word(s, lane, bits);
    return;
  }
  const uint32_t shift = width * (row % per_word);
  const uint32_t field = ((uint32_t{1} << width) - 1) << shift;
  vreg.set_word(s, lane, (vreg.word(s, lane) & ~field) | ((bits << shift) & field));
}

}  // namespace tpusim::models
