// High-bandwidth memory (memory space S(0)): `channel_count` independent channels, addresses
// interleaved across them every `interleave_bytes` (address a lies in channel
// (a / interleave_bytes) % channel_count, as the ArchConfig says). A request is cut at the
// interleave boundaries; its pieces go to their channels in parallel, each channel serving one
// piece at a time at channel_bandwidth_gbps, reads and writes alike; the request completes when
// its last piece has, plus the access latency (docs/timing.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/memory.h"

namespace tpusim::models {

// The ArchConfig's `hbm` block, with capacity in bytes.
struct HbmParams {
  uint64_t capacity_bytes = 0;
  uint32_t channel_count = 0;
  uint64_t interleave_bytes = 0;       // a power of two
  double channel_bandwidth_gbps = 0;   // one channel, reads and writes together; GB/s = 1e9 B/s
  double access_latency_ns = 0;        // request issued to data returned / write accepted, idle
  // A stripe's channel: its index's base-channel_count digits xor-ed, else the index itself,
  // modulo channel_count (HbmConfig.fold_channel_stripes).
  bool fold_channel_stripes = false;
};

// Throws tpusim::Error naming the field unless every field is valid and the capacity holds one
// interleave stripe per channel.
void Validate(const HbmParams& params);

class Hbm final : public Memory {
 public:
  Hbm(std::string name, const HbmParams& params);  // validates

  const HbmParams& params() const { return params_; }
  uint32_t ChannelOf(uint64_t address) const {
    uint64_t stripe = address / params_.interleave_bytes;
    // One channel has no digits to fold (and base 1 would never end).
    if (!params_.fold_channel_stripes || params_.channel_count == 1) {
      return static_cast<uint32_t>(stripe % params_.channel_count);
    }
    uint64_t digits = 0;
    for (; stripe > 0; stripe /= params_.channel_count) digits ^= stripe % params_.channel_count;
    return static_cast<uint32_t>(digits % params_.channel_count);
  }
  const BandwidthResource& channel(uint32_t index) const { return channels_.at(index); }

 private:
  sc_core::sc_time Serve(AccessKind kind, uint64_t address, uint64_t bytes,
                         const sc_core::sc_time& issue) override;
  void AppendResourceStats(std::vector<ResourceStats>& out) const override;

  HbmParams params_;
  sc_core::sc_time latency_;
  std::vector<BandwidthResource> channels_;
};

}  // namespace tpusim::models
