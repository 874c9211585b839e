#include "models/vpu_semantics.h"

#include <string>

#include "isa/error.h"

namespace tpusim::models {

void CheckVpuOp(const VpuInstr& instr, const VectorRegisterFile& regs) {
  const VpuOpInfo& info = GetVpuOpInfo(instr.op);
  const RegisterUse use = RegistersOf(instr);
  for (uint32_t i = 0; i < use.read_count; ++i) regs.Check(use.reads[i]);
  if (use.writes) regs.Check(use.write);
  if (instr.op == VpuOp::kXpose && regs.lanes() % regs.sublanes() != 0) {
    throw Error(std::string(info.mnemonic) + " needs the lane count to be a multiple of the " +
                "sublane count (blocks of S x S words), got " + std::to_string(regs.sublanes()) +
                " x " + std::to_string(regs.lanes()));
  }
}

void ExecuteVpuOp(const VpuInstr& instr, VectorRegisterFile& regs) {
  CheckVpuOp(instr, regs);
  switch (GetVpuOpInfo(instr.op).unit) {
    case VpuSubUnit::kElementwise: return ExecuteElementwise(instr, regs);
    case VpuSubUnit::kTranscendental: return ExecuteTranscendental(instr, regs);
    case VpuSubUnit::kCrossLane: return ExecuteCrossLane(instr, regs);
  }
}

}  // namespace tpusim::models
