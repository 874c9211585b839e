// Builds a program (isa::Program) instruction by instruction: kernels emit typed instructions
// (isa::MakeInstruction, each checked against the instruction table as it is made), bind labels,
// and add buffers, data and loops; Finish checks the whole program against its target. Text is
// only an output: `tpusim compile` disassembles the program with the builder's comments
// (isa::Disassemble). Labels and buffer names are made unique here.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "isa/disassembler.h"
#include "isa/element_type.h"
#include "isa/instruction_builder.h"
#include "isa/program.pb.h"
#include "isa/shape.h"

namespace tpusim::compiler {

class ProgramBuilder {
 public:
  ProgramBuilder(std::string program_name, const isa::Target& target);
  // A builder that keeps only its count of instructions and the names it handed out: a kernel's
  // trial emission (does it fit the registers, VMEM, ...?) whose instructions are never run. Its
  // instructions are not made (nor checked: the real emission checks them); Finish is refused.
  static ProgramBuilder Scratch(const isa::Target& target);

  const isa::Target& target() const { return program_.target(); }

  // A label name not used before, from `hint` (characters outside [A-Za-z0-9_.] become '_').
  std::string NewLabel(std::string_view hint);
  // Names the next instruction.
  void Bind(const std::string& label);
  // A line of `// text` before the next instruction in the disassembly.
  void Comment(std::string_view text);

  // The instruction `opcode` with its operands (isa::MakeInstruction).
  void Emit(isa::Opcode opcode, std::initializer_list<isa::ops::Arg> positional = {},
            std::initializer_list<isa::ops::KeywordArg> keywords = {},
            isa::CallSite where = {__builtin_FILE(), __builtin_LINE()}) {
    if (scratch_) {
      ++scratch_instructions_;
      return;
    }
    Add(isa::MakeInstruction(opcode, positional, keywords, where));
  }
  void Add(isa::Instruction instruction) {
    if (scratch_) {
      ++scratch_instructions_;
      return;
    }
    *program_.add_instructions() = std::move(instruction);
  }

  // A buffer (isa::Buffer) named from `name`, made a valid, unique name, which it returns.
  std::string AddBuffer(std::string_view name, isa::MemorySpace space, uint64_t address, uint64_t size_bytes,
                        const isa::Shape& shape, isa::BufferRole role, uint32_t index = 0);
  void AddData(std::string_view name, isa::MemorySpace space, uint64_t address, const std::vector<uint8_t>& bytes);
  // The loop at `label` and the state its ending depends on (isa::Loop), and its counter where it
  // has one (isa::LoopCounter), `type` an integer type of the counter's size.
  struct Region {
    isa::MemorySpace space = isa::MEMORY_SPACE_HBM;
    uint64_t address = 0;
    uint64_t size_bytes = 0;
  };
  struct Counter {
    Region place;
    isa::ElementType type = isa::ElementType::kS32;
    int64_t step = 0;
    std::string compare;
    int64_t bound = 0;
  };
  void AddLoop(std::string_view label, const std::vector<Region>& state, const std::optional<Counter>& counter = std::nullopt);

  std::size_t instruction_count() const {
    return scratch_ ? scratch_instructions_ : static_cast<std::size_t>(program_.instructions_size());
  }
  // The program, checked against its target (a defect is a compiler bug: tpusim::Error naming the
  // instruction); the builder is left empty.
  isa::Program Finish();
  // The comments, by the instruction they precede.
  std::vector<isa::Comment> TakeComments() { return std::move(comments_); }

 private:
  // Names handed out, and the next suffix to try for each base.
  struct Names {
    std::unordered_set<std::string> used;
    std::unordered_map<std::string, int> next_suffix;
  };
  std::string UniqueName(std::string_view hint, Names& names);

  isa::Program program_;
  bool scratch_ = false;
  std::size_t scratch_instructions_ = 0;
  std::vector<isa::Comment> comments_;
  std::unordered_map<std::string, int> loop_numbers_;
  Names labels_;
  Names symbols_;
};

}  // namespace tpusim::compiler
