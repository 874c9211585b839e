#include "models/sram.h"

#include <algorithm>
#include <utility>

#include "models/time_units.h"

namespace tpusim::models {

Sram::Sram(std::string name, uint64_t capacity_bytes, const SramTiming& timing)
    : Memory(std::move(name), capacity_bytes),
      timing_(timing),
      read_port_(timing.shared_port ? "port" : "read port", timing.read_bytes_per_second) {
  if (!timing.shared_port) write_port_.emplace("write port", timing.write_bytes_per_second);
  if (timing.bank_count > 1) {
    banks_.reserve(timing.bank_count);
    // A bank's own rate is unused (ReserveFor gets the duration); it serves 1/bank_count of
    // whichever port's rate applies.
    for (uint32_t b = 0; b < timing.bank_count; ++b) {
      banks_.emplace_back("bank " + std::to_string(b),
                          timing.read_bytes_per_second / timing.bank_count);
    }
    bank_bytes_.assign(timing.bank_count, 0);
  }
}

sc_core::sc_time Sram::Serve(AccessKind kind, uint64_t address, uint64_t bytes,
                             const sc_core::sc_time& issue) {
  BandwidthResource& port =
      kind == AccessKind::kWrite && write_port_ ? *write_port_ : read_port_;
  sc_core::sc_time done = port.Reserve(issue, bytes);
  if (!banks_.empty()) {
    const uint64_t unit = timing_.bank_interleave_bytes;
    const uint64_t end = address + bytes;
    for (uint64_t at = address; at < end;) {
      const uint64_t piece_end = std::min(end, (at / unit + 1) * unit);
      bank_bytes_[(at / unit) % banks_.size()] += piece_end - at;
      at = piece_end;
    }
    const double bank_picoseconds_per_byte = 1e12 * static_cast<double>(banks_.size()) /
                                             port.bytes_per_second();
    for (std::size_t b = 0; b < banks_.size(); ++b) {
      if (bank_bytes_[b] == 0) continue;
      const sc_core::sc_time duration =
          Picoseconds(static_cast<double>(bank_bytes_[b]) * bank_picoseconds_per_byte);
      done = std::max(done, banks_[b].ReserveFor(issue, bank_bytes_[b], duration));
      bank_bytes_[b] = 0;
    }
  }
  return done + timing_.latency;
}

void Sram::AppendResourceStats(std::vector<ResourceStats>& out) const {
  out.push_back(read_port_.stats());
  if (write_port_) out.push_back(write_port_->stats());
  for (const BandwidthResource& bank : banks_) out.push_back(bank.stats());
}

}  // namespace tpusim::models
