#include "isa/npy.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string_view>

#include "isa/error.h"

namespace tpusim::isa {
namespace {

// NpyArray::data is little-endian and NumPy's '=' means native; treating '=' as '<' and copying
// bytes straight through is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "npy.cc assumes a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kArrayAlign = 64;           // NumPy's ARRAY_ALIGN
constexpr std::size_t kGrowthAxisMaxDigits = 21;  // NumPy's GROWTH_AXIS_MAX_DIGITS
constexpr int kMaxNesting = 32;                   // keeps hostile headers off the stack's end

[[noreturn]] void Fail(const std::string& where, const std::string& message) {
  throw Error(where + ": " + message);
}

// ---------------------------------------------------------------------------------------------
// Descrs: the dtype strings in the header.

// What tpusim writes for each supported type: what NumPy writes for the same dtype (ml_dtypes'
// bfloat16 and float8 types have no NumPy letter, so NumPy writes them as raw void '<V2'/'|V1').
struct WriteDescr {
  ElementType type;
  std::string_view descr;
};
constexpr std::array kWriteDescrs = {
    WriteDescr{ElementType::kPred, "|b1"},    WriteDescr{ElementType::kS8, "|i1"},
    WriteDescr{ElementType::kS16, "<i2"},     WriteDescr{ElementType::kS32, "<i4"},
    WriteDescr{ElementType::kS64, "<i8"},     WriteDescr{ElementType::kU8, "|u1"},
    WriteDescr{ElementType::kU16, "<u2"},     WriteDescr{ElementType::kU32, "<u4"},
    WriteDescr{ElementType::kU64, "<u8"},     WriteDescr{ElementType::kF16, "<f2"},
    WriteDescr{ElementType::kBF16, "<V2"},    WriteDescr{ElementType::kF32, "<f4"},
    WriteDescr{ElementType::kF64, "<f8"},     WriteDescr{ElementType::kF8E4M3FN, "|V1"},
    WriteDescr{ElementType::kF8E5M2, "|V1"},
};

// The type a (kind, size) pair means on its own, without the caller's expected type.
struct NaturalType {
  char kind;
  int size;
  ElementType type;
};
constexpr std::array kNaturalTypes = {
    NaturalType{'b', 1, ElementType::kPred}, NaturalType{'i', 1, ElementType::kS8},
    NaturalType{'i', 2, ElementType::kS16},  NaturalType{'i', 4, ElementType::kS32},
    NaturalType{'i', 8, ElementType::kS64},  NaturalType{'u', 1, ElementType::kU8},
    NaturalType{'u', 2, ElementType::kU16},  NaturalType{'u', 4, ElementType::kU32},
    NaturalType{'u', 8, ElementType::kU64},  NaturalType{'f', 2, ElementType::kF16},
    NaturalType{'f', 4, ElementType::kF32},  NaturalType{'f', 8, ElementType::kF64},
    NaturalType{'V', 2, ElementType::kBF16},
};

constexpr std::string_view kSupportedDescrs =
    "|b1, |i1, <i2, <i4, <i8, |u1, <u2, <u4, <u8, <f2, <f4, <f8, <V2 (bf16), "
    "|V1 (f8e4m3fn or f8e5m2, given by the caller); '>' and '=' byte orders too";

// A descr split into its parts: "<f4" is order '<', kind 'f', size 4.
struct Descr {
  std::string text;  // as the file spells it, for messages
  char order = '=';  // '<', '>', '|' or '='
  char kind = 0;     // 'b', 'i', 'u', 'f', 'V', 'O', ...
  int size = 0;      // bytes per element; 0 when absent ("|O")
};

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::optional<Descr> SplitDescr(const std::string& text) {
  Descr descr{text};
  std::string_view rest = text;
  if (!rest.empty() && std::string_view("<>|=").find(rest.front()) != std::string_view::npos) {
    descr.order = rest.front();
    rest.remove_prefix(1);
  }
  if (rest.empty() || !IsAsciiLetter(rest.front())) return std::nullopt;
  descr.kind = rest.front();
  rest.remove_prefix(1);
  if (rest.size() > 4) return std::nullopt;  // no supported size has more than one digit
  for (char c : rest) {
    if (!IsDigit(c)) return std::nullopt;
    descr.size = descr.size * 10 + (c - '0');
  }
  return descr;
}

std::optional<ElementType> NaturalTypeOf(const Descr& descr) {
  for (const NaturalType& natural : kNaturalTypes) {
    if (natural.kind == descr.kind && natural.size == descr.size) return natural.type;
  }
  return std::nullopt;
}

bool IsStoredF8(ElementType type) {
  return type == ElementType::kF8E4M3FN || type == ElementType::kF8E5M2;
}

// Raw bit patterns: NumPy cannot name bf16 or f8, so such arrays come as void or unsigned ints of
// the same width, and only the caller knows what the bits are.
std::optional<ElementType> RawBitsType(const Descr& descr, std::optional<ElementType> expected) {
  if (!expected || (descr.kind != 'u' && descr.kind != 'V')) return std::nullopt;
  if (*expected == ElementType::kBF16 && descr.size == 2) return expected;
  if (IsStoredF8(*expected) && descr.size == 1) return expected;
  return std::nullopt;
}

std::string Quoted(std::string_view text) {
  std::string quoted = "'";  // appended piecewise: `"'" + std::string` trips GCC 12's -Wrestrict
  quoted += text;
  quoted += '\'';
  return quoted;
}

[[noreturn]] void FailUnsupportedDescr(const std::string& text, const std::string& where) {
  Fail(where, "unsupported dtype descr " + Quoted(text) + " (supported: " +
                  std::string(kSupportedDescrs) + ")");
}

ElementType ResolveType(const Descr& descr, std::optional<ElementType> expected,
                        const std::string& where) {
  if (std::optional<ElementType> raw = RawBitsType(descr, expected)) return *raw;
  if (descr.kind == 'O') {
    Fail(where, "object arrays (descr " + Quoted(descr.text) +
                    ") are not supported; save an array of a numeric dtype");
  }
  std::optional<ElementType> natural = NaturalTypeOf(descr);
  if (!natural && descr.kind == 'V' && descr.size == 1) {
    if (!expected) {
      Fail(where, "descr " + Quoted(descr.text) +
                      " holds raw 8-bit values of an unnamed type; the element type "
                      "(f8e4m3fn or f8e5m2) must be given to read it");
    }
    Fail(where, "element type mismatch: the file holds raw 8-bit values (descr " +
                    Quoted(descr.text) + ") but " + std::string(ElementTypeName(*expected)) +
                    " is expected");
  }
  if (!natural) FailUnsupportedDescr(descr.text, where);
  if (expected && *expected != *natural) {
    Fail(where, "element type mismatch: the file holds " +
                    std::string(ElementTypeName(*natural)) + " (descr " + Quoted(descr.text) +
                    ") but " + std::string(ElementTypeName(*expected)) + " is expected");
  }
  return *natural;
}

// ---------------------------------------------------------------------------------------------
// The header: a Python dict literal. Parsed as Python would parse it (any key order, either
// quote, trailing commas, free spacing) because writers other than NumPy format it differently.

struct PyValue {
  enum class Kind { kNone, kBool, kInt, kString, kTuple, kList, kDict };
  explicit PyValue(Kind k = Kind::kNone) : kind(k) {}
  Kind kind;
  bool boolean = false;
  int64_t integer = 0;
  std::string text;             // kString
  std::vector<PyValue> items;   // kTuple, kList; kDict: key, value, key, value, ...
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  PyValue ParseAll() {
    PyValue value = ParseValue(0);
    SkipSpace();
    if (pos_ != text_.size()) Fail("unexpected " + Describe(text_[pos_]) + " after the dict");
    return value;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    isa::Fail(where_, "malformed header at byte " + std::to_string(pos_) + ": " + what);
  }

