#include "isa/asm_lexer.h"

#include "isa/error.h"

namespace tpusim::isa {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<int64_t> AsmNumber::ToInt64() const {
  constexpr uint64_t kMaxPositive = static_cast<uint64_t>(INT64_MAX);
  if (!negative) return magnitude <= kMaxPositive ? std::optional<int64_t>(static_cast<int64_t>(magnitude)) : std::nullopt;
  if (magnitude > kMaxPositive + 1) return std::nullopt;
  return static_cast<int64_t>(0 - magnitude);  // two's complement: exact down to INT64_MIN
}

std::size_t LineCursor::TrimmedEnd() const {
  std::size_t end = text_.size();
  while (end > 0 && IsSpace(text_[end - 1])) --end;
  return end;
}

void LineCursor::SkipSpaces() {
  while (!AtEnd() && IsSpace(text_[pos_])) ++pos_;
}

bool LineCursor::Consume(char c) {
  if (!Peek(c)) return false;
  ++pos_;
  return true;
}

bool LineCursor::Consume(std::string_view s) {
  if (text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

std::string_view LineCursor::ReadName() {
  if (AtEnd() || !IsNameStart(text_[pos_])) return {};
  const std::size_t begin = pos_;
  while (!AtEnd() && IsNameChar(text_[pos_])) ++pos_;
  return text_.substr(begin, pos_ - begin);
}

bool LineCursor::NameFollowedBy(char c) const {
  std::size_t p = pos_;
  if (p >= text_.size() || !IsNameStart(text_[p])) return false;
  while (p < text_.size() && IsNameChar(text_[p])) ++p;
  while (p < text_.size() && IsSpace(text_[p])) ++p;
  return p < text_.size() && text_[p] == c;
}

std::string LineCursor::Found(std::size_t at) const {
  if (at >= text_.size()) return "end of line";
  std::size_t end = at;
  while (end < text_.size() && end - at < 24 && !IsSpace(text_[end]) && text_[end] != ',') ++end;
  if (end == at) ++end;
  return "'" + std::string(text_.substr(at, end - at)) + "'";
}

void LineCursor::Fail(std::size_t at, const std::string& message) const { throw ParseError(at, message); }

AsmNumber LineCursor::ReadNumber() {
  const std::size_t begin = pos_;
  AsmNumber number;
  number.negative = Consume('-');
  const bool hex = Consume("0x") || Consume("0X");
  const std::size_t digits = pos_;
  const uint64_t base = hex ? 16 : 10;
  while (!AtEnd()) {
    const int digit = hex ? HexValue(text_[pos_]) : (IsDigit(text_[pos_]) ? text_[pos_] - '0' : -1);
    if (digit < 0) break;
    if (number.magnitude > (UINT64_MAX - static_cast<uint64_t>(digit)) / base) {
      Fail(begin, "number " + Found(begin) + " does not fit in 64 bits");
    }
    number.magnitude = number.magnitude * base + static_cast<uint64_t>(digit);
    ++pos_;
  }
  if (pos_ == digits) Fail(begin, std::string("expected ") + (hex ? "hex digits" : "a number") + ", found " + Found(begin));
  if (!AtEnd() && IsNameChar(text_[pos_])) Fail(begin, "malformed number " + Found(begin));
  return number;
}

AsmItem LineCursor::ReadItem() {
  SkipSpaces();
  AsmItem item;
  item.begin = pos_;
  if (!AtEnd() && IsNameStart(text_[pos_])) {
    const std::string_view word = ReadName();
    item.reg = ParseRegisterName(word);
    if (!item.reg) Fail(item.begin, "expected a register or a number, found '" + std::string(word) + "'");
    SkipSpaces();
    const bool plus = Peek('+');
    if (!plus && !Peek('-')) return item;
    ++pos_;
    SkipSpaces();
    if (AtEnd() || !IsDigit(text_[pos_])) Fail(pos_, std::string("expected a number after '") + (plus ? '+' : '-') + "', found " + Found(pos_));
    item.number = ReadNumber();
    item.number.negative = !plus;
    return item;
  }
  if (AtEnd() || !(IsDigit(text_[pos_]) || text_[pos_] == '-')) {
    Fail(pos_, "expected a register or a number, found " + Found(pos_));
  }
  item.number = ReadNumber();
  return item;
}

AsmValue LineCursor::ReadValue() {
  SkipSpaces();
  AsmValue value;
  value.begin = pos_;
  if (Consume('[')) {
    value.kind = AsmValue::Kind::kList;
    SkipSpaces();
    if (!Consume(']')) {
      while (true) {
        value.items.push_back(ReadItem());
        SkipSpaces();
        if (Consume(']')) break;
        if (!Consume(',')) Fail(pos_, "expected ',' or ']' in the list, found " + Found(pos_));
      }
    }
  } else if (!AtEnd() && (IsDigit(text_[pos_]) || text_[pos_] == '-')) {
    value.kind = AsmValue::Kind::kNumber;
    value.number = ReadNumber();
  } else if (!AtEnd() && IsNameStart(text_[pos_])) {
    value.name = ReadName();
    if (const std::optional<RegisterName> reg = ParseRegisterName(value.name)) {
      value.kind = AsmValue::Kind::kRegister;
      value.reg = *reg;
    } else if (Consume('[')) {
      value.kind = AsmValue::Kind::kBracket;
      if (value.name != "sem" && !ParseMemorySpaceName(value.name)) {
        Fail(value.begin, "unknown memory space '" + std::string(value.name) + "' (expected hbm, vmem, smem, cmem, host, ici or sem)");
      }
      value.items.push_back(ReadItem());
      SkipSpaces();
      if (!Consume(']')) Fail(pos_, "expected ']' to close " + std::string(value.name) + "[...], found " + Found(pos_));
    } else if (Consume('(')) {
      value.kind = AsmValue::Kind::kCall;
      SkipSpaces();
      if (AtEnd() || !(IsDigit(text_[pos_]) || text_[pos_] == '-')) Fail(pos_, "expected a number, found " + Found(pos_));
      value.number = ReadNumber();
      SkipSpaces();
      if (!Consume(')')) Fail(pos_, "expected ')', found " + Found(pos_));
    } else {
      value.kind = AsmValue::Kind::kName;
    }
  } else {
    Fail(pos_, "expected an operand, found " + Found(pos_));
  }
  value.end = pos_;
  return value;
}

std::string LineCursor::ReadHexBytes() {
  const std::size_t begin = pos_;
  std::string bytes;
  while (!AtEnd() && HexValue(text_[pos_]) >= 0) {
    if (pos_ + 1 >= text_.size() || HexValue(text_[pos_ + 1]) < 0) {
      Fail(begin, "an odd number of hex digits: each byte is two");
    }
    bytes.push_back(static_cast<char>(HexValue(text_[pos_]) * 16 + HexValue(text_[pos_ + 1])));
    pos_ += 2;
  }
  if (bytes.empty()) Fail(begin, "expected hex bytes (e.g. 0000803f), found " + Found(begin));
  if (!AtEnd() && IsNameChar(text_[pos_])) Fail(pos_, "expected hex digits, found " + Found(pos_));
  return bytes;
}

}  // namespace tpusim::isa
