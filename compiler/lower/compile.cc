#include "compiler/lower/compile.h"

#include <fmt/format.h>
#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "compiler/hlo/printer.h"
#include "compiler/lower/program_builder.h"
#include "compiler/lower/collective_kernel.h"
#include "compiler/lower/control_flow.h"
#include "compiler/lower/cost.h"
#include "compiler/lower/data_movement_kernel.h"
#include "compiler/lower/conv_kernel.h"
#include "compiler/lower/dot_general_kernel.h"
#include "compiler/lower/dot_kernel.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/lower/elementwise_kernel.h"
#include "compiler/lower/gather_kernel.h"
#include "compiler/lower/kernel.h"
#include "compiler/lower/kernel_dispatch.h"
#include "compiler/lower/megacore.h"
#include "compiler/lower/output_fusion_trial.h"
#include "compiler/lower/mxu_tiling.h"
#include "compiler/lower/reduce_kernel.h"
#include "compiler/lower/sort_kernel.h"
#include "compiler/lower/scalar_kernel.h"
#include "compiler/lower/scatter_kernel.h"
#include "compiler/lower/topk_kernel.h"
#include "compiler/lower/reduce_window_kernel.h"
#include "compiler/passes/dot_output_fusion.h"
#include "compiler/passes/pipeline.h"
#include "compiler/passes/unit_reduces.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/host_offload.h"
#include "compiler/passes/memory_scheduler.h"
#include "compiler/passes/tuple_leaves.h"
#include "isa/error.h"
#include "isa/layout_index.h"
#include "isa/materialize.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;


// Writes the host <-> HBM copies of `arrays` and waits for them.
void EmitHostCopies(ProgramBuilder& out, const std::vector<ModuleArray>& arrays, bool to_device,
                    const std::vector<uint64_t>& host_addresses) {
  if (arrays.empty()) return;
  const uint32_t engines = out.target().dma_engines();
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const ModuleArray& array = arrays[i];
    if (to_device) {
      EmitFlatDma(out, isa::MEMORY_SPACE_HOST, host_addresses[i], array.memory_space(), array.address, array.size_bytes, 0,
                  static_cast<uint32_t>(i % engines));
    } else {
      EmitFlatDma(out, array.memory_space(), array.address, isa::MEMORY_SPACE_HOST, host_addresses[i], array.size_bytes, 0,
                  static_cast<uint32_t>(i % engines));
    }
  }
  out.Emit(isa::OPCODE_SEM_WAIT, {isa::ops::Sem(0), arrays.size()});
}


// The end (aligned) of the entry's parameter and output host buffers, which Compile places from
// host address 0 in the same order and sizes: the device layouts' byte images of every array leaf.
uint64_t HostBuffersEnd(const hlo::Computation& entry, uint64_t host_capacity_bytes) {
  uint64_t end = 0;
  const auto add = [&](const isa::Shape& shape) {
    for (const isa::Shape* leaf : ArrayLeaves(shape)) {
      if (leaf->element_type == isa::ElementType::kToken) continue;
      end = AlignUp(end + std::max<uint64_t>(isa::LayoutMap(*leaf).byte_size(), 1), kBufferAlignmentBytes);
    }
  };
  for (const hlo::Instruction* parameter : entry.parameters()) add(parameter->shape());
  add(entry.root()->shape());
  if (end > host_capacity_bytes) {
    throw Error("the module's parameters and outputs need " + std::to_string(end) + " bytes of host memory, more than the host's " +
                std::to_string(host_capacity_bytes));
  }
  return end;
}

// One computation's kernels: its schedule, the element-wise fusion groups, and which
// instructions are computed inside another's kernel.
struct ComputationPlan {
  std::vector<const hlo::Instruction*> schedule;
  std::vector<KernelGroup> groups;
  KernelOf computed_inside;
};

