#include "compiler/passes/memory_scheduler.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "compiler/passes/tuple_leaves.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;

// A reader set (ListSchedule's reader_set) grows to at most this many units: enough for a dot
// split into a few K slices with their operands' slices and their sum, few enough that the
// scheduler stays linear in practice.
constexpr std::size_t kReaderSetUnits = 64;

// The HBM a value's buffers take, each aligned as buffer assignment places it.
uint64_t ByteSize(const isa::Shape& shape) {
  uint64_t bytes = 0;
  for (const isa::Shape* leaf : ArrayLeaves(shape)) {
    if (leaf->element_type == isa::ElementType::kToken) continue;
    bytes += AlignUp(std::max<uint64_t>(isa::LayoutMap(*leaf).byte_size(), 1), kBufferAlignmentBytes);
  }
  return bytes;
}

}  // namespace

std::vector<const Instruction*> ListSchedule(const std::vector<const Instruction*>& schedule,
                                             const std::vector<KernelGroup>& groups,
                                             const std::function<uint64_t(const Instruction&)>& callee_bytes) {
  if (schedule.empty()) return {};
  const std::size_t n = schedule.size();
  std::unordered_map<const Instruction*, std::size_t> position;
  for (std::size_t i = 0; i < n; ++i) position[schedule[i]] = i;
  // Units: a kernel (at its root's position) with the instructions computed inside it, which a
  // kernel that duplicates a producer shares with the others; every other instruction alone
  // (parameters and constants too: they live for the whole program).
  std::vector<bool> is_unit(n, true), inside(n, false);
  std::vector<std::vector<std::size_t>> members(n);
  for (const KernelGroup& group : groups) {
    const std::size_t root = position.at(group.root);
    for (const Instruction* member : group.members) {
      if (member == group.root || member->opcode() == hlo::Opcode::kConstant) continue;
      const std::size_t at = position.at(member);
      members[root].push_back(at);
      is_unit[at] = false;
      inside[at] = true;
    }
  }
  for (const KernelGroup& group : groups) is_unit[position.at(group.root)] = true;
  for (std::size_t u = 0; u < n; ++u) {
    std::sort(members[u].begin(), members[u].end());
    if (is_unit[u]) members[u].push_back(u);
  }
  // The buffers a value reads: its own, or an alias's sources.
  std::vector<std::vector<std::size_t>> sources(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Instruction& x = *schedule[i];
    if (!IsAliasingInstruction(x) || x.opcode() == hlo::Opcode::kParameter) {
      sources[i] = {i};
      continue;
    }
    for (const Instruction* operand : x.operands()) {
      const auto& from = sources[position.at(operand)];
      sources[i].insert(sources[i].end(), from.begin(), from.end());
    }
    std::sort(sources[i].begin(), sources[i].end());
    sources[i].erase(std::unique(sources[i].begin(), sources[i].end()), sources[i].end());
  }
  // Per unit: the units it waits for, the buffers it reads (outside itself), the bytes it defines.
  std::vector<std::vector<std::size_t>> waits(n), reads(n), readers_of(n);
  std::vector<uint64_t> defined(n, 0), size(n, 0);
  std::vector<int> pending_readers(n, 0);
  std::unordered_set<std::size_t> outputs;
  for (std::size_t b : sources[position.at(schedule.back()->parent()->root())]) outputs.insert(b);
  for (std::size_t i = 0; i < n; ++i) {
    const Instruction& x = *schedule[i];
    size[i] = IsAliasingInstruction(x) || LivesWholeProgram(x) || (inside[i] && !is_unit[i]) ? 0 : ByteSize(x.shape());
  }
  for (std::size_t u = 0; u < n; ++u) {
    if (!is_unit[u]) continue;
    const std::unordered_set<std::size_t> own(members[u].begin(), members[u].end());
    std::unordered_set<std::size_t> wait, read;
    for (std::size_t m : members[u]) {
      std::vector<const Instruction*> inputs(schedule[m]->operands().begin(), schedule[m]->operands().end());
      for (const Instruction* p : schedule[m]->control_predecessors()) inputs.push_back(p);
      for (const Instruction* input : inputs) {
        const std::size_t at = position.at(input);
        if (own.contains(at)) continue;
        if (is_unit[at]) wait.insert(at);
        for (std::size_t b : sources[at]) {
          if (size[b] > 0) read.insert(b);
        }
      }
    }
    waits[u].assign(wait.begin(), wait.end());
    reads[u].assign(read.begin(), read.end());
    for (std::size_t b : reads[u]) {
      ++pending_readers[b];
      readers_of[b].push_back(u);
    }
    defined[u] = size[u] + callee_bytes(*schedule[u]);
  }
  // Net bytes freed by scheduling unit u now; what defines nothing (a parameter, a constant, a
  // tuple or another alias) goes first: it costs nothing and may let a kernel that frees go.
  const auto priority = [&](std::size_t u) {
    if (defined[u] == 0) return std::numeric_limits<int64_t>::max();
    int64_t freed = 0;
    for (std::size_t b : reads[u]) {
      if (pending_readers[b] == 1 && !outputs.contains(b)) freed += static_cast<int64_t>(size[b]);
    }
    return freed - static_cast<int64_t>(defined[u]);
  };
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<std::size_t>> dependents(n);
  for (std::size_t u = 0; u < n; ++u) {
    if (!is_unit[u]) continue;
    waiting[u] = static_cast<int>(waits[u].size());
    for (std::size_t w : waits[u]) dependents[w].push_back(u);
  }
  std::vector<std::size_t> ready;
  std::vector<bool> is_ready(n, false), done(n, false);
  for (std::size_t u = 0; u < n; ++u) {
    if (is_unit[u] && waiting[u] == 0) {
      ready.push_back(u);
      is_ready[u] = true;
    }
  }
  std::vector<const Instruction*> order;
  order.reserve(n);
  std::vector<bool> emitted(n, false);
  const auto emit = [&](std::size_t u) {
    done[u] = true;
    is_ready[u] = false;
    for (std::size_t m : members[u]) {
      if (!emitted[m]) order.push_back(schedule[m]);
      emitted[m] = true;
    }
    for (std::size_t b : reads[u]) --pending_readers[b];
    for (std::size_t d : dependents[u]) {
      if (--waiting[d] == 0 && !done[d]) {
        ready.push_back(d);
        is_ready[d] = true;
      }
    }
  };
  // The readers of buffer b that are left, where all of them are ready, then what they let
  // run (with the ready units it also waits for) up to kReaderSetUnits units, cut where it frees
  // the most net of what it defines (with that net): XLA's list scheduler frees a buffer only
  // through its last reader, so a buffer that several readers free together stays (MaxText's
  // 2.1 GB logits gradient, read by the six K slices of the vocabulary weight gradient, whose
  // f32 products their sum frees, was held across the whole backward layer loop). Empty where
  // a reader is not ready.
  std::vector<bool> in_set(n, false);
  const auto reader_set = [&](std::size_t b) -> std::pair<std::vector<std::size_t>, int64_t> {
    std::vector<std::size_t> readers;
    for (std::size_t r : readers_of[b]) {
      if (done[r]) continue;
      if (!is_ready[r]) return {};
      readers.push_back(r);
    }
    std::vector<std::size_t> set;
    int64_t net = 0;
    std::unordered_set<std::size_t> freed;
    const auto add = [&](std::size_t u) {
      set.push_back(u);
      in_set[u] = true;
      net -= static_cast<int64_t>(defined[u]);
      for (std::size_t read : reads[u]) {
        if (outputs.contains(read) || freed.contains(read)) continue;
        if (std::all_of(readers_of[read].begin(), readers_of[read].end(),
                        [&](std::size_t r) { return done[r] || in_set[r]; })) {
          freed.insert(read);
          net += static_cast<int64_t>(size[read]);
        }
      }
    };
    for (std::size_t r : readers) add(r);
    int64_t best_net = net;
    std::size_t best_size = set.size();
    for (std::size_t next = 0; next < set.size() && set.size() < kReaderSetUnits; ++next) {
      for (std::size_t d : dependents[set[next]]) {
        if (done[d] || in_set[d] || set.size() >= kReaderSetUnits) continue;
        const bool runs = std::all_of(waits[d].begin(), waits[d].end(),
                                      [&](std::size_t w) { return done[w] || in_set[w] || is_ready[w]; });
        if (!runs) continue;
        for (std::size_t w : waits[d]) {
          if (!done[w] && !in_set[w]) add(w);
        }
        add(d);
        if (net > best_net) {
          best_net = net;
          best_size = set.size();
        }
      }
    }
    for (std::size_t u : set) in_set[u] = false;
    set.resize(best_size);
    return {set, best_net};
  };
  while (!ready.empty()) {
    // Of the ready units, the one that frees the most net; where none frees any, the text's next.
    std::size_t best = 0;
    int64_t best_priority = std::numeric_limits<int64_t>::min();
    for (std::size_t k = 0; k < ready.size(); ++k) {
      const int64_t p = std::max<int64_t>(priority(ready[k]), 0);
      if (p > best_priority || (p == best_priority && ready[k] < ready[best])) {
        best = k;
        best_priority = p;
      }
    }
    // Unless the readers of one buffer together free more.
    std::vector<std::size_t> best_set;
    std::unordered_set<std::size_t> tried;
    for (std::size_t u : ready) {
      for (std::size_t b : reads[u]) {
        if (pending_readers[b] < 2 || outputs.contains(b) || !tried.insert(b).second) continue;
        auto [set, net] = reader_set(b);
        if (!set.empty() && net > best_priority) {
          best_priority = net;
          best_set = std::move(set);
        }
      }
    }
    if (best_set.empty()) {
      const std::size_t u = ready[best];
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
      emit(u);
      continue;
    }
    std::sort(best_set.begin(), best_set.end());
    for (std::size_t u : best_set) emit(u);
    std::erase_if(ready, [&](std::size_t u) { return done[u]; });
  }
  // Every instruction once, each after its operands (a kernel's inside ones with any kernel
  // that computes them); else (a dependency this plan did not foresee) the text's order.
  std::vector<bool> placed(n, false);
  for (const Instruction* x : order) {
    const std::size_t i = position.at(x);
    for (const Instruction* operand : x->operands()) {
      if (!placed[position.at(operand)] && !(inside[i] && !is_unit[i])) return schedule;
    }
    placed[i] = true;
  }
  return order.size() == n ? order : schedule;
}

}  // namespace tpusim::compiler
