// The data-movement kernels one by one (data_movement_kernel.cc dispatches to them). Each gets a
// DmaEmitter for its instruction and leaves every DMA and VPU instruction waited for.
#pragma once

#include "compiler/lower/dma_region.h"

namespace tpusim::compiler {

void EmitCopyOrTranspose(DmaEmitter& emitter);
void EmitReshape(DmaEmitter& emitter);
void EmitBroadcast(DmaEmitter& emitter);
void EmitSlice(DmaEmitter& emitter);
void EmitConcatenate(DmaEmitter& emitter);
void EmitPad(DmaEmitter& emitter);
void EmitReverse(DmaEmitter& emitter);
void EmitIota(DmaEmitter& emitter);
void EmitDynamicSlice(DmaEmitter& emitter);
void EmitDynamicUpdateSlice(DmaEmitter& emitter);

// Writes `src` (a view in `dst`'s index space, with size 1 along the dims it is broadcast over)
// into every slice of `dst`: one DMA, then copies of what is already written, doubling along each
// broadcast dim (the last, biggest copy spread over the engines). Zeroes dst's layout padding
// first and waits for everything at the end.
void BroadcastInto(DmaEmitter& emitter, const DmaArray& src, const DmaArray& dst);

// The 32-bit word that repeats a `bits`-wide element held in SMEM at `smem`, in a new register
// (for VPU fills). CannotLower for elements wider than 32 bits.
int LoadFillWord(DmaEmitter& emitter, uint64_t smem, int bits);

}  // namespace tpusim::compiler
