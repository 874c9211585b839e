// The operations the VPU executes, independent of their encoding: one VpuOp per VPU instruction
// of docs/isa.md except the VMEM loads and stores and vpu.signal (those are the VPU's issue slot
// plus work elsewhere; see Vpu::EarliestIssue). Each op's row says its mnemonic (the ISA's, so
// FindVpuOp maps an instruction to its op), the sub-unit that runs it and what its operands are.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/vector_register_file.h"

namespace tpusim::models {

enum class VpuSubUnit : uint8_t { kElementwise, kTranscendental, kCrossLane };
inline constexpr int kVpuSubUnitCount = 3;
// "element-wise", "transcendental", "cross-lane".
std::string_view VpuSubUnitName(VpuSubUnit unit);

// clang-format off
enum class VpuOp : uint8_t {
  // element-wise: moves and constants
  kMov, kBcast, kLaneId, kSublaneId,
  // f32 arithmetic
  kAddF32, kSubF32, kMulF32, kDivF32, kMaxF32, kMinF32,
  // s32 / u32 arithmetic
  kAddS32, kSubS32, kMulS32, kDivS32, kRemS32, kMaxS32, kMinS32,
  kDivU32, kRemU32, kMaxU32, kMinU32,
  // bits
  kAnd, kOr, kXor, kNot, kShl, kShr, kSra,
  kAbsF32, kNegF32, kAbsS32, kNegS32,
  // compares to masks
  kCmpEqF32, kCmpNeF32, kCmpLtF32, kCmpLeF32, kCmpGtF32, kCmpGeF32,
  kCmpEqS32, kCmpNeS32, kCmpLtS32, kCmpLeS32, kCmpGtS32, kCmpGeS32,
  kCmpLtU32, kCmpLeU32, kCmpGtU32, kCmpGeU32,
  // select and mask logic
  kSel, kMaskAnd, kMaskOr, kMaskXor, kMaskNot,
  // converts and bf16 packing
  kCvtF32S32, kCvtS32F32, kCvtBf16F32, kPackBf16, kUnpackLoBf16, kUnpackHiBf16,
  // transcendental
  kExpF32, kLogF32, kRsqrtF32, kSqrtF32, kTanhF32, kRcpF32, kLogisticF32, kSinF32, kCosF32, kPowF32,
  // cross-lane
  kRot, kPerm, kXpose,
  kRedAddF32, kRedMaxF32, kRedMinF32, kRedAddS32, kRedMaxS32, kRedMinS32,
  kRedbAddF32, kRedbMaxF32, kRedbMinF32, kRedbAddS32, kRedbMaxS32, kRedbMinS32,
};
// clang-format on

// What one operand position holds.
enum class VpuOperand : uint8_t {
  kNone,
  kVreg,    // a vector register number
  kMask,    // a mask register number
  kScalar,  // VpuInstr::scalar: vbcast's value, vrot's n (read at dispatch)
};

struct VpuOpInfo {
  VpuOp op;
  std::string_view mnemonic;  // as docs/isa.md spells it: "vadd.f32"
  VpuSubUnit unit;
  VpuOperand dst;          // kVreg or kMask: VpuInstr::dst
  VpuOperand a;            // VpuInstr::a
  VpuOperand b;            // VpuInstr::b
  bool reads_select_mask;  // vsel: VpuInstr::m is the mask that chooses
};

// Every op, in enum order.
const std::vector<VpuOpInfo>& VpuOpTable();
const VpuOpInfo& GetVpuOpInfo(VpuOp op);
// The op with this mnemonic, or nullptr.
const VpuOpInfo* FindVpuOp(std::string_view mnemonic);

// One VPU instruction, operands already decoded: register numbers, and the scalar value that
// dispatch captured. Fields an op does not use are ignored.
struct VpuInstr {
  VpuOp op = VpuOp::kMov;
  uint32_t dst = 0;    // vd or md
  uint32_t a = 0;      // va or ma
  uint32_t b = 0;      // vb, vi or mb
  uint32_t m = 0;      // vsel's mask
  int64_t scalar = 0;  // vbcast: the value (low 32 bits); vrot: n
};

// The registers an instruction reads and writes, for the scoreboard.
struct RegisterUse {
  RegisterRef reads[3] = {};
  uint32_t read_count = 0;
  RegisterRef write = {};
  bool writes = false;
};
RegisterUse RegistersOf(const VpuInstr& instr);

}  // namespace tpusim::models