  static std::string Describe(char c) {
    if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
    static constexpr char kHex[] = "0123456789abcdef";
    unsigned byte = static_cast<unsigned char>(c);
    return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 15];
  }

  bool AtEnd() const { return pos_ >= text_.size(); }

  void SkipSpace() {
    while (!AtEnd() && std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    if (AtEnd() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  // Consumes the ',' that must follow an item unless `close` ends the sequence.
  void ExpectComma(char close, std::string_view context) {
    if (Consume(',')) return;
    std::string found = AtEnd() ? "the end of the header" : Describe(text_[pos_]);
    Fail("expected ',' or '" + std::string(1, close) + "' " + std::string(context) + ", found " +
         found);
  }

  void ExpectColon() {
    if (Consume(':')) return;
    std::string found = AtEnd() ? "the end of the header" : Describe(text_[pos_]);
    Fail("expected ':' after a dict key, found " + found);
  }

  PyValue ParseValue(int depth) {
    if (depth > kMaxNesting) {
      Fail("values nested more than " + std::to_string(kMaxNesting) + " deep");
    }
    SkipSpace();
    if (AtEnd()) Fail("expected a value, found the end of the header");
    char c = text_[pos_];
    if (c == '\'' || c == '"') return ParseString();
    if (c == '(') return ParseParenthesized(depth);
    if (c == '[') return ParseList(depth);
    if (c == '{') return ParseDict(depth);
    if (IsDigit(c) || c == '-' || c == '+') return ParseInt();
    if (IsAsciiLetter(c)) return ParseName();
    Fail("expected a value, found " + Describe(c));
  }

  PyValue ParseString() {
    char quote = text_[pos_++];
    PyValue value{PyValue::Kind::kString};
    while (!AtEnd() && text_[pos_] != quote) {
      // A backslash escapes the next character; descrs never need more of Python's escapes.
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      value.text += text_[pos_++];
    }
    if (AtEnd()) Fail("unterminated string");
    ++pos_;
    return value;
  }

  PyValue ParseInt() {
    bool negative = text_[pos_] == '-';
    if (text_[pos_] == '-' || text_[pos_] == '+') ++pos_;
    if (AtEnd() || !IsDigit(text_[pos_])) Fail("expected digits after the sign");
    PyValue value{PyValue::Kind::kInt};
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    for (; !AtEnd() && IsDigit(text_[pos_]); ++pos_) {
      int digit = text_[pos_] - '0';
      if (value.integer > (kMax - digit) / 10) Fail("integer does not fit in 64 bits");
      value.integer = value.integer * 10 + digit;
    }
    if (negative) value.integer = -value.integer;
    return value;
  }

  PyValue ParseName() {
    std::size_t begin = pos_;
    while (!AtEnd() && (IsAsciiLetter(text_[pos_]) || IsDigit(text_[pos_]) || text_[pos_] == '_')) {
      ++pos_;
    }
    std::string_view name = text_.substr(begin, pos_ - begin);
    if (name == "True" || name == "False") {
      PyValue value{PyValue::Kind::kBool};
      value.boolean = name == "True";
      return value;
    }
    if (name == "None") return PyValue{};
    pos_ = begin;
    Fail("unknown name '" + std::string(name) + "' (expected True, False or None)");
  }

  // Items up to `close`, comma-separated, a trailing comma allowed. `saw_comma` tells "(5)" (just
  // 5, as in Python) from "(5,)" (a tuple).
  std::vector<PyValue> ParseItems(char close, int depth, bool& saw_comma) {
    std::vector<PyValue> items;
    saw_comma = false;
    while (true) {
      SkipSpace();
      if (Consume(close)) return items;
      items.push_back(ParseValue(depth + 1));
      SkipSpace();
      if (Consume(close)) return items;
      ExpectComma(close, "between items");
      saw_comma = true;
    }
  }

  PyValue ParseParenthesized(int depth) {
    ++pos_;
    bool saw_comma = false;
    PyValue value{PyValue::Kind::kTuple};
    value.items = ParseItems(')', depth, saw_comma);
    if (value.items.size() == 1 && !saw_comma) return std::move(value.items.front());
    return value;
  }

  PyValue ParseList(int depth) {
    ++pos_;
    bool saw_comma = false;
    PyValue value{PyValue::Kind::kList};
    value.items = ParseItems(']', depth, saw_comma);
    return value;
  }

  PyValue ParseDict(int depth) {
    ++pos_;
    PyValue dict{PyValue::Kind::kDict};
    while (true) {
      SkipSpace();
      if (Consume('}')) return dict;
      dict.items.push_back(ParseValue(depth + 1));
      SkipSpace();
      ExpectColon();
      dict.items.push_back(ParseValue(depth + 1));
      SkipSpace();
      if (Consume('}')) return dict;
      ExpectComma('}', "between dict entries");
    }
  }

  std::string_view text_;
  const std::string& where_;
  std::size_t pos_ = 0;
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> dims;
};

// The shape as Python prints a tuple: "()", "(5,)", "(2, 3)".
std::string ShapeText(std::span<const int64_t> dims) {
  std::string text = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(dims[i]);
  }
  if (dims.size() == 1) text += ",";
  return text + ")";
}

std::string DescrFrom(const PyValue& value, const std::string& where) {
  if (value.kind == PyValue::Kind::kList) {
    Fail(where, "structured dtypes (a list descr) are not supported; save one array per field");
  }
  if (value.kind != PyValue::Kind::kString) Fail(where, "header 'descr' is not a string");
  return value.text;
}

bool FortranOrderFrom(const PyValue& value, const std::string& where) {
  if (value.kind != PyValue::Kind::kBool) {
    Fail(where, "header 'fortran_order' is not True or False");
  }
  return value.boolean;
}

std::vector<int64_t> DimsFrom(const PyValue& value, const std::string& where) {
  if (value.kind != PyValue::Kind::kTuple) Fail(where, "header 'shape' is not a tuple");
  std::vector<int64_t> dims;
  for (const PyValue& item : value.items) {
    if (item.kind != PyValue::Kind::kInt) Fail(where, "header 'shape' holds a non-integer");
    if (item.integer < 0) {
      Fail(where, "negative dimension " + std::to_string(item.integer) + " in shape");
    }
    dims.push_back(item.integer);
  }
  return dims;
}

Header InterpretHeader(const PyValue& dict, const std::string& where) {
  if (dict.kind != PyValue::Kind::kDict) Fail(where, "header is not a dict");
  Header header;
  bool seen[3] = {false, false, false};  // descr, fortran_order, shape
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const PyValue& key = dict.items[i];
    const PyValue& value = dict.items[i + 1];
    static constexpr std::string_view kKeys[3] = {"descr", "fortran_order", "shape"};
    auto found = std::find(std::begin(kKeys), std::end(kKeys), key.text);
    if (key.kind != PyValue::Kind::kString || found == std::end(kKeys)) {
      std::string name = key.kind == PyValue::Kind::kString ? Quoted(key.text) + " " : "";
      Fail(where, "unexpected key " + name +
                      "in header (expected exactly 'descr', 'fortran_order' and 'shape')");
    }
    std::size_t index = found - std::begin(kKeys);
    if (seen[index]) Fail(where, "duplicate key " + Quoted(key.text) + " in header");
    seen[index] = true;
    if (index == 0) header.descr = DescrFrom(value, where);
    if (index == 1) header.fortran_order = FortranOrderFrom(value, where);
    if (index == 2) header.dims = DimsFrom(value, where);
  }
  if (!seen[0]) Fail(where, "header has no 'descr' key");
  if (!seen[1]) Fail(where, "header has no 'fortran_order' key");
  if (!seen[2]) Fail(where, "header has no 'shape' key");
  // With at most one dim, Fortran and C order are the same bytes; NumPy writes False then anyway.
  if (header.fortran_order && header.dims.size() > 1) {
    Fail(where, "Fortran order is not supported; save with np.ascontiguousarray");
  }
  return header;
}

// ---------------------------------------------------------------------------------------------
// The preamble: magic, version, header length.

struct Preamble {
  std::size_t header_begin = 0;
  std::size_t header_size = 0;
};

uint32_t ReadLittleEndian(std::span<const uint8_t> bytes) {
  uint32_t value = 0;
  for (std::size_t i = bytes.size(); i-- > 0;) value = (value << 8) | bytes[i];
  return value;
}

Preamble ReadPreamble(std::span<const uint8_t> bytes, const std::string& where) {
  std::size_t magic_bytes = std::min(bytes.size(), kMagic.size());
  if (!std::equal(bytes.begin(), bytes.begin() + magic_bytes, kMagic.begin(),
                  [](uint8_t byte, char c) { return byte == static_cast<uint8_t>(c); })) {
    Fail(where, "not a .npy file (bad magic: it must start with \\x93NUMPY)");
  }
  if (bytes.size() < kMagic.size() + 2) {
    Fail(where, "truncated header: the file is only " + std::to_string(bytes.size()) + " bytes");
  }
  int major = bytes[kMagic.size()];
  int minor = bytes[kMagic.size() + 1];
  if (major < 1 || major > 3 || minor != 0) {
    Fail(where, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor) +
                    " (supported: 1.0, 2.0, 3.0)");
  }
  // 1.0 has a 16-bit header length; 2.0 and 3.0 (3.0 only allows utf-8 in the header) have 32.
  std::size_t length_bytes = major == 1 ? 2 : 4;
  Preamble preamble{kMagic.size() + 2 + length_bytes};
  if (bytes.size() < preamble.header_begin) {
    Fail(where, "truncated header: the file ends inside the header length");
  }
  preamble.header_size = ReadLittleEndian(bytes.subspan(kMagic.size() + 2, length_bytes));
  if (preamble.header_size > bytes.size() - preamble.header_begin) {
    Fail(where, "truncated header: it should be " + std::to_string(preamble.header_size) +
                    " bytes but the file has " +
                    std::to_string(bytes.size() - preamble.header_begin) + " after the preamble");
  }
  return preamble;
}

// ---------------------------------------------------------------------------------------------
// Sizes and data.

// Bytes that `dims` of `width`-byte elements take. Products are checked so that no shape, however
// hostile, wraps around; zero dims are skipped in the check so that (0, 2^62, 2^62) is refused
// consistently whatever the order of its dims (its strides would not fit either).
int64_t ByteSize(std::span<const int64_t> dims, int width, const std::string& where) {
  int64_t nonzero_product = 1;
  bool empty = false;
  for (int64_t dim : dims) {
    if (dim < 0) Fail(where, "negative dimension " + std::to_string(dim) + " in shape");
    if (dim == 0) empty = true;
    if (dim != 0 && __builtin_mul_overflow(nonzero_product, dim, &nonzero_product)) {
      Fail(where, "shape " + ShapeText(dims) + " has too many elements (overflows int64)");
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(nonzero_product, int64_t{width}, &bytes)) {
    Fail(where, "shape " + ShapeText(dims) + " has too many bytes (overflows int64)");
  }
  return empty ? 0 : bytes;
}

std::vector<uint8_t> ReadData(std::span<const uint8_t> data, const Descr& descr, ElementType type,
                              std::span<const int64_t> dims, const std::string& where) {
  int width = ElementByteWidth(type);
  uint64_t need = ByteSize(dims, width, where);
  std::string sizes = "shape " + ShapeText(dims) + " of " + std::string(ElementTypeName(type)) +
                      " needs " + std::to_string(need) + " bytes but the file has " +
                      std::to_string(data.size()) + " after the header";
  if (data.size() < need) Fail(where, "truncated data: " + sizes);
  if (data.size() > need) Fail(where, "trailing bytes after the data: " + sizes);
  std::vector<uint8_t> bytes(data.begin(), data.end());
  if (descr.order == '>' && width > 1) {
    for (std::size_t i = 0; i < bytes.size(); i += width) {
      std::reverse(bytes.begin() + i, bytes.begin() + i + width);
    }
  }
  return bytes;
}

void RequireSupportedAt(std::optional<ElementType> type, const std::string& where) {
  if (!type) return;
  try {
    RequireSupported(*type, "reading .npy");
  } catch (const Error& error) {
    Fail(where, error.what());
  }
}

// ---------------------------------------------------------------------------------------------
// Writing.

std::string_view DescrFor(ElementType type) {
  RequireSupported(type, "writing .npy");
  for (const WriteDescr& entry : kWriteDescrs) {
    if (entry.type == type) return entry.descr;
  }
  throw Error("no .npy descr for element type " + std::string(ElementTypeName(type)));
}

// The dict exactly as NumPy formats it: keys sorted, repr() values, ", " after each entry.
std::string HeaderDict(std::string_view descr, std::span<const int64_t> dims) {
  std::string dict = "{'descr': '" + std::string(descr) +
                     "', 'fortran_order': False, 'shape': " + ShapeText(dims) + ", }";
  // NumPy leaves room for the first dim to grow to 21 digits, so that appending to the file can
  // rewrite the header in place; copied so that the bytes match NumPy's.
  if (!dims.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(dims[0]).size(), ' ');
  return dict;
}

// Magic, version, length, the dict, spaces, '\n': spaces so that the data starts at a multiple of
// 64 bytes (NumPy pads a full 64 when it would already be aligned, and so do we).
std::vector<uint8_t> WrapHeader(const std::string& dict) {
  auto padded_size = [&](std::size_t preamble) {
    std::size_t size = dict.size() + 1;
    return size + kArrayAlign - (preamble + size) % kArrayAlign;
  };
  // Version 1.0 when the padded header fits its 16-bit length, as NumPy decides.
  int major = padded_size(kMagic.size() + 2 + 2) <= 0xFFFF ? 1 : 2;
  std::size_t length_bytes = major == 1 ? 2 : 4;
  std::size_t header_size = padded_size(kMagic.size() + 2 + length_bytes);
  std::vector<uint8_t> out(kMagic.begin(), kMagic.end());
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (std::size_t i = 0; i < length_bytes; ++i) out.push_back((header_size >> (8 * i)) & 0xFF);
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), header_size - dict.size() - 1, ' ');
  out.push_back('\n');
  return out;
}

