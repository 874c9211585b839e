// The dot kernel: HLO `dot` of bf16 operands (f32 or bf16 result) on the MXUs
// (docs/compiler.md, "Dot"; the tiling in mxu_tiling.h).
#pragma once

#include <cstdint>

#include "compiler/lower/kernel.h"
#include "compiler/lower/mxu_tiling.h"

namespace tpusim::compiler {

struct DotEpilogue;

// Emits the dot `form` of context's operands into its result, or with context.part of several,
// that core's rows or columns of it (DotCoreSlice); context.instruction names its labels and
// errors (the HLO dot, or the general dot whose canonical copies these are). With `epilogue`
// (a dot output fusion, dot_epilogue.h), its operations are applied to the sums as the kernel
// reads them out, its operands context's operands from the third on.
void EmitDotKernel(KernelContext& context, const DotForm& form, const DotEpilogue* epilogue = nullptr);

// Whether the dot kernel writes a result of this layout: row-major with 2-D tiles. Another (a
// matrix-vector product's [M, 1]{0,1}, whose size-1 dim layout assignment moved major) goes
// through EmitGeneralDotKernel's canonical copy.
bool DotKernelWritesLayout(const isa::Shape& result);

// Megacore: the TensorCores a canonical dot splits over: every core of the target where
// DotCoreSlice gives the last core a part, else 1.
int DotCoreParts(const KernelContext& context);

// Core part.index's share of a dot's output (operands of `in_type`): rows [first, end) where M
// exceeds a pass of MXU rows, or columns where N exceeds an MXU's columns (where both do, the one
// whose estimated MXU and HBM time is shorter, rows on a tie), in equal shares of whole result
// tiles and packed vregs (rows) or MXU column blocks (columns); else flattened batch elements
// where there are several; empty where none of these (one core: a dot that cannot fill more than
// one core's MXU rows or columns only repeats its weight loading on every core).
enum class CoreSplit { kNone, kRows, kColumns, kBatch };
struct CoreSlice {
  CoreSplit split = CoreSplit::kNone;
  int64_t first = 0;
  int64_t end = 0;
};
CoreSlice DotCoreSlice(const DotForm& form, const CompileOptions& options, const CorePart& part,
                       const DeviceBuffer& result, isa::ElementType in_type);

}  // namespace tpusim::compiler
