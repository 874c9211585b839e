#include "models/bandwidth_resource.h"

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

}  // namespace tpusim::models
