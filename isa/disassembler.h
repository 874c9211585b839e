// The disassembler: Program -> canonical `.tpuasm` text, the inverse of Assemble
// (assembler.h): Assemble(Disassemble(p)) == p for every valid program p, and
// Disassemble(Assemble(text)) is the canonical spelling of any text that assembles.
//
// Canonical form: `.program` (if named), `.target`, the buffers, the data segments, a blank line,
// then the code: each label alone on its line at column 0, each instruction indented two spaces,
// operands as the instruction table orders them (optional ones only when present), addresses
// and sizes in hex, other numbers in decimal, no comments.
#pragma once

#include <string>

#include "isa/program.pb.h"

namespace tpusim::isa {

// Throws tpusim::Error (ValidateProgram's message) if `program` is not valid.
std::string Disassemble(const Program& program);

// The `.target` line (no newline) of `target`, as the canonical text spells it.
std::string TargetLine(const Target& target);

// One instruction as it appears in the canonical text, without indentation: `vadd.f32 v3, v1, v2`.
// For traces and fault messages; throws tpusim::Error for an opcode the table does not have or
// the wrong number of operands.
std::string DisassembleInstruction(const Instruction& instruction);

}  // namespace tpusim::isa
