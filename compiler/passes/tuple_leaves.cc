#include "compiler/passes/tuple_leaves.h"

namespace tpusim::compiler {

std::size_t LeafCount(const isa::Shape& shape) {
  if (!shape.is_tuple) return 1;
  std::size_t count = 0;
  for (const isa::Shape& element : shape.tuple_shapes) count += LeafCount(element);
  return count;
}

std::size_t ElementFirstLeaf(const isa::Shape& tuple, int64_t index) {
  std::size_t first = 0;
  for (int64_t i = 0; i < index; ++i) first += LeafCount(tuple.tuple_shapes.at(i));
  return first;
}

std::pair<std::size_t, std::size_t> ElementLeafRange(const isa::Shape& tuple, int64_t index) {
  const std::size_t begin = ElementFirstLeaf(tuple, index);
  return {begin, begin + LeafCount(tuple.tuple_shapes.at(index))};
}

std::vector<const isa::Shape*> ArrayLeaves(const isa::Shape& shape) {
  if (!shape.is_tuple) return {&shape};
  std::vector<const isa::Shape*> leaves;
  for (const isa::Shape& element : shape.tuple_shapes) {
    const std::vector<const isa::Shape*> inner = ArrayLeaves(element);
    leaves.insert(leaves.end(), inner.begin(), inner.end());
  }
  return leaves;
}

}  // namespace tpusim::compiler
