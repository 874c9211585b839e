#include "compiler/hlo/lexer.h"

#include <algorithm>
#include <cstring>

#include "isa/error.h"

namespace tpusim::hlo {

bool Lexer::Consume(char c) {
  if (AtEnd() || text_[pos_] != c) return false;
  ++pos_;
  return true;
}

bool Lexer::ConsumeString(std::string_view s) {
  if (text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

void Lexer::SkipTrivia() {
  while (!AtEnd()) {
    const char c = text_[pos_];
    if (IsSpace(c)) {
      ++pos_;
    } else if (c == '/' && (Peek(1) == '*' || Peek(1) == '/')) {
      SkipComment();
    } else {
      return;
    }
  }
}

void Lexer::SkipComment() {
  const std::size_t start = pos_;
  if (Peek(1) == '/') {
    const std::size_t end = text_.find('\n', pos_);
    pos_ = end == std::string_view::npos ? text_.size() : end + 1;
    return;
  }
  const std::size_t end = text_.find("*/", pos_ + 2);
  if (end == std::string_view::npos) FailPlain(start, "unterminated /* comment");
  pos_ = end + 2;
}

void Lexer::Expect(char c, std::string_view context) {
  SkipTrivia();
  if (!Consume(c)) Fail(std::string("expected '") + c + "' " + std::string(context));
}

std::string_view Lexer::ScanIdentifier() {
  const std::size_t start = pos_;
  while (!AtEnd() && IsNameChar(text_[pos_])) ++pos_;
  return text_.substr(start, pos_ - start);
}

std::string_view Lexer::ScanName() {
  const std::size_t start = pos_;
  if (Consume('%')) {
    const std::string_view name = ScanIdentifier();
    if (name.empty()) FailAt(start, "expected a name after '%'");
    return name;
  }
  const char c = Peek();
  if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) return {};
  return ScanIdentifier();
}

int64_t Lexer::ScanInt(std::string_view what) {
  const std::size_t start = pos_;
  const bool negative = Consume('-');
  if (!IsDigit(Peek())) {
    pos_ = start;
    Fail("expected " + std::string(what));
  }
  uint64_t value = 0;
  // The magnitude may reach 2^63 only for a negative number (INT64_MIN).
  const uint64_t limit = negative ? uint64_t{1} << 63 : static_cast<uint64_t>(INT64_MAX);
  while (IsDigit(Peek())) {
    const auto digit = static_cast<uint64_t>(text_[pos_] - '0');
    if (value > (limit - digit) / 10) FailPlain(start, std::string(what) + " does not fit in 64 bits");
    value = value * 10 + digit;
    ++pos_;
  }
  if (negative) return value == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(value);
  return static_cast<int64_t>(value);
}

std::string_view Lexer::ScanNumber() {
  const std::size_t start = pos_;
  if (Peek() == '-' || Peek() == '+') ++pos_;
  if (ConsumeString("inf")) return text_.substr(start, pos_ - start);
  if (ConsumeString("nan")) {
    // nan(0x7fc01): a NaN with a payload.
    if (Peek() == '(') {
      const std::size_t close = text_.find(')', pos_);
      if (close == std::string_view::npos || close - pos_ > 24) FailAt(pos_, "malformed nan payload");
      pos_ = close + 1;
    }
    return text_.substr(start, pos_ - start);
  }
  const std::size_t digits = pos_;
  while (IsDigit(Peek()) || Peek() == '.') ++pos_;
  if (pos_ == digits) {
    pos_ = start;
    return {};
  }
  if (Peek() == 'e' || Peek() == 'E') {
    const std::size_t exponent = pos_;
    ++pos_;
    if (Peek() == '-' || Peek() == '+') ++pos_;
    if (!IsDigit(Peek())) {
      pos_ = exponent;
    } else {
      while (IsDigit(Peek())) ++pos_;
    }
  }
  return text_.substr(start, pos_ - start);
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Lexer::ScanQuoted() {
  const std::size_t start = pos_;
  if (!Consume('"')) Fail("expected a quoted string");
  std::string out;
  while (true) {
    if (AtEnd()) FailPlain(start, "unterminated string");
    const char c = text_[pos_++];
    if (c == '"') return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (AtEnd()) FailPlain(start, "unterminated string");
    const std::size_t escape = pos_ - 1;
    const char e = text_[pos_++];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      case '\\': case '"': case '\'': case '?': out += e; break;
      case 'x': {
        int value = 0;
        int digits = 0;
        while (digits < 2 && HexValue(Peek()) >= 0) {
          value = value * 16 + HexValue(text_[pos_++]);
          ++digits;
        }
        if (digits == 0) FailPlain(escape, "\\x needs a hex digit");
        out += static_cast<char>(value);
        break;
      }
      default: {
        if (e < '0' || e > '7') FailPlain(escape, std::string("unknown escape sequence '\\") + e + "' in string");
        int value = e - '0';
        for (int digits = 1; digits < 3 && Peek() >= '0' && Peek() <= '7'; ++digits) {
          value = value * 8 + (text_[pos_++] - '0');
        }
        if (value > 0xff) FailPlain(escape, "octal escape out of range in string");
        out += static_cast<char>(value);
      }
    }
  }
}

void Lexer::SkipString() {
  const std::size_t start = pos_;
  ++pos_;
  while (true) {
    if (AtEnd()) FailPlain(start, "unterminated string");
    const char c = text_[pos_++];
    if (c == '"') return;
    if (c == '\\') ++pos_;  // the escaped character, whatever it is
  }
}

std::string_view Lexer::ScanBalanced(std::string_view what) {
  const std::size_t start = pos_;
  std::string open;  // the closers expected, innermost last
  std::size_t first_open = 0;
  while (!AtEnd()) {
    const char c = text_[pos_];
    if (open.empty() && (c == ',' || IsSpace(c) || c == '}' || c == ')' || c == ']')) break;
    if (c == '"') {
      SkipString();
      continue;
    }
    if (c == '/' && (Peek(1) == '*' || Peek(1) == '/')) {
      if (open.empty()) break;  // a comment after the value is not part of it
      SkipComment();
      continue;
    }
    if (c == '{' || c == '(' || c == '[') {
      if (open.empty()) first_open = pos_;
      open += c == '{' ? '}' : c == '(' ? ')' : ']';
    } else if (c == '}' || c == ')' || c == ']') {
      if (c != open.back()) FailAt(pos_, std::string("expected '") + open.back() + "' in " + std::string(what));
      open.pop_back();
    }
    ++pos_;
  }
  if (!open.empty()) FailPlain(first_open, "unbalanced '" + std::string(1, text_[first_open]) + "' in " + std::string(what));
  if (pos_ == start) Fail("expected " + std::string(what));
  return text_.substr(start, pos_ - start);
}

void Lexer::SkipToClosingParen(std::size_t open_offset) {
  int depth = 1;
  while (!AtEnd()) {
    const char c = text_[pos_];
    if (c == '"') {
      SkipString();
      continue;
    }
    if (c == '/' && (Peek(1) == '*' || Peek(1) == '/')) {
      SkipComment();
      continue;
    }
    ++pos_;
    if (c == '(') ++depth;
    if (c == ')' && --depth == 0) return;
  }
  FailPlain(open_offset, "unbalanced '('");
}

SourceLocation Lexer::Locate(std::size_t offset) {
  offset = std::min(offset, text_.size());
  if (offset < located_offset_) {
    located_offset_ = 0;
    located_line_ = 1;
    located_line_start_ = 0;
  }
  const char* base = text_.data();
  std::size_t p = located_offset_;
  while (p < offset) {
    const void* newline = std::memchr(base + p, '\n', offset - p);
    if (!newline) break;
    p = static_cast<const char*>(newline) - base + 1;
    ++located_line_;
    located_line_start_ = p;
  }
  located_offset_ = offset;
  return SourceLocation{offset, located_line_, static_cast<int64_t>(offset - located_line_start_ + 1)};
}

std::string Lexer::Describe(std::size_t offset) const {
  if (offset >= text_.size()) return "end of text";
  std::string_view rest = text_.substr(offset, 16);
  rest = rest.substr(0, rest.find('\n'));
  if (rest.empty()) return "end of line";
  return "'" + std::string(rest) + "'";
}

void Lexer::FailAt(std::size_t offset, const std::string& message) const {
  throw ParseError(offset, message + ", found " + Describe(offset));
}

void Lexer::FailPlain(std::size_t offset, const std::string& message) const { throw ParseError(offset, message); }

}  // namespace tpusim::hlo
