// Cross-device ops: collectives (and their -start/-done forms) across the devices that run in
// lockstep, and custom-calls. Which devices a collective joins follows XLA's group modes: replica
// ids without a channel_id; partition ids (within each replica) with a channel_id;
// global device ids with use_global_device_ids=true.
#include <string>

#include "compiler/eval/collectives.h"
#include "compiler/eval/evaluator_impl.h"
#include "compiler/eval/literal_util.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Instruction;
using hlo::Literal;
using hlo::Opcode;

enum class GroupMode { kReplicas, kPartitions, kGlobalDevices };

GroupMode ModeOf(const Instruction& instruction) {
  if (instruction.GetBool("use_global_device_ids", false)) return GroupMode::kGlobalDevices;
  return instruction.HasAttribute("channel_id") ? GroupMode::kPartitions : GroupMode::kReplicas;
}

// The written ids of one group, as device indices: one device group per replica (for partition
// groups) or per partition (for replica groups).
std::vector<std::vector<int64_t>> ExpandGroup(const std::vector<int64_t>& ids, GroupMode mode,
                                              int64_t replicas, int64_t partitions) {
  if (mode == GroupMode::kGlobalDevices) return {ids};
  std::vector<std::vector<int64_t>> groups;
  const int64_t copies = mode == GroupMode::kPartitions ? replicas : partitions;
  for (int64_t c = 0; c < copies; ++c) {
    std::vector<int64_t> devices;
    for (int64_t id : ids) {
      devices.push_back(mode == GroupMode::kPartitions ? c * partitions + id : id * partitions + c);
    }
    groups.push_back(std::move(devices));
  }
  return groups;
}

std::vector<std::vector<int64_t>> DeviceGroups(const Instruction& instruction, int64_t devices,
                                               int64_t partitions) {
  const GroupMode mode = ModeOf(instruction);
  const int64_t replicas = devices / partitions;
  std::vector<std::vector<int64_t>> written;
  if (const auto* groups = instruction.Find<hlo::ReplicaGroups>("replica_groups")) written = groups->groups;
  if (written.empty()) {  // one group of every participant
    const int64_t count = mode == GroupMode::kGlobalDevices ? devices
                          : mode == GroupMode::kPartitions  ? partitions
                                                            : replicas;
    written.emplace_back();
    for (int64_t id = 0; id < count; ++id) written.back().push_back(id);
  }
  std::vector<std::vector<int64_t>> result;
  for (const auto& ids : written) {
    for (auto& group : ExpandGroup(ids, mode, replicas, partitions)) {
      for (int64_t device : group) {
        if (device < 0 || device >= devices) {
          FailAt(instruction, "replica group names device " + std::to_string(device) + " of " +
                                  std::to_string(devices));
        }
      }
      result.push_back(std::move(group));
    }
  }
  return result;
}

std::vector<std::pair<int64_t, int64_t>> DevicePairs(const Instruction& instruction, int64_t devices,
                                                     int64_t partitions) {
  const GroupMode mode = ModeOf(instruction);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const hlo::SourceTargetPair& pair : instruction.GetSourceTargetPairs()) {
    const auto sources = ExpandGroup({pair.source}, mode, devices / partitions, partitions);
    const auto targets = ExpandGroup({pair.target}, mode, devices / partitions, partitions);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      if (sources[i][0] >= devices || targets[i][0] >= devices || sources[i][0] < 0 || targets[i][0] < 0) {
        FailAt(instruction, "source_target_pairs name a device outside the " + std::to_string(devices));
      }
      pairs.emplace_back(sources[i][0], targets[i][0]);
    }
  }
  return pairs;
}

int64_t DimensionOf(const Instruction& instruction) {
  const std::vector<int64_t>& dims = instruction.GetIntList("dimensions");
  if (dims.size() != 1) FailAt(instruction, "expects one dimension in dimensions={...}");
  return dims[0];
}

