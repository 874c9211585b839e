#include "compiler/lower/compile.h"

#include <algorithm>

#include "compiler/hlo/printer.h"
#include "compiler/lower/asm_builder.h"
#include "compiler/lower/cost.h"
#include "compiler/lower/data_movement_kernel.h"
#include "compiler/lower/dot_kernel.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/lower/elementwise_kernel.h"
#include "compiler/lower/gather_kernel.h"
#include "compiler/lower/kernel.h"
#include "compiler/lower/reduce_kernel.h"
#include "compiler/lower/sort_kernel.h"
#include "compiler/lower/topk_kernel.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/assembler.h"
#include "isa/error.h"
#include "isa/materialize.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

uint64_t AlignUp(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// Whether the group is computed by the element-wise kernel: fused element-wise operations, a
// broadcast of a scalar, or a `fusion` instruction of the module.
bool IsElementwiseGroup(const KernelGroup& group) {
  const hlo::Instruction& root = *group.root;
  return group.fused() || IsElementwiseOpcode(root.opcode()) || root.opcode() == Opcode::kFusion ||
         (root.opcode() == Opcode::kBroadcast && root.operand(0)->shape().rank() == 0);
}

void EmitKernel(KernelContext& context) {
  const hlo::Instruction& instruction = context.instruction;
  if (IsElementwiseGroup(context.group)) {
    EmitElementwiseKernel(context);
    return;
  }
  if (IsDataMovementOpcode(instruction.opcode())) {
    EmitDataMovementKernel(context);
    return;
  }
  switch (instruction.opcode()) {
    case Opcode::kDot:
      EmitDotKernel(context);
      return;
    case Opcode::kReduce:
      EmitReduceKernel(context);
      return;
    case Opcode::kSort:
      EmitSortKernel(context);
      return;
    case Opcode::kGather:
      EmitGatherKernel(context);
      return;
    case Opcode::kTopK:
      EmitTopKKernel(context);
      return;
    default:
      break;
  }
  CannotLower(instruction, "no kernel lowers this operation yet");
}

// Writes the host <-> HBM copies of `arrays` and waits for them.
void EmitHostCopies(AsmBuilder& out, const std::vector<ModuleArray>& arrays, bool to_device,
                    const std::vector<uint64_t>& host_addresses) {
  if (arrays.empty()) return;
  const uint32_t engines = out.target().dma_engines();
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const ModuleArray& array = arrays[i];
    if (to_device) {
      EmitFlatDma(out, "host", host_addresses[i], "hbm", array.hbm_address, array.size_bytes, 0,
                  static_cast<uint32_t>(i % engines));
    } else {
      EmitFlatDma(out, "hbm", array.hbm_address, "host", host_addresses[i], array.size_bytes, 0,
                  static_cast<uint32_t>(i % engines));
    }
  }
  out.Emit("sem.wait sem[0], {}", arrays.size());
}

}  // namespace

