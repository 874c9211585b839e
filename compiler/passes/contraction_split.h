// Contraction splitting: the dot kernel keeps all of K for one job's weight columns in VMEM,
// twice (docs/compiler.md, "Dot"). Where that does not fit with every MXU working (MaxText's
// [32768, 8192] x [8192, 2560] is 2 x 8 MiB of bf16 weight panels for 4 MXUs of 128 columns; its
// logits gradient [32768, 32000] x [32000, 2560] does not fit even on one MXU), the dot becomes
//   fusion(dot_0, dot_1, ..., dot_{n-1}), kind=kLoop, calls={convert(p0 + p1 + ... + p{n-1})}
// over n equal slices of K (whole MXU row blocks), each slice's dot with an f32 result: the
// fewest slices whose panels fit on every MXU. The sum is a fusion of its own, as the dot was a
// kernel of its own: its element-wise consumers read its result, not the slices. The sum is the MXU's f32 accumulation in another
// order (the dot bound of docs/compiler.md covers it); the slices are copies, the extra cost.
// Runs after layout assignment and transpose folding.
#pragma once

#include <cstdint>

#include "compiler/hlo/ir.h"
#include "isa/program.pb.h"

namespace tpusim::compiler {

void SplitLongContractions(hlo::Module& module, const isa::Target& target, uint64_t vmem_capacity_bytes);

}  // namespace tpusim::compiler
