#include "compiler/lower/data_movement_kernel.h"

#include <fmt/format.h>
#include <algorithm>
#include <numeric>

#include "compiler/lower/data_movement_ops.h"
#include "compiler/lower/dma_strided.h"
#include "compiler/passes/host_offload.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

const DmaArray Result(DmaEmitter& e) { return BufferArray(*e.context().results.at(0)); }
const DmaArray Operand(DmaEmitter& e, std::size_t i) { return BufferArray(*e.context().operands.at(i).at(0)); }

std::vector<int64_t> Ones(std::size_t rank) { return std::vector<int64_t>(rank, 1); }

bool IsUntiledRowMajor(const isa::Shape& shape) {
  const isa::Layout& layout = *shape.layout;
  return layout.tiles.empty() && layout.minor_to_major == isa::MajorToMinorOrder(shape.rank()) &&
         !HasLayoutPadding(shape);
}

}  // namespace

bool IsDataMovementOpcode(Opcode opcode) {
  switch (opcode) {
    case Opcode::kCopy: case Opcode::kTranspose: case Opcode::kReshape: case Opcode::kBroadcast:
    case Opcode::kSlice: case Opcode::kConcatenate: case Opcode::kPad: case Opcode::kReverse:
    case Opcode::kIota: case Opcode::kDynamicSlice: case Opcode::kDynamicUpdateSlice:
      return true;
    default:
      return false;
  }
}

void EmitDataMovementKernel(KernelContext& context) {
  const hlo::Instruction& instruction = context.instruction;
  if (instruction.shape().is_tuple || context.results.size() != 1 || context.results[0] == nullptr) {
    CannotLower(instruction, "data-movement kernels write one array");
  }
  for (const auto& operand : context.operands) {
    if (operand.size() != 1 || operand[0] == nullptr) CannotLower(instruction, "an operand is not one array");
  }
  const int bits = isa::LayoutMap(context.results[0]->shape).element_bits();
  if (bits % 8 != 0) CannotLower(instruction, "DMAs move whole-byte elements only");
  DmaEmitter emitter(context);
  switch (instruction.opcode()) {
    case Opcode::kCopy: case Opcode::kTranspose: EmitCopyOrTranspose(emitter); break;
    case Opcode::kReshape: EmitReshape(emitter); break;
    case Opcode::kBroadcast: EmitBroadcast(emitter); break;
    case Opcode::kSlice: EmitSlice(emitter); break;
    case Opcode::kConcatenate: EmitConcatenate(emitter); break;
    case Opcode::kPad: EmitPad(emitter); break;
    case Opcode::kReverse: EmitReverse(emitter); break;
    case Opcode::kIota: EmitIota(emitter); break;
    case Opcode::kDynamicSlice: EmitDynamicSlice(emitter); break;
    case Opcode::kDynamicUpdateSlice: EmitDynamicUpdateSlice(emitter); break;
    case Opcode::kCustomCall:
      if (!IsMoveToHost(instruction) && !IsMoveToDevice(instruction)) {
        CannotLower(instruction, "not a data-movement operation");
      }
      EmitCopyOrTranspose(emitter);  // HBM <-> host over PCIe (host offload)
      break;
    default: CannotLower(instruction, "not a data-movement operation");
  }
  emitter.WaitDmas();
}

// copy: one DMA (per engine) between the two layouts. transpose: the operand's bytes seen with its
// dims permuted by `dimensions` (result dim k is operand dim dimensions[k]) are exactly the result
// in another layout, so it is a copy from that view.
//
// A copy between host memory and anything with the same layout on both sides (host offload's
// moves) copies the whole byte image instead, padding included (zero on both sides): PCIe then
// carries one stream per engine and no separate zeroing of the padding.
void EmitCopyOrTranspose(DmaEmitter& e) {
  const DmaArray result = Result(e);
  DmaArray source = Operand(e, 0);
  if (e.context().instruction.opcode() == hlo::Opcode::kTranspose) {
    source.shape = PermutedView(source.shape, e.context().instruction.GetIntList("dimensions"));
  } else if ((source.space == isa::MEMORY_SPACE_HOST || result.space == isa::MEMORY_SPACE_HOST) && source.shape == result.shape) {
    const uint64_t bytes = isa::LayoutMap(result.shape).byte_size();
    const uint64_t piece = std::max<uint64_t>(AlignUp((bytes + e.engines() - 1) / e.engines(), 4096), 256 * 1024);
    for (uint64_t offset = 0; offset < bytes; offset += piece) {
      EmitFlatDma(e.out(), source.space, source.address + offset, result.space, result.address + offset,
                  std::min(piece, bytes - offset), DmaEmitter::kDmaSem, e.NextEngine());
      e.AddPendingDmas(1);
    }
    return;
  }
  e.ZeroLayoutPadding(result);
  const std::vector<int64_t> zeros(result.shape.rank(), 0);
  e.SplitDma(source, zeros, result, zeros, result.shape.dims);
}

