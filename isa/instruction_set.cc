#include "isa/instruction_set.h"

#include <algorithm>

namespace tpusim::isa {
namespace {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kUint32Max = std::numeric_limits<uint32_t>::max();

constexpr uint32_t kDmaSpaces = SpaceBit(MEMORY_SPACE_HBM) | SpaceBit(MEMORY_SPACE_VMEM) |
                                SpaceBit(MEMORY_SPACE_SMEM) | SpaceBit(MEMORY_SPACE_CMEM) |
                                SpaceBit(MEMORY_SPACE_HOST) | SpaceBit(MEMORY_SPACE_ICI);

// Operand builders, so that each table row reads like the assembly it describes.
OperandSpec SReg(std::string_view name, Access access = Access::kRead) {
  return {.name = name, .kind = OperandKind::kSReg, .access = access};
}
OperandSpec SRegOrImm(std::string_view name, int64_t min = std::numeric_limits<int64_t>::min(),
                      int64_t max = std::numeric_limits<int64_t>::max()) {
  return {.name = name, .kind = OperandKind::kSRegOrImm, .min = min, .max = max};
}
OperandSpec VReg(std::string_view name, Access access = Access::kRead) {
  return {.name = name, .kind = OperandKind::kVReg, .access = access};
}
OperandSpec MReg(std::string_view name, Access access = Access::kRead) {
  return {.name = name, .kind = OperandKind::kMReg, .access = access};
}
OperandSpec Label() { return {.name = "target", .kind = OperandKind::kLabel, .access = Access::kNone}; }
OperandSpec Mem(std::string_view name, uint32_t spaces) {
  return {.name = name, .kind = OperandKind::kAddress, .access = Access::kNone, .spaces = spaces};
}
OperandSpec Sem() { return {.name = "sem", .kind = OperandKind::kSemaphore, .access = Access::kNone}; }
OperandSpec Mxu() { return {.name = "mxu", .kind = OperandKind::kMxu, .access = Access::kNone}; }
OperandSpec Keyword(OperandSpec spec, bool optional) {
  spec.keyword = true;
  spec.optional = optional;
  return spec;
}

struct TableBuilder {
  std::vector<InstructionInfo> rows;

  void Add(Opcode opcode, std::string_view mnemonic, Unit unit, CostClass cost,
           std::vector<OperandSpec> operands, std::string_view summary) {
    rows.push_back({.opcode = opcode, .mnemonic = mnemonic, .unit = unit, .cost = cost,
                    .operands = std::move(operands), .summary = summary});
  }

