#include "sim/config/load.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "isa/error.h"
#include "sim/config/field_sources.h"
#include "sim/config/override.h"
#include "sim/config/validate.h"

namespace tpusim::sim {
namespace {

using google::protobuf::TextFormat;

// Keeps TextFormat's first error (it stops there) instead of letting protobuf log it to stderr.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (!error_) error_ = Position{line, column, message};
  }
  // TextFormat warns only about deprecated fields, and ArchConfig has none.
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}

  struct Position {
    int line;
    int column;
    std::string message;
  };
  const std::optional<Position>& error() const { return error_; }

 private:
  std::optional<Position> error_;
};

std::string ReadFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw Error(path + ": is a directory, not a config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  std::string text(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) throw Error(path + ": cannot read");
  return text;
}

// Protobuf reports an unknown or repeated field after reading its name and ':'; point at the name,
// where the fix goes. And it names the end of the input as an empty token.
void Clarify(std::string_view text, std::size_t& offset, std::string& message) {
  for (const std::string_view marker : {"has no field named \"", "Non-repeated field \""}) {
    const std::size_t start = message.find(marker);
    if (start == std::string::npos) continue;
    const std::size_t name_begin = start + marker.size();
    const std::size_t name_end = message.find('"', name_begin);
    if (name_end == std::string::npos) continue;
    const std::string_view name = std::string_view(message).substr(name_begin, name_end - name_begin);
    const std::size_t newline = offset == 0 ? std::string_view::npos : text.rfind('\n', offset - 1);
    const std::size_t line_begin = newline == std::string_view::npos ? 0 : newline + 1;
    const std::size_t found = text.substr(0, offset).rfind(name);
    if (found != std::string_view::npos && found >= line_begin) offset = found;
  }
  const std::string_view got = "got: ";
  if (message.size() >= got.size() && message.compare(message.size() - got.size(), got.size(), got) == 0) {
    message += "end of file";
  }
}

}  // namespace

ArchConfig ParseArchConfig(std::string_view text, const std::string& source,
                           const std::vector<std::string>& overrides) {
  ArchConfig config;
  FirstErrorCollector collector;
  TextFormat::ParseInfoTree tree;
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  parser.WriteLocationsTo(&tree);
  const std::string owned(text);
  if (!parser.ParseFromString(owned, &config)) {
    if (!collector.error()) throw Error(source + ": not a valid ArchConfig text proto");
    const auto& position = *collector.error();
    std::size_t offset = TokenizerPositionToOffset(text, position.line, position.column);
    std::string message = position.message;
    Clarify(text, offset, message);
    throw Error(FormatParseError(source, text, ParseError(offset, message)));
  }

  FieldSources sources(source);
  sources.RecordParse(*ArchConfig::descriptor(), tree, text);
  for (const std::string& assignment : overrides) {
    const std::string path = ApplyOverride(config, assignment);
    sources.RecordOverride(path, assignment);
  }
  ValidateArchConfig(config, sources);
  return config;
}

ArchConfig LoadArchConfig(const std::string& path, const std::vector<std::string>& overrides) {
  return ParseArchConfig(ReadFile(path), path, overrides);
}

}  // namespace tpusim::sim
