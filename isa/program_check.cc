#include "isa/program_check.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "isa/asm_syntax.h"
#include "isa/error.h"
#include "isa/instruction_set.h"
#include "isa/layout_index.h"
#include "isa/shape.h"

namespace tpusim::isa {
namespace {

using Part = ProgramLocation::Part;

// Thrown inside the checker and caught by FindProgramDefect: the checks read top to bottom.
struct DefectFound {
  ProgramDefect defect;
};

[[noreturn]] void Fail(ProgramLocation where, std::string message) {
  throw DefectFound{{where, std::move(message)}};
}

std::string Str(uint64_t value) { return std::to_string(value); }

// The ranges of ArchConfig (sim/config/arch_config.proto) for the fields a Target mirrors.
struct TargetField {
  std::string_view name;  // as .target writes it
  uint32_t (Target::*get)() const;
  uint32_t max;
};
constexpr TargetField kTargetFields[] = {
    {"sublanes", &Target::sublanes, 1024},     {"lanes", &Target::lanes, 4096},
    {"vregs", &Target::vector_registers, 1024}, {"mxus", &Target::mxu_count, 8},
    {"mxu_rows", &Target::mxu_rows, 4096},      {"mxu_cols", &Target::mxu_columns, 4096},
    {"dma_engines", &Target::dma_engines, 64},  {"semaphores", &Target::semaphores, 65536},
};

// MxuConfig.accumulator_rows' range; 0 (a program that uses no accumulators) is allowed too.
constexpr uint32_t kMaxAccumulatorRows = 1u << 20;
// ArchConfig.tensor_core_count's range; 0 (left out) is one.
constexpr uint32_t kMaxTensorCores = 16;

void CheckTarget(const Target& target) {
  for (const TargetField& field : kTargetFields) {
    const uint32_t value = (target.*field.get)();
    if (value < 1 || value > field.max) {
      Fail({.part = Part::kTarget, .field = field.name},
           "target " + std::string(field.name) + " is " + Str(value) + "; it must be in [1, " +
               Str(field.max) + "]");
    }
  }
  if (target.tensor_cores() > kMaxTensorCores) {
    Fail({.part = Part::kTarget, .field = "cores"},
         "target cores is " + Str(target.tensor_cores()) + "; it must be in [0, " + Str(kMaxTensorCores) + "]");
  }
  if (target.mxu_accumulator_rows() > kMaxAccumulatorRows) {
    Fail({.part = Part::kTarget, .field = "mxu_acc_rows"},
         "target mxu_acc_rows is " + Str(target.mxu_accumulator_rows()) + "; it must be in [0, " +
             Str(kMaxAccumulatorRows) + "]");
  }
}

bool IsKnownSpace(MemorySpace space) { return !MemorySpaceName(space).empty(); }

void CheckSpace(MemorySpace space, const Target& target, const ProgramLocation& where) {
  if (!IsKnownSpace(space)) Fail(where, "memory space " + std::to_string(static_cast<int>(space)) + " does not exist");
  if (space == MEMORY_SPACE_CMEM && !target.has_cmem()) {
    Fail(where, "the target has no CMEM (.target cmem=false)");
  }
}

// Parses and checks a shape operand or buffer shape: canonical text, an array with static dims,
// a supported type, an explicit valid layout whose S(n) is absent or `space`.
Shape CheckShape(const std::string& text, MemorySpace space, const ProgramLocation& where) {
  Shape shape;
  try {
    shape = ParseShape(text);
  } catch (const ParseError& e) {
    Fail(where, "'" + text + "' is not a shape: " + e.what());
  }
  const std::string canonical = ToString(shape);
  if (canonical != text) Fail(where, "shape '" + text + "' is not written canonically: '" + canonical + "'");
  if (shape.is_tuple) Fail(where, "shape " + text + " is a tuple; a buffer or DMA side holds one array");
  if (!shape.layout) Fail(where, "shape " + text + " has no layout: write it, e.g. {1,0:T(8,128)}");
  if (!shape.dynamic_dims.empty()) Fail(where, "shape " + text + " has dynamic dimensions");
  if (!IsSupported(shape.element_type)) {
    Fail(where, "element type " + std::string(ElementTypeName(shape.element_type)) + " of " + text +
                    " is not supported by tpusim");
  }
  const Layout& layout = *shape.layout;
  if (layout.element_size_in_bits != 0 && layout.element_size_in_bits != ElementBitWidth(shape.element_type)) {
    Fail(where, "shape " + text + ": E(" + std::to_string(layout.element_size_in_bits) +
                    ") differs from the element type's width");
  }
  if (!layout.dim_level_types.empty()) Fail(where, "shape " + text + " is sparse (D(...)); tpusim holds dense arrays");
  if (layout.memory_space != 0 && layout.memory_space != static_cast<int64_t>(space)) {
    Fail(where, "shape " + text + " says S(" + std::to_string(layout.memory_space) + ") but it is in " +
                    std::string(MemorySpaceName(space)));
  }
  try {
    LayoutMap map(shape);
  } catch (const Error& e) {
    Fail(where, e.what());
  }
  return shape;
}

void CheckName(std::string_view name, std::string_view what, const ProgramLocation& where) {
  if (!IsValidName(name)) {
    Fail(where, std::string(what) + " name '" + std::string(name) +
                    "' is not a valid name ([A-Za-z_][A-Za-z0-9_.]*, not a register name)");
  }
}

void CheckBuffers(const Program& program, std::set<std::string>& names) {
  std::set<std::pair<int, uint32_t>> roles;
  for (int i = 0; i < program.buffers_size(); ++i) {
    const Buffer& buffer = program.buffers(i);
    auto at = [i](std::string_view field) { return ProgramLocation{.part = Part::kBuffer, .index = i, .field = field}; };
    CheckName(buffer.name(), "buffer", at("name"));
    if (!names.insert(buffer.name()).second) Fail(at("name"), "the name '" + buffer.name() + "' is already used");
    CheckSpace(buffer.space(), program.target(), at("address"));
    const Shape shape = CheckShape(buffer.shape(), buffer.space(), at("shape"));
    const int64_t bytes = LayoutMap(shape).byte_size();
    if (buffer.size_bytes() < static_cast<uint64_t>(bytes)) {
      Fail(at("size"), "size " + FormatHex(buffer.size_bytes()) + " is smaller than the " + Str(bytes) +
                           " bytes of " + buffer.shape());
    }
    if (buffer.address() > UINT64_MAX - buffer.size_bytes()) Fail(at("size"), "the buffer ends past 2^64");
    switch (buffer.role()) {
      case BUFFER_ROLE_TEMPORARY:
        if (buffer.index() != 0) Fail(at("role"), "a temporary buffer has index 0");
        break;
      case BUFFER_ROLE_PARAMETER:
      case BUFFER_ROLE_OUTPUT:
        if (!roles.insert({buffer.role(), buffer.index()}).second) {
          Fail(at("role"), std::string(buffer.role() == BUFFER_ROLE_PARAMETER ? "parameter " : "output ") +
                               Str(buffer.index()) + " has another buffer already");
        }
        break;
      default:
        Fail(at("role"), "buffer role " + std::to_string(static_cast<int>(buffer.role())) + " does not exist");
    }
  }
}

void CheckData(const Program& program, std::set<std::string>& names) {
  for (int i = 0; i < program.data_size(); ++i) {
    const DataSegment& data = program.data(i);
    auto at = [i](std::string_view field) { return ProgramLocation{.part = Part::kData, .index = i, .field = field}; };
    CheckName(data.name(), "data segment", at("name"));
    if (!names.insert(data.name()).second) Fail(at("name"), "the name '" + data.name() + "' is already used");
    CheckSpace(data.space(), program.target(), at("address"));
    if (data.data().empty()) Fail(at("bytes"), "a data segment holds at least one byte");
    if (data.address() > UINT64_MAX - data.data().size()) Fail(at("bytes"), "the data ends past 2^64");
  }
}

void CheckLabels(const Program& program, std::set<std::string>& labels) {
  uint32_t previous = 0;
  for (int i = 0; i < program.labels_size(); ++i) {
    const Label& label = program.labels(i);
    const ProgramLocation at{.part = Part::kLabel, .index = i};
    CheckName(label.name(), "label", at);
    if (!labels.insert(label.name()).second) Fail(at, "label '" + label.name() + "' is defined twice");
    if (label.instruction() > static_cast<uint32_t>(program.instructions_size())) {
      Fail(at, "label '" + label.name() + "' names instruction " + Str(label.instruction()) + " of " +
                   Str(program.instructions_size()));
    }
    if (label.instruction() < previous) Fail(at, "labels are not in instruction order");
    previous = label.instruction();
  }
}

// A loop's counter: 1, 2, 4 or 8 bytes in a memory of the target; a comparison; a bound that the
// counter's type holds.
void CheckLoopCounter(const LoopCounter& counter, const Target& target, const ProgramLocation& at) {
  const Region& place = counter.place();
  CheckSpace(place.space(), target, at);
  const uint64_t bytes = place.size_bytes();
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) Fail(at, "a loop counter is 1, 2, 4 or 8 bytes");
  if (place.address() > UINT64_MAX - bytes) Fail(at, "the loop counter ends past 2^64");
  const std::string& c = counter.compare();
  if (c != "EQ" && c != "NE" && c != "LT" && c != "LE" && c != "GT" && c != "GE") {
    Fail(at, "a loop counter's comparison is EQ, NE, LT, LE, GT or GE");
  }
  if (bytes < 8) {
    const int64_t half = int64_t{1} << (8 * bytes - 1);
    const bool fits = counter.is_signed() ? counter.bound() >= -half && counter.bound() < half
                                          : counter.bound() >= 0 && counter.bound() < 2 * half;
    if (!fits) Fail(at, "the loop counter's bound " + std::to_string(counter.bound()) + " is not a value of its type");
  }
}

void CheckLoops(const Program& program, const std::set<std::string>& labels) {
  std::set<std::string> watched;
  for (int i = 0; i < program.loops_size(); ++i) {
    const Loop& loop = program.loops(i);
    const ProgramLocation at{.part = Part::kLoop, .index = i};
    if (!labels.contains(loop.label())) Fail(at, "label '" + loop.label() + "' is not defined");
    if (!watched.insert(loop.label()).second) Fail(at, "the loop at '" + loop.label() + "' is given twice");
    for (int r = 0; r < loop.state_size(); ++r) {
      const Region& region = loop.state(r);
      auto in = [i, r](std::string_view field) {
        return ProgramLocation{.part = Part::kLoop, .index = i, .operand = r, .field = field};
      };
      CheckSpace(region.space(), program.target(), in("address"));
      if (region.size_bytes() == 0) Fail(in("size"), "a loop's state region holds at least one byte");
      if (region.address() > UINT64_MAX - region.size_bytes()) Fail(in("size"), "the region ends past 2^64");
    }
    if (loop.has_counter()) CheckLoopCounter(loop.counter(), program.target(), ProgramLocation{.part = Part::kLoop, .index = i});
  }
}

void CheckRegister(uint64_t number, uint64_t count, char prefix, std::string_view what,
                   const ProgramLocation& where) {
  if (number >= count) {
    Fail(where, std::string(what) + " " + prefix + Str(number) + " does not exist: there are " + prefix + "0.." +
                    prefix + Str(count - 1));
  }
}

void CheckImmediate(int64_t value, const OperandSpec& spec, const ProgramLocation& where) {
  if (value < spec.min || value > spec.max) {
    Fail(where, "immediate " + std::to_string(value) + " is out of range for " + std::string(spec.name) + ": [" +
                    std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]");
  }
}

void CheckRegOffset(const RegOffset& value, const ProgramLocation& where) {
  if (value.has_reg()) CheckRegister(value.reg(), kScalarRegisterCount, 's', "scalar register", where);
}

// One operand on its own: its kind, register numbers, immediate ranges.
void CheckOperand(const Program& program, const std::set<std::string>& labels, const Operand& operand,
                  const OperandSpec& spec, const InstructionInfo& info, const ProgramLocation& where) {
  const Target& target = program.target();
  if (operand.value_case() == Operand::VALUE_NOT_SET) {
    if (!spec.optional) Fail(where, "operand " + std::string(spec.name) + " of " + std::string(info.mnemonic) + " is missing");
    return;
  }
  auto expects = [&](bool ok) {
    if (!ok) {
      Fail(where, "operand " + std::string(spec.name) + " of " + std::string(info.mnemonic) + " must be " +
                      std::string(OperandKindName(spec.kind)) + ", found '" + FormatOperandValue(operand) + "'");
    }
  };
  switch (spec.kind) {
    case OperandKind::kSReg:
      expects(operand.has_sreg());
      CheckRegister(operand.sreg(), kScalarRegisterCount, 's', "scalar register", where);
      return;
    case OperandKind::kSRegOrImm:
      expects(operand.has_sreg() || operand.has_imm());
      if (operand.has_sreg()) CheckRegister(operand.sreg(), kScalarRegisterCount, 's', "scalar register", where);
      if (operand.has_imm()) CheckImmediate(operand.imm(), spec, where);
      return;
    case OperandKind::kImm:
      expects(operand.has_imm());
      CheckImmediate(operand.imm(), spec, where);
      return;
    case OperandKind::kBits:
      expects(operand.has_bits());
      return;
    case OperandKind::kVReg:
      expects(operand.has_vreg());
      CheckRegister(operand.vreg(), target.vector_registers(), 'v', "vector register", where);
      return;
    case OperandKind::kMReg:
      expects(operand.has_mreg());
      CheckRegister(operand.mreg(), kMaskRegisterCount, 'm', "mask register", where);
      return;
    case OperandKind::kLabel:
      expects(operand.has_label());
      if (!labels.contains(operand.label())) Fail(where, "label '" + operand.label() + "' is not defined");
      return;
    case OperandKind::kAddress: {
      expects(operand.has_address());
      const Address& address = operand.address();
      CheckSpace(address.space(), target, where);
      if ((spec.spaces & SpaceBit(address.space())) == 0) {
        Fail(where, std::string(info.mnemonic) + " cannot address " + std::string(MemorySpaceName(address.space())));
      }
      if (address.has_reg()) CheckRegister(address.reg(), kScalarRegisterCount, 's', "scalar register", where);
      return;
    }
    case OperandKind::kSemaphore: {
      expects(operand.has_semaphore());
      const RegOffset& sem = operand.semaphore();
      CheckRegOffset(sem, where);
      if (!sem.has_reg() && (sem.offset() < 0 || static_cast<uint64_t>(sem.offset()) >= target.semaphores())) {
        Fail(where, "semaphore " + std::to_string(sem.offset()) + " does not exist: the target has " +
                        Str(target.semaphores()));
      }
      return;
    }
    case OperandKind::kMxu:
      expects(operand.has_mxu());
      if (operand.mxu() >= target.mxu_count()) {
        Fail(where, "mxu" + Str(operand.mxu()) + " does not exist: the target has " + Str(target.mxu_count()) + " MXUs");
      }
      return;
    case OperandKind::kDmaEngine:
      expects(operand.has_imm());
      if (operand.imm() < 0 || static_cast<uint64_t>(operand.imm()) >= target.dma_engines()) {
        Fail(where, "DMA engine " + std::to_string(operand.imm()) + " does not exist: the target has " +
                        Str(target.dma_engines()));
      }
      return;
    case OperandKind::kShape:
      expects(operand.has_shape());
      return;  // checked with its address by CheckDma
    case OperandKind::kIndex:
      expects(operand.has_index());
      for (const RegOffset& item : operand.index().items()) CheckRegOffset(item, where);
      return;
    case OperandKind::kSizes:
      expects(operand.has_sizes());
      for (int64_t size : operand.sizes().items()) {
        if (size < 1) Fail(where, "region size " + std::to_string(size) + " is not positive");
      }
      return;
  }
}

// The rules that relate a DMA's operands: shapes that fit their sides, equal types and ranks,
// and a region inside both arrays where its starts are constants.
void CheckDma(const Program& program, int i, const InstructionInfo& info) {
  const Instruction& inst = program.instructions(i);
  auto at = [&](std::string_view name) {
    return ProgramLocation{.part = Part::kInstruction, .index = i, .operand = OperandIndex(info, name)};
  };
  auto operand = [&](std::string_view name) -> const Operand& { return inst.operands(OperandIndex(info, name)); };
  const Shape src = CheckShape(operand("src").shape(), operand("from").address().space(), at("src"));
  const Shape dst = CheckShape(operand("dst").shape(), operand("to").address().space(), at("dst"));
  if (src.element_type != dst.element_type) {
    Fail(at("dst"), "a DMA copies bytes: the element types differ (" + std::string(ElementTypeName(src.element_type)) +
                        " -> " + std::string(ElementTypeName(dst.element_type)) + ")");
  }
  if (src.rank() != dst.rank()) {
    Fail(at("dst"), "the source has rank " + std::to_string(src.rank()) + " and the destination rank " +
                        std::to_string(dst.rank()));
  }
  const auto& sizes = operand("size").sizes().items();
  if (sizes.size() != src.rank()) {
    Fail(at("size"), "size has " + std::to_string(sizes.size()) + " dims; the shapes have " + std::to_string(src.rank()));
  }
  struct Side { std::string_view name; const Shape& shape; };
  for (const Side side : {Side{"src_start", src}, Side{"dst_start", dst}}) {
    const Operand& start = operand(side.name);
    for (int d = 0; d < sizes.size(); ++d) {
      const int64_t dim = side.shape.dims[d];
      if (sizes[d] > dim) {
        Fail(at("size"), "size " + std::to_string(sizes[d]) + " of dim " + std::to_string(d) + " exceeds " +
                             ToString(side.shape));
      }
      if (!start.has_index()) continue;
      if (start.index().items_size() != src.rank()) {
        Fail(at(side.name), std::string(side.name) + " has " + std::to_string(start.index().items_size()) +
                                " dims; the shapes have " + std::to_string(src.rank()));
      }
      const RegOffset& item = start.index().items(d);
      // A start held in a register is checked when the DMA runs.
      if (!item.has_reg() && (item.offset() < 0 || item.offset() > dim - sizes[d])) {
        Fail(at(side.name), "the region [" + std::to_string(item.offset()) + ", +" + std::to_string(sizes[d]) +
                                ") of dim " + std::to_string(d) + " is outside " + ToString(side.shape));
      }
    }
  }
}

void CheckInstructions(const Program& program, const std::set<std::string>& labels) {
  const Target& target = program.target();
  for (int i = 0; i < program.instructions_size(); ++i) {
    const Instruction& inst = program.instructions(i);
    const ProgramLocation here{.part = Part::kInstruction, .index = i};
    const InstructionInfo* info = FindInstruction(inst.opcode());
    if (info == nullptr) Fail(here, "opcode " + std::to_string(static_cast<int>(inst.opcode())) + " does not exist");
    if (inst.operands_size() != static_cast<int>(info->operands.size())) {
      Fail(here, std::string(info->mnemonic) + " has " + std::to_string(info->operands.size()) + " operands, not " +
                     std::to_string(inst.operands_size()));
    }
    for (int j = 0; j < inst.operands_size(); ++j) {
      CheckOperand(program, labels, inst.operands(j), info->operands[j], *info,
                   {.part = Part::kInstruction, .index = i, .operand = j});
    }
    const int sublanes_operand = OperandIndex(*info, "sublanes");
    if (sublanes_operand >= 0 && inst.operands(sublanes_operand).has_bits() && target.sublanes() < 64 &&
        (inst.operands(sublanes_operand).bits() >> target.sublanes()) != 0) {
      Fail({.part = Part::kInstruction, .index = i, .operand = sublanes_operand},
           "sublane mask " + FormatHex(inst.operands(sublanes_operand).bits()) + " selects sublanes beyond the target's " +
               Str(target.sublanes()));
    }
    if (inst.opcode() == OPCODE_VXPOSE && target.lanes() % target.sublanes() != 0) {
      Fail(here, "vxpose needs lanes (" + Str(target.lanes()) + ") to be a multiple of sublanes (" +
                     Str(target.sublanes()) + ")");
    }
    if (inst.opcode() == OPCODE_DMA) CheckDma(program, i, *info);
  }
}

void CheckProgram(const Program& program) {
  if (!program.name().empty()) CheckName(program.name(), "program", {.part = Part::kProgram});
  CheckTarget(program.target());
  std::set<std::string> names;
  CheckBuffers(program, names);
  CheckData(program, names);
  std::set<std::string> labels;
  CheckLabels(program, labels);
  CheckLoops(program, labels);
  CheckInstructions(program, labels);
}

}  // namespace

