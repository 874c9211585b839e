// Call inlining: every `call` is replaced by a copy of the computation it calls, as XLA's
// CallInliner does at the start of its pipelines. A call is a function boundary of the program
// that wrote the HLO (a jitted helper, JAX's one_hot), not of the device: inlined, its
// instructions fuse with the caller's (MaxText's one-hot of the targets joins the loss's
// element-wise kernels instead of a 4 GiB f32 array in HBM), and no call result is copied.
//
// The copies are named "<call>.<instruction>" (valid HLO names, unique within the caller, as call names are), keep
// the callee's source locations (errors point at the callee's text), and read the call's
// operands where the callee read its parameters. Nested calls are inlined too. Runs first, before
// layouts: the copies get layouts like any instruction.
//
// A `fusion` (an optimized module's: XLA's kInput reduce fusions, kOutput dot epilogues,
// multi-output fusions of reduces) is inlined the same way unless the element-wise kernel lowers
// it as written (only element-wise operations, broadcasts and same-dims moves): its operations then
// go to tpusim's own fusion, which regroups a reduce with its producers as XLA's input fusion
// does; a dot's epilogue becomes an element-wise kernel of its own.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void InlineCalls(hlo::Module& module);

}  // namespace tpusim::compiler
