// Call inlining: every `call` is replaced by a copy of the computation it calls, as XLA's
// CallInliner does at the start of its pipelines. A call is a function boundary of the program
// that wrote the HLO (a jitted helper, JAX's one_hot), not of the device: inlined, its
// instructions fuse with the caller's (MaxText's one-hot of the targets joins the loss's
// element-wise kernels instead of a 4 GiB f32 array in HBM), and no call result is copied.
//
// The copies are named "<call>/<instruction>" (unique within the caller, as call names are), keep
// the callee's source locations (errors point at the callee's text), and read the call's
// operands where the callee read its parameters. Nested calls are inlined too. Runs first, before
// layouts: the copies get layouts like any instruction.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void InlineCalls(hlo::Module& module);

}  // namespace tpusim::compiler