ComputationPlan PlanComputation(const hlo::Computation& computation, const CompileOptions& options) {
  ComputationPlan plan;
  plan.schedule = Schedule(computation);
  plan.groups = FuseElementwise(plan.schedule, [&options](const KernelGroup& group) {
    return group.root->opcode() == Opcode::kReduce ? ReduceInputFusionFits(group, options)
                                                   : ElementwiseFusionFits(group, options);
  });
  plan.groups = FuseDotOutputs(std::move(plan.groups), plan.schedule,
                               [&options](const KernelGroup& merged, const KernelGroup& consumers) {
                                 return OutputFusionFits(merged, options) && OutputFusionPays(merged, consumers, options);
                               });
  for (const KernelGroup& group : plan.groups) {
    for (const hlo::Instruction* member : group.members) {
      if (member != group.root && member->opcode() != Opcode::kConstant) plan.computed_inside[member] = group.root;
    }
  }
  // A duplicated broadcast that is also a kernel's root keeps its buffer.
  for (const KernelGroup& group : plan.groups) plan.computed_inside.erase(group.root);
  return plan;
}

// After `plan.schedule` changed order: its groups (the kernels) in the schedule's order, and an
// instruction computed in several kernels (duplicated) mapped to the last of them, so its
// operands live until that kernel runs.
void OrderGroups(ComputationPlan& plan) {
  std::unordered_map<const hlo::Instruction*, std::size_t> position;
  for (std::size_t i = 0; i < plan.schedule.size(); ++i) position[plan.schedule[i]] = i;
  std::stable_sort(plan.groups.begin(), plan.groups.end(), [&](const KernelGroup& a, const KernelGroup& b) {
    return position.at(a.root) < position.at(b.root);
  });
  plan.computed_inside.clear();
  for (const KernelGroup& group : plan.groups) {
    for (const hlo::Instruction* member : group.members) {
      if (member != group.root && member->opcode() != Opcode::kConstant) plan.computed_inside[member] = group.root;
    }
  }
  for (const KernelGroup& group : plan.groups) plan.computed_inside.erase(group.root);
}

// Whether the kernel rooted at `writer` may write its result over `operand`'s buffer: an
// element-wise kernel whose members read `operand` only as element-wise operands of the result's
// shape and layout, so each block of it is read before the same block of the result is written.
bool MayOverwriteOperand(const ComputationPlan& plan, const hlo::Instruction& writer, const hlo::Instruction& operand) {
  const auto group = std::find_if(plan.groups.begin(), plan.groups.end(),
                                  [&](const KernelGroup& g) { return g.root == &writer; });
  if (group == plan.groups.end() || !IsElementwiseGroup(*group) || IsScalarCoreGroup(*group) ||
      writer.opcode() == Opcode::kFusion || operand.shape() != writer.shape()) {
    return false;
  }
  return std::all_of(group->members.begin(), group->members.end(), [&](const hlo::Instruction* member) {
    const bool reads = std::find(member->operands().begin(), member->operands().end(), &operand) != member->operands().end();
    return !reads || (IsElementwiseOpcode(member->opcode()) && member->shape().dims == writer.shape().dims);
  });
}

// Emits the kernels of the entry computation and, in line, of the computations that its
// control flow calls. HBM: from 0 a pool with the constants of every called computation (written
// before the program starts, so no region may reuse it), then the entry's buffers, among which
// each control-flow instruction's callees get a region (NestedBinding::regions); a kernel's
// scratch begins above the buffers live at it (BufferAssignment::LiveTopAt) and its callers'.
class ProgramEmitter final : public NestedEmitter {
 public:
  ProgramEmitter(ProgramBuilder& out, const CompileOptions& options, CompiledModule& compiled)
      : out_(out), options_(options), compiled_(compiled) {}

  // A computation's kernels in the text's order (operands first, broadcasts at their first
  // reader) or the memory-aware list scheduler's (compiler/passes/memory_scheduler.h), whichever
  // needs less HBM at its peak (PlanBytes; the text's order on ties), as XLA runs several
  // schedulers and keeps the one whose heap simulation peaks lowest.
  const ComputationPlan& Plan(const hlo::Computation& computation) {
    if (const auto it = plans_.find(&computation); it != plans_.end()) return it->second;
    ComputationPlan plan = PlanComputation(computation, options_);
    ComputationPlan listed = plan;
    listed.schedule = ListSchedule(plan.schedule, plan.groups,
                                   [this](const hlo::Instruction& x) { return CalleeBytes(x); });
    if (listed.schedule != plan.schedule) {
      OrderGroups(listed);
      if (PlanBytes(listed) < PlanBytes(plan)) plan = std::move(listed);
    }
    return plans_.emplace(&computation, std::move(plan)).first->second;
  }

