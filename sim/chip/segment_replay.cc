#include "sim/chip/segment_replay.h"

#include <algorithm>
#include <utility>

namespace tpusim::sim {

SegmentReplay::SegmentReplay(std::vector<ReplayCore> cores, std::vector<models::Memory*> memories, bool replay)
    : cores_(std::move(cores)), memories_(std::move(memories)), replay_(replay) {}

std::size_t SegmentReplay::KeyHash::operator()(const Key& key) const {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the words
  for (uint64_t word : key.words) {
    hash ^= word;
    hash *= 1099511628211ull;
  }
  return static_cast<std::size_t>(hash);
}

SegmentReplay::~SegmentReplay() { DetachLogs(); }

void SegmentReplay::DetachLogs() {
  for (const ReplayCore& core : cores_) core.scalar_core->set_segment_log(nullptr);
}

void SegmentReplay::BeforeSync(uint32_t core) {
  if (!recording_) return;
  models::ScalarCore& scalar = *cores_[core].scalar_core;
  ends_[core] = scalar.SegmentEnd(starts_[core].scalar, starts_[core].marks);
  scalar.set_segment_log(nullptr);
  ended_[core] = true;
}

void SegmentReplay::AfterSync(uint32_t core) {
  const uint64_t round = round_;
  if (++resumed_ < cores_.size()) {
    // Out of the barrier before the others (in the same instant): wait for them, so the round is
    // decided with every core's state as it starts.
    while (round_ == round) sc_core::wait(all_resumed_);
  } else {
    resumed_ = 0;
    StartRound();
    ++round_;
    all_resumed_.notify();  // immediate: the others go on in this evaluation phase
  }
  if (replaying_ != nullptr) cores_[core].scalar_core->ReplaySegment(replaying_->cores[core].end);
}

bool SegmentReplay::Quiet() const {
  const models::ScalarCore& first = *cores_[0].scalar_core;
  const uint64_t anchor = first.anchor_cycle();
  for (const ReplayCore& core : cores_) {
    const models::ScalarCore& scalar = *core.scalar_core;
    if (scalar.anchor_cycle() != anchor || scalar.anchor_time() != first.anchor_time()) return false;
    if (!scalar.settled() || !core.dma->idle()) return false;
    if (core.vpu->stats().all_complete > anchor) return false;
    for (const models::Mxu* mxu : core.mxus) {
      if (mxu->quiescent_cycle() > anchor || !mxu->between_sequences()) return false;
    }
  }
  return true;
}

SegmentReplay::Key SegmentReplay::KeyNow() const {
  Key key;
  for (const ReplayCore& core : cores_) {
    key.words.push_back(core.scalar_core->pc());
    key.words.push_back(core.scalar_core->slot_after_anchor());
    for (const models::Semaphore* semaphore : core.semaphores) {
      key.words.push_back(static_cast<uint64_t>(semaphore->value()));
    }
    for (const models::Mxu* mxu : core.mxus) key.words.push_back(static_cast<uint64_t>(mxu->latched_type()));
  }
  return key;
}

bool SegmentReplay::InputsMatch(const Record& record) const {
  std::vector<uint8_t> now;
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    const ReplayCore& core = cores_[c];
    const CoreRecord& recorded = record.cores[c];
    for (const auto& [index, value] : recorded.register_inputs) {
      if (core.scalar_core->reg(index) != value) return false;
    }
    for (const models::MemoryBytes& input : recorded.memory_inputs) {
      now.resize(input.bytes.size());
      core.memories[input.space]->Read(input.address, now);
      if (now != input.bytes) return false;
    }
  }
  return true;
}

void SegmentReplay::BeginRecording() {
  recording_ = true;
  recording_key_ = KeyNow();
  recording_anchor_ = cores_[0].scalar_core->anchor_cycle();
  logs_.assign(cores_.size(), {});
  starts_.assign(cores_.size(), {});
  ends_.assign(cores_.size(), {});
  ended_.assign(cores_.size(), false);
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    const ReplayCore& core = cores_[c];
    CoreStart& start = starts_[c];
    start.scalar = core.scalar_core->stats();
    start.marks = core.scalar_core->marks().size();
    start.vpu = core.vpu->stats();
    for (const models::Mxu* mxu : core.mxus) start.mxus.push_back(mxu->stats());
    start.dma = core.dma->stats();
    core.scalar_core->set_segment_log(&logs_[c]);
  }
  memory_starts_.clear();
  for (const models::Memory* memory : memories_) memory_starts_.push_back(memory->stats());
}

