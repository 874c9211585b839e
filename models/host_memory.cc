#include "models/host_memory.h"

#include <utility>

#include "models/param_checks.h"
#include "models/time_units.h"

namespace tpusim::models {

void Validate(const HostMemoryParams& params) {
  RequireAtLeast("HostMemoryParams", "capacity_bytes", params.capacity_bytes, 1);
  RequireNonNegative("HostMemoryParams", "access_latency_ns", params.access_latency_ns);
}

namespace {

const HostMemoryParams& Validated(const HostMemoryParams& params) {
  Validate(params);
  return params;
}

}  // namespace

HostMemory::HostMemory(std::string name, const HostMemoryParams& params, const PcieParams& pcie)
    : Memory(name, Validated(params).capacity_bytes),
      params_(params),
      dram_latency_(Nanoseconds(params.access_latency_ns)),
      link_(name + " pcie", pcie) {}

sc_core::sc_time HostMemory::Serve(AccessKind kind, uint64_t, uint64_t bytes,
                                   const sc_core::sc_time& issue) {
  // Every latency a request crosses is charged after its slot on the link, as for the other
  // memories (one equation everywhere): a read crosses the link twice (request out, data back),
  // a write once.
  if (kind == AccessKind::kRead) {
    return link_.Reserve(PcieDirection::kHostToDevice, issue, bytes) + link_.latency() +
           dram_latency_ + link_.latency();
  }
  return link_.Reserve(PcieDirection::kDeviceToHost, issue, bytes) + link_.latency() +
         dram_latency_;
}

void HostMemory::AppendResourceStats(std::vector<ResourceStats>& out) const {
  link_.AppendStats(out);
}

}  // namespace tpusim::models
