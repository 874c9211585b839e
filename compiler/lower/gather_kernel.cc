#include "compiler/lower/gather_kernel.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/index_loop.h"
#include "isa/element_type.h"

namespace tpusim::compiler {
using hlo::Instruction;

void EmitGatherKernel(KernelContext& c) {
  using namespace isa::ops;
  const Instruction& x = c.instruction;
  DmaEmitter e(c);
  const DeviceBuffer& operand = *c.operands.at(0).at(0);
  const DeviceBuffer& indices = *c.operands.at(1).at(0);
  const DeviceBuffer& result = *c.results.at(0);
  const std::vector<int64_t> offset_dims = x.GetIntListOrEmpty("offset_dims");
  const std::vector<int64_t> collapsed = x.GetIntListOrEmpty("collapsed_slice_dims");
  const std::vector<int64_t> index_map = x.GetIntListOrEmpty("start_index_map");
  const std::vector<int64_t> operand_batching = x.GetIntListOrEmpty("operand_batching_dims");
  const std::vector<int64_t> indices_batching = x.GetIntListOrEmpty("start_indices_batching_dims");
  const std::vector<int64_t> slice_sizes = x.GetIntList("slice_sizes");
  const int64_t index_vector_dim = x.GetInt("index_vector_dim");
  const int64_t r = operand.shape.rank();
  const int64_t o = result.shape.rank();
  const IndexLoop loop = PlanIndexLoop(e, x, indices, index_vector_dim, static_cast<int64_t>(index_map.size()));
  if (isa::ElementCount(result.shape) == 0 || loop.batches == 0) return;
  if (r == 0) CannotLower(x, "gather from a scalar");
  // The result's batch dims: all but offset_dims, in order, one per index batch dim.
  std::vector<int64_t> batch_out;
  for (int64_t d = 0; d < o; ++d) {
    if (!Contains(offset_dims, d)) batch_out.push_back(d);
  }
  e.ZeroLayoutPadding(HbmArray(result));

  // The shared index space of the copy: the result's dims, then the operand's dropped dims.
  std::vector<int64_t> window;
  for (int64_t d = 0; d < r; ++d) {
    if (!Contains(collapsed, d) && !Contains(operand_batching, d)) window.push_back(d);
  }
  if (window.size() != offset_dims.size()) CannotLower(x, "offset_dims do not match the slice's window dims");
  std::vector<int64_t> operand_map(r);
  int64_t rank = o;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t w = IndexOf(window, d);
    operand_map[d] = w < static_cast<int64_t>(window.size()) ? offset_dims[w] : rank++;
  }
  std::vector<int64_t> result_map(o);
  for (int64_t d = 0; d < o; ++d) result_map[d] = d;
  const DmaArray src{isa::MEMORY_SPACE_HBM, operand.address, ExpandedView(operand.shape, rank, operand_map)};
  const DmaArray dst{isa::MEMORY_SPACE_HBM, result.address, ExpandedView(result.shape, rank, result_map)};
  std::vector<int64_t> box(rank, 1);
  for (std::size_t w = 0; w < window.size(); ++w) box[offset_dims[w]] = slice_sizes[window[w]];

  std::vector<DmaIndex> src_start(rank, DmaIndex(0)), dst_start(rank, DmaIndex(0));
  std::vector<int> starts(r, -1);
  for (int64_t d = 0; d < r; ++d) {
    if (Contains(index_map, d)) {
      starts[d] = e.AllocSreg();
      src_start[operand_map[d]] = DmaIndex(starts[d], 0);
    } else if (Contains(operand_batching, d)) {
      const int64_t indices_dim = indices_batching.at(IndexOf(operand_batching, d));
      src_start[operand_map[d]] = DmaIndex(loop.coords.at(IndexOf(loop.batch_dims, indices_dim)), 0);
    }
  }
  for (std::size_t k = 0; k < batch_out.size(); ++k) dst_start[batch_out[k]] = DmaIndex(loop.coords.at(k), 0);
  EmitIndexLoop(e, x, indices, index_vector_dim, loop, [&](const auto& load) {
    for (int64_t d = 0; d < r; ++d) {
      if (starts[d] < 0) continue;
      load(starts[d], IndexOf(index_map, d));
      // XLA clamps a gather's start into the operand.
      e.out().Emit(isa::OPCODE_MAX, {S(starts[d]), S(starts[d]), 0});
      e.out().Emit(isa::OPCODE_MIN, {S(starts[d]), S(starts[d]), operand.shape.dims[d] - slice_sizes[d]});
    }
    e.Dma(src, src_start, dst, dst_start, box, 0);
  });
  // One DMA per batch position, all on semaphore 0.
  e.AddPendingDmas(loop.batches - 1);
  e.WaitDmas();
}

}  // namespace tpusim::compiler
