// XLA's HloDCE: an instruction whose value nothing reads (not the root, not a parameter) and that
// has no side effect is removed, and then what only it read. Modules written before XLA's
// optimizations hold such values (JAX's tracing leaves unused results; MaxText's and Llama's
// train steps, Gemma's call), and each would otherwise be a kernel of its own: computed, written
// to HBM and never read.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

// Whether `x` must run though nothing reads it (XLA's HasSideEffect): send/recv, infeed/outfeed,
// rng and its state, asynchronous collectives' start/done, an all-reduce with a channel (removed
// on one device it would leave the others waiting), a custom-call marked
// custom_call_has_side_effect, or any of these in a computation `x` calls.
bool HasSideEffect(const hlo::Instruction& x);

// Removes every computation's dead instructions; returns how many.
std::size_t EliminateDeadCode(hlo::Module& module);

}  // namespace tpusim::compiler
