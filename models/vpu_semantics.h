// What each VPU operation computes (docs/isa.md, "VPU: element-wise", "transcendental",
// "cross-lane"), on a register file, with no notion of time. The Vpu (models/vpu.h) calls
// ExecuteVpuOp unless it runs timing-only; tests call it directly.
#pragma once

#include "models/vector_register_file.h"
#include "models/vpu_op.h"

namespace tpusim::models {

// Throws tpusim::Error if `instr` would fault: a register it names does not exist, or a vxpose on
// vregs whose lane count is not a multiple of their sublane count. Changes nothing.
void CheckVpuOp(const VpuInstr& instr, const VectorRegisterFile& regs);

// Checks `instr` as CheckVpuOp does, then reads its operands and writes its result register. The
// destination may be one of the sources.
void ExecuteVpuOp(const VpuInstr& instr, VectorRegisterFile& regs);

// The three sub-units' halves of ExecuteVpuOp (instr's op must belong to that sub-unit; no checks).
void ExecuteElementwise(const VpuInstr& instr, VectorRegisterFile& regs);
void ExecuteTranscendental(const VpuInstr& instr, VectorRegisterFile& regs);
void ExecuteCrossLane(const VpuInstr& instr, VectorRegisterFile& regs);

}  // namespace tpusim::models
