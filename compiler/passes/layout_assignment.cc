#include "compiler/passes/layout_assignment.h"

namespace tpusim::compiler {

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
  }
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
