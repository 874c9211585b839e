// The disassembler: Program -> canonical `.tpuasm` text, the inverse of Assemble
// (assembler.h): Assemble(Disassemble(p)) == p for every valid program p, and
// Disassemble(Assemble(text)) is the canonical spelling of any text that assembles.
//
// Canonical form: `.program` (if named), `.target`, the buffers, the data segments, a blank line,
// then the code: each label alone on its line at column 0, each instruction indented two spaces,
// operands as the instruction table orders them (optional ones only when present), addresses
// and sizes in hex, other numbers in decimal, no comments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.pb.h"

namespace tpusim::isa {

// Throws tpusim::Error (ValidateProgram's message) if `program` is not valid.
std::string Disassemble(const Program& program);

// A line of `// text` before instruction `instruction` (and its labels); instructions_size()
// for the end. What a compiler writes to say what code is for; the program does not hold it.
struct Comment {
  uint32_t instruction = 0;
  std::string text;
};
// The canonical text with `comments` (in instruction order) inserted.
std::string Disassemble(const Program& program, const std::vector<Comment>& comments);

// The `.target` line (no newline) of `target`, as the canonical text spells it.
std::string TargetLine(const Target& target);

// One instruction as it appears in the canonical text, without indentation: `vadd.f32 v3, v1, v2`.
// For traces and fault messages; throws tpusim::Error for an opcode the table does not have or
// the wrong number of operands.
std::string DisassembleInstruction(const Instruction& instruction);

}  // namespace tpusim::isa