  void Scalar() {
    constexpr Unit u = Unit::kScalar;
    constexpr CostClass c = CostClass::kScalarIssue;
    Add(OPCODE_NOP, "nop", u, c, {}, "nothing");
    Add(OPCODE_HALT, "halt", u, c, {},
        "stop fetching; the program ends when every queue has drained and every DMA is done");
    Add(OPCODE_MOV, "mov", u, c, {SReg("sd", Access::kWrite), SRegOrImm("sa")}, "sd = sa");
    struct Binary { Opcode op; std::string_view name, summary; };
    const Binary binaries[] = {
        {OPCODE_ADD, "add", "sd = sa + sb (wrapping)"},
        {OPCODE_SUB, "sub", "sd = sa - sb (wrapping)"},
        {OPCODE_MUL, "mul", "sd = low 64 bits of sa * sb"},
        {OPCODE_DIV, "div", "sd = sa / sb signed, toward zero; x/0 = -1, MIN/-1 = MIN"},
        {OPCODE_REM, "rem", "sd = sa % sb signed, sign of sa; x%0 = x, MIN%-1 = 0"},
        {OPCODE_DIVU, "divu", "sd = sa / sb unsigned; x/0 = 2^64-1"},
        {OPCODE_REMU, "remu", "sd = sa % sb unsigned; x%0 = x"},
        {OPCODE_AND, "and", "sd = sa & sb"},
        {OPCODE_OR, "or", "sd = sa | sb"},
        {OPCODE_XOR, "xor", "sd = sa ^ sb"},
        {OPCODE_SHL, "shl", "sd = sa << sb; 0 if sb (unsigned) >= 64"},
        {OPCODE_SHR, "shr", "sd = sa >> sb logical; 0 if sb (unsigned) >= 64"},
        {OPCODE_SRA, "sra", "sd = sa >> sb arithmetic; sign fill if sb (unsigned) >= 64"},
        {OPCODE_MIN, "min", "sd = signed min(sa, sb)"},
        {OPCODE_MAX, "max", "sd = signed max(sa, sb)"},
    };
    for (const Binary& b : binaries) {
      Add(b.op, b.name, u, c, {SReg("sd", Access::kWrite), SReg("sa"), SRegOrImm("sb")}, b.summary);
    }
    constexpr CostClass m = CostClass::kSmemAccess;
    const uint32_t smem = SpaceBit(MEMORY_SPACE_SMEM);
    Add(OPCODE_LD_S32, "ld.s32", u, m, {SReg("sd", Access::kWrite), Mem("addr", smem)},
        "sd = sign-extended 32-bit word at addr (4-aligned)");
    Add(OPCODE_LD_U32, "ld.u32", u, m, {SReg("sd", Access::kWrite), Mem("addr", smem)},
        "sd = zero-extended 32-bit word at addr (4-aligned)");
    Add(OPCODE_LD_S64, "ld.s64", u, m, {SReg("sd", Access::kWrite), Mem("addr", smem)},
        "sd = 64-bit word at addr (8-aligned)");
    Add(OPCODE_ST_S32, "st.s32", u, m, {SReg("sv"), Mem("addr", smem)},
        "32-bit word at addr (4-aligned) = low 32 bits of sv");
    Add(OPCODE_ST_S64, "st.s64", u, m, {SReg("sv"), Mem("addr", smem)},
        "64-bit word at addr (8-aligned) = sv");

    constexpr CostClass br = CostClass::kScalarBranch;
    Add(OPCODE_BR, "br", u, br, {Label()}, "go to target");
    struct Branch { Opcode op; std::string_view name, summary; };
    const Branch branches[] = {
        {OPCODE_BEQ, "beq", "go to target if sa == sb"},
        {OPCODE_BNE, "bne", "go to target if sa != sb"},
        {OPCODE_BLT, "blt", "go to target if sa < sb (signed)"},
        {OPCODE_BLE, "ble", "go to target if sa <= sb (signed)"},
        {OPCODE_BGT, "bgt", "go to target if sa > sb (signed)"},
        {OPCODE_BGE, "bge", "go to target if sa >= sb (signed)"},
        {OPCODE_BLTU, "bltu", "go to target if sa < sb (unsigned)"},
        {OPCODE_BLEU, "bleu", "go to target if sa <= sb (unsigned)"},
        {OPCODE_BGTU, "bgtu", "go to target if sa > sb (unsigned)"},
        {OPCODE_BGEU, "bgeu", "go to target if sa >= sb (unsigned)"},
    };
    for (const Branch& b : branches) Add(b.op, b.name, u, br, {SReg("sa"), SRegOrImm("sb"), Label()}, b.summary);
    Add(OPCODE_LOOP, "loop", u, br, {SReg("sc", Access::kReadWrite), Label()},
        "sc = sc - 1; go to target if sc > 0 (signed)");

    constexpr CostClass s = CostClass::kSemaphore;
    Add(OPCODE_SEM_WAIT, "sem.wait", u, s, {Sem(), SRegOrImm("n", 0, kUint32Max)},
        "stall until sem >= n, then sem -= n");
    Add(OPCODE_SEM_SIGNAL, "sem.signal", u, s, {Sem(), SRegOrImm("n", 0, kUint32Max)}, "sem += n");
    Add(OPCODE_SEM_SET, "sem.set", u, s, {Sem(), SRegOrImm("n", 0, kUint32Max)}, "sem = n");
    Add(OPCODE_VPU_SIGNAL, "vpu.signal", Unit::kVpu, CostClass::kVpuIssue,
        {Sem(), SRegOrImm("n", 0, kUint32Max)},
        "in VPU queue order: once every earlier VPU instruction is complete, sem += n");
    Add(OPCODE_CORE_ID, "core.id", u, c, {SReg("sd", Access::kWrite)},
        "sd = this TensorCore's index in the chip (0 .. tensor_cores - 1)");
    Add(OPCODE_CORE_SYNC, "core.sync", u, CostClass::kCoreSync, {},
        "stall until every TensorCore running the program has reached its matching core.sync; on one "
        "core, only an issue slot (it ends a segment a run may replay: docs/timing.md, \"Reuse\")");
  }

