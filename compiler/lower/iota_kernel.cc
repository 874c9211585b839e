// iota: the VPU writes the vector 0, 1, ..., n-1 (n the size of the iota dim) into VMEM in the
// default rank-1 layout, one S*L-element tile per vreg (element sublane * L + lane of tile t is
// t * S * L + sublane * L + lane), converted to the element type; then the vector is broadcast
// into the result by DMAs like a broadcast operand.
#include "compiler/lower/data_movement_ops.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {

void EmitIota(DmaEmitter& e) {
  using namespace isa::ops;
  const hlo::Instruction& instruction = e.context().instruction;
  const DmaArray result = HbmArray(*e.context().results.at(0));
  const isa::ElementType type = result.shape.element_type;
  const bool is_bf16 = type == isa::ElementType::kBF16;
  if (type != isa::ElementType::kS32 && type != isa::ElementType::kU32 && type != isa::ElementType::kF32 && !is_bf16) {
    CannotLower(instruction, "iota is lowered for s32, u32, f32 and bf16 only");
  }
  const int64_t dim = instruction.GetInt("iota_dimension");
  const int64_t n = result.shape.dims.at(dim);
  if (isa::ElementCount(result.shape) == 0) return;
  const int64_t sublanes = e.out().target().sublanes();
  const int64_t lanes = e.out().target().lanes();
  const int64_t tile = sublanes * lanes;
  isa::Layout layout = isa::DefaultTpuLayout(type, 1);
  if (layout.tiles.empty() || layout.tiles.front().dims != std::vector<int64_t>{tile}) {
    CannotLower(instruction, "the default rank-1 layout does not hold one vreg tile per layout tile");
  }
  const isa::Shape vector_shape = isa::Shape::Array(type, {n}, layout);
  const uint64_t bytes = isa::LayoutMap(vector_shape).byte_size();
  const uint64_t vector = e.AllocVmem(bytes, "the iota vector");
  const int64_t tiles = (n + tile - 1) / tile;
  const int64_t tile_bytes = tile * (is_bf16 ? 2 : 4);
  ProgramBuilder& out = e.out();
  // v1 = the first tile's values, v2 = S*L (the step from tile to tile).
  out.Emit(isa::OPCODE_VSUBLANEID, {V(1)});
  out.Emit(isa::OPCODE_VBCAST, {V(2), lanes});
  out.Emit(isa::OPCODE_VMUL_S32, {V(1), V(1), V(2)});
  out.Emit(isa::OPCODE_VLANEID, {V(2)});
  out.Emit(isa::OPCODE_VADD_S32, {V(1), V(1), V(2)});
  out.Emit(isa::OPCODE_VBCAST, {V(2), tile});
  const int address = e.AllocSreg();
  const int counter = e.AllocSreg();
  out.Emit(isa::OPCODE_MOV, {S(address), vector});
  out.Emit(isa::OPCODE_MOV, {S(counter), tiles});
  const std::string label = out.NewLabel(instruction.name() + ".iota");
  out.Bind(label);
  if (type == isa::ElementType::kS32 || type == isa::ElementType::kU32) {
    out.Emit(isa::OPCODE_VST, {V(1), Vmem(S(address))});
  } else {
    out.Emit(isa::OPCODE_VCVT_F32_S32, {V(3), V(1)});
    if (is_bf16) {
      // Two f32 tiles' worth of rows pack into one vreg; the first S/2 sublanes are this tile.
      out.Emit(isa::OPCODE_VPACK_BF16, {V(3), V(3), V(3)});
      out.Emit(isa::OPCODE_VST, {V(3), Vmem(S(address))}, {{"sublanes", Bits((1u << (sublanes / 2)) - 1)}});
    } else {
      out.Emit(isa::OPCODE_VST, {V(3), Vmem(S(address))});
    }
  }
  out.Emit(isa::OPCODE_VADD_S32, {V(1), V(1), V(2)});
  out.Emit(isa::OPCODE_ADD, {S(address), S(address), tile_bytes});
  out.Emit(isa::OPCODE_LOOP, {S(counter), Label(label)});
  e.WaitVpu();
  const DmaArray source{isa::MEMORY_SPACE_VMEM, vector, ExpandedView(vector_shape, result.shape.rank(), {dim})};
  BroadcastInto(e, source, result);
}

}  // namespace tpusim::compiler
