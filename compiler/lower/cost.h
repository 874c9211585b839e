// What the XLA profiler shows of an op: its category, FLOPs and bytes accessed, counted as XLA's
// HloCostAnalysis counts them: an element-wise op costs one FLOP per output element (a fusion:
// the sum over its operations; transcendental ops and data movement count none), a dot
// 2 x M x N x K, a convolution 2 x output elements x window x input features per group; bytes
// accessed are the operands' and results' logical sizes.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/passes/elementwise_fusion.h"

namespace tpusim::compiler {

struct KernelCost {
  std::string category;  // hlo_category: "non-fusion elementwise", "loop fusion", "convolution", "data formatting", ...
  double flops = 0;
  uint64_t bytes_accessed = 0;
};

KernelCost CostOf(const hlo::Instruction& instruction);
// exp, log, sqrt, tanh, sine, power...: the ops XLA's cost analysis counts as transcendentals
// (no FLOPs here), each many VPU cycles per vector.
bool IsTranscendental(hlo::Opcode opcode);
// A kernel group: the sum over its members' FLOPs; bytes of its operands and result. A fused
// group is a "loop fusion".
KernelCost CostOf(const KernelGroup& group);

// Logical bytes of a shape (tuples: the sum of the leaves; tokens: 0).
uint64_t LogicalBytes(const isa::Shape& shape);

}  // namespace tpusim::compiler
