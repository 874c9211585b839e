#include "models/loop_watch.h"

#include <unordered_map>

#include "isa/error.h"
#include "isa/instruction_set.h"

namespace tpusim::models {
namespace {

uint64_t StateBytes(const isa::Loop& loop) {
  uint64_t bytes = 0;
  for (const isa::Region& region : loop.state()) bytes += region.size_bytes();
  return bytes;
}

}  // namespace

void LoopWatch::Start(const isa::Program& program, const MemoryMap& memories) {
  memories_ = memories;
  std::unordered_map<std::string_view, uint32_t> labels;
  for (const isa::Label& label : program.labels()) labels[label.name()] = label.instruction();
  loop_at_.assign(program.instructions_size(), -1);
  watched_.clear();
  for (const isa::Loop& loop : program.loops()) {
    const auto it = labels.find(loop.label());
    if (it == labels.end() || it->second >= loop_at_.size()) {
      throw Error("loop '" + loop.label() + "': its label names no instruction");
    }
    for (const isa::Region& region : loop.state()) {
      const Memory* memory = static_cast<std::size_t>(region.space()) < memories.size() ? memories[region.space()] : nullptr;
      if (memory == nullptr) {
        throw Error("loop '" + loop.label() + "': its state lies in " + std::string(isa::MemorySpaceName(region.space())) +
                    ", which this machine does not have");
      }
      memory->CheckRange("loop '" + loop.label() + "''s state", region.address(), region.size_bytes());
    }
    loop_at_[it->second] = static_cast<int32_t>(watched_.size());
    watched_.push_back({.loop = &loop});
  }
}

uint64_t LoopWatch::StateHash(const isa::Loop& loop) const {
  uint64_t hash = 0;
  for (const isa::Region& region : loop.state()) {
    // In order: which region holds which bytes counts (regions of two memories may share addresses).
    hash = hash * 0x100000001b3ULL + memories_[region.space()]->contents().ContentHash(region.address(), region.size_bytes());
  }
  return hash;
}

std::string LoopWatch::Reached(uint64_t pc, bool by_branch) {
  Watched& w = watched_.at(static_cast<std::size_t>(loop_at_.at(pc)));
  const uint64_t hash = StateHash(*w.loop);
  if (!by_branch) {
    w = {.loop = w.loop, .saved_hash = hash};
    return "";
  }
  ++w.iteration;
  if (hash == w.saved_hash) {
    const std::string state = w.loop->state().empty()
                                  ? "whether it ends depends on no state (its condition is a constant)"
                                  : "at iteration " + std::to_string(w.iteration) + " the " + std::to_string(StateBytes(*w.loop)) +
                                        " bytes of state its ending depends on are as they were at iteration " +
                                        std::to_string(w.saved_iteration);
    const std::string repeated = w.saved_iteration + 1 == w.iteration
                                     ? "iteration " + std::to_string(w.saved_iteration)
                                     : "iterations " + std::to_string(w.saved_iteration) + " to " + std::to_string(w.iteration - 1);
    return "the loop at '" + w.loop->label() + "' never ends: " + state + ", so it would repeat " + repeated + " forever";
  }
  if (w.iteration - w.saved_iteration == w.power) {
    w.saved_hash = hash;
    w.saved_iteration = w.iteration;
    w.power *= 2;
  }
  return "";
}

}  // namespace tpusim::models
