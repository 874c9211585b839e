// A Literal is a host value of an HLO shape: a dense array (its elements row-major, little-endian,
// ElementByteWidth bytes each, whatever the shape's layout says about device memory) or a tuple of
// literals. It is what an HLO `constant` holds, what the reference evaluator computes with, and
// what travels to and from .npy files.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "isa/element_type.h"
#include "isa/shape.h"

namespace tpusim::hlo {

class Literal {
 public:
  Literal() : Literal(isa::Shape::Tuple({})) {}
  // All-zero value of `shape` (recursively for tuples). Throws tpusim::Error for an array of an
  // unsupported element type or an unbounded dynamic dim.
  explicit Literal(const isa::Shape& shape);
  // An array literal from row-major element bytes; throws if the size does not match the shape.
  static Literal FromBytes(const isa::Shape& shape, std::vector<uint8_t> bytes);
  static Literal Tuple(std::vector<Literal> elements);
  // A rank-0 or rank-n array of `type` whose elements are `values` converted with XLA's convert
  // semantics (round to nearest even for narrow floats, saturating for ints). Handy in tests.
  static Literal FromDoubles(isa::ElementType type, std::vector<int64_t> dims,
                             const std::vector<double>& values);

  const isa::Shape& shape() const { return shape_; }
  bool is_tuple() const { return shape_.is_tuple; }
  isa::ElementType element_type() const { return shape_.element_type; }
  const std::vector<int64_t>& dims() const { return shape_.dims; }
  int64_t element_count() const { return element_count_; }
  int element_bytes() const { return isa::ElementByteWidth(shape_.element_type); }

  std::span<const uint8_t> bytes() const { return bytes_; }
  std::span<uint8_t> mutable_bytes() { return bytes_; }
  const std::vector<Literal>& elements() const { return elements_; }
  std::vector<Literal>& mutable_elements() { return elements_; }

  // Element `linear` (row-major position) as a double, and set from a double with XLA's convert
  // semantics. Exact for every value of every supported type except 64-bit ints beyond 2^53.
  double GetDouble(int64_t linear) const;
  void SetDouble(int64_t linear, double value);
  // Integer view of element `linear` (ints and pred; floats truncate as XLA's convert does).
  int64_t GetInt(int64_t linear) const;
  void SetInt(int64_t linear, int64_t value);

  // Same shape (element type and dims; layouts are ignored) and the same bytes, recursively.
  bool operator==(const Literal& other) const;

 private:
  isa::Shape shape_;
  int64_t element_count_ = 0;
  std::vector<uint8_t> bytes_;
  std::vector<Literal> elements_;
};

// Row-major linear position of `index` in `dims`, and its inverse.
int64_t RowMajorLinear(std::span<const int64_t> index, std::span<const int64_t> dims);
std::vector<int64_t> RowMajorIndex(int64_t linear, std::span<const int64_t> dims);

}  // namespace tpusim::hlo
