#include "compiler/lower/reduce_plan.h"

#include <algorithm>

#include "compiler/lower/kernel.h"
#include "isa/element_type.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

// The dims of `shape` in the order they lie in memory, most major first.
std::vector<int64_t> MemoryOrder(const isa::Shape& shape) {
  return std::vector<int64_t>(shape.layout->minor_to_major.rbegin(), shape.layout->minor_to_major.rend());
}

// `shape` with its dims permuted to `order` and a row-major layout with the same tiles.
isa::Shape Permuted(const isa::Shape& shape, const std::vector<int64_t>& order) {
  isa::Shape view = shape;
  for (std::size_t i = 0; i < order.size(); ++i) view.dims[i] = shape.dims[order[i]];
  view.layout->minor_to_major = isa::MajorToMinorOrder(shape.rank());
  return view;
}

std::string TypeName(isa::ElementType type) { return std::string(isa::ElementTypeName(type)); }

}  // namespace

uint32_t IdentityBits(ReduceOp op, isa::ElementType type) {
  const bool is_float = type == isa::ElementType::kF32 || type == isa::ElementType::kBF16;
  const bool is_unsigned = type == isa::ElementType::kU32;
  switch (op) {
    case ReduceOp::kAdd: return is_float ? 0x80000000u : 0;
    case ReduceOp::kOr: case ReduceOp::kXor: return 0;
    case ReduceOp::kAnd: return 0xffffffffu;
    case ReduceOp::kMultiply: return is_float ? 0x3f800000u : 1;
    case ReduceOp::kMaximum: return is_float ? 0xff800000u : is_unsigned ? 0 : 0x80000000u;
    case ReduceOp::kMinimum: return is_float ? 0x7f800000u : is_unsigned ? 0xffffffffu : 0x7fffffffu;
  }
  return 0;
}

ReducePlan PlanReduce(const hlo::Instruction& reduce, const isa::Shape& operand, const isa::Shape& result,
                      int64_t sublanes, int64_t lanes) {
  if (reduce.operand_count() != 2 || result.is_tuple) {
    CannotLower(reduce, "variadic (tuple-result) reduce is not lowered yet");
  }
  const std::optional<ReduceOp> op = ReducerOpOf(reduce);
  if (!op) CannotLower(reduce, "its reducer is not one add/multiply/maximum/minimum/and/or/xor of its two parameters");
  ReducePlan plan;
  plan.op = *op;
  plan.type = operand.element_type;
  plan.load_type = operand.element_type;
  if (plan.type == isa::ElementType::kBF16 && result.element_type == isa::ElementType::kF32) plan.type = result.element_type;
  if (result.element_type != plan.type) {
    CannotLower(reduce, "its operand is " + TypeName(plan.type) + " but its result " + TypeName(result.element_type));
  }
  // The element-wise kernels widen f16 with integer ops (f16_emulation.h); the reduce kernel does not.
  if (plan.type == isa::ElementType::kF16) CannotLower(reduce, "an f16 reduce is not lowered yet");
  const bool is_float = plan.type == isa::ElementType::kF32 || plan.type == isa::ElementType::kBF16;
  if (is_float && (plan.op == ReduceOp::kAnd || plan.op == ReduceOp::kOr || plan.op == ReduceOp::kXor)) {
    CannotLower(reduce, "a bitwise reducer on floats");
  }
  const auto in = GetVtileGeometry(operand, sublanes, lanes);
  const auto out = GetVtileGeometry(result, sublanes, lanes);
  // 8-bit arrays (s8, u8, pred) pack 4 rows per word: the folds below read 32-bit or bf16 tiles.
  if (!in || !out || in->element_bits == 8 || out->element_bits == 8) {
    CannotLower(reduce, "its operand " + isa::ToString(operand) + " or result " + isa::ToString(result) +
                            " is not f32/bf16/s32/u32 with a default TPU tiled layout in HBM");
  }
  // The kernel walks the operand's tiles in memory order: it reduces the operand seen with its
  // dims in that order, and the kept dims must lie in the result in the same order.
  const std::vector<int64_t> operand_order = MemoryOrder(operand);
  const std::vector<int64_t>& dimensions = reduce.GetIntList("dimensions");
  std::vector<int64_t> result_dim_of(operand.rank(), -1);  // operand dim -> result dim (kept ones)
  for (int64_t d = 0, next = 0; d < operand.rank(); ++d) {
    if (std::count(dimensions.begin(), dimensions.end(), d) == 0) result_dim_of[d] = next++;
  }
  std::vector<int64_t> kept_in_memory_order;
  std::vector<int64_t> view_dimensions;
  for (std::size_t i = 0; i < operand_order.size(); ++i) {
    const int64_t d = operand_order[i];
    if (result_dim_of[d] >= 0) {
      kept_in_memory_order.push_back(result_dim_of[d]);
    } else {
      view_dimensions.push_back(static_cast<int64_t>(i));
    }
  }
  if (kept_in_memory_order != MemoryOrder(result)) {
    CannotLower(reduce, "the operand's kept dims lie in memory in another order than the result's dims (layouts " +
                            isa::ToString(operand) + " and " + isa::ToString(result) + ")");
  }
  plan.operand = Permuted(operand, operand_order);
  plan.result = Permuted(result, MemoryOrder(result));
  if (operand.rank() == 0) CannotLower(reduce, "a reduce of a scalar is not lowered yet");
  for (int64_t d : operand.dims) {
    if (d == 0) CannotLower(reduce, "a reduce of an empty array is not lowered yet");
  }
  if ((lanes & (lanes - 1)) != 0 || lanes % sublanes != 0) {
    CannotLower(reduce, "the reduce kernel needs a power-of-two lane count that the sublane count divides");
  }
  plan.in = *in;
  plan.out = *out;
  const isa::Shape& view = plan.operand;
  const int64_t rank = view.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : view_dimensions) reduced.at(d) = true;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) plan.reduced_elements *= view.dims[d];
  }
  if (rank == 1) {
    plan.rank1 = true;
    if (!reduced[0]) {
      plan.kind = ReduceKind::kMajor;  // nothing reduced: init op x, tile by tile
      plan.rows = 1;
      plan.columns = view.dims[0];
      return plan;
    }
    plan.kind = ReduceKind::kBoth;
    plan.rows = plan.in.tiles;
    plan.columns = sublanes * lanes;
    return plan;
  }
  for (int64_t d = 0; d + 2 < rank; ++d) {
    plan.major_dims.push_back(view.dims[d]);
    plan.major_reduced.push_back(reduced[d]);
  }
  plan.rows = view.dims[rank - 2];
  plan.columns = view.dims[rank - 1];
  const bool r = reduced[rank - 2];
  const bool c = reduced[rank - 1];
  plan.kind = r && c ? ReduceKind::kBoth : r ? ReduceKind::kRows : c ? ReduceKind::kLanes : ReduceKind::kMajor;
  return plan;
}

