// The assembler's lexer: reads the values of one line of assembly (registers, numbers, names,
// `space[base + offset]`, `[a, b, ...]`, `name(n)`) without knowing what the instruction expects,
// so that the assembler can say "must be a vector register, found 's2'". Offsets are positions in
// the whole text, so errors point into the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/asm_syntax.h"

namespace tpusim::isa {

// A number as written: sign and magnitude (up to 2^64 - 1), converted by the caller.
struct AsmNumber {
  bool negative = false;
  uint64_t magnitude = 0;
  // The value as an int64; nullopt if it does not fit.
  std::optional<int64_t> ToInt64() const;
};

// `s4 + 16`, `s4`, `-8`: an item inside brackets.
struct AsmItem {
  std::size_t begin = 0;
  std::optional<RegisterName> reg;  // any register kind; the caller requires a scalar one
  AsmNumber number;                 // 0 when only a register is written
};

struct AsmValue {
  enum class Kind : uint8_t {
    kRegister,  // s3, v0, m1, mxu2
    kNumber,    // -12, 0x1f
    kName,      // a label, `true`, `temporary`
    kCall,      // parameter(0)
    kBracket,   // hbm[s4 + 0x100], sem[2]: `name` is the space or "sem", items has one item
    kList,      // [s6 + 8, 0]
  };
  Kind kind = Kind::kNumber;
  std::size_t begin = 0;
  std::size_t end = 0;
  RegisterName reg{};
  AsmNumber number;
  std::string_view name;
  std::vector<AsmItem> items;
};

// A cursor over the code of one line: [begin, end) of `text`, comment excluded.
class LineCursor {
 public:
  LineCursor(std::string_view text, std::size_t begin, std::size_t end)
      : text_(text.substr(0, end)), pos_(begin) {}

  // The text up to the end of this line's code: for parsers that take (text, pos).
  std::string_view text() const { return text_; }
  std::size_t pos() const { return pos_; }
  void set_pos(std::size_t pos) { pos_ = pos; }
  std::size_t end() const { return text_.size(); }
  // The offset just past the last non-blank character of the line's code (where "missing ..."
  // errors point).
  std::size_t TrimmedEnd() const;

  void SkipSpaces();
  bool AtEnd() const { return pos_ >= text_.size(); }
  bool Peek(char c) const { return !AtEnd() && text_[pos_] == c; }
  bool Consume(char c);
  bool Consume(std::string_view s);
  // [A-Za-z_][A-Za-z0-9_.]*; "" (and no move) if none starts here.
  std::string_view ReadName();
  // True if a name followed by optional spaces and `c` starts here (`key=`, `label:`); does not move.
  bool NameFollowedBy(char c) const;

  AsmValue ReadValue();
  AsmNumber ReadNumber();
  // Hex digit pairs (`00803f`): the bytes of a .data directive.
  std::string ReadHexBytes();

  // `'text'` of the next few characters, or "end of line".
  std::string Found(std::size_t at) const;
  std::string_view Slice(std::size_t begin, std::size_t end) const { return text_.substr(begin, end - begin); }
  [[noreturn]] void Fail(std::size_t at, const std::string& message) const;

 private:
  AsmItem ReadItem();

  std::string_view text_;
  std::size_t pos_;
};

}  // namespace tpusim::isa
