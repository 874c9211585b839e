#include "compiler/lower/dot_epilogue.h"

#include <algorithm>
#include <string>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/kernel.h"
#include "compiler/passes/dot_output_fusion.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

bool IsF32OrBf16(isa::ElementType type) { return type == isa::ElementType::kF32 || type == isa::ElementType::kBF16; }

// A node whose value is its input's, unchanged: a convert to f32, or to its own type.
bool IsIdentity(const ElementwiseExpr& expr, const ExprNode& node) {
  return node.kind == ExprNode::Kind::kOp && node.hlo->opcode() == Opcode::kConvert &&
         (node.type == isa::ElementType::kF32 || node.type == expr.nodes.at(node.inputs.at(0)).type);
}

bool IsDotSums(const ExprNode& node) {
  return node.kind == ExprNode::Kind::kLoad && node.operand == 0 && node.view == nullptr;
}

// The epilogue's registers (DotEpilogue::registers), node by node: the dot's sums in the read
// register, constants in theirs, identities in their input's, every other value in a temp freed
// after its last use (the root in the read register). kRead for the read register.
constexpr int kRead = -1;
struct Assignment {
  std::vector<int> reg;
  int temps = 0;
};
int ConstantSlot(int index) { return -2 - index; }
int ConstantIndex(int slot) { return -2 - slot; }

Assignment Assign(const DotEpilogue& epilogue) {
  const ElementwiseExpr& expr = epilogue.expr;
  const int count = static_cast<int>(expr.nodes.size());
  const int root = expr.outputs.at(0);
  std::vector<int> last_use(count, -1);
  for (int n = 0; n < count; ++n) {
    for (int input : expr.nodes[n].inputs) last_use[input] = n;
  }
  // An identity's input lives as long as the identity does.
  for (int n = count - 1; n >= 0; --n) {
    const ExprNode& node = expr.nodes[n];
    if (IsIdentity(expr, node)) last_use[node.inputs[0]] = std::max(last_use[node.inputs[0]], n == root ? count : last_use[n]);
  }
  Assignment a;
  a.reg.assign(count, kRead);
  std::vector<bool> used;
  const auto take = [&] {
    const auto free = std::find(used.begin(), used.end(), false);
    if (free != used.end()) {
      *free = true;
      return static_cast<int>(free - used.begin());
    }
    used.push_back(true);
    a.temps = static_cast<int>(used.size());
    return a.temps - 1;
  };
  for (int n = 0; n < count; ++n) {
    const ExprNode& node = expr.nodes[n];
    if (IsDotSums(node)) continue;
    if (node.kind == ExprNode::Kind::kConstant) {
      const auto it = std::find(epilogue.constants.begin(), epilogue.constants.end(), node.bits);
      a.reg[n] = ConstantSlot(static_cast<int>(it - epilogue.constants.begin()));
      continue;
    }
    if (IsIdentity(expr, node)) {
      a.reg[n] = a.reg[node.inputs[0]];
      continue;
    }
    // Inputs whose last use this is give their temps back first: an element-wise instruction
    // reads its operands before it writes.
    for (int input : node.inputs) {
      if (last_use[input] == n && a.reg[input] >= 0) used[a.reg[input]] = false;
    }
    a.reg[n] = n == root ? kRead : take();
  }
  return a;
}

}  // namespace

const hlo::Instruction& ContractionOf(const KernelContext& context) {
  const hlo::Instruction* fused = FusedContraction(context.group);
  return fused != nullptr ? *fused : context.instruction;
}