void SegmentReplay::FinishRecording() {
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    if (!ended_[c] || logs_[c].spoiled()) return;
  }
  std::vector<std::unique_ptr<Record>>& variants = records_[recording_key_];
  if (variants.size() >= kMaxVariants) return;
  auto record = std::make_unique<Record>();
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    const ReplayCore& core = cores_[c];
    const CoreStart& start = starts_[c];
    const models::SegmentLog& log = logs_[c];
    CoreRecord& out = record->cores.emplace_back();
    out.register_inputs = log.register_inputs();
    out.memory_inputs = log.memory_inputs();
    for (const models::MemoryRange& range : log.memory_writes()) {
      out.memory_writes.push_back({range.space, range.address, core.memories[range.space]->Read(range.address, range.size)});
    }
    out.end = std::move(ends_[c]);
    record->cycles = std::max(record->cycles, out.end.slot / core.scalar_core->issue_width());
    const int64_t anchor = static_cast<int64_t>(recording_anchor_);
    const auto after = [&](uint64_t cycle) { return static_cast<int64_t>(cycle) - anchor; };
    const models::VpuStats vpu = core.vpu->stats();
    out.vpu_counts = models::CountsSince(vpu, start.vpu);
    const bool vpu_worked = out.vpu_counts.instructions > 0;
    out.vpu_last_issue = vpu_worked ? after(vpu.last_issue) : -1;
    out.vpu_all_complete = vpu_worked ? after(vpu.all_complete) : -1;
    for (std::size_t m = 0; m < core.mxus.size(); ++m) {
      out.mxu_counts.push_back(models::CountsSince(core.mxus[m]->stats(), start.mxus[m]));
      const uint64_t quiescent = core.mxus[m]->quiescent_cycle();
      out.mxu_quiescent.push_back(quiescent > recording_anchor_ ? after(quiescent) : -1);
    }
    const std::vector<models::DmaEngineStats> dma = core.dma->stats();
    for (std::size_t e = 0; e < dma.size(); ++e) out.dma_counts.push_back(models::CountsSince(dma[e], start.dma[e]));
    for (const models::Semaphore* semaphore : core.semaphores) out.semaphores.push_back(semaphore->value());
    for (const models::Mxu* mxu : core.mxus) out.mxu_latched.push_back(mxu->latched_type());
  }
  for (std::size_t m = 0; m < memories_.size(); ++m) {
    record->memory_counts.push_back(models::CountsSince(memories_[m]->stats(), memory_starts_[m]));
  }
  variants.push_back(std::move(record));
  ++stats_.recorded;
}

void SegmentReplay::Replay(const Record& record) {
  const uint64_t anchor = cores_[0].scalar_core->anchor_cycle();
  const auto at = [&](int64_t after) { return after < 0 ? 0 : anchor + static_cast<uint64_t>(after); };
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    const ReplayCore& core = cores_[c];
    const CoreRecord& recorded = record.cores[c];
    for (const models::MemoryBytes& write : recorded.memory_writes) {
      core.memories[write.space]->Write(write.address, write.bytes);
    }
    for (std::size_t s = 0; s < core.semaphores.size(); ++s) {
      models::Semaphore& semaphore = *core.semaphores[s];
      const int64_t target = recorded.semaphores[s];
      if (target > semaphore.value()) semaphore.Signal(target - semaphore.value());
      if (target < semaphore.value()) semaphore.Wait(semaphore.value() - target);  // holds more: no wait
    }
    core.vpu->AddReplayed(recorded.vpu_counts, at(recorded.vpu_last_issue), at(recorded.vpu_all_complete));
    for (std::size_t m = 0; m < core.mxus.size(); ++m) {
      core.mxus[m]->AddReplayed(recorded.mxu_counts[m], at(recorded.mxu_quiescent[m]));
      core.mxus[m]->set_latched_type(recorded.mxu_latched[m]);
    }
    core.dma->AddReplayedCounts(recorded.dma_counts);
  }
  for (std::size_t m = 0; m < memories_.size(); ++m) memories_[m]->AddReplayedCounts(record.memory_counts[m]);
}

void SegmentReplay::StartRound() {
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - round_started_).count();
  round_started_ = now;
  if (recording_) stats_.recording_seconds += seconds;
  if (!recording_ && replaying_ == nullptr) stats_.unrecorded_seconds += seconds;
  ++stats_.rounds;
  replaying_ = nullptr;
  const bool quiet = Quiet();
  if (recording_) {
    if (quiet) FinishRecording();
    recording_ = false;
    for (const ReplayCore& core : cores_) core.scalar_core->set_segment_log(nullptr);
  }
  if (!quiet) return;
  ++stats_.quiet;
  if (!replay_) return;
  const Key key = KeyNow();
  const auto found = records_.find(key);
  if (found != records_.end()) {
    for (const std::unique_ptr<Record>& record : found->second) {
      if (!InputsMatch(*record)) continue;
      Replay(*record);
      replaying_ = record.get();
      ++stats_.replayed;
      stats_.replayed_cycles += record->cycles;
      return;
    }
    if (found->second.size() >= kMaxVariants) return;
  }
  BeginRecording();
}

}  // namespace tpusim::sim