std::vector<uint8_t> Serialize(ElementType type, std::span<const int64_t> dims,
                               std::span<const uint8_t> data, const std::string& where) {
  std::string_view descr = DescrFor(type);
  int64_t need = ByteSize(dims, ElementByteWidth(type), where);
  if (data.size() != static_cast<uint64_t>(need)) {
    Fail(where, "shape " + ShapeText(dims) + " of " + std::string(ElementTypeName(type)) +
                    " needs " + std::to_string(need) + " bytes of data but " +
                    std::to_string(data.size()) + " were given");
  }
  std::vector<uint8_t> out = WrapHeader(HeaderDict(descr, dims));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace

NpyArray ParseNpy(std::span<const uint8_t> bytes, std::optional<ElementType> expected,
                  const std::string& where) {
  RequireSupportedAt(expected, where);
  Preamble preamble = ReadPreamble(bytes, where);
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + preamble.header_begin,
                        preamble.header_size);
  Header header = InterpretHeader(HeaderParser(text, where).ParseAll(), where);
  std::optional<Descr> descr = SplitDescr(header.descr);
  if (!descr) FailUnsupportedDescr(header.descr, where);
  NpyArray array{ResolveType(*descr, expected, where), std::move(header.dims), {}};
  array.data = ReadData(bytes.subspan(preamble.header_begin + preamble.header_size), *descr,
                        array.type, array.dims, where);
  return array;
}

NpyArray ReadNpy(const std::string& path, std::optional<ElementType> expected) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(path, std::string("cannot open for reading: ") + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) Fail(path, "read error");
  return ParseNpy(bytes, expected, path);
}

std::vector<uint8_t> SerializeNpy(ElementType type, std::span<const int64_t> dims,
                                  std::span<const uint8_t> data) {
  return Serialize(type, dims, data, "writing .npy");
}

void WriteNpy(const std::string& path, ElementType type, std::span<const int64_t> dims,
              std::span<const uint8_t> data) {
  std::vector<uint8_t> bytes = Serialize(type, dims, data, path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) Fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) Fail(path, "write failed");
}

}  // namespace tpusim::isa
