// The reference evaluator: executes an hlo::Module on host Literals. It is the oracle the
// simulator is checked against, so it follows XLA's semantics op by op (docs/evaluator.md) and
// leaves every arithmetic choice to the kernels of this folder.
//
// A module runs on replica_count x num_partitions devices at once, in lockstep: each instruction
// produces one value per device, so collectives see every device's operand. Device d is replica
// d / num_partitions, partition d % num_partitions.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/literal.h"

namespace tpusim::eval {

struct EvaluatorOptions {
  // Seeds the rng ops' generator (std::mt19937_64), so a run is reproducible.
  uint64_t seed = 0;
  // A while loop that runs longer than this is an error rather than a hang.
  int64_t max_while_iterations = 100'000'000;
  // Values `infeed` returns, in order (the same on every device); running out is an error.
  std::deque<hlo::Literal> infeed;
};

struct EvaluationResult {
  std::vector<hlo::Literal> device_results;  // the entry root's value on each device
  std::vector<hlo::Literal> outfeed;         // what device 0's `outfeed` ops sent, in order
};

// Runs the entry computation with `arguments[p]` as parameter p on every device. Throws
// tpusim::Error naming the instruction (file:line:col) for anything it cannot evaluate: an
// argument of the wrong shape, an unsupported op or custom-call target, an infinite loop.
EvaluationResult EvaluateModule(const hlo::Module& module, std::span<const hlo::Literal> arguments,
                                EvaluatorOptions options = {});

// Device 0's result: what a single-device module computes.
hlo::Literal Evaluate(const hlo::Module& module, std::span<const hlo::Literal> arguments,
                      EvaluatorOptions options = {});

}  // namespace tpusim::eval
