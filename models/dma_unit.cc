// sc_spawn needs this before the first SystemC include.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <systemc>

#include "models/dma_unit.h"

#include <deque>
#include <memory>
#include <utility>

#include "isa/error.h"
#include "models/sc_context.h"

namespace tpusim::models {

struct DmaUnit::State {
  struct Pending {
    DmaTransfer transfer;
    sc_core::sc_time submitted;
  };
  struct Engine {
    explicit Engine(DmaEngine engine) : engine(std::move(engine)) {}
    DmaEngine engine;
    std::deque<Pending> queue;
    bool thread_running = false;
    // A transfer was queued while the thread runs (a pointer: sc_event does not move).
    std::unique_ptr<sc_core::sc_event> work = std::make_unique<sc_core::sc_event>();
  };

  std::string name;
  DmaParams params;
  std::vector<Engine> engines;
  bool move_data = true;
  bool abandoned = false;  // the DmaUnit is gone: threads must stop
  std::vector<DmaEngineStats> replayed;  // AddReplayedCounts's sums, by engine (empty until then)
  std::function<void(const DmaCompletion&)> on_completion;
  sc_core::sc_event queue_space;  // a queue got room
};

DmaUnit::DmaUnit(std::string name, const DmaParams& params) : state_(std::make_shared<State>()) {
  Validate(params);
  state_->name = std::move(name);
  state_->params = params;
  state_->engines.reserve(params.engine_count);
  const auto tables = std::make_shared<DimTableCache>();  // one for all engines
  const auto plans = std::make_shared<DmaPlanCache>();
  for (uint32_t e = 0; e < params.engine_count; ++e) {
    state_->engines.emplace_back(DmaEngine(state_->name + " engine " + std::to_string(e), params));
    state_->engines.back().engine.SharePlanning(tables, plans);
  }
}

DmaUnit::~DmaUnit() { state_->abandoned = true; }

const std::string& DmaUnit::name() const { return state_->name; }
uint32_t DmaUnit::engine_count() const { return state_->params.engine_count; }
void DmaUnit::set_timing_only(bool timing_only) { state_->move_data = !timing_only; }
void DmaUnit::set_completion_callback(std::function<void(const DmaCompletion&)> callback) {
  state_->on_completion = std::move(callback);
}

bool DmaUnit::TrySubmit(uint32_t engine, const DmaTransfer& transfer) {
  if (engine >= state_->engines.size()) {
    throw Error(state_->name + ": no DMA engine " + std::to_string(engine) + " (it has " +
                std::to_string(state_->engines.size()) + ")");
  }
  ValidateTransfer(transfer);
  State::Engine& target = state_->engines[engine];
  if (target.queue.size() >= state_->params.queue_depth_entries) return false;
  target.queue.push_back({transfer, sc_core::sc_time_stamp()});
  if (target.thread_running) target.work->notify(sc_core::SC_ZERO_TIME);
  if (!target.thread_running) {
    target.thread_running = true;
    sc_core::sc_spawn_options options;
    options.set_stack_size(256 << 10);  // planning and the completion callback run on it
    sc_core::sc_spawn([state = state_, engine] { RunEngine(state, engine); },
                      sc_core::sc_gen_unique_name("dma_engine"), &options);
  }
  return true;
}

void DmaUnit::Submit(uint32_t engine, const DmaTransfer& transfer) {
  while (!TrySubmit(engine, transfer)) {
    if (!InSystemCThread()) {
      throw Error(state_->name + ": the queue of engine " + std::to_string(engine) +
                  " is full and Submit() was called outside a SystemC thread, so it cannot wait");
    }
    sc_core::wait(state_->queue_space);
  }
}

std::size_t DmaUnit::queued(uint32_t engine) const {
  return state_->engines.at(engine).queue.size();
}

bool DmaUnit::idle() const {
  for (const State::Engine& engine : state_->engines) {
    if (!engine.queue.empty() || engine.engine.busy() || engine.thread_running) return false;
  }
  return true;
}

std::vector<DmaEngineStats> DmaUnit::stats() const {
  std::vector<DmaEngineStats> stats;
  for (const State::Engine& engine : state_->engines) stats.push_back(engine.engine.stats());
  for (std::size_t e = 0; e < state_->replayed.size(); ++e) AddCounts(stats[e], state_->replayed[e]);
  return stats;
}

void DmaUnit::AddReplayedCounts(const std::vector<DmaEngineStats>& delta) {
  state_->replayed.resize(delta.size());
  for (std::size_t e = 0; e < delta.size(); ++e) AddCounts(state_->replayed[e], delta[e]);
}

namespace {

// The bytes a transfer copies: its region's elements.
uint64_t PayloadBytes(const DmaTransfer& transfer) {
  uint64_t elements = 1;
  for (int64_t size : transfer.sizes) elements *= static_cast<uint64_t>(size);
  return elements * static_cast<uint64_t>(isa::ElementByteWidth(transfer.source.shape.element_type));
}

}  // namespace

void DmaUnit::RunEngine(const std::shared_ptr<State>& state, uint32_t index) {
  State::Engine& slot = state->engines[index];
  DmaEngine& engine = slot.engine;
  // What a transfer's completion needs, for the transfers begun, in order.
  struct Begun {
    sc_core::sc_time submitted;
    Semaphore* semaphore = nullptr;
    int64_t increment = 0;
  };
  std::deque<Begun> begun;
  // Transfers whose every request has issued, waiting for their completion, in queue order: each
  // completes (signals its semaphore, reports) at the later of its own completion and its
  // predecessor's, so completions come in queue order.
  struct Completing {
    DmaCompletion completion;
    Begun begun;
  };
  std::deque<Completing> completing;
  // Waits until `time`, or less when a transfer arrives that can begin now (`can_begin`); false if
  // abandoned.
  const auto wait_for = [&](const sc_core::sc_time& time, bool can_begin) {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (time > now) {
      if (can_begin) {
        sc_core::wait(time - now, *slot.work);
      } else {
        sc_core::wait(time - now);
      }
    }
    return !state->abandoned;
  };
  while (!state->abandoned) {
    bool can_begin = engine.can_begin();
    while (can_begin && !slot.queue.empty()) {
      State::Pending pending = std::move(slot.queue.front());
      slot.queue.pop_front();
      state->queue_space.notify(sc_core::SC_ZERO_TIME);
      engine.Begin(pending.transfer, sc_core::sc_time_stamp(),
                   state->move_data || PayloadBytes(pending.transfer) <= kTimingOnlyMovedBytes);
      begun.push_back({pending.submitted, pending.transfer.semaphore, pending.transfer.semaphore_increment});
      can_begin = engine.can_begin();
    }
    while (engine.oldest_issued()) {
      DmaCompletion completion = engine.Finish();
      completion.submitted = begun.front().submitted;
      if (!completing.empty()) completion.completed = std::max(completion.completed, completing.back().completion.completed);
      completing.push_back({completion, begun.front()});
      begun.pop_front();
    }
    const bool issuing = engine.has_request();
    if (!completing.empty() && (!issuing || completing.front().completion.completed <= engine.next_issue_time())) {
      const sc_core::sc_time at = completing.front().completion.completed;
      if (!wait_for(at, can_begin)) return;
      if (sc_core::sc_time_stamp() < at) continue;  // a transfer arrived: begin it first
      Completing done = std::move(completing.front());
      completing.pop_front();
      if (done.begun.semaphore != nullptr) done.begun.semaphore->Signal(done.begun.increment);
      if (state->on_completion) state->on_completion(done.completion);
      continue;
    }
    if (!issuing) break;
    const sc_core::sc_time at = engine.next_issue_time();
    if (!wait_for(at, can_begin)) return;
    if (sc_core::sc_time_stamp() < at) continue;
    engine.IssueNext();
  }
  slot.thread_running = false;
}

}  // namespace tpusim::models
