// The assembler: `.tpuasm` text -> Program. docs/isa.md gives the syntax; in short, one statement
// per line, `//` comments, `name:` labels, directives `.program`, `.target`, `.buffer`, `.data`,
// and instructions `mnemonic positional, ..., keyword=value, ...` as the instruction table
// (isa/instruction_set.h) lists them.
//
// The result is a valid program (program_check.h): every error, from a bad character to a vector
// register the target does not have, is reported with its position. Disassemble (disassembler.h)
// is the inverse: Assemble(Disassemble(p)) == p for every valid p.
#pragma once

#include <string>
#include <string_view>

#include "isa/program.pb.h"

namespace tpusim::isa {

// Assembles `text`. Throws tpusim::ParseError (a byte offset into `text` and a message) on any
// error; never anything else, whatever the text.
Program Assemble(std::string_view text);

// The same, with errors rendered by FormatParseError as `source:line:col: message`, the line and
// a caret (a tpusim::Error). `source` names the text: a path, or e.g. "(test)".
Program Assemble(std::string_view text, std::string_view source);

// One instruction line (no label, directive or comment), operands checked against the
// instruction table; what depends on the program (its target, its labels) is not checked. Throws
// tpusim::ParseError.
Instruction AssembleInstruction(std::string_view line);

// Reads the file at `path` and assembles it; errors as above with `path` as the source, or
// `PATH: cannot open for reading`.
Program AssembleFile(const std::string& path);

}  // namespace tpusim::isa
