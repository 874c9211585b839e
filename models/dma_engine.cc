#include "models/dma_engine.h"

#include <algorithm>
#include <utility>

#include "isa/error.h"
#include "models/clock_domain.h"
#include "models/param_checks.h"

namespace tpusim::models {

void AddCounts(DmaEngineStats& to, const DmaEngineStats& delta) {
  to.transfers += delta.transfers;
  to.payload_bytes += delta.payload_bytes;
  to.read_requests += delta.read_requests;
  to.read_bytes += delta.read_bytes;
  to.write_requests += delta.write_requests;
  to.write_bytes += delta.write_bytes;
  to.busy += delta.busy;
}

DmaEngineStats CountsSince(const DmaEngineStats& now, const DmaEngineStats& before) {
  DmaEngineStats delta;
  delta.name = now.name;
  delta.transfers = now.transfers - before.transfers;
  delta.payload_bytes = now.payload_bytes - before.payload_bytes;
  delta.read_requests = now.read_requests - before.read_requests;
  delta.read_bytes = now.read_bytes - before.read_bytes;
  delta.write_requests = now.write_requests - before.write_requests;
  delta.write_bytes = now.write_bytes - before.write_bytes;
  delta.busy = now.busy - before.busy;
  return delta;
}

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
  if (!can_begin()) throw Error("DMA engine " + name() + ": Begin while a transfer is in progress");
  Active a;
  if (move_data) {
    a.plan = std::make_shared<const DmaPlan>(PlanDma(transfer, params_.burst_bytes, true, tables_.get()));
  } else {
    PlacedDmaPlan placed = plans_->Plan(transfer, params_.burst_bytes, tables_.get());
    a.plan = std::move(placed.plan);
    a.read_offset = placed.read_offset;
    a.write_offset = placed.write_offset;
  }
  a.source = transfer.source.memory;
  a.destination = transfer.destination.memory;
  a.id = transfer.id;
  a.read_retired.reserve(a.plan->reads.size());
  a.started = start;
  a.first_issue = std::max(start, now_) + issue_latency_;
  a.completion = a.first_issue;
  requests_left_ += a.plan->reads.size() + a.plan->writes.size();
  active_.push_back(std::move(a));
  next_.reset();
}

DmaEngine::Choice DmaEngine::Choose() const {
  // A slot is free now, or when the earliest request in flight completes.
  sc_core::sc_time slot = now_;
  if (in_flight_.size() >= params_.max_outstanding_requests) {
    slot = std::max(slot, in_flight_.front());
  }
  // The earliest ready write, the oldest transfer's on a tie.
  std::optional<Choice> write;
  for (std::size_t t = 0; t < active_.size(); ++t) {
    const Active& a = active_[t];
    if (a.next_write >= a.plan->writes.size()) continue;
    const uint64_t need = a.plan->write_needs[a.next_write];
    if (need >= a.next_read) continue;  // its reads are not all issued yet
    const sc_core::sc_time ready = std::max(slot, a.read_retired[need]);
    if (!write || ready < write->time) write = Choice{t, true, ready};
  }
  // The next read: of the newest transfer, the only one that may have reads left.
  const std::size_t newest = active_.size() - 1;
  if (!active_[newest].reads_left()) return *write;
  const Choice read{newest, false, std::max(slot, active_[newest].first_issue)};
  if (write && write->time <= read.time) return *write;
  return read;
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
  --requests_left_;
  Active& a = active_[choice.transfer];
  if (choice.write) {
    const DmaRequest& request = a.plan->writes[a.next_write++];
    const sc_core::sc_time done =
        a.destination->Access(AccessKind::kWrite, request.address + a.write_offset, request.bytes, now_);
    a.completion = std::max(a.completion, done);
    add_in_flight(done);
    ++stats_.write_requests;
    stats_.write_bytes += request.bytes;
  } else {
    const DmaRequest& request = a.plan->reads[a.next_read++];
    const sc_core::sc_time done =
        a.source->Access(AccessKind::kRead, request.address + a.read_offset, request.bytes, now_);
    a.read_retired.push_back(a.read_retired.empty() ? done : std::max(a.read_retired.back(), done));
    add_in_flight(done);
    ++stats_.read_requests;
    stats_.read_bytes += request.bytes;
  }
}

DmaCompletion DmaEngine::Finish() {
  if (!oldest_issued()) throw Error("DMA engine " + name() + ": Finish before its last request was issued");
  const Active& a = active_.front();
  ++stats_.transfers;
  stats_.payload_bytes += a.plan->payload_bytes;
  // Busy time: the union of the transfers' spans (Begin to completion), which may overlap.
  stats_.busy += a.completion - std::max(a.started, std::min(busy_until_, a.completion));
  busy_until_ = std::max(busy_until_, a.completion);
  DmaCompletion completion;
  completion.engine = name();
  completion.id = a.id;
  completion.submitted = a.started;
  completion.started = a.started;
  completion.first_issue = a.first_issue;
  completion.completed = a.completion;
  completion.payload_bytes = a.plan->payload_bytes;
  active_.pop_front();
  next_.reset();
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
