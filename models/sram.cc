#include "models/sram.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "models/time_units.h"

namespace tpusim::models {

void BankShares(uint64_t address, uint64_t bytes, uint64_t interleave_bytes,
                std::span<uint64_t> out) {
  const uint64_t banks = out.size();
  const uint64_t first_unit = address / interleave_bytes;
  const uint64_t last_unit = (address + bytes - 1) / interleave_bytes;
  std::fill(out.begin(), out.end(), 0);
  const uint64_t first_bank = first_unit % banks;
  if (first_unit == last_unit) {
    out[first_bank] = bytes;
    return;
  }
  // The first and last units, partial or whole.
  out[first_bank] += (first_unit + 1) * interleave_bytes - address;
  out[last_unit % banks] += address + bytes - last_unit * interleave_bytes;
  // The whole units between them, first_unit + 1 .. last_unit - 1, go round the banks from the
  // one after first_bank.
  const uint64_t whole = last_unit - first_unit - 1;
  const uint64_t rounds = whole / banks;
  if (rounds > 0) {
    for (uint64_t& share : out) share += rounds * interleave_bytes;
  }
  uint64_t bank = first_bank;
  for (uint64_t i = whole % banks; i > 0; --i) {
    if (++bank == banks) bank = 0;
    out[bank] += interleave_bytes;
  }
}

Sram::Sram(std::string name, uint64_t capacity_bytes, const SramTiming& timing)
    : Memory(std::move(name), capacity_bytes),
      timing_(timing),
      read_port_(timing.shared_port ? "port" : "read port", timing.read_bytes_per_second) {
  if (!timing.shared_port) write_port_.emplace("write port", timing.write_bytes_per_second);
  if (timing.bank_count > 1) {
    bank_count_ = timing.bank_count;
    bank_offset_.assign(bank_count_, 0);
    bank_requests_.assign(bank_count_, 0);
    bank_bytes_.assign(bank_count_, 0);
    bank_busy_.assign(bank_count_, 0);
    shares_.assign(bank_count_, 0);
    // A bank serves 1/bank_count of whichever port's rate applies: d(n_k, rate_P / K).
    const double banks = static_cast<double>(bank_count_);
    bank_read_picoseconds_per_byte_ = 1e12 * banks / read_port_.bytes_per_second();
    bank_write_picoseconds_per_byte_ =
        write_port_ ? 1e12 * banks / write_port_->bytes_per_second()
                    : bank_read_picoseconds_per_byte_;
    const uint64_t interleave = timing.bank_interleave_bytes;
    const uint64_t round = interleave * bank_count_;
    if (std::has_single_bit(interleave) && std::has_single_bit(round)) {
      whole_rounds_fast_path_ = true;
      round_start_mask_ = interleave - 1;
      round_bytes_mask_ = round - 1;
    }
  }
}

sc_core::sc_time Sram::Serve(AccessKind kind, uint64_t address, uint64_t bytes,
                             const sc_core::sc_time& issue) {
  const bool write_port = kind == AccessKind::kWrite && write_port_;
  BandwidthResource& port = write_port ? *write_port_ : read_port_;
  sc_core::sc_time done = port.Reserve(issue, bytes);
  if (bank_count_ == 0) return done + timing_.latency;

  // Each bank k with a share n_k > 0: end_k = max(t, B_k) + d(n_k, rate_P / K); B_k = end_k;
  // done = max(end_P, max_k end_k) + L. Picoseconds throughout (sc_time's value).
  const double picoseconds_per_byte =
      write_port ? bank_write_picoseconds_per_byte_ : bank_read_picoseconds_per_byte_;
  const auto duration_of = [&](uint64_t share) {
    if (share != memo_share_[write_port]) {
      memo_share_[write_port] = share;
      memo_duration_[write_port] =
          Picoseconds(static_cast<double>(share) * picoseconds_per_byte).value();
    }
    return memo_duration_[write_port];
  };
  const uint64_t ready = issue.value();
  uint64_t end = done.value();
  if (whole_rounds_fast_path_ && (address & round_start_mask_) == 0 &&
      (bytes & round_bytes_mask_) == 0) {
    // Every bank gets bytes / K: B_k = max(t, B_k) + d for all k at once.
    const uint64_t share = bytes / bank_count_;
    const uint64_t duration = duration_of(share);
    bank_floor_ = std::max(ready, bank_floor_) + duration;
    bank_shift_ += duration;
    end = std::max({end, bank_floor_, max_bank_offset_ + bank_shift_});
    ++even_requests_;
    even_bytes_ += share;
    even_busy_ += duration;
  } else {
    BankShares(address, bytes, timing_.bank_interleave_bytes, shares_);
    for (uint32_t b = 0; b < bank_count_; ++b) {
      const uint64_t share = shares_[b];
      if (share == 0) continue;
      const uint64_t duration = duration_of(share);
      const uint64_t busy_until = std::max(bank_floor_, bank_offset_[b] + bank_shift_);
      const uint64_t bank_end = std::max(ready, busy_until) + duration;
      bank_offset_[b] = bank_end - bank_shift_;
      max_bank_offset_ = std::max(max_bank_offset_, bank_offset_[b]);
      end = std::max(end, bank_end);
      ++bank_requests_[b];
      bank_bytes_[b] += share;
      bank_busy_[b] += duration;
    }
  }
  return sc_core::sc_time::from_value(end) + timing_.latency;
}

void Sram::AppendResourceStats(std::vector<ResourceStats>& out) const {
  out.push_back(read_port_.stats());
  if (write_port_) out.push_back(write_port_->stats());
  for (uint32_t b = 0; b < bank_count_; ++b) {
    ResourceStats bank;
    bank.name = "bank " + std::to_string(b);
    bank.requests = bank_requests_[b] + even_requests_;
    bank.bytes = bank_bytes_[b] + even_bytes_;
    bank.busy = sc_core::sc_time::from_value(bank_busy_[b] + even_busy_);
    out.push_back(std::move(bank));
  }
}

}  // namespace tpusim::models
