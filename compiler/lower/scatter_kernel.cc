#include "compiler/lower/scatter_kernel.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/index_loop.h"
#include "compiler/passes/buffer_assignment.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;

bool IsAssignment(const hlo::Computation& combiner) {
  const Instruction* root = combiner.root();
  return root->opcode() == hlo::Opcode::kParameter && root->parameter_number() == 1;
}

// add(p0, p1) or add(p1, p0) of the combiner's two scalar parameters: jax's scatter-add (an
// embedding's gradient).
bool IsAddition(const hlo::Computation& combiner) {
  const Instruction* root = combiner.root();
  if (root->opcode() != hlo::Opcode::kAdd || combiner.parameters().size() != 2) return false;
  const Instruction* a = root->operand(0);
  const Instruction* b = root->operand(1);
  return a->opcode() == hlo::Opcode::kParameter && b->opcode() == hlo::Opcode::kParameter &&
         a->parameter_number() != b->parameter_number();
}

// The VPU code of `window = window + update` over `bytes` of two VMEM arrays in the same element
// order (any order: each 32-bit word pairs with the word at the same offset), 4 KiB per vreg.
// bf16 words hold two elements: unpacked to f32, added, packed back with one rounding, which is
// bf16's add (compute in f32, round once).
void EmitVmemAdd(DmaEmitter& e, isa::ElementType type, uint64_t window, uint64_t update, uint64_t bytes) {
  ProgramBuilder& out = e.out();
  const int a = e.AllocSreg();
  const int b = e.AllocSreg();
  const int count = e.AllocSreg();
  const uint64_t vreg = static_cast<uint64_t>(out.target().sublanes() * out.target().lanes() * 4);
  using namespace isa::ops;
  out.Emit(isa::OPCODE_MOV, {S(a), window});
  out.Emit(isa::OPCODE_MOV, {S(b), update});
  out.Emit(isa::OPCODE_MOV, {S(count), (bytes + vreg - 1) / vreg});
  const std::string loop = out.NewLabel(e.context().instruction.name() + ".add");
  out.Bind(loop);
  out.Emit(isa::OPCODE_VLD, {V(0), Vmem(S(a))});
  out.Emit(isa::OPCODE_VLD, {V(1), Vmem(S(b))});
  switch (type) {
    case isa::ElementType::kF32: out.Emit(isa::OPCODE_VADD_F32, {V(0), V(0), V(1)}); break;
    case isa::ElementType::kS32: case isa::ElementType::kU32: out.Emit(isa::OPCODE_VADD_S32, {V(0), V(0), V(1)}); break;
    default:  // bf16 (checked by the caller)
      out.Emit(isa::OPCODE_VUNPACK_LO_BF16, {V(2), V(0)});
      out.Emit(isa::OPCODE_VUNPACK_HI_BF16, {V(3), V(0)});
      out.Emit(isa::OPCODE_VUNPACK_LO_BF16, {V(4), V(1)});
      out.Emit(isa::OPCODE_VUNPACK_HI_BF16, {V(5), V(1)});
      out.Emit(isa::OPCODE_VADD_F32, {V(2), V(2), V(4)});
      out.Emit(isa::OPCODE_VADD_F32, {V(3), V(3), V(5)});
      out.Emit(isa::OPCODE_VPACK_BF16, {V(0), V(2), V(3)});
      break;
  }
  out.Emit(isa::OPCODE_VST, {V(0), Vmem(S(a))});
  out.Emit(isa::OPCODE_ADD, {S(a), S(a), vreg});
  out.Emit(isa::OPCODE_ADD, {S(b), S(b), vreg});
  out.Emit(isa::OPCODE_LOOP, {S(count), Label(loop)});
}

}  // namespace

