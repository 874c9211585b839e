// A scalar-core loop over the index vectors of a gather's or scatter's indices: the indices go
// HBM -> VMEM (row-major, index vector last, one permuting DMA) -> SMEM in chunks of half of it,
// and for each batch position the body reads the components with `ld` (docs/compiler.md, "Sort,
// top-k, gather"). Slow (one DMA or more per index vector) but general.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "compiler/lower/dma_region.h"

namespace tpusim::compiler {

inline bool Contains(const std::vector<int64_t>& v, int64_t value) { return std::find(v.begin(), v.end(), value) != v.end(); }
// Position of `value` in `v`, or v.size().
inline int64_t IndexOf(const std::vector<int64_t>& v, int64_t value) {
  return static_cast<int64_t>(std::find(v.begin(), v.end(), value) - v.begin());
}

struct IndexLoop {
  std::vector<int64_t> batch_dims;   // the indices' dims other than index_vector_dim
  std::vector<int64_t> batch_sizes;
  int64_t batches = 0;               // positions: the product of batch_sizes
  int64_t components = 0;            // index vector length
  std::vector<int> coords;           // per batch dim: the register holding the position's coordinate
};

// Plans the loop over `indices` (s32 or u32: CannotLower otherwise) with index vectors of
// `components` along `index_vector_dim`, and allocates its registers.
IndexLoop PlanIndexLoop(DmaEmitter& e, const hlo::Instruction& x, const DeviceBuffer& indices,
                        int64_t index_vector_dim, int64_t components);

// Emits the loop; `body(load)` emits one position's work once the coordinates are set, where
// `load(reg, component)` loads that index component into `reg`. Waits for nothing.
void EmitIndexLoop(DmaEmitter& e, const hlo::Instruction& x, const DeviceBuffer& indices, int64_t index_vector_dim,
                   const IndexLoop& loop, const std::function<void(const std::function<void(int, int64_t)>&)>& body);

}  // namespace tpusim::compiler
