#include "models/hbm.h"

#include <algorithm>
#include <utility>

#include "isa/error.h"
#include "models/param_checks.h"
#include "models/time_units.h"

namespace tpusim::models {

void Validate(const HbmParams& params) {
  constexpr std::string_view kParams = "HbmParams";
  RequireAtLeast(kParams, "channel_count", params.channel_count, 1);
  RequirePowerOfTwo(kParams, "interleave_bytes", params.interleave_bytes);
  RequirePositive(kParams, "channel_bandwidth_gbps", params.channel_bandwidth_gbps);
  RequireNonNegative(kParams, "access_latency_ns", params.access_latency_ns);
  const uint64_t stripes = params.capacity_bytes / params.interleave_bytes;
  if (stripes < params.channel_count) {
    throw Error("HbmParams.capacity_bytes (" + std::to_string(params.capacity_bytes) +
                ") must hold one interleave stripe per channel: at least channel_count x "
                "interleave_bytes = " +
                std::to_string(uint64_t{params.channel_count} * params.interleave_bytes));
  }
}

namespace {

const HbmParams& Validated(const HbmParams& params) {
  Validate(params);
  return params;
}

}  // namespace

Hbm::Hbm(std::string name, const HbmParams& params)
    : Memory(std::move(name), Validated(params).capacity_bytes),
      params_(params),
      latency_(Nanoseconds(params.access_latency_ns)) {
  channels_.reserve(params.channel_count);
  for (uint32_t c = 0; c < params.channel_count; ++c) {
    channels_.emplace_back("channel " + std::to_string(c),
                           GbpsToBytesPerSecond(params.channel_bandwidth_gbps));
  }
}

sc_core::sc_time Hbm::Serve(AccessKind, uint64_t address, uint64_t bytes,
                            const sc_core::sc_time& issue) {
  // Each interleave stripe the request touches is one piece on its channel. Pieces on different
  // channels overlap; pieces on one channel (a request longer than channel_count stripes)
  // queue behind each other through that channel's busy-until time.
  sc_core::sc_time last = issue;
  const uint64_t end = address + bytes;
  for (uint64_t at = address; at < end;) {
    const uint64_t stripe_end = (at / params_.interleave_bytes + 1) * params_.interleave_bytes;
    const uint64_t piece_end = std::min(end, stripe_end);
    last = std::max(last, channels_[ChannelOf(at)].Reserve(issue, piece_end - at));
    at = piece_end;
  }
  return last + latency_;
}

void Hbm::AppendResourceStats(std::vector<ResourceStats>& out) const {
  for (const BandwidthResource& channel : channels_) out.push_back(channel.stats());
}

}  // namespace tpusim::models
