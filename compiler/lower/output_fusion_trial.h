// Whether a dot or convolution output fusion (compiler/passes/dot_output_fusion.h) pays: where the
// compile has a kernel tuner (kernel_tuner.h) and the contraction is short, the fused kernel and
// the two kernels it replaces (the contraction writing its result, then the consumers' element-
// wise kernel reading it) are each emitted as a program and run in simulation, and the fusion is
// kept unless the two kernels end first. An epilogue whose VPU work is longer than the MXUs'
// passes runs in the read-out after them, where the separate kernel overlapped it with its own
// DMAs on both cores (a bf16 GELU-like chain on 2048x256x2048: 30.5 us as two kernels, 32.7 us
// fused), as XLA's fusion decisions weigh a fusion's cost against the traffic it saves.
#pragma once

#include "compiler/lower/compile.h"
#include "compiler/passes/elementwise_fusion.h"

namespace tpusim::compiler {

// Whether `group`, a dot or convolution output fusion, lowers: its kernel emitted on stand-ins
// (kernel.h's GroupPlans; the dot kernel writes the canonical result in place, the epilogue is one
// the kernel holds in VMEM and registers).
bool OutputFusionFits(const KernelGroup& group, const CompileOptions& options);

// `merged`: the output fusion group; `consumers`: the element-wise group it was made from (the
// contraction one of its operands). True without a tuner, or for a contraction whose MXU time at
// the chip's peak exceeds kMostTriedNs (its runs would cost more wall time than they are worth).
bool OutputFusionPays(const KernelGroup& merged, const KernelGroup& consumers, const CompileOptions& options);

}  // namespace tpusim::compiler
