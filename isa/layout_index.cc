#include "isa/layout_index.h"

#include <algorithm>
#include <string>

#include "isa/error.h"

namespace tpusim::isa {
namespace {

int64_t CheckedProduct(const std::vector<int64_t>& dims, const Shape& shape) {
  int64_t product = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(product, d, &product)) {
      throw Error("shape " + ToString(shape) + " is too large: its laid-out size overflows 64 bits");
    }
  }
  return product;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t RowMajorIndex(const std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  int64_t linear = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) linear = linear * dims[i] + index[i];
  return linear;
}

std::vector<int64_t> RowMajorUnravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size());
  for (std::size_t i = dims.size(); i-- > 0;) {
    index[i] = linear % dims[i];
    linear /= dims[i];
  }
  return index;
}

}  // namespace

LayoutMap::LayoutMap(const Shape& shape) : shape_(shape) {
  if (shape.is_tuple) throw Error("cannot lay out tuple shape " + ToString(shape) + " as one array");
  for (int64_t d : shape.dims) {
    if (d == kUnboundedSize) {
      throw Error("shape " + ToString(shape) + " has an unbounded dynamic dimension: no size to lay out");
    }
  }
  ValidateLayout(shape);
  if (shape.layout) {
    layout_ = *shape.layout;
  } else {
    layout_.minor_to_major = MajorToMinorOrder(shape.rank());
  }
  element_count_ = CheckedProduct(shape.dims, shape);

  physical_order_.assign(layout_.minor_to_major.rbegin(), layout_.minor_to_major.rend());
  const std::vector<int64_t>& sizes =
      layout_.padded_dimensions.empty() ? shape.dims : layout_.padded_dimensions;
  for (int64_t dim : physical_order_) physical_dims_.push_back(sizes[dim]);

  std::vector<int64_t> current = physical_dims_;
  for (const Tile& tile : layout_.tiles) {
    steps_.push_back(MakeStep(tile, current));
    current = steps_.back().output_dims;
    CheckedProduct(current, shape);
  }
  final_dims_ = current;
  final_element_count_ = CheckedProduct(final_dims_, shape);
  const int64_t align = layout_.tail_padding_alignment_in_elements;
  physical_element_count_ = CeilDiv(final_element_count_, align) * align;
  element_bits_ = layout_.element_size_in_bits != 0 ? layout_.element_size_in_bits
                                                    : ElementBitWidth(shape.element_type);
  if (element_bits_ > 0 && physical_element_count_ > INT64_MAX / element_bits_) {
    throw Error("shape " + ToString(shape) + " is too large: its size in bits overflows 64 bits");
  }
}

LayoutMap::TileStep LayoutMap::MakeStep(const Tile& tile, const std::vector<int64_t>& dims) {
  TileStep step;
  step.tile = tile;
  const auto tile_rank = static_cast<int64_t>(tile.dims.size());
  step.extension = std::max<int64_t>(0, tile_rank - static_cast<int64_t>(dims.size()));
  step.input_dims.assign(step.extension, 1);
  step.input_dims.insert(step.input_dims.end(), dims.begin(), dims.end());
  step.untouched = static_cast<int64_t>(step.input_dims.size()) - tile_rank;

  // Walk the tile major to minor; a `*` dim folds into the next one.
  int64_t first = step.untouched;
  int64_t merged_size = 1;
  for (int64_t i = 0; i < tile_rank; ++i) {
    const int64_t dim = step.untouched + i;
    merged_size *= step.input_dims[dim];
    if (tile.dims[i] == kCombineDimension) continue;
    step.pieces.push_back({first, dim, merged_size, tile.dims[i]});
    first = dim + 1;
    merged_size = 1;
  }

  step.output_dims.assign(step.input_dims.begin(), step.input_dims.begin() + step.untouched);
  for (const auto& piece : step.pieces) step.output_dims.push_back(CeilDiv(piece.size, piece.tile));
  for (const auto& piece : step.pieces) step.output_dims.push_back(piece.tile);
  return step;
}

