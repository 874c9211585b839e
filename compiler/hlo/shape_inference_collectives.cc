// Collectives: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
// collective-broadcast and their -start/-done forms. all-gather and reduce-scatter change one
// dimension by the number of devices in a group, which depends on the module's replica and
// partition counts and on how replica_groups is to be read (XLA's CollectiveOpGroupMode).
#include <algorithm>
#include <string>

#include "compiler/hlo/device_counts.h"
#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo::inference {

using isa::Shape;

namespace {

std::vector<Shape> OperandArrays(const Instruction& instruction) {
  std::vector<Shape> shapes;
  for (std::size_t i = 0; i < instruction.operand_count(); ++i) {
    const Shape& operand = ArrayOperand(instruction, i);
    shapes.push_back(Array(operand.element_type, operand.dims));
  }
  return shapes;
}

Shape OneOrTuple(const std::vector<Shape>& shapes) { return shapes.size() == 1 ? shapes[0] : Shape::Tuple(shapes); }

struct DeviceCounts {
  int64_t replicas = 1;
  int64_t partitions = 1;
};

DeviceCounts Devices(const Instruction& instruction) {
  const Module* module = instruction.parent() ? instruction.parent()->parent() : nullptr;
  return module ? DeviceCounts{module->replica_count(), module->num_partitions()} : DeviceCounts{};
}

// Checks that every id is one of `count` devices and that none repeats; `what` names the list.
void CheckDeviceIds(const Instruction& instruction, const std::vector<int64_t>& ids, int64_t count,
                    std::string_view what, std::string_view kind) {
  std::vector<bool> seen(static_cast<std::size_t>(std::max<int64_t>(count, 0)), false);
  for (int64_t id : ids) {
    if (id < 0 || id >= count) {
      Fail(instruction, std::string(what) + " names " + std::string(kind) + " " + std::to_string(id) + ", but there are " +
                            std::to_string(count) + " (ids 0.." + std::to_string(count - 1) + ")");
    }
    if (seen[id]) Fail(instruction, std::string(what) + " names " + std::string(kind) + " " + std::to_string(id) + " twice");
    seen[id] = true;
  }
}

// How many devices take part in each group (XLA's GetSubgroupSize). Without channel_id,
// replica_groups lists replicas (none: all of them); with channel_id and use_global_device_ids,
// global device ids; with channel_id alone, replicas, each together with all partitions (for the
// ops that have use_global_device_ids) or partitions (for the others). Checks the ids on the way,
// and, where `uniform`, that all groups have one size.
int64_t GroupSize(const Instruction& instruction, bool uniform = true) {
  const DeviceCounts devices = Devices(instruction);
  std::vector<std::vector<int64_t>> groups;
  if (instruction.HasAttribute("replica_groups")) groups = instruction.GetReplicaGroups().groups;
  const bool channel = instruction.HasAttribute("channel_id");
  const DeviceIdKind kind = GroupIdKind(instruction);
  const bool global = kind == DeviceIdKind::kGlobal;
  const bool partitions_only = kind == DeviceIdKind::kPartition;
  const int64_t id_count = global ? devices.replicas * devices.partitions
                                  : (partitions_only ? devices.partitions : devices.replicas);
  std::vector<int64_t> ids;
  for (const auto& group : groups) {
    if (uniform && group.size() != groups[0].size()) {
      Fail(instruction, "the replica groups " + ToString(instruction.GetReplicaGroups()) + " are not all of one size");
    }
    ids.insert(ids.end(), group.begin(), group.end());
  }
  CheckDeviceIds(instruction, ids, id_count, "replica_groups",
                 global ? "device" : (partitions_only ? "partition" : "replica"));
  const int64_t listed = groups.empty() ? 0 : static_cast<int64_t>(groups[0].size());
  if (!channel) return groups.empty() ? devices.replicas : listed;
  if (partitions_only) return groups.empty() ? devices.partitions : listed;
  if (global) return groups.empty() ? devices.replicas * devices.partitions : listed;
  return (groups.empty() ? devices.replicas : listed) * devices.partitions;
}

// The one dimension all-gather / reduce-scatter work along.
int64_t CollectiveDimension(const Instruction& instruction, const Shape& operand) {
  const std::vector<int64_t>& dimensions = instruction.GetIntList("dimensions");
  if (dimensions.size() != 1) {
    Fail(instruction, std::string(OpcodeName(instruction.opcode())) + " takes one dimension, got dimensions=" +
                          Str(dimensions));
  }
  CheckDimension(instruction, dimensions[0], operand.rank(), "dimensions");
  return dimensions[0];
}

}  // namespace

Shape InferAllReduce(const Instruction& instruction) {
  // Each operand is reduced element-wise across the group: the result is the operands. XLA's
  // verifier allows all-reduce mixed precision, so the reducer's scalar type may differ from an
  // operand's in float precision (a bf16 array reduced by an f32 add), not in kind.
  const std::vector<Shape> results = OperandArrays(instruction);
  GroupSize(instruction, /*uniform=*/false);  // checks the groups' ids
  const Computation& reducer = Called(instruction, "to_apply");
  const auto& parameters = reducer.parameters();
  const Shape root = RootShape(reducer);
  const bool scalar_reducer = parameters.size() == 2 && !root.is_tuple && root.rank() == 0 &&
                              SameShapeIgnoringLayout(parameters[0]->shape(), root) &&
                              SameShapeIgnoringLayout(parameters[1]->shape(), root);
  if (!scalar_reducer) {
    Fail(instruction, "to_apply computation " + Quote(reducer.name()) +
                          " of all-reduce must take two scalars of one type and return one of it");
  }
  for (const Shape& operand : results) {
    if (!SameTypeIgnoringFpPrecision(operand.element_type, root.element_type)) {
      Fail(instruction, "to_apply computation " + Quote(reducer.name()) + " reduces " + Str(root) +
                            " values, not the elements of " + Str(operand));
    }
  }
  return OneOrTuple(results);
}

