#include "compiler/lower/control_flow.h"

#include <fmt/format.h>
#include <algorithm>
#include <set>

#include "compiler/lower/kernel.h"
#include "compiler/lower/while_state.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;
using namespace isa::ops;


// Copies of whole byte images between HBM and host memory (host arrays: host offload): pieces of
// at least 256 KiB spread over the engines, all signalling semaphore 0.
class FlatCopier {
 public:
  explicit FlatCopier(ProgramBuilder& out) : out_(out) {}

  void Copy(isa::MemorySpace from_space, uint64_t from, isa::MemorySpace to_space, uint64_t to, uint64_t bytes) {
    if (bytes == 0) return;
    const uint64_t engines = out_.target().dma_engines();
    const uint64_t piece = std::max<uint64_t>(AlignUp((bytes + engines - 1) / engines, 4096), 256 * 1024);
    for (uint64_t offset = 0; offset < bytes; offset += piece) {
      EmitFlatDma(out_, from_space, from + offset, to_space, to + offset, std::min(piece, bytes - offset), 0,
                  static_cast<uint32_t>(next_engine_++ % engines));
      ++pending_;
    }
  }
  void Wait() {
    if (pending_ > 0) out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(0), pending_});
    pending_ = 0;
  }

 private:
  ProgramBuilder& out_;
  uint64_t pending_ = 0;
  uint64_t next_engine_ = 0;
};

bool Overlap(const DeviceBuffer& a, const DeviceBuffer& b) {
  return a.space() == b.space() && a.address < b.address + b.size_bytes && b.address < a.address + a.size_bytes;
}

bool SameBuffer(const DeviceBuffer& a, const DeviceBuffer& b) {
  return a.space() == b.space() && a.address == b.address && a.size_bytes == b.size_bytes;
}

// The shape without its memory space: a flat copy between HBM and host memory keeps the image.
isa::Shape ImageShape(isa::Shape shape) {
  if (shape.layout) shape.layout->memory_space = isa::kMemorySpaceHbm;
  return shape;
}

// Checks that sources[k] can be copied byte for byte onto destinations[k].
void CheckCopyable(const hlo::Instruction& at, const std::vector<const DeviceBuffer*>& sources,
                   const std::vector<const DeviceBuffer*>& destinations, std::string_view what) {
  if (sources.size() != destinations.size()) {
    CannotLower(at, fmt::format("{} has {} leaves where {} are expected", what, sources.size(), destinations.size()));
  }
  for (std::size_t k = 0; k < sources.size(); ++k) {
    if ((sources[k] == nullptr) != (destinations[k] == nullptr)) {
      CannotLower(at, fmt::format("{}: leaf {} is a token on one side only", what, k));
    }
    if (sources[k] == nullptr) continue;
    if (!(ImageShape(sources[k]->shape) == ImageShape(destinations[k]->shape))) {
      // A flat copy keeps the zero padding; a re-tiling copy would need the copy kernel's care.
      CannotLower(at, fmt::format("{}: leaf {} is {} but its destination is {}; layouts must agree", what, k,
                                  isa::ToString(sources[k]->shape), isa::ToString(destinations[k]->shape)));
    }
  }
}

// Whether copying `source` onto `destination` moves anything (a leaf already in place does not).
bool Moves(const DeviceBuffer* source, const DeviceBuffer* destination) {
  return source != nullptr && !SameBuffer(*source, *destination);
}

// The bytes of the leaves a copy of sources onto destinations moves: a leaf already in place
// (MaxText's and Llama's weights, passed through their layer loops) moves none.
uint64_t CopiedBytes(const std::vector<const DeviceBuffer*>& sources, const std::vector<const DeviceBuffer*>& destinations) {
  uint64_t bytes = 0;
  for (std::size_t k = 0; k < sources.size(); ++k) {
    if (Moves(sources[k], destinations[k])) bytes += destinations[k]->size_bytes;
  }
  return bytes;
}

bool NeedsCopies(const std::vector<const DeviceBuffer*>& sources, const std::vector<const DeviceBuffer*>& destinations) {
  for (std::size_t k = 0; k < sources.size(); ++k) {
    if (Moves(sources[k], destinations[k])) return true;
  }
  return false;
}

