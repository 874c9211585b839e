#include "sim/trace/binned_counter.h"

#include <algorithm>

namespace tpusim::sim {

void BinnedCounter::Add(uint64_t begin_ps, uint64_t end_ps, double amount) {
  const uint64_t first = std::max(begin_ps / bin_ps_, first_bin_);
  const uint64_t last = end_ps > begin_ps ? std::max((end_ps - 1) / bin_ps_, first) : first;
  if (last - first_bin_ + 1 > bins_.size()) bins_.resize(last - first_bin_ + 1, 0.0);
  if (end_ps <= begin_ps) {
    bins_[first - first_bin_] += amount;
    return;
  }
  const double per_ps = amount / static_cast<double>(end_ps - begin_ps);
  for (uint64_t bin = first; bin <= last; ++bin) {
    const uint64_t lo = std::max(begin_ps, bin * bin_ps_);
    const uint64_t hi = std::min(end_ps, (bin + 1) * bin_ps_);
    if (hi > lo) bins_[bin - first_bin_] += per_ps * static_cast<double>(hi - lo);
  }
}

void BinnedCounter::Emit(uint64_t time_ps, double value) {
  if (written_ && value == last_value_) return;
  sink_->WriteCounter(track_, time_ps, value);
  last_time_ps_ = time_ps;
  written_ = true;
  last_value_ = value;
}

void BinnedCounter::Flush(uint64_t watermark_ps) {
  while ((first_bin_ + 1) * bin_ps_ <= watermark_ps) {
    double amount = 0;
    if (!bins_.empty()) {
      amount = bins_.front();
      bins_.pop_front();
    } else {
      // Nothing recorded up to the watermark: jump to its bin (the value is 0 until then).
      Emit(first_bin_ * bin_ps_, 0.0);
      first_bin_ = watermark_ps / bin_ps_;
      return;
    }
    Emit(first_bin_ * bin_ps_, amount * scale_);
    ++first_bin_;
  }
}

void BinnedCounter::FlushAll(uint64_t end_ps) {
  Flush(end_ps);
  while (!bins_.empty()) {  // the partial last bin (and any occupancy past the end)
    Emit(first_bin_ * bin_ps_, bins_.front() * scale_);
    bins_.pop_front();
    ++first_bin_;
  }
  if (!written_ || last_value_ != 0) {
    sink_->WriteCounter(track_, std::max(end_ps, last_time_ps_), 0.0);
    written_ = true;
    last_value_ = 0;
  }
}

}  // namespace tpusim::sim
