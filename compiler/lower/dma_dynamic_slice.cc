// dynamic-slice and dynamic-update-slice: the start indices (scalar operands, or one rank-1
// vector in the older form) are copied from HBM to SMEM, loaded into scalar registers and clamped
// to [0, dim - size] as XLA does; the DMA then takes them as its register-valued starts.
#include <algorithm>

#include "compiler/lower/data_movement_ops.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

using namespace isa::ops;

// Registers holding the clamped start of each dim of `array` for a box of `size`.
std::vector<DmaIndex> LoadStarts(DmaEmitter& e, std::size_t first_operand, const isa::Shape& array,
                                 const std::vector<int64_t>& size) {
  KernelContext& c = e.context();
  const auto rank = static_cast<std::size_t>(array.rank());
  std::vector<std::pair<const DeviceBuffer*, uint64_t>> scalars;
  std::vector<uint64_t> where;  // SMEM address of each index
  const isa::Shape& first = c.operands.at(first_operand).at(0)->shape;
  const isa::ElementType type = first.element_type;
  const int width = isa::ElementBitWidth(type) / 8;
  if (type != isa::ElementType::kS32 && type != isa::ElementType::kU32 && type != isa::ElementType::kS64) {
    CannotLower(c.instruction, "start indices are lowered for s32, u32 and s64 only");
  }
  if (c.operands.size() == first_operand + 1 && first.rank() == 1) {
    // One vector: its elements lie one after another from its first byte (rank-1 tiles are runs).
    const isa::LayoutMap map(first);
    scalars.push_back({c.operands[first_operand][0], 0});
    for (std::size_t d = 0; d < rank; ++d) where.push_back(static_cast<uint64_t>(map.ByteOffset(std::vector<int64_t>{static_cast<int64_t>(d)})));
  } else {
    for (std::size_t d = 0; d < rank; ++d) {
      const DeviceBuffer* buffer = c.operands.at(first_operand + d).at(0);
      const uint64_t smem = d * std::max<uint64_t>(8, (buffer->size_bytes + 7) / 8 * 8);
      scalars.push_back({buffer, smem});
      where.push_back(smem);
    }
  }
  e.LoadScalarsToSmem(scalars);
  std::vector<DmaIndex> starts;
  for (std::size_t d = 0; d < rank; ++d) {
    const int reg = e.AllocSreg();
    const isa::Opcode load = width == 8                         ? isa::OPCODE_LD_S64
                             : type == isa::ElementType::kU32 ? isa::OPCODE_LD_U32
                                                              : isa::OPCODE_LD_S32;
    e.out().Emit(load, {S(reg), Smem(where[d])});
    e.out().Emit(isa::OPCODE_MAX, {S(reg), S(reg), 0});
    e.out().Emit(isa::OPCODE_MIN, {S(reg), S(reg), array.dims[d] - size[d]});
    starts.push_back(DmaIndex(reg, 0));
  }
  return starts;
}

}  // namespace

void EmitDynamicSlice(DmaEmitter& e) {
  const DmaArray result = BufferArray(*e.context().results.at(0));
  const DmaArray operand = BufferArray(*e.context().operands.at(0).at(0));
  const std::vector<DmaIndex> starts = LoadStarts(e, 1, operand.shape, result.shape.dims);
  e.ZeroLayoutPadding(result);
  e.Dma(operand, starts, result, Zeros(result.shape.dims.size()), result.shape.dims, 0);
}

// The operand copied whole, then the update over it at the clamped starts (after the copy: the
// two write the same elements). Updated in place (buffer assignment made the result the
// operand's buffer when nothing reads the operand afterwards), the update alone.
void EmitDynamicUpdateSlice(DmaEmitter& e) {
  const DmaArray result = BufferArray(*e.context().results.at(0));
  const DmaArray operand = BufferArray(*e.context().operands.at(0).at(0));
  const DmaArray update = BufferArray(*e.context().operands.at(1).at(0));
  const std::vector<DmaIndex> starts = LoadStarts(e, 2, operand.shape, update.shape.dims);
  if (result.space == operand.space && result.address == operand.address) {
    e.Dma(update, Zeros(update.shape.dims.size()), result, starts, update.shape.dims, 0);
    return;
  }
  e.ZeroLayoutPadding(result);
  const std::vector<int64_t> zeros(result.shape.rank(), 0);
  e.SplitDma(operand, zeros, result, zeros, result.shape.dims);
  e.WaitDmas();
  e.Dma(update, Zeros(update.shape.dims.size()), result, starts, update.shape.dims, 0);
}

}  // namespace tpusim::compiler