// reshape keeps the row-major order of the elements: the row-major untiled images of operand and
// result are the same bytes. So: operand -> its dims row-major untiled (VMEM, or HBM scratch when
// too big), then those bytes seen with the result's dims -> result. A side that already is
// row-major untiled is used in place. (Reshapes whose images coincide are aliased by buffer
// assignment and never get here.)
void EmitReshape(DmaEmitter& e) {
  KernelContext& c = e.context();
  const DmaArray result = Result(e);
  const DmaArray operand = Operand(e, 0);
  const isa::ElementType type = result.shape.element_type;
  const std::vector<int64_t> zeros_in(operand.shape.rank(), 0);
  const std::vector<int64_t> zeros_out(result.shape.rank(), 0);
  if (IsUntiledRowMajor(operand.shape)) {
    e.ZeroLayoutPadding(result);
    e.SplitDma({operand.space, operand.address, RowMajorUntiled(type, result.shape.dims)}, zeros_out, result, zeros_out,
               result.shape.dims);
    return;
  }
  if (IsUntiledRowMajor(result.shape)) {
    e.SplitDma(operand, zeros_in, {result.space, result.address, RowMajorUntiled(type, operand.shape.dims)}, zeros_in,
               operand.shape.dims);
    return;
  }
  const uint64_t bytes = static_cast<uint64_t>(isa::ElementCount(result.shape)) * isa::LayoutMap(result.shape).element_bits() / 8;
  DmaArray middle;
  // VMEM when it fits with room to spare for the zeroed block.
  if (bytes + (512 << 10) <= e.vmem_free()) {
    middle = {isa::MEMORY_SPACE_VMEM, e.AllocVmem(bytes, "the row-major intermediate"), {}};
  } else if (bytes <= c.hbm_scratch_bytes) {
    middle = {isa::MEMORY_SPACE_HBM, c.hbm_scratch_address, {}};
  } else {
    CannotLower(c.instruction, fmt::format("its row-major intermediate of {} bytes fits neither VMEM ({} bytes free) "
                                           "nor the HBM above the buffers ({} bytes)",
                                           bytes, e.vmem_free(), c.hbm_scratch_bytes));
  }
  middle.shape = RowMajorUntiled(type, operand.shape.dims);
  e.SplitDma(operand, zeros_in, middle, zeros_in, operand.shape.dims);
  e.ZeroLayoutPadding(result);  // waits for the DMAs above too
  e.WaitDmas();
  middle.shape = RowMajorUntiled(type, result.shape.dims);
  e.SplitDma(middle, zeros_out, result, zeros_out, result.shape.dims);
}

void EmitBroadcast(DmaEmitter& e) {
  const DmaArray result = Result(e);
  DmaArray source = Operand(e, 0);
  source.shape = ExpandedView(source.shape, result.shape.rank(), e.context().instruction.GetIntList("dimensions"));
  BroadcastInto(e, source, result);
}

