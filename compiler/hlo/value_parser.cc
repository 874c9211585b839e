#include "compiler/hlo/value_parser.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "isa/error.h"

namespace tpusim::hlo {
namespace {

std::string Quote(std::string_view attribute) { return "'" + std::string(attribute) + "'"; }

// `3x3`, `1x1x2`: integers joined by 'x' (no spaces).
std::vector<int64_t> ParseXList(Lexer& lexer, std::string_view what) {
  std::vector<int64_t> values;
  do {
    values.push_back(lexer.ScanInt(what));
  } while (lexer.Consume('x'));
  return values;
}

// `1_1x0_2` (window pad, always low_high) or `1_1_0x0_0` (pad's config, interior optional).
std::vector<PaddingDimension> ParsePadList(Lexer& lexer, std::string_view what, bool allow_interior) {
  std::vector<PaddingDimension> dims;
  do {
    PaddingDimension dim;
    dim.low = lexer.ScanInt(what);
    if (!lexer.Consume('_')) lexer.Fail("expected '_' between low and high padding in " + std::string(what));
    dim.high = lexer.ScanInt(what);
    if (allow_interior && lexer.Consume('_')) dim.interior = lexer.ScanInt(what);
    dims.push_back(dim);
  } while (lexer.Consume('x'));
  return dims;
}

// A braced, comma-separated list whose items `item` parses (with trivia around them).
template <typename Fn>
void ParseBracedList(Lexer& lexer, std::string_view context, Fn&& item) {
  lexer.Expect('{', context);
  lexer.SkipTrivia();
  if (lexer.Consume('}')) return;
  while (true) {
    lexer.SkipTrivia();
    item();
    lexer.SkipTrivia();
    if (lexer.Consume(',')) continue;
    lexer.Expect('}', context);
    return;
  }
}

// One of the three parts of dim_labels: `b01f`, `01io`, `b01f`.
struct LabelPart {
  std::size_t rank = 0;
  int64_t first = -1;   // b or i
  int64_t second = -1;  // f or o
  std::vector<int64_t> spatial;
};

LabelPart ParseLabelPart(Lexer& lexer, std::string_view labels, std::size_t offset, char first,
                         char second, std::string_view which) {
  LabelPart part;
  part.rank = labels.size();
  part.spatial.assign(labels.size() >= 2 ? labels.size() - 2 : 0, -1);
  std::string seen;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const char c = labels[i];
    const auto position = static_cast<int64_t>(i);
    if (c != '?' && seen.find(c) != std::string::npos) {
      lexer.FailPlain(offset + i, "dim_labels: label '" + std::string(1, c) + "' appears twice in the " +
                                      std::string(which));
    }
    seen += c;
    if (c == first) {
      part.first = position;
    } else if (c == second) {
      part.second = position;
    } else if (c >= '0' && c <= '9' && static_cast<std::size_t>(c - '0') < part.spatial.size()) {
      part.spatial[c - '0'] = position;
    } else if (c != '?') {
      lexer.FailPlain(offset + i, "dim_labels: '" + std::string(1, c) + "' is not a label of the " +
                                      std::string(which) + " (expected " + first + ", " + second +
                                      ", ? or a spatial dimension 0.." +
                                      std::to_string(static_cast<int64_t>(part.spatial.size()) - 1) + ")");
    }
  }
  return part;
}

}  // namespace

