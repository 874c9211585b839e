#include "compiler/passes/buffer_assignment.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <unordered_set>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/passes/tuple_leaves.h"
#include "isa/error.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {


// Whether the elements lie in row-major order: the dims other than size-1 ones are in
// descending order in minor_to_major (where a size-1 dim sits changes no element's place).
bool IsRowMajor(const isa::Shape& shape) {
  int64_t previous = shape.rank();
  for (int64_t d : shape.layout->minor_to_major) {
    if (shape.dims[d] == 1) continue;
    if (d > previous) return false;
    previous = d;
  }
  return true;
}

// The dims in the order they lie in memory, most major first.
std::vector<int64_t> PhysicalDims(const isa::Shape& shape) {
  std::vector<int64_t> dims;
  for (auto d = shape.layout->minor_to_major.rbegin(); d != shape.layout->minor_to_major.rend(); ++d) {
    dims.push_back(shape.dims[*d]);
  }
  return dims;
}

// custom-call "Sharding": a partitioning annotation (jax.lax.with_sharding_constraint); on one
// device its value is its operand. "MoveToHost" / "MoveToDevice" of an operand already in the
// result's memory (equal shapes, S(n) included) move nothing, as XLA's HostOffloader removes them.
bool IsIdentityCustomCall(const hlo::Instruction& instruction) {
  if (instruction.opcode() != hlo::Opcode::kCustomCall || instruction.operand_count() != 1) return false;
  const auto* target = instruction.Find<hlo::QuotedString>("custom_call_target");
  if (target == nullptr) return false;
  return (target->value == "Sharding" || target->value == "MoveToHost" || target->value == "MoveToDevice") &&
         instruction.shape() == instruction.operand(0)->shape();
}

// Instructions whose value is their operand's bytes seen with another shape.
bool IsView(const hlo::Instruction& instruction) {
  return instruction.opcode() == hlo::Opcode::kBitcast || IsAliasingReshape(instruction) ||
         IsAliasingTranspose(instruction) || IsAliasingSlice(instruction) || IsIdentityCustomCall(instruction);
}

// Where the most of `buffers`' bytes are live in `schedule`, and the largest there.
LivePeak FindLivePeak(const std::vector<const hlo::Instruction*>& schedule, const std::vector<DeviceBuffer*>& buffers) {
  LivePeak peak;
  if (schedule.empty()) return peak;
  // Bytes live at each position: each buffer adds its size from `first` to `last` (a running sum
  // of the changes, in one pass over the buffers and one over the schedule).
  std::vector<int64_t> change(schedule.size() + 1, 0);
  for (const DeviceBuffer* buffer : buffers) {
    if (buffer->first >= schedule.size() || buffer->last < buffer->first) continue;
    change[buffer->first] += static_cast<int64_t>(buffer->size_bytes);
    change[std::min(buffer->last + 1, schedule.size())] -= static_cast<int64_t>(buffer->size_bytes);
  }
  int64_t bytes = 0;
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    bytes += change[i];
    if (static_cast<uint64_t>(bytes) > peak.bytes) std::tie(peak.position, peak.bytes) = std::make_pair(i, bytes);
  }
  peak.instruction = schedule[peak.position]->name();
  std::vector<const DeviceBuffer*> live;
  for (const DeviceBuffer* buffer : buffers) {
    if (buffer->first <= peak.position && buffer->last >= peak.position) live.push_back(buffer);
  }
  std::sort(live.begin(), live.end(),
            [](const DeviceBuffer* a, const DeviceBuffer* b) { return a->size_bytes > b->size_bytes; });
  peak.buffers = live.size();
  for (std::size_t i = 0; i < live.size() && i < 10; ++i) peak.largest.emplace_back(live[i]->name, live[i]->size_bytes);
  return peak;
}

// "the largest buffers live here: a (N bytes), b (M bytes), ... of K bytes live in all", for the
// capacity error, so a user sees what fills HBM.
std::string LargestLive(const LivePeak& peak) {
  std::string text = "the largest buffers live here:";
  for (std::size_t i = 0; i < peak.largest.size() && i < 5; ++i) {
    text += (i ? ", " : " ") + peak.largest[i].first + " (" + std::to_string(peak.largest[i].second) + " bytes)";
  }
  return text + "; " + std::to_string(peak.buffers) + " buffers of " + std::to_string(peak.bytes) + " bytes live in all";
}

