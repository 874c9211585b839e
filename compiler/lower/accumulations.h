// What a compiled module computes in another order than XLA's evaluator: its accumulations, per
// output. The dot and convolution kernels sum K products in MXU blocks, the reduce kernel adds in
// f32 with lanes in parallel, the batch-norm expansion sums each feature in f32; XLA's evaluator
// sums in increasing index (dots, in f32) or in double (reduces, batch norm). Everything else the
// kernels compute as the evaluator does, bit for bit. `tpusim run --check` derives each output's
// bound from these alone (sim/output_check.h), so an output computed by element-wise operations
// only stays bit-exact whatever else the module holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

struct Accumulation {
  enum class Kind : uint8_t {
    kSum,                 // `depth` f32 terms summed per result element
    kProduct,             // `depth` f32 factors multiplied, each product rounded
    kBatchNormInference,  // scale and shift folded in f32 (five roundings and a rsqrt), `epsilon`
  };
  Kind kind = Kind::kSum;
  int64_t depth = 0;
  double epsilon = 0;
  std::string source;  // the operation: "dot 'd' (K = 4096)"
  std::string order;   // how the kernel accumulates, against the evaluator
  bool operator==(const Accumulation&) const = default;
};

// For each output leaf of `module`'s entry (its root flattened, tokens left out): the
// accumulations of the operations it is computed from (its instruction, its operands', and those
// of every computation they call: loop bodies, calls, fusions, reducers), each once.
std::vector<std::vector<Accumulation>> OutputAccumulations(const hlo::Module& module);

}  // namespace tpusim::compiler
