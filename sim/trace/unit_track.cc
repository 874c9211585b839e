#include "sim/trace/unit_track.h"

#include <algorithm>

namespace tpusim::sim {

void UnitTrack::Open(UnitOp& op, uint64_t begin) {
  open_ = true;
  slice_ = {};
  slice_.track = track_;
  slice_.category = category_;
  slice_.begin_ps = begin;
  slice_.end_ps = begin + op.duration_ps;
  count_ = 1;
  busy_cycles_ = op.busy_cycles;
  first_cycle_ = op.start_cycle;
  last_cycle_ = op.end_cycle;
  first_pc_ = op.pc;
  names_[0] = op.name;
  name_count_ = 1;
  more_names_ = false;
  if (op.flow_in != 0) slice_.flow_in.push_back(op.flow_in);
  if (op.flow_out != 0) slice_.flow_out.push_back(op.flow_out);
  if (!aggregate_) {
    slice_.name = std::string(op.name);
    slice_.annotations = std::move(op.details);
  }
}

void UnitTrack::Add(UnitOp op) {
  const uint64_t begin = std::max(op.begin_ps, end_ps_);
  end_ps_ = begin + op.duration_ps;
  // A slice may only end a flow that began no later than the slice itself.
  const bool joins = aggregate_ && open_ && (op.flow_in == 0 || op.flow_begin_ps <= slice_.begin_ps);
  if (!joins) {
    Close();
    Open(op, begin);
    if (!aggregate_) Close();  // one slice per operation: written at once
    return;
  }
  slice_.end_ps = std::max(slice_.end_ps, end_ps_);
  ++count_;
  busy_cycles_ += op.busy_cycles;
  last_cycle_ = std::max(last_cycle_, op.end_cycle);
  if (op.flow_in != 0) slice_.flow_in.push_back(op.flow_in);
  if (op.flow_out != 0) slice_.flow_out.push_back(op.flow_out);
  if (std::find(names_.begin(), names_.begin() + name_count_, op.name) == names_.begin() + name_count_) {
    if (name_count_ < names_.size()) {
      names_[name_count_++] = op.name;
    } else {
      more_names_ = true;
    }
  }
}

void UnitTrack::Close() {
  if (!open_) return;
  open_ = false;
  if (aggregate_) {
    std::string name;
    for (std::size_t i = 0; i < name_count_; ++i) {
      if (i > 0) name += ", ";
      name += names_[i];
    }
    if (more_names_) name += ", ...";
    slice_.name = std::move(name);
    slice_.annotations = {{"instructions", count_},
                          {"first_pc", uint64_t{first_pc_}},
                          {"begin_cycle", first_cycle_},
                          {"end_cycle", last_cycle_}};
  }
  slice_.annotations.push_back({"busy_cycles", busy_cycles_});
  sink_->WriteSlice(slice_);
}

}  // namespace tpusim::sim
