// An optimized module's memory spaces (XLA's memory-space assignment): arrays XLA placed in VMEM
// (S(1)), SMEM (S(2)) or CMEM (S(3)), and the copy-start / copy-done pairs that prefetch them
// there, as TPU dumps write them (../shared/validation/tpu_v4/tpu_hlo_instructions.txt: a
// matmul's lhs copied to S(3) before its fusion). tpusim plans each kernel's VMEM itself and its
// kernels read their operands from HBM: those arrays are placed in HBM (memory space 0), and a
// copy-done of a copy-start reads the copied array itself (an alias; a `copy` kernel where the
// layouts differ once the spaces are gone). Host memory (S(5), host offload) stays as it is.
// What this leaves out: XLA's prefetch makes the kernel read CMEM's bandwidth, not HBM's.
// Runs first, before layout assignment.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void PlaceInHbm(hlo::Module& module);

}  // namespace tpusim::compiler
