// Cross-device operations for the one device a run simulates (docs/compiler.md, "Collectives"):
// partition-id and replica-id (the device's ids, written as a u32 scalar), and all-reduce,
// all-gather, reduce-scatter and collective-permute.
// - A group of one device is exact: the result is the operand, copied. So is a collective-permute
//   whose source is this device (a copy) or none (zeros).
// - A larger group is the simulated device's part of a ring over the ICI endpoint (memory space
//   `ici`, models/ici_link.h): all-reduce = reduce-scatter (n-1 steps, each sending one chunk of
//   B/n bytes to the next device, receiving one from the previous and adding it on the VPU) then
//   all-gather (n-1 steps of B/n bytes); all-gather n-1 steps of one shard; reduce-scatter the
//   first half of all-reduce; a collective-permute from another device one send and one receive.
//   The other devices' data does not exist, so this is emitted only when
//   CompileOptions::timing_only is set; otherwise the op is refused with an error that
//   names it, its group size (or source device) and --timing-only.
#pragma once

#include "compiler/hlo/ir.h"
#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

bool IsCollectiveKernelOpcode(hlo::Opcode opcode);
void EmitCollectiveKernel(KernelContext& context);

}  // namespace tpusim::compiler
