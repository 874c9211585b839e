#include "compiler/passes/input_output_alias.h"

#include <cctype>
#include <string>
#include <string_view>

#include "compiler/passes/tuple_leaves.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

// A small reader over the attribute's text; errors name the module's file:line:col of the
// attribute and the offending text.
class AliasReader {
 public:
  AliasReader(std::string_view text, std::string where) : text_(text), where_(std::move(where)) {}

  [[noreturn]] void Fail(const std::string& what) const {
    throw Error(where_ + ": input_output_alias: " + what + " (at '" + std::string(text_.substr(pos_, 24)) + "')");
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void Expect(char c) {
    if (!Consume(c)) Fail(std::string("expected '") + c + "'");
  }
  int64_t Integer() {
    SkipSpace();
    const std::size_t begin = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    if (begin == pos_ || pos_ - begin > 9) Fail("expected a number");
    return std::stoll(std::string(text_.substr(begin, pos_ - begin)));
  }
  std::string Word() {
    SkipSpace();
    const std::size_t begin = pos_;
    while (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-')) ++pos_;
    return std::string(text_.substr(begin, pos_ - begin));
  }
  // {i, j, ...}
  std::vector<int64_t> ShapeIndex() {
    Expect('{');
    std::vector<int64_t> index;
    if (Consume('}')) return index;
    do index.push_back(Integer()); while (Consume(','));
    Expect('}');
    return index;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  std::string_view text_;
  std::string where_;
  std::size_t pos_ = 0;
};

// The flattened leaf index of `index` in `shape`, and that leaf's shape; nullptr if `index` does
// not name an array.
const isa::Shape* Leaf(const isa::Shape& shape, const std::vector<int64_t>& index, std::size_t& leaf) {
  const isa::Shape* at = &shape;
  leaf = 0;
  for (int64_t i : index) {
    if (!at->is_tuple || i < 0 || i >= static_cast<int64_t>(at->tuple_shapes.size())) return nullptr;
    leaf += ElementFirstLeaf(*at, i);
    at = &at->tuple_shapes[i];
  }
  return at->is_tuple ? nullptr : at;
}

std::string IndexText(const std::vector<int64_t>& index) {
  std::string text = "{";
  for (std::size_t i = 0; i < index.size(); ++i) text += (i ? "," : "") + std::to_string(index[i]);
  return text + "}";
}

}  // namespace

std::vector<DonatedParameter> ParseInputOutputAlias(const hlo::Module& module) {
  const hlo::Attribute* attribute = module.FindAttribute("input_output_alias");
  if (attribute == nullptr) return {};
  const std::string where = hlo::FormatLocation(module.source_name(), attribute->location);
  const auto* raw = std::get_if<hlo::RawText>(&attribute->value);
  if (raw == nullptr) throw Error(where + ": input_output_alias is not an alias list");
  const hlo::Computation& entry = *module.entry();
  AliasReader reader(raw->text, where);
  std::vector<DonatedParameter> donated;
  reader.Expect('{');
  if (reader.Consume('}')) return donated;
  do {
    const std::vector<int64_t> output_index = reader.ShapeIndex();
    reader.Expect(':');
    reader.Expect('(');
    const int64_t number = reader.Integer();
    reader.Expect(',');
    const std::vector<int64_t> parameter_index = reader.ShapeIndex();
    std::string kind = "may-alias";
    if (reader.Consume(',')) kind = reader.Word();
    if (kind != "may-alias" && kind != "must-alias") reader.Fail("unknown alias kind '" + kind + "'");
    reader.Expect(')');

    DonatedParameter entry_alias;
    entry_alias.must_alias = kind == "must-alias";
    const isa::Shape* output = Leaf(entry.root()->shape(), output_index, entry_alias.output_leaf);
    if (output == nullptr) {
      throw Error(where + ": input_output_alias: output " + IndexText(output_index) + " is not an array of the result " +
                  isa::ToString(entry.root()->shape()));
    }
    if (number < 0 || number >= static_cast<int64_t>(entry.parameters().size())) {
      throw Error(where + ": input_output_alias: the entry has no parameter " + std::to_string(number));
    }
    entry_alias.parameter = entry.parameters()[static_cast<std::size_t>(number)];
    const isa::Shape* parameter = Leaf(entry_alias.parameter->shape(), parameter_index, entry_alias.parameter_leaf);
    if (parameter == nullptr) {
      throw Error(where + ": input_output_alias: " + IndexText(parameter_index) + " is not an array of parameter " +
                  std::to_string(number) + " " + isa::ToString(entry_alias.parameter->shape()));
    }
    if (parameter->element_type != output->element_type || parameter->dims != output->dims) {
      throw Error(where + ": input_output_alias: output " + IndexText(output_index) + " " + isa::ToString(*output) +
                  " cannot alias parameter " + std::to_string(number) + " " + IndexText(parameter_index) + " " +
                  isa::ToString(*parameter) + " (different shapes)");
    }
    donated.push_back(entry_alias);
  } while (reader.Consume(','));
  reader.Expect('}');
  if (!reader.AtEnd()) reader.Fail("unexpected text after the alias list");
  return donated;
}

}  // namespace tpusim::compiler
