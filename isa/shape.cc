#include "isa/shape.h"

#include <algorithm>
#include <string>

#include "isa/error.h"

namespace tpusim::isa {
namespace {

template <typename T, typename Fn>
std::string Join(const std::vector<T>& items, std::string_view separator, Fn&& to_string) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += to_string(items[i]);
  }
  return out;
}

std::string JoinInts(const std::vector<int64_t>& values) {
  return Join(values, ",", [](int64_t v) { return std::to_string(v); });
}

std::string DimToString(const Shape& shape, std::size_t i) {
  if (shape.dims[i] == kUnboundedSize) return "?";
  std::string text = shape.is_dynamic_dim(static_cast<int64_t>(i)) ? "<=" : "";
  return text + std::to_string(shape.dims[i]);
}

void ValidateTiles(const Shape& shape, const std::string& where) {
  // Each tile applies to the shape the previous one produced; track that shape's rank.
  int64_t rank = shape.rank();
  for (std::size_t t = 0; t < shape.layout->tiles.size(); ++t) {
    const Tile& tile = shape.layout->tiles[t];
    const std::string tile_text = "tile " + ToString(tile) + " of " + where;
    if (tile.dims.empty()) throw Error(tile_text + " has no dimensions");
    const auto tile_rank = static_cast<int64_t>(tile.dims.size());
    if (tile_rank > rank && shape.rank() != 0) {
      throw Error(tile_text + " has " + std::to_string(tile_rank) +
                  " dimensions but applies to a shape of rank " + std::to_string(rank));
    }
    if (tile.dims.back() == kCombineDimension) {
      throw Error(tile_text + " ends in '*': there is no more minor dimension to combine with");
    }
    int64_t combined = 0;
    for (int64_t size : tile.dims) {
      if (size == kCombineDimension) {
        ++combined;
      } else if (size <= 0) {
        throw Error(tile_text + " has a dimension of size " + std::to_string(size) +
                    " (tile sizes must be positive)");
      }
    }
    // Combining removes a dim; tiling the rest doubles the tiled dims.
    rank = std::max(rank, tile_rank) + tile_rank - 2 * combined;
  }
}

void ValidateArrayLayout(const Shape& shape) {
  const Layout& layout = *shape.layout;
  const std::string where = ToString(shape);
  std::vector<int64_t> sorted = layout.minor_to_major;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = static_cast<int64_t>(sorted.size()) == shape.rank();
  for (std::size_t i = 0; permutation && i < sorted.size(); ++i) {
    permutation = sorted[i] == static_cast<int64_t>(i);
  }
  if (!permutation) {
    throw Error("layout of " + where + ": minor_to_major {" + JoinInts(layout.minor_to_major) +
                "} is not a permutation of the " + std::to_string(shape.rank()) +
                " dimensions 0.." + std::to_string(shape.rank() - 1));
  }
  for (int64_t d : shape.dims) {
    if (d < 0 && d != kUnboundedSize) {
      throw Error(where + ": dimension size " + std::to_string(d) + " is negative");
    }
  }
  ValidateTiles(shape, where);
  if (!layout.padded_dimensions.empty()) {
    if (layout.padded_dimensions.size() != shape.dims.size()) {
      throw Error("layout of " + where + ": padded_dimensions has " +
                  std::to_string(layout.padded_dimensions.size()) + " entries for rank " +
                  std::to_string(shape.rank()));
    }
    for (std::size_t i = 0; i < shape.dims.size(); ++i) {
      if (layout.padded_dimensions[i] < shape.dims[i]) {
        throw Error("layout of " + where + ": padded dimension " + std::to_string(i) + " (" +
                    std::to_string(layout.padded_dimensions[i]) + ") is smaller than the dimension (" +
                    std::to_string(shape.dims[i]) + ")");
      }
    }
  }
  if (layout.tail_padding_alignment_in_elements < 1) {
    throw Error("layout of " + where + ": L(" +
                std::to_string(layout.tail_padding_alignment_in_elements) + ") must be at least 1");
  }
  if (layout.element_size_in_bits < 0) {
    throw Error("layout of " + where + ": E(" + std::to_string(layout.element_size_in_bits) +
                ") is negative");
  }
  if (layout.memory_space < 0) {
    throw Error("layout of " + where + ": S(" + std::to_string(layout.memory_space) +
                ") is negative");
  }
}

}  // namespace

Shape Shape::Array(ElementType type, std::vector<int64_t> dims, std::optional<Layout> layout) {
  Shape shape;
  shape.element_type = type;
  shape.dims = std::move(dims);
  shape.layout = std::move(layout);
  return shape;
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape shape;
  shape.is_tuple = true;
  shape.tuple_shapes = std::move(elements);
  return shape;
}

