// Where each field of a loaded config came from (a line of the file, or a --set override), so
// that a validation error can point at the text the user has to change.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace tpusim::sim {

class FieldSources {
 public:
  // `file` names the config everywhere no better place is known (a path, or "(in memory)").
  explicit FieldSources(std::string file = "(in memory)") : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  // Records the position of every field written in `text`, as TextFormat's parser located them
  // in `tree` while parsing a `descriptor` message. Positions become `file:line:col`, 1-based,
  // the column counting bytes.
  void RecordParse(const google::protobuf::Descriptor& descriptor,
                   const google::protobuf::TextFormat::ParseInfoTree& tree, std::string_view text);

  // Records that the dotted `path` was last set by the override `assignment` (as typed after
  // --set). Anything recorded below `path` is forgotten (it was replaced); enclosing messages
  // with no record (created by this override) are attributed to it too.
  void RecordOverride(const std::string& path, const std::string& assignment);

  // Where the dotted `path` was set: `file:line:col` or `--set a.b=c`. A field that was never
  // set is described by its nearest enclosing message that was (a missing field of `hbm { }` is
  // reported at `hbm`'s line), and by the bare file name at top level.
  std::string Describe(const std::string& path) const;

 private:
  void RecordTree(const google::protobuf::Descriptor& descriptor,
                  const google::protobuf::TextFormat::ParseInfoTree& tree, std::string_view text,
                  const std::string& prefix);

  std::string file_;
  std::map<std::string, std::string> where_;  // dotted path -> description
};

// Converts the 0-based (line, column) of protobuf's tokenizer, whose columns advance to the next
// multiple of 8 at a tab, into the 0-based byte offset in `text`.
std::size_t TokenizerPositionToOffset(std::string_view text, int line, int column);

}  // namespace tpusim::sim
