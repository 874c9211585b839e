// Counting the array leaves of a (possibly nested) tuple shape in flattening order (tuple
// elements depth first), as buffer assignment numbers them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "isa/shape.h"

namespace tpusim::compiler {

// How many arrays `shape` holds: 1 for an array, the sum over the elements for a tuple.
std::size_t LeafCount(const isa::Shape& shape);

// The flattened index of the first leaf of tuple element `index` of `tuple`.
std::size_t ElementFirstLeaf(const isa::Shape& tuple, int64_t index);

// Leaves of tuple element `index` of a value whose shape is `tuple`: [begin, end) in its flattening.
std::pair<std::size_t, std::size_t> ElementLeafRange(const isa::Shape& tuple, int64_t index);

// The array shapes of `shape` in flattening order (`shape` itself for an array; tokens included).
std::vector<const isa::Shape*> ArrayLeaves(const isa::Shape& shape);

}  // namespace tpusim::compiler
