// One DMA engine's timing and data path, as a plain C++ stepper with no SystemC process: Begin()
// plans a transfer (and moves its bytes), then each IssueNext() issues the next request at
// next_issue_time() to the source or destination memory. The SystemC wrapper (DmaUnit) waits
// until each issue time before issuing, so requests from all engines reach the memories in
// simulated-time order and contend fairly; RunToCompletion() does the same without SystemC.
//
// Issue rules (docs/timing.md, "DMA"): a transfer's first request leaves issue_latency_cycles
// after Begin; at most max_outstanding_requests requests (reads and writes, of every transfer
// the engine has begun) are in flight, each from its issue until its completion; reads go in
// address order as soon as a slot is free; a write may go once every read up to the last one it
// needs has completed (reads retire in order); a ready write goes before a read. A transfer
// completes when its last write does. The next transfer may begin once every read of the ones
// begun has issued: its reads then take the slots while their writes wait for data, as a
// descriptor-driven engine streams its queue (one transfer's tail overlaps the next's start).
#pragma once

#include <deque>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "models/dma_plan.h"
#include "models/dma_transfer.h"

namespace tpusim::models {

// The ArchConfig's `tensor_core.dma` block, the dispatch queue depth of
// scalar_core.dma_queue_depth_entries, and the clock the cycles count (tensor_core.clock_mhz).
struct DmaParams {
  uint32_t engine_count = 0;
  uint32_t max_outstanding_requests = 0;  // per engine, reads and writes together
  uint64_t burst_bytes = 0;               // a power of two
  uint32_t issue_latency_cycles = 0;      // transfer begun to first request issued
  uint32_t queue_depth_entries = 0;       // transfers waiting per engine (DmaUnit)
  double clock_mhz = 0;
};

void Validate(const DmaParams& params);  // throws tpusim::Error naming the field

struct DmaEngineStats {
  std::string name;
  uint64_t transfers = 0;
  uint64_t payload_bytes = 0;  // element bytes moved
  uint64_t read_requests = 0;
  uint64_t read_bytes = 0;     // bytes requested: touched spans of burst windows
  uint64_t write_requests = 0;
  uint64_t write_bytes = 0;
  sc_core::sc_time busy = sc_core::SC_ZERO_TIME;  // the union over transfers of Begin to completion
};
// Counts add and subtract field by field (a replayed segment's share: sim/chip/segment_replay.h).
void AddCounts(DmaEngineStats& to, const DmaEngineStats& delta);
DmaEngineStats CountsSince(const DmaEngineStats& now, const DmaEngineStats& before);

// One finished transfer.
struct DmaCompletion {
  std::string engine;
  uint64_t id = 0;                                       // DmaTransfer::id
  sc_core::sc_time submitted = sc_core::SC_ZERO_TIME;    // queued (DmaUnit; = started otherwise)
  sc_core::sc_time started = sc_core::SC_ZERO_TIME;      // Begin
  sc_core::sc_time first_issue = sc_core::SC_ZERO_TIME;  // started + issue latency
  sc_core::sc_time completed = sc_core::SC_ZERO_TIME;    // the last write completed
  uint64_t payload_bytes = 0;
};

class DmaEngine {
 public:
  DmaEngine(std::string name, const DmaParams& params);  // validates

  const std::string& name() const { return stats_.name; }
  const DmaParams& params() const { return params_; }

  // Starts `transfer` at `start` (no earlier than the last issue) when can_begin(): plans it
  // (PlanDma, which validates it and, with `move_data`, copies its bytes now). Throws
  // tpusim::Error if a begun transfer still has reads to issue, or the transfer is invalid.
  void Begin(const DmaTransfer& transfer, const sc_core::sc_time& start, bool move_data);
  // Every read of the transfers begun has issued.
  bool can_begin() const { return active_.empty() || !active_.back().reads_left(); }
  bool busy() const { return !active_.empty(); }  // a transfer begun and not finished
  // Requests remain to be issued.
  bool has_request() const { return requests_left_ > 0; }
  // The oldest transfer begun has issued every request: Finish may end it.
  bool oldest_issued() const { return !active_.empty() && !active_.front().requests_left(); }
  // When the next request issues (requires has_request()); never earlier than the previous one.
  sc_core::sc_time next_issue_time() const {
    if (!next_) next_ = Choose();
    return next_->time;
  }
  // Issues it: reserves its memory's resources at next_issue_time().
  void IssueNext();
  // When the oldest transfer's last write completes (requires oldest_issued()).
  const sc_core::sc_time& completion_time() const { return active_.front().completion; }
  // Ends the oldest transfer (requires oldest_issued(); its completion may lie ahead) and returns
  // its record.
  DmaCompletion Finish();

  const DmaEngineStats& stats() const { return stats_; }
  // Plans with `tables` and, for transfers that move no data, keeps plans in `plans` (both
  // shared with the other engines of the unit: the same shapes and transfers recur) instead of
  // the engine's own. Plans are the same either way.
  void SharePlanning(std::shared_ptr<DimTableCache> tables, std::shared_ptr<DmaPlanCache> plans) {
    tables_ = std::move(tables);
    plans_ = std::move(plans);
  }

 private:
  // A transfer begun and not finished.
  struct Active {
    std::shared_ptr<const DmaPlan> plan;
    uint64_t read_offset = 0;   // added to the plan's read addresses (DmaPlanCache)
    uint64_t write_offset = 0;  // and to its write addresses
    Memory* source = nullptr;
    Memory* destination = nullptr;
    uint64_t id = 0;
    std::size_t next_read = 0;
    std::size_t next_write = 0;
    // read_retired[i]: when reads 0..i have all completed.
    std::vector<sc_core::sc_time> read_retired;
    sc_core::sc_time started;
    sc_core::sc_time first_issue;  // started + issue latency
    sc_core::sc_time completion;   // the latest write completion so far
    bool reads_left() const { return next_read < plan->reads.size(); }
    bool requests_left() const { return reads_left() || next_write < plan->writes.size(); }
  };
  struct Choice {
    std::size_t transfer = 0;  // index in active_
    bool write = false;
    sc_core::sc_time time;
  };
  Choice Choose() const;

  DmaParams params_;
  sc_core::sc_time issue_latency_;
  DmaEngineStats stats_;
  // The layouts' offset tables, kept for the next transfers' plans; engines may share them.
  std::shared_ptr<DimTableCache> tables_ = std::make_shared<DimTableCache>();
  std::shared_ptr<DmaPlanCache> plans_ = std::make_shared<DmaPlanCache>();

  std::deque<Active> active_;  // in the order begun; only the newest may have reads left
  uint64_t requests_left_ = 0;  // over active_
  // The next request's choice, once asked for (the unit asks, waits, then issues it).
  mutable std::optional<Choice> next_;
  // Completion times of the requests in flight, of every transfer: a min-heap (std::greater),
  // earliest at front().
  std::vector<sc_core::sc_time> in_flight_;
  sc_core::sc_time now_;         // the last issue time
  sc_core::sc_time busy_until_;  // the latest completion of a finished transfer (busy time)
};

// Issues every remaining request of the given (begun) engines, always the earliest next issue
// time first (ties: the engine listed first), as the SystemC wrapper would. For analytic use and
// tests; afterwards each engine's completion_time() is final.
void RunToCompletion(std::span<DmaEngine* const> engines);

}  // namespace tpusim::models
