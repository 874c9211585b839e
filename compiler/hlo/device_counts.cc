#include "compiler/hlo/device_counts.h"

#include <algorithm>

namespace tpusim::hlo {

DeviceIdKind GroupIdKind(const Instruction& collective) {
  if (!collective.HasAttribute("channel_id")) return DeviceIdKind::kReplica;
  switch (collective.opcode()) {
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kAllGather:
    case Opcode::kAllGatherStart:
    case Opcode::kReduceScatter:
      return collective.GetBool("use_global_device_ids", false) ? DeviceIdKind::kGlobal : DeviceIdKind::kReplica;
    default:
      return DeviceIdKind::kPartition;
  }
}

NamedDevices DevicesNamedByCollectives(const Module& module) {
  NamedDevices named;
  auto note = [&](DeviceIdKind kind, int64_t id) {
    int64_t& count = kind == DeviceIdKind::kReplica ? named.replicas
                     : kind == DeviceIdKind::kPartition ? named.partitions
                                                        : named.devices;
    count = std::max(count, id + 1);
  };
  for (const auto& computation : module.computations()) {
    for (const auto& x : computation->instructions()) {
      if (x->HasAttribute("replica_groups")) {
        for (const auto& group : x->GetReplicaGroups().groups) {
          for (int64_t id : group) note(GroupIdKind(*x), id);
        }
      }
      if (x->HasAttribute("source_target_pairs")) {
        for (const SourceTargetPair& pair : x->GetSourceTargetPairs()) {
          note(GroupIdKind(*x), pair.source);
          note(GroupIdKind(*x), pair.target);
        }
      }
    }
  }
  return named;
}

}  // namespace tpusim::hlo
