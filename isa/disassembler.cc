#include "isa/disassembler.h"

#include "isa/asm_syntax.h"
#include "isa/error.h"
#include "isa/instruction_set.h"
#include "isa/program_check.h"

namespace tpusim::isa {
namespace {

std::string Place(MemorySpace space, uint64_t address) {
  return std::string(MemorySpaceName(space)) + "[" + FormatHex(address) + "]";
}

std::string BufferLine(const Buffer& b) {
  std::string role = "temporary";
  if (b.role() == BUFFER_ROLE_PARAMETER) role = "parameter(" + std::to_string(b.index()) + ")";
  if (b.role() == BUFFER_ROLE_OUTPUT) role = "output(" + std::to_string(b.index()) + ")";
  return ".buffer " + b.name() + ", " + Place(b.space(), b.address()) + ", size=" + FormatHex(b.size_bytes()) +
         ", shape=" + b.shape() + ", role=" + role;
}

std::string DataLine(const DataSegment& d) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * d.data().size());
  for (unsigned char byte : d.data()) {
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 0xF]);
  }
  return ".data " + d.name() + ", " + Place(d.space(), d.address()) + ", bytes=" + hex;
}

// `.loop LABEL` alone for a loop without state, else one line per region; then its counter's.
std::string LoopLines(const Loop& loop) {
  std::string out;
  if (loop.state().empty()) out = ".loop " + loop.label() + "\n";
  for (const Region& r : loop.state()) {
    out += ".loop " + loop.label() + ", " + Place(r.space(), r.address()) + ", size=" + FormatHex(r.size_bytes()) + "\n";
  }
  if (loop.has_counter()) {
    const LoopCounter& c = loop.counter();
    const std::string type = (c.is_signed() ? "s" : "u") + std::to_string(8 * c.place().size_bytes());
    out += ".loop " + loop.label() + ", counter=" + Place(c.place().space(), c.place().address()) + ", type=" + type +
           ", step=" + std::to_string(c.step()) + ", while=" + c.compare() + ", bound=" + std::to_string(c.bound()) + "\n";
  }
  return out;
}

}  // namespace

std::string DisassembleInstruction(const Instruction& instruction) {
  const InstructionInfo* info = FindInstruction(instruction.opcode());
  if (info == nullptr) throw Error("opcode " + std::to_string(static_cast<int>(instruction.opcode())) + " does not exist");
  if (instruction.operands_size() != static_cast<int>(info->operands.size())) {
    throw Error(std::string(info->mnemonic) + " has " + std::to_string(info->operands.size()) + " operands, not " +
                std::to_string(instruction.operands_size()));
  }
  std::string out(info->mnemonic);
  bool first = true;
  for (std::size_t i = 0; i < info->operands.size(); ++i) {
    const Operand& operand = instruction.operands(static_cast<int>(i));
    if (operand.value_case() == Operand::VALUE_NOT_SET) continue;
    const OperandSpec& spec = info->operands[i];
    out += first ? " " : (info->arrow && i == 1 ? " -> " : ", ");
    first = false;
    if (spec.keyword) out += std::string(spec.name) + "=";
    out += FormatOperandValue(operand);
  }
  return out;
}

std::string TargetLine(const Target& t) {
  auto field = [](std::string_view name, uint32_t value) { return std::string(name) + "=" + std::to_string(value); };
  return ".target " + field("sublanes", t.sublanes()) + ", " + field("lanes", t.lanes()) + ", " +
         field("vregs", t.vector_registers()) + ", " + field("mxus", t.mxu_count()) + ", " +
         field("mxu_rows", t.mxu_rows()) + ", " + field("mxu_cols", t.mxu_columns()) + ", " +
         field("dma_engines", t.dma_engines()) + ", " + field("semaphores", t.semaphores()) +
         ", cmem=" + (t.has_cmem() ? "true" : "false") +
         (t.mxu_accumulator_rows() != 0 ? ", " + field("mxu_acc_rows", t.mxu_accumulator_rows()) : "") +
         (t.tensor_cores() > 1 ? ", " + field("cores", t.tensor_cores()) : "");
}

std::string Disassemble(const Program& program) { return Disassemble(program, {}); }

std::string Disassemble(const Program& program, const std::vector<Comment>& comments) {
  ValidateProgram(program);
  std::string out;
  if (!program.name().empty()) out += ".program " + program.name() + "\n";
  out += TargetLine(program.target()) + "\n";
  for (const Buffer& buffer : program.buffers()) out += BufferLine(buffer) + "\n";
  for (const DataSegment& data : program.data()) out += DataLine(data) + "\n";
  for (const Loop& loop : program.loops()) out += LoopLines(loop);
  if (program.instructions_size() == 0 && program.labels_size() == 0 && comments.empty()) return out;
  out += "\n";
  int label = 0;
  std::size_t comment = 0;
  for (int i = 0; i <= program.instructions_size(); ++i) {
    for (; comment < comments.size() && comments[comment].instruction <= static_cast<uint32_t>(i); ++comment) {
      out += "  // " + comments[comment].text + "\n";
    }
    for (; label < program.labels_size() && program.labels(label).instruction() == static_cast<uint32_t>(i); ++label) {
      out += program.labels(label).name() + ":\n";
    }
    if (i < program.instructions_size()) out += "  " + DisassembleInstruction(program.instructions(i)) + "\n";
  }
  return out;
}

}  // namespace tpusim::isa
