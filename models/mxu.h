// One matrix unit (MXU): a weight-stationary systolic array of R x C multiply-accumulators with
// its weight staging buffer, latched weights, partial LHS row group and result FIFO, executing
// mxu.wpush.T, mxu.latch, mxu.push.T, mxu.pop and mxu.pop.acc exactly as docs/isa.md ("MXU")
// defines them, with their timing (models/mxu_timing.h, docs/timing.md "MXU"). A plain C++ class
// driven by explicit cycle numbers: the MXU's queue calls it in queue order, each operation with
// the cycle it reached the head of the queue with its vreg operand ready, and gets back when it
// began and when it completed. Faults (docs/isa.md's list) are tpusim::Errors thrown before
// anything changes; the caller adds the pc and the instruction.
//
// Vregs hold rows packed as TPU tiles pack them (models/packed_rows.h): P = S * 32 / w rows of a
// w-bit type per vreg. Timing-only mode keeps the counts the faults need and the times, and
// skips the data: no copies, no arithmetic, pops leave their vreg alone. Its times are identical,
// since no time depends on a value.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "isa/element_type.h"
#include "models/mxu_params.h"
#include "models/mxu_timing.h"
#include "models/vreg.h"

namespace tpusim::models {

// When one operation ran, in whole cycles.
struct MxuTiming {
  uint64_t start = 0;  // the cycle it began: its vreg operand was read (FloorCycle)
  uint64_t done = 0;   // the first cycle after it completed (CeilCycle): a weight push's data
                       // loaded; a latch's weights usable; a push that completes a row group: the
                       // group's last results ready (a push that does not: = start); a pop: vd
                       // ready
};

struct MxuStats {
  uint64_t weight_pushes = 0;
  uint64_t latches = 0;
  uint64_t pushes = 0;  // LHS vregs pushed
  uint64_t row_groups = 0;
  uint64_t rows = 0;       // LHS rows through the array (P per group)
  uint64_t pops = 0;       // pops and pop.accs
  uint64_t accumulator_reads = 0;  // mxu.acc.read and mxu.acc.read.clear
  uint64_t macs = 0;       // rows x R x C multiply-accumulates
  double busy_cycles = 0;  // the array occupied: fills plus passes
  double pass_cycles = 0;  // rows x passes of their type
  double fill_cycles = 0;
  uint64_t fills = 0;  // row groups that found the array idle
  double weight_load_cycles = 0;
};
// Counts add and subtract field by field (a replayed segment's share: sim/chip/segment_replay.h).
void AddCounts(MxuStats& to, const MxuStats& delta);
MxuStats CountsSince(const MxuStats& now, const MxuStats& before);

// The fraction of `elapsed_cycles` the array spent passing rows: 1 when rows stream at the
// configured peak of their type (1 / passes rows per cycle). FLOPs are 2 x stats.macs.
double MxuUtilization(const MxuStats& stats, uint64_t elapsed_cycles);

class Mxu {
 public:
  explicit Mxu(const MxuParams& params);  // validates

  const MxuParams& params() const { return params_; }
  void set_timing_only(bool timing_only) { timing_only_ = timing_only; }
  bool timing_only() const { return timing_only_; }

  // mxu.wpush.T: stages the next block of weight rows from `va`.
  MxuTiming WeightPush(isa::ElementType type, const Vreg& va, uint64_t cycle);
  // mxu.latch: the staged tile (unpushed elements 0) becomes the weights.
  MxuTiming Latch(uint64_t cycle);
  // mxu.push.T: the next K-block of the current LHS row group; the push that completes the group
  // appends its P result rows to the FIFO.
  MxuTiming Push(isa::ElementType type, const Vreg& va, uint64_t cycle);
  // mxu.pop: vd = the next column block of the FIFO's first S rows. mxu.pop.acc: vd += it.
  MxuTiming Pop(Vreg& vd, uint64_t cycle);
  MxuTiming PopAccumulate(Vreg& vd, uint64_t cycle);

  // mxu.push.acc.T: as Push, but the group's P result rows are added into accumulator rows
  // [row, row + P) (continuing their sums) instead of the FIFO; row is the completing push's.
  MxuTiming PushAccumulate(isa::ElementType type, const Vreg& va, uint64_t row, uint64_t cycle);
  // mxu.acc.read(.clear): vd = accumulator rows [row, row + S), columns [col L, col L + L) (0
  // beyond C), once those rows' last additions are done; clear: then those words become +0.
  MxuTiming AccumulatorRead(Vreg& vd, uint64_t row, uint64_t col, bool clear, uint64_t cycle);

