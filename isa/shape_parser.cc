// Recursive-descent parser for XLA's text form of shapes and layouts (REFERENCE.md section 1):
//   shape  := '(' [shape (',' shape)*] ')' | type '[' [dim (',' dim)*] ']' [layout]
//   dim    := INT | '<=' INT | '?'
//   layout := '{' [INT (',' INT)*] [':' suffix*] '}'
//   suffix := D(..) | T(..)(..).. | L(n) | #(type) | *(type) | E(n) | S(n) | SC(d:i,..).. | P(shape) | M(n)
#include <cctype>
#include <string>

#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::isa {
namespace {

class ShapeParser {
 public:
  ShapeParser(std::string_view text, std::size_t pos) : text_(text), pos_(pos) {}

  std::size_t pos() const { return pos_; }

  Shape ParseShape() {
    SkipSpaces();
    // Bounded so that hostile input cannot exhaust the stack.
    if (++depth_ > kMaxDepth) Fail("shape nested more than " + std::to_string(kMaxDepth) + " deep");
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    if (Consume('(')) return ParseTupleRest();
    const std::size_t type_start = pos_;
    const std::string_view name = ParseWord();
    if (name.empty()) Fail("expected a shape (an element type such as f32, or '(')");
    const std::optional<ElementType> type = ParseElementType(name);
    if (!type) FailAt(type_start, "unknown element type '" + std::string(name) + "'");
    Shape shape;
    shape.element_type = *type;
    Expect('[', "after the element type");
    ParseDims(shape);
    if (LayoutFollows()) shape.layout = ParseLayout();
    return shape;
  }

 private:
  Shape ParseTupleRest() {
    Shape tuple = Shape::Tuple({});
    SkipSpaces();
    if (Consume(')')) return tuple;
    do {
      tuple.tuple_shapes.push_back(ParseShape());
      SkipSpaces();
    } while (Consume(','));
    Expect(')', "to close the tuple shape");
    return tuple;
  }

  void ParseDims(Shape& shape) {
    SkipSpaces();
    if (Consume(']')) return;
    std::vector<bool> dynamic;
    do {
      SkipSpaces();
      if (Consume('?')) {
        shape.dims.push_back(kUnboundedSize);
        dynamic.push_back(true);
      } else {
        bool bounded = false;
        if (Consume('<')) {
          if (!Consume('=')) Fail("expected '<=' for a bounded dynamic dimension");
          bounded = true;
        }
        shape.dims.push_back(ParseInt("a dimension size"));
        dynamic.push_back(bounded);
      }
      SkipSpaces();
    } while (Consume(','));
    Expect(']', "to close the dimensions");
    for (bool d : dynamic) {
      if (d) {
        shape.dynamic_dims = std::move(dynamic);
        break;
      }
    }
  }

