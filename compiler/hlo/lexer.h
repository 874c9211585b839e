// The lexer of HLO text: a cursor over the whole text (a string_view; nothing is copied) with one
// function per kind of token. HLO's tokens depend on context (`3x3` is a window size after
// `size=`, `b01f_01io->b01f` dim labels after `dim_labels=`), so the parser, which knows the
// context, asks for the token it expects instead of the lexer guessing. Shapes are read by
// isa::ParseShapeAt from the same text. Every failure is a ParseError at a byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "compiler/hlo/attribute.h"

namespace tpusim::hlo {

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::string_view text() const { return text_; }
  std::size_t pos() const { return pos_; }
  void set_pos(std::size_t pos) { pos_ = pos; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  // The character `ahead` places on, or '\0' past the end.
  char Peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool Consume(char c);
  bool ConsumeString(std::string_view s);

  // Skips spaces, newlines, `/* ... */` and `// ...` comments.
  void SkipTrivia();
  // Skips trivia, then consumes `c` or fails with "expected 'c' <context>".
  void Expect(char c, std::string_view context);

  // `[A-Za-z0-9_.-]*` at the cursor (may be empty).
  std::string_view ScanIdentifier();
  // A name: `%` and `[A-Za-z0-9_.-]+`, or `[A-Za-z_][A-Za-z0-9_.-]*`. Empty if none is here.
  std::string_view ScanName();
  // An optionally negative decimal integer that fits in int64.
  int64_t ScanInt(std::string_view what);
  // The text of a number: `-`, digits, `.`, exponent, or inf / nan / nan(0x...). Empty if none.
  std::string_view ScanNumber();
  // A `"..."` string, unescaped (C escapes: \n \t \\ \" \' \xHH \ooo ...).
  std::string ScanQuoted();
  // An attribute value kept as text: everything up to a ',', whitespace or a comment outside
  // brackets (or a closing bracket that opens nowhere in it), with (), [], {} balanced and
  // strings and comments inside them skipped whole. Fails if empty or unbalanced.
  std::string_view ScanBalanced(std::string_view what);
  // Skips to just past the ')' matching an already consumed '(' (the text of `constant(...)`).
  void SkipToClosingParen(std::size_t open_offset);

  // Line and column of `offset`. Fast when offsets come in increasing order (the parser's).
  SourceLocation Locate(std::size_t offset);

  [[noreturn]] void Fail(const std::string& message) const { FailAt(pos_, message); }
  // Throws ParseError(offset, message + ", found <what is there>").
  [[noreturn]] void FailAt(std::size_t offset, const std::string& message) const;
  // Throws ParseError(offset, message) as is.
  [[noreturn]] void FailPlain(std::size_t offset, const std::string& message) const;
  // What is at `offset`, for messages: 'text up to 16 chars, stopping at a newline' or "end of text".
  std::string Describe(std::size_t offset) const;

 private:
  void SkipString();   // at '"'
  void SkipComment();  // at '/'; fails for an unterminated /*

  std::string_view text_;
  std::size_t pos_ = 0;
  // Locate's memory: the last offset located and its line and line start.
  std::size_t located_offset_ = 0;
  int64_t located_line_ = 1;
  std::size_t located_line_start_ = 0;
};

// True for [A-Za-z0-9_.-], the characters of names after the first.
inline bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace tpusim::hlo