  void Elementwise() {
    constexpr Unit u = Unit::kVpu;
    constexpr CostClass c = CostClass::kVpuElementwise;
    const OperandSpec vd = VReg("vd", Access::kWrite);
    Add(OPCODE_VMOV, "vmov", u, c, {vd, VReg("va")}, "vd = va");
    Add(OPCODE_VBCAST, "vbcast", u, c, {vd, SRegOrImm("sa", kInt32Min, kUint32Max)},
        "every word of vd = low 32 bits of sa");
    Add(OPCODE_VLANEID, "vlaneid", u, c, {vd}, "vd[s][l] = l (s32)");
    Add(OPCODE_VSUBLANEID, "vsublaneid", u, c, {vd}, "vd[s][l] = s (s32)");
    struct Op { Opcode op; std::string_view name, summary; };
    const Op binaries[] = {
        {OPCODE_VADD_F32, "vadd.f32", "vd = va + vb"},
        {OPCODE_VSUB_F32, "vsub.f32", "vd = va - vb"},
        {OPCODE_VMUL_F32, "vmul.f32", "vd = va * vb"},
        {OPCODE_VDIV_F32, "vdiv.f32", "vd = va / vb (IEEE, correctly rounded)"},
        {OPCODE_VMAX_F32, "vmax.f32", "vd = max(va, vb); NaN if either is NaN"},
        {OPCODE_VMIN_F32, "vmin.f32", "vd = min(va, vb); NaN if either is NaN"},
        {OPCODE_VADD_S32, "vadd.s32", "vd = va + vb (wrapping)"},
        {OPCODE_VSUB_S32, "vsub.s32", "vd = va - vb (wrapping)"},
        {OPCODE_VMUL_S32, "vmul.s32", "vd = low 32 bits of va * vb"},
        {OPCODE_VDIV_S32, "vdiv.s32", "vd = va / vb toward zero; x/0 = -1, MIN/-1 = MIN"},
        {OPCODE_VREM_S32, "vrem.s32", "vd = va % vb, sign of va; x%0 = x, MIN%-1 = 0"},
        {OPCODE_VMAX_S32, "vmax.s32", "vd = signed max(va, vb)"},
        {OPCODE_VMIN_S32, "vmin.s32", "vd = signed min(va, vb)"},
        {OPCODE_VDIV_U32, "vdiv.u32", "vd = va / vb unsigned; x/0 = 2^32-1"},
        {OPCODE_VREM_U32, "vrem.u32", "vd = va % vb unsigned; x%0 = x"},
        {OPCODE_VMAX_U32, "vmax.u32", "vd = unsigned max(va, vb)"},
        {OPCODE_VMIN_U32, "vmin.u32", "vd = unsigned min(va, vb)"},
        {OPCODE_VAND, "vand", "vd = va & vb"},
        {OPCODE_VOR, "vor", "vd = va | vb"},
        {OPCODE_VXOR, "vxor", "vd = va ^ vb"},
        {OPCODE_VSHL, "vshl", "vd = va << vb; 0 if vb (unsigned) >= 32"},
        {OPCODE_VSHR, "vshr", "vd = va >> vb logical; 0 if vb (unsigned) >= 32"},
        {OPCODE_VSRA, "vsra", "vd = va >> vb arithmetic; sign fill if vb (unsigned) >= 32"},
    };
    for (const Op& b : binaries) Add(b.op, b.name, u, c, {vd, VReg("va"), VReg("vb")}, b.summary);
    const Op unaries[] = {
        {OPCODE_VNOT, "vnot", "vd = ~va"},
        {OPCODE_VABS_F32, "vabs.f32", "vd = |va| (clears the sign bit)"},
        {OPCODE_VNEG_F32, "vneg.f32", "vd = -va (flips the sign bit)"},
        {OPCODE_VABS_S32, "vabs.s32", "vd = |va| (wrapping: |MIN| = MIN)"},
        {OPCODE_VNEG_S32, "vneg.s32", "vd = -va (wrapping)"},
        {OPCODE_VCVT_F32_S32, "vcvt.f32.s32", "vd = f32(va as s32), round to nearest even"},
        {OPCODE_VCVT_S32_F32, "vcvt.s32.f32", "vd = s32(va as f32): toward zero, saturating, NaN -> 0"},
        {OPCODE_VCVT_BF16_F32, "vcvt.bf16.f32",
         "vd = va rounded to bf16 (nearest even), kept as f32 (low 16 bits 0)"},
        {OPCODE_VUNPACK_LO_BF16, "vunpack.lo.bf16",
         "vd = f32 of packed bf16 rows 0..S-1 of va (row r: word r/2, half r%2)"},
        {OPCODE_VUNPACK_HI_BF16, "vunpack.hi.bf16", "vd = f32 of packed bf16 rows S..2S-1 of va"},
    };
    for (const Op& o : unaries) Add(o.op, o.name, u, c, {vd, VReg("va")}, o.summary);
    Add(OPCODE_VPACK_BF16, "vpack.bf16", u, c, {vd, VReg("va"), VReg("vb")},
        "vd = bf16 rows of va (rows 0..S-1) and vb (rows S..2S-1), packed in pairs, nearest even");

    struct Compare { Opcode op; std::string_view name; };
    const Compare compares[] = {
        {OPCODE_VCMP_EQ_F32, "vcmp.eq.f32"}, {OPCODE_VCMP_NE_F32, "vcmp.ne.f32"},
        {OPCODE_VCMP_LT_F32, "vcmp.lt.f32"}, {OPCODE_VCMP_LE_F32, "vcmp.le.f32"},
        {OPCODE_VCMP_GT_F32, "vcmp.gt.f32"}, {OPCODE_VCMP_GE_F32, "vcmp.ge.f32"},
        {OPCODE_VCMP_EQ_S32, "vcmp.eq.s32"}, {OPCODE_VCMP_NE_S32, "vcmp.ne.s32"},
        {OPCODE_VCMP_LT_S32, "vcmp.lt.s32"}, {OPCODE_VCMP_LE_S32, "vcmp.le.s32"},
        {OPCODE_VCMP_GT_S32, "vcmp.gt.s32"}, {OPCODE_VCMP_GE_S32, "vcmp.ge.s32"},
        {OPCODE_VCMP_LT_U32, "vcmp.lt.u32"}, {OPCODE_VCMP_LE_U32, "vcmp.le.u32"},
        {OPCODE_VCMP_GT_U32, "vcmp.gt.u32"}, {OPCODE_VCMP_GE_U32, "vcmp.ge.u32"},
    };
    for (const Compare& k : compares) {
      Add(k.op, k.name, u, c, {MReg("md", Access::kWrite), VReg("va"), VReg("vb")},
          "md = (va OP vb) per element; IEEE: false for NaN, except ne");
    }
    Add(OPCODE_VSEL, "vsel", u, c, {vd, MReg("m"), VReg("va"), VReg("vb")}, "vd = m ? va : vb");
    const OperandSpec md = MReg("md", Access::kWrite);
    Add(OPCODE_MAND, "mand", u, c, {md, MReg("ma"), MReg("mb")}, "md = ma & mb");
    Add(OPCODE_MOR, "mor", u, c, {md, MReg("ma"), MReg("mb")}, "md = ma | mb");
    Add(OPCODE_MXOR, "mxor", u, c, {md, MReg("ma"), MReg("mb")}, "md = ma ^ mb");
    Add(OPCODE_MNOT, "mnot", u, c, {md, MReg("ma")}, "md = ~ma");
  }