DotEpilogue BuildDotEpilogue(const KernelGroup& group, int64_t column_dim) {
  const hlo::Instruction* dot = FusedContraction(group);
  const hlo::Instruction& root = *group.root;
  if (dot == nullptr || group.operands.size() < 2 || group.operands[0] != dot->operand(0) ||
      group.operands[1] != dot->operand(1)) {
    CannotLower(root, "internal: not an output fusion with its dot's or convolution's operands first");
  }
  // The operations over the dot's result as an operand (operand 0), the group's others after it.
  KernelGroup epilogue_group;
  epilogue_group.root = group.root;
  for (const hlo::Instruction* member : group.members) {
    if (member != dot) epilogue_group.members.push_back(member);
  }
  epilogue_group.operands = {dot};
  epilogue_group.operands.insert(epilogue_group.operands.end(), group.operands.begin() + 2, group.operands.end());
  DotEpilogue epilogue;
  epilogue.expr = BuildElementwiseExpr(epilogue_group);
  const ElementwiseExpr& expr = epilogue.expr;
  if (expr.outputs.size() != 1) CannotLower(root, "a dot's epilogue with several results (not lowered yet)");
  for (int n = 0; n < static_cast<int>(expr.nodes.size()); ++n) {
    const ExprNode& node = expr.nodes[n];
    const std::string what = node.hlo ? std::string(hlo::OpcodeName(node.hlo->opcode())) + " '" + node.hlo->name() + "'" : "a value";
    if (!IsF32OrBf16(node.type)) CannotLower(root, what + " of a dot's epilogue is not f32 or bf16 (not lowered yet)");
    switch (node.kind) {
      case ExprNode::Kind::kLoad: {
        if (IsDotSums(node)) continue;
        if (node.view == nullptr) {  // an array of the result's dims
          epilogue.arrays.push_back(n);
          continue;
        }
        const bool bias = node.view->opcode() == Opcode::kBroadcast && !node.box &&
                          node.view->operand(0)->shape().rank() == 1 &&
                          node.view->GetIntList("dimensions") == std::vector<int64_t>{column_dim};
        if (!bias) {
          CannotLower(root, what + " reads an array other than as a vector along the dot's columns or of its "
                                   "dims (not in a dot's epilogue yet)");
        }
        epilogue.biases.push_back(n);
        epilogue.shifts_bf16 = epilogue.shifts_bf16 || node.type == isa::ElementType::kBF16;
        continue;
      }
      case ExprNode::Kind::kConstant:
        if (std::find(epilogue.constants.begin(), epilogue.constants.end(), node.bits) == epilogue.constants.end()) {
          epilogue.constants.push_back(node.bits);
        }
        continue;
      case ExprNode::Kind::kOp:
        break;
      default:
        CannotLower(root, what + " is not an operation a dot's epilogue computes (not lowered yet)");
    }
    const Opcode opcode = node.hlo->opcode();
    if (opcode != Opcode::kConvert && !FloatVpuOpcode(opcode)) {
      CannotLower(root, what + " is not an operation a dot's epilogue computes (not lowered yet)");
    }
    for (int input : node.inputs) {
      if (!IsF32OrBf16(expr.nodes.at(input).type)) CannotLower(root, what + " reads a value that is not f32 or bf16");
    }
  }
  Assignment assignment = Assign(epilogue);
  epilogue.registers = std::move(assignment.reg);
  epilogue.temps = assignment.temps;
  return epilogue;
}

int DotEpilogueVregs(const DotEpilogue& epilogue, int copies) {
  return copies * epilogue.temps + static_cast<int>(epilogue.constants.size()) + (epilogue.shifts_bf16 ? 1 : 0);
}

void EmitBiasRowDma(ProgramBuilder& out, const DeviceBuffer& bias, int64_t first_column, int64_t columns, int64_t row_words,
                    uint64_t vmem, uint32_t semaphore, uint32_t engine) {
  using namespace isa::ops;
  const int64_t lanes = out.target().lanes();
  // bf16[2,row_words]{1,0:T(2,lanes)(2,1)}, or f32[1,row_words]{1,0}.
  isa::Layout layout;
  layout.minor_to_major = isa::MajorToMinorOrder(2);
  const bool bf16 = bias.shape.element_type == isa::ElementType::kBF16;
  if (bf16) layout.tiles = {isa::Tile{{2, lanes}}, isa::Tile{{2, 1}}};
  const isa::Shape row = bf16 ? isa::Shape::Array(isa::ElementType::kBF16, {2, row_words}, layout)
                              : isa::Shape::Array(isa::ElementType::kF32, {1, row_words}, layout);
  out.Emit(isa::OPCODE_DMA, {Hbm(static_cast<int64_t>(bias.address)), Vmem(static_cast<int64_t>(vmem))},
           {{"src", ShapeArg(ExpandedView(bias.shape, 2, {1}))},
            {"dst", ShapeArg(row)},
            {"src_start", Index({0, first_column})},
            {"dst_start", Index({0, 0})},
            {"size", Sizes({1, columns})},
            {"sem", Sem(semaphore)},
            {"engine", engine}});
}

void EmitDotEpilogueConstants(ProgramBuilder& out, const DotEpilogue& epilogue, const DotEpilogueRegisters& regs) {
  using namespace isa::ops;
  for (std::size_t i = 0; i < epilogue.constants.size(); ++i) {
    out.Emit(isa::OPCODE_VBCAST, {V(regs.constant0 + static_cast<int>(i)), epilogue.constants[i]});
  }
  if (epilogue.shifts_bf16) {
    out.Emit(isa::OPCODE_VBCAST, {V(regs.constant0 + static_cast<int>(epilogue.constants.size())), 16});
  }
}

