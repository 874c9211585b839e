#include "models/dma_engine.h"

#include <algorithm>
#include <utility>

#include "isa/error.h"
#include "models/clock_domain.h"
#include "models/param_checks.h"

namespace tpusim::models {

void Validate(const DmaParams& params) {
  constexpr std::string_view kParams = "DmaParams";
  RequireAtLeast(kParams, "engine_count", params.engine_count, 1);
  RequireAtLeast(kParams, "max_outstanding_requests", params.max_outstanding_requests, 1);
  RequirePowerOfTwo(kParams, "burst_bytes", params.burst_bytes);
  RequireAtLeast(kParams, "queue_depth_entries", params.queue_depth_entries, 1);
  RequirePositive(kParams, "clock_mhz", params.clock_mhz);
}

namespace {

const DmaParams& Validated(const DmaParams& params) {
  Validate(params);
  return params;
}

}  // namespace

DmaEngine::DmaEngine(std::string name, const DmaParams& params)
    : params_(Validated(params)),
      issue_latency_(ClockDomain(params.clock_mhz).ToTime(params.issue_latency_cycles)) {
  stats_.name = std::move(name);
}

void DmaEngine::Begin(const DmaTransfer& transfer, const sc_core::sc_time& start, bool move_data) {
  if (busy_) throw Error("DMA engine " + name() + ": Begin while a transfer is in progress");
  plan_ = move_data ? std::make_shared<const DmaPlan>(PlanDma(transfer, params_.burst_bytes, true, tables_.get()))
                    : plans_->Plan(transfer, params_.burst_bytes, tables_.get());
  busy_ = true;
  source_ = transfer.source.memory;
  destination_ = transfer.destination.memory;
  id_ = transfer.id;
  next_read_ = next_write_ = 0;
  read_retired_.clear();
  read_retired_.reserve(plan_->reads.size());
  in_flight_.clear();
  next_.reset();
  started_ = start;
  now_ = start + issue_latency_;
  completion_ = now_;
}

DmaEngine::Choice DmaEngine::Choose() const {
  // A slot is free now, or when the earliest request in flight completes.
  sc_core::sc_time slot = now_;
  if (in_flight_.size() >= params_.max_outstanding_requests) {
    slot = std::max(slot, in_flight_.front());
  }
  const bool reads_left = next_read_ < plan_->reads.size();
  if (next_write_ < plan_->writes.size()) {
    const uint64_t need = plan_->write_needs[next_write_];
    if (need < next_read_) {  // the reads it needs are issued: it is ready when they retire
      const sc_core::sc_time ready = std::max(slot, read_retired_[need]);
      if (!reads_left || ready <= slot) return {true, ready};
    }
  }
  return {false, slot};
}

namespace {

using Later = std::greater<sc_core::sc_time>;

// Replaces the heap's earliest time with `time`: one sift down, where a pop and a push would take
// two (this runs once per burst, and nearly every issue retires one request and adds one).
void ReplaceEarliest(std::vector<sc_core::sc_time>& heap, const sc_core::sc_time& time) {
  const std::size_t n = heap.size();
  std::size_t at = 0;
  while (true) {
    std::size_t child = 2 * at + 1;
    if (child >= n) break;
    if (child + 1 < n && heap[child + 1] < heap[child]) ++child;
    if (!(heap[child] < time)) break;
    heap[at] = heap[child];
    at = child;
  }
  heap[at] = time;
}

}  // namespace

void DmaEngine::IssueNext() {
  const Choice choice = next_ ? *next_ : Choose();
  next_.reset();
  // Retire the requests completed by now, but the last of them only when the new one replaces it.
  bool replace = false;
  while (!in_flight_.empty() && in_flight_.front() <= choice.time) {
    const std::size_t n = in_flight_.size();
    const bool another = (n > 1 && in_flight_[1] <= choice.time) || (n > 2 && in_flight_[2] <= choice.time);
    if (!another) {
      replace = true;
      break;
    }
    std::pop_heap(in_flight_.begin(), in_flight_.end(), Later());
    in_flight_.pop_back();
  }
  const auto add_in_flight = [&](const sc_core::sc_time& done) {
    if (replace) {
      ReplaceEarliest(in_flight_, done);
    } else {
      in_flight_.push_back(done);
      std::push_heap(in_flight_.begin(), in_flight_.end(), Later());
    }
  };
  now_ = choice.time;
  if (choice.write) {
    const DmaRequest& request = plan_->writes[next_write_++];
    const sc_core::sc_time done =
        destination_->Access(AccessKind::kWrite, request.address, request.bytes, now_);
    completion_ = std::max(completion_, done);
    add_in_flight(done);
    ++stats_.write_requests;
    stats_.write_bytes += request.bytes;
  } else {
    const DmaRequest& request = plan_->reads[next_read_++];
    const sc_core::sc_time done =
        source_->Access(AccessKind::kRead, request.address, request.bytes, now_);
    read_retired_.push_back(read_retired_.empty() ? done : std::max(read_retired_.back(), done));
    add_in_flight(done);
    ++stats_.read_requests;
    stats_.read_bytes += request.bytes;
  }
}

DmaCompletion DmaEngine::Finish() {
  if (!busy_ || has_request()) {
    throw Error("DMA engine " + name() + ": Finish before its last request was issued");
  }
  busy_ = false;
  ++stats_.transfers;
  stats_.payload_bytes += plan_->payload_bytes;
  stats_.busy += completion_ - started_;
  DmaCompletion completion;
  completion.engine = name();
  completion.id = id_;
  completion.submitted = started_;
  completion.started = started_;
  completion.first_issue = started_ + issue_latency_;
  completion.completed = completion_;
  completion.payload_bytes = plan_->payload_bytes;
  plan_ = std::make_shared<const DmaPlan>();
  return completion;
}

void RunToCompletion(std::span<DmaEngine* const> engines) {
  while (true) {
    DmaEngine* earliest = nullptr;
    sc_core::sc_time earliest_time;
    for (DmaEngine* engine : engines) {
      if (!engine->has_request()) continue;
      const sc_core::sc_time time = engine->next_issue_time();
      if (earliest == nullptr || time < earliest_time) {
        earliest = engine;
        earliest_time = time;
      }
    }
    if (earliest == nullptr) return;
    earliest->IssueNext();
  }
}

}  // namespace tpusim::models