  void Transcendental() {
    constexpr Unit u = Unit::kVpuTranscendental;
    constexpr CostClass c = CostClass::kVpuTranscendental;
    struct Op { Opcode op; std::string_view name, summary; };
    const Op ops[] = {
        {OPCODE_VEXP_F32, "vexp.f32", "vd = e^va"},
        {OPCODE_VLOG_F32, "vlog.f32", "vd = ln(va)"},
        {OPCODE_VRSQRT_F32, "vrsqrt.f32", "vd = 1 / sqrt(va)"},
        {OPCODE_VSQRT_F32, "vsqrt.f32", "vd = sqrt(va)"},
        {OPCODE_VTANH_F32, "vtanh.f32", "vd = tanh(va)"},
        {OPCODE_VRCP_F32, "vrcp.f32", "vd = 1 / va"},
        {OPCODE_VLOGISTIC_F32, "vlogistic.f32", "vd = 1 / (1 + e^-va)"},
        {OPCODE_VSIN_F32, "vsin.f32", "vd = sin(va)"},
        {OPCODE_VCOS_F32, "vcos.f32", "vd = cos(va)"},
    };
    for (const Op& o : ops) Add(o.op, o.name, u, c, {VReg("vd", Access::kWrite), VReg("va")}, o.summary);
    Add(OPCODE_VPOW_F32, "vpow.f32", u, c, {VReg("vd", Access::kWrite), VReg("va"), VReg("vb")}, "vd = va ^ vb");
  }