// sources[k] -> destinations[k]. A source overlapping some destination other than its own (a
// permuted loop state, or a view of one) is first copied to `scratch` and copied on from there
// after every such staging copy is done, so no copy reads what another one writes.
void EmitLeafCopies(ControlFlowContext& c, const std::vector<const DeviceBuffer*>& sources,
                    const std::vector<const DeviceBuffer*>& destinations, uint64_t scratch) {
  ProgramBuilder& out = c.out;
  std::vector<uint64_t> from(sources.size());
  std::vector<isa::MemorySpace> from_space(sources.size(), isa::MEMORY_SPACE_HBM);
  FlatCopier staging(out);
  for (std::size_t k = 0; k < sources.size(); ++k) {
    if (sources[k] == nullptr) continue;
    from[k] = sources[k]->address;
    from_space[k] = sources[k]->memory_space();
    if (SameBuffer(*sources[k], *destinations[k])) continue;
    // Only a destination that is written clobbers: one that is its own source (a loop state that
    // took over its init's buffer) keeps its bytes, so a leaf copied from that buffer reads it.
    bool clobbered = false;
    for (std::size_t j = 0; j < destinations.size(); ++j) {
      const bool written =
          destinations[j] != nullptr && sources[j] != nullptr && !SameBuffer(*sources[j], *destinations[j]);
      clobbered = clobbered || (written && Overlap(*sources[k], *destinations[j]));
    }
    if (!clobbered) continue;
    const uint64_t size = AlignUp(std::max<uint64_t>(sources[k]->size_bytes, 1), kBufferAlignmentBytes);
    if (scratch + size > c.options.hbm_capacity_bytes) {
      throw Error(c.instruction.Describe() + ": staging the loop state needs HBM up to " + std::to_string(scratch + size) +
                  " bytes, more than the chip's " + std::to_string(c.options.hbm_capacity_bytes) +
                  CapacityNote(c.options.capacity_names.hbm, c.options.hbm_capacity_bytes));
    }
    // Staged in HBM, host arrays too.
    staging.Copy(sources[k]->memory_space(), sources[k]->address, isa::MEMORY_SPACE_HBM, scratch, sources[k]->size_bytes);
    from[k] = scratch;
    from_space[k] = isa::MEMORY_SPACE_HBM;
    scratch += size;
  }
  staging.Wait();
  FlatCopier copies(out);
  for (std::size_t k = 0; k < sources.size(); ++k) {
    if (sources[k] == nullptr || SameBuffer(*sources[k], *destinations[k])) continue;
    copies.Copy(from_space[k], from[k], destinations[k]->memory_space(), destinations[k]->address, destinations[k]->size_bytes);
  }
  copies.Wait();
}

// Reports (as `name`) the copies of a called computation's root leaves into `destinations`.
void EmitResultCopies(ControlFlowContext& c, const std::string& name, const std::vector<const DeviceBuffer*>& sources,
                      const std::vector<const DeviceBuffer*>& destinations, uint64_t scratch, std::string_view what) {
  CheckCopyable(c.instruction, sources, destinations, what);
  if (!NeedsCopies(sources, destinations)) return;
  c.nested.EmitReported(name, "copy", c.instruction, 2 * CopiedBytes(sources, destinations),
                        [&] { EmitLeafCopies(c, sources, destinations, scratch); });
}

// s0 = the scalar in `buffer` (pred: 0 or 1; s32/u32 index), read HBM -> SMEM[0] -> register.
void ReadScalar(ControlFlowContext& c, const DeviceBuffer* buffer, std::string_view what) {
  if (buffer == nullptr || buffer->shape.rank() != 0) CannotLower(c.instruction, std::string(what) + " must be a scalar");
  const isa::ElementType type = buffer->shape.element_type;
  ProgramBuilder& out = c.out;
  EmitFlatDma(out, buffer->memory_space(), buffer->address, isa::MEMORY_SPACE_SMEM, 0, buffer->size_bytes, 0, 0);
  out.Emit(isa::OPCODE_SEM_WAIT, {Sem(0), 1});
  switch (type) {
    case isa::ElementType::kPred:
      out.Emit(isa::OPCODE_LD_U32, {S(0), Smem(0x0)});
      out.Emit(isa::OPCODE_AND, {S(0), S(0), 0xff});  // the DMA wrote one byte of the word
      return;
    case isa::ElementType::kS32:
      out.Emit(isa::OPCODE_LD_S32, {S(0), Smem(0x0)});
      return;
    default:
      CannotLower(c.instruction, std::string(what) + " must be pred or s32, not " + isa::ToString(buffer->shape));
  }
}

