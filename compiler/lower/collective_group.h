// Which devices a collective joins, seen from the one device a run simulates. A module runs on
// replica_count x num_partitions devices; device d (its global id) is partition d % num_partitions
// of replica d / num_partitions. The group modes are XLA's (CollectiveOpGroupMode, as the shape
// inference reads them): replica ids without a channel_id; replica ids, each with all its
// partitions, with a channel_id alone; global device ids with use_global_device_ids=true. No
// replica_groups means one group of every id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

struct DeviceCount {
  int64_t replicas = 1;
  int64_t partitions = 1;
  int64_t devices() const { return replicas * partitions; }
};

// The module's devices (replica_count x num_partitions).
DeviceCount DevicesOf(const hlo::Module& module);

// A ring over the group's devices, in increasing id order: the simulated device is at `position`.
// Its devices are evenly spaced (`stride`), so that in a torus of devices numbered along its axes
// consecutive members are neighbours along one axis and the last wraps around to the first.
struct CollectiveRing {
  std::vector<int64_t> devices;  // global ids, increasing
  int64_t position = 0;
  int64_t stride = 1;
  int64_t size() const { return static_cast<int64_t>(devices.size()); }
};

// The ring of `device`'s group for `instruction` (all-reduce, all-gather, reduce-scatter). Throws tpusim::Error naming the instruction when a group names a device that does
// not exist, when `device` is in no group, or when its group's devices are not evenly spaced
// (no ring along one axis: the ICI model does not route across axes).
CollectiveRing RingOf(const hlo::Instruction& instruction, const DeviceCount& count, int64_t device);

// collective-permute's source_target_pairs seen from `device`: ids are partitions (within the
// device's replica) with a channel_id, replicas (at its partition) without one, as in XLA. Throws
// tpusim::Error for an id outside the module.
struct PermutePeers {
  int64_t source = -1;  // the device whose operand becomes this device's result; -1: none (zeros)
  int64_t target = -1;  // the device this device's operand goes to; -1: none
};
PermutePeers PeersOf(const hlo::Instruction& instruction, const DeviceCount& count, int64_t device);

// "{0,1,2}".
std::string DeviceListText(const std::vector<int64_t>& devices);

}  // namespace tpusim::compiler
