// Layout assignment: every array shape in a module gets a tiled layout, as XLA's TPU layout
// assignment does. A layout with tiles is kept as written. A missing layout becomes the TPU default
// (isa::DefaultTpuLayout: row-major, T(8,128) for 32-bit types, T(8,128)(2,1) for 16-bit,
// T(8,128)(4,1) for 8-bit, T(1024)... on rank 1, untiled scalars). A layout without tiles
// (`{1,0}`, what CPU and GPU dumps print) keeps its minor_to_major and memory space and gets the
// default tiles for its type and rank: on a TPU every array in memory is tiled. In both cases dims
// of size 1 move to the major end of minor_to_major: the elements keep their order in memory, and
// no size-1 dim is padded to a tile's 8 or 128. Kernels that need
// an operand in another layout insert their own re-tiling DMAs (compiler/lower).
#pragma once

#include "compiler/hlo/ir.h"
#include "isa/shape.h"

namespace tpusim::compiler {

// `shape` with every array (tuple elements recursively) that has no layout given the default.
isa::Shape WithDefaultLayouts(const isa::Shape& shape);

// `shape` as `type`: its dims and dimension order, with `type`'s default TPU tiles (and element
// size), as an instruction computing the same array in another type is laid out.
isa::Shape AsType(isa::Shape shape, isa::ElementType type);

// Applies WithDefaultLayouts to every instruction of every computation.
void AssignLayouts(hlo::Module& module);

}  // namespace tpusim::compiler
