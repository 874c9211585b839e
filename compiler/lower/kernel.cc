#include "compiler/lower/kernel.h"

#include "compiler/lower/dma_region.h"

#include <memory>

#include "isa/error.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {

void CannotLower(const hlo::Instruction& instruction, std::string_view why) {
  throw Error(instruction.Describe() + ": cannot lower " + std::string(hlo::OpcodeName(instruction.opcode())) + " " +
              isa::ToString(instruction.shape()) + ": " + std::string(why));
}

bool GroupPlans(const KernelGroup& group, const CompileOptions& options, const std::function<void(KernelContext&)>& plan) {
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  const auto stand_in = [&](const isa::Shape& shape) {
    buffers.push_back(std::make_unique<DeviceBuffer>());
    buffers.back()->shape = shape;
    buffers.back()->size_bytes = isa::LayoutMap(shape).byte_size();
    return buffers.back().get();
  };
  if (group.root->shape().is_tuple) return false;
  std::vector<const DeviceBuffer*> result = {stand_in(group.root->shape())};
  ProgramBuilder scratch = ProgramBuilder::Scratch(options.target);
  KernelContext context{scratch, options, *group.root, group, {}, result, 0, 0, {}};
  for (const hlo::Instruction* operand : group.operands) {
    if (operand->shape().is_tuple) return false;
    context.operands.push_back({stand_in(operand->shape())});
  }
  try {
    plan(context);
    return true;
  } catch (const Error&) {
    return false;
  }
}

void EmitFlatDma(ProgramBuilder& out, isa::MemorySpace from_space, uint64_t from, isa::MemorySpace to_space,
                 uint64_t to, uint64_t bytes, uint32_t semaphore, uint32_t engine) {
  EmitFlatDma(out, DmaAddress{from_space, from}, DmaAddress{to_space, to}, bytes, semaphore, engine);
}

void EmitFlatDma(ProgramBuilder& out, const DmaAddress& from, const DmaAddress& to, uint64_t bytes, uint32_t semaphore,
                 uint32_t engine) {
  using namespace isa::ops;
  const auto address = [](const DmaAddress& a) {
    const int64_t offset = static_cast<int64_t>(a.offset);
    return a.base_register < 0 ? Address(a.space, offset) : Address(a.space, RegPlus(S(a.base_register), offset));
  };
  // The bytes seen as a flat array of the widest words that divide them: the DMA copies them as
  // they lie.
  const isa::ElementType type = FlatWordType(static_cast<int64_t>(bytes));
  const int64_t words = static_cast<int64_t>(bytes) / isa::ElementByteWidth(type);
  const ShapeValue shape = ShapeArg(RowMajorUntiled(type, {words}));
  out.Emit(isa::OPCODE_DMA, {address(from), address(to)},
           {{"src", shape}, {"dst", shape}, {"size", Sizes({words})}, {"sem", Sem(semaphore)}, {"engine", engine}});
}

std::string LimitNote(const CompileOptions& options, TargetLimit limit) {
  const isa::Target& t = options.target;
  std::string name = options.limit_names[static_cast<int>(limit)];
  std::string value;
  switch (limit) {
    case TargetLimit::kSemaphores:
      if (name.empty()) name = ".target semaphores";
      value = std::to_string(t.semaphores());
      break;
    case TargetLimit::kVectorRegisters:
      if (name.empty()) name = ".target vregs";
      value = std::to_string(t.vector_registers());
      break;
    case TargetLimit::kMxuShape:
      if (name.empty()) name = ".target mxu_rows x mxu_cols";
      value = std::to_string(t.mxu_rows()) + " x " + std::to_string(t.mxu_columns());
      break;
    case TargetLimit::kMxuAccumulatorRows:
      if (name.empty()) name = ".target mxu_acc_rows";
      value = std::to_string(t.mxu_accumulator_rows());
      break;
  }
  return " (" + name + " is " + value + ")";
}

}  // namespace tpusim::compiler