  // "A '{' after a shape is a layout only if the next token is an integer or ':'" (XLA).
  bool LayoutFollows() {
    std::size_t p = pos_;
    if (p >= text_.size() || text_[p] != '{') return false;
    ++p;
    while (p < text_.size() && text_[p] == ' ') ++p;
    return p < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[p])) ||
                                text_[p] == ':' || text_[p] == '}');
  }

  Layout ParseLayout() {
    Expect('{', "to open the layout");
    Layout layout;
    SkipSpaces();
    if (!Peek(':') && !Peek('}')) {
      do {
        layout.minor_to_major.push_back(ParseInt("a dimension number in minor_to_major"));
        SkipSpaces();
      } while (Consume(','));
    }
    if (Consume(':')) ParseSuffixes(layout);
    Expect('}', "to close the layout");
    return layout;
  }

  void ParseSuffixes(Layout& layout) {
    while (true) {
      SkipSpaces();
      if (Peek('}') || AtEnd()) return;
      const std::size_t start = pos_;
      if (ConsumeWord("SC")) {
        ParseSplitConfigs(layout);
      } else if (Consume('D')) {
        layout.dim_level_types = ParseDimLevelTypes();
      } else if (Consume('T')) {
        ParseTiles(layout);
      } else if (Consume('L')) {
        layout.tail_padding_alignment_in_elements = ParseParenInt("L");
      } else if (Consume('#')) {
        layout.index_primitive_type = ParseParenType("#");
      } else if (Consume('*')) {
        layout.pointer_primitive_type = ParseParenType("*");
      } else if (Consume('E')) {
        layout.element_size_in_bits = ParseParenInt("E");
      } else if (Consume('S')) {
        layout.memory_space = ParseParenInt("S");
      } else if (Consume('P')) {
        Expect('(', "after P");
        layout.physical_shape = ToString(ParseShape());
        Expect(')', "to close P(...)");
      } else if (Consume('M')) {
        layout.dynamic_shape_metadata_prefix_bytes = ParseParenInt("M");
      } else {
        FailAt(start, "unknown layout attribute '" + std::string(1, text_[start]) +
                          "' (expected D, T, L, #, *, E, S, SC, P or M)");
      }
    }
  }

  void ParseTiles(Layout& layout) {
    if (!Peek('(')) Fail("expected '(' after T");
    while (Consume('(')) {
      Tile tile;
      do {
        SkipSpaces();
        if (Consume('*')) {
          tile.dims.push_back(kCombineDimension);
        } else {
          tile.dims.push_back(ParseInt("a tile size or '*'"));
        }
        SkipSpaces();
      } while (Consume(','));
      Expect(')', "to close the tile");
      layout.tiles.push_back(std::move(tile));
    }
  }

  std::vector<std::string> ParseDimLevelTypes() {
    Expect('(', "after D");
    std::vector<std::string> types;
    do {
      SkipSpaces();
      const std::size_t start = pos_;
      while (!AtEnd() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) ||
                          text_[pos_] == '+' || text_[pos_] == '~')) {
        ++pos_;
      }
      if (pos_ == start) Fail("expected a dim level type (D, C, S or H)");
      types.emplace_back(text_.substr(start, pos_ - start));
      SkipSpaces();
    } while (Consume(','));
    Expect(')', "to close D(...)");
    return types;
  }

  void ParseSplitConfigs(Layout& layout) {
    if (!Peek('(')) Fail("expected '(' after SC");
    while (Consume('(')) {
      SplitConfig split;
      split.dimension = ParseInt("a split dimension");
      Expect(':', "after the split dimension");
      do {
        split.split_indices.push_back(ParseInt("a split index"));
        SkipSpaces();
      } while (Consume(','));
      Expect(')', "to close the split config");
      layout.split_configs.push_back(std::move(split));
    }
  }

  int64_t ParseParenInt(std::string_view what) {
    Expect('(', "after " + std::string(what));
    const int64_t value = ParseInt("an integer in " + std::string(what) + "(...)");
    Expect(')', "to close " + std::string(what) + "(...)");
    return value;
  }

  ElementType ParseParenType(std::string_view what) {
    Expect('(', "after " + std::string(what));
    SkipSpaces();
    const std::size_t start = pos_;
    const std::string_view name = ParseWord();
    const std::optional<ElementType> type = ParseElementType(name);
    if (!type) FailAt(start, "expected an element type in " + std::string(what) + "(...)");
    Expect(')', "to close " + std::string(what) + "(...)");
    return *type;
  }

  int64_t ParseInt(const std::string& what) {
    SkipSpaces();
    const std::size_t start = pos_;
    const bool negative = Consume('-');
    if (AtEnd() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      FailAt(start, "expected " + what);
    }
    uint64_t value = 0;
    while (!AtEnd() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const auto digit = static_cast<uint64_t>(text_[pos_] - '0');
      // Checked before multiplying, so that no digit string can wrap around.
      if (value > (static_cast<uint64_t>(INT64_MAX) - digit) / 10) FailAt(start, what + " is too large");
      value = value * 10 + digit;
      ++pos_;
    }
    return negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
  }

  std::string_view ParseWord() {
    const std::size_t start = pos_;
    while (!AtEnd() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  void Expect(char c, const std::string& why) {
    SkipSpaces();
    if (!Consume(c)) Fail(std::string("expected '") + c + "' " + why);
  }

  bool Consume(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }
  bool Peek(char c) const { return !AtEnd() && text_[pos_] == c; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  void SkipSpaces() {
    while (!AtEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  [[noreturn]] void Fail(const std::string& message) { FailAt(pos_, message); }
  [[noreturn]] void FailAt(std::size_t at, const std::string& message) {
    const std::string found =
        at >= text_.size() ? "end of text" : "'" + std::string(text_.substr(at, 12)) + "'";
    throw ParseError(at, message + ", found " + found);
  }

  static constexpr int kMaxDepth = 200;
  std::string_view text_;
  std::size_t pos_;
  int depth_ = 0;
};

}  // namespace

Shape ParseShapeAt(std::string_view text, std::size_t& pos) {
  ShapeParser parser(text, pos);
  Shape shape = parser.ParseShape();
  pos = parser.pos();
  return shape;
}

Shape ParseShape(std::string_view text) {
  std::size_t pos = 0;
  Shape shape = ParseShapeAt(text, pos);
  while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
  if (pos != text.size()) {
    throw ParseError(pos, "unexpected text after the shape: '" + std::string(text.substr(pos, 12)) + "'");
  }
  return shape;
}

}  // namespace tpusim::isa
