#include "models/ici_link.h"

#include <utility>

#include "models/param_checks.h"
#include "models/time_units.h"

namespace tpusim::models {

void Validate(const IciParams& params) {
  RequirePositive("IciParams", "link_bandwidth_gbps", params.link_bandwidth_gbps);
  RequireAtLeast("IciParams", "ring_link_count", params.ring_link_count, 1);
  RequireNonNegative("IciParams", "latency_ns", params.latency_ns);
}

namespace {

const IciParams& Validated(const IciParams& params) {
  Validate(params);
  return params;
}

double RingBytesPerSecond(const IciParams& params) {
  return GbpsToBytesPerSecond(params.link_bandwidth_gbps) * params.ring_link_count;
}

}  // namespace

IciLink::IciLink(std::string name, const IciParams& params, uint64_t window_bytes)
    : Memory(name, window_bytes),
      latency_(Nanoseconds(Validated(params).latency_ns)),
      outgoing_{BandwidthResource(name + " send", RingBytesPerSecond(params))},
      incoming_{BandwidthResource(name + " receive", RingBytesPerSecond(params))} {}

sc_core::sc_time IciLink::Serve(AccessKind kind, uint64_t, uint64_t bytes, const sc_core::sc_time& issue) {
  // A message pays the hop latency once: a request that finds its direction idle starts a new one
  // (its head crosses the hop first); one that arrives while the direction is still busy streams
  // behind the bytes before it. So a DMA that keeps a direction busy moves at the link's rate
  // whatever its requests in flight, as a pushed ICI stream does.
  Direction& direction = kind == AccessKind::kWrite ? outgoing_ : incoming_;
  const bool idle = !direction.used || issue > direction.bandwidth.busy_until();
  direction.used = true;
  return direction.bandwidth.Reserve(idle ? issue + latency_ : issue, bytes);
}

void IciLink::AppendResourceStats(std::vector<ResourceStats>& out) const {
  out.push_back(outgoing_.bandwidth.stats());
  out.push_back(incoming_.bandwidth.stats());
}

}  // namespace tpusim::models
