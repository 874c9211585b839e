// The devices of an SPMD module: its replicas and partitions (the HloModule line's replica_count
// and num_partitions, or XLA's runner flags --num_replicas and --num_partitions), and how its
// collectives name them.
#pragma once

#include <cstdint>

#include "compiler/hlo/ir.h"

namespace tpusim::hlo {

// How a collective's replica_groups or source_target_pairs name devices (XLA's
// CollectiveOpGroupMode): without channel_id, replicas; with channel_id and
// use_global_device_ids (all-reduce, all-gather, reduce-scatter and their -start forms), global
// device ids (replica x num_partitions + partition); with channel_id alone, replicas for those
// ops (each together with all partitions) and partitions for the others (all-to-all,
// collective-broadcast, collective-permute).
enum class DeviceIdKind : uint8_t { kReplica, kPartition, kGlobal };
DeviceIdKind GroupIdKind(const Instruction& collective);

// One more than the highest id of each kind that any collective of `module` names in its
// replica_groups or source_target_pairs (0 where none does): the fewest replicas, partitions and
// devices the module can run on.
struct NamedDevices {
  int64_t replicas = 0;
  int64_t partitions = 0;
  int64_t devices = 0;
};
NamedDevices DevicesNamedByCollectives(const Module& module);

}  // namespace tpusim::hlo
