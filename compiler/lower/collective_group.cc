#include "compiler/lower/collective_group.h"

#include <algorithm>

#include "isa/error.h"

namespace tpusim::compiler {
namespace {

// XLA's CollectiveOpGroupMode for the ops that have use_global_device_ids (all-reduce,
// all-gather, reduce-scatter): replica ids without a channel_id; replica ids, each with every
// partition, with a channel_id alone; global device ids with use_global_device_ids=true.
enum class GroupMode { kCrossReplica, kCrossReplicaAndPartition, kFlattenedIds };

GroupMode ModeOf(const hlo::Instruction& instruction) {
  if (!instruction.HasAttribute("channel_id")) return GroupMode::kCrossReplica;
  return instruction.GetBool("use_global_device_ids", false) ? GroupMode::kFlattenedIds
                                                             : GroupMode::kCrossReplicaAndPartition;
}

[[noreturn]] void Fail(const hlo::Instruction& instruction, const std::string& why) {
  throw Error(instruction.Describe() + ": " + std::string(hlo::OpcodeName(instruction.opcode())) + ": " + why);
}

}  // namespace

DeviceCount DevicesOf(const hlo::Module& module) { return {module.replica_count(), module.num_partitions()}; }

std::string DeviceListText(const std::vector<int64_t>& devices) {
  std::string text = "{";
  for (std::size_t i = 0; i < devices.size(); ++i) text += (i > 0 ? "," : "") + std::to_string(devices[i]);
  return text + "}";
}

CollectiveRing RingOf(const hlo::Instruction& instruction, const DeviceCount& count, int64_t device) {
  const GroupMode mode = ModeOf(instruction);
  const bool global = mode == GroupMode::kFlattenedIds;
  const int64_t replica = device / count.partitions;
  const int64_t partition = device % count.partitions;
  std::vector<std::vector<int64_t>> written;
  if (const auto* groups = instruction.Find<hlo::ReplicaGroups>("replica_groups")) written = groups->groups;
  const int64_t id_count = global ? count.devices() : count.replicas;
  if (written.empty()) {  // one group of every id
    written.emplace_back();
    for (int64_t id = 0; id < id_count; ++id) written.back().push_back(id);
  }
  const int64_t own_id = global ? device : replica;
  for (const std::vector<int64_t>& ids : written) {
    for (int64_t id : ids) {
      if (id < 0 || id >= id_count) {
        Fail(instruction, "replica group " + DeviceListText(ids) + " names id " + std::to_string(id) + ", but the module has " +
                              std::to_string(id_count) + (global ? " devices" : " replicas"));
      }
    }
    if (std::find(ids.begin(), ids.end(), own_id) == ids.end()) continue;
    CollectiveRing ring;
    for (int64_t id : ids) {
      switch (mode) {
        case GroupMode::kFlattenedIds: ring.devices.push_back(id); break;
        case GroupMode::kCrossReplica: ring.devices.push_back(id * count.partitions + partition); break;
        case GroupMode::kCrossReplicaAndPartition:
          for (int64_t p = 0; p < count.partitions; ++p) ring.devices.push_back(id * count.partitions + p);
          break;
      }
    }
    std::sort(ring.devices.begin(), ring.devices.end());
    if (std::adjacent_find(ring.devices.begin(), ring.devices.end()) != ring.devices.end()) {
      Fail(instruction, "replica group " + DeviceListText(ids) + " names a device twice");
    }
    ring.position = std::find(ring.devices.begin(), ring.devices.end(), device) - ring.devices.begin();
    if (ring.size() > 1) ring.stride = ring.devices[1] - ring.devices[0];
    for (std::size_t i = 1; i < ring.devices.size(); ++i) {
      if (ring.devices[i] - ring.devices[i - 1] != ring.stride) {
        Fail(instruction, "the group of device " + std::to_string(device) + " is devices " + DeviceListText(ring.devices) +
                              ", which are not evenly spaced: they form no ring along one axis of the device grid, and "
                              "the ICI model runs collectives over such rings only");
      }
    }
    return ring;
  }
  Fail(instruction, "device " + std::to_string(device) + " (replica " + std::to_string(replica) + ", partition " +
                        std::to_string(partition) + ") is in none of its replica groups");
}

PermutePeers PeersOf(const hlo::Instruction& instruction, const DeviceCount& count, int64_t device) {
  const bool partitions = instruction.HasAttribute("channel_id");
  const int64_t replica = device / count.partitions;
  const int64_t partition = device % count.partitions;
  const int64_t id_count = partitions ? count.partitions : count.replicas;
  const auto device_of = [&](int64_t id) {
    if (id < 0 || id >= id_count) {
      Fail(instruction, "source_target_pairs name id " + std::to_string(id) + ", but the module has " +
                            std::to_string(id_count) + (partitions ? " partitions" : " replicas"));
    }
    return partitions ? replica * count.partitions + id : id * count.partitions + partition;
  };
  PermutePeers peers;
  for (const hlo::SourceTargetPair& pair : instruction.GetSourceTargetPairs()) {
    const int64_t source = device_of(pair.source);
    const int64_t target = device_of(pair.target);
    if (target == device) peers.source = source;
    if (source == device) peers.target = target;
  }
  return peers;
}

}  // namespace tpusim::compiler