  void CrossLane() {
    constexpr Unit u = Unit::kVpuCrossLane;
    constexpr CostClass c = CostClass::kVpuCrossLane;
    const OperandSpec vd = VReg("vd", Access::kWrite);
    Add(OPCODE_VROT, "vrot", u, c, {vd, VReg("va"), SRegOrImm("n")},
        "vd[s][(l + n) mod L] = va[s][l]: rotate toward higher lanes");
    Add(OPCODE_VPERM, "vperm", u, c, {vd, VReg("va"), VReg("vi")},
        "vd[s][l] = va[s][vi[s][l] (unsigned) mod L]");
    Add(OPCODE_VXPOSE, "vxpose", u, c, {vd, VReg("va")},
        "transpose each SxS block of lanes: vd[s][bS + t] = va[t][bS + s] (L % S == 0)");
    struct Op { Opcode op; std::string_view name, summary; };
    const Op reductions[] = {
        {OPCODE_VRED_ADD_F32, "vred.add.f32", "vd[s][0] = sum of va[s][*] (halving tree), other lanes 0"},
        {OPCODE_VRED_MAX_F32, "vred.max.f32", "vd[s][0] = max of va[s][*], other lanes 0"},
        {OPCODE_VRED_MIN_F32, "vred.min.f32", "vd[s][0] = min of va[s][*], other lanes 0"},
        {OPCODE_VRED_ADD_S32, "vred.add.s32", "vd[s][0] = wrapping sum of va[s][*], other lanes 0"},
        {OPCODE_VRED_MAX_S32, "vred.max.s32", "vd[s][0] = max of va[s][*], other lanes 0"},
        {OPCODE_VRED_MIN_S32, "vred.min.s32", "vd[s][0] = min of va[s][*], other lanes 0"},
        {OPCODE_VREDB_ADD_F32, "vredb.add.f32", "vd[s][*] = sum of va[s][*] (halving tree)"},
        {OPCODE_VREDB_MAX_F32, "vredb.max.f32", "vd[s][*] = max of va[s][*]"},
        {OPCODE_VREDB_MIN_F32, "vredb.min.f32", "vd[s][*] = min of va[s][*]"},
        {OPCODE_VREDB_ADD_S32, "vredb.add.s32", "vd[s][*] = wrapping sum of va[s][*]"},
        {OPCODE_VREDB_MAX_S32, "vredb.max.s32", "vd[s][*] = max of va[s][*]"},
        {OPCODE_VREDB_MIN_S32, "vredb.min.s32", "vd[s][*] = min of va[s][*]"},
    };
    for (const Op& o : reductions) Add(o.op, o.name, u, c, {vd, VReg("va")}, o.summary);
  }

  void VectorMemory() {
    const uint32_t vmem = SpaceBit(MEMORY_SPACE_VMEM);
    const OperandSpec stride = Keyword(
        {.name = "stride", .kind = OperandKind::kImm, .access = Access::kNone, .min = kInt32Min, .max = kInt32Max},
        true);
    const OperandSpec sublanes =
        Keyword({.name = "sublanes", .kind = OperandKind::kBits, .access = Access::kNone}, true);
    Add(OPCODE_VLD, "vld", Unit::kVpu, CostClass::kVmemLoad,
        {VReg("vd", Access::kWrite), Mem("addr", vmem), stride, sublanes},
        "vd[s][l] = word at addr + 4 * (s * stride * L + l) for sublanes s in the mask, else 0");
    Add(OPCODE_VST, "vst", Unit::kVpu, CostClass::kVmemStore,
        {VReg("va"), Mem("addr", vmem), stride, sublanes, Keyword(MReg("mask"), true)},
        "word at addr + 4 * (s * stride * L + l) = va[s][l] for sublanes s in the mask, where mask is set");
  }