// Places `order`'s buffers one after another, each at the lowest address from `base` where it
// overlaps no buffer placed before it that is live at the same time (a buffer's space is free
// after its last read). Returns the peak (highest end); addresses[i] is order[i]'s. In order of
// first write this is first fit; in order of decreasing size it is XLA's and TFLite's "greedy by
// size", which fragments less when big buffers come and go.
uint64_t PlaceInOrder(const std::vector<DeviceBuffer*>& order, uint64_t base, std::vector<uint64_t>& addresses) {
  struct Placed { uint64_t begin, end; std::size_t first, last; };
  std::vector<Placed> done;
  std::vector<Placed> conflicts;
  uint64_t peak = base;
  addresses.clear();
  for (const DeviceBuffer* buffer : order) {
    conflicts.clear();
    for (const Placed& placed : done) {
      if (placed.first <= buffer->last && buffer->first <= placed.last) conflicts.push_back(placed);
    }
    std::sort(conflicts.begin(), conflicts.end(), [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
    const uint64_t size = AlignUp(std::max<uint64_t>(buffer->size_bytes, 1), kBufferAlignmentBytes);
    uint64_t address = base;
    for (const Placed& placed : conflicts) {
      if (address + size <= placed.begin) break;
      address = std::max(address, placed.end);
    }
    addresses.push_back(address);
    done.push_back({address, address + size, buffer->first, buffer->last});
    peak = std::max(peak, address + size);
  }
  return peak;
}

// Greedy by size over sizes scaled by seeded random factors, for when neither order fits
// (`PlaceBuffers`): each trial sorts by size x 2^u, u uniform in [-1.5, 1.5], so buffers of
// nearby sizes change places and the holes a big short-lived buffer leaves under a long-lived
// smaller one move. A randomized greedy, as TVM's unified static memory planner tries orders
// beyond greedy by size. Deterministic: the seed is fixed and the factors are computed from the
// generator's raw bits. Llama's entry needs 35.68 GB by size (34.03 GB live at its worst point);
// a trial fits it at 34.32 GB.
constexpr int kRandomizedPlacementTrials = 256;
constexpr double kRandomizedPlacementSpread = 1.5;  // log2 of the largest factor

// Orders placed by sizes x 2^u until one peaks at or below `budget` (at most
// kRandomizedPlacementTrials); returns the lowest peak found, with its order and addresses.
uint64_t PlaceRandomizedBySize(const std::vector<DeviceBuffer*>& placed, uint64_t base, uint64_t budget,
                               std::vector<DeviceBuffer*>& best_order, std::vector<uint64_t>& best_addresses) {
  std::mt19937_64 generator(20261128);
  uint64_t best_peak = std::numeric_limits<uint64_t>::max();
  std::vector<std::pair<double, DeviceBuffer*>> keyed(placed.size());
  std::vector<DeviceBuffer*> order(placed.size());
  std::vector<uint64_t> addresses;
  for (int trial = 0; trial < kRandomizedPlacementTrials && best_peak > budget; ++trial) {
    for (std::size_t i = 0; i < placed.size(); ++i) {
      const double unit = static_cast<double>(generator() >> 11) * 0x1.0p-53;  // [0, 1)
      keyed[i] = {static_cast<double>(placed[i]->size_bytes) * std::exp2((2 * unit - 1) * kRandomizedPlacementSpread),
                  placed[i]};
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; i < keyed.size(); ++i) order[i] = keyed[i].second;
    const uint64_t peak = PlaceInOrder(order, base, addresses);
    if (peak < best_peak) std::tie(best_peak, best_order, best_addresses) = std::tie(peak, order, addresses);
  }
  return best_peak;
}

}  // namespace

uint64_t PlaceBuffers(const std::vector<DeviceBuffer*>& placed, uint64_t base, uint64_t budget) {
  std::vector<DeviceBuffer*> by_first = placed;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [](const DeviceBuffer* a, const DeviceBuffer* b) { return a->first < b->first; });
  std::vector<DeviceBuffer*> by_size = placed;
  std::stable_sort(by_size.begin(), by_size.end(), [](const DeviceBuffer* a, const DeviceBuffer* b) {
    return a->size_bytes != b->size_bytes ? a->size_bytes > b->size_bytes : a->first < b->first;
  });
  std::vector<uint64_t> first_fit;
  const uint64_t first_fit_peak = PlaceInOrder(by_first, base, first_fit);
  std::vector<uint64_t> size_fit;
  const uint64_t size_fit_peak = PlaceInOrder(by_size, base, size_fit);
  const bool use_size = size_fit_peak < first_fit_peak;
  std::vector<DeviceBuffer*> order = use_size ? by_size : by_first;
  std::vector<uint64_t> addresses = use_size ? size_fit : first_fit;
  uint64_t peak = std::min(first_fit_peak, size_fit_peak);
  if (peak > budget) {
    std::vector<DeviceBuffer*> randomized_order;
    std::vector<uint64_t> randomized_addresses;
    const uint64_t randomized_peak = PlaceRandomizedBySize(placed, base, budget, randomized_order, randomized_addresses);
    if (randomized_peak < peak) std::tie(peak, order, addresses) = std::tie(randomized_peak, randomized_order, randomized_addresses);
  }
  for (std::size_t i = 0; i < order.size(); ++i) order[i]->address = addresses[i];
  return peak;
}

bool LivesWholeProgram(const hlo::Instruction& instruction) {
  return instruction.opcode() == hlo::Opcode::kParameter || instruction.opcode() == hlo::Opcode::kConstant;
}

