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
  using namespace isa::ops;
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
  const isa::Shape chunk_shape = RowMajorUntiled(index_type, {std::max<int64_t>(1, entries * components)});
  out.Emit(isa::OPCODE_MOV, {S(batch), 0});
  out.Emit(isa::OPCODE_MOV, {S(chunk_loop), chunks});
  out.Emit(isa::OPCODE_MOV, {S(chunk_address), inter});
  out.Bind(chunk_top);
  if (components > 0) {
    out.Emit(isa::OPCODE_DMA, {Vmem(S(chunk_address)), Smem(0)},
             {{"src", ShapeArg(chunk_shape)},
              {"dst", ShapeArg(chunk_shape)},
              {"size", Sizes({entries * components})},
              {"sem", Sem(1)},
              {"engine", 0}});
    out.Emit(isa::OPCODE_SEM_WAIT, {Sem(1), 1});
  }
  out.Emit(isa::OPCODE_MOV, {S(entry), 0});
  out.Emit(isa::OPCODE_MOV, {S(inner), entries});
  out.Bind(entry_top);
  out.Emit(isa::OPCODE_BGE, {S(batch), loop.batches, Label(done)});
  int64_t stride = 1;
  for (int64_t k = static_cast<int64_t>(loop.batch_sizes.size()) - 1; k >= 0; --k) {
    out.Emit(isa::OPCODE_DIV, {S(tmp), S(batch), stride});
    out.Emit(isa::OPCODE_REM, {S(loop.coords[k]), S(tmp), loop.batch_sizes[k]});
    stride *= loop.batch_sizes[k];
  }
  body([&](int reg, int64_t component) {
    out.Emit(index_type == isa::ElementType::kU32 ? isa::OPCODE_LD_U32 : isa::OPCODE_LD_S32,
             {S(reg), Smem(S(entry), component * 4)});
  });
  out.Emit(isa::OPCODE_ADD, {S(entry), S(entry), components * 4});
  out.Emit(isa::OPCODE_ADD, {S(batch), S(batch), 1});
  out.Emit(isa::OPCODE_LOOP, {S(inner), Label(entry_top)});
  out.Emit(isa::OPCODE_ADD, {S(chunk_address), S(chunk_address), chunk_bytes});
  out.Emit(isa::OPCODE_LOOP, {S(chunk_loop), Label(chunk_top)});
  out.Bind(done);
}

}  // namespace tpusim::compiler