// Where a called computation's result is staged on its way to the caller's buffers: above its
// own values and above everything the caller has live (its region may lie between them).
uint64_t StagingBase(const ControlFlowContext& c, const NestedResult& result) {
  return std::max(c.region_base, AlignUp(result.peak_bytes, kBufferAlignmentBytes));
}

std::string NestedPrefix(const ControlFlowContext& c, const hlo::Computation& callee) {
  return c.prefix + c.instruction.name() + "/" + callee.name() + "/";
}

// The state buffers whether `loop` ends depends on, for the simulator to watch (isa::Loop).
std::vector<ProgramBuilder::Region> EndingState(const hlo::Instruction& loop, const std::vector<const DeviceBuffer*>& state) {
  std::vector<ProgramBuilder::Region> regions;
  std::set<std::pair<std::string_view, uint64_t>> placed;
  for (std::size_t leaf : WhileEndingLeaves(loop)) {
    const DeviceBuffer* buffer = state.at(leaf);
    if (buffer == nullptr || buffer->size_bytes == 0) continue;  // a token holds nothing
    if (placed.insert({buffer->space(), buffer->address}).second) {
      regions.push_back({.space = buffer->memory_space(), .address = buffer->address, .size_bytes = buffer->size_bytes});
    }
  }
  return regions;
}

// The loop's counter (FindWhileCounter) where it has one, in its state buffer.
std::optional<ProgramBuilder::Counter> LoopCounterOf(const hlo::Instruction& loop, const std::vector<const DeviceBuffer*>& state) {
  const std::optional<WhileCounter> counter = FindWhileCounter(loop);
  if (!counter) return std::nullopt;
  const DeviceBuffer* buffer = state.at(counter->leaf);
  const uint64_t bytes = static_cast<uint64_t>(isa::ElementByteWidth(counter->type));
  if (buffer == nullptr || buffer->size_bytes < bytes || isa::ElementBitWidth(counter->type) % 8 != 0) return std::nullopt;
  return ProgramBuilder::Counter{.place = {.space = buffer->memory_space(), .address = buffer->address, .size_bytes = bytes},
                             .type = counter->type,
                             .step = counter->step,
                             .compare = counter->compare,
                             .bound = counter->bound};
}

void EmitWhile(ControlFlowContext& c) {
  const hlo::Instruction& x = c.instruction;
  const hlo::Computation& condition = *x.GetComputation("condition");
  const hlo::Computation& body = *x.GetComputation("body");
  ProgramBuilder& out = c.out;
  const std::vector<const DeviceBuffer*>& state = c.results;
  const std::string name = c.prefix + x.name();

  EmitResultCopies(c, name + "/init", c.operands.at(0), state, c.region_base, "the init");
  const std::string top = out.NewLabel(x.name() + ".condition");
  const std::string exit = out.NewLabel(x.name() + ".exit");
  // Labels name instructions, and the run marks a label each time its instruction is reached: the
  // init's end label must not be the loop's top, or every iteration would mark it again.
  out.Emit(isa::OPCODE_NOP);
  out.Bind(top);
  out.AddLoop(top, EndingState(x, state), LoopCounterOf(x, state));
  const NestedResult predicate = c.nested.EmitNested(condition, {state}, c.nested_base, NestedPrefix(c, condition));
  if (predicate.root.size() != 1) CannotLower(x, "the condition must return one pred");
  c.nested.EmitReported(name + "/predicate", "while", x, 1, [&] { ReadScalar(c, predicate.root[0], "the condition's result"); }, true);
  out.Emit(isa::OPCODE_BEQ, {S(0), 0, Label(exit)});
  const NestedResult next = c.nested.EmitNested(body, {state}, c.nested_base, NestedPrefix(c, body), true);
  EmitResultCopies(c, name + "/next_state", next.root, state, StagingBase(c, next),
                   "the body's result");
  out.Emit(isa::OPCODE_BR, {Label(top)});
  out.Bind(exit);
}

