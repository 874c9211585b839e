#include "compiler/lower/vtile.h"

#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

bool IsTile(const isa::Tile& tile, std::initializer_list<int64_t> dims) {
  return tile.dims == std::vector<int64_t>(dims);
}

}  // namespace

std::optional<VtileGeometry> GetVtileGeometry(const isa::Shape& shape, int64_t sublanes, int64_t lanes) {
  if (shape.is_tuple || !shape.layout) return std::nullopt;
  const isa::Layout& layout = *shape.layout;
  const bool is_16bit_float = shape.element_type == isa::ElementType::kBF16 || shape.element_type == isa::ElementType::kF16;
  // pred is a byte per element (0 or 1) with the 8-bit layout T(8,128)(4,1), as XLA stores it.
  const bool is_8bit = shape.element_type == isa::ElementType::kS8 || shape.element_type == isa::ElementType::kU8 ||
                       shape.element_type == isa::ElementType::kPred;
  const int bits = isa::ElementBitWidth(shape.element_type);
  if (!is_16bit_float && !is_8bit && shape.element_type != isa::ElementType::kF32 &&
      shape.element_type != isa::ElementType::kS32 && shape.element_type != isa::ElementType::kU32) {
    return std::nullopt;
  }
  // 8-bit tiles are S/4 word rows of 4 packed rows each: S must be a multiple of 4.
  if (is_8bit && sublanes % 4 != 0) return std::nullopt;
  const int64_t pack = 32 / bits;  // rows per 32-bit word: (2,1) for 16-bit, (4,1) for 8-bit
  if (!layout.padded_dimensions.empty() || layout.tail_padding_alignment_in_elements != 1 ||
      (layout.element_size_in_bits != 0 && layout.element_size_in_bits != bits) ||
      layout.memory_space != isa::kMemorySpaceHbm || !layout.split_configs.empty() ||
      layout.dynamic_shape_metadata_prefix_bytes != 0) {
    return std::nullopt;
  }
  for (bool dynamic : shape.dynamic_dims) {
    if (dynamic) return std::nullopt;
  }
  VtileGeometry geometry;
  geometry.element_bits = bits;
  const int64_t tile_elements = sublanes * lanes;
  geometry.tile_bytes = tile_elements * bits / 8;
  const std::vector<isa::Tile>& tiles = layout.tiles;
  if (shape.rank() <= 1) {
    const int64_t n = shape.rank() == 0 ? 1 : shape.dims[0];
    if (shape.rank() == 0) {
      if (!tiles.empty()) return std::nullopt;
    } else if (bits == 32) {
      if (tiles.size() != 1 || !IsTile(tiles[0], {tile_elements})) return std::nullopt;
    } else if (tiles.size() != 3 || !IsTile(tiles[0], {tile_elements}) || !IsTile(tiles[1], {lanes}) ||
               !IsTile(tiles[2], {pack, 1})) {
      return std::nullopt;
    }
    geometry.tiles = (n + tile_elements - 1) / tile_elements;
    if (shape.rank() == 0) {
      // An untiled scalar is one element, not a tile: only its first bytes exist.
      geometry.tile_bytes = bits / 8;
    }
    geometry.strips = geometry.tiles;
    geometry.strips_per_matrix = geometry.tiles;
    const int64_t last = n - (geometry.tiles - 1) * tile_elements;
    geometry.partial_elements = last == tile_elements ? 0 : last;
    return geometry;
  }
  if (bits == 32 ? (tiles.size() != 1 || !IsTile(tiles[0], {sublanes, lanes}))
                 : (tiles.size() != 2 || !IsTile(tiles[0], {sublanes, lanes}) || !IsTile(tiles[1], {pack, 1}))) {
    return std::nullopt;
  }
  const std::vector<int64_t>& minor_to_major = layout.minor_to_major;
  const int64_t columns = shape.dims[minor_to_major[0]];
  const int64_t rows = shape.dims[minor_to_major[1]];
  int64_t matrices = 1;
  for (std::size_t i = 2; i < minor_to_major.size(); ++i) matrices *= shape.dims[minor_to_major[i]];
  geometry.strip_tiles = (columns + lanes - 1) / lanes;
  geometry.strips_per_matrix = (rows + sublanes - 1) / sublanes;
  geometry.strips = matrices * geometry.strips_per_matrix;
  geometry.tiles = geometry.strips * geometry.strip_tiles;
  geometry.partial_rows = rows % sublanes;
  geometry.partial_lanes = columns % lanes;
  return geometry;
}

bool SameTiling(const isa::Shape& a, const isa::Shape& b, int64_t sublanes, int64_t lanes) {
  if (a.dims != b.dims || !a.layout || !b.layout || a.layout->minor_to_major != b.layout->minor_to_major) return false;
  return GetVtileGeometry(a, sublanes, lanes).has_value() && GetVtileGeometry(b, sublanes, lanes).has_value();
}

}  // namespace tpusim::compiler
