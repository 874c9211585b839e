#include "models/bandwidth_resource.h"

#include <algorithm>
#include <utility>

#include "models/time_units.h"

namespace tpusim::models {

BandwidthResource::BandwidthResource(std::string name, double bytes_per_second)
    : picoseconds_per_byte_(1e12 / bytes_per_second), bytes_per_second_(bytes_per_second) {
  stats_.name = std::move(name);
}

sc_core::sc_time BandwidthResource::TransferTime(uint64_t bytes) const {
  return Picoseconds(static_cast<double>(bytes) * picoseconds_per_byte_);
}

sc_core::sc_time BandwidthResource::ReserveFor(const sc_core::sc_time& ready, uint64_t bytes,
                                               const sc_core::sc_time& duration) {
  busy_until_ = std::max(ready, busy_until_) + duration;
  ++stats_.requests;
  stats_.bytes += bytes;
  stats_.busy += duration;
  return busy_until_;
}

}  // namespace tpusim::models