bool SameRowMajorImage(const isa::Shape& a, const isa::Shape& b) {
  if (a.is_tuple || b.is_tuple || !a.layout || !b.layout || a.element_type != b.element_type) return false;
  if (isa::ElementCount(a) != isa::ElementCount(b)) return false;
  const auto plain = [](const isa::Shape& s) {
    const isa::Layout& l = *s.layout;
    return IsRowMajor(s) && l.padded_dimensions.empty() && l.tail_padding_alignment_in_elements == 1 &&
           l.dynamic_shape_metadata_prefix_bytes == 0 && l.split_configs.empty() && l.dim_level_types.empty() &&
           std::none_of(s.dynamic_dims.begin(), s.dynamic_dims.end(), [](bool d) { return d; });
  };
  if (!plain(a) || !plain(b)) return false;
  if (a.layout->element_size_in_bits != b.layout->element_size_in_bits || a.layout->tiles != b.layout->tiles) return false;
  if (a.layout->tiles.empty()) return true;  // both untiled row-major: the elements in order
  const std::vector<int64_t>& tile = a.layout->tiles.front().dims;
  for (const isa::Tile& t : a.layout->tiles) {
    for (int64_t d : t.dims) {
      if (d == isa::kCombineDimension) return false;
    }
  }
  const auto k = static_cast<int64_t>(tile.size());
  // Tiles split the k most minor dims; the dims above them are whole slabs one after another,
  // so only their product matters, and they merge into the first tiled dim when it is a
  // multiple of its tile size (no padding between slabs).
  const auto canonical = [&](const isa::Shape& s, int64_t& major, std::vector<int64_t>& minor) {
    if (s.rank() < k) return false;
    const std::vector<int64_t> physical = PhysicalDims(s);
    major = 1;
    for (int64_t d = 0; d < s.rank() - k; ++d) major *= physical[d];
    minor.assign(physical.end() - k, physical.end());
    if (minor[0] % tile[0] == 0) {
      minor[0] *= major;
      major = 1;
    }
    return true;
  };
  int64_t major_a = 0, major_b = 0;
  std::vector<int64_t> minor_a, minor_b;
  if (!canonical(a, major_a, minor_a) || !canonical(b, major_b, minor_b)) return false;
  return major_a == major_b && minor_a == minor_b;
}

// A one-element array seen as a scalar: the element is the array's first bytes whatever its
// tiles (index 0 of every tile), so the scalar is a view of them (Gemma's cache positions,
// s32[1]{0:T(1024)} -> s32[], read by the scalar core).
bool OneElementAsScalar(const isa::Shape& array, const isa::Shape& scalar) {
  return !array.is_tuple && !scalar.is_tuple && scalar.rank() == 0 && array.layout && scalar.layout &&
         array.element_type == scalar.element_type && isa::ElementCount(array) == 1 &&
         array.layout->dynamic_shape_metadata_prefix_bytes == 0 && array.layout->memory_space == scalar.layout->memory_space;
}

bool IsAliasingReshape(const hlo::Instruction& instruction) {
  if (instruction.opcode() != hlo::Opcode::kReshape || instruction.operand_count() != 1) return false;
  const isa::Shape& operand = instruction.operand(0)->shape();
  return SameRowMajorImage(operand, instruction.shape()) || OneElementAsScalar(operand, instruction.shape());
}

bool IsAliasingTranspose(const hlo::Instruction& instruction) {
  if (instruction.opcode() != hlo::Opcode::kTranspose || instruction.operand_count() != 1) return false;
  const isa::Shape& operand = instruction.operand(0)->shape();
  const isa::Shape& result = instruction.shape();
  const auto* perm = instruction.Find<std::vector<int64_t>>("dimensions");
  if (perm == nullptr || operand.is_tuple || result.is_tuple || !operand.layout || !result.layout ||
      perm->size() != static_cast<std::size_t>(operand.rank()) || !operand.dynamic_dims.empty() ||
      !operand.layout->padded_dimensions.empty() || operand.layout->memory_space != result.layout->memory_space) {
    return false;
  }
  // The operand seen with result dim k being its dim perm[k] (the same bytes): the same dims in
  // the same layout as the result, or row-major images that merge and split alike.
  const isa::Shape view = PermutedView(operand, *perm);
  const isa::Shape plain_result = WithoutMemorySpace(result);
  return view == plain_result || SameRowMajorImage(view, plain_result);
}

std::optional<uint64_t> AliasingSliceOffset(const hlo::Instruction& instruction) {
  if (instruction.opcode() != hlo::Opcode::kSlice || instruction.operand_count() != 1) return std::nullopt;
  const isa::Shape& operand = instruction.operand(0)->shape();
  const isa::Shape& result = instruction.shape();
  if (operand.is_tuple || result.is_tuple || !operand.layout || !result.layout || *operand.layout != *result.layout ||
      !operand.dynamic_dims.empty() || !operand.layout->padded_dimensions.empty() || operand.rank() != result.rank()) {
    return std::nullopt;
  }
  const std::vector<hlo::SliceDimension>& slice = instruction.GetSlice();
  const std::vector<int64_t>& minor_to_major = operand.layout->minor_to_major;
  if (slice.size() != static_cast<std::size_t>(operand.rank()) || minor_to_major.size() != slice.size()) return std::nullopt;
  // The most major dim longer than 1, and how many of the most minor dims the first tile covers.
  std::size_t major_at = 0;
  for (std::size_t at = 0; at < minor_to_major.size(); ++at) {
    if (operand.dims[minor_to_major[at]] > 1) major_at = at;
  }
  const int64_t major = minor_to_major.empty() ? 0 : minor_to_major[major_at];
  const std::size_t tiled = operand.layout->tiles.empty() ? 0 : operand.layout->tiles[0].dims.size();
  for (std::size_t d = 0; d < slice.size(); ++d) {
    const bool whole = slice[d].start == 0 && slice[d].limit == operand.dims[d];
    if (slice[d].stride != 1 || (static_cast<int64_t>(d) != major && !whole)) return std::nullopt;
  }
  if (minor_to_major.empty() || (major_at < tiled && slice[major].limit - slice[major].start != operand.dims[major])) {
    return std::nullopt;
  }
  // Equal slabs of the major dim, the result as many of them as it keeps.
  const uint64_t operand_bytes = static_cast<uint64_t>(isa::LayoutMap(operand).byte_size());
  const uint64_t extent = static_cast<uint64_t>(operand.dims[major]);
  if (extent == 0 || operand_bytes % extent != 0) return std::nullopt;
  const uint64_t slab = operand_bytes / extent;
  if (static_cast<uint64_t>(isa::LayoutMap(result).byte_size()) != static_cast<uint64_t>(slice[major].limit - slice[major].start) * slab) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(slice[major].start) * slab;
}