Shape InferAllGather(const Instruction& instruction) {
  // Each device's operand is concatenated along `dimensions` with those of its group.
  const std::vector<Shape> inputs = OperandArrays(instruction);
  const int64_t group = GroupSize(instruction);
  std::vector<Shape> outputs;
  for (const Shape& input : inputs) {
    Shape output = input;
    const int64_t d = CollectiveDimension(instruction, input);
    if (output.dims[d] != isa::kUnboundedSize) output.dims[d] *= group;
    outputs.push_back(output);
  }
  if (instruction.opcode() == Opcode::kAllGather) return OneOrTuple(outputs);
  return Shape::Tuple({OneOrTuple(inputs), OneOrTuple(outputs)});  // all-gather-start: (inputs, outputs)
}

Shape InferReduceScatter(const Instruction& instruction) {
  // Reduced like all-reduce, then each device keeps its 1/group of `dimensions`.
  const Shape reduced = InferAllReduce(instruction);
  const std::vector<Shape> inputs = reduced.is_tuple ? reduced.tuple_shapes : std::vector<Shape>{reduced};
  const int64_t group = GroupSize(instruction);
  std::vector<Shape> outputs;
  for (const Shape& input : inputs) {
    Shape output = input;
    const int64_t d = CollectiveDimension(instruction, input);
    if (group <= 0 || (output.dims[d] != isa::kUnboundedSize && output.dims[d] % group != 0)) {
      Fail(instruction, "dimension " + std::to_string(d) + " of " + Str(input) + " does not divide among the " +
                            std::to_string(group) + " devices of a group");
    }
    if (output.dims[d] != isa::kUnboundedSize) output.dims[d] /= group;
    outputs.push_back(output);
  }
  return OneOrTuple(outputs);
}

Shape InferAllToAll(const Instruction& instruction) {
  // all-to-all exchanges pieces of equal size, collective-broadcast copies one device's value:
  // either way each result has its operand's shape. An array all-to-all splits `dimensions`
  // into one piece per device of the group.
  const std::vector<Shape> results = OperandArrays(instruction);
  const int64_t group = GroupSize(instruction);
  if (instruction.opcode() == Opcode::kAllToAll && results.size() == 1 && instruction.HasAttribute("dimensions")) {
    const int64_t d = CollectiveDimension(instruction, results[0]);
    if (group <= 0 || (results[0].dims[d] != isa::kUnboundedSize && results[0].dims[d] % group != 0)) {
      Fail(instruction, "split dimension " + std::to_string(d) + " of " + Str(results[0]) +
                            " does not divide among the " + std::to_string(group) + " devices of a group");
    }
  }
  return OneOrTuple(results);
}

Shape InferCollectivePermute(const Instruction& instruction) {
  // collective-permute(x) sends x along source_target_pairs: the result is x's shape. The in-place
  // form (input, output, input_start_indices, output_start_indices) writes into `output`.
  // -start yields (input, result, context...), the context being the implementation's.
  const bool in_place = instruction.operand_count() == 4;
  const Shape input = Logical(instruction.operand(0)->shape());
  const Shape result = Logical(instruction.operand(in_place ? 1 : 0)->shape());
  if (instruction.HasAttribute("source_target_pairs")) {
    // Pairs name replicas, or partitions when there is a channel_id; each sends once, receives once.
    const DeviceCounts devices = Devices(instruction);
    const bool channel = GroupIdKind(instruction) == DeviceIdKind::kPartition;
    std::vector<int64_t> sources;
    std::vector<int64_t> targets;
    for (const SourceTargetPair& pair : instruction.GetSourceTargetPairs()) {
      sources.push_back(pair.source);
      targets.push_back(pair.target);
    }
    const int64_t count = channel ? devices.partitions : devices.replicas;
    const std::string_view kind = channel ? "partition" : "replica";
    CheckDeviceIds(instruction, sources, count, "source_target_pairs (as a source)", kind);
    CheckDeviceIds(instruction, targets, count, "source_target_pairs (as a target)", kind);
  }
  if (instruction.opcode() == Opcode::kCollectivePermute) return result;
  const Shape& written = instruction.shape();
  std::vector<Shape> elements = {input, result};
  if (written.is_tuple) {
    for (std::size_t i = 2; i < written.tuple_shapes.size(); ++i) elements.push_back(Logical(written.tuple_shapes[i]));
  }
  return Shape::Tuple(elements);
}

Shape InferCollectiveDone(const Instruction& instruction) {
  // all-reduce-start already has the result's shape; the other -start ops are (input, result, ...).
  if (instruction.opcode() == Opcode::kAllReduceDone) return Logical(instruction.operand(0)->shape());
  const Shape& start = TupleOperand(instruction, 0);
  if (start.tuple_shapes.size() < 2) {
    Fail(instruction, "the operand " + Str(start) + " of " + std::string(OpcodeName(instruction.opcode())) +
                          " is not a -start's (input, result, ...) tuple");
  }
  return Logical(start.tuple_shapes[1]);
}

}  // namespace tpusim::hlo::inference
