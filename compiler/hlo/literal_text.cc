#include "compiler/hlo/literal_text.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/hlo/value_parser.h"
#include "isa/convert.h"
#include "isa/error.h"

namespace tpusim::hlo {
namespace {

using isa::ElementType;

class LiteralReader {
 public:
  explicit LiteralReader(Lexer& lexer) : lexer_(lexer) {}

  Literal Read(const isa::Shape& shape, int depth) {
    lexer_.SkipTrivia();
    if (depth > kMaxNesting) lexer_.FailPlain(lexer_.pos(), "constant nested more than " + std::to_string(kMaxNesting) + " deep");
    if (shape.is_tuple) return ReadTuple(shape, depth);
    if (shape.rank() > kMaxNesting) {
      lexer_.FailPlain(lexer_.pos(), "constant of rank " + std::to_string(shape.rank()) + " (at most " +
                                         std::to_string(kMaxNesting) + " is supported)");
    }
    // Every element takes at least one character, so a shape with more elements than there is
    // text left cannot be written out: refuse before allocating it.
    int64_t count = 0;
    try {
      count = isa::ElementCount(shape);
    } catch (const Error& e) {
      lexer_.FailPlain(lexer_.pos(), e.what());
    }
    const auto left = static_cast<int64_t>(lexer_.text().size() - lexer_.pos());
    if (count > left) {
      lexer_.FailPlain(lexer_.pos(), "a constant of shape " + isa::ToString(shape) + " has " +
                                         std::to_string(count) + " elements, more than the text that follows");
    }
    Literal literal{isa::Shape::Array(shape.element_type, shape.dims)};
    if (shape.rank() == 0) {
      ReadScalar(literal, 0);
    } else {
      int64_t next = 0;
      ReadArray(literal, 0, next);
    }
    return literal;
  }

 private:
  Literal ReadTuple(const isa::Shape& shape, int depth) {
    lexer_.Expect('(', "to open a tuple constant of shape " + isa::ToString(shape));
    std::vector<Literal> elements;
    const std::size_t n = shape.tuple_shapes.size();
    for (std::size_t i = 0; i < n; ++i) {
      lexer_.SkipTrivia();
      if (lexer_.Peek() == ')') {
        lexer_.FailPlain(lexer_.pos(), "the tuple constant has " + std::to_string(i) + " elements but its shape " +
                                           isa::ToString(shape) + " has " + std::to_string(n));
      }
      SkipElementShape(shape.tuple_shapes[i]);
      elements.push_back(Read(shape.tuple_shapes[i], depth + 1));
      lexer_.SkipTrivia();
      if (i + 1 < n && lexer_.Peek() != ')') lexer_.Expect(',', "between the elements of the tuple constant");
    }
    lexer_.SkipTrivia();
    if (lexer_.Peek() == ',') {
      lexer_.FailPlain(lexer_.pos(), "the tuple constant has more elements than its shape " + isa::ToString(shape));
    }
    lexer_.Expect(')', "to close the tuple constant");
    return Literal::Tuple(std::move(elements));
  }

  // Tuple elements may be written with their shape first (`(s32[2] {1, 2}, f32[] 3)`).
  void SkipElementShape(const isa::Shape& expected) {
    const std::size_t start = lexer_.pos();
    std::size_t p = start;
    const std::string_view text = lexer_.text();
    while (p < text.size() && ((text[p] >= 'a' && text[p] <= 'z') || IsDigit(text[p]))) ++p;
    if (p == start || p >= text.size() || text[p] != '[' ||
        !isa::ParseElementType(text.substr(start, p - start))) {
      return;
    }
    const isa::Shape written = ParseShape(lexer_);
    if (!Compatible(written, expected)) {
      lexer_.FailPlain(start, "tuple constant element written as " + isa::ToString(written) + " where the shape says " +
                                  isa::ToString(expected));
    }
  }

