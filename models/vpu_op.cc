#include "models/vpu_op.h"

#include "isa/error.h"

namespace tpusim::models {
namespace {

constexpr VpuSubUnit kEw = VpuSubUnit::kElementwise;
constexpr VpuSubUnit kTr = VpuSubUnit::kTranscendental;
constexpr VpuSubUnit kXl = VpuSubUnit::kCrossLane;
constexpr VpuOperand kN = VpuOperand::kNone;
constexpr VpuOperand kV = VpuOperand::kVreg;
constexpr VpuOperand kM = VpuOperand::kMask;
constexpr VpuOperand kS = VpuOperand::kScalar;

// Operand shapes, so each row reads like its assembly.
VpuOpInfo Binary(VpuOp op, std::string_view mnemonic, VpuSubUnit unit = kEw) {
  return {op, mnemonic, unit, kV, kV, kV, false};
}
VpuOpInfo Unary(VpuOp op, std::string_view mnemonic, VpuSubUnit unit = kEw) {
  return {op, mnemonic, unit, kV, kV, kN, false};
}
VpuOpInfo Compare(VpuOp op, std::string_view mnemonic) {
  return {op, mnemonic, kEw, kM, kV, kV, false};
}

std::vector<VpuOpInfo> BuildTable() {
  using O = VpuOp;
  return {
      Unary(O::kMov, "vmov"),
      {O::kBcast, "vbcast", kEw, kV, kS, kN, false},
      {O::kLaneId, "vlaneid", kEw, kV, kN, kN, false},
      {O::kSublaneId, "vsublaneid", kEw, kV, kN, kN, false},
      Binary(O::kAddF32, "vadd.f32"),
      Binary(O::kSubF32, "vsub.f32"),
      Binary(O::kMulF32, "vmul.f32"),
      Binary(O::kDivF32, "vdiv.f32"),
      Binary(O::kMaxF32, "vmax.f32"),
      Binary(O::kMinF32, "vmin.f32"),
      Binary(O::kAddS32, "vadd.s32"),
      Binary(O::kSubS32, "vsub.s32"),
      Binary(O::kMulS32, "vmul.s32"),
      Binary(O::kDivS32, "vdiv.s32"),
      Binary(O::kRemS32, "vrem.s32"),
      Binary(O::kMaxS32, "vmax.s32"),
      Binary(O::kMinS32, "vmin.s32"),
      Binary(O::kDivU32, "vdiv.u32"),
      Binary(O::kRemU32, "vrem.u32"),
      Binary(O::kMaxU32, "vmax.u32"),
      Binary(O::kMinU32, "vmin.u32"),
      Binary(O::kAnd, "vand"),
      Binary(O::kOr, "vor"),
      Binary(O::kXor, "vxor"),
      Unary(O::kNot, "vnot"),
      Binary(O::kShl, "vshl"),
      Binary(O::kShr, "vshr"),
      Binary(O::kSra, "vsra"),
      Unary(O::kAbsF32, "vabs.f32"),
      Unary(O::kNegF32, "vneg.f32"),
      Unary(O::kAbsS32, "vabs.s32"),
      Unary(O::kNegS32, "vneg.s32"),
      Compare(O::kCmpEqF32, "vcmp.eq.f32"),
      Compare(O::kCmpNeF32, "vcmp.ne.f32"),
      Compare(O::kCmpLtF32, "vcmp.lt.f32"),
      Compare(O::kCmpLeF32, "vcmp.le.f32"),
      Compare(O::kCmpGtF32, "vcmp.gt.f32"),
      Compare(O::kCmpGeF32, "vcmp.ge.f32"),
      Compare(O::kCmpEqS32, "vcmp.eq.s32"),
      Compare(O::kCmpNeS32, "vcmp.ne.s32"),
      Compare(O::kCmpLtS32, "vcmp.lt.s32"),
      Compare(O::kCmpLeS32, "vcmp.le.s32"),
      Compare(O::kCmpGtS32, "vcmp.gt.s32"),
      Compare(O::kCmpGeS32, "vcmp.ge.s32"),
      Compare(O::kCmpLtU32, "vcmp.lt.u32"),
      Compare(O::kCmpLeU32, "vcmp.le.u32"),
      Compare(O::kCmpGtU32, "vcmp.gt.u32"),
      Compare(O::kCmpGeU32, "vcmp.ge.u32"),
      {O::kSel, "vsel", kEw, kV, kV, kV, true},
      {O::kMaskAnd, "mand", kEw, kM, kM, kM, false},
      {O::kMaskOr, "mor", kEw, kM, kM, kM, false},
      {O::kMaskXor, "mxor", kEw, kM, kM, kM, false},
      {O::kMaskNot, "mnot", kEw, kM, kM, kN, false},
      Unary(O::kCvtF32S32, "vcvt.f32.s32"),
      Unary(O::kCvtS32F32, "vcvt.s32.f32"),
      Unary(O::kCvtBf16F32, "vcvt.bf16.f32"),
      Binary(O::kPackBf16, "vpack.bf16"),
      Unary(O::kUnpackLoBf16, "vunpack.lo.bf16"),
      Unary(O::kUnpackHiBf16, "vunpack.hi.bf16"),
      Unary(O::kExpF32, "vexp.f32", kTr),
      Unary(O::kLogF32, "vlog.f32", kTr),
      Unary(O::kRsqrtF32, "vrsqrt.f32", kTr),
      Unary(O::kSqrtF32, "vsqrt.f32", kTr),
      Unary(O::kTanhF32, "vtanh.f32", kTr),
      Unary(O::kRcpF32, "vrcp.f32", kTr),
      Unary(O::kLogisticF32, "vlogistic.f32", kTr),
      Unary(O::kSinF32, "vsin.f32", kTr),
      Unary(O::kCosF32, "vcos.f32", kTr),
      Binary(O::kPowF32, "vpow.f32", kTr),
      {O::kRot, "vrot", kXl, kV, kV, kS, false},
      Binary(O::kPerm, "vperm", kXl),
      Unary(O::kXpose, "vxpose", kXl),
      Unary(O::kRedAddF32, "vred.add.f32", kXl),
      Unary(O::kRedMaxF32, "vred.max.f32", kXl),
      Unary(O::kRedMinF32, "vred.min.f32", kXl),
      Unary(O::kRedAddS32, "vred.add.s32", kXl),
      Unary(O::kRedMaxS32, "vred.max.s32", kXl),
      Unary(O::kRedMinS32, "vred.min.s32", kXl),
      Unary(O::kRedbAddF32, "vredb.add.f32", kXl),
      Unary(O::kRedbMaxF32, "vredb.max.f32", kXl),
      Unary(O::kRedbMinF32, "vredb.min.f32", kXl),
      Unary(O::kRedbAddS32, "vredb.add.s32", kXl),
      Unary(O::kRedbMaxS32, "vredb.max.s32", kXl),
      Unary(O::kRedbMinS32, "vredb.min.s32", kXl),
  };
}

const std::vector<VpuOpInfo>& Table() {
  static const std::vector<VpuOpInfo> table = [] {
    std::vector<VpuOpInfo> rows = BuildTable();
    for (size_t i = 0; i < rows.size(); ++i) {
      // GetVpuOpInfo indexes by the enum's value; a row out of order is a bug here.
      if (static_cast<size_t>(rows[i].op) != i) {
        throw Error("VPU op table row " + std::to_string(i) + " (" + std::string(rows[i].mnemonic) +
                    ") is out of enum order");
      }
    }
    return rows;
  }();
  return table;
}

void AddRegister(RegisterUse& use, VpuOperand kind, uint32_t index) {
  if (kind == VpuOperand::kVreg) use.reads[use.read_count++] = {RegisterKind::kVreg, index};
  if (kind == VpuOperand::kMask) use.reads[use.read_count++] = {RegisterKind::kMask, index};
}

}  // namespace

std::string_view VpuSubUnitName(VpuSubUnit unit) {
  switch (unit) {
    case VpuSubUnit::kElementwise: return "element-wise";
    case VpuSubUnit::kTranscendental: return "transcendental";
    case VpuSubUnit::kCrossLane: return "cross-lane";
  }
  return "?";
}

const std::vector<VpuOpInfo>& VpuOpTable() { return Table(); }

const VpuOpInfo& GetVpuOpInfo(VpuOp op) {
  const auto index = static_cast<size_t>(op);
  if (index >= Table().size()) throw Error("unknown VPU op " + std::to_string(index));
  return Table()[index];
}

const VpuOpInfo* FindVpuOp(std::string_view mnemonic) {
  for (const VpuOpInfo& info : Table()) {
    if (info.mnemonic == mnemonic) return &info;
  }
  return nullptr;
}

RegisterUse RegistersOf(const VpuInstr& instr) {
  const VpuOpInfo& info = GetVpuOpInfo(instr.op);
  RegisterUse use;
  if (info.reads_select_mask) use.reads[use.read_count++] = {RegisterKind::kMask, instr.m};
  AddRegister(use, info.a, instr.a);
  AddRegister(use, info.b, instr.b);
  use.writes = true;
  use.write = {info.dst == VpuOperand::kMask ? RegisterKind::kMask : RegisterKind::kVreg,
               instr.dst};
  return use;
}

}  // namespace tpusim::models
