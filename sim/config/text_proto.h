// Reading text-format protobuf files (configs, sweeps) with errors that say where.
#pragma once

#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <string>
#include <string_view>

namespace tpusim::sim {

// The file's bytes; throws tpusim::Error `PATH: cannot open for reading` (or `is a directory`).
std::string ReadTextFile(const std::string& path);

// Parses `text` into `message` with protobuf's TextFormat, recording where each field was written
// into `tree`. Throws tpusim::Error `SOURCE:LINE:COL: message`, then the line and a caret under the
// column, for a syntax error, an unknown field, a value of the wrong type or a field given twice.
// Nothing is printed: protobuf's errors go to a collector, not to its stderr log.
void ParseTextProto(std::string_view text, const std::string& source, google::protobuf::Message& message,
                    google::protobuf::TextFormat::ParseInfoTree& tree);

// `SOURCE:LINE:COL: message`, the line and a caret, for field `name` (index `index` of a repeated
// one; ignored for a singular one) of the message `tree` describes (the field's own position: its
// name).
std::string ErrorAtField(std::string_view text, const std::string& source,
                         const google::protobuf::TextFormat::ParseInfoTree& tree, const google::protobuf::Message& message,
                         std::string_view name, int index, const std::string& what);

}  // namespace tpusim::sim
