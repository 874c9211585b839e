// Lane-broadcast sinking: a row statistic's element-wise chain moves below the broadcast that
// spreads it along the lanes, so the consumer's kernel computes it instead of a kernel of its own.
//
// broadcast(f(g(r), c)) with r a small array (a reduce's result: one value per row), f and g float
// element-wise operations (a sqrt or an exp too: once a strip they cost little), c scalars, and
// the broadcast filling the minor (lane) dim
// becomes f(g(broadcast(r)), broadcast(c)): the same value in every element (the operations are
// element-wise, so they commute with the broadcast), now element-wise on the consumer's dims, so
// element-wise fusion puts them in the consumer's kernel. That kernel holds a lane broadcast once
// per strip of tiles (compiler/lower/elementwise_kernel.cc) and computes an operation whose
// inputs are such values once per strip too, so the chain costs a few vector operations per 8
// rows, not a kernel launch and an HBM round trip (layer norm's mean and 1/sqrt(var + eps): two
// kernels of 1 us each). Reshapes that only add or drop size-1 dims are looked through. Each
// broadcast gets its own copy of the chain (a shared one would be an array of the consumer's
// size, read by two kernels); what the chain leaves unread is removed. Under a broadcast along
// other dims (rows, major dims) a chain of cheap operations (no transcendental or divide:
// IsExpensive) moves down too, as XLA's loop fusion computes a broadcast's cheap producers for
// every element it reads: the kernel computes it for every tile (Gemma's RMS norms' `scale + 1`
// of a [1152] scale spread over the rows, a kernel of its own each).
//
// Runs before layout assignment, which gives the new operations default layouts: a broadcast
// whose layout is written with tiles stays as it is.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

void SinkLaneBroadcasts(hlo::Module& module);

}  // namespace tpusim::compiler