isa::Shape ParseShape(Lexer& lexer, int depth) {
  lexer.SkipTrivia();
  const std::size_t start = lexer.pos();
  if (depth > kMaxNesting) lexer.FailPlain(start, "shape nested more than " + std::to_string(kMaxNesting) + " deep");
  if (lexer.Consume('(')) {
    isa::Shape tuple = isa::Shape::Tuple({});
    lexer.SkipTrivia();
    if (lexer.Consume(')')) return tuple;
    while (true) {
      tuple.tuple_shapes.push_back(ParseShape(lexer, depth + 1));
      lexer.SkipTrivia();
      if (lexer.Consume(',')) continue;
      lexer.Expect(')', "to close the tuple shape");
      return tuple;
    }
  }
  std::size_t pos = start;
  isa::Shape shape;
  try {
    shape = isa::ParseShapeAt(lexer.text(), pos);
  } catch (const ParseError& e) {
    // isa's messages quote the next 12 characters, newlines included; keep the message on one line.
    std::string message = e.what();
    const std::size_t newline = message.find('\n');
    if (newline != std::string::npos) message = message.substr(0, newline) + "'";
    lexer.FailPlain(e.offset(), message);
  } catch (const Error& e) {
    lexer.FailPlain(start, e.what());
  }
  lexer.set_pos(pos);
  for (std::size_t i = 0; i < shape.dims.size(); ++i) {
    if (shape.dims[i] < 0 && !(shape.dims[i] == isa::kUnboundedSize && shape.is_dynamic_dim(i))) {
      lexer.FailPlain(start, "dimension " + std::to_string(i) + " of the shape has negative size " +
                                 std::to_string(shape.dims[i]));
    }
  }
  return shape;
}

bool Compatible(const isa::Shape& a, const isa::Shape& b) {
  if (a.is_tuple != b.is_tuple) return false;
  if (a.is_tuple) {
    if (a.tuple_shapes.size() != b.tuple_shapes.size()) return false;
    for (std::size_t i = 0; i < a.tuple_shapes.size(); ++i) {
      if (!Compatible(a.tuple_shapes[i], b.tuple_shapes[i])) return false;
    }
    return true;
  }
  if (a.element_type != b.element_type || a.dims != b.dims) return false;
  for (std::size_t i = 0; i < a.dims.size(); ++i) {
    if (a.is_dynamic_dim(i) != b.is_dynamic_dim(i)) return false;
  }
  return true;
}

isa::Shape WithoutLayouts(const isa::Shape& shape) {
  isa::Shape out = shape;
  out.layout.reset();
  for (isa::Shape& element : out.tuple_shapes) element = WithoutLayouts(element);
  return out;
}

int64_t ParseIntValue(Lexer& lexer, std::string_view attribute) {
  return lexer.ScanInt("an integer for attribute " + Quote(attribute));
}

bool ParseBoolValue(Lexer& lexer, std::string_view attribute) {
  const std::size_t start = lexer.pos();
  const std::string_view word = lexer.ScanIdentifier();
  if (word == "true") return true;
  if (word == "false") return false;
  lexer.FailAt(start, "expected true or false for attribute " + Quote(attribute));
}

double ParseDoubleValue(Lexer& lexer, std::string_view attribute) {
  const std::size_t start = lexer.pos();
  std::string_view text = lexer.ScanNumber();
  if (text.empty()) lexer.FailAt(start, "expected a number for attribute " + Quote(attribute));
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  double value = 0;
  if (text.starts_with("inf")) {
    value = std::numeric_limits<double>::infinity();
  } else if (text.starts_with("nan")) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else {
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec != std::errc() || result.ptr != text.data() + text.size()) {
      lexer.FailAt(start, "malformed number for attribute " + Quote(attribute));
    }
  }
  return negative ? -value : value;
}

std::string ParseQuotedValue(Lexer& lexer, std::string_view attribute) {
  if (lexer.Peek() != '"') lexer.Fail("expected a quoted string for attribute " + Quote(attribute));
  return lexer.ScanQuoted();
}

std::string_view ParseIdentifierValue(Lexer& lexer, std::string_view attribute) {
  const std::size_t start = lexer.pos();
  const std::string_view word = lexer.ScanIdentifier();
  if (word.empty()) lexer.FailAt(start, "expected a word for attribute " + Quote(attribute));
  return word;
}