void BroadcastInto(DmaEmitter& e, const DmaArray& src, const DmaArray& dst) {
  const auto rank = static_cast<std::size_t>(dst.shape.rank());
  e.ZeroLayoutPadding(dst);
  std::vector<int64_t> box = src.shape.dims;
  // Small copies on engine 0, in order: each reads what the earlier ones wrote, and one engine
  // runs its DMAs one after another.
  constexpr int64_t kSpreadBytes = 256 * 1024;
  e.Dma(src, Zeros(rank), dst, Zeros(rank), box, 0);
  std::vector<int64_t> dims;  // broadcast dims, the destination's most minor first
  const std::vector<int64_t> order = isa::LayoutMap(dst.shape).physical_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (box[*it] == 1 && dst.shape.dims[*it] > 1) dims.push_back(*it);
  }
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = dims[k];
    const int64_t n = dst.shape.dims[d];
    for (int64_t filled = 1; filled < n;) {
      const int64_t count = std::min(filled, n - filled);
      std::vector<int64_t> size = box;
      size[d] = count;
      std::vector<int64_t> to(rank, 0);
      to[d] = filled;
      // A big copy is spread over the engines, after waiting for what it reads; small ones stay
      // on engine 0, ordered by its queue.
      const int64_t bytes = std::accumulate(size.begin(), size.end(), int64_t{1}, std::multiplies<>()) *
                            isa::LayoutMap(dst.shape).element_bits() / 8;
      if (bytes >= kSpreadBytes) {
        e.WaitDmas();
        e.SplitDma(dst, std::vector<int64_t>(rank, 0), dst, to, size);
      } else {
        e.Dma(dst, Zeros(rank), dst, std::vector<DmaIndex>(to.begin(), to.end()), size, 0);
      }
      filled += count;
    }
    box[d] = n;
  }
  e.WaitDmas();
}

// slice: starts and strides on the source; a stride-1 slice is one box.
void EmitSlice(DmaEmitter& e) {
  const DmaArray result = Result(e);
  const auto& slice = e.context().instruction.GetSlice();
  StridedSide src{Operand(e, 0), {}, {}};
  for (const hlo::SliceDimension& d : slice) {
    src.start.push_back(d.start);
    src.step.push_back(d.stride);
  }
  const StridedSide dst{result, std::vector<int64_t>(result.shape.rank(), 0), Ones(result.shape.rank())};
  e.ZeroLayoutPadding(result);
  EmitStridedCopy(e, src, dst, result.shape.dims);
}

// concatenate: each operand into its place along the dim.
void EmitConcatenate(DmaEmitter& e) {
  const DmaArray result = Result(e);
  const int64_t dim = e.context().instruction.GetIntList("dimensions").at(0);
  e.ZeroLayoutPadding(result);
  int64_t offset = 0;
  for (std::size_t i = 0; i < e.context().operands.size(); ++i) {
    const DmaArray operand = Operand(e, i);
    std::vector<int64_t> to(result.shape.rank(), 0);
    to[dim] = offset;
    e.SplitDma(operand, std::vector<int64_t>(operand.shape.rank(), 0), result, to, operand.shape.dims);
    offset += operand.shape.dims[dim];
  }
}

// reverse: the reversed dims walked backwards on the source, one DMA per index of them.
void EmitReverse(DmaEmitter& e) {
  const DmaArray result = Result(e);
  const auto rank = static_cast<std::size_t>(result.shape.rank());
  StridedSide src{Operand(e, 0), std::vector<int64_t>(rank, 0), Ones(rank)};
  for (int64_t d : e.context().instruction.GetIntList("dimensions")) {
    src.start[d] = result.shape.dims[d] - 1;
    src.step[d] = -1;
  }
  const StridedSide dst{result, std::vector<int64_t>(rank, 0), Ones(rank)};
  e.ZeroLayoutPadding(result);
  EmitStridedCopy(e, src, dst, result.shape.dims);
}

int LoadFillWord(DmaEmitter& e, uint64_t smem, int bits) {
  const int reg = e.AllocSreg();
  ProgramBuilder& out = e.out();
  using namespace isa::ops;
  out.Emit(isa::OPCODE_LD_U32, {S(reg), Smem(smem)});
  if (bits == 16) {
    out.Emit(isa::OPCODE_AND, {S(reg), S(reg), 0xffff});
    out.Emit(isa::OPCODE_SHL, {S(0), S(reg), 16});
    out.Emit(isa::OPCODE_OR, {S(reg), S(reg), S(0)});
  } else if (bits == 8) {
    out.Emit(isa::OPCODE_AND, {S(reg), S(reg), 0xff});
    out.Emit(isa::OPCODE_MUL, {S(reg), S(reg), 0x1010101});
  } else if (bits != 32) {
    CannotLower(e.context().instruction, fmt::format("filling {}-bit elements is not lowered yet", bits));
  }
  return reg;
}