bool IsAliasingInstruction(const hlo::Instruction& instruction) {
  switch (instruction.opcode()) {
    case hlo::Opcode::kTuple:
    case hlo::Opcode::kGetTupleElement:
    case hlo::Opcode::kBitcast:
    case hlo::Opcode::kOptimizationBarrier:
    case hlo::Opcode::kAddDependency:
    case hlo::Opcode::kAfterAll:
      return true;
    case hlo::Opcode::kReshape:
      return IsAliasingReshape(instruction);
    case hlo::Opcode::kTranspose:
      return IsAliasingTranspose(instruction);
    case hlo::Opcode::kSlice:
      return IsAliasingSlice(instruction);
    case hlo::Opcode::kCustomCall:
      return IsIdentityCustomCall(instruction);
    default:
      return false;
  }
}

std::vector<const hlo::Instruction*> Schedule(const hlo::Computation& computation) {
  std::vector<const hlo::Instruction*> order;
  std::unordered_set<const hlo::Instruction*> done;
  std::unordered_set<const hlo::Instruction*> visiting;
  std::function<void(const hlo::Instruction*)> visit = [&](const hlo::Instruction* instruction) {
    if (done.contains(instruction)) return;
    if (!visiting.insert(instruction).second) {
      throw Error(instruction->Describe() + ": is its own operand (a cycle)");
    }
    for (const hlo::Instruction* operand : instruction->operands()) visit(operand);
    for (const hlo::Instruction* predecessor : instruction->control_predecessors()) visit(predecessor);
    visiting.erase(instruction);
    done.insert(instruction);
    order.push_back(instruction);
  };
  // Broadcasts and iotas read little and write much: they wait for their first reader, so their
  // results do not live (and hold HBM) from where the text happens to put them.
  const auto deferred = [](const hlo::Instruction& instruction) {
    return (instruction.opcode() == hlo::Opcode::kBroadcast || instruction.opcode() == hlo::Opcode::kIota) &&
           !instruction.is_root();
  };
  for (const auto& instruction : computation.instructions()) {
    if (!deferred(*instruction)) visit(instruction.get());
  }
  for (const auto& instruction : computation.instructions()) visit(instruction.get());  // unread ones
  return order;
}

uint64_t BufferAssignment::LiveTopAt(std::size_t position) const {
  uint64_t top = base_address;
  for (const auto& buffer : buffers) {
    if (buffer->in_host_memory() || buffer->first > position || buffer->last < position) continue;
    top = std::max(top, buffer->address + AlignUp(std::max<uint64_t>(buffer->size_bytes, 1), kBufferAlignmentBytes));
  }
  return top;
}

uint64_t BufferAssignment::HostLiveTopAt(std::size_t position) const {
  uint64_t top = host_base_address;
  for (const auto& buffer : buffers) {
    if (!buffer->in_host_memory() || buffer->first > position || buffer->last < position) continue;
    top = std::max(top, buffer->address + AlignUp(std::max<uint64_t>(buffer->size_bytes, 1), kBufferAlignmentBytes));
  }
  return top;
}

std::pair<uint64_t, uint64_t> BufferAssignment::LargestFreeAt(std::size_t position, uint64_t top,
                                                              uint64_t capacity) const {
  std::pair<uint64_t, uint64_t> largest{top, capacity > top ? capacity - top : 0};
  std::vector<std::pair<uint64_t, uint64_t>> live;  // [begin, end) of the buffers live at `position`
  for (const auto& buffer : buffers) {
    if (buffer->in_host_memory() || buffer->first > position || buffer->last < position) continue;
    live.emplace_back(buffer->address,
                      buffer->address + AlignUp(std::max<uint64_t>(buffer->size_bytes, 1), kBufferAlignmentBytes));
  }
  std::sort(live.begin(), live.end());
  const uint64_t own_end = std::min(peak_bytes, top);
  uint64_t free_from = base_address;
  for (const auto& [begin, end] : live) {
    if (begin >= own_end) break;
    if (begin > free_from && begin - free_from > largest.second) largest = {free_from, begin - free_from};
    free_from = std::max(free_from, end);
  }
  if (own_end > free_from && own_end - free_from > largest.second) largest = {free_from, own_end - free_from};
  return largest;
}

