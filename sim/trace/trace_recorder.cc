#include "sim/trace/trace_recorder.h"

#include <algorithm>
#include <cmath>

#include "isa/disassembler.h"
#include "isa/error.h"
#include "isa/instruction_set.h"

namespace tpusim::sim {
namespace {

using traces::Annotation;
using traces::CounterUnit;

// Flows kept waiting for a reader; older ones are dropped (their arrows stay unterminated).
constexpr std::size_t kMaxPendingFlows = 64;

bool Overlaps(uint64_t low_a, uint64_t high_a, uint64_t low_b, uint64_t high_b) {
  return low_a < high_b && low_b < high_a;
}

std::string SpaceName(int space) {
  return std::string(isa::MemorySpaceName(static_cast<isa::MemorySpace>(space)));
}

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

TraceRecorder::TraceRecorder(traces::TraceSink& sink, const TraceRecorderSetup& setup,
                             const isa::Program& program)
    : sink_(sink), setup_(setup), program_(program), clock_(setup.clock_mhz), period_ps_(1e6 / setup.clock_mhz) {
  mnemonics_.reserve(static_cast<std::size_t>(program.instructions_size()));
  for (const isa::Instruction& instruction : program.instructions()) {
    const isa::InstructionInfo* info = isa::FindInstruction(instruction.opcode());
    mnemonics_.push_back(info != nullptr ? info->mnemonic : std::string_view("?"));
    step_ends_.push_back(instruction.opcode() == isa::OPCODE_SEM_WAIT);
  }
  process_ = sink_.AddProcess(setup_.process_name, static_cast<int32_t>(setup_.core), static_cast<int32_t>(setup_.core));
  int32_t order = 0;
  if (setup_.core == 0) {
    xla_modules_ = sink_.AddSliceTrack(process_, "XLA Modules", order++);
    xla_ops_ = sink_.AddSliceTrack(process_, "XLA Ops", order++);
  }
  const bool aggregate = setup_.level == TraceLevel::kUnits;
  const auto unit = [&](const std::string& name, const std::string& category, bool merge) {
    tracks_.push_back(std::make_unique<UnitTrack>(&sink_, sink_.AddSliceTrack(process_, name, order++), category, merge));
    return tracks_.back().get();
  };
  if (units()) {
    scalar_ = unit("Scalar core", "scalar", aggregate);
    for (uint32_t i = 0; i < setup_.mxu_count; ++i) mxus_.push_back(unit("MXU " + std::to_string(i), "mxu", aggregate));
    vpu_units_.push_back(unit("VPU", "vpu", aggregate));
    vpu_units_.push_back(unit("VPU transcendental", "vpu", aggregate));
    vpu_units_.push_back(unit("VPU cross-lane", "vpu", aggregate));
    vector_memory_ = unit("VPU load/store", "vpu", aggregate);
    for (const std::string& name : setup_.dma_engine_names) dma_engines_.push_back(unit(name, "dma", false));
    pcie_ = sink_.AddSliceTrack(process_, "PCIe link", order++);
    pcie_lanes_.assign(setup_.dma_engine_names.size(), nullptr);
  }
  const uint64_t bin_ps = Ps(setup_.counter_bin_cycles);
  bin_ps_ = bin_ps;
  const double gbps = 1000.0 / static_cast<double>(bin_ps);  // bytes per bin -> GB/s
  hbm_read_ = std::make_unique<BinnedCounter>(
      &sink_, sink_.AddCounterTrack(process_, "HBM read bandwidth", CounterUnit::kRate, "GB/s", order++), bin_ps, gbps);
  hbm_write_ = std::make_unique<BinnedCounter>(
      &sink_, sink_.AddCounterTrack(process_, "HBM write bandwidth", CounterUnit::kRate, "GB/s", order++), bin_ps, gbps);
  vmem_in_use_ = sink_.AddCounterTrack(process_, "VMEM in use", CounterUnit::kBytes, "", order++);
  const double percent = setup_.mxu_count > 0 ? 100.0 / (static_cast<double>(bin_ps) * setup_.mxu_count) : 0.0;
  mxu_utilization_ = std::make_unique<BinnedCounter>(
      &sink_, sink_.AddCounterTrack(process_, "MXU utilization", CounterUnit::kPercent, "%", order++), bin_ps, percent);
  outstanding_ = sink_.AddCounterTrack(process_, "Outstanding DMAs", CounterUnit::kCount, "", order++);
  dma_queues_.resize(setup_.dma_engine_names.size());
  dma_busy_until_ps_.assign(setup_.dma_engine_names.size(), 0);
  mxu_end_ps_.assign(setup_.mxu_count, 0);
}

uint64_t TraceRecorder::Ps(double cycles) const {
  return static_cast<uint64_t>(std::llround(cycles * period_ps_));
}

std::vector<Annotation> TraceRecorder::InstructionDetails(uint32_t pc) const {
  return {{"pc", uint64_t{pc}}, {"instruction", isa::DisassembleInstruction(program_.instructions(static_cast<int>(pc)))}};
}

void TraceRecorder::OnScalarInstruction(uint32_t pc, uint64_t issue_cycle) {
  core_ps_ = Ps(issue_cycle);
  if (units()) {
    // The core is busy in each cycle it issues in (ScalarCoreStats::issue_cycles).
    const bool new_cycle = issue_cycle != last_scalar_cycle_;
    UnitOp op;
    op.begin_ps = core_ps_;
    op.duration_ps = new_cycle ? Ps(issue_cycle + 1) - core_ps_ : 0;
    op.busy_cycles = new_cycle ? 1.0 : 0.0;
    op.name = mnemonics_[pc];
    op.pc = pc;
    op.start_cycle = issue_cycle;
    op.end_cycle = issue_cycle + 1;
    if (all()) op.details = InstructionDetails(pc);
    scalar_->Add(std::move(op));
    // A sem.wait ends a kernel step: the units' slices so far close with it.
    if (step_ends_[pc] && setup_.level == TraceLevel::kUnits) CloseUnitSlices();
  }
  last_scalar_cycle_ = issue_cycle;
  mxu_utilization_->Flush(core_ps_);
}

void TraceRecorder::CloseUnitSlices() {
  for (const auto& track : tracks_) track->Close();
}

void TraceRecorder::OnMark(uint32_t /*pc*/, uint64_t cycle) {
  CloseUnitSlices();
  const uint64_t time = Ps(cycle);
  sink_.WriteCounter(vmem_in_use_, kernel_begin_ps_, static_cast<double>(vmem_high_));
  kernel_begin_ps_ = std::max(kernel_begin_ps_, time);
  vmem_high_ = 0;
}

void TraceRecorder::NoteVmem(uint64_t /*low*/, uint64_t high) { vmem_high_ = std::max(vmem_high_, high); }

void TraceRecorder::OnVpu(const models::VpuActivity& activity) {
  if (!units()) return;
  UnitOp op;
  op.begin_ps = Ps(activity.issue_cycle);
  op.duration_ps = Ps(activity.busy_cycles);
  op.busy_cycles = activity.busy_cycles;
  op.name = mnemonics_[activity.pc];
  op.pc = activity.pc;
  op.start_cycle = activity.issue_cycle;
  op.end_cycle = activity.ready_cycle;
  if (all()) {
    op.details = InstructionDetails(activity.pc);
    op.details.push_back({"issue_cycle", activity.issue_cycle});
    op.details.push_back({"ready_cycle", activity.ready_cycle});
  }
  vpu_units_.at(static_cast<std::size_t>(activity.unit))->Add(std::move(op));
}

uint64_t TraceRecorder::TakeFlow(uint64_t low, uint64_t high, uint64_t* begin_ps) {
  for (auto it = flows_.begin(); it != flows_.end(); ++it) {
    if (!Overlaps(low, high, it->low, it->high)) continue;
    const uint64_t id = it->id;
    *begin_ps = it->begin_ps;
    flows_.erase(it);
    return id;
  }
  return 0;
}

void TraceRecorder::OnVectorMemory(const models::VectorMemoryActivity& activity) {
  NoteVmem(activity.address, activity.address + activity.bytes);
  if (!units()) return;
  UnitOp op;
  op.begin_ps = Ps(activity.issue_cycle);
  op.duration_ps = Ps(activity.issue_cycle + 1) - op.begin_ps;  // its VPU issue slot
  op.busy_cycles = 1;
  op.name = mnemonics_[activity.pc];
  op.pc = activity.pc;
  op.start_cycle = activity.issue_cycle;
  op.end_cycle = activity.complete_cycle;
  if (activity.load && !flows_.empty()) {
    op.flow_in = TakeFlow(activity.address, activity.address + activity.bytes, &op.flow_begin_ps);
  }
  if (all()) {
    op.details = InstructionDetails(activity.pc);
    op.details.push_back({"address", Hex(activity.address)});
    op.details.push_back({"bytes", activity.bytes});
    op.details.push_back({"issue_cycle", activity.issue_cycle});
    op.details.push_back({"complete_cycle", activity.complete_cycle});
  }
  vector_memory_->Add(std::move(op));
}

void TraceRecorder::OnMxu(const models::MxuActivity& activity) {
  if (activity.mxu >= mxu_end_ps_.size()) throw Error("trace: MXU " + std::to_string(activity.mxu) + " was not declared");
  // The array's occupancy: its busy cycles, from its start or when the previous one ended.
  const uint64_t begin = std::max(Ps(activity.start_cycle), mxu_end_ps_[activity.mxu]);
  const uint64_t duration = Ps(activity.busy_cycles);
  mxu_end_ps_[activity.mxu] = begin + duration;
  if (duration > 0) mxu_utilization_->Add(begin, begin + duration, static_cast<double>(duration));
  if (!units()) return;
  UnitOp op;
  op.begin_ps = begin;
  op.duration_ps = duration;
  op.busy_cycles = activity.busy_cycles;
  op.name = mnemonics_[activity.pc];
  op.pc = activity.pc;
  op.start_cycle = activity.start_cycle;
  op.end_cycle = activity.done_cycle;
  if (all()) {
    op.details = InstructionDetails(activity.pc);
    op.details.push_back({"start_cycle", activity.start_cycle});
    op.details.push_back({"done_cycle", activity.done_cycle});
  }
  mxus_[activity.mxu]->Add(std::move(op));
}

void TraceRecorder::WriteOutstanding(uint64_t time_ps, int64_t before) {
  if (units()) {
    sink_.WriteCounter(outstanding_, time_ps, static_cast<double>(outstanding_count_));
    return;
  }
  // --trace-level ops keeps the file small on long runs: the peak of each counter bin, written at
  // the bin's start (a value that does not change is not repeated).
  const uint64_t bin = time_ps / bin_ps_;
  if (bin != outstanding_bin_) {
    FlushOutstanding();
    outstanding_bin_ = bin;
    outstanding_peak_ = std::max(before, outstanding_count_);
  } else {
    outstanding_peak_ = std::max(outstanding_peak_, outstanding_count_);
  }
}

void TraceRecorder::FlushOutstanding() {
  if (outstanding_peak_ < 0 || outstanding_peak_ == outstanding_written_) return;
  sink_.WriteCounter(outstanding_, outstanding_bin_ * bin_ps_, static_cast<double>(outstanding_peak_));
  outstanding_written_ = outstanding_peak_;
}

void TraceRecorder::FlushCounters() {
  uint64_t watermark = now_ps_;
  for (const auto& queue : dma_queues_) {
    if (!queue.empty()) watermark = std::min(watermark, queue.front().issue.submit_ps);
  }
  hbm_read_->Flush(watermark);
  hbm_write_->Flush(watermark);
}

void TraceRecorder::OnDmaIssued(const models::DmaIssue& issue) {
  if (issue.engine >= dma_queues_.size()) {
    throw Error("trace: DMA engine " + std::to_string(issue.engine) + " was not declared");
  }
  dma_queues_[issue.engine].push_back({issue});
  now_ps_ = std::max(now_ps_, issue.submit_ps);
  ++outstanding_count_;
  WriteOutstanding(now_ps_, outstanding_count_ - 1);
  if (issue.destination_space == isa::MEMORY_SPACE_VMEM) {
    NoteVmem(issue.destination_address, issue.destination_address + issue.destination_bytes);
  }
}

void TraceRecorder::OnDmaCompleted(const models::DmaDone& done) {
  if (done.engine >= dma_queues_.size() || dma_queues_[done.engine].empty()) {
    throw Error("trace: a DMA completed on engine " + std::to_string(done.engine) + " that was never issued");
  }
  const models::DmaIssue issue = dma_queues_[done.engine].front().issue;
  dma_queues_[done.engine].pop_front();
  now_ps_ = std::max(now_ps_, done.completed_ps);
  --outstanding_count_;
  WriteOutstanding(now_ps_, outstanding_count_ + 1);
  const double bytes = static_cast<double>(done.payload_bytes);
  if (issue.source_space == isa::MEMORY_SPACE_HBM) hbm_read_->Add(done.started_ps, done.completed_ps, bytes);
  if (issue.destination_space == isa::MEMORY_SPACE_HBM) hbm_write_->Add(done.started_ps, done.completed_ps, bytes);
  FlushCounters();
  if (!units()) return;
  const uint64_t begin_ps = std::max(done.started_ps, dma_busy_until_ps_[done.engine]);
  dma_busy_until_ps_[done.engine] = std::max(dma_busy_until_ps_[done.engine], done.completed_ps);
  const double cycles = static_cast<double>(done.completed_ps - begin_ps) / period_ps_;
  const std::string name = SpaceName(issue.source_space) + " -> " + SpaceName(issue.destination_space);
  UnitOp op;
  op.begin_ps = begin_ps;
  op.duration_ps = done.completed_ps - begin_ps;
  op.busy_cycles = cycles;
  op.name = name;
  op.pc = issue.pc;
  op.details = {{"pc", uint64_t{issue.pc}},
                {"source", SpaceName(issue.source_space) + " @ " + Hex(issue.source_address)},
                {"destination", SpaceName(issue.destination_space) + " @ " + Hex(issue.destination_address)},
                {"bytes", done.payload_bytes},
                {"source_address", issue.source_address},
                {"destination_address", issue.destination_address},
                {"cycles", cycles}};
  const bool host = issue.source_space == isa::MEMORY_SPACE_HOST || issue.destination_space == isa::MEMORY_SPACE_HOST;
  if (host) {
    UnitTrack*& lane = pcie_lanes_.at(done.engine);
    if (lane == nullptr) {
      tracks_.push_back(std::make_unique<UnitTrack>(
          &sink_, sink_.AddSliceTrack(pcie_, "via " + setup_.dma_engine_names[done.engine], static_cast<int32_t>(done.engine)),
          "pcie", false));
      lane = tracks_.back().get();
    }
    UnitOp copy = op;
    lane->Add(std::move(copy));
  }
  if (issue.destination_space == isa::MEMORY_SPACE_VMEM) {
    const uint64_t low = issue.destination_address, high = low + issue.destination_bytes;
    // A newer write to the same bytes supersedes a flow nobody read.
    std::erase_if(flows_, [&](const PendingFlow& flow) { return Overlaps(low, high, flow.low, flow.high); });
    if (flows_.size() == kMaxPendingFlows) flows_.pop_front();
    // Flow ids are the sink's: each core's recorder takes every core_count-th.
    op.flow_out = next_flow_ * setup_.core_count + setup_.core + 1;
    ++next_flow_;
    flows_.push_back({low, high, op.flow_out, done.started_ps});
  }
  dma_engines_.at(done.engine)->Add(std::move(op));
}

void TraceRecorder::Finish(uint64_t end_cycle, const std::vector<XlaSlice>& modules, const std::vector<XlaSlice>& ops) {
  CloseUnitSlices();
  const uint64_t end_ps = Ps(end_cycle);
  sink_.WriteCounter(vmem_in_use_, kernel_begin_ps_, static_cast<double>(vmem_high_));
  sink_.WriteCounter(vmem_in_use_, std::max(end_ps, kernel_begin_ps_), 0.0);
  hbm_read_->FlushAll(end_ps);
  hbm_write_->FlushAll(end_ps);
  mxu_utilization_->FlushAll(end_ps);
  if (!units()) {
    FlushOutstanding();
    if (outstanding_written_ != 0) sink_.WriteCounter(outstanding_, std::max(end_ps, outstanding_bin_ * bin_ps_), 0.0);
  }
  const auto write = [&](traces::TrackId track, const std::vector<XlaSlice>& slices, const char* category) {
    for (const XlaSlice& line : slices) {
      traces::Slice slice;
      slice.track = track;
      slice.name = line.name;
      slice.category = category;
      slice.begin_ps = Ps(line.begin_cycle);
      slice.end_ps = Ps(line.end_cycle);
      slice.annotations = line.annotations;
      slice.annotations.push_back({"cycles", line.end_cycle - line.begin_cycle});
      sink_.WriteSlice(slice);
    }
  };
  if (setup_.core != 0) return;
  write(xla_modules_, modules, "xla_module");
  write(xla_ops_, ops, "xla_op");
  sink_.Finish();
}

}  // namespace tpusim::sim