ReduceVmemLayout PlanReduceVmem(const ReducePlan& plan, int64_t sublanes, int64_t lanes) {
  const auto align = [](uint64_t bytes) { return (bytes + 4095) / 4096 * 4096; };
  const uint64_t vtile = static_cast<uint64_t>(sublanes * lanes * 4);
  const auto out_tiles = static_cast<uint64_t>(std::max<int64_t>(plan.out.tiles, 1));
  ReduceVmemLayout v;
  uint64_t cursor = align(out_tiles * vtile);
  if (plan.type == isa::ElementType::kBF16) {
    v.stage = cursor;
    cursor += align(out_tiles * vtile / 2);
  }
  v.scratch = cursor;
  const auto scratch_tiles = static_cast<uint64_t>(plan.kind == ReduceKind::kRows ? plan.in.strip_tiles : 1);
  v.end = cursor + align(scratch_tiles * vtile);
  v.strip_bytes = static_cast<uint64_t>(plan.in.strip_tiles * plan.in.tile_bytes);
  return v;
}

std::vector<int64_t> KeptMajorIndex(const ReducePlan& plan, int64_t matrix) {
  std::vector<int64_t> index(plan.major_dims.size());
  for (std::size_t d = plan.major_dims.size(); d-- > 0;) {
    index[d] = matrix % plan.major_dims[d];
    matrix /= plan.major_dims[d];
  }
  std::vector<int64_t> kept;
  for (std::size_t d = 0; d < index.size(); ++d) {
    if (!plan.major_reduced[d]) kept.push_back(index[d]);
  }
  return kept;
}

int64_t OutputWord(const isa::Shape& result, const std::vector<int64_t>& index, int64_t sublanes, int64_t lanes) {
  const int64_t rank = result.rank();
  if (rank == 0) return 0;
  if (rank == 1) return index.at(0);
  const int64_t rows = result.dims[rank - 2];
  const int64_t columns = result.dims[rank - 1];
  int64_t matrix = 0;
  for (int64_t d = 0; d + 2 < rank; ++d) matrix = matrix * result.dims[d] + index.at(d);
  const int64_t strip_tiles = (columns + lanes - 1) / lanes;
  const int64_t strips_per_matrix = (rows + sublanes - 1) / sublanes;
  const int64_t row = index.at(rank - 2);
  const int64_t column = index.at(rank - 1);
  const int64_t tile = (matrix * strips_per_matrix + row / sublanes) * strip_tiles + column / lanes;
  return tile * sublanes * lanes + (row % sublanes) * lanes + column % lanes;
}

isa::Opcode ReduceOpInstruction(hlo::ReduceOp op, bool is_float, bool is_unsigned) {
  const bool f = is_float, u = is_unsigned;
  switch (op) {
    case hlo::ReduceOp::kAdd: return f ? isa::OPCODE_VADD_F32 : isa::OPCODE_VADD_S32;
    case hlo::ReduceOp::kMultiply: return f ? isa::OPCODE_VMUL_F32 : isa::OPCODE_VMUL_S32;
    case hlo::ReduceOp::kMaximum: return f ? isa::OPCODE_VMAX_F32 : u ? isa::OPCODE_VMAX_U32 : isa::OPCODE_VMAX_S32;
    case hlo::ReduceOp::kMinimum: return f ? isa::OPCODE_VMIN_F32 : u ? isa::OPCODE_VMIN_U32 : isa::OPCODE_VMIN_S32;
    case hlo::ReduceOp::kAnd: return isa::OPCODE_VAND;
    case hlo::ReduceOp::kOr: return isa::OPCODE_VOR;
    case hlo::ReduceOp::kXor: return isa::OPCODE_VXOR;
  }
  throw Error("internal: a reduce op without an instruction");
}

}  // namespace tpusim::compiler
