#include "sim/config/field_sources.h"

#include <string>

namespace tpusim::sim {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// 1-based line:col of a tokenizer position, the column counting bytes.
std::string LineColumn(std::string_view text, int line, int column) {
  const std::size_t line_start = TokenizerPositionToOffset(text, line, 0);
  const std::size_t offset = TokenizerPositionToOffset(text, line, column);
  return std::to_string(line + 1) + ":" + std::to_string(offset - line_start + 1);
}

}  // namespace

std::size_t TokenizerPositionToOffset(std::string_view text, int line, int column) {
  std::size_t offset = 0;
  for (int l = 0; l < line && offset < text.size(); ++l) {
    const std::size_t newline = text.find('\n', offset);
    if (newline == std::string_view::npos) return text.size();
    offset = newline + 1;
  }
  // Protobuf's tokenizer advances a tab to the next multiple of 8 (its kTabWidth).
  int tokenizer_column = 0;
  while (offset < text.size() && text[offset] != '\n' && tokenizer_column < column) {
    tokenizer_column += text[offset] == '\t' ? 8 - tokenizer_column % 8 : 1;
    ++offset;
  }
  return offset;
}

void FieldSources::RecordParse(const Descriptor& descriptor, const TextFormat::ParseInfoTree& tree,
                               std::string_view text) {
  RecordTree(descriptor, tree, text, "");
}

void FieldSources::RecordTree(const Descriptor& descriptor, const TextFormat::ParseInfoTree& tree,
                              std::string_view text, const std::string& prefix) {
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const FieldDescriptor* field = descriptor.field(i);
    // Singular fields are looked up with index -1; of a repeated field the first value speaks
    // for the list.
    const int index = field->is_repeated() ? 0 : -1;
    const TextFormat::ParseLocation location = tree.GetLocation(field, index);
    if (location.line < 0) continue;  // not written in the text
    const std::string path = Join(prefix, field->name());
    where_[path] = file_ + ":" + LineColumn(text, location.line, location.column);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (const TextFormat::ParseInfoTree* nested = tree.GetTreeForNested(field, index)) {
      RecordTree(*field->message_type(), *nested, text, path);
    }
  }
}

void FieldSources::RecordOverride(const std::string& path, const std::string& assignment) {
  const std::string description = "--set " + assignment;
  for (auto it = where_.lower_bound(path + "."); it != where_.end();) {
    if (it->first.compare(0, path.size() + 1, path + ".") != 0) break;
    it = where_.erase(it);
  }
  where_[path] = description;
  for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
    where_.try_emplace(path.substr(0, dot), description);
  }
}

std::string FieldSources::Describe(const std::string& path) const {
  std::string prefix = path;
  while (!prefix.empty()) {
    if (auto it = where_.find(prefix); it != where_.end()) return it->second;
    const std::size_t dot = prefix.rfind('.');
    prefix = dot == std::string::npos ? "" : prefix.substr(0, dot);
  }
  return file_;
}

}  // namespace tpusim::sim