void EmitDotEpilogue(ProgramBuilder& out, const DotEpilogue& epilogue, const DotEpilogueRegisters& regs,
                     const std::vector<int>& reads, const std::vector<StageTile>& tiles) {
  using namespace isa::ops;
  const ElementwiseExpr& expr = epilogue.expr;
  // Node by node over every read register: the in-order VPU overlaps one copy's latencies with
  // the others' instructions (a tile at a time, a GELU's chain of 15 dependent instructions left
  // the MXUs idle for its latencies).
  const auto vreg = [&](int n, std::size_t copy) {
    const int r = epilogue.registers[n];
    if (r == kRead) return reads[copy];
    if (r >= 0) return regs.temp0 + static_cast<int>(copy) * epilogue.temps + r;
    return regs.constant0 + ConstantIndex(r);
  };
  const uint64_t tile_bytes = static_cast<uint64_t>(out.target().lanes()) * 4;
  const uint64_t vreg_bytes = tile_bytes * static_cast<uint64_t>(out.target().sublanes());
  const int shift = regs.constant0 + static_cast<int>(epilogue.constants.size());
  for (int n = 0; n < static_cast<int>(expr.nodes.size()); ++n) {
    const ExprNode& node = expr.nodes[n];
    if (node.kind == ExprNode::Kind::kConstant || IsIdentity(expr, node)) continue;
    const bool bf16 = node.type == isa::ElementType::kBF16;
    // The node's instruction for every copy, then its follow-up for every copy (a bf16 value's
    // rounding, a bf16 bias's widening): one after the other, each follow-up waited for its
    // instruction's latency.
    bool follows = false;
    for (std::size_t copy = 0; copy < reads.size(); ++copy) {
      const int d = vreg(n, copy);
      if (IsDotSums(node)) {
        // A bf16 dot's result is its f32 sums rounded once.
        if (bf16) out.Emit(isa::OPCODE_VCVT_BF16_F32, {V(d), V(d)});
        continue;
      }
      if (node.kind == ExprNode::Kind::kLoad && node.view == nullptr) {
        // Array a's tile: f32 one vreg; bf16 the packed vreg of this row vreg and the next (or
        // the one before), unpacked below.
        const auto a = static_cast<uint64_t>(std::find(epilogue.arrays.begin(), epilogue.arrays.end(), n) -
                                             epilogue.arrays.begin());
        const StageTile& tile = tiles[copy];
        const int64_t row = bf16 ? tile.row / 2 : tile.row;
        const uint64_t offset =
            a * regs.array_stride + static_cast<uint64_t>(row * regs.stage_tiles + tile.column) * vreg_bytes;
        out.Emit(isa::OPCODE_VLD, {V(d), Vmem(S(regs.array_base), static_cast<int64_t>(offset))});
        follows = bf16;
        continue;
      }
      if (node.kind == ExprNode::Kind::kLoad) {
        // Bias b's row: every sublane the same L words. A bf16 row holds each element in the low
        // half of its word, which a shift by 16 makes the f32 of the same value.
        const auto b = static_cast<uint64_t>(std::find(epilogue.biases.begin(), epilogue.biases.end(), n) -
                                             epilogue.biases.begin());
        const uint64_t offset = b * regs.bias_stride + static_cast<uint64_t>(tiles[copy].column) * tile_bytes;
        out.Emit(isa::OPCODE_VLD, {V(d), Vmem(S(regs.column_base), static_cast<int64_t>(offset))}, {{"stride", 0}});
        follows = bf16;
        continue;
      }
      const Opcode opcode = node.hlo->opcode();
      if (opcode == Opcode::kConvert) {  // to bf16 (IsIdentity took the rest)
        out.Emit(isa::OPCODE_VCVT_BF16_F32, {V(d), V(vreg(node.inputs[0], copy))});
        continue;
      }
      const isa::Opcode vpu = *FloatVpuOpcode(opcode);  // BuildDotEpilogue checked it has one
      if (node.inputs.size() == 1) {
        out.Emit(vpu, {V(d), V(vreg(node.inputs[0], copy))});
      } else {
        out.Emit(vpu, {V(d), V(vreg(node.inputs[0], copy)), V(vreg(node.inputs[1], copy))});
      }
      // bf16 arithmetic rounds its f32 result (maximum, minimum, negate and abs of bf16 values
      // are bf16 values already), as the element-wise kernels do.
      follows = bf16 && opcode != Opcode::kMaximum && opcode != Opcode::kMinimum && opcode != Opcode::kNegate &&
                opcode != Opcode::kAbs;
    }
    for (std::size_t copy = 0; copy < reads.size() && follows; ++copy) {
      const int d = vreg(n, copy);
      if (node.kind == ExprNode::Kind::kLoad && node.view == nullptr) {
        out.Emit(tiles[copy].row % 2 == 0 ? isa::OPCODE_VUNPACK_LO_BF16 : isa::OPCODE_VUNPACK_HI_BF16, {V(d), V(d)});
      } else if (node.kind == ExprNode::Kind::kLoad) {
        out.Emit(isa::OPCODE_VSHL, {V(d), V(d), V(shift)});
      } else {
        out.Emit(isa::OPCODE_VCVT_BF16_F32, {V(d), V(d)});
      }
    }
  }
  for (std::size_t copy = 0; copy < reads.size(); ++copy) {
    const int result = vreg(expr.outputs[0], copy);
    if (result != reads[copy]) out.Emit(isa::OPCODE_VOR, {V(reads[copy]), V(result), V(result)});
  }
}

}  // namespace tpusim::compiler
