#include "models/loop_watch.h"

#include <unordered_map>
#include <vector>

#include "isa/asm_syntax.h"
#include "isa/error.h"
#include "isa/instruction_set.h"

namespace tpusim::models {
namespace {

uint64_t StateBytes(const isa::Loop& loop) {
  uint64_t bytes = 0;
  for (const isa::Region& region : loop.state()) bytes += region.size_bytes();
  return bytes;
}

// `bits` in the counter's order as an unsigned number: a signed counter's sign bit flipped.
uint64_t OrderKey(uint64_t bits, bool is_signed, int width) { return is_signed ? bits ^ (uint64_t{1} << (width - 1)) : bits; }

// Whether `value COMPARE bound` holds, both keys in the counter's order.
bool Holds(const std::string& compare, uint64_t value, uint64_t bound) {
  if (compare == "EQ") return value == bound;
  if (compare == "NE") return value != bound;
  if (compare == "LT") return value < bound;
  if (compare == "LE") return value <= bound;
  if (compare == "GT") return value > bound;
  return value >= bound;  // GE
}

// The counter's width as a mask of its bits, and its step in those bits.
uint64_t WidthMask(const isa::LoopCounter& counter) {
  const uint64_t width = 8 * counter.place().size_bytes();
  return width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}
uint64_t StepBits(const isa::LoopCounter& counter) { return static_cast<uint64_t>(counter.step()) & WidthMask(counter); }

// The largest power of two dividing a step other than 0: the spacing of the values it reaches.
uint64_t Spacing(uint64_t step) { return step & (~step + 1); }

// The counter's type as HLO names it ("s32").
std::string CounterType(const isa::LoopCounter& counter) {
  return (counter.is_signed() ? "s" : "u") + std::to_string(8 * counter.place().size_bytes());
}

// `bits` as the counter's type prints it.
std::string CounterValue(const isa::LoopCounter& counter, uint64_t bits) {
  const int width = static_cast<int>(8 * counter.place().size_bytes());
  if (!counter.is_signed() || width == 64) {
    return counter.is_signed() ? std::to_string(static_cast<int64_t>(bits)) : std::to_string(bits);
  }
  const uint64_t sign = uint64_t{1} << (width - 1);
  return std::to_string(static_cast<int64_t>(bits ^ sign) - static_cast<int64_t>(sign));
}

}  // namespace

bool CounterEverEnds(const isa::LoopCounter& counter, uint64_t start) {
  const int width = static_cast<int>(8 * counter.place().size_bytes());
  const uint64_t mask = WidthMask(counter);
  const bool is_signed = counter.is_signed();
  const std::string& compare = counter.compare();
  const uint64_t bound = OrderKey(static_cast<uint64_t>(counter.bound()) & mask, is_signed, width);
  const uint64_t step = StepBits(counter);
  start &= mask;
  if (step == 0) return !Holds(compare, OrderKey(start, is_signed, width), bound);
  // g = 2^t divides the sign bit, so flipping it keeps every value's residue modulo g: in the
  // counter's order the values are still all numbers of `start`'s residue.
  const uint64_t g = Spacing(step);
  const uint64_t residue = start & (g - 1);
  const uint64_t least = residue, greatest = (mask - (g - 1)) + residue;
  if (compare == "EQ") return true;  // at least two values
  if (compare == "NE") return (bound & (g - 1)) == residue;
  if (compare == "LT") return greatest >= bound;
  if (compare == "LE") return greatest > bound;
  if (compare == "GT") return least <= bound;
  return least < bound;  // GE
}

std::string LoopWatch::CounterNeverEnds(const isa::Loop& loop) const {
  if (!loop.has_counter()) return "";
  const isa::LoopCounter& counter = loop.counter();
  const isa::Region& place = counter.place();
  uint64_t start = 0;
  std::vector<uint8_t> bytes(place.size_bytes());
  memories_[place.space()]->contents().Read(place.address(), bytes);
  for (std::size_t i = 0; i < bytes.size(); ++i) start |= uint64_t{bytes[i]} << (8 * i);
  if (CounterEverEnds(counter, start)) return "";
  const uint64_t step = StepBits(counter);
  const std::string values =
      step == 0 ? "so it stays " + CounterValue(counter, start)
                : "so it takes only the values congruent to " + CounterValue(counter, start & (Spacing(step) - 1)) +
                      " modulo " + std::to_string(Spacing(step));
  return "its counter (" + CounterType(counter) + " at " + std::string(isa::MemorySpaceName(place.space())) + "[" +
         isa::FormatHex(place.address()) + "]) is " + CounterValue(counter, start) + " as the loop starts and adds " +
         CounterValue(counter, step) + " each iteration, " + values + ", for each of which `counter " + counter.compare() +
         " " + std::to_string(counter.bound()) + "` holds";
}

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
    // Each region the watch reads must lie in a memory of the machine.
    const auto check = [&](const isa::Region& region, const std::string& what) {
      const Memory* memory = static_cast<std::size_t>(region.space()) < memories.size() ? memories[region.space()] : nullptr;
      if (memory == nullptr) {
        throw Error("loop '" + loop.label() + "': its " + what + " lies in " +
                    std::string(isa::MemorySpaceName(region.space())) + ", which this machine does not have");
      }
      memory->CheckRange("loop '" + loop.label() + "''s " + what, region.address(), region.size_bytes());
    };
    for (const isa::Region& region : loop.state()) check(region, "state");
    if (loop.has_counter()) check(loop.counter().place(), "counter");
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
    w = {.loop = w.loop, .never_ends = CounterNeverEnds(*w.loop), .saved_hash = hash};
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
  if (!w.never_ends.empty()) return "the loop at '" + w.loop->label() + "' never ends: " + w.never_ends;
  if (w.iteration - w.saved_iteration == w.power) {
    w.saved_hash = hash;
    w.saved_iteration = w.iteration;
    w.power *= 2;
  }
  return "";
}

}  // namespace tpusim::models