std::optional<ProgramDefect> FindProgramDefect(const Program& program) {
  try {
    CheckProgram(program);
  } catch (const DefectFound& found) {
    return found.defect;
  }
  return std::nullopt;
}

std::string DescribeLocation(const Program& program, const ProgramLocation& where) {
  auto field = [&where]() { return where.field.empty() ? std::string() : ", field " + std::string(where.field); };
  switch (where.part) {
    case Part::kProgram: return "program";
    case Part::kTarget: return "target" + field();
    case Part::kBuffer: return "buffer " + std::to_string(where.index) + " ('" + program.buffers(where.index).name() + "')" + field();
    case Part::kData: return "data segment " + std::to_string(where.index) + " ('" + program.data(where.index).name() + "')" + field();
    case Part::kLabel: return "label " + std::to_string(where.index) + " ('" + program.labels(where.index).name() + "')";
    case Part::kLoop:
      return "loop " + std::to_string(where.index) + " ('" + program.loops(where.index).label() + "')" +
             (where.operand >= 0 ? ", state region " + std::to_string(where.operand) : "") + field();
    case Part::kInstruction: {
      std::string text = "instruction " + std::to_string(where.index);
      const InstructionInfo* info = FindInstruction(program.instructions(where.index).opcode());
      if (info == nullptr) return text;
      text += " (" + std::string(info->mnemonic) + ")";
      if (where.operand >= 0 && where.operand < static_cast<int>(info->operands.size())) {
        text += ", operand " + std::string(info->operands[where.operand].name);
      }
      return text;
    }
  }
  return "program";
}