std::vector<int64_t> LayoutMap::Forward(const TileStep& step, std::vector<int64_t> index) {
  index.insert(index.begin(), step.extension, 0);
  std::vector<int64_t> out(index.begin(), index.begin() + step.untouched);
  std::vector<int64_t> in_tile;
  for (const auto& piece : step.pieces) {
    int64_t merged = 0;
    for (int64_t d = piece.first; d <= piece.last; ++d) {
      merged = merged * step.input_dims[d] + index[d];
    }
    out.push_back(merged / piece.tile);
    in_tile.push_back(merged % piece.tile);
  }
  out.insert(out.end(), in_tile.begin(), in_tile.end());
  return out;
}

std::optional<std::vector<int64_t>> LayoutMap::Backward(const TileStep& step,
                                                        const std::vector<int64_t>& index) {
  std::vector<int64_t> in(index.begin(), index.begin() + step.untouched);
  in.resize(step.input_dims.size());
  const std::size_t count = step.pieces.size();
  for (std::size_t p = 0; p < count; ++p) {
    const auto& piece = step.pieces[p];
    int64_t merged = index[step.untouched + p] * piece.tile + index[step.untouched + count + p];
    if (merged >= piece.size) return std::nullopt;  // padding added by this tile
    for (int64_t d = piece.last; d >= piece.first; --d) {
      in[d] = merged % step.input_dims[d];
      merged /= step.input_dims[d];
    }
  }
  // Extension dims have size 1, so their index is 0 here; drop them.
  in.erase(in.begin(), in.begin() + step.extension);
  return in;
}

std::vector<std::vector<int64_t>> LayoutMap::tiled_dims() const {
  std::vector<std::vector<int64_t>> result;
  for (const TileStep& step : steps_) result.push_back(step.output_dims);
  return result;
}

bool LayoutMap::is_separable() const {
  for (const Tile& tile : layout_.tiles) {
    if (std::find(tile.dims.begin(), tile.dims.end(), kCombineDimension) != tile.dims.end()) {
      return false;
    }
  }
  return true;
}

int64_t LayoutMap::LinearIndex(std::span<const int64_t> index) const {
  if (static_cast<int64_t>(index.size()) != shape_.rank()) {
    throw Error("index has " + std::to_string(index.size()) + " coordinates but " +
                ToString(shape_) + " has rank " + std::to_string(shape_.rank()));
  }
  for (std::size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= shape_.dims[i]) {
      throw Error("index " + std::to_string(index[i]) + " is out of bounds for dimension " +
                  std::to_string(i) + " of " + ToString(shape_) + " (size " +
                  std::to_string(shape_.dims[i]) + ")");
    }
  }
  std::vector<int64_t> current;
  for (int64_t dim : physical_order_) current.push_back(index[dim]);
  for (const TileStep& step : steps_) current = Forward(step, std::move(current));
  return RowMajorIndex(current, final_dims_);
}

std::optional<std::vector<int64_t>> LayoutMap::LogicalIndex(int64_t linear) const {
  if (linear < 0 || linear >= physical_element_count_) {
    throw Error("linear index " + std::to_string(linear) + " is outside the " +
                std::to_string(physical_element_count_) + " elements of " + ToString(shape_));
  }
  if (linear >= final_element_count_) return std::nullopt;  // L(n) tail padding
  std::vector<int64_t> current = RowMajorUnravel(linear, final_dims_);
  for (auto step = steps_.rbegin(); step != steps_.rend(); ++step) {
    std::optional<std::vector<int64_t>> previous = Backward(*step, current);
    if (!previous) return std::nullopt;
    current = std::move(*previous);
  }
  std::vector<int64_t> index(shape_.dims.size());
  for (std::size_t i = 0; i < physical_order_.size(); ++i) {
    const int64_t dim = physical_order_[i];
    if (current[i] >= shape_.dims[dim]) return std::nullopt;  // padded_dimensions padding
    index[dim] = current[i];
  }
  return index;
}

}  // namespace tpusim::isa
