// XLA's HloCSE: two instructions of a computation that compute the same value are one, the later
// one's readers reading the earlier. The same value: the same opcode, shape (layout included),
// operands (after earlier merges), attributes other than `metadata`, called computations and, for
// a constant, the same literal. JAX writes a model's layers one after another, each recomputing
// what does not depend on the layer (Gemma 3's rotary tables: the same power, divide, sine and
// cosine for each of its 26 layers, twice); XLA computes them once. Not merged: parameters,
// instructions with a side effect (HasSideEffect: rng, send/recv, channelled collectives, ...),
// constants whose value the module does not hold (elided `{...}`), and instructions ordered by
// control dependencies.
#pragma once

#include <cstddef>

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

// Merges every computation's common subexpressions; returns how many instructions went.
std::size_t EliminateCommonSubexpressions(hlo::Module& module);

}  // namespace tpusim::compiler