  // The HBM a plan's buffers need at their peak, from a trial assignment: its parameters and
  // constants are given (the caller's, the pool's), and each control-flow instruction's called
  // computations get their region among its buffers (ReserveRegions), as EmitNested places them.
  uint64_t PlanBytes(const ComputationPlan& plan, bool writable = false) {
    std::vector<std::unique_ptr<DeviceBuffer>> given;
    NestedBinding binding;
    binding.parameters_writable = writable;
    const auto give = [&](const hlo::Instruction& x) {
      std::vector<const DeviceBuffer*>& bound = binding.bound[&x];
      for (const isa::Shape* leaf : ArrayLeaves(x.shape())) {
        if (leaf->element_type == isa::ElementType::kToken) {
          bound.push_back(nullptr);
          continue;
        }
        given.push_back(std::make_unique<DeviceBuffer>());
        given.back()->name = x.name();
        given.back()->shape = *leaf;
        given.back()->size_bytes = isa::LayoutMap(*leaf).byte_size();
        bound.push_back(given.back().get());
      }
    };
    for (const hlo::Instruction* x : plan.schedule) {
      if (LivesWholeProgram(*x)) give(*x);
    }
    Donations overwrites;
    overwrites.may_overwrite = [&plan](const hlo::Instruction& writer, const hlo::Instruction& operand) {
      return MayOverwriteOperand(plan, writer, operand);
    };
    constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();
    ReserveRegions(plan, binding);
    return AssignBuffers(plan.schedule, kUnbounded, plan.computed_inside, binding, overwrites, kUnbounded).peak_bytes;
  }

  // Regions for the plan's control-flow instructions' called computations (NestedBinding::regions).
  void ReserveRegions(const ComputationPlan& plan, NestedBinding& binding) {
    for (const KernelGroup& group : plan.groups) {
      if (IsControlFlowOpcode(group.root->opcode())) binding.regions[group.root] = CalleeBytes(*group.root);
    }
  }

  // The HBM a control-flow instruction's called computations need (the largest: they run one at
  // a time); 0 for other instructions.
  uint64_t CalleeBytes(const hlo::Instruction& x) {
    uint64_t bytes = 0;
    if (!IsControlFlowOpcode(x.opcode())) return bytes;
    for (const hlo::Computation* callee : ControlFlowCallees(x)) {
      // A while body may update its loop state in place, as EmitNested lets it.
      const bool writable = x.opcode() == Opcode::kWhile && callee == x.GetComputation("body");
      const auto key = std::make_pair(callee, writable);
      auto it = callee_bytes_.find(key);
      if (it == callee_bytes_.end()) it = callee_bytes_.emplace(key, PlanBytes(Plan(*callee), writable)).first;
      bytes = std::max(bytes, it->second);
    }
    return bytes;
  }

  // Gives every constant of every computation that control flow reaches from `plan` a pool
  // buffer at or above `base`, with its data; returns the pool's (aligned) end.
  uint64_t PlaceConstantPool(const ComputationPlan& entry, uint64_t base) {
    pool_end_ = AlignUp(base, kBufferAlignmentBytes);
    std::unordered_set<const hlo::Computation*> seen;
    std::function<void(const ComputationPlan&)> visit = [&](const ComputationPlan& plan) {
      for (const KernelGroup& group : plan.groups) {
        for (const hlo::Computation* callee : ControlFlowCallees(*group.root)) {
          if (!seen.insert(callee).second) continue;
          const ComputationPlan& callee_plan = Plan(*callee);
          for (const hlo::Instruction* instruction : callee_plan.schedule) {
            if (instruction->opcode() == Opcode::kConstant) PlaceConstant(*instruction);
          }
          visit(callee_plan);
        }
      }
    };
    visit(entry);
    NotePeak(pool_end_);
    return pool_end_;
  }

  // Writes the .data of the constants in `buffers` (the entry's, placed by its assignment).
  void AddConstantData(const ComputationPlan& plan, const BufferAssignment& buffers) {
    for (const hlo::Instruction* instruction : plan.schedule) {
      if (instruction->opcode() != Opcode::kConstant) continue;
      AddConstantImage(*instruction, *buffers.leaves.at(instruction).at(0));
    }
  }

