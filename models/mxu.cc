#include "models/mxu.h"

#include <algorithm>
#include <string>

#include "isa/error.h"
#include "isa/instruction_set.h"
#include "models/cycles.h"
#include "models/f32_bits.h"
#include "models/mxu_arithmetic.h"
#include "models/packed_rows.h"

namespace tpusim::models {
namespace {

using isa::ElementType;

uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

std::string Mnemonic(const char* op, ElementType type) {
  return std::string(op) + "." + std::string(isa::ElementTypeName(type));
}
std::string TypeName(ElementType type) { return std::string(isa::ElementTypeName(type)); }

uint32_t BitWidth(ElementType type) { return static_cast<uint32_t>(isa::ElementBitWidth(type)); }

const MxuParams& Validated(const MxuParams& params) {
  Validate(params);
  return params;
}

MxuTiming Whole(const MxuSpan& span) { return {FloorCycle(span.begin), CeilCycle(span.end)}; }

}  // namespace

double MxuUtilization(const MxuStats& stats, uint64_t elapsed_cycles) {
  return elapsed_cycles == 0 ? 0.0 : stats.pass_cycles / static_cast<double>(elapsed_cycles);
}

Mxu::Mxu(const MxuParams& params)
    : params_(Validated(params)),
      k_blocks_(CeilDiv(params.rows, params.lanes)),
      column_blocks_(CeilDiv(params.columns, params.lanes)),
      timer_(params) {}

uint32_t Mxu::RowsPerVreg(ElementType type) const {
  return isa::PackedRowsPerVreg(type, params_.sublanes);
}

uint32_t Mxu::PushesPerTile(ElementType type) const {
  return CeilDiv(params_.rows, RowsPerVreg(type)) * column_blocks_;
}

void Mxu::CheckType(const char* op, ElementType type) const {
  if (!IsMxuInputType(type)) {
    throw Error(std::string(op) + ": the MXU takes bf16, f32, f16, s8, f8e4m3fn and f8e5m2, not " +
                TypeName(type));
  }
  if (PassesFor(params_, type) == 0) {
    throw Error(Mnemonic(op, type) + ": this MXU takes no " + TypeName(type) + " input (" +
                std::string(PassesFieldFor(type)) + " is 0)");
  }
}

void Mxu::CheckVreg(const char* op, const Vreg& vreg) const {
  if (vreg.sublanes() == params_.sublanes && vreg.lanes() == params_.lanes) return;
  throw Error(std::string(op) + ": the MXU takes " + std::to_string(params_.sublanes) + " x " +
              std::to_string(params_.lanes) + " vregs, got " + std::to_string(vreg.sublanes()) +
              " x " + std::to_string(vreg.lanes()));
}

MxuTiming Mxu::WeightPush(ElementType type, const Vreg& va, uint64_t cycle) {
  CheckType("mxu.wpush", type);
  CheckVreg("mxu.wpush", va);
  if (staged_type_ && *staged_type_ != type) {
    throw Error(Mnemonic("mxu.wpush", type) + ": the weights staged since the last latch are " +
                TypeName(*staged_type_) + "; types cannot be mixed in one tile");
  }
  const uint32_t tile_pushes = PushesPerTile(type);
  if (staged_pushes_ >= tile_pushes) {
    throw Error(Mnemonic("mxu.wpush", type) + ": a " + std::to_string(params_.rows) + " x " +
                std::to_string(params_.columns) + " tile of " + TypeName(type) + " takes " +
                std::to_string(tile_pushes) + " weight pushes, and they have all been made; " +
                "latch before pushing more");
  }
  if (!timing_only_) StageWeights(type, va);
  staged_type_ = type;
  ++staged_pushes_;
  ++weight_pushes_;
  return Whole(
      timer_.WeightPush(cycle, params_.weight_load_cycles / static_cast<double>(tile_pushes)));
}

// The b-th push since the last latch fills weight rows [gP, gP + P) and columns [jL, jL + L),
// clipped to R x C, with g = b / nc and j = b mod nc.
void Mxu::StageWeights(ElementType type, const Vreg& va) {
  if (staging_.empty()) staging_.assign(size_t{params_.rows} * params_.columns, 0);
  const uint32_t width = BitWidth(type);
  const uint32_t rows_per_vreg = RowsPerVreg(type);
  const uint32_t first_row = staged_pushes_ / column_blocks_ * rows_per_vreg;
  const uint32_t first_column = staged_pushes_ % column_blocks_ * params_.lanes;
  const uint32_t rows = std::min(rows_per_vreg, params_.rows - first_row);
  const uint32_t columns = std::min(params_.lanes, params_.columns - first_column);
  for (uint32_t r = 0; r < rows; ++r) {
    uint32_t* row = &staging_[size_t{first_row + r} * params_.columns + first_column];
    for (uint32_t l = 0; l < columns; ++l) row[l] = PackedBits(va, width, r, l);
  }
}

MxuTiming Mxu::Latch(uint64_t cycle) {
  if (staged_pushes_ == 0) {
    throw Error("mxu.latch: nothing is staged (no mxu.wpush since the last latch)");
  }
  if (!timing_only_) {
    // (Empty only if the pushes ran timing-only: their data was never kept.)
    if (staging_.empty()) staging_.assign(size_t{params_.rows} * params_.columns, 0);
    weights_ = std::move(staging_);
    staging_.clear();  // the next push starts a zero tile
  }
  latched_type_ = staged_type_;
  staged_type_.reset();
  staged_pushes_ = 0;
  ++latches_;
  return Whole(timer_.Latch(cycle));
}

MxuTiming Mxu::Push(ElementType type, const Vreg& va, uint64_t cycle) {
  return PushRows("mxu.push", type, va, cycle, std::nullopt);
}

MxuTiming Mxu::PushAccumulate(ElementType type, const Vreg& va, uint64_t row, uint64_t cycle) {
  return PushRows("mxu.push.acc", type, va, cycle, row);
}

MxuTiming Mxu::PushRows(const char* op, ElementType type, const Vreg& va, uint64_t cycle,
                        std::optional<uint64_t> acc_row) {
  CheckType(op, type);
  CheckVreg(op, va);
  if (!latched_type_) throw Error(Mnemonic(op, type) + ": no weights are latched");
  if (*latched_type_ != type) {
    throw Error(Mnemonic(op, type) + ": the latched weights are " + TypeName(*latched_type_));
  }
  if (group_type_ && *group_type_ != type) {
    throw Error(Mnemonic(op, type) + ": the row group in progress was pushed as " +
                TypeName(*group_type_));
  }
  const bool to_acc = acc_row.has_value();
  if (group_pushes_ > 0 && group_to_acc_ != to_acc) {
    throw Error(Mnemonic(op, type) + ": the row group in progress was pushed with " +
                (group_to_acc_ ? "mxu.push.acc" : "mxu.push") + "; a group goes to one place");
  }
  const uint32_t rows = RowsPerVreg(type);
  if (to_acc && (*acc_row > params_.accumulator_rows || *acc_row + rows > params_.accumulator_rows)) {
    throw Error(Mnemonic(op, type) + ": accumulator rows [" + std::to_string(*acc_row) + ", " +
                std::to_string(*acc_row + rows) + ") are past the " +
                std::to_string(params_.accumulator_rows) + " rows of the accumulators");
  }
  if (!timing_only_) BufferLhs(type, va);
  group_type_ = type;
  group_to_acc_ = to_acc;
  ++group_pushes_;
  ++pushes_;
  if (group_pushes_ < k_blocks_) return Whole(timer_.PartialPush(cycle));

  const MxuGroupTiming timing = timer_.Group(cycle, rows, PassesFor(params_, type));
  if (to_acc) {
    AccumulateResults(timing, type, *acc_row);
  } else {
    AppendResults(timing, type);
  }
  group_.clear();
  group_type_.reset();
  group_pushes_ = 0;
  ++row_groups_;
  rows_ += rows;
  return {FloorCycle(timing.begin), CeilCycle(timing.end())};
}

// Row i of the group continues the sums of accumulator row (row + i), ready when its pass drains.
void Mxu::AccumulateResults(const MxuGroupTiming& timing, ElementType type, uint64_t row) {
  if (acc_ready_.empty()) acc_ready_.assign(params_.accumulator_rows, 0.0);
  for (uint32_t i = 0; i < timing.rows; ++i) {
    acc_ready_[row + i] = std::max(acc_ready_[row + i], timing.RowReady(i));
  }
  if (timing_only_) return;
  if (acc_.empty()) acc_.assign(size_t{params_.accumulator_rows} * params_.columns, 0);
  if (group_.empty()) group_.assign(size_t{timing.rows} * params_.rows, 0);
  if (weights_.empty()) weights_.assign(size_t{params_.rows} * params_.columns, 0);
  const std::span<uint32_t> out(&acc_[row * params_.columns], size_t{timing.rows} * params_.columns);
  MatmulRowsAccumulate(type, group_, weights_, timing.rows, params_.rows, params_.columns, out);
}

MxuTiming Mxu::AccumulatorRead(Vreg& vd, uint64_t row, uint64_t col, bool clear, uint64_t cycle) {
  const char* op = clear ? "mxu.acc.read.clear" : "mxu.acc.read";
  CheckVreg(op, vd);
  const uint32_t sublanes = params_.sublanes;
  if (row > params_.accumulator_rows || row + sublanes > params_.accumulator_rows) {
    throw Error(std::string(op) + ": accumulator rows [" + std::to_string(row) + ", " +
                std::to_string(row + sublanes) + ") are past the " +
                std::to_string(params_.accumulator_rows) + " rows of the accumulators");
  }
  if (col >= column_blocks_) {
    throw Error(std::string(op) + ": column block " + std::to_string(col) + " is past the " +
                std::to_string(column_blocks_) + " blocks of " + std::to_string(params_.lanes) +
                " columns of a " + std::to_string(params_.columns) + "-column MXU");
  }
  double ready = 0;
  if (!acc_ready_.empty()) {
    for (uint32_t s = 0; s < sublanes; ++s) ready = std::max(ready, acc_ready_[row + s]);
  }
  const MxuSpan span = timer_.Pop(cycle, ready);
  if (!timing_only_) {
    const uint32_t first_column = static_cast<uint32_t>(col) * params_.lanes;
    for (uint32_t s = 0; s < sublanes; ++s) {
      for (uint32_t l = 0; l < params_.lanes; ++l) {
        const uint32_t c = first_column + l;
        uint32_t value = 0;
        if (c < params_.columns && !acc_.empty()) {
          uint32_t& word = acc_[(row + s) * params_.columns + c];
          value = word;
          if (clear) word = 0;
        }
        vd.set_word(s, l, value);
      }
    }
  }
  ++acc_reads_;
  return Whole(span);
}

// Push b of a group supplies K-columns [bL, bL + L), clipped to R, of its P rows.
void Mxu::BufferLhs(ElementType type, const Vreg& va) {
  const uint32_t rows = RowsPerVreg(type);
  if (group_.empty()) group_.assign(size_t{rows} * params_.rows, 0);
  const uint32_t width = BitWidth(type);
  const uint32_t first_k = group_pushes_ * params_.lanes;
  const uint32_t ks = std::min(params_.lanes, params_.rows - first_k);
  for (uint32_t i = 0; i < rows; ++i) {
    uint32_t* row = &group_[size_t{i} * params_.rows + first_k];
    for (uint32_t l = 0; l < ks; ++l) row[l] = PackedBits(va, width, i, l);
  }
}

void Mxu::AppendResults(const MxuGroupTiming& timing, ElementType type) {
  ResultGroup& group = fifo_.emplace_back();
  group.timing = timing;
  group.integer = type == ElementType::kS8;
  fifo_rows_ += timing.rows;
  if (timing_only_) return;
  // Data never kept because earlier operations ran timing-only reads as zeros.
  if (group_.empty()) group_.assign(size_t{timing.rows} * params_.rows, 0);
  if (weights_.empty()) weights_.assign(size_t{params_.rows} * params_.columns, 0);
  group.words.resize(size_t{timing.rows} * params_.columns);
  MatmulRows(type, group_, weights_, timing.rows, params_.rows, params_.columns, group.words);
}

MxuTiming Mxu::Pop(Vreg& vd, uint64_t cycle) { return PopBlock(vd, cycle, false); }
MxuTiming Mxu::PopAccumulate(Vreg& vd, uint64_t cycle) { return PopBlock(vd, cycle, true); }

// The p-th pop of the FIFO's first S rows is column block p: vd[s][l] = row s, column pL + l
// (0 beyond C); after nc pops the rows leave.
MxuTiming Mxu::PopBlock(Vreg& vd, uint64_t cycle, bool accumulate) {
  const char* op = accumulate ? "mxu.pop.acc" : "mxu.pop";
  CheckVreg(op, vd);
  const uint32_t sublanes = params_.sublanes;
  if (fifo_rows_ < sublanes) {
    throw Error(std::string(op) + ": the result FIFO holds " + std::to_string(fifo_rows_) +
                " rows; a pop takes " + std::to_string(sublanes));
  }
  // The FIFO's first S rows: rows first .. first + S - 1 of its first group. RowReady grows
  // with the row (the same rounding of a larger product), so the last of them is the latest.
  ResultGroup& group = fifo_.front();
  const uint32_t first = group.left_rows;
  const double rows_ready = std::max(0.0, group.timing.RowReady(first + sublanes - 1));
  const MxuSpan span = timer_.Pop(cycle, rows_ready);

  if (!timing_only_) {
    const uint32_t first_column = front_pops_ * params_.lanes;
    const uint32_t columns = params_.columns;
    for (uint32_t s = 0; s < sublanes; ++s) {
      // Empty when the group ran timing-only: its rows read as zeros.
      const uint32_t* row =
          group.words.empty() ? nullptr : group.words.data() + size_t{first + s} * columns;
      for (uint32_t l = 0; l < params_.lanes; ++l) {
        const uint32_t c = first_column + l;
        const uint32_t value = row != nullptr && c < columns ? row[c] : 0;  // 0 beyond C
        if (!accumulate) {
          vd.set_word(s, l, value);
        } else if (group.integer) {
          vd.set_word(s, l, vd.word(s, l) + value);  // s32, wrapping
        } else {
          vd.set_word(s, l, ResultBits(vd.f32(s, l) + BitsToF32(value)));
        }
      }
    }
  }
  if (++front_pops_ == column_blocks_) {
    group.left_rows += sublanes;
    fifo_rows_ -= sublanes;
    if (group.left_rows == group.timing.rows) fifo_.pop_front();
    front_pops_ = 0;
  }
  ++pops_;
  return Whole(span);
}

uint64_t Mxu::quiescent_cycle() const {
  return std::max(CeilCycle(timer_.quiescent()), replayed_quiescent_);
}

void Mxu::AddReplayed(const MxuStats& counts, uint64_t quiescent_cycle) {
  AddCounts(replayed_, counts);
  replayed_quiescent_ = std::max(replayed_quiescent_, quiescent_cycle);
}

void AddCounts(MxuStats& to, const MxuStats& delta) {
  to.weight_pushes += delta.weight_pushes;
  to.latches += delta.latches;
  to.pushes += delta.pushes;
  to.row_groups += delta.row_groups;
  to.rows += delta.rows;
  to.pops += delta.pops;
  to.accumulator_reads += delta.accumulator_reads;
  to.macs += delta.macs;
  to.busy_cycles += delta.busy_cycles;
  to.pass_cycles += delta.pass_cycles;
  to.fill_cycles += delta.fill_cycles;
  to.fills += delta.fills;
  to.weight_load_cycles += delta.weight_load_cycles;
}

MxuStats CountsSince(const MxuStats& now, const MxuStats& before) {
  MxuStats delta;
  delta.weight_pushes = now.weight_pushes - before.weight_pushes;
  delta.latches = now.latches - before.latches;
  delta.pushes = now.pushes - before.pushes;
  delta.row_groups = now.row_groups - before.row_groups;
  delta.rows = now.rows - before.rows;
  delta.pops = now.pops - before.pops;
  delta.accumulator_reads = now.accumulator_reads - before.accumulator_reads;
  delta.macs = now.macs - before.macs;
  delta.busy_cycles = now.busy_cycles - before.busy_cycles;
  delta.pass_cycles = now.pass_cycles - before.pass_cycles;
  delta.fill_cycles = now.fill_cycles - before.fill_cycles;
  delta.fills = now.fills - before.fills;
  delta.weight_load_cycles = now.weight_load_cycles - before.weight_load_cycles;
  return delta;
}

MxuStats Mxu::stats() const {
  MxuStats stats;
  stats.weight_pushes = weight_pushes_;
  stats.latches = latches_;
  stats.pushes = pushes_;
  stats.row_groups = row_groups_;
  stats.rows = rows_;
  stats.pops = pops_;
  stats.accumulator_reads = acc_reads_;
  stats.macs = rows_ * params_.rows * params_.columns;
  stats.busy_cycles = timer_.busy_cycles();
  stats.pass_cycles = timer_.pass_cycles();
  stats.fill_cycles = timer_.fill_cycles();
  stats.fills = timer_.fills();
  stats.weight_load_cycles = timer_.weight_load_cycles();
  AddCounts(stats, replayed_);
  return stats;
}

}  // namespace tpusim::models