std::vector<int64_t> ParseIntList(Lexer& lexer, std::string_view attribute) {
  std::vector<int64_t> values;
  const std::string what = "an integer in attribute " + Quote(attribute);
  ParseBracedList(lexer, "around the integers of attribute " + Quote(attribute),
                  [&] { values.push_back(lexer.ScanInt(what)); });
  return values;
}

IdentifierList ParseIdentifierList(Lexer& lexer, std::string_view attribute) {
  IdentifierList list;
  ParseBracedList(lexer, "around the words of attribute " + Quote(attribute),
                  [&] { list.items.emplace_back(ParseIdentifierValue(lexer, attribute)); });
  return list;
}

Window ParseWindow(Lexer& lexer, std::string_view attribute) {
  const std::size_t open = lexer.pos();
  lexer.Expect('{', "to open attribute " + Quote(attribute));
  struct Part {
    std::size_t offset = 0;
    bool given = false;
    std::vector<int64_t> values;
    std::vector<PaddingDimension> pads;
  };
  Part size, stride, pad, lhs_dilate, rhs_dilate, reversal;
  while (true) {
    lexer.SkipTrivia();
    if (lexer.Consume('}')) break;
    const std::size_t key_offset = lexer.pos();
    const std::string_view key = lexer.ScanIdentifier();
    Part* part = key == "size"           ? &size
                 : key == "stride"       ? &stride
                 : key == "pad"          ? &pad
                 : key == "lhs_dilate"   ? &lhs_dilate
                 : key == "rhs_dilate"   ? &rhs_dilate
                 : key == "rhs_reversal" ? &reversal
                                         : nullptr;
    if (!part) {
      lexer.FailAt(key_offset, "expected a window part (size, stride, pad, lhs_dilate, rhs_dilate, "
                               "rhs_reversal) or '}'");
    }
    if (part->given) lexer.FailPlain(key_offset, "window part '" + std::string(key) + "' given twice");
    if (!lexer.Consume('=')) lexer.Fail("expected '=' after window part '" + std::string(key) + "'");
    part->given = true;
    part->offset = key_offset;
    const std::string what = "a number in window part '" + std::string(key) + "'";
    if (part == &pad) {
      part->pads = ParsePadList(lexer, what, false);
    } else {
      part->values = ParseXList(lexer, what);
    }
  }
  Window window;
  const bool any = stride.given || pad.given || lhs_dilate.given || rhs_dilate.given || reversal.given;
  if (!size.given) {
    if (any) lexer.FailPlain(open, "window has no 'size' part");
    return window;  // window={}: no dimensions
  }
  const std::size_t rank = size.values.size();
  auto check_rank = [&](const Part& part, std::size_t count, std::string_view name) {
    if (part.given && count != rank) {
      lexer.FailPlain(part.offset, "window part '" + std::string(name) + "' has " + std::to_string(count) +
                                       " dimensions but 'size' has " + std::to_string(rank));
    }
  };
  check_rank(stride, stride.values.size(), "stride");
  check_rank(pad, pad.pads.size(), "pad");
  check_rank(lhs_dilate, lhs_dilate.values.size(), "lhs_dilate");
  check_rank(rhs_dilate, rhs_dilate.values.size(), "rhs_dilate");
  check_rank(reversal, reversal.values.size(), "rhs_reversal");
  window.dimensions.resize(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    WindowDimension& dim = window.dimensions[i];
    dim.size = size.values[i];
    if (stride.given) dim.stride = stride.values[i];
    if (pad.given) {
      dim.padding_low = pad.pads[i].low;
      dim.padding_high = pad.pads[i].high;
    }
    if (lhs_dilate.given) dim.lhs_dilation = lhs_dilate.values[i];
    if (rhs_dilate.given) dim.rhs_dilation = rhs_dilate.values[i];
    if (reversal.given) {
      if (reversal.values[i] != 0 && reversal.values[i] != 1) {
        lexer.FailPlain(reversal.offset, "window part 'rhs_reversal' takes 0 or 1 per dimension");
      }
      dim.reversal = reversal.values[i] == 1;
    }
  }
  return window;
}

