#include "compiler/lower/index_loop.h"

#include <algorithm>
#include <string>

#include "isa/element_type.h"

namespace tpusim::compiler {

IndexLoop PlanIndexLoop(DmaEmitter& e, const hlo::Instruction& x, const DeviceBuffer& indices,
                        int64_t index_vector_dim, int64_t components) {
  const isa::ElementType index_type = indices.shape.element_type;
  if (index_type != isa::ElementType::kS32 && index_type != isa::ElementType::kU32) {
    CannotLower(x, "indices are lowered for s32 and u32 only");
  }
  IndexLoop loop;
  loop.components = components;
  for (int64_t d = 0; d < indices.shape.rank(); ++d) {
    if (d != index_vector_dim) {
      loop.batch_dims.push_back(d);
      loop.batch_sizes.push_back(indices.shape.dims[d]);
    }
  }
  loop.batches = 1;
  for (int64_t s : loop.batch_sizes) loop.batches *= s;
  for (std::size_t k = 0; k < loop.batch_sizes.size(); ++k) loop.coords.push_back(e.AllocSreg());
  return loop;
}

void EmitIndexLoop(DmaEmitter& e, const hlo::Instruction& x, const DeviceBuffer& indices, int64_t index_vector_dim,
                   const IndexLoop& loop, const std::function<void(const std::function<void(int, int64_t)>&)>& body) {
  ProgramBuilder& out = e.out();
  const isa::ElementType index_type = indices.shape.element_type;
  const int64_t components = loop.components;
  // Indices -> VMEM as [batch..., components] row-major (a permuting DMA).
  std::vector<int64_t> perm = loop.batch_dims;
  std::vector<int64_t> inter_dims = loop.batch_sizes;
  if (index_vector_dim < indices.shape.rank()) {
    perm.push_back(index_vector_dim);
    inter_dims.push_back(components);
  }
  if (inter_dims.empty()) CannotLower(x, "scalar indices are not lowered yet");
  const int64_t smem_bytes = static_cast<int64_t>(e.context().options.smem_capacity_bytes);
  const int64_t entries = std::max<int64_t>(1, smem_bytes / 2 / (4 * std::max<int64_t>(components, 1)));
  const int64_t chunks = (loop.batches + entries - 1) / entries;
  const int64_t chunk_bytes = entries * components * 4;
  const uint64_t inter = e.AllocVmem(static_cast<uint64_t>(chunks * chunk_bytes), "the indices");
  if (components > 0) {
    const DmaArray src{isa::MEMORY_SPACE_HBM, indices.address, PermutedView(WithoutMemorySpace(indices.shape), perm)};
    const DmaArray dst{isa::MEMORY_SPACE_VMEM, inter, RowMajorUntiled(index_type, inter_dims)};
    e.Dma(src, Zeros(inter_dims.size()), dst, Zeros(inter_dims.size()), inter_dims, 0);
    e.WaitDmas();
  }
  const int batch = e.AllocSreg(), entry = e.AllocSreg(), chunk_loop = e.AllocSreg(), inner = e.AllocSreg();
  const int chunk_address = e.AllocSreg(), tmp = e.AllocSreg();
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
  out.Emit("bge s{}, {}, {}", batch, loop.batches, done);
  int64_t stride = 1;
  for (int64_t k = static_cast<int64_t>(loop.batch_sizes.size()) - 1; k >= 0; --k) {
    out.Emit("div s{}, s{}, {}", tmp, batch, stride);
    out.Emit("rem s{}, s{}, {}", loop.coords[k], tmp, loop.batch_sizes[k]);
    stride *= loop.batch_sizes[k];
  }
  body([&](int reg, int64_t component) {
    out.Emit("{} s{}, smem[s{} + {}]", index_type == isa::ElementType::kU32 ? "ld.u32" : "ld.s32", reg, entry,
             component * 4);
  });
  out.Emit("add s{}, s{}, {}", entry, entry, components * 4);
  out.Emit("add s{}, s{}, 1", batch, batch);
  out.Emit("loop s{}, {}", inner, entry_top);
  out.Emit("add s{}, s{}, {}", chunk_address, chunk_address, chunk_bytes);
  out.Emit("loop s{}, {}", chunk_loop, chunk_top);
  out.Bind(done);
}

}  // namespace tpusim::compiler
