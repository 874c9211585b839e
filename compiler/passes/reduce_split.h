// Reduce splitting: the reduce kernel keeps its whole result in VMEM as 32-bit accumulators in the
// result's tiling (docs/compiler.md, "Reduce"). Where that does not fit (MaxText's reduce of
// bf16[16,2048,8,128] over its 128 lanes has a [16,2048,8] result whose 8 columns tile to 128: 16
// MiB of accumulators, 24 MiB with the bf16 stage), the reduce becomes
//   concatenate(reduce(slice_0(x)), ..., reduce(slice_{n-1}(x)))
// along the outermost dim the reduce keeps, in the fewest equal slices whose results fit. Each
// output element is folded from the same elements in the same order, so the values are the same;
// the slices and the concatenate are copies, the extra cost. Runs after layout assignment.
#pragma once

#include <cstdint>

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void SplitLargeReduces(hlo::Module& module, int64_t sublanes, int64_t lanes, uint64_t vmem_capacity_bytes);

}  // namespace tpusim::compiler
