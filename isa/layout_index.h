// Where each element of an array lives under its layout (seed 004, "Tiled layout"):
//   1. minor_to_major orders the dims major to minor (the physical shape); seed 000's
//      padded_dimensions enlarge them;
//   2. each tile in turn applies to the most minor dims of the current shape: `*` dims merge into the
//      next more minor dim, every tiled dim d with tile size t is padded to a multiple of t and split
//      into (ceil(d/t), t), and all in-tile dims move minor, keeping their order;
//   3. the element's linear index is its row-major position in the final shape; L(n) then pads
//      the element count to a multiple of n, and E(n) sets the bits per element.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "isa/shape.h"

namespace tpusim::isa {

class LayoutMap {
 public:
  // `shape` is an array shape with static (or bounded dynamic) dims; with no layout it is laid out
  // row-major and untiled, as XLA's default. Validates the layout (ValidateLayout) and throws
  // tpusim::Error if it is invalid or the array is too large to index.
  explicit LayoutMap(const Shape& shape);

  const Shape& shape() const { return shape_; }
  const Layout& layout() const { return layout_; }
  int64_t element_count() const { return element_count_; }
  // Logical dim numbers from most major to most minor (minor_to_major reversed).
  const std::vector<int64_t>& physical_order() const { return physical_order_; }
  // Dim sizes in physical_order, padded by padded_dimensions: the shape before any tile.
  const std::vector<int64_t>& physical_dims() const { return physical_dims_; }
  // The shape after each tile, one entry per tile in order.
  std::vector<std::vector<int64_t>> tiled_dims() const;
  // Elements the image holds: the final shape's element count rounded up to L(n).
  int64_t physical_element_count() const { return physical_element_count_; }
  int64_t element_bits() const { return element_bits_; }
  int64_t byte_size() const { return (physical_element_count_ * element_bits_ + 7) / 8; }
  // True when no tile combines dims: the linear index is then a sum of one term per logical dim.
  bool is_separable() const;

  // Linear (element) index of a logical index. Throws tpusim::Error if out of bounds.
  int64_t LinearIndex(std::span<const int64_t> index) const;
  // The logical index at a linear index, or nullopt if that element is padding. Throws
  // tpusim::Error if `linear` is outside [0, physical_element_count()).
  std::optional<std::vector<int64_t>> LogicalIndex(int64_t linear) const;
  // Byte offset of the element at `index` (sub-byte elements: the byte holding its first bit).
  int64_t ByteOffset(std::span<const int64_t> index) const {
    return LinearIndex(index) * element_bits_ / 8;
  }

 private:
  // One tile applied to the shape produced by the previous one.
  struct TileStep {
    struct Piece {      // one tiled dim after `*` combining
      int64_t first;    // first and last input dims it merges
      int64_t last;
      int64_t size;     // product of their sizes
      int64_t tile;     // the tile size along it
    };
    Tile tile;
    int64_t extension = 0;            // size-1 dims put in front (a scalar's tiles)
    std::vector<int64_t> input_dims;  // after the extension
    int64_t untouched = 0;            // leading input dims the tile leaves alone
    std::vector<Piece> pieces;
    std::vector<int64_t> output_dims;
  };
  static TileStep MakeStep(const Tile& tile, const std::vector<int64_t>& dims);
  static std::vector<int64_t> Forward(const TileStep& step, std::vector<int64_t> index);
  static std::optional<std::vector<int64_t>> Backward(const TileStep& step,
                                                      const std::vector<int64_t>& index);

  Shape shape_;
  Layout layout_;
  int64_t element_count_ = 1;
  std::vector<int64_t> physical_order_;
  std::vector<int64_t> physical_dims_;
  std::vector<TileStep> steps_;
  std::vector<int64_t> final_dims_;
  int64_t final_element_count_ = 1;
  int64_t physical_element_count_ = 1;
  int64_t element_bits_ = 0;
};

}  // namespace tpusim::isa
