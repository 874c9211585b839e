#include "models/vmem.h"

#include <utility>

#include "models/clock_domain.h"
#include "models/param_checks.h"
#include "models/time_units.h"

namespace tpusim::models {

void Validate(const VmemParams& params) {
  constexpr std::string_view kParams = "VmemParams";
  RequireAtLeast(kParams, "capacity_bytes", params.capacity_bytes, 1);
  RequireAtLeast(kParams, "bank_count", params.bank_count, 1);
  RequirePowerOfTwo(kParams, "bank_interleave_bytes", params.bank_interleave_bytes);
  RequirePositive(kParams, "read_bandwidth_gbps", params.read_bandwidth_gbps);
  RequirePositive(kParams, "write_bandwidth_gbps", params.write_bandwidth_gbps);
  RequirePositive(kParams, "clock_mhz", params.clock_mhz);
}

namespace {

SramTiming TimingOf(const VmemParams& params) {
  Validate(params);
  SramTiming timing;
  timing.read_bytes_per_second = GbpsToBytesPerSecond(params.read_bandwidth_gbps);
  timing.write_bytes_per_second = GbpsToBytesPerSecond(params.write_bandwidth_gbps);
  timing.bank_count = params.bank_count;
  timing.bank_interleave_bytes = params.bank_interleave_bytes;
  timing.latency = ClockDomain(params.clock_mhz).ToTime(params.access_latency_cycles);
  return timing;
}

}  // namespace

// The vector unit's ports and banks: an Sram used for its timing alone (its sparse bytes stay
// empty).
class VectorPorts final : public Sram {
 public:
  VectorPorts(std::string name, const SramTiming& timing) : Sram(std::move(name), 1, timing) {}
};

Vmem::Vmem(std::string name, const VmemParams& params)
    : Sram(name, params.capacity_bytes, TimingOf(params)),
      params_(params),
      vector_ports_(std::make_unique<VectorPorts>(name + " vector", TimingOf(params))) {}

sc_core::sc_time Vmem::VectorAccess(AccessKind kind, uint64_t address, uint64_t bytes,
                                    const sc_core::sc_time& issue) {
  CheckRange(ToString(kind), address, bytes);
  CountRequest(kind, bytes);
  if (bytes == 0) return issue;
  return vector_ports_->Serve(kind, address, bytes, issue);
}

void Vmem::AppendResourceStats(std::vector<ResourceStats>& out) const {
  Sram::AppendResourceStats(out);
  std::vector<ResourceStats> vector;
  vector_ports_->AppendResourceStats(vector);
  for (ResourceStats& resource : vector) {
    resource.name = "vector " + resource.name;
    out.push_back(std::move(resource));
  }
}

}  // namespace tpusim::models
