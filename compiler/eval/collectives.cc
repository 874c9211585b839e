#include "compiler/eval/collectives.h"

#include <numeric>
#include <string>

#include "compiler/eval/element_data.h"
#include "compiler/eval/fold.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/shape_ops.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

// The groups with the empty form expanded, checked to cover every replica exactly once.
ReplicaGroups ExpandGroups(const ReplicaGroups& groups, std::size_t replicas, const char* op) {
  if (groups.empty()) {
    std::vector<int64_t> all(replicas);
    std::iota(all.begin(), all.end(), 0);
    return {all};
  }
  std::vector<int> seen(replicas, 0);
  for (const std::vector<int64_t>& group : groups) {
    for (int64_t replica : group) {
      if (replica < 0 || replica >= static_cast<int64_t>(replicas)) {
        throw Error(std::string(op) + ": replica " + std::to_string(replica) +
                    " in replica_groups is out of range for " + std::to_string(replicas) +
                    " replicas");
      }
      ++seen[replica];
    }
  }
  for (std::size_t r = 0; r < replicas; ++r) {
    if (seen[r] != 1) {
      throw Error(std::string(op) + ": replica " + std::to_string(r) + " appears " +
                  std::to_string(seen[r]) + " times in replica_groups (it must appear once)");
    }
  }
  return groups;
}

bool SameShape(const hlo::Literal& a, const hlo::Literal& b) {
  if (a.is_tuple() || b.is_tuple()) return a.shape() == b.shape();
  return a.element_type() == b.element_type() && a.dims() == b.dims();
}

void RequireSameShapes(std::span<const hlo::Literal> inputs, const char* op) {
  if (inputs.empty()) throw Error(std::string(op) + " needs at least one replica");
  for (const hlo::Literal& input : inputs) {
    if (SameShape(input, inputs[0])) continue;
    throw Error(std::string(op) + ": replicas have different shapes, " +
                isa::ToString(inputs[0].shape()) + " and " + isa::ToString(input.shape()));
  }
}

std::vector<const hlo::Literal*> Members(std::span<const hlo::Literal> inputs,
                                         const std::vector<int64_t>& group) {
  std::vector<const hlo::Literal*> members;
  for (int64_t replica : group) members.push_back(&inputs[replica]);
  return members;
}

template <typename T, typename F>
hlo::Literal NativeFoldArrays(const std::vector<const hlo::Literal*>& members, F fold) {
  using A = AccumulatorOf<T, F>;
  const hlo::Literal& first = *members[0];
  std::vector<A> acc;
  for (T value : Widen<T>(first)) acc.push_back(static_cast<A>(value));
  for (std::size_t m = 1; m < members.size(); ++m) {
    const std::vector<T> values = Widen<T>(*members[m]);
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = fold(acc[i], static_cast<A>(values[i]));
  }
  return Narrow<A>(first.element_type(), first.dims(), acc);
}

hlo::Literal GenericFoldArrays(const std::vector<const hlo::Literal*>& members,
                               const Reducer& reducer) {
  hlo::Literal result = *members[0];
  std::vector<hlo::Literal> args(2, hlo::Literal(isa::Shape::Array(result.element_type(), {})));
  for (int64_t i = 0; i < result.element_count(); ++i) {
    CopyElement(result, i, args[0], 0);
    for (std::size_t m = 1; m < members.size(); ++m) {
      CopyElement(*members[m], i, args[1], 0);
      args[0] = reducer.Apply(args);
      if (args[0].is_tuple() || args[0].element_type() != result.element_type()) {
        throw Error("all-reduce: the reducer returned " + isa::ToString(args[0].shape()) +
                    ", expected a scalar of the operand's type");
      }
    }
    CopyElement(args[0], 0, result, i);
  }
  return result;
}

// The element-wise reduction of the members' values (arrays, or tuples element by element).
hlo::Literal FoldGroup(const std::vector<const hlo::Literal*>& members, const Reducer& reducer) {
  const hlo::Literal& first = *members[0];
  if (first.is_tuple()) {
    std::vector<hlo::Literal> parts;
    for (std::size_t e = 0; e < first.elements().size(); ++e) {
      std::vector<const hlo::Literal*> element_members;
      for (const hlo::Literal* member : members) element_members.push_back(&member->elements()[e]);
      parts.push_back(FoldGroup(element_members, reducer));
    }
    return hlo::Literal::Tuple(std::move(parts));
  }
  const isa::ElementType type = first.element_type();
  const std::optional<BinaryOp> native = NativeFoldOp(reducer, type);
  if (!native) return GenericFoldArrays(members, reducer);
  return WithNativeFold(type, *native, [&](auto tag, auto fold) -> hlo::Literal {
    using T = decltype(tag);
    return NativeFoldArrays<T>(members, fold);
  });
}

void RequireDimension(const hlo::Literal& input, int64_t dimension, const char* op,
                      const char* what) {
  RequireArray(input, op, "the operand");
  if (dimension >= 0 && dimension < static_cast<int64_t>(input.dims().size())) return;
  throw Error(std::string(op) + ": " + what + " " + std::to_string(dimension) +
              " is out of range for " + isa::ToString(input.shape()));
}

