#include "compiler/passes/buffer_assignment.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_set>

#include "isa/error.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

uint64_t AlignUp(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

void FlattenShape(const isa::Shape& shape, std::vector<const isa::Shape*>& out) {
  if (shape.is_tuple) {
    for (const isa::Shape& element : shape.tuple_shapes) FlattenShape(element, out);
    return;
  }
  out.push_back(&shape);
}

// Leaves of tuple element `index` of a value whose shape is `shape`: [begin, end) in its flattening.
std::pair<std::size_t, std::size_t> ElementLeafRange(const isa::Shape& shape, int64_t index) {
  std::size_t begin = 0;
  for (int64_t i = 0; i < index; ++i) {
    std::vector<const isa::Shape*> leaves;
    FlattenShape(shape.tuple_shapes.at(i), leaves);
    begin += leaves.size();
  }
  std::vector<const isa::Shape*> leaves;
  FlattenShape(shape.tuple_shapes.at(index), leaves);
  return {begin, begin + leaves.size()};
}

bool IsRowMajor(const isa::Layout& layout) {
  return layout.minor_to_major == isa::MajorToMinorOrder(static_cast<int64_t>(layout.minor_to_major.size()));
}

// Instructions whose value is their operand's bytes seen with another shape.
bool IsView(const hlo::Instruction& instruction) {
  return instruction.opcode() == hlo::Opcode::kBitcast || IsAliasingReshape(instruction);
}

bool LivesWholeProgram(const hlo::Instruction& instruction) {
  return instruction.opcode() == hlo::Opcode::kParameter || instruction.opcode() == hlo::Opcode::kConstant;
}

}  // namespace

bool SameRowMajorImage(const isa::Shape& a, const isa::Shape& b) {
  if (a.is_tuple || b.is_tuple || !a.layout || !b.layout || a.element_type != b.element_type) return false;
  if (isa::ElementCount(a) != isa::ElementCount(b)) return false;
  const auto plain = [](const isa::Shape& s) {
    const isa::Layout& l = *s.layout;
    return IsRowMajor(l) && l.padded_dimensions.empty() && l.tail_padding_alignment_in_elements == 1 &&
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
    major = 1;
    for (int64_t d = 0; d < s.rank() - k; ++d) major *= s.dims[d];
    minor.assign(s.dims.end() - k, s.dims.end());
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

bool IsAliasingReshape(const hlo::Instruction& instruction) {
  return instruction.opcode() == hlo::Opcode::kReshape && instruction.operand_count() == 1 &&
         SameRowMajorImage(instruction.operand(0)->shape(), instruction.shape());
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
  for (const auto& instruction : computation.instructions()) visit(instruction.get());
  return order;
}

BufferAssignment AssignBuffers(const std::vector<const hlo::Instruction*>& schedule, uint64_t hbm_capacity_bytes,
                               const KernelOf& computed_inside, const NestedBinding& binding) {
  BufferAssignment result;
  result.peak_bytes = binding.base_address;
  const std::size_t end = schedule.size();
  std::unordered_map<const hlo::Instruction*, std::size_t> position;
  for (std::size_t i = 0; i < schedule.size(); ++i) position[schedule[i]] = i;

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
      case hlo::Opcode::kReshape:
        if (!IsAliasingReshape(instruction)) break;
        [[fallthrough]];
      case hlo::Opcode::kBitcast: {
        const DeviceBuffer* source = operand_leaves(0).at(0);
        const uint64_t size = isa::LayoutMap(instruction.shape()).byte_size();
        if (source == nullptr || size > source->size_bytes) {
          throw Error(instruction.Describe() + ": a bitcast to " + isa::ToString(instruction.shape()) +
                      " needs " + std::to_string(size) + " bytes but its operand's buffer holds " +
                      std::to_string(source ? source->size_bytes : 0));
        }
        // The same bytes seen with another shape.
        auto view = std::make_unique<DeviceBuffer>(*source);
        view->name = instruction.name();
        view->shape = instruction.shape();
        view->size_bytes = size;
        leaves = {view.get()};
        result.buffers.push_back(std::move(view));
        continue;
      }
      default:
        break;
    }
    std::vector<const isa::Shape*> shapes;
    FlattenShape(instruction.shape(), shapes);
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
  const auto extend = [&](const DeviceBuffer* buffer, std::size_t at) {
    if (buffer == nullptr || !owned.contains(buffer)) return;  // a token, or a buffer given by the caller
    DeviceBuffer* mutable_buffer = owned.at(buffer);
    mutable_buffer->last = std::max(mutable_buffer->last, at);
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
    if (!IsView(*instruction)) continue;
    const DeviceBuffer* view = result.leaves.at(instruction).at(0);
    const DeviceBuffer* source = result.leaves.at(instruction->operand(0)).at(0);
    while (view_of.contains(source)) source = view_of.at(source);
    view_of[view] = source;
    if (!owned.contains(source)) continue;  // a view of a given buffer: its address is fixed
    DeviceBuffer* mutable_source = owned.at(source);
    mutable_source->last = std::max(mutable_source->last, view->last);
  }
  // First fit in order of first write; a buffer's space is free after its last read.
  struct Placed { uint64_t begin, end; std::size_t last; };
  std::vector<Placed> active;
  std::vector<DeviceBuffer*> order;
  for (const auto& buffer : result.buffers) order.push_back(buffer.get());
  std::stable_sort(order.begin(), order.end(), [](const DeviceBuffer* a, const DeviceBuffer* b) { return a->first < b->first; });
  for (DeviceBuffer* buffer : order) {
    if (view_of.contains(buffer)) continue;  // placed with its source below
    std::erase_if(active, [&](const Placed& placed) { return placed.last < buffer->first; });
    std::sort(active.begin(), active.end(), [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
    const uint64_t size = AlignUp(std::max<uint64_t>(buffer->size_bytes, 1), kBufferAlignmentBytes);
    uint64_t address = binding.base_address;
    for (const Placed& placed : active) {
      if (address + size <= placed.begin) break;
      address = std::max(address, placed.end);
    }
    buffer->address = address;
    active.push_back({address, address + size, buffer->last});
    if (address + size > result.peak_bytes) {
      result.peak_bytes = address + size;
      if (result.peak_bytes > hbm_capacity_bytes) {
        const hlo::Instruction* at = schedule.at(std::min(buffer->first, schedule.size() - 1));
        throw Error(at->Describe() + ": the module needs at least " + std::to_string(result.peak_bytes) +
                    " bytes of HBM here (buffer '" + buffer->name + "', " + std::to_string(buffer->size_bytes) +
                    " bytes), more than the chip's " + std::to_string(hbm_capacity_bytes));
      }
    }
  }
  for (const auto& [view, source] : view_of) owned.at(view)->address = source->address;
  return result;
}

}  // namespace tpusim::compiler
