// Data-movement kernels: copy, transpose, reshape, broadcast, slice, concatenate, pad, reverse,
// iota, dynamic-slice, dynamic-update-slice, done with DMAs (the VPU only fills VMEM blocks with a
// value or an iota vector). docs/compiler.md, "Data movement", gives the algorithms.
#pragma once

#include "compiler/hlo/opcode.h"
#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

bool IsDataMovementOpcode(hlo::Opcode opcode);

// Lowers one data-movement instruction; CannotLower for what it does not handle.
void EmitDataMovementKernel(KernelContext& context);

}  // namespace tpusim::compiler
