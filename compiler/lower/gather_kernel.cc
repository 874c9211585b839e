#include "compiler/lower/gather_kernel.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;

std::vector<int64_t> IntList(const Instruction& x, std::string_view name) {
  return x.HasAttribute(name) ? x.GetIntList(name) : std::vector<int64_t>{};
}

bool Contains(const std::vector<int64_t>& v, int64_t value) { return std::find(v.begin(), v.end(), value) != v.end(); }

int64_t IndexOf(const std::vector<int64_t>& v, int64_t value) {
  return static_cast<int64_t>(std::find(v.begin(), v.end(), value) - v.begin());
}

}  // namespace

void EmitGatherKernel(KernelContext& c) {
  const Instruction& x = c.instruction;
  DmaEmitter e(c);
  AsmBuilder& out = c.out;
  const DeviceBuffer& operand = *c.operands.at(0).at(0);
  const DeviceBuffer& indices = *c.operands.at(1).at(0);
  const DeviceBuffer& result = *c.results.at(0);
  const isa::ElementType index_type = indices.shape.element_type;
  if (index_type != isa::ElementType::kS32 && index_type != isa::ElementType::kU32) {
    CannotLower(x, "gather indices are lowered for s32 and u32 only");
  }
  const std::vector<int64_t> offset_dims = IntList(x, "offset_dims");
  const std::vector<int64_t> collapsed = IntList(x, "collapsed_slice_dims");
  const std::vector<int64_t> index_map = IntList(x, "start_index_map");
  const std::vector<int64_t> operand_batching = IntList(x, "operand_batching_dims");
  const std::vector<int64_t> indices_batching = IntList(x, "start_indices_batching_dims");
  const std::vector<int64_t> slice_sizes = x.GetIntList("slice_sizes");
  const int64_t index_vector_dim = x.GetInt("index_vector_dim");
  const int64_t r = operand.shape.rank();
  const int64_t ri = indices.shape.rank();
  const int64_t o = result.shape.rank();
  if (isa::ElementCount(result.shape) == 0) return;
  if (r == 0) CannotLower(x, "gather from a scalar");

  // The indices' batch dims (all but index_vector_dim), and the result's (all but offset_dims).
  std::vector<int64_t> batch_dims, batch_sizes, batch_out;
  for (int64_t d = 0; d < ri; ++d) {
    if (d != index_vector_dim) {
      batch_dims.push_back(d);
      batch_sizes.push_back(indices.shape.dims[d]);
    }
  }
  for (int64_t d = 0; d < o; ++d) {
    if (!Contains(offset_dims, d)) batch_out.push_back(d);
  }
  const int64_t components = static_cast<int64_t>(index_map.size());
  int64_t batches = 1;
  for (int64_t s : batch_sizes) batches *= s;
  if (batches == 0) return;

  // Indices -> VMEM as s32[batch..., components] row-major (a permuting DMA).
  std::vector<int64_t> perm = batch_dims;
  std::vector<int64_t> inter_dims = batch_sizes;
  if (index_vector_dim < ri) {
    perm.push_back(index_vector_dim);
    inter_dims.push_back(components);
  }
  if (inter_dims.empty()) CannotLower(x, "gather with scalar indices");
  const int64_t smem_bytes = static_cast<int64_t>(c.options.smem_capacity_bytes);
  const int64_t entries = std::max<int64_t>(1, smem_bytes / 2 / (4 * std::max<int64_t>(components, 1)));
  const int64_t chunks = (batches + entries - 1) / entries;
  const int64_t chunk_bytes = entries * components * 4;
  e.ZeroLayoutPadding(HbmArray(result));
  const uint64_t inter = e.AllocVmem(static_cast<uint64_t>(chunks * chunk_bytes), "the gather's indices");
  if (components > 0) {
    const DmaArray src{"hbm", indices.address, PermutedView(WithoutMemorySpace(indices.shape), perm)};
    const DmaArray dst{"vmem", inter, RowMajorUntiled(index_type, inter_dims)};
    e.Dma(src, Zeros(inter_dims.size()), dst, Zeros(inter_dims.size()), inter_dims, 0);
    e.WaitDmas();
  }

  // The shared index space of the copy: the result's dims, then the operand's dropped dims.
  const std::vector<int64_t> window = [&] {
    std::vector<int64_t> w;
    for (int64_t d = 0; d < r; ++d) {
      if (!Contains(collapsed, d) && !Contains(operand_batching, d)) w.push_back(d);
    }
    return w;
  }();
  if (window.size() != offset_dims.size()) CannotLower(x, "offset_dims do not match the slice's window dims");
  std::vector<int64_t> operand_map(r);
  int64_t rank = o;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t w = IndexOf(window, d);
    operand_map[d] = w < static_cast<int64_t>(window.size()) ? offset_dims[w] : rank++;
  }
  std::vector<int64_t> result_map(o);
  for (int64_t d = 0; d < o; ++d) result_map[d] = d;
  const DmaArray src{"hbm", operand.address, ExpandedView(operand.shape, rank, operand_map)};
  const DmaArray dst{"hbm", result.address, ExpandedView(result.shape, rank, result_map)};
  std::vector<int64_t> box(rank, 1);
  for (std::size_t w = 0; w < window.size(); ++w) box[offset_dims[w]] = slice_sizes[window[w]];

  const int batch = e.AllocSreg(), entry = e.AllocSreg(), chunk_loop = e.AllocSreg(), inner = e.AllocSreg();
  const int chunk_address = e.AllocSreg(), tmp = e.AllocSreg();
  std::vector<int> coords;
  for (std::size_t k = 0; k < batch_sizes.size(); ++k) coords.push_back(e.AllocSreg());
  std::vector<DmaIndex> src_start(rank, DmaIndex(0)), dst_start(rank, DmaIndex(0));
  std::vector<int> starts(r, -1);
  for (int64_t d = 0; d < r; ++d) {
    if (Contains(index_map, d)) {
      starts[d] = e.AllocSreg();
      src_start[operand_map[d]] = DmaIndex(starts[d], 0);
    } else if (Contains(operand_batching, d)) {
      const int64_t indices_dim = indices_batching.at(IndexOf(operand_batching, d));
      src_start[operand_map[d]] = DmaIndex(coords.at(IndexOf(batch_dims, indices_dim)), 0);
    }
  }
  for (std::size_t k = 0; k < batch_out.size(); ++k) dst_start[batch_out[k]] = DmaIndex(coords.at(k), 0);

  const std::string& name = x.name();
  const std::string chunk_top = out.NewLabel(name + ".chunk");
  const std::string entry_top = out.NewLabel(name + ".entry");
  const std::string done = out.NewLabel(name + ".done");
  const std::string chunk_shape = isa::ToString(RowMajorUntiled(index_type, {std::max<int64_t>(1, entries * components)}));
  out.Emit("mov s{}, 0", batch);
  out.Emit("mov s{}, {}", chunk_loop, chunks);
  out.Emit("mov s{}, {:#x}", chunk_address, inter);
  out.Bind(chunk_top);
  if (components > 0) {
    out.Emit("dma vmem[s{}] -> smem[0x0], src={}, dst={}, size=[{}], sem=sem[1], engine=0", chunk_address, chunk_shape,
             chunk_shape, entries * components);
    out.Emit("sem.wait sem[1], 1");
  }
  out.Emit("mov s{}, 0", entry);
  out.Emit("mov s{}, {}", inner, entries);
  out.Bind(entry_top);
  out.Emit("bge s{}, {}, {}", batch, batches, done);
  int64_t stride = 1;
  for (int64_t k = static_cast<int64_t>(batch_sizes.size()) - 1; k >= 0; --k) {
    out.Emit("div s{}, s{}, {}", tmp, batch, stride);
    out.Emit("rem s{}, s{}, {}", coords[k], tmp, batch_sizes[k]);
    stride *= batch_sizes[k];
  }
  for (int64_t d = 0; d < r; ++d) {
    if (starts[d] < 0) continue;
    const int64_t component = IndexOf(index_map, d);
    out.Emit("{} s{}, smem[s{} + {}]", index_type == isa::ElementType::kU32 ? "ld.u32" : "ld.s32", starts[d], entry,
             component * 4);
    out.Emit("max s{}, s{}, 0", starts[d], starts[d]);
    out.Emit("min s{}, s{}, {}", starts[d], starts[d], operand.shape.dims[d] - slice_sizes[d]);
  }
  e.Dma(src, src_start, dst, dst_start, box, 0);
  out.Emit("add s{}, s{}, {}", entry, entry, components * 4);
  out.Emit("add s{}, s{}, 1", batch, batch);
  out.Emit("loop s{}, {}", inner, entry_top);
  out.Emit("add s{}, s{}, {}", chunk_address, chunk_address, chunk_bytes);
  out.Emit("loop s{}, {}", chunk_loop, chunk_top);
  out.Bind(done);
  // One DMA per batch position, all on semaphore 0.
  e.AddPendingDmas(batches - 1);
  e.WaitDmas();
}

}  // namespace tpusim::compiler