void EmitConditional(ControlFlowContext& c) {
  const hlo::Instruction& x = c.instruction;
  std::vector<const hlo::Computation*> branches = ControlFlowCallees(x);
  ProgramBuilder& out = c.out;
  const std::string name = c.prefix + x.name();
  if (c.operands.size() != branches.size() + 1) CannotLower(x, "expected one operand per branch after the selector");
  const bool by_pred = x.operand(0)->shape().element_type == isa::ElementType::kPred;
  c.nested.EmitReported(name + "/selector", "conditional", x, 4,
                        [&] { ReadScalar(c, c.operands.at(0).at(0), "the branch selector"); }, true);
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < branches.size(); ++i) labels.push_back(out.NewLabel(x.name() + ".branch" + std::to_string(i)));
  const std::string end = out.NewLabel(x.name() + ".end");
  if (by_pred) {
    out.Emit(isa::OPCODE_BNE, {S(0), 0, Label(labels.at(0))});  // true: branch 0
  } else {
    for (std::size_t i = 0; i + 1 < branches.size(); ++i) out.Emit(isa::OPCODE_BEQ, {S(0), i, Label(labels[i])});
  }
  out.Emit(isa::OPCODE_BR, {Label(labels.back())});  // false, or an index out of range: the last branch
  for (std::size_t i = 0; i < branches.size(); ++i) {
    out.Bind(labels[i]);
    const NestedResult result =
        c.nested.EmitNested(*branches[i], {c.operands.at(i + 1)}, c.nested_base, NestedPrefix(c, *branches[i]));
    EmitResultCopies(c, name + "/result" + std::to_string(i), result.root, c.results,
                     StagingBase(c, result), "the branch's result");
    if (i + 1 < branches.size()) out.Emit(isa::OPCODE_BR, {Label(end)});
  }
  out.Emit(isa::OPCODE_NOP);  // the last branch's end label is not the join point the others jump to
  out.Bind(end);
}

void EmitCall(ControlFlowContext& c) {
  const hlo::Instruction& x = c.instruction;
  const hlo::Computation& callee = *x.GetComputation("to_apply");
  const NestedResult result = c.nested.EmitNested(callee, c.operands, c.nested_base, NestedPrefix(c, callee));
  EmitResultCopies(c, c.prefix + x.name() + "/result", result.root, c.results,
                   StagingBase(c, result), "the callee's result");
}

}  // namespace

bool IsControlFlowOpcode(hlo::Opcode opcode) {
  return opcode == Opcode::kWhile || opcode == Opcode::kConditional || opcode == Opcode::kCall;
}

std::vector<const hlo::Computation*> ControlFlowCallees(const hlo::Instruction& instruction) {
  switch (instruction.opcode()) {
    case Opcode::kWhile:
      return {instruction.GetComputation("condition"), instruction.GetComputation("body")};
    case Opcode::kCall:
      return {instruction.GetComputation("to_apply")};
    case Opcode::kConditional: {
      if (instruction.HasAttribute("branch_computations")) {
        const auto& branches = instruction.GetComputations("branch_computations");
        return {branches.begin(), branches.end()};
      }
      return {instruction.GetComputation("true_computation"), instruction.GetComputation("false_computation")};
    }
    default:
      return {};
  }
}

void EmitControlFlow(ControlFlowContext& context) {
  switch (context.instruction.opcode()) {
    case Opcode::kWhile: EmitWhile(context); return;
    case Opcode::kConditional: EmitConditional(context); return;
    case Opcode::kCall: EmitCall(context); return;
    default: CannotLower(context.instruction, "not a control-flow operation");
  }
}

}  // namespace tpusim::compiler
