// Element-wise kernels: an element-wise op, or a fusion of them, as one pass over the output's
// tiles. Blocks of whole strips stream HBM -> VMEM by DMA (double-buffered: block b+1 lands while
// the VPU computes block b), the VPU loads each tile of every operand (bf16 unpacked to f32),
// evaluates the expression in registers (bf16 results rounded once per operation, as XLA does),
// zeroes the layout's padding where the expression would not keep it zero, packs and stores,
// and the block goes back to HBM by DMA. Scalars are read once through SMEM and broadcast.
//
// The same kernel also runs inside another (input fusion): a producer computes its result block
// by block into VMEM and hands each block to its consumer's code instead of storing it to HBM.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// With context.part of several: that core's equal share of the blocks.
void EmitElementwiseKernel(KernelContext& context);
// Megacore: the TensorCores the kernel splits its blocks over: every core of the target where
// each gets a block at least, else 1.
int ElementwiseCoreParts(const KernelContext& context);

// Whether an element-wise group lowers (VMEM, registers, its row folds' limits), planned before
// buffers exist (GroupPlans): the fusion pass's question for groups with row folds.
bool ElementwiseFusionFits(const KernelGroup& group, const CompileOptions& options);

// Where a producer's result goes. Its blocks are whole strips of `shape`'s tiled image; the
// producer's streams use VMEM [vmem_base, vmem_end) and semaphores 0..7, and it sets up its pinned
// registers again before each block, so `consume` may use every register and the VMEM below
// vmem_base, but none of the producer's, and not s14..s17 (a loop over blocks keeps its
// addresses and count there) or s19 (an iota's strip index).
struct ProducerSink {
  isa::Shape shape;  // the produced array, with its layout
  uint64_t vmem_base = 0;
  uint64_t vmem_end = 0;
  // Emits the consumer's code for strips [first, last) of the result, which lie at VMEM
  // `address` in the result's layout. It must leave the semaphores as it found them.
  std::function<void(int64_t first, int64_t last, uint64_t address)> consume;
  // Whether consume's code is the same for every block of the same size (it keeps where it is in
  // registers): then the producer may emit it once in a loop over blocks.
  bool same_code_every_block = false;
  // Blocks of whole strips are a multiple of this many strips where there are at least as many
  // (a lane fold folds strips in groups).
  int64_t strip_multiple = 1;
  // At most this many strips per block (0: no limit; a split consumer's balance).
  int64_t max_block_strips = 0;
  // Where set, the producer folds each strip's tiles into one f32 tile in registers (`op`, an f32
  // VPU operation such as vadd.f32, from `identity` in every element) and hands the consumer
  // that tile alone: strip k of a block at `address` + k x 4 KiB (an f32 tile), not the strip's
  // tiles (a lane fold then folds one tile per strip, and the tiles never go through VMEM).
  // Only where ElementwiseProducerFoldsStrips says the producer can.
  struct StripFold {
    isa::Opcode op = isa::OPCODE_VADD_F32;
    uint32_t identity = 0;
  };
  std::optional<StripFold> fold;
};

// Emits `producer` (an element-wise group over context.operands: its operand k is
// context.operands[k]) as a producer whose result goes to `sink`.
void EmitElementwiseProducer(KernelContext& context, const KernelGroup& producer, const ProducerSink& sink);
// Plans it without emitting anything: throws CannotLower where it would not lower (VMEM, registers).
void PlanElementwiseProducer(KernelContext& context, const KernelGroup& producer, const ProducerSink& sink);
// The strips of each block it hands to the sink (the last may have fewer), or 0 where its blocks
// are pieces of strips. Megacore: core c of context.part's count gets blocks PartRange(blocks, c).
int64_t ElementwiseProducerBlockStrips(KernelContext& context, const KernelGroup& producer, const ProducerSink& sink);
// Whether it can fold each strip's tiles in registers (ProducerSink::fold): blocks of whole
// strips of two tiles or more, its body scheduled tile by tile (no f16 or 8-bit values), rank 2
// or more.
bool ElementwiseProducerFoldsStrips(KernelContext& context, const KernelGroup& producer, const ProducerSink& sink);

}  // namespace tpusim::compiler
