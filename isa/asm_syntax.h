// How the assembly text spells things: names, registers, numbers and operands. The assembler
// (which reads these) and the disassembler (which writes them) share this file, so that every
// spelling the disassembler writes is one the assembler reads back. docs/isa.md has the grammar.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "isa/instruction_set.h"
#include "isa/program.pb.h"

namespace tpusim::isa {

inline bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9') || c == '.'; }

// A register or unit as the assembly writes it: s<N>, v<N>, m<N>, mxu<N>.
struct RegisterName {
  enum class Kind : uint8_t { kSReg, kVReg, kMReg, kMxu };
  Kind kind;
  uint64_t number;  // may be out of range; the caller checks
};
// Reads `word` as a register name; nullopt if it is not spelled like one. A number too long to
// be a register (more than 9 digits) reads as UINT64_MAX, so that it is reported as out of range.
std::optional<RegisterName> ParseRegisterName(std::string_view word);

// True for a name the assembly can write for a label, buffer, data segment or program:
// [A-Za-z_][A-Za-z0-9_.]*, not spelled like a register (s3, v0, m1, mxu2), at most 256 bytes.
bool IsValidName(std::string_view name);

// `0x1f`; `-0x10` for negative values (INT64_MIN included).
std::string FormatHex(uint64_t value);
std::string FormatSignedHex(int64_t value);

// `hbm[s4 + 0x100]`, `vmem[0x0]`, `smem[s2 - 0x8]`.
std::string FormatAddress(const Address& address);
// `s3 + 1`, `s3`, `2` (decimal: semaphore numbers and element indices).
std::string FormatRegOffset(const RegOffset& value);

// The text of one operand's value (without `name=`), as the disassembler writes it; "" if unset.
std::string FormatOperandValue(const Operand& operand);

// `vadd.f32 vd, va, vb`; `dma from -> to, src=, dst=, [src_start=], ...`: for error messages
// and docs/isa.md.
std::string InstructionSignature(const InstructionInfo& info);

}  // namespace tpusim::isa
