// Typed instruction building: the compiler's kernels make isa::Instructions from typed operands
// (a scalar register, a vector register, an address in a memory space, ...) rather than from
// assembly text. Each instruction is checked against its row of the instruction table as it is
// made: the operand count, each operand's kind, keyword names and immediate ranges; a mismatch is
// a compiler bug, reported with the call site that made it. What depends on the target (register
// and MXU counts, semaphores) is checked with the whole program (ValidateProgram).
//
// A kernel writes, for `vld v3, vmem[s5 + 0x80], sublanes=0xf` (with `using namespace isa::ops`):
//   MakeInstruction(isa::OPCODE_VLD, {V(3), Vmem(S(5), 0x80)}, {{"sublanes", Bits(0xf)}})
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/program.pb.h"
#include "isa/shape.h"

namespace tpusim::isa {

// The source line that makes an instruction (a kernel's), named where the instruction does not fit
// its table row. As a default argument, {__builtin_FILE(), __builtin_LINE()} is the caller's line,
// as std::source_location::current() would be (which the sanitized build's Clang 14 cannot compile
// with Debian 12's libstdc++).
struct CallSite {
  const char* file = "";
  unsigned line = 0;
};

namespace ops {

// The operand values, one type per OperandKind (instruction_set.h) they can fill.
struct SReg {
  uint32_t n = 0;
};
struct VReg {
  uint32_t n = 0;
};
struct MReg {
  uint32_t n = 0;
};
struct MxuId {
  uint32_t n = 0;
};
struct BitsValue {
  uint64_t bits = 0;
};
struct LabelName {
  std::string name;
};
// A scalar register plus a constant, or a constant alone (no register): an address's base, a
// semaphore number, a DMA start index.
struct RegPlus {
  std::optional<uint32_t> reg;
  int64_t offset = 0;
  RegPlus() = default;
  template <std::integral T>
  RegPlus(T value) : offset(static_cast<int64_t>(value)) {}  // NOLINT: a constant item
  RegPlus(SReg r, int64_t plus = 0) : reg(r.n), offset(plus) {}  // NOLINT: a register item
};
struct AddressValue {
  MemorySpace space = MEMORY_SPACE_HBM;
  RegPlus at;
};
struct SemaphoreValue {
  RegPlus number;
};
struct IndexValue {
  std::vector<RegPlus> items;
};
struct SizesValue {
  std::vector<int64_t> items;
};
struct ShapeValue {
  std::string text;  // canonical: ToString of a Shape
};

inline SReg S(uint32_t n) { return {n}; }
inline VReg V(uint32_t n) { return {n}; }
inline MReg M(uint32_t n) { return {n}; }
inline MxuId Mxu(uint32_t n) { return {n}; }
inline BitsValue Bits(uint64_t bits) { return {bits}; }
inline LabelName Label(std::string name) { return {std::move(name)}; }
inline AddressValue Address(MemorySpace space, RegPlus at) { return {space, at}; }
inline AddressValue Hbm(RegPlus at) { return {MEMORY_SPACE_HBM, at}; }
inline AddressValue Hbm(SReg base, int64_t offset) { return {MEMORY_SPACE_HBM, RegPlus(base, offset)}; }
inline AddressValue Vmem(RegPlus at) { return {MEMORY_SPACE_VMEM, at}; }
inline AddressValue Vmem(SReg base, int64_t offset) { return {MEMORY_SPACE_VMEM, RegPlus(base, offset)}; }
inline AddressValue Smem(RegPlus at) { return {MEMORY_SPACE_SMEM, at}; }
inline AddressValue Smem(SReg base, int64_t offset) { return {MEMORY_SPACE_SMEM, RegPlus(base, offset)}; }
inline AddressValue Cmem(RegPlus at) { return {MEMORY_SPACE_CMEM, at}; }
inline AddressValue Host(RegPlus at) { return {MEMORY_SPACE_HOST, at}; }
inline AddressValue Ici(RegPlus at) { return {MEMORY_SPACE_ICI, at}; }
inline SemaphoreValue Sem(RegPlus number) { return {number}; }
inline SemaphoreValue Sem(SReg base, int64_t offset) { return {RegPlus(base, offset)}; }
inline IndexValue Index(std::vector<RegPlus> items) { return {std::move(items)}; }
inline SizesValue Sizes(std::vector<int64_t> items) { return {std::move(items)}; }
ShapeValue ShapeArg(const Shape& shape);

// One operand of MakeInstruction: any of the values above, or an integer (an immediate).
class Arg {
 public:
  enum class Kind : uint8_t { kSReg, kVReg, kMReg, kMxu, kImm, kBits, kLabel, kAddress, kSemaphore, kIndex, kSizes, kShape };

  Arg(SReg r);                  // NOLINT: operands convert implicitly, as they read in assembly
  Arg(VReg r);                  // NOLINT
  Arg(MReg r);                  // NOLINT
  Arg(MxuId m);                 // NOLINT
  Arg(BitsValue b);             // NOLINT
  Arg(LabelName l);             // NOLINT
  Arg(const AddressValue& a);   // NOLINT
  Arg(const SemaphoreValue& s); // NOLINT
  Arg(const IndexValue& i);     // NOLINT
  Arg(const SizesValue& s);     // NOLINT
  Arg(ShapeValue s);            // NOLINT
  template <std::integral T>
  Arg(T value) : kind_(Kind::kImm) {  // NOLINT: an immediate
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      unsigned_too_large_ = value > static_cast<T>(std::numeric_limits<int64_t>::max());
    }
    operand_.set_imm(static_cast<int64_t>(value));
  }

  Kind kind() const { return kind_; }
  const Operand& operand() const { return operand_; }
  bool unsigned_too_large() const { return unsigned_too_large_; }

 private:
  Kind kind_;
  Operand operand_;
  bool unsigned_too_large_ = false;
};

// `name=value`, a keyword operand.
struct KeywordArg {
  std::string_view name;
  Arg value;
};

}  // namespace ops

// The instruction `opcode` with `positional` operands (in the table's order; optional ones may be
// left off the end) and `keywords`. Throws tpusim::Error ("internal: FILE:LINE: ...") where the
// operands do not fit the table's row.
Instruction MakeInstruction(Opcode opcode, std::initializer_list<ops::Arg> positional,
                            std::initializer_list<ops::KeywordArg> keywords = {},
                            CallSite where = {__builtin_FILE(), __builtin_LINE()});
// The same from vectors, for operands gathered at run time.
Instruction MakeInstruction(Opcode opcode, const std::vector<ops::Arg>& positional,
                            const std::vector<ops::KeywordArg>& keywords,
                            CallSite where = {__builtin_FILE(), __builtin_LINE()});

}  // namespace tpusim::isa