  void Matrix() {
    struct Type { ElementType type; Opcode wpush, push; std::string_view wname, pname; CostClass cost; };
    const Type types[] = {
        {ElementType::kBF16, OPCODE_MXU_WPUSH_BF16, OPCODE_MXU_PUSH_BF16, "mxu.wpush.bf16", "mxu.push.bf16", CostClass::kMxuPassBf16},
        {ElementType::kF32, OPCODE_MXU_WPUSH_F32, OPCODE_MXU_PUSH_F32, "mxu.wpush.f32", "mxu.push.f32", CostClass::kMxuPassF32},
        {ElementType::kF16, OPCODE_MXU_WPUSH_F16, OPCODE_MXU_PUSH_F16, "mxu.wpush.f16", "mxu.push.f16", CostClass::kMxuPassF16},
        {ElementType::kS8, OPCODE_MXU_WPUSH_S8, OPCODE_MXU_PUSH_S8, "mxu.wpush.s8", "mxu.push.s8", CostClass::kMxuPassS8},
        {ElementType::kF8E4M3FN, OPCODE_MXU_WPUSH_F8E4M3FN, OPCODE_MXU_PUSH_F8E4M3FN, "mxu.wpush.f8e4m3fn", "mxu.push.f8e4m3fn", CostClass::kMxuPassF8},
        {ElementType::kF8E5M2, OPCODE_MXU_WPUSH_F8E5M2, OPCODE_MXU_PUSH_F8E5M2, "mxu.wpush.f8e5m2", "mxu.push.f8e5m2", CostClass::kMxuPassF8},
    };
    for (const Type& t : types) {
      Add(t.wpush, t.wname, Unit::kMxu, CostClass::kMxuWeightPush, {Mxu(), VReg("va")},
          "stage the next block of packed weight rows of va in mxu's weight buffer");
      rows.back().mxu_type = t.type;
    }
    Add(OPCODE_MXU_LATCH, "mxu.latch", Unit::kMxu, CostClass::kMxuLatch, {Mxu()},
        "the staged weights (unpushed parts 0) become mxu's weights; staging restarts empty");
    for (const Type& t : types) {
      Add(t.push, t.pname, Unit::kMxu, t.cost, {Mxu(), VReg("va")},
          "push the next block of packed LHS rows of va; each complete row r adds row r x W to the result FIFO");
      rows.back().mxu_type = t.type;
    }
    Add(OPCODE_MXU_POP, "mxu.pop", Unit::kMxu, CostClass::kMxuPop, {Mxu(), VReg("vd", Access::kWrite)},
        "vd = next S result rows x L columns from the result FIFO (f32; s32 for s8)");
    Add(OPCODE_MXU_POP_ACC, "mxu.pop.acc", Unit::kMxu, CostClass::kMxuPop,
        {Mxu(), VReg("vd", Access::kReadWrite)}, "vd += next S result rows x L columns (f32 or s32 add)");
    // The accumulators: rows and column blocks are register or immediate values, read at dispatch.
    struct AccType { ElementType type; Opcode op; std::string_view name; CostClass cost; };
    const AccType acc_types[] = {
        {ElementType::kBF16, OPCODE_MXU_PUSH_ACC_BF16, "mxu.push.acc.bf16", CostClass::kMxuPassBf16},
        {ElementType::kF32, OPCODE_MXU_PUSH_ACC_F32, "mxu.push.acc.f32", CostClass::kMxuPassF32},
        {ElementType::kF16, OPCODE_MXU_PUSH_ACC_F16, "mxu.push.acc.f16", CostClass::kMxuPassF16},
        {ElementType::kS8, OPCODE_MXU_PUSH_ACC_S8, "mxu.push.acc.s8", CostClass::kMxuPassS8},
        {ElementType::kF8E4M3FN, OPCODE_MXU_PUSH_ACC_F8E4M3FN, "mxu.push.acc.f8e4m3fn", CostClass::kMxuPassF8},
        {ElementType::kF8E5M2, OPCODE_MXU_PUSH_ACC_F8E5M2, "mxu.push.acc.f8e5m2", CostClass::kMxuPassF8},
    };
    for (const AccType& t : acc_types) {
      Add(t.op, t.name, Unit::kMxu, t.cost, {Mxu(), VReg("va"), SRegOrImm("row", 0, kUint32Max)},
          "as mxu.push.T, but each complete row r is added into accumulator row (row + r), continuing its sum, "
          "instead of the result FIFO");
      rows.back().mxu_type = t.type;
    }
    Add(OPCODE_MXU_ACC_READ, "mxu.acc.read", Unit::kMxu, CostClass::kMxuPop,
        {Mxu(), VReg("vd", Access::kWrite), SRegOrImm("row", 0, kUint32Max), SRegOrImm("col", 0, kUint32Max)},
        "vd[s][l] = accumulator row (row + s), column col x L + l (0 beyond C)");
    Add(OPCODE_MXU_ACC_READ_CLEAR, "mxu.acc.read.clear", Unit::kMxu, CostClass::kMxuPop,
        {Mxu(), VReg("vd", Access::kWrite), SRegOrImm("row", 0, kUint32Max), SRegOrImm("col", 0, kUint32Max)},
        "as mxu.acc.read, then those S x L accumulator words become +0");
  }