  void EmitGroups(const ComputationPlan& plan, const BufferAssignment& buffers, const std::string& prefix) {
    std::unordered_map<const hlo::Instruction*, std::size_t> position;
    for (std::size_t i = 0; i < plan.schedule.size(); ++i) position[plan.schedule[i]] = i;
    for (const KernelGroup& group : plan.groups) {
      const hlo::Instruction* instruction = group.root;
      // Above what is live here (at least the assignment's base, which is above the pool), and
      // above what the callers have live: this computation's region may lie between their buffers.
      const uint64_t free_above = std::max(buffers.LiveTopAt(position.at(instruction)), scratch_floor_);
      if (IsControlFlowOpcode(instruction->opcode())) {
        const auto region = buffers.regions.find(instruction);
        const uint64_t nested_base = region == buffers.regions.end() ? free_above : region->second;
        ControlFlowContext context{out_,       options_,    *instruction, {}, buffers.leaves.at(instruction),
                                   free_above, nested_base, prefix,       *this};
        for (const hlo::Instruction* operand : instruction->operands()) {
          context.operands.push_back(buffers.leaves.at(operand));
        }
        out_.Comment(hlo::ToString(*instruction));
        // The callees' host arrays go above the caller's live at this instruction; their kernels'
        // scratch above everything live here.
        const uint64_t caller_host_top = host_region_base_;
        const uint64_t caller_floor = scratch_floor_;
        host_region_base_ = buffers.HostLiveTopAt(position.at(instruction));
        scratch_floor_ = free_above;
        EmitControlFlow(context);
        host_region_base_ = caller_host_top;
        scratch_floor_ = caller_floor;
        continue;
      }
      KernelInfo info;
      info.name = UniqueKernelName(prefix + instruction->name());
      info.opcode = std::string(hlo::OpcodeName(instruction->opcode()));
      info.long_name = hlo::ToString(*instruction);
      info.begin_label = out_.NewLabel(info.name + ".begin");
      info.end_label = out_.NewLabel(info.name + ".end");
      const KernelCost cost = CostOf(group);
      info.category = cost.category;
      info.flops = cost.flops;
      info.bytes_accessed = cost.bytes_accessed;
      KernelContext context{out_, options_, *instruction, group, {}, buffers.leaves.at(instruction), 0, 0, {}};
      // Element-wise, scalar-core and fused reduce kernels read the group's operands; the others
      // their root's.
      const bool by_group = (IsElementwiseGroup(group) && instruction->opcode() != Opcode::kFusion) ||
                            IsScalarCoreGroup(group) || group.fused();
      const std::vector<const hlo::Instruction*> operands =
          by_group ? group.operands
                      : std::vector<const hlo::Instruction*>(instruction->operands().begin(),
                                                             instruction->operands().end());
      for (const hlo::Instruction* operand : operands) context.operands.push_back(buffers.leaves.at(operand));
      if (group.fused()) {
        out_.Comment(fmt::format("{} fused with {} other instructions", info.long_name, group.members.size() - 1));
      } else {
        out_.Comment(info.long_name);
      }
      std::tie(context.hbm_scratch_address, context.hbm_scratch_bytes) =
          buffers.LargestFreeAt(position.at(instruction), free_above, options_.hbm_capacity_bytes);
      out_.Bind(info.begin_label);
      EmitKernelOnCores(context);
      out_.Bind(info.end_label);
      compiled_.kernels.push_back(std::move(info));
    }
  }