  // Result rows waiting in the FIFO (a pop needs S).
  size_t result_rows() const { return fifo_rows_; }
  // The cycle by which everything begun so far has completed (the program's end waits for it).
  uint64_t quiescent_cycle() const;
  MxuStats stats() const;
  // A replayed segment (sim/chip/segment_replay.h): its counts (a CountsSince) join stats(), and
  // the unit is quiescent from `quiescent_cycle` (when the segment's last operation completed).
  void AddReplayed(const MxuStats& counts, uint64_t quiescent_cycle);
  // Between operations: nothing staged, no partial row group, no results waiting. What is left
  // then is the latched weights' type (0: none), which a segment may rely on and a replay sets.
  bool between_sequences() const { return staged_pushes_ == 0 && group_pushes_ == 0 && fifo_rows_ == 0; }
  int latched_type() const { return latched_type_ ? static_cast<int>(*latched_type_) + 1 : 0; }
  void set_latched_type(int type) {
    latched_type_ = type == 0 ? std::nullopt : std::optional(static_cast<isa::ElementType>(type - 1));
  }

 private:
  // The result FIFO holds row groups as they left the array: row i of a group is ready at
  // timing.RowReady(i). A group has P = S x 32 / w rows, a multiple of S, so the S rows a pop
  // takes always lie in one group.
  struct ResultGroup {
    MxuGroupTiming timing;
    bool integer = false;         // s32 words (s8 inputs) rather than f32
    std::vector<uint32_t> words;  // rows x C words; empty in timing-only mode
    uint32_t left_rows = 0;       // rows already popped out of the FIFO (the first ones)
  };

  uint32_t RowsPerVreg(isa::ElementType type) const;
  uint32_t PushesPerTile(isa::ElementType type) const;
  void CheckType(const char* op, isa::ElementType type) const;
  void CheckVreg(const char* op, const Vreg& vreg) const;
  void StageWeights(isa::ElementType type, const Vreg& va);
  void BufferLhs(isa::ElementType type, const Vreg& va);
  void AppendResults(const MxuGroupTiming& timing, isa::ElementType type);
  MxuTiming PushRows(const char* op, isa::ElementType type, const Vreg& va, uint64_t cycle,
                     std::optional<uint64_t> acc_row);
  void AccumulateResults(const MxuGroupTiming& timing, isa::ElementType type, uint64_t row);
  MxuTiming PopBlock(Vreg& vd, uint64_t cycle, bool accumulate);

  MxuParams params_;
  uint32_t k_blocks_;       // nk = ceil(R / L): pushes per LHS row group
  uint32_t column_blocks_;  // nc = ceil(C / L): pops per S rows, weight pushes per row block
  bool timing_only_ = false;
  MxuTimer timer_;
  MxuStats replayed_;             // AddReplayed's sums
  uint64_t replayed_quiescent_ = 0;  // AddReplayed's latest quiescent cycle

  // Staging buffer: R x C raw elements, the type and count of the pushes since the last latch.
  std::vector<uint32_t> staging_;
  std::optional<isa::ElementType> staged_type_;
  uint32_t staged_pushes_ = 0;
  // Latched weights W: R x C raw elements and their type.
  std::vector<uint32_t> weights_;
  std::optional<isa::ElementType> latched_type_;
  // The partial LHS row group: P x R raw elements, its type and pushes so far.
  std::vector<uint32_t> group_;
  std::optional<isa::ElementType> group_type_;
  uint32_t group_pushes_ = 0;
  bool group_to_acc_ = false;  // the group in progress was pushed with mxu.push.acc
  // The accumulators: accumulator_rows x C words (allocated on first use; empty in timing-only
  // mode) and when each row's last addition is done.
  std::vector<uint32_t> acc_;
  std::vector<double> acc_ready_;
  // The result FIFO, its rows, and how many column blocks of its first S rows have been popped.
  std::deque<ResultGroup> fifo_;
  size_t fifo_rows_ = 0;
  uint32_t front_pops_ = 0;

  uint64_t weight_pushes_ = 0;
  uint64_t latches_ = 0;
  uint64_t pushes_ = 0;
  uint64_t row_groups_ = 0;
  uint64_t rows_ = 0;
  uint64_t pops_ = 0;
  uint64_t acc_reads_ = 0;
};

}  // namespace tpusim::models