ConvolutionDimensionNumbers ParseDimLabels(Lexer& lexer, std::string_view attribute) {
  const std::size_t start = lexer.pos();
  while (true) {
    const char c = lexer.Peek();
    if ((c >= 'a' && c <= 'z') || IsDigit(c) || c == '?' || c == '_') {
      lexer.set_pos(lexer.pos() + 1);
    } else if (c == '-' && lexer.Peek(1) == '>') {
      lexer.set_pos(lexer.pos() + 2);
    } else {
      break;
    }
  }
  const std::string_view text = lexer.text().substr(start, lexer.pos() - start);
  const std::size_t underscore = text.find('_');
  const std::size_t arrow = text.find("->");
  if (underscore == std::string_view::npos || arrow == std::string_view::npos || arrow < underscore) {
    lexer.FailAt(start, "expected dim labels such as b01f_01io->b01f for attribute " + Quote(attribute));
  }
  const std::string_view lhs = text.substr(0, underscore);
  const std::string_view rhs = text.substr(underscore + 1, arrow - underscore - 1);
  const std::string_view out = text.substr(arrow + 2);
  if (lhs.size() < 2 || lhs.size() != rhs.size() || lhs.size() != out.size()) {
    lexer.FailPlain(start, "dim_labels '" + std::string(text) +
                               "': input, kernel and output must have the same rank, at least 2");
  }
  if (lhs.size() > 12) lexer.FailPlain(start, "dim_labels '" + std::string(text) + "': more than 10 spatial dimensions");
  const LabelPart in = ParseLabelPart(lexer, lhs, start, 'b', 'f', "input");
  const LabelPart kernel = ParseLabelPart(lexer, rhs, start + underscore + 1, 'i', 'o', "kernel");
  const LabelPart output = ParseLabelPart(lexer, out, start + arrow + 2, 'b', 'f', "output");
  ConvolutionDimensionNumbers dnums;
  dnums.input_batch_dimension = in.first;
  dnums.input_feature_dimension = in.second;
  dnums.input_spatial_dimensions = in.spatial;
  dnums.kernel_input_feature_dimension = kernel.first;
  dnums.kernel_output_feature_dimension = kernel.second;
  dnums.kernel_spatial_dimensions = kernel.spatial;
  dnums.output_batch_dimension = output.first;
  dnums.output_feature_dimension = output.second;
  dnums.output_spatial_dimensions = output.spatial;
  return dnums;
}

std::vector<SliceDimension> ParseSlice(Lexer& lexer, std::string_view attribute) {
  std::vector<SliceDimension> slice;
  const std::string what = "a number in attribute " + Quote(attribute);
  ParseBracedList(lexer, "around the ranges of attribute " + Quote(attribute), [&] {
    SliceDimension dim;
    lexer.Expect('[', "to open a slice range [start:limit:stride]");
    lexer.SkipTrivia();
    dim.start = lexer.ScanInt(what);
    lexer.Expect(':', "after the slice start");
    lexer.SkipTrivia();
    dim.limit = lexer.ScanInt(what);
    lexer.SkipTrivia();
    if (lexer.Consume(':')) {
      lexer.SkipTrivia();
      dim.stride = lexer.ScanInt(what);
    }
    lexer.Expect(']', "to close the slice range");
    slice.push_back(dim);
  });
  return slice;
}

PaddingConfig ParsePadding(Lexer& lexer, std::string_view attribute) {
  PaddingConfig config;
  if (lexer.Consume('{')) {  // `{}`: the padding of a scalar
    lexer.Expect('}', "after '{' in attribute " + Quote(attribute) + " (a scalar's padding is {})");
    return config;
  }
  config.dimensions = ParsePadList(lexer, "a number in attribute " + Quote(attribute), true);
  return config;
}

