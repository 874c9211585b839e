#include "compiler/lower/scatter_kernel.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/index_loop.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;

bool IsAssignment(const hlo::Computation& combiner) {
  const Instruction* root = combiner.root();
  return root->opcode() == hlo::Opcode::kParameter && root->parameter_number() == 1;
}

}  // namespace

void EmitScatterKernel(KernelContext& c) {
  const Instruction& x = c.instruction;
  if (x.operand_count() != 3) CannotLower(x, "scatters of several operands are not lowered yet");
  if (!IsAssignment(*x.GetComputation("to_apply"))) {
    CannotLower(x, "only scatters that assign (to_apply returns its second parameter) are lowered yet");
  }
  DmaEmitter e(c);
  AsmBuilder& out = c.out;
  const DeviceBuffer& operand = *c.operands.at(0).at(0);
  const DeviceBuffer& indices = *c.operands.at(1).at(0);
  const DeviceBuffer& updates = *c.operands.at(2).at(0);
  const DeviceBuffer& result = *c.results.at(0);
  const std::vector<int64_t> window_dims = IntList(x, "update_window_dims");
  const std::vector<int64_t> inserted = IntList(x, "inserted_window_dims");
  const std::vector<int64_t> index_map = IntList(x, "scatter_dims_to_operand_dims");
  const std::vector<int64_t> operand_batching = IntList(x, "input_batching_dims");
  const std::vector<int64_t> indices_batching = IntList(x, "scatter_indices_batching_dims");
  const int64_t index_vector_dim = x.GetInt("index_vector_dim");
  const int64_t r = operand.shape.rank();
  const int64_t u = updates.shape.rank();
  if (r == 0) CannotLower(x, "scatter into a scalar");

  // The result starts as the operand (its padding zero first: the DMA writes elements only).
  e.ZeroLayoutPadding(HbmArray(result));
  e.SplitDma(HbmArray(operand), std::vector<int64_t>(r, 0), HbmArray(result), std::vector<int64_t>(r, 0),
             operand.shape.dims);
  e.WaitDmas();
  const IndexLoop loop = PlanIndexLoop(e, x, indices, index_vector_dim, static_cast<int64_t>(index_map.size()));
  if (loop.batches == 0 || isa::ElementCount(updates.shape) == 0) return;

  // The shared index space: the updates' dims, then the operand's inserted and batching dims.
  std::vector<int64_t> window;  // operand dims that the update windows span
  for (int64_t d = 0; d < r; ++d) {
    if (!Contains(inserted, d) && !Contains(operand_batching, d)) window.push_back(d);
  }
  if (window.size() != window_dims.size()) CannotLower(x, "update_window_dims do not match the operand's window dims");
  std::vector<int64_t> result_map(r);
  int64_t rank = u;
  std::vector<int64_t> window_size(r, 1);
  for (int64_t d = 0; d < r; ++d) {
    const int64_t w = IndexOf(window, d);
    if (w < static_cast<int64_t>(window.size())) {
      result_map[d] = window_dims[w];
      window_size[d] = updates.shape.dims[window_dims[w]];
    } else {
      result_map[d] = rank++;
    }
  }
  std::vector<int64_t> updates_map(u);
  for (int64_t d = 0; d < u; ++d) updates_map[d] = d;
  const DmaArray src{"hbm", updates.address, ExpandedView(updates.shape, rank, updates_map)};
  const DmaArray dst{"hbm", result.address, ExpandedView(result.shape, rank, result_map)};
  std::vector<int64_t> box(rank, 1);
  for (int64_t d : window_dims) box[d] = updates.shape.dims[d];

  // Starts: scattered dims from the index vector, batching dims from the position, and the
  // updates' scatter dims (those not in the window) are the position itself.
  std::vector<DmaIndex> src_start(rank, DmaIndex(0)), dst_start(rank, DmaIndex(0));
  std::vector<int> starts(r, -1);
  for (int64_t d = 0; d < r; ++d) {
    if (Contains(index_map, d)) {
      starts[d] = e.AllocSreg();
      dst_start[result_map[d]] = DmaIndex(starts[d], 0);
    } else if (Contains(operand_batching, d)) {
      const int64_t indices_dim = indices_batching.at(IndexOf(operand_batching, d));
      dst_start[result_map[d]] = DmaIndex(loop.coords.at(IndexOf(loop.batch_dims, indices_dim)), 0);
    }
  }
  int64_t k = 0;
  for (int64_t d = 0; d < u; ++d) {
    if (!Contains(window_dims, d)) src_start[d] = DmaIndex(loop.coords.at(k++), 0);
  }
  EmitIndexLoop(e, x, indices, index_vector_dim, loop, [&](const auto& load) {
    const std::string skip = out.NewLabel(x.name() + ".skip");
    const std::string next = out.NewLabel(x.name() + ".next");
    for (int64_t d = 0; d < r; ++d) {
      if (starts[d] < 0) continue;
      load(starts[d], IndexOf(index_map, d));
      // A window that does not fit in the operand is skipped (XLA's scatter).
      out.Emit("blt s{}, 0, {}", starts[d], skip);
      out.Emit("bgt s{}, {}, {}", starts[d], operand.shape.dims[d] - window_size[d], skip);
    }
    e.Dma(src, src_start, dst, dst_start, box, 0);
    out.Emit("br {}", next);
    out.Bind(skip);
    // Signal for the skipped DMA, so that the wait below counts every position.
    out.Emit("sem.signal sem[{}], 1", DmaEmitter::kDmaSem);
    out.Bind(next);
  });
  e.AddPendingDmas(loop.batches - 1);
  e.WaitDmas();
}

}  // namespace tpusim::compiler
