// Checking a Program: against the instruction table and its own target (ValidateProgram), and
// its target against a machine's (CheckTargetCompatible). A valid program is one the assembler
// could have produced: the disassembler requires it, and assemble(disassemble(p)) == p holds for
// exactly these programs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "isa/program.pb.h"

namespace tpusim::isa {

// Where in a Program a defect is. The assembler maps it back to a line and column.
struct ProgramLocation {
  enum class Part : uint8_t { kProgram, kTarget, kInstruction, kLabel, kBuffer, kData, kLoop };
  Part part = Part::kProgram;
  int index = -1;          // instruction, label, buffer, data segment or loop number
  int operand = -1;        // instruction operand, in table order, or a loop's state region;
                           // -1 = the instruction or loop itself
  std::string_view field = {};  // target, buffer or data field as the assembly names it ("lanes", "size")
};

struct ProgramDefect {
  ProgramLocation where;
  std::string message;  // says what is wrong, without the location
};

// The first defect found, checking in this order: program name, target, buffers, data segments,
// labels, loops, instructions (each operand in order, then the rules that relate operands). nullopt if
// the program is valid. Never throws.
std::optional<ProgramDefect> FindProgramDefect(const Program& program);

// Throws tpusim::Error("invalid program: <where>: <message>") if FindProgramDefect finds one.
void ValidateProgram(const Program& program);

// "instruction 12 (vadd.f32), operand vb", "buffer 'x', field size", "target, field lanes".
std::string DescribeLocation(const Program& program, const ProgramLocation& where);

// The TensorCores a program for `target` runs on: `.target cores`, where 0 (left out) is one.
uint32_t TensorCores(const Target& target);

// Checks that a program built for `program` can run on a machine described by `machine` (the
// loader builds it from the ArchConfig): sublanes, lanes, mxu_rows and mxu_columns equal; the
// program's vector registers, MXUs, DMA engines and semaphores no more than the machine's; CMEM
// only if the machine has it. Throws tpusim::Error listing every mismatch, one per line.
void CheckTargetCompatible(const Target& program, const Target& machine);

}  // namespace tpusim::isa