  void ReadArray(Literal& literal, std::size_t level, int64_t& next) {
    const auto& dims = literal.dims();
    const int64_t n = dims[level];
    lexer_.Expect('{', "to open dimension " + std::to_string(level) + " of a constant of shape " +
                           isa::ToString(literal.shape()));
    for (int64_t i = 0; i < n; ++i) {
      lexer_.SkipTrivia();
      if (lexer_.Peek() == '}') {
        lexer_.FailPlain(lexer_.pos(), "dimension " + std::to_string(level) + " of the constant has " +
                                           std::to_string(i) + " elements but the shape " +
                                           isa::ToString(literal.shape()) + " says " + std::to_string(n));
      }
      if (level + 1 == dims.size()) {
        ReadScalar(literal, next++);
      } else {
        ReadArray(literal, level + 1, next);
      }
      lexer_.SkipTrivia();
      if (i + 1 < n && lexer_.Peek() != '}') lexer_.Expect(',', "between constant elements");
    }
    lexer_.SkipTrivia();
    if (lexer_.Peek() == ',' || (n == 0 && lexer_.Peek() != '}')) {
      lexer_.FailPlain(lexer_.pos(), "dimension " + std::to_string(level) + " of the constant has more than " +
                                         std::to_string(n) + " elements (shape " + isa::ToString(literal.shape()) + ")");
    }
    lexer_.Expect('}', "to close dimension " + std::to_string(level) + " of the constant");
  }

  void ReadScalar(Literal& literal, int64_t index) {
    lexer_.SkipTrivia();
    const ElementType type = literal.element_type();
    const std::size_t start = lexer_.pos();
    uint8_t* dst = literal.mutable_bytes().data() + index * literal.element_bytes();
    if (type == ElementType::kPred) {
      const std::string_view word = lexer_.ScanIdentifier();
      if (word == "true" || word == "1") {
        *dst = 1;
      } else if (word == "false" || word == "0") {
        *dst = 0;
      } else {
        lexer_.FailAt(start, "expected true or false in a pred constant");
      }
      return;
    }
    if (isa::IsInteger(type)) {
      ReadInteger(type, dst, literal.element_bytes());
      return;
    }
    const double value = ReadFloat();
    isa::ConvertElements(ElementType::kF64, &value, type, dst, 1);
  }

  void ReadInteger(ElementType type, uint8_t* dst, int bytes) {
    const std::size_t start = lexer_.pos();
    const bool negative = lexer_.Consume('-');
    if (!IsDigit(lexer_.Peek())) lexer_.FailAt(start, "expected an integer in a " + std::string(isa::ElementTypeName(type)) + " constant");
    uint64_t magnitude = 0;
    bool overflow = false;
    while (IsDigit(lexer_.Peek())) {
      const auto digit = static_cast<uint64_t>(lexer_.Peek() - '0');
      if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) overflow = true;
      magnitude = magnitude * 10 + digit;
      lexer_.set_pos(lexer_.pos() + 1);
    }
    if (lexer_.Peek() == '.' || lexer_.Peek() == 'e' || lexer_.Peek() == 'E') {
      lexer_.FailAt(start, "expected an integer in a " + std::string(isa::ElementTypeName(type)) + " constant");
    }
    const int bits = isa::ElementBitWidth(type);
    const bool is_signed = isa::IsSignedInt(type);
    const uint64_t max_positive = is_signed ? (uint64_t{1} << (bits - 1)) - 1
                                            : (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
    const uint64_t max_negative = is_signed ? uint64_t{1} << (bits - 1) : 0;
    if (overflow || (negative ? magnitude > max_negative : magnitude > max_positive)) {
      lexer_.FailPlain(start, "value " + std::string(lexer_.text().substr(start, lexer_.pos() - start)) +
                                  " is out of range for " + std::string(isa::ElementTypeName(type)));
    }
    const uint64_t value = negative ? ~magnitude + 1 : magnitude;  // two's complement
    std::memcpy(dst, &value, bytes);  // little-endian host: the low bytes come first
  }

  double ReadFloat() {
    const std::size_t start = lexer_.pos();
    std::string_view text = lexer_.ScanNumber();
    if (text.empty()) lexer_.FailAt(start, "expected a number in a floating-point constant");
    const bool negative = text[0] == '-';
    if (text[0] == '-' || text[0] == '+') text.remove_prefix(1);
    double value = 0;
    if (text.starts_with("inf")) {
      value = std::numeric_limits<double>::infinity();
    } else if (text.starts_with("nan")) {
      value = std::numeric_limits<double>::quiet_NaN();
    } else {
      const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
      if (result.ptr != text.data() + text.size() ||
          (result.ec != std::errc() && result.ec != std::errc::result_out_of_range)) {
        lexer_.FailAt(start, "malformed number in a constant");
      }
      // Out of range: from_chars leaves `value` alone; XLA's strtod gives +-inf or 0.
      if (result.ec == std::errc::result_out_of_range) {
        const std::size_t e = text.find_first_of("eE");
        const bool tiny = e != std::string_view::npos && e + 1 < text.size() && text[e + 1] == '-';
        value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
      }
    }
    return negative ? -value : value;
  }