ReplicaGroups ParseReplicaGroups(Lexer& lexer, std::string_view attribute) {
  ReplicaGroups groups;
  const std::size_t start = lexer.pos();
  const std::string what = "an integer in attribute " + Quote(attribute);
  if (lexer.Peek() != '[') {
    ParseBracedList(lexer, "around the groups of attribute " + Quote(attribute),
                    [&] { groups.groups.push_back(ParseIntList(lexer, attribute)); });
    return groups;
  }
  // [G,S]<=[d0,d1]T(p0,p1)
  auto bracketed = [&](char open, char close) {
    std::vector<int64_t> values;
    lexer.Expect(open, "in the iota form of attribute " + Quote(attribute) + " ([G,S]<=[dims]T(perm))");
    do {
      lexer.SkipTrivia();
      values.push_back(lexer.ScanInt(what));
      lexer.SkipTrivia();
    } while (lexer.Consume(','));
    lexer.Expect(close, "in the iota form of attribute " + Quote(attribute));
    return values;
  };
  IotaReplicaGroupList iota;
  iota.group_dims = bracketed('[', ']');
  lexer.SkipTrivia();
  if (!lexer.ConsumeString("<=")) lexer.Fail("expected '<=' in the iota form of attribute " + Quote(attribute));
  iota.reshape_dims = bracketed('[', ']');
  if (lexer.Consume('T')) iota.transpose_perm = bracketed('(', ')');
  try {
    groups.groups = ExpandIotaReplicaGroups(iota);
  } catch (const Error& e) {
    lexer.FailPlain(start, e.what());
  }
  groups.iota = std::move(iota);
  return groups;
}

std::vector<SourceTargetPair> ParseSourceTargetPairs(Lexer& lexer, std::string_view attribute) {
  std::vector<SourceTargetPair> pairs;
  const std::string what = "an integer in attribute " + Quote(attribute);
  ParseBracedList(lexer, "around the pairs of attribute " + Quote(attribute), [&] {
    SourceTargetPair pair;
    lexer.Expect('{', "to open a {source,target} pair");
    lexer.SkipTrivia();
    pair.source = lexer.ScanInt(what);
    lexer.Expect(',', "between source and target");
    lexer.SkipTrivia();
    pair.target = lexer.ScanInt(what);
    lexer.Expect('}', "to close a {source,target} pair");
    pairs.push_back(pair);
  });
  return pairs;
}

ProgramShape ParseProgramShape(Lexer& lexer, std::string_view attribute) {
  ProgramShape program;
  lexer.Expect('{', "to open attribute " + Quote(attribute));
  lexer.Expect('(', "to open the parameter shapes of attribute " + Quote(attribute));
  lexer.SkipTrivia();
  if (!lexer.Consume(')')) {
    while (true) {
      program.parameters.push_back(ParseShape(lexer));
      lexer.SkipTrivia();
      if (lexer.Consume(',')) continue;
      lexer.Expect(')', "to close the parameter shapes of attribute " + Quote(attribute));
      break;
    }
  }
  lexer.SkipTrivia();
  if (!lexer.ConsumeString("->")) lexer.Fail("expected '->' in attribute " + Quote(attribute));
  program.result = ParseShape(lexer);
  lexer.Expect('}', "to close attribute " + Quote(attribute));
  return program;
}

NameRef ParseNameRef(Lexer& lexer, std::string_view what) {
  const std::size_t start = lexer.pos();
  const std::string_view name = lexer.ScanName();
  if (name.empty()) lexer.FailAt(start, "expected " + std::string(what));
  return NameRef{name, start};
}

std::vector<NameRef> ParseNameList(Lexer& lexer, std::string_view attribute, std::string_view what) {
  std::vector<NameRef> names;
  ParseBracedList(lexer, "around the names of attribute " + Quote(attribute),
                  [&] { names.push_back(ParseNameRef(lexer, what)); });
  return names;
}

}  // namespace tpusim::hlo