  NestedResult EmitNested(const hlo::Computation& computation,
                          const std::vector<std::vector<const DeviceBuffer*>>& parameters, uint64_t base,
                          const std::string& prefix, bool writable) override {
    const ComputationPlan& plan = Plan(computation);
    NestedBinding binding;
    binding.parameters_writable = writable;
    binding.base_address = AlignUp(std::max(base, pool_end_), kBufferAlignmentBytes);
    binding.host_base_address = AlignUp(host_region_base_, kBufferAlignmentBytes);
    if (parameters.size() != computation.parameters().size()) {
      throw Error("computation '" + computation.name() + "' takes " + std::to_string(computation.parameters().size()) +
                  " parameters but is called with " + std::to_string(parameters.size()));
    }
    for (std::size_t i = 0; i < parameters.size(); ++i) binding.bound[computation.parameters()[i]] = parameters[i];
    for (const hlo::Instruction* instruction : plan.schedule) {
      if (instruction->opcode() == Opcode::kConstant) binding.bound[instruction] = {pool_.at(instruction).get()};
    }
    Donations overwrites;  // no donated parameters here, but kernels may write over operands
    overwrites.may_overwrite = [&plan](const hlo::Instruction& writer, const hlo::Instruction& operand) {
      return MayOverwriteOperand(plan, writer, operand);
    };
    ReserveRegions(plan, binding);
    assignments_.push_back(AssignBuffers(plan.schedule, options_.hbm_capacity_bytes, plan.computed_inside, binding,
                                         overwrites, options_.host_capacity_bytes, options_.capacity_names));
    const BufferAssignment& buffers = assignments_.back();
    // Its region was reserved from a trial of the same plan (CalleeBytes): it must hold it.
    if (const auto reserved = callee_bytes_.find({&computation, writable});
        reserved != callee_bytes_.end() && buffers.peak_bytes - binding.base_address > reserved->second) {
      throw Error("internal: computation '" + computation.name() + "' needs " +
                  std::to_string(buffers.peak_bytes - binding.base_address) + " bytes of HBM, more than the " +
                  std::to_string(reserved->second) + " its caller reserved for it");
    }
    NotePeak(buffers);
    AddTemporaries(buffers, prefix);
    out_.Comment("computation " + computation.name() + " (" + prefix + ")");
    EmitGroups(plan, buffers, prefix);
    return {buffers.leaves.at(computation.root()), buffers.peak_bytes};
  }

  void EmitReported(const std::string& name, const std::string& opcode, const hlo::Instruction& instruction,
                    uint64_t bytes_accessed, const std::function<void()>& body, bool every_core) override {
    KernelInfo info;
    info.name = UniqueKernelName(name);
    info.opcode = opcode;
    info.category = "control flow";
    info.long_name = hlo::ToString(instruction);
    info.bytes_accessed = bytes_accessed;
    info.begin_label = out_.NewLabel(info.name + ".begin");
    info.end_label = out_.NewLabel(info.name + ".end");
    out_.Bind(info.begin_label);
    if (every_core) {
      body();
    } else {
      EmitOnCores(out_, 1, [&](const CorePart&) { body(); });
    }
    out_.Bind(info.end_label);
    compiled_.kernels.push_back(std::move(info));
  }

  void NotePeak(uint64_t bytes) { compiled_.hbm_peak_bytes = std::max(compiled_.hbm_peak_bytes, bytes); }
  void NotePeak(const BufferAssignment& buffers) {
    NotePeak(buffers.peak_bytes);
    compiled_.host_peak_bytes = std::max(compiled_.host_peak_bytes, buffers.host_peak_bytes);
  }

  // The program's buffers for an assignment's arrays (temporaries: they may share addresses when
  // their lives do not overlap), "hbm." or "host." + prefix + name.
  void AddTemporaries(const BufferAssignment& buffers, const std::string& prefix) {
    for (const auto& buffer : buffers.buffers) {
      out_.AddBuffer(std::string(buffer->space()) + "." + prefix + buffer->name, buffer->memory_space(), buffer->address,
                     std::max<uint64_t>(buffer->size_bytes, 1), buffer->shape, isa::BUFFER_ROLE_TEMPORARY);
    }
  }

  // Host memory from here up holds host arrays of the entry (set by Compile) or, while a
  // control-flow instruction is emitted, of its callees.
  void set_host_region_base(uint64_t base) { host_region_base_ = base; }

