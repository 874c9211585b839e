// Shapes and layouts as XLA defines them (seeds 000, 002, 004): plain value types with a printer
// that writes XLA's text form (`bf16[8,128]{1,0:T(8,128)(2,1)S(1)}`) and a parser that reads it
// back (shape_parser.cc). How a layout maps elements to memory is in layout_index.h.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/element_type.h"

namespace tpusim::isa {

// A tile dimension printed `*`: merge this dimension into the next more minor one before tiling.
inline constexpr int64_t kCombineDimension = std::numeric_limits<int64_t>::min();
// A dimension printed `?`: dynamic with no bound.
inline constexpr int64_t kUnboundedSize = -1;

struct Tile {
  std::vector<int64_t> dims;  // most major first; kCombineDimension for `*`
  bool operator==(const Tile&) const = default;
};

// Seed 000's padding_value: what the elements added by padded_dimensions hold.
enum class PaddingValue { kZero, kOne, kLowest, kHighest, kUnknown };

// One `SC(dim:i,j,...)` split config (memory split points along a dimension).
struct SplitConfig {
  int64_t dimension = 0;
  std::vector<int64_t> split_indices;
  bool operator==(const SplitConfig&) const = default;
};

struct Layout {
  std::vector<int64_t> minor_to_major;
  // `D(...)` dim level types of sparse arrays, kept as their text (tpusim simulates dense arrays).
  std::vector<std::string> dim_level_types;
  std::vector<Tile> tiles;                         // `T(...)(...)`, applied in order
  int64_t tail_padding_alignment_in_elements = 1;  // `L(n)`
  std::optional<ElementType> index_primitive_type;    // `#(t)`, sparse only
  std::optional<ElementType> pointer_primitive_type;  // `*(t)`, sparse only
  int64_t element_size_in_bits = 0;                // `E(n)`; 0 = the type's natural width
  int64_t memory_space = 0;                        // `S(n)`: 0 HBM, 1 VMEM, 2 SMEM, 3 CMEM, 5 host
  std::vector<SplitConfig> split_configs;          // `SC(...)`
  std::string physical_shape;                      // `P(shape)`, sparse only, kept as printed text
  int64_t dynamic_shape_metadata_prefix_bytes = 0;  // `M(n)`
  // The older layout fields of seed 000; they have no text form. Empty = no padding.
  std::vector<int64_t> padded_dimensions;
  PaddingValue padding_value = PaddingValue::kZero;

  bool operator==(const Layout&) const = default;
};

// Memory spaces (DESIGN.md).
inline constexpr int64_t kMemorySpaceHbm = 0;
inline constexpr int64_t kMemorySpaceVmem = 1;
inline constexpr int64_t kMemorySpaceSmem = 2;
inline constexpr int64_t kMemorySpaceCmem = 3;
inline constexpr int64_t kMemorySpaceHost = 5;

struct Shape {
  // Array shapes: element_type, dims (for a dynamic dim, its bound, or kUnboundedSize) and an
  // optional layout. Tuple shapes: is_tuple and tuple_shapes; the other fields unused.
  ElementType element_type = ElementType::kF32;
  std::vector<int64_t> dims;
  std::vector<bool> dynamic_dims;  // empty, or one flag per dim (`<=N` and `?`)
  std::optional<Layout> layout;
  bool is_tuple = false;
  std::vector<Shape> tuple_shapes;

  static Shape Array(ElementType type, std::vector<int64_t> dims,
                     std::optional<Layout> layout = std::nullopt);
  static Shape Tuple(std::vector<Shape> elements);

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool is_dynamic_dim(int64_t i) const { return !dynamic_dims.empty() && dynamic_dims[i]; }
  bool operator==(const Shape&) const = default;
};

// Number of elements of an array shape (1 for a scalar). Throws tpusim::Error for a dynamic
// unbounded dim or on overflow.
int64_t ElementCount(const Shape& shape);

// XLA's text forms.
std::string ToString(const Tile& tile);
std::string ToString(const Layout& layout);
std::string ToString(const Shape& shape);

// Row-major `minor_to_major` (rank-1, ..., 0): XLA's default for a new shape.
std::vector<int64_t> MajorToMinorOrder(int64_t rank);

// The sizes of `dims` other than 1, in order: what a reshape that only adds or drops size-1
// dims keeps.
std::vector<int64_t> DimsWithoutOnes(const std::vector<int64_t>& dims);

// The layout a TPU gives an array whose layout the program does not fix: row-major with
// bf16/f16/16-bit ints `T(8,128)(2,1)`, 32- and 64-bit types `T(8,128)`, 8-bit types
// `T(8,128)(4,1)`; rank-1 arrays `T(1024)`, `T(1024)(128)(2,1)`, `T(1024)(128)(4,1)`; scalars and
// types tpusim does not hold untiled. docs/layouts.md gives the reasons.
Layout DefaultTpuLayout(ElementType type, int64_t rank);

// Checks that `shape` (recursively, for tuples) has a layout that is valid for it: minor_to_major a
// permutation of its dims, tiles with no zero or negative sizes, no `*` last, no tile longer than
// the shape it applies to (scalars excepted: XLA gives them tiles such as `s32[]{:T(128)}`),
// padded_dimensions of the right rank and no smaller than the dims, L >= 1, E >= 0, S >= 0.
// Throws tpusim::Error saying what is wrong and where. A shape with no layout is valid.
void ValidateLayout(const Shape& shape);

// Parses XLA's text form of a shape. Throws ParseError (offset into `text`) on bad input.
Shape ParseShape(std::string_view text);
// Parses a shape starting at `pos` and advances `pos` past it: for parsers of larger texts (HLO).
Shape ParseShapeAt(std::string_view text, std::size_t& pos);

}  // namespace tpusim::isa