std::string CapacityNote(const std::string& name, uint64_t capacity_bytes) {
  if (name.empty()) return "";
  return " (" + name + " = " + std::to_string(capacity_bytes >> 20) + " MiB)";
}

BufferAssignment AssignBuffers(const std::vector<const hlo::Instruction*>& schedule, uint64_t hbm_capacity_bytes,
                               const KernelOf& computed_inside, const NestedBinding& binding,
                               const Donations& donations, uint64_t host_capacity_bytes, const CapacityNames& names) {
  BufferAssignment result;
  result.peak_bytes = binding.base_address;
  result.base_address = binding.base_address;
  result.host_peak_bytes = binding.host_base_address;
  result.host_base_address = binding.host_base_address;
  const std::size_t end = schedule.size();
  std::unordered_map<const hlo::Instruction*, std::size_t> position;
  for (std::size_t i = 0; i < schedule.size(); ++i) position[schedule[i]] = i;
  // Views of part of their source's bytes (aliasing slices), and where in the source they begin.
  std::unordered_map<const DeviceBuffer*, uint64_t> view_offsets;

  // Values: new buffers for writing instructions, the operands' buffers for aliases.
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const hlo::Instruction& instruction = *schedule[i];
    std::vector<const DeviceBuffer*>& leaves = result.leaves[&instruction];
    if (computed_inside.contains(&instruction)) continue;  // a value inside another kernel
    if (const auto given = binding.bound.find(&instruction); given != binding.bound.end()) {
      leaves = given->second;
      continue;
    }
    const auto operand_leaves = [&](std::size_t operand) -> const std::vector<const DeviceBuffer*>& {
      return result.leaves.at(instruction.operand(operand));
    };
    switch (instruction.opcode()) {
      case hlo::Opcode::kTuple:
      case hlo::Opcode::kOptimizationBarrier:
        for (std::size_t k = 0; k < instruction.operand_count(); ++k) {
          const auto& from = operand_leaves(k);
          leaves.insert(leaves.end(), from.begin(), from.end());
        }
        continue;
      case hlo::Opcode::kGetTupleElement: {
        const auto [begin, stop] =
            ElementLeafRange(instruction.operand(0)->shape(), instruction.GetInt("index"));
        const auto& from = operand_leaves(0);
        leaves.assign(from.begin() + static_cast<std::ptrdiff_t>(begin), from.begin() + static_cast<std::ptrdiff_t>(stop));
        continue;
      }
      case hlo::Opcode::kAddDependency:
        leaves = operand_leaves(0);
        continue;
      case hlo::Opcode::kAfterAll:
        leaves = {nullptr};
        continue;
      case hlo::Opcode::kCustomCall:
        if (!IsIdentityCustomCall(instruction)) break;
        [[fallthrough]];
      case hlo::Opcode::kReshape:
        if (instruction.opcode() == hlo::Opcode::kReshape && !IsAliasingReshape(instruction)) break;
        [[fallthrough]];
      case hlo::Opcode::kTranspose:
        if (instruction.opcode() == hlo::Opcode::kTranspose && !IsAliasingTranspose(instruction)) break;
        [[fallthrough]];
      case hlo::Opcode::kSlice:
        if (instruction.opcode() == hlo::Opcode::kSlice && !IsAliasingSlice(instruction)) break;
        [[fallthrough]];
      case hlo::Opcode::kBitcast: {
        const DeviceBuffer* source = operand_leaves(0).at(0);
        const uint64_t size = isa::LayoutMap(instruction.shape()).byte_size();
        const uint64_t offset = AliasingSliceOffset(instruction).value_or(0);
        if (source == nullptr || offset + size > source->size_bytes) {
          throw Error(instruction.Describe() + ": a bitcast to " + isa::ToString(instruction.shape()) +
                      " needs " + std::to_string(size) + " bytes but its operand's buffer holds " +
                      std::to_string(source ? source->size_bytes : 0));
        }
        // The same bytes seen with another shape (a slice: some of them, from `offset` on).
        auto view = std::make_unique<DeviceBuffer>(*source);
        view->name = instruction.name();
        view->shape = instruction.shape();
        view->size_bytes = size;
        if (offset != 0 || size != source->size_bytes) view_offsets[view.get()] = offset;
        leaves = {view.get()};
        result.buffers.push_back(std::move(view));
        continue;
      }
      default:
        break;
    }
    const std::vector<const isa::Shape*> shapes = ArrayLeaves(instruction.shape());
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      if (shapes[k]->element_type == isa::ElementType::kToken) {
        leaves.push_back(nullptr);
        continue;
      }
      auto buffer = std::make_unique<DeviceBuffer>();
      buffer->name = shapes.size() == 1 && !instruction.shape().is_tuple
                         ? instruction.name()
                         : instruction.name() + "." + std::to_string(k);
      buffer->shape = *shapes[k];
      buffer->size_bytes = isa::LayoutMap(*shapes[k]).byte_size();
      buffer->first = LivesWholeProgram(instruction) ? 0 : i;
      buffer->last = LivesWholeProgram(instruction) ? end : i;
      leaves.push_back(buffer.get());
      result.buffers.push_back(std::move(buffer));
    }
  }

  // Lives: a buffer is read wherever a value holding it is an operand; the root's live to the end.
  std::unordered_map<const DeviceBuffer*, DeviceBuffer*> owned;
  for (const auto& buffer : result.buffers) owned[buffer.get()] = buffer.get();
  std::unordered_map<const DeviceBuffer*, std::size_t> last_read;  // whole-program buffers included
  const auto extend = [&](const DeviceBuffer* buffer, std::size_t at) {
    if (buffer == nullptr || !owned.contains(buffer)) return;  // a token, or a buffer given by the caller
    DeviceBuffer* mutable_buffer = owned.at(buffer);
    mutable_buffer->last = std::max(mutable_buffer->last, at);
    last_read[buffer] = std::max(last_read[buffer], at);
  };
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const auto kernel = computed_inside.find(schedule[i]);
    const std::size_t at = kernel == computed_inside.end() ? i : position.at(kernel->second);
    for (const hlo::Instruction* operand : schedule[i]->operands()) {
      for (const DeviceBuffer* buffer : result.leaves.at(operand)) extend(buffer, at);
    }
  }
  const hlo::Instruction* root = schedule.empty() ? nullptr : schedule.back()->parent()->root();
  if (root != nullptr) {
    for (const DeviceBuffer* buffer : result.leaves.at(root)) extend(buffer, end);
  }
  // Bitcast views (and reshapes that are bitcasts) share their source's bytes: the source lives as long as any view.
  std::unordered_map<const DeviceBuffer*, const DeviceBuffer*> view_of;
  for (const hlo::Instruction* instruction : schedule) {
    // A view computed inside a kernel (a step of an array view, compiler/lower/array_view.h) has no bytes.
    if (!IsView(*instruction) || computed_inside.contains(instruction)) continue;
    const DeviceBuffer* view = result.leaves.at(instruction).at(0);
    const DeviceBuffer* source = result.leaves.at(instruction->operand(0)).at(0);
    while (view_of.contains(source)) source = view_of.at(source);
    view_of[view] = source;
    if (!owned.contains(source)) continue;  // a view of a given buffer: its address is fixed
    DeviceBuffer* mutable_source = owned.at(source);
    mutable_source->last = std::max(mutable_source->last, view->last);
  }
  const auto root_of = [&](const DeviceBuffer* buffer) {
    while (view_of.contains(buffer)) buffer = view_of.at(buffer);
    return buffer;
  };
  // Where a buffer's bytes begin in its root's, and whether it is only part of them (a slice).
  const auto offset_in_root = [&](const DeviceBuffer* buffer) {
    uint64_t offset = 0;
    for (; view_of.contains(buffer); buffer = view_of.at(buffer)) {
      if (const auto it = view_offsets.find(buffer); it != view_offsets.end()) offset += it->second;
    }
    return offset;
  };
  const auto is_part = [&](const DeviceBuffer* buffer) {
    for (; view_of.contains(buffer); buffer = view_of.at(buffer)) {
      if (view_offsets.contains(buffer)) return true;
    }
    return false;
  };
  // A dynamic-update-slice into an array that nothing reads afterwards updates it in place, as
  // XLA does with a scan's stacked activations: its result is the array it updates (the kernel
  // writes the update alone), so no second array of that size exists, and a while body's result
  // is the loop state itself (no copy back). In a while body the state may be updated so
  // (binding.parameters_writable); arrays that live for the whole program (parameters, outputs)
  // may not.
  const auto read_after = [&](const DeviceBuffer* target, std::size_t at) {
    for (std::size_t j = 0; j < schedule.size(); ++j) {
      const auto kernel = computed_inside.find(schedule[j]);
      const std::size_t reader = kernel == computed_inside.end() ? j : position.at(kernel->second);
      // Aliases read nothing (what reads their values reads the target), and the root is below.
      if (reader <= at || IsAliasingInstruction(*schedule[j])) continue;
      for (const hlo::Instruction* operand : schedule[j]->operands()) {
        for (const DeviceBuffer* buffer : result.leaves.at(operand)) {
          if (buffer != nullptr && root_of(buffer) == target) return true;
        }
      }
    }
    if (root == nullptr) return false;
    const auto& outputs = result.leaves.at(root);
    return std::any_of(outputs.begin(), outputs.end(),
                       [&](const DeviceBuffer* b) { return b != nullptr && root_of(b) == target; });
  };
  // The given buffers a kernel may write over: a while body's loop state (its parameter's leaves,
  // which the body's result replaces anyway), never a constant of the pool, which every iteration
  // reads afresh. An owned buffer may be written unless it lives for the whole program.
  std::unordered_set<const DeviceBuffer*> writable_given;
  if (binding.parameters_writable) {
    for (const auto& [instruction, leaves] : binding.bound) {
      if (instruction->opcode() != hlo::Opcode::kParameter) continue;
      for (const DeviceBuffer* leaf : leaves) writable_given.insert(leaf);
    }
  }
  const auto may_take = [&](const DeviceBuffer* target) {
    return owned.contains(target) ? target->last != end : writable_given.contains(target);
  };
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const hlo::Instruction& instruction = *schedule[i];
    if (instruction.opcode() != hlo::Opcode::kDynamicUpdateSlice || computed_inside.contains(&instruction) ||
        binding.bound.contains(&instruction)) {
      continue;
    }
    const DeviceBuffer* written = result.leaves.at(&instruction).at(0);
    if (written == nullptr || !owned.contains(written) || view_of.contains(written)) {
      continue;
    }
    const DeviceBuffer* target = root_of(result.leaves.at(instruction.operand(0)).at(0));
    const DeviceBuffer* update = result.leaves.at(instruction.operand(1)).at(0);
    if (target == nullptr || target->shape != written->shape || (update != nullptr && root_of(update) == target)) {
      continue;
    }
    if (!may_take(target) || read_after(target, i)) continue;
    view_of[written] = target;
    if (owned.contains(target)) owned.at(target)->last = std::max(target->last, written->last);
  }
  // An element-wise kernel writes its result over an operand of the same shape and layout that
  // nothing reads afterwards, as XLA's buffer assignment lets an element-wise user (or a loop
  // fusion reading the operand element-wise) share its operand's buffer: the kernel reads each
  // block of the operand before it writes that block, and blocks map one to one. So an
  // accumulation in a while body (the attention loop's dk.next = add(dk, dk.blk)) updates the loop
  // state in place, with no copy back. A kernel of its own qualifies when it is element-wise; a
  // fused group when `donations.may_overwrite` says its members read the operand only at the
  // result's indices (a broadcast member reading it could read any block). Never when another
  // operand of the kernel views the same bytes.
  //
  // A value's one buffer; none for a value computed inside another kernel.
  const auto array_leaf = [&](const hlo::Instruction* value) -> const DeviceBuffer* {
    const auto& leaves = result.leaves.at(value);
    return leaves.size() == 1 ? leaves[0] : nullptr;
  };
  // Each fused group's operands: what its members (in schedule order, then the root) read from
  // outside the kernel. One pass over the schedule, so the order does not depend on a hash map's.
  std::unordered_map<const hlo::Instruction*, std::vector<const hlo::Instruction*>> group_operands;
  const auto add_outside = [&](std::vector<const hlo::Instruction*>& operands, const hlo::Instruction& member) {
    for (const hlo::Instruction* operand : member.operands()) {
      if (computed_inside.contains(operand)) continue;
      if (std::find(operands.begin(), operands.end(), operand) == operands.end()) operands.push_back(operand);
    }
  };
  for (const hlo::Instruction* member : schedule) {
    const auto kernel = computed_inside.find(member);
    if (kernel != computed_inside.end()) add_outside(group_operands[kernel->second], *member);
  }
  for (auto& [group_root, operands] : group_operands) add_outside(operands, *group_root);
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const hlo::Instruction& instruction = *schedule[i];
    if (instruction.shape().is_tuple || computed_inside.contains(&instruction) || binding.bound.contains(&instruction)) {
      continue;
    }
    const auto group = group_operands.find(&instruction);
    const bool fused = group != group_operands.end();
    if (fused ? !donations.may_overwrite : !IsElementwiseOpcode(instruction.opcode())) continue;
    const std::vector<const hlo::Instruction*> operands =
        fused ? group->second : std::vector<const hlo::Instruction*>(instruction.operands().begin(), instruction.operands().end());
    const DeviceBuffer* written = array_leaf(&instruction);
    if (written == nullptr || !owned.contains(written) || view_of.contains(written)) continue;
    for (const hlo::Instruction* candidate : operands) {
      const DeviceBuffer* operand = array_leaf(candidate);
      const DeviceBuffer* target = operand == nullptr ? nullptr : root_of(operand);
      if (target == nullptr || operand->shape != written->shape || target->shape != written->shape) continue;
      if (fused && !donations.may_overwrite(instruction, *candidate)) continue;
      const bool other_view = std::any_of(operands.begin(), operands.end(), [&](const hlo::Instruction* other) {
        const DeviceBuffer* leaf = other == candidate ? nullptr : array_leaf(other);
        return leaf != nullptr && root_of(leaf) == target;
      });
      if (other_view || !may_take(target) || read_after(target, i)) continue;
      view_of[written] = target;
      if (owned.contains(target)) owned.at(target)->last = std::max(target->last, written->last);
      break;
    }
  }
  // A while loop's state takes over its init's buffers when nothing reads them after the loop (as
  // XLA's buffer assignment does): no second copy of the state, and no copy into it. Where several
  // leaves of the init are one buffer (MaxText's scan starts two 4 GiB stacks from one broadcast
  // of zeros), the first leaf takes it over and the others are copied from it as the loop starts,
  // before anything writes it (compiler/lower/control_flow.cc), so it is not held beside them.
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const hlo::Instruction& instruction = *schedule[i];
    if (instruction.opcode() != hlo::Opcode::kWhile || binding.bound.contains(&instruction)) continue;
    const std::vector<const DeviceBuffer*>& init = result.leaves.at(instruction.operand(0));
    const std::vector<const DeviceBuffer*>& state = result.leaves.at(&instruction);
    std::unordered_set<const DeviceBuffer*> taken_over;
    for (std::size_t k = 0; k < init.size() && k < state.size(); ++k) {
      if (init[k] == nullptr || state[k] == nullptr || !owned.contains(state[k])) continue;
      const DeviceBuffer* root = root_of(init[k]);
      if (!owned.contains(root) || root->last != i || init[k]->shape != state[k]->shape || is_part(init[k])) continue;
      if (!taken_over.insert(root).second) continue;
      view_of[state[k]] = root;
      owned.at(root)->last = std::max(root->last, state[k]->last);
    }
  }
  // Donated parameters: the output's buffer (through its views) becomes a view of the parameter's.
  if (root != nullptr) {
    std::unordered_map<const DeviceBuffer*, std::size_t> last_read_of_root;
    for (const auto& [buffer, at] : last_read) {
      std::size_t& last = last_read_of_root[root_of(buffer)];
      last = std::max(last, at);
    }
    std::unordered_set<const DeviceBuffer*> taken;
    std::unordered_set<const DeviceBuffer*> whole_program;  // parameters' and constants' buffers
    for (const hlo::Instruction* instruction : schedule) {
      if (!LivesWholeProgram(*instruction)) continue;
      for (const DeviceBuffer* buffer : result.leaves.at(instruction)) whole_program.insert(buffer);
    }
    for (const DonatedParameter& alias : donations.aliases) {
      const std::vector<const DeviceBuffer*>& outputs = result.leaves.at(root);
      const std::vector<const DeviceBuffer*>& parameters = result.leaves.at(alias.parameter);
      if (alias.output_leaf >= outputs.size() || alias.parameter_leaf >= parameters.size()) continue;
      const DeviceBuffer* parameter = parameters[alias.parameter_leaf];
      const DeviceBuffer* output = outputs[alias.output_leaf];
      if (parameter == nullptr || output == nullptr) continue;
      const DeviceBuffer* written = root_of(output);
      if (!owned.contains(written) || whole_program.contains(written) || written == parameter ||
          written->shape != parameter->shape || view_of.contains(parameter) || taken.contains(parameter)) {
        continue;
      }
      const std::size_t parameter_read = last_read_of_root[parameter];
      const hlo::Instruction& writer = *schedule[written->first];
      const bool in_place = parameter_read == written->first && donations.may_overwrite &&
                            donations.may_overwrite(writer, *alias.parameter);
      if (parameter_read > written->first || (parameter_read == written->first && !in_place)) continue;
      view_of[written] = parameter;
      taken.insert(parameter);
    }
  }
  // Called computations' regions: buffers of their own, live at their instruction only.
  std::vector<std::pair<const hlo::Instruction*, const DeviceBuffer*>> regions;
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    const auto region = binding.regions.find(schedule[i]);
    if (region == binding.regions.end() || region->second == 0) continue;
    auto buffer = std::make_unique<DeviceBuffer>();
    buffer->name = schedule[i]->name() + ".callees";
    buffer->shape = isa::Shape::Array(isa::ElementType::kU8, {static_cast<int64_t>(region->second)});
    buffer->size_bytes = region->second;
    buffer->first = buffer->last = i;
    regions.emplace_back(schedule[i], buffer.get());
    result.buffers.push_back(std::move(buffer));
  }
  // Addresses: HBM and the host heap each placed on its own (PlaceBuffers).
  std::vector<DeviceBuffer*> hbm;
  std::vector<DeviceBuffer*> host;
  for (const auto& buffer : result.buffers) {
    if (view_of.contains(buffer.get())) continue;  // views go with their source
    (buffer->in_host_memory() ? host : hbm).push_back(buffer.get());
  }
  const auto fail = [&](const std::vector<DeviceBuffer*>& placed, uint64_t peak, uint64_t capacity,
                        std::string_view memory, std::string_view capacity_owner, const std::string& capacity_name) {
    // Name the instruction where the most bytes are live, and what they are.
    const LivePeak live = FindLivePeak(schedule, placed);
    throw Error(schedule.at(live.position)->Describe() + ": the module needs " + std::to_string(peak) + " bytes of " +
                std::string(memory) + " at its peak, more than the " + std::string(capacity_owner) + " " +
                std::to_string(capacity) + CapacityNote(capacity_name, capacity) + "; " + LargestLive(live));
  };
  result.peak_bytes = std::max(result.peak_bytes, PlaceBuffers(hbm, binding.base_address, hbm_capacity_bytes));
  if (result.peak_bytes > hbm_capacity_bytes) fail(hbm, result.peak_bytes, hbm_capacity_bytes, "HBM", "chip's", names.hbm);
  result.live_peak = FindLivePeak(schedule, hbm);
  result.host_peak_bytes = std::max(result.host_peak_bytes, PlaceBuffers(host, binding.host_base_address, host_capacity_bytes));
  if (result.host_peak_bytes > host_capacity_bytes) {
    fail(host, result.host_peak_bytes, host_capacity_bytes, "host memory for host arrays (S(5))", "host's", names.host);
  }
  for (const auto& entry : view_of) owned.at(entry.first)->address = root_of(entry.first)->address + offset_in_root(entry.first);
  // The regions are no values: only their addresses stay.
  for (const auto& [instruction, region] : regions) result.regions[instruction] = region->address;
  std::erase_if(result.buffers, [&](const std::unique_ptr<DeviceBuffer>& buffer) {
    return std::any_of(regions.begin(), regions.end(), [&](const auto& region) { return region.second == buffer.get(); });
  });
  return result;
}

}  // namespace tpusim::compiler
