// The MXU's timing (docs/timing.md, "MXU"), apart from what it computes. Each operation of the
// MXU's in-order queue is given the cycle it reached the head of the queue with its register
// operand ready; it begins once every earlier operation has begun and its resources are free,
// and occupies them:
//   - the weight-load path: a weight push for weight_load_cycles / (pushes per full tile);
//   - the array: a row group of P rows for P x passes cycles, plus pipeline_fill_cycles when the
//     array was idle (the passes had stopped and every row had left); row i's results are ready
//     drain cycles after its pass;
//   - the result port: a pop for one cycle, once its rows' results are ready;
//   - a latch takes one cycle and the weights it latches are usable when it ends.
// Weight buffers: the pushes and the latch of the n-th tile wait until the buffer of tile
// n - weight_buffer_count is free: with one buffer, once every earlier row has left the array
// (its results ready); with two or more, once the last row using it has passed (the load
// follows that row's wavefront), so a tile loads while the previous one computes.
//
// Times are fractional cycles (a row of s8 at 0.5 passes); Mxu reports whole cycles.
#pragma once

#include <cstdint>
#include <deque>

#include "models/mxu_params.h"

namespace tpusim::models {

struct MxuSpan {
  double begin = 0;  // the operation began (its vreg was read)
  double end = 0;    // it completed: weights loaded or latched, results ready, vreg written
};

// A row group's schedule: row i's pass ends at pass_begin + (i + 1) x passes and its results are
// ready `drain` later.
struct MxuGroupTiming {
  double begin = 0;       // entered the array (the push that completed it began)
  double pass_begin = 0;  // begin + the fill, if one was charged
  double passes = 0;
  double drain = 0;
  uint32_t rows = 0;
  bool filled = false;  // the array was idle and the fill was charged
  double RowReady(uint32_t row) const { return pass_begin + (row + 1) * passes + drain; }
  double end() const { return RowReady(rows - 1); }
};

class MxuTimer {
 public:
  explicit MxuTimer(const MxuParams& params);  // params already validated

  // A weight push that occupies the load path for `load_cycles`.
  MxuSpan WeightPush(uint64_t cycle, double load_cycles);
  MxuSpan Latch(uint64_t cycle);
  // An LHS push that does not complete its row group (only buffers its K-columns).
  MxuSpan PartialPush(uint64_t cycle);
  // The LHS push that completes a group of `rows` rows of `passes` cycles each.
  MxuGroupTiming Group(uint64_t cycle, uint32_t rows, double passes);
  // A pop whose rows' results are ready at `rows_ready`.
  MxuSpan Pop(uint64_t cycle, double rows_ready);

  // When everything begun so far has finished: the last results ready, the last load done.
  double quiescent() const;

  double busy_cycles() const { return busy_cycles_; }  // array: fills + passes
  double pass_cycles() const { return pass_cycles_; }  // rows x passes
  double fill_cycles() const { return fill_cycles_; }
  uint64_t fills() const { return fills_; }  // times the array was idle
  double weight_load_cycles() const { return weight_load_cycles_; }

 private:
  // When the weight buffer the next tile will be staged in is free.
  double StagingBufferFree() const;
  double BeginAfter(double earliest) const;

  MxuParams params_;
  double last_begin_ = 0;     // in-order: no operation begins before an earlier one
  double load_free_ = 0;      // weight-load path busy until
  double weights_ready_ = 0;  // the latest latch has ended
  double array_free_ = 0;     // the last group's passes end
  double last_leave_ = 0;     // the last row's results are ready: the array is empty after
  bool rows_entered_ = false;
  double pop_free_ = 0;  // result port busy until
  // When the buffer of each of the last weight_buffer_count latched tiles is free (Group),
  // oldest first (0 for a tile no row used yet).
  std::deque<double> tile_leave_;
  double busy_cycles_ = 0;
  double pass_cycles_ = 0;
  double fill_cycles_ = 0;
  uint64_t fills_ = 0;
  double weight_load_cycles_ = 0;
};

}  // namespace tpusim::models
