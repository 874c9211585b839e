// Host memory offload, as XLA's HostOffloader pass does it (docs/compiler.md, "Host offload"):
// which arrays live in host memory (memory space S(5), the host DRAM behind PCIe) instead of HBM.
//
// - `custom-call(x), custom_call_target="MoveToHost"`: its result is in host memory (a kernel
//   copies x HBM -> host over PCIe); `"MoveToDevice"` of a host array: its result is in HBM (a copy
//   host -> HBM). Either one whose operand is already where its result goes moves nothing (an
//   alias, as XLA removes redundant moves). An array whose layout says S(5) is a host array too.
// - The host memory space spreads from there through instructions that only move bytes: tuple,
//   get-tuple-element, bitcast, reshape, copy, optimization-barrier, add-dependency, a while loop's
//   state (init, condition and body parameters, body root, result), call and conditional
//   parameters and results, dynamic-slice out of a host array, and dynamic-update-slice into one
//   (the buffer written and the result are in one space; a host update makes it host). A while
//   state element that is host makes its init host when the init is a broadcast (the zeros that
//   a scan's stacked activations start from: XLA's AllocateBuffer), so it never takes HBM; a
//   broadcast used elsewhere too is cloned for that element first (the pass's one HLO rewrite).
// - Anything else that reads or writes a host array (an add, a dot, a reduce...) is a CannotLower
//   naming the instruction and the host operand: the program must MoveToDevice first.
//
// The pass writes S(5) into the layouts of every host array (tuple leaves included); buffer
// assignment then places those in host memory, and the data-movement kernels DMA them over PCIe.
#pragma once

#include "compiler/hlo/ir.h"
#include "isa/shape.h"

namespace tpusim::compiler {

bool IsMoveToHost(const hlo::Instruction& instruction);
bool IsMoveToDevice(const hlo::Instruction& instruction);

// Whether an array shape's layout puts it in host memory (S(5)).
bool InHostMemory(const isa::Shape& array);

// Runs after layout assignment. Marks every host array of every computation with S(5) and
// returns how many array leaves are host arrays. Throws (CannotLower) for an instruction that
// computes on a host array or writes its result to one without being a byte mover.
int AssignHostMemorySpace(hlo::Module& module);

}  // namespace tpusim::compiler
