#include "models/mxu_timing.h"

#include <algorithm>

namespace tpusim::models {

MxuTimer::MxuTimer(const MxuParams& params) : params_(params) {}

double MxuTimer::BeginAfter(double earliest) const { return std::max(earliest, last_begin_); }

double MxuTimer::StagingBufferFree() const {
  // The next tile (the n+1-th) goes into the buffer that held tile n+1-B, which holds the
  // oldest of the last B latched tiles once B have been latched.
  if (tile_leave_.size() < params_.weight_buffer_count) return 0;
  return tile_leave_.front();
}

MxuSpan MxuTimer::WeightPush(uint64_t cycle, double load_cycles) {
  const double begin =
      BeginAfter(std::max({static_cast<double>(cycle), load_free_, StagingBufferFree()}));
  load_free_ = begin + load_cycles;
  last_begin_ = begin;
  weight_load_cycles_ += load_cycles;
  return {begin, load_free_};
}

MxuSpan MxuTimer::Latch(uint64_t cycle) {
  // After its tile's pushes have loaded; with one buffer, also after the rows using the current
  // weights have left (StagingBufferFree is then the current tile's).
  const double begin =
      BeginAfter(std::max({static_cast<double>(cycle), load_free_, StagingBufferFree()}));
  weights_ready_ = begin + 1;
  last_begin_ = begin;
  tile_leave_.push_back(0);
  if (tile_leave_.size() > params_.weight_buffer_count) tile_leave_.pop_front();
  return {begin, weights_ready_};
}

MxuSpan MxuTimer::PartialPush(uint64_t cycle) {
  const double begin = BeginAfter(static_cast<double>(cycle));
  last_begin_ = begin;
  return {begin, begin};
}

MxuGroupTiming MxuTimer::Group(uint64_t cycle, uint32_t rows, double passes) {
  MxuGroupTiming group;
  group.begin = BeginAfter(std::max({static_cast<double>(cycle), array_free_, weights_ready_}));
  // Idle: the passes stopped (a gap after the last group) and every row has left. A group that
  // follows the last one without a gap, or enters while rows still drain, finds it full.
  group.filled = !rows_entered_ || (group.begin > array_free_ && group.begin >= last_leave_);
  const double fill = group.filled ? params_.pipeline_fill_cycles : 0.0;
  group.pass_begin = group.begin + fill;
  group.passes = passes;
  group.drain = params_.pipeline_drain_cycles;
  group.rows = rows;
  array_free_ = group.pass_begin + rows * passes;
  last_leave_ = group.end();
  rows_entered_ = true;
  // The buffer of the current tile frees behind its last row. With one buffer the next load
  // overwrites the weights in use, so it waits for every row to leave; with two or more it fills
  // the freed buffer behind the last row's wavefront, one row of PEs after another, as the row
  // leaves them: from the end of its pass (TPUv1 [J1]: weights take effect "with the advancing
  // wave"), not after its results drain.
  if (!tile_leave_.empty()) tile_leave_.back() = params_.weight_buffer_count > 1 ? array_free_ : last_leave_;
  last_begin_ = group.begin;
  busy_cycles_ += fill + rows * passes;
  pass_cycles_ += rows * passes;
  fill_cycles_ += fill;
  fills_ += group.filled ? 1 : 0;
  return group;
}

MxuSpan MxuTimer::Pop(uint64_t cycle, double rows_ready) {
  const double begin = BeginAfter(std::max({static_cast<double>(cycle), pop_free_, rows_ready}));
  pop_free_ = begin + 1;
  last_begin_ = begin;
  return {begin, pop_free_};
}

double MxuTimer::quiescent() const {
  return std::max({last_begin_, load_free_, weights_ready_, last_leave_, pop_free_});
}

}  // namespace tpusim::models