  void Dma() {
    const OperandSpec none{.name = "", .kind = OperandKind::kShape, .access = Access::kNone};
    OperandSpec src_shape = none, dst_shape = none;
    src_shape.name = "src";
    dst_shape.name = "dst";
    const OperandSpec src_start{.name = "src_start", .kind = OperandKind::kIndex, .access = Access::kNone};
    OperandSpec dst_start = src_start;
    dst_start.name = "dst_start";
    const OperandSpec size{.name = "size", .kind = OperandKind::kSizes, .access = Access::kNone};
    OperandSpec sem = Sem();
    const OperandSpec engine{.name = "engine", .kind = OperandKind::kDmaEngine, .access = Access::kNone};
    Add(OPCODE_DMA, "dma", Unit::kDma, CostClass::kDmaTransfer,
        {Mem("from", kDmaSpaces), Mem("to", kDmaSpaces), Keyword(src_shape, false), Keyword(dst_shape, false),
         Keyword(src_start, true), Keyword(dst_start, true), Keyword(size, false), Keyword(sem, false),
         Keyword(engine, false)},
        "on engine: dst[dst_start + i] = src[src_start + i] for i in the size box; then sem += 1");
    rows.back().arrow = true;
  }
};

std::vector<InstructionInfo> BuildTable() {
  TableBuilder b;
  b.Scalar();
  b.Elementwise();
  b.Transcendental();
  b.CrossLane();
  b.VectorMemory();
  b.Matrix();
  b.Dma();
  std::sort(b.rows.begin(), b.rows.end(),
            [](const InstructionInfo& x, const InstructionInfo& y) { return x.opcode < y.opcode; });
  return std::move(b.rows);
}

std::vector<CostClassInfo> BuildCostClasses() {
  const std::string_view scalar_issue = "tensor_core.scalar_core.issue_instructions_per_cycle";
  const std::string_view vpu_issue = "tensor_core.vpu.issue_instructions_per_cycle";
  return {
      {CostClass::kScalarIssue, "scalar-issue", {scalar_issue},
       "one scalar issue slot: 1 / issue_instructions_per_cycle cycles"},
      {CostClass::kScalarBranch, "scalar-branch", {scalar_issue, "tensor_core.scalar_core.branch_cost_cycles"},
       "an issue slot, plus branch_cost_cycles when the branch is taken"},
      {CostClass::kSmemAccess, "smem-access", {scalar_issue, "tensor_core.scalar_core.smem_latency_cycles"},
       "an issue slot; a load's register is usable smem_latency_cycles after issue"},
      {CostClass::kSemaphore, "semaphore", {scalar_issue},
       "an issue slot; sem.wait stalls the scalar core until the semaphore reaches n"},
      {CostClass::kCoreSync, "core-sync", {scalar_issue, "tensor_core.scalar_core.core_sync_cycles"},
       "an issue slot; stalls until the last TensorCore arrives, then core_sync_cycles more"},
      {CostClass::kVpuIssue, "vpu-issue", {vpu_issue},
       "a VPU issue slot; waits for every earlier VPU instruction to complete"},
      {CostClass::kVpuElementwise, "vpu-elementwise",
       {vpu_issue, "tensor_core.vpu.elementwise.latency_cycles", "tensor_core.vpu.elementwise.throughput_vregs_per_cycle"},
       "element-wise pipeline: occupied 1 / throughput cycles, result after latency_cycles"},
      {CostClass::kVpuTranscendental, "vpu-transcendental",
       {vpu_issue, "tensor_core.vpu.transcendental.latency_cycles",
        "tensor_core.vpu.transcendental.throughput_vregs_per_cycle"},
       "transcendental pipeline: occupied 1 / throughput cycles, result after latency_cycles"},
      {CostClass::kVpuCrossLane, "vpu-cross-lane",
       {vpu_issue, "tensor_core.vpu.cross_lane.latency_cycles", "tensor_core.vpu.cross_lane.throughput_vregs_per_cycle"},
       "cross-lane pipeline: occupied 1 / throughput cycles, result after latency_cycles"},
      {CostClass::kVmemLoad, "vmem-load",
       {vpu_issue, "tensor_core.vmem.access_latency_cycles", "tensor_core.vmem.read_bandwidth_gbps",
        "tensor_core.vmem.bank_count"},
       "the bytes read at VMEM's read bandwidth (shared with DMAs), result after access_latency_cycles"},
      {CostClass::kVmemStore, "vmem-store",
       {vpu_issue, "tensor_core.vmem.access_latency_cycles", "tensor_core.vmem.write_bandwidth_gbps",
        "tensor_core.vmem.bank_count"},
       "the bytes written at VMEM's write bandwidth (shared with DMAs)"},
      {CostClass::kMxuWeightPush, "mxu-weight-push",
       {"tensor_core.mxu.weight_load_cycles", "tensor_core.mxu.weight_buffer_count"},
       "weight_load_cycles per full weight tile, shared evenly by the pushes that fill it"},
      {CostClass::kMxuLatch, "mxu-latch", {"tensor_core.mxu.weight_buffer_count"},
       "one cycle; with one weight buffer, first waits until earlier pushes have left the array"},
      {CostClass::kMxuPassBf16, "mxu-pass-bf16", {"tensor_core.mxu.bf16_passes", "tensor_core.mxu.pipeline_fill_cycles"},
       "bf16_passes cycles per row entering the array; pipeline_fill_cycles when the array was idle"},
      {CostClass::kMxuPassF32, "mxu-pass-f32", {"tensor_core.mxu.f32_passes", "tensor_core.mxu.pipeline_fill_cycles"},
       "f32_passes cycles per row entering the array (0: the machine rejects the program)"},
      {CostClass::kMxuPassF16, "mxu-pass-f16", {"tensor_core.mxu.f16_passes", "tensor_core.mxu.pipeline_fill_cycles"},
       "f16_passes cycles per row entering the array (0: the machine rejects the program)"},
      {CostClass::kMxuPassS8, "mxu-pass-s8", {"tensor_core.mxu.s8_passes", "tensor_core.mxu.pipeline_fill_cycles"},
       "s8_passes cycles per row entering the array (0: the machine rejects the program)"},
      {CostClass::kMxuPassF8, "mxu-pass-f8", {"tensor_core.mxu.f8_passes", "tensor_core.mxu.pipeline_fill_cycles"},
       "f8_passes cycles per row entering the array (0: the machine rejects the program)"},
      {CostClass::kMxuPop, "mxu-pop", {"tensor_core.mxu.pipeline_drain_cycles"},
       "one cycle once the rows are out: a row leaves pipeline_drain_cycles after it entered"},
      {CostClass::kDmaTransfer, "dma-transfer",
       {"tensor_core.dma.issue_latency_cycles", "tensor_core.dma.burst_bytes",
        "tensor_core.dma.max_outstanding_requests", "hbm.channel_bandwidth_gbps", "hbm.access_latency_ns",
        "tensor_core.vmem.read_bandwidth_gbps", "tensor_core.vmem.write_bandwidth_gbps",
        "cmem.read_bandwidth_gbps", "cmem.write_bandwidth_gbps", "pcie.bandwidth_gbps", "pcie.latency_ns",
        "host.access_latency_ns", "ici.link_bandwidth_gbps", "ici.ring_link_count", "ici.latency_ns"},
       "issue_latency_cycles, then bursts of burst_bytes, max_outstanding_requests in flight, each "
       "served by the source and destination memories at their bandwidth and latency"},
  };
}

}  // namespace

std::string_view UnitName(Unit unit) {
  switch (unit) {
    case Unit::kScalar: return "scalar";
    case Unit::kVpu: return "vpu";
    case Unit::kVpuTranscendental: return "vpu-transcendental";
    case Unit::kVpuCrossLane: return "vpu-cross-lane";
    case Unit::kMxu: return "mxu";
    case Unit::kDma: return "dma";
  }
  return "?";
}

std::string_view OperandKindName(OperandKind kind) {
  switch (kind) {
    case OperandKind::kSReg: return "a scalar register";
    case OperandKind::kSRegOrImm: return "a scalar register or an immediate";
    case OperandKind::kImm: return "an immediate";
    case OperandKind::kBits: return "a bit mask";
    case OperandKind::kVReg: return "a vector register";
    case OperandKind::kMReg: return "a mask register";
    case OperandKind::kLabel: return "a label";
    case OperandKind::kAddress: return "an address";
    case OperandKind::kSemaphore: return "a semaphore (sem[...])";
    case OperandKind::kMxu: return "an MXU (mxu0, mxu1, ...)";
    case OperandKind::kDmaEngine: return "a DMA engine number";
    case OperandKind::kShape: return "a shape with a layout";
    case OperandKind::kIndex: return "an index list ([s1 + 8, 0, ...])";
    case OperandKind::kSizes: return "a size list ([128, 256, ...])";
  }
  return "?";
}

const std::vector<InstructionInfo>& InstructionTable() {
  static const std::vector<InstructionInfo> table = BuildTable();
  return table;
}

const InstructionInfo* FindInstruction(Opcode opcode) {
  const std::vector<InstructionInfo>& table = InstructionTable();
  const auto it = std::lower_bound(table.begin(), table.end(), opcode,
                                   [](const InstructionInfo& row, Opcode op) { return row.opcode < op; });
  return it != table.end() && it->opcode == opcode ? &*it : nullptr;
}

const InstructionInfo* FindInstruction(std::string_view mnemonic) {
  for (const InstructionInfo& row : InstructionTable()) {
    if (row.mnemonic == mnemonic) return &row;
  }
  return nullptr;
}

int OperandIndex(const InstructionInfo& info, std::string_view name) {
  for (std::size_t i = 0; i < info.operands.size(); ++i) {
    if (info.operands[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const std::vector<CostClassInfo>& CostClassTable() {
  static const std::vector<CostClassInfo> table = BuildCostClasses();
  return table;
}

const CostClassInfo& GetCostClassInfo(CostClass cost) { return CostClassTable()[static_cast<std::size_t>(cost)]; }

std::string_view MemorySpaceName(MemorySpace space) {
  switch (space) {
    case MEMORY_SPACE_HBM: return "hbm";
    case MEMORY_SPACE_VMEM: return "vmem";
    case MEMORY_SPACE_SMEM: return "smem";
    case MEMORY_SPACE_CMEM: return "cmem";
    case MEMORY_SPACE_HOST: return "host";
    case MEMORY_SPACE_ICI: return "ici";
    default: return "";
  }
}

std::optional<MemorySpace> ParseMemorySpaceName(std::string_view name) {
  for (MemorySpace space : {MEMORY_SPACE_HBM, MEMORY_SPACE_VMEM, MEMORY_SPACE_SMEM, MEMORY_SPACE_CMEM,
                            MEMORY_SPACE_HOST, MEMORY_SPACE_ICI}) {
    if (MemorySpaceName(space) == name) return space;
  }
  return std::nullopt;
}

uint32_t PackedRowsPerVreg(ElementType type, uint32_t sublanes) {
  const int bits = ElementBitWidth(type);
  return bits <= 0 || bits > 32 ? sublanes : sublanes * static_cast<uint32_t>(32 / bits);
}

}  // namespace tpusim::isa