// `input` cut along `dimension` into `parts` equal blocks.
std::vector<hlo::Literal> SplitBlocks(const hlo::Literal& input, int64_t dimension, int64_t parts,
                                      const char* op) {
  const int64_t size = input.dims()[dimension];
  if (size % parts != 0) {
    throw Error(std::string(op) + ": dim " + std::to_string(dimension) + " of " +
                isa::ToString(input.shape()) + " does not split into " + std::to_string(parts) +
                " equal blocks");
  }
  const int64_t block = size / parts;
  Dims starts(input.dims().size(), 0);
  Dims limits = input.dims();
  const Dims strides(input.dims().size(), 1);
  std::vector<hlo::Literal> blocks;
  for (int64_t p = 0; p < parts; ++p) {
    starts[dimension] = p * block;
    limits[dimension] = (p + 1) * block;
    blocks.push_back(Slice(input, starts, limits, strides));
  }
  return blocks;
}

}  // namespace

std::vector<hlo::Literal> AllReduce(std::span<const hlo::Literal> inputs,
                                    const ReplicaGroups& groups, const Reducer& reducer) {
  RequireSameShapes(inputs, "all-reduce");
  std::vector<hlo::Literal> results(inputs.size());
  for (const std::vector<int64_t>& group : ExpandGroups(groups, inputs.size(), "all-reduce")) {
    const hlo::Literal reduced = FoldGroup(Members(inputs, group), reducer);
    for (int64_t replica : group) results[replica] = reduced;
  }
  return results;
}

std::vector<hlo::Literal> AllGather(std::span<const hlo::Literal> inputs,
                                    const ReplicaGroups& groups, int64_t dimension) {
  RequireSameShapes(inputs, "all-gather");
  RequireDimension(inputs[0], dimension, "all-gather", "dimension");
  std::vector<hlo::Literal> results(inputs.size());
  for (const std::vector<int64_t>& group : ExpandGroups(groups, inputs.size(), "all-gather")) {
    std::vector<hlo::Literal> parts;
    for (int64_t replica : group) parts.push_back(inputs[replica]);
    const hlo::Literal gathered = Concatenate(parts, dimension);
    for (int64_t replica : group) results[replica] = gathered;
  }
  return results;
}

std::vector<hlo::Literal> ReduceScatter(std::span<const hlo::Literal> inputs,
                                        const ReplicaGroups& groups, int64_t dimension,
                                        const Reducer& reducer) {
  RequireSameShapes(inputs, "reduce-scatter");
  RequireDimension(inputs[0], dimension, "reduce-scatter", "dimension");
  std::vector<hlo::Literal> results(inputs.size());
  for (const std::vector<int64_t>& group : ExpandGroups(groups, inputs.size(), "reduce-scatter")) {
    const hlo::Literal reduced = FoldGroup(Members(inputs, group), reducer);
    std::vector<hlo::Literal> blocks =
        SplitBlocks(reduced, dimension, static_cast<int64_t>(group.size()), "reduce-scatter");
    for (std::size_t i = 0; i < group.size(); ++i) results[group[i]] = std::move(blocks[i]);
  }
  return results;
}

std::vector<hlo::Literal> AllToAll(std::span<const hlo::Literal> inputs,
                                   const ReplicaGroups& groups, int64_t split_dimension,
                                   int64_t concat_dimension) {
  RequireSameShapes(inputs, "all-to-all");
  RequireDimension(inputs[0], split_dimension, "all-to-all", "split_dimension");
  RequireDimension(inputs[0], concat_dimension, "all-to-all", "concat_dimension");
  std::vector<hlo::Literal> results(inputs.size());
  for (const std::vector<int64_t>& group : ExpandGroups(groups, inputs.size(), "all-to-all")) {
    const int64_t n = static_cast<int64_t>(group.size());
    // sent[i][j]: the block member i sends to member j.
    std::vector<std::vector<hlo::Literal>> sent;
    for (int64_t replica : group) {
      sent.push_back(SplitBlocks(inputs[replica], split_dimension, n, "all-to-all"));
    }
    for (int64_t j = 0; j < n; ++j) {
      std::vector<hlo::Literal> received;
      for (int64_t i = 0; i < n; ++i) received.push_back(std::move(sent[i][j]));
      results[group[j]] = Concatenate(received, concat_dimension);
    }
  }
  return results;
}

std::vector<hlo::Literal> CollectivePermute(
    std::span<const hlo::Literal> inputs,
    std::span<const std::pair<int64_t, int64_t>> source_target_pairs) {
  RequireSameShapes(inputs, "collective-permute");
  const int64_t replicas = static_cast<int64_t>(inputs.size());
  std::vector<hlo::Literal> results;
  for (const hlo::Literal& input : inputs) results.emplace_back(input.shape());  // zeros
  std::vector<bool> targeted(inputs.size(), false);
  for (const auto& [source, target] : source_target_pairs) {
    if (source < 0 || source >= replicas || target < 0 || target >= replicas) {
      throw Error("collective-permute: pair {" + std::to_string(source) + "," +
                  std::to_string(target) + "} is out of range for " + std::to_string(replicas) +
                  " replicas");
    }
    if (targeted[target]) {
      throw Error("collective-permute: replica " + std::to_string(target) + " is targeted twice");
    }
    targeted[target] = true;
    results[target] = inputs[source];
  }
  return results;
}

}  // namespace tpusim::eval