void EmitScatterKernel(KernelContext& c) {
  const Instruction& x = c.instruction;
  if (x.operand_count() != 3) CannotLower(x, "scatters of several operands are not lowered yet");
  const bool adds = IsAddition(*x.GetComputation("to_apply"));
  if (!IsAssignment(*x.GetComputation("to_apply")) && !adds) {
    CannotLower(x, "only scatters that assign (to_apply returns its second parameter) or add are lowered yet");
  }
  const isa::ElementType type = x.shape().element_type;
  if (adds && type != isa::ElementType::kF32 && type != isa::ElementType::kBF16 && type != isa::ElementType::kS32 &&
      type != isa::ElementType::kU32) {
    CannotLower(x, "scatter-add of " + std::string(isa::ElementTypeName(type)) + " is not lowered yet");
  }
  DmaEmitter e(c);
  ProgramBuilder& out = c.out;
  using namespace isa::ops;
  const DeviceBuffer& operand = *c.operands.at(0).at(0);
  const DeviceBuffer& indices = *c.operands.at(1).at(0);
  const DeviceBuffer& updates = *c.operands.at(2).at(0);
  const DeviceBuffer& result = *c.results.at(0);
  const std::vector<int64_t> window_dims = x.GetIntListOrEmpty("update_window_dims");
  const std::vector<int64_t> inserted = x.GetIntListOrEmpty("inserted_window_dims");
  const std::vector<int64_t> index_map = x.GetIntListOrEmpty("scatter_dims_to_operand_dims");
  const std::vector<int64_t> operand_batching = x.GetIntListOrEmpty("input_batching_dims");
  const std::vector<int64_t> indices_batching = x.GetIntListOrEmpty("scatter_indices_batching_dims");
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
  const DmaArray src{isa::MEMORY_SPACE_HBM, updates.address, ExpandedView(updates.shape, rank, updates_map)};
  const DmaArray dst{isa::MEMORY_SPACE_HBM, result.address, ExpandedView(result.shape, rank, result_map)};
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
  // Scatter-add: the window of the result and of the update, row-major in VMEM.
  DmaArray window_result;
  DmaArray window_update;
  uint64_t window_bytes = 0;
  const std::vector<DmaIndex> zeros(rank, DmaIndex(0));
  if (adds) {
    const isa::Shape window_shape = RowMajorUntiled(type, box);
    window_bytes = isa::LayoutMap(window_shape).byte_size();
    const uint64_t vmem_bytes = AlignUp(std::max<uint64_t>(window_bytes, 1), 4096);
    window_result = {isa::MEMORY_SPACE_VMEM, e.AllocVmem(vmem_bytes, "the result's window"), window_shape};
    window_update = {isa::MEMORY_SPACE_VMEM, e.AllocVmem(vmem_bytes, "the update's window"), window_shape};
  }
  EmitIndexLoop(e, x, indices, index_vector_dim, loop, [&](const auto& load) {
    const std::string skip = out.NewLabel(x.name() + ".skip");
    const std::string next = out.NewLabel(x.name() + ".next");
    for (int64_t d = 0; d < r; ++d) {
      if (starts[d] < 0) continue;
      load(starts[d], IndexOf(index_map, d));
      // A window that does not fit in the operand is skipped (XLA's scatter).
      out.Emit(isa::OPCODE_BLT, {S(starts[d]), 0, Label(skip)});
      out.Emit(isa::OPCODE_BGT, {S(starts[d]), operand.shape.dims[d] - window_size[d], Label(skip)});
    }
    if (adds) {
      // Read-modify-write, one index after the other, so repeated indices add in order.
      e.Dma(src, src_start, window_update, zeros, box, 0);
      e.Dma(dst, dst_start, window_result, zeros, box, 0);
      e.WaitDmas();
      EmitVmemAdd(e, type, window_result.address, window_update.address, window_bytes);
      e.WaitVpu();
      e.Dma(window_result, zeros, dst, dst_start, box, 0);
      e.WaitDmas();
      out.Emit(isa::OPCODE_BR, {Label(next)});
      out.Bind(skip);
      out.Bind(next);
      return;
    }
    e.Dma(src, src_start, dst, dst_start, box, 0);
    out.Emit(isa::OPCODE_BR, {Label(next)});
    out.Bind(skip);
    // Signal for the skipped DMA, so that the wait below counts every position.
    out.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(DmaEmitter::kDmaSem), 1});
    out.Bind(next);
  });
  if (!adds) e.AddPendingDmas(loop.batches - 1);
  e.WaitDmas();
}

}  // namespace tpusim::compiler