// An async collective's start value: (operand, result, context...) with zero contexts.
DeviceValues StartTuples(const Instruction& instruction, const DeviceValues& operand,
                         const DeviceValues& result) {
  if (!instruction.shape().is_tuple) return result;
  DeviceValues starts;
  for (std::size_t d = 0; d < result.size(); ++d) {
    Literal start(instruction.shape());
    start.mutable_elements().at(0) = operand[d];
    start.mutable_elements().at(1) = result[d];
    starts.push_back(std::move(start));
  }
  return starts;
}

DeviceValues DoneValues(const DeviceValues& started) {
  DeviceValues done;
  for (const Literal& start : started) done.push_back(start.is_tuple() ? start.elements().at(1) : start);
  return done;
}

}  // namespace

DeviceValues EvaluatorImpl::EvaluateCollective(const Instruction& instruction,
                                               const std::vector<const DeviceValues*>& operands,
                                               int64_t devices) {
  if (devices != device_count_) FailAt(instruction, "a collective inside a reducer or comparator");
  DeviceValues inputs;
  if (operands.size() == 1) {
    inputs = *operands[0];
  } else {  // several operands travel together as a tuple
    for (int64_t d = 0; d < devices; ++d) {
      std::vector<Literal> parts;
      for (const DeviceValues* operand : operands) parts.push_back((*operand)[d]);
      inputs.push_back(Literal::Tuple(std::move(parts)));
    }
  }
  switch (instruction.opcode()) {
    case Opcode::kAllReduce: case Opcode::kAllReduceStart:
      return AllReduce(inputs, DeviceGroups(instruction, devices, num_partitions_),
                       ReducerFor(*instruction.GetComputation("to_apply")));
    case Opcode::kAllGather:
      return AllGather(inputs, DeviceGroups(instruction, devices, num_partitions_), DimensionOf(instruction));
    case Opcode::kAllGatherStart:
      return StartTuples(instruction, inputs,
                         AllGather(inputs, DeviceGroups(instruction, devices, num_partitions_),
                                   DimensionOf(instruction)));
    case Opcode::kReduceScatter:
      return ReduceScatter(inputs, DeviceGroups(instruction, devices, num_partitions_),
                           DimensionOf(instruction), ReducerFor(*instruction.GetComputation("to_apply")));
    case Opcode::kAllToAll:
      return AllToAll(inputs, DeviceGroups(instruction, devices, num_partitions_),
                      DimensionOf(instruction), DimensionOf(instruction));
    case Opcode::kCollectivePermute:
      return CollectivePermute(inputs, DevicePairs(instruction, devices, num_partitions_));
    case Opcode::kCollectivePermuteStart:
      return StartTuples(instruction, inputs,
                         CollectivePermute(inputs, DevicePairs(instruction, devices, num_partitions_)));
    case Opcode::kAllReduceDone:
      return inputs;
    case Opcode::kAllGatherDone: case Opcode::kCollectivePermuteDone:
      return DoneValues(inputs);
    default:
      FailAt(instruction, "not a collective");
  }
}

Literal EvaluatorImpl::EvaluateCustomCall(const Instruction& instruction,
                                          std::span<const Literal* const> operands) {
  const std::string& target = instruction.GetString("custom_call_target");
  // Annotations that leave the value as it is: sharding hints, host-offload placement, and the
  // SPMD shape conversions when the shard is the whole array (one partition).
  static const char* const kIdentityTargets[] = {
      "Sharding", "MoveToHost", "MoveToDevice", "annotate_device_placement",
      "SPMDFullToShardShape", "SPMDShardToFullShape", "LayoutConstraint"};
  for (const char* identity : kIdentityTargets) {
    if (target != identity) continue;
    if (operands.size() != 1 || !(operands[0]->shape().dims == instruction.shape().dims)) {
      FailAt(instruction, "custom-call \"" + target + "\" that changes the shape is not supported");
    }
    return *operands[0];
  }
  FailAt(instruction, "unknown custom-call target \"" + target +
                          "\" (the evaluator knows Sharding, MoveToHost, MoveToDevice, "
                          "annotate_device_placement, SPMDFullToShardShape, SPMDShardToFullShape, "
                          "LayoutConstraint)");
}

}  // namespace tpusim::eval