 private:
  void PlaceConstant(const hlo::Instruction& constant) {
    if (pool_.contains(&constant)) return;
    auto buffer = std::make_unique<DeviceBuffer>();
    buffer->name = constant.parent()->name() + "." + constant.name();
    buffer->shape = constant.shape();
    if (buffer->shape.is_tuple) CannotLower(constant, "tuple constants in called computations are not lowered");
    buffer->size_bytes = isa::LayoutMap(buffer->shape).byte_size();
    buffer->address = pool_end_;
    pool_end_ = AlignUp(pool_end_ + std::max<uint64_t>(buffer->size_bytes, 1), kBufferAlignmentBytes);
    if (pool_end_ > options_.hbm_capacity_bytes) {
      throw Error(constant.Describe() + ": the constants of called computations need HBM up to " +
                  std::to_string(pool_end_) + " bytes, more than the chip's " + std::to_string(options_.hbm_capacity_bytes) +
                  CapacityNote(options_.capacity_names.hbm, options_.hbm_capacity_bytes));
    }
    out_.AddBuffer("hbm." + buffer->name, isa::MEMORY_SPACE_HBM, buffer->address,
                   std::max<uint64_t>(buffer->size_bytes, 1), buffer->shape, isa::BUFFER_ROLE_TEMPORARY);
    AddConstantImage(constant, *buffer);
    pool_[&constant] = std::move(buffer);
  }

  void AddConstantImage(const hlo::Instruction& constant, const DeviceBuffer& buffer) {
    if (constant.literal() == nullptr) {
      if (options_.timing_only) return;  // no data moves: its buffer's place is all the run needs
      CannotLower(constant, "its value is not in the module (elided `{...}`) or of a type tpusim does not hold; "
                            "--timing-only runs it without");
    }
    const std::vector<uint8_t> image = isa::Materialize(buffer.shape, constant.literal()->bytes());
    if (!image.empty()) out_.AddData(buffer.name + ".data", isa::MEMORY_SPACE_HBM, buffer.address, image);
  }

  // Kernel names are unique in the report: a computation emitted at two places has two prefixes.
  std::string UniqueKernelName(const std::string& name) {
    std::string unique = name;
    for (int n = 2; !kernel_names_.insert(unique).second; ++n) unique = name + "#" + std::to_string(n);
    return unique;
  }

  ProgramBuilder& out_;
  const CompileOptions& options_;
  CompiledModule& compiled_;
  std::unordered_map<const hlo::Computation*, ComputationPlan> plans_;
  // CalleeBytes, per computation and whether its parameters are writable.
  std::map<std::pair<const hlo::Computation*, bool>, uint64_t> callee_bytes_;
  std::deque<BufferAssignment> assignments_;  // the called computations' buffers, alive until the end
  std::unordered_map<const hlo::Instruction*, std::unique_ptr<DeviceBuffer>> pool_;
  uint64_t pool_end_ = 0;
  uint64_t host_region_base_ = 0;
  // While a called computation is emitted: the top of what its callers have live at the call, which
  // its kernels' scratch stays above (its own region may lie below their buffers).
  uint64_t scratch_floor_ = 0;
  std::unordered_set<std::string> kernel_names_;
};

}  // namespace

