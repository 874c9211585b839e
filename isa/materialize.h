// A logical dense array <-> its device byte image under a layout. Every transfer into or out of
// simulated memory goes through here, so it is written for speed: for layouts without `*` dims the
// linear index is a sum of one term per logical dim, precomputed per dim, and rows are scattered
// (or gathered) through those tables.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "isa/layout_index.h"

namespace tpusim::isa {

// `logical`: the array's elements in row-major (C) order, little-endian, ElementByteWidth bytes each
// (what a .npy file holds). Returns the image: LayoutMap::byte_size() bytes; padding elements hold
// the layout's padding value (zero bytes unless seed 000's padding_value says otherwise).
// Throws tpusim::Error for an unsupported element type, an E(n) other than the type's width, or a
// size mismatch.
std::vector<uint8_t> Materialize(const Shape& shape, std::span<const uint8_t> logical);
void MaterializeInto(const LayoutMap& map, std::span<const uint8_t> logical, std::span<uint8_t> image);

// The inverse: reads the logical elements back out of an image; padding is ignored.
std::vector<uint8_t> Dematerialize(const Shape& shape, std::span<const uint8_t> image);
void DematerializeInto(const LayoutMap& map, std::span<const uint8_t> image, std::span<uint8_t> logical);

}  // namespace tpusim::isa
