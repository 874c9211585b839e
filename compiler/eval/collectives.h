// Collective HLO ops evaluated over N replicas at once: inputs[r] is replica r's operand, and the
// result's element r is replica r's result. Replica groups list replica ids; an empty list means
// one group of all replicas (XLA's rule). Every replica must be in exactly one group.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "compiler/eval/computation.h"
#include "compiler/hlo/literal.h"

namespace tpusim::eval {

using ReplicaGroups = std::vector<std::vector<int64_t>>;

// all-reduce: every member of a group gets the element-wise reduction of the group's inputs,
// folded in group order (acc = input of the first member, then acc = reducer(acc, next)). A known
// reducer runs natively with reduce's accumulators (fold.h: a float add sums in f64, rounded
// once). Tuple operands (XLA's multi-operand all-reduce) reduce element by element.
std::vector<hlo::Literal> AllReduce(std::span<const hlo::Literal> inputs,
                                    const ReplicaGroups& groups, const Reducer& reducer);

// all-gather: every member gets the group's inputs concatenated along `dimension` in group order.
std::vector<hlo::Literal> AllGather(std::span<const hlo::Literal> inputs,
                                    const ReplicaGroups& groups, int64_t dimension);

// reduce-scatter: the all-reduce result split along `dimension` into one equal block per group
// member; the member at position i in its group gets block i.
std::vector<hlo::Literal> ReduceScatter(std::span<const hlo::Literal> inputs,
                                        const ReplicaGroups& groups, int64_t dimension,
                                        const Reducer& reducer);

// all-to-all: each member splits its input along `split_dimension` into one block per member and
// sends block j to the member at position j; each member concatenates the blocks it receives, in
// group order, along `concat_dimension`.
std::vector<hlo::Literal> AllToAll(std::span<const hlo::Literal> inputs,
                                   const ReplicaGroups& groups, int64_t split_dimension,
                                   int64_t concat_dimension);

// collective-permute: result[target] = inputs[source] for each (source, target) pair; a replica
// that is no pair's target gets zeros of its input's shape.
std::vector<hlo::Literal> CollectivePermute(
    std::span<const hlo::Literal> inputs,
    std::span<const std::pair<int64_t, int64_t>> source_target_pairs);

}  // namespace tpusim::eval