CompiledModule Compile(const hlo::Module& source, const CompileOptions& options) {
  const std::unique_ptr<hlo::Module> copy = source.Clone();
  hlo::Module& module = *copy;
  std::vector<std::vector<Accumulation>> accumulations;
  RunHloPasses(module, options, {}, [&](const HloPass& pass) {
    // The attention expanded into the dots and reduces it runs; batch norms not yet expanded
    // into element-wise f32 operations that round otherwise than the evaluator's double.
    if (pass.name == std::string_view("fused-attention-expansion")) accumulations = OutputAccumulations(module);
  });
  const hlo::Computation& entry = *module.entry();
  CompiledModule compiled;
  compiled.output_accumulations = std::move(accumulations);
  ProgramBuilder out(module.name(), options.target);
  ProgramEmitter emitter(out, options, compiled);
  const ComputationPlan& plan = emitter.Plan(entry);
  NestedBinding above_pool;
  above_pool.base_address = emitter.PlaceConstantPool(plan, 0);
  // Host memory: the parameters' and outputs' host buffers from 0, then the host arrays.
  above_pool.host_base_address = HostBuffersEnd(entry, options.host_capacity_bytes);
  emitter.set_host_region_base(above_pool.host_base_address);
  Donations donations;
  donations.aliases = ParseInputOutputAlias(module);
  donations.may_overwrite = [&plan](const hlo::Instruction& writer, const hlo::Instruction& operand) {
    return MayOverwriteOperand(plan, writer, operand);
  };
  emitter.ReserveRegions(plan, above_pool);
  const BufferAssignment buffers = AssignBuffers(plan.schedule, options.hbm_capacity_bytes, plan.computed_inside,
                                                 above_pool, donations, options.host_capacity_bytes, options.capacity_names);
  emitter.NotePeak(buffers);
  compiled.hbm_live_peak = buffers.live_peak;

  // Host copies of the parameters and outputs, in their device layouts.
  uint64_t host_cursor = 0;
  std::vector<uint64_t> parameter_hosts;
  std::vector<uint64_t> output_hosts;
  const auto host_buffer = [&](const DeviceBuffer& buffer, const std::string& name, isa::BufferRole role,
                               uint32_t index, std::vector<uint64_t>& addresses) {
    const uint64_t address = host_cursor;
    host_cursor = AlignUp(host_cursor + std::max<uint64_t>(buffer.size_bytes, 1), kBufferAlignmentBytes);
    if (host_cursor > options.host_capacity_bytes) {
      throw Error("the module's parameters and outputs need more than the host memory's " +
                  std::to_string(options.host_capacity_bytes) + " bytes");
    }
    addresses.push_back(address);
    return out.AddBuffer(name, isa::MEMORY_SPACE_HOST, address, buffer.size_bytes, buffer.shape, role, index);
  };
  int parameter_leaf = 0;
  for (const hlo::Instruction* parameter : entry.parameters()) {
    const auto& leaves = buffers.leaves.at(parameter);
    for (std::size_t k = 0; k < leaves.size(); ++k) {
      if (leaves[k] == nullptr) continue;  // a token
      ModuleArray array{leaves.size() == 1 ? parameter->name() : parameter->name() + "." + std::to_string(k),
                        parameter_leaf, leaves[k]->shape, std::string(leaves[k]->space()), leaves[k]->address,
                        leaves[k]->size_bytes, ""};
      array.host_buffer = host_buffer(*leaves[k], array.name, isa::BUFFER_ROLE_PARAMETER,
                                      static_cast<uint32_t>(parameter_leaf), parameter_hosts);
      compiled.parameters.push_back(array);
      ++parameter_leaf;
    }
  }
  const auto& root_leaves = buffers.leaves.at(entry.root());
  for (std::size_t k = 0; k < root_leaves.size(); ++k) {
    if (root_leaves[k] == nullptr) continue;
    const int index = static_cast<int>(compiled.outputs.size());
    ModuleArray array{"output." + std::to_string(index), index, root_leaves[k]->shape,
                      std::string(root_leaves[k]->space()), root_leaves[k]->address, root_leaves[k]->size_bytes, ""};
    array.host_buffer = host_buffer(*root_leaves[k], array.name, isa::BUFFER_ROLE_OUTPUT, static_cast<uint32_t>(index),
                                    output_hosts);
    compiled.outputs.push_back(array);
  }
  if (host_cursor != above_pool.host_base_address) {  // HostBuffersEnd must have foreseen them
    throw Error("internal: the parameters' and outputs' host buffers end at " + std::to_string(host_cursor) +
                ", not at the host arrays' base " + std::to_string(above_pool.host_base_address));
  }
  emitter.AddTemporaries(buffers, "");
  // Constants: their device images, written before the program starts.
  emitter.AddConstantData(plan, buffers);

  out.Comment("parameters: host -> HBM over PCIe");
  EmitOnCores(out, 1, [&](const CorePart&) { EmitHostCopies(out, compiled.parameters, true, parameter_hosts); });
  out.Bind(out.NewLabel("device_begin"));
  emitter.EmitGroups(plan, buffers, "");
  out.Bind(out.NewLabel("device_end"));
  out.Comment("outputs: HBM -> host over PCIe");
  EmitOnCores(out, 1, [&](const CorePart&) { EmitHostCopies(out, compiled.outputs, false, output_hosts); });
  out.Emit(isa::OPCODE_HALT);

  compiled.program = out.Finish();
  compiled.comments = out.TakeComments();
  return compiled;
}

std::string ProgramText(const CompiledModule& compiled) { return isa::Disassemble(compiled.program, compiled.comments); }

}  // namespace tpusim::compiler
