#include "sim/config/text_proto.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "isa/error.h"
#include "sim/config/field_sources.h"

namespace tpusim::sim {
namespace {

// Keeps TextFormat's first error (it stops there) instead of letting protobuf log it to stderr.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (!error_) error_ = Position{line, column, message};
  }
  // TextFormat warns only about deprecated fields, which these schemas do not have.
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

std::string ReadTextFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw Error(path + ": is a directory, not a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  std::string text(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) throw Error(path + ": cannot read");
  return text;
}

void ParseTextProto(std::string_view text, const std::string& source, google::protobuf::Message& message,
                    google::protobuf::TextFormat::ParseInfoTree& tree) {
  FirstErrorCollector collector;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  parser.WriteLocationsTo(&tree);
  const std::string owned(text);
  if (!parser.ParseFromString(owned, &message)) {
    if (!collector.error()) {
      throw Error(source + ": not a valid " + message.GetDescriptor()->name() + " text proto");
    }
    const auto& position = *collector.error();
    std::size_t offset = TokenizerPositionToOffset(text, position.line, position.column);
    std::string what = position.message;
    Clarify(text, offset, what);
    throw Error(FormatParseError(source, text, ParseError(offset, what)));
  }
}

std::string ErrorAtField(std::string_view text, const std::string& source,
                         const google::protobuf::TextFormat::ParseInfoTree& tree, const google::protobuf::Message& message,
                         std::string_view name, int index, const std::string& what) {
  const google::protobuf::FieldDescriptor* field = message.GetDescriptor()->FindFieldByName(std::string(name));
  const google::protobuf::TextFormat::ParseLocationRange range =
      field == nullptr ? google::protobuf::TextFormat::ParseLocationRange()
                       : tree.GetLocationRange(field, field->is_repeated() ? index : -1);
  if (range.start.line < 0) return source + ": " + what;
  return FormatParseError(source, text, ParseError(TokenizerPositionToOffset(text, range.start.line, range.start.column), what));
}

}  // namespace tpusim::sim