// pad: the padding value (a scalar operand, read at run time) fills what the operand does not
// cover, from a VMEM block the VPU filled with it; the operand goes to its place, with steps of
// interior + 1 where there is interior padding. Negative low/high padding drops operand elements.
void EmitPad(DmaEmitter& e) {
  const DmaArray result = Result(e);
  const DmaArray operand = Operand(e, 0);
  const auto rank = static_cast<std::size_t>(result.shape.rank());
  const auto& config = e.context().instruction.GetPaddingConfig().dimensions;
  const int bits = isa::LayoutMap(result.shape).element_bits();
  // Where the operand lands: operand index j goes to low + j * (interior + 1).
  StridedSide src{operand, std::vector<int64_t>(rank, 0), Ones(rank)};
  StridedSide dst{result, std::vector<int64_t>(rank, 0), Ones(rank)};
  std::vector<int64_t> count(rank, 0);
  bool interior = false;
  bool empty = false;
  for (std::size_t d = 0; d < rank; ++d) {
    const int64_t low = config[d].low, step = config[d].interior + 1;
    const int64_t n = operand.shape.dims[d], size = result.shape.dims[d];
    const int64_t first = low < 0 ? (-low + step - 1) / step : 0;
    const int64_t end = size - 1 - low < 0 ? 0 : std::min(n, (size - 1 - low) / step + 1);
    count[d] = std::max<int64_t>(0, end - first);
    src.start[d] = first;
    dst.start[d] = low + first * step;
    dst.step[d] = step;
    interior |= step > 1 && count[d] > 1;
    empty |= count[d] == 0;
  }
  // The boxes the fill must cover: everything, or (no interior padding) the shell around the
  // operand's box, so that fill and operand DMAs write disjoint elements and need no order.
  std::vector<Box> fill;
  if (interior || empty) {
    fill.push_back({std::vector<int64_t>(rank, 0), result.shape.dims});
  } else {
    Box inner{dst.start, count};
    for (std::size_t d = 0; d < rank; ++d) {
      Box below{std::vector<int64_t>(rank, 0), result.shape.dims};
      for (std::size_t k = 0; k < d; ++k) {
        below.start[k] = inner.start[k];
        below.size[k] = inner.size[k];
      }
      Box above = below;
      below.size[d] = inner.start[d];
      above.start[d] = inner.start[d] + inner.size[d];
      above.size[d] = result.shape.dims[d] - above.start[d];
      for (const Box& b : {below, above}) {
        if (std::all_of(b.size.begin(), b.size.end(), [](int64_t s) { return s > 0; })) fill.push_back(b);
      }
    }
  }
  e.ZeroLayoutPadding(result);
  if (!fill.empty()) {
    e.LoadScalarsToSmem({{e.context().operands.at(1).at(0), 0}});
    const int word = LoadFillWord(e, 0, bits);
    int64_t largest = 0;
    for (const Box& b : fill) {
      largest = std::max(largest, std::accumulate(b.size.begin(), b.size.end(), int64_t{1}, std::multiplies<>()));
    }
    const int64_t element_bytes = bits / 8;
    const uint64_t block_bytes =
        std::min<uint64_t>((static_cast<uint64_t>(largest * element_bytes) + 4095) / 4096 * 4096, 256 << 10);
    const uint64_t block = e.AllocVmem(block_bytes, "the padding-value block");
    e.VpuFillWords(block, block_bytes, word);
    e.WaitVpu();
    const std::vector<int64_t> order = isa::LayoutMap(result.shape).physical_order();
    for (const Box& b : fill) {
      for (const Box& piece : CutBox(b, order, static_cast<int64_t>(block_bytes) / element_bytes)) {
        const DmaArray values{isa::MEMORY_SPACE_VMEM, block, RowMajorUntiled(result.shape.element_type, piece.size)};
        e.Dma(values, Zeros(rank), result, std::vector<DmaIndex>(piece.start.begin(), piece.start.end()), piece.size,
              e.NextEngine());
      }
    }
    if (interior || empty) e.WaitDmas();
  }
  if (!empty) EmitStridedCopy(e, src, dst, count);
}

}  // namespace tpusim::compiler