void ValidateProgram(const Program& program) {
  if (const std::optional<ProgramDefect> defect = FindProgramDefect(program)) {
    throw Error("invalid program: " + DescribeLocation(program, defect->where) + ": " + defect->message);
  }
}

uint32_t TensorCores(const Target& target) { return std::max(target.tensor_cores(), 1u); }

void CheckTargetCompatible(const Target& program, const Target& machine) {
  std::string problems;
  auto problem = [&problems](const std::string& line) { problems += (problems.empty() ? "" : "\n") + line; };
  for (const TargetField& field : kTargetFields) {
    const uint32_t want = (program.*field.get)();
    const uint32_t have = (machine.*field.get)();
    const bool must_equal = field.name == "sublanes" || field.name == "lanes" || field.name == "mxu_rows" ||
                            field.name == "mxu_cols";
    if (must_equal && want != have) {
      problem("the program was built for " + std::string(field.name) + "=" + Str(want) + "; the machine has " + Str(have));
    } else if (!must_equal && want > have) {
      problem("the program uses " + std::string(field.name) + "=" + Str(want) + "; the machine has only " + Str(have));
    }
  }
  if (program.mxu_accumulator_rows() > machine.mxu_accumulator_rows()) {
    problem("the program uses mxu_acc_rows=" + Str(program.mxu_accumulator_rows()) + "; the machine has only " +
            Str(machine.mxu_accumulator_rows()));
  }
  if (program.has_cmem() && !machine.has_cmem()) problem("the program uses CMEM; the machine has none");
  if (TensorCores(program) > TensorCores(machine)) {
    problem("the program runs on cores=" + Str(program.tensor_cores()) + "; the machine has only " +
            Str(TensorCores(machine)));
  }
  if (!problems.empty()) throw Error(problems);
}

}  // namespace tpusim::isa
