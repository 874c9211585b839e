// The parameters of one MXU (the ArchConfig's tensor_core.mxu block, plus the vreg shape its
// pushes and pops use) and the input types it takes.
#pragma once

#include <cstdint>
#include <string_view>

#include "isa/element_type.h"

namespace tpusim::models {

struct MxuParams {
  uint32_t rows = 0;                   // R: row_count, the contraction (K) depth
  uint32_t columns = 0;                // C: column_count, the output (N) width
  uint32_t sublanes = 0;               // S of the vregs pushed and popped (vpu.sublane_count)
  uint32_t lanes = 0;                  // L (vpu.lane_count)
  uint32_t pipeline_fill_cycles = 0;   // charged when a row group enters an idle array
  uint32_t pipeline_drain_cycles = 0;  // a row's pass to its results being poppable
  uint32_t weight_load_cycles = 0;     // one full R x C weight tile, split over its pushes
  uint32_t weight_buffer_count = 0;    // 1: loads wait for the array; 2+: they overlap
  uint32_t accumulator_rows = 0;       // rows of C accumulator words (0: none; push.acc faults)
  // Cycles per LHS row entering the array, by input type; 0: the MXU does not take the type.
  double bf16_passes = 0;  // > 0: bf16 is always native
  double f32_passes = 0;
  double f16_passes = 0;
  double s8_passes = 0;
  double f8_passes = 0;  // f8e4m3fn and f8e5m2
};

// Throws tpusim::Error naming the field unless every field is valid.
void Validate(const MxuParams& params);

// bf16, f32, f16, s8, f8e4m3fn, f8e5m2: the types an mxu.*push.T names.
bool IsMxuInputType(isa::ElementType type);
// The config's passes for `type` (0 if the MXU does not take it). Throws tpusim::Error unless
// IsMxuInputType(type).
double PassesFor(const MxuParams& params, isa::ElementType type);
// "bf16_passes", "f8_passes": the field PassesFor reads, for messages.
std::string_view PassesFieldFor(isa::ElementType type);

}  // namespace tpusim::models