  Lexer& lexer_;
};

void AppendScalar(std::string& out, const Literal& literal, int64_t index) {
  const ElementType type = literal.element_type();
  const uint8_t* src = literal.bytes().data() + index * literal.element_bytes();
  if (type == ElementType::kPred) {
    out += *src ? "true" : "false";
    return;
  }
  char buffer[64];
  if (isa::IsInteger(type)) {
    uint64_t bits = 0;
    std::memcpy(&bits, src, literal.element_bytes());
    const int width = isa::ElementBitWidth(type);
    std::to_chars_result result;
    if (isa::IsSignedInt(type)) {
      // Sign-extend from the element's width.
      const int shift = 64 - width;
      const auto value = static_cast<int64_t>(bits << shift) >> shift;
      result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    } else {
      result = std::to_chars(buffer, buffer + sizeof(buffer), bits);
    }
    out.append(buffer, result.ptr);
    return;
  }
  const double value = literal.GetDouble(index);
  if (std::isnan(value)) {
    out += std::signbit(value) ? "-nan" : "nan";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return;
  }
  if (type == ElementType::kF64) {
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    out.append(buffer, result.ptr);
    return;
  }
  // The fewest significant digits that read back (through the same f64 -> type conversion the
  // parser uses) to the same bits.
  const int bytes = literal.element_bytes();
  for (int precision = 1; precision <= 17; ++precision) {
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::general, precision);
    double back = 0;
    std::from_chars(buffer, result.ptr, back);
    uint8_t converted[8] = {};
    isa::ConvertElements(ElementType::kF64, &back, type, converted, 1);
    if (precision == 17 || std::memcmp(converted, src, bytes) == 0) {
      // Whole numbers print whole (10000, not 1e+04) while that stays exact and short.
      if (std::fabs(value) < 1e15 && value == std::trunc(value)) {
        const auto whole = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed, 0);
        out.append(buffer, whole.ptr);
        return;
      }
      out.append(buffer, result.ptr);
      return;
    }
  }
}

void AppendArray(std::string& out, const Literal& literal, std::size_t level, int64_t& next) {
  const auto& dims = literal.dims();
  const bool innermost = level + 1 == dims.size();
  out += innermost || dims[level] == 0 ? "{" : "{ ";
  for (int64_t i = 0; i < dims[level]; ++i) {
    if (i > 0) out += ", ";
    if (innermost) {
      AppendScalar(out, literal, next++);
    } else {
      AppendArray(out, literal, level + 1, next);
    }
  }
  out += innermost || dims[level] == 0 ? "}" : " }";
}

void AppendLiteral(std::string& out, const Literal& literal) {
  if (literal.is_tuple()) {
    out += "(";
    for (std::size_t i = 0; i < literal.elements().size(); ++i) {
      if (i > 0) out += ", ";
      AppendLiteral(out, literal.elements()[i]);
    }
    out += ")";
    return;
  }
  if (literal.dims().empty()) {
    AppendScalar(out, literal, 0);
    return;
  }
  int64_t next = 0;
  AppendArray(out, literal, 0, next);
}

}  // namespace

bool LiteralCanHold(const isa::Shape& shape) {
  if (shape.is_tuple) {
    for (const isa::Shape& element : shape.tuple_shapes) {
      if (!LiteralCanHold(element)) return false;
    }
    return true;
  }
  if (!isa::IsSupported(shape.element_type)) return false;
  for (std::size_t i = 0; i < shape.dims.size(); ++i) {
    if (shape.is_dynamic_dim(i)) return false;
  }
  return true;
}

Literal ParseLiteral(Lexer& lexer, const isa::Shape& shape) {
  if (!LiteralCanHold(shape)) {
    lexer.FailPlain(lexer.pos(), "tpusim cannot hold a constant of shape " + isa::ToString(shape));
  }
  LiteralReader reader(lexer);
  return reader.Read(shape, 0);
}

Literal ParseLiteralText(std::string_view text, const isa::Shape& shape) {
  Lexer lexer(text);
  Literal literal = ParseLiteral(lexer, shape);
  lexer.SkipTrivia();
  if (!lexer.AtEnd()) lexer.FailAt(lexer.pos(), "unexpected text after the constant");
  return literal;
}

std::string LiteralToText(const Literal& literal) {
  std::string out;
  AppendLiteral(out, literal);
  return out;
}

}  // namespace tpusim::hlo