CompiledModule Compile(hlo::Module& module, const CompileOptions& options) {
  AssignLayouts(module);
  const hlo::Computation& entry = *module.entry();
  const std::vector<const hlo::Instruction*> schedule = Schedule(entry);
  const std::vector<KernelGroup> groups = FuseElementwise(schedule);
  KernelOf computed_inside;
  for (const KernelGroup& group : groups) {
    for (const hlo::Instruction* member : group.members) {
      if (member != group.root && member->opcode() != Opcode::kConstant) computed_inside[member] = group.root;
    }
  }
  // A duplicated broadcast that is also a kernel's root keeps its buffer.
  for (const KernelGroup& group : groups) computed_inside.erase(group.root);
  const BufferAssignment buffers = AssignBuffers(schedule, options.hbm_capacity_bytes, computed_inside);

  CompiledModule compiled;
  compiled.hbm_peak_bytes = buffers.peak_bytes;
  AsmBuilder out(module.name(), options.target);

  // Host copies of the parameters and outputs, in their device layouts.
  uint64_t host_cursor = 0;
  std::vector<uint64_t> parameter_hosts;
  std::vector<uint64_t> output_hosts;
  const auto host_buffer = [&](const DeviceBuffer& buffer, const std::string& name, const std::string& role,
                               std::vector<uint64_t>& addresses) {
    const uint64_t address = host_cursor;
    host_cursor = AlignUp(host_cursor + std::max<uint64_t>(buffer.size_bytes, 1), kBufferAlignmentBytes);
    if (host_cursor > options.host_capacity_bytes) {
      throw Error("the module's parameters and outputs need more than the host memory's " +
                  std::to_string(options.host_capacity_bytes) + " bytes");
    }
    addresses.push_back(address);
    return out.AddBuffer(name, "host", address, buffer.size_bytes, isa::ToString(buffer.shape), role);
  };
  int parameter_leaf = 0;
  for (const hlo::Instruction* parameter : entry.parameters()) {
    const auto& leaves = buffers.leaves.at(parameter);
    for (std::size_t k = 0; k < leaves.size(); ++k) {
      if (leaves[k] == nullptr) continue;  // a token
      ModuleArray array{leaves.size() == 1 ? parameter->name() : parameter->name() + "." + std::to_string(k),
                        parameter_leaf, leaves[k]->shape, leaves[k]->address, leaves[k]->size_bytes, ""};
      array.host_buffer = host_buffer(*leaves[k], array.name, "parameter(" + std::to_string(parameter_leaf) + ")",
                                      parameter_hosts);
      compiled.parameters.push_back(array);
      ++parameter_leaf;
    }
  }
  const auto& root_leaves = buffers.leaves.at(entry.root());
  for (std::size_t k = 0; k < root_leaves.size(); ++k) {
    if (root_leaves[k] == nullptr) continue;
    const int index = static_cast<int>(compiled.outputs.size());
    ModuleArray array{"output." + std::to_string(index), index, root_leaves[k]->shape, root_leaves[k]->address,
                      root_leaves[k]->size_bytes, ""};
    array.host_buffer = host_buffer(*root_leaves[k], array.name, "output(" + std::to_string(index) + ")", output_hosts);
    compiled.outputs.push_back(array);
  }
  // HBM buffers (temporaries: they may share addresses when their lives do not overlap).
  for (const auto& buffer : buffers.buffers) {
    out.AddBuffer("hbm." + buffer->name, "hbm", buffer->address, std::max<uint64_t>(buffer->size_bytes, 1),
                  isa::ToString(buffer->shape), "temporary");
  }
  // Constants: their device images, written before the program starts.
  for (const hlo::Instruction* instruction : schedule) {
    if (instruction->opcode() != Opcode::kConstant) continue;
    if (instruction->literal() == nullptr) {
      CannotLower(*instruction, "its value is not in the module (elided `{...}`) or of a type tpusim does not hold");
    }
    const DeviceBuffer* buffer = buffers.leaves.at(instruction).at(0);
    const std::vector<uint8_t> image = isa::Materialize(buffer->shape, instruction->literal()->bytes());
    if (!image.empty()) out.AddData(instruction->name() + ".data", "hbm", buffer->address, image);
  }

  out.Comment("parameters: host -> HBM over PCIe");
  EmitHostCopies(out, compiled.parameters, true, parameter_hosts);
  out.Bind(out.NewLabel("device_begin"));
  for (const KernelGroup& group : groups) {
    const hlo::Instruction* instruction = group.root;
    KernelInfo info;
    info.name = instruction->name();
    info.opcode = std::string(hlo::OpcodeName(instruction->opcode()));
    info.long_name = hlo::ToString(*instruction);
    info.begin_label = out.NewLabel(instruction->name() + ".begin");
    info.end_label = out.NewLabel(instruction->name() + ".end");
    const KernelCost cost = CostOf(group);
    info.category = cost.category;
    info.flops = cost.flops;
    info.bytes_accessed = cost.bytes_accessed;
    KernelContext context{out, options, *instruction, group, {}, buffers.leaves.at(instruction)};
    const bool elementwise = IsElementwiseGroup(group) && instruction->opcode() != Opcode::kFusion;
    const std::vector<const hlo::Instruction*> operands =
        elementwise ? group.operands
                    : std::vector<const hlo::Instruction*>(instruction->operands().begin(), instruction->operands().end());
    for (const hlo::Instruction* operand : operands) context.operands.push_back(buffers.leaves.at(operand));
    if (group.fused()) {
      out.Comment(fmt::format("{} fused with {} other instructions", info.long_name, group.members.size() - 1));
    } else {
      out.Comment(info.long_name);
    }
    context.hbm_scratch_address = AlignUp(buffers.peak_bytes, kBufferAlignmentBytes);
    context.hbm_scratch_bytes = options.hbm_capacity_bytes > context.hbm_scratch_address
                                    ? options.hbm_capacity_bytes - context.hbm_scratch_address
                                    : 0;
    out.Bind(info.begin_label);
    EmitKernel(context);
    out.Bind(info.end_label);
    compiled.kernels.push_back(std::move(info));
  }
  out.Bind(out.NewLabel("device_end"));
  out.Comment("outputs: HBM -> host over PCIe");
  EmitHostCopies(out, compiled.outputs, false, output_hosts);
  out.Emit("halt");

  compiled.assembly = out.Text();
  compiled.program = isa::Assemble(compiled.assembly, module.name() + ".tpuasm (compiled)");
  return compiled;
}

}  // namespace tpusim::compiler
