// `tpusim run --check`: the simulated outputs against the reference evaluator's. Each output's
// bound depends on the operations it is computed from (docs/compiler.md, "Checking"):
//   - data movement, integer and pred operations, compares, selects, converts, and element-wise
//     f32/bf16 arithmetic and transcendental functions: bit for bit, NaNs equal to NaNs. The VPU
//     computes in f32 with IEEE rounding and rounds bf16 results once per operation, as XLA's
//     evaluator does, and its transcendental unit calls the same C library functions on floats.
//   - what the compiled module states it accumulates in another order (dots, convolutions, float
//     add- and multiply-reduces, batch norm: compiler/lower/accumulations.h): its bound
//     (output_check.cc, BoundOf).
// The difference of two floats is measured in units in the last place of their type (the
// distance between their positions in the ordered list of that type's values).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/lower/accumulations.h"
#include "compiler/hlo/literal.h"
#include "isa/npy.h"

namespace tpusim::sim {

struct CheckBound {
  // For floats, in f32 ulps of the operations' results; integers and preds are always exact. A
  // 16-bit float output allows the rounding of such an error: UlpsFor.
  uint64_t max_ulps = 0;
  double max_abs = 0;     // floats this close in absolute value pass too (sums whose order differs)
  std::string reason;     // which operations set it
};

// The bound of each output leaf from the accumulations the compiled module states for it
// (CompiledModule::output_accumulations) alone: the loosest of theirs; an output without any is
// bit-exact whatever else the module holds.
std::vector<CheckBound> BoundsFor(const std::vector<std::vector<compiler::Accumulation>>& outputs);

// The loosest of `bounds` (each field's largest) with every reason once.
CheckBound Loosest(const std::vector<CheckBound>& bounds);

// The ulps of `type` that `bound` allows: max_ulps for f32 (and f64), and for a 16-bit float one
// rounding that flips plus max_ulps scaled to its coarser ulp (bf16: 1 + max_ulps / 2^16).
uint64_t UlpsFor(const CheckBound& bound, isa::ElementType type);

struct CheckResult {
  bool ok = true;
  uint64_t worst_ulps = 0;      // over every float element
  double worst_abs = 0;         // the absolute difference there
  std::string worst;            // "output 0 element [3, 17]: expected 1.5, got 1.5000001 (1 ulp)"; empty if all equal
  uint64_t mismatches = 0;      // elements beyond the bound
};

// Compares leaf i of `expected` with `actual[i]` within `bounds[i]` (same types and dims; throws
// tpusim::Error otherwise), or every leaf within `bound`.
CheckResult CompareOutputs(const std::vector<const hlo::Literal*>& expected, const std::vector<isa::NpyArray>& actual,
                           const std::vector<CheckBound>& bounds);
CheckResult CompareOutputs(const std::vector<const hlo::Literal*>& expected, const std::vector<isa::NpyArray>& actual,
                           const CheckBound& bound);

}  // namespace tpusim::sim