int64_t ElementCount(const Shape& shape) {
  if (shape.is_tuple) throw Error("element count of tuple shape " + ToString(shape));
  int64_t count = 1;
  for (int64_t d : shape.dims) {
    if (d < 0) throw Error("shape " + ToString(shape) + " has a dimension with no size");
    if (__builtin_mul_overflow(count, d, &count)) {
      throw Error("shape " + ToString(shape) + " has more than 2^63 elements");
    }
  }
  return count;
}

std::string ToString(const Tile& tile) {
  return "(" + Join(tile.dims, ",", [](int64_t d) {
           return d == kCombineDimension ? std::string("*") : std::to_string(d);
         }) + ")";
}

// Suffixes in the order XLA's Layout::Print writes them.
std::string ToString(const Layout& layout) {
  std::string suffix;
  if (!layout.dim_level_types.empty()) {
    suffix += "D(" + Join(layout.dim_level_types, ",", [](const std::string& s) { return s; }) + ")";
  }
  if (!layout.tiles.empty()) {
    suffix += "T";
    for (const Tile& tile : layout.tiles) suffix += ToString(tile);
  }
  if (layout.tail_padding_alignment_in_elements != 1) {
    suffix += "L(" + std::to_string(layout.tail_padding_alignment_in_elements) + ")";
  }
  if (layout.index_primitive_type) {
    suffix += "#(" + std::string(ElementTypeName(*layout.index_primitive_type)) + ")";
  }
  if (layout.pointer_primitive_type) {
    suffix += "*(" + std::string(ElementTypeName(*layout.pointer_primitive_type)) + ")";
  }
  if (layout.element_size_in_bits != 0) {
    suffix += "E(" + std::to_string(layout.element_size_in_bits) + ")";
  }
  if (layout.memory_space != 0) suffix += "S(" + std::to_string(layout.memory_space) + ")";
  if (!layout.split_configs.empty()) {
    suffix += "SC";
    for (const SplitConfig& split : layout.split_configs) {
      suffix += "(" + std::to_string(split.dimension) + ":" + JoinInts(split.split_indices) + ")";
    }
  }
  if (!layout.physical_shape.empty()) suffix += "P(" + layout.physical_shape + ")";
  if (layout.dynamic_shape_metadata_prefix_bytes != 0) {
    suffix += "M(" + std::to_string(layout.dynamic_shape_metadata_prefix_bytes) + ")";
  }
  std::string text = "{" + JoinInts(layout.minor_to_major);
  if (!suffix.empty()) text += ":" + suffix;
  return text + "}";
}

std::string ToString(const Shape& shape) {
  if (shape.is_tuple) {
    return "(" + Join(shape.tuple_shapes, ", ", [](const Shape& s) { return ToString(s); }) + ")";
  }
  std::string text(ElementTypeName(shape.element_type));
  text += "[";
  for (std::size_t i = 0; i < shape.dims.size(); ++i) {
    if (i > 0) text += ",";
    text += DimToString(shape, i);
  }
  text += "]";
  if (shape.layout) text += ToString(*shape.layout);
  return text;
}

std::vector<int64_t> DimsWithoutOnes(const std::vector<int64_t>& dims) {
  std::vector<int64_t> kept;
  for (int64_t d : dims) {
    if (d != 1) kept.push_back(d);
  }
  return kept;
}

std::vector<int64_t> MajorToMinorOrder(int64_t rank) {
  std::vector<int64_t> order;
  for (int64_t d = rank - 1; d >= 0; --d) order.push_back(d);
  return order;
}

Layout DefaultTpuLayout(ElementType type, int64_t rank) {
  Layout layout;
  layout.minor_to_major = MajorToMinorOrder(rank);
  if (rank == 0 || !IsSupported(type)) return layout;
  const int bits = ElementBitWidth(type);
  // A vreg holds 8 x 128 32-bit words; narrower types pack 32/bits rows into each word.
  if (rank == 1) {
    layout.tiles.push_back(Tile{{1024}});
    if (bits < 32) layout.tiles.push_back(Tile{{128}});
  } else {
    layout.tiles.push_back(Tile{{8, 128}});
  }
  if (bits < 32) layout.tiles.push_back(Tile{{32 / bits, 1}});
  return layout;
}

void ValidateLayout(const Shape& shape) {
  if (shape.is_tuple) {
    for (const Shape& element : shape.tuple_shapes) ValidateLayout(element);
    return;
  }
  if (shape.layout) ValidateArrayLayout(shape);
}

}  // namespace tpusim::isa
