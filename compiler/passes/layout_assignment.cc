#include "compiler/passes/layout_assignment.h"

namespace tpusim::compiler {

namespace {

// `minor_to_major` with the dims of size 1 moved to the major end (in their order), the others
// kept in theirs. The elements lie in memory in the same order, but a size-1 dim no longer takes
// a tiled position: bf16[16,8,2048,2048,1]{4,3,2,1,0} would tile (2048, 1) as (2048, 128) and
// take 128 times its 1 GiB; {3,2,1,0,4} tiles (2048, 2048). XLA's TPU layout assignment makes
// the same choice for the layouts it is free to pick.
std::vector<int64_t> DegenerateDimsMajor(const std::vector<int64_t>& dims, const std::vector<int64_t>& minor_to_major) {
  std::vector<int64_t> order;
  for (int64_t d : minor_to_major) {
    if (dims[d] != 1) order.push_back(d);
  }
  for (int64_t d : minor_to_major) {
    if (dims[d] == 1) order.push_back(d);
  }
  return order;
}

}  // namespace

isa::Shape AsType(isa::Shape shape, isa::ElementType type) {
  shape.element_type = type;
  if (shape.layout) {
    shape.layout->tiles = isa::DefaultTpuLayout(type, shape.rank()).tiles;
    shape.layout->element_size_in_bits = 0;
  }
  return shape;
}

isa::Shape WithDefaultLayouts(const isa::Shape& shape) {
  isa::Shape result = shape;
  if (result.is_tuple) {
    for (isa::Shape& element : result.tuple_shapes) element = WithDefaultLayouts(element);
    return result;
  }
  isa::Layout tiled = isa::DefaultTpuLayout(result.element_type, result.rank());
  if (!result.layout) {
    result.layout = tiled;
  } else if (result.layout->tiles.empty()) {
    result.layout->tiles = tiled.tiles;
  } else {
    return result;  // tiles written in the module: kept as written
  }
  result.layout->minor_to_major = DegenerateDimsMajor(result.dims, result.layout->minor_to_major);
  return result;
}

void AssignLayouts(hlo::Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      instruction->set_shape(WithDefaultLayouts(instruction->shape()));
    }
  }
}

}  // namespace tpusim::compiler
