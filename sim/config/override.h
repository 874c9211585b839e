// `--set path.to.field=value`: one command-line change to a loaded config.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace tpusim::sim {

// Applies `assignment` ("PATH=VALUE") to `message`, found by reflection, so it works for any
// message (the loader passes an ArchConfig). PATH names nested fields with dots
// (`tensor_core.mxu.count`); enclosing messages that are absent are created. VALUE is read by
// the field's type:
// - integers in decimal (no sign for unsigned types), floating point as C++ from_chars reads it
//   (`1066.6`, `1e9`), bools as `true` or `false`, enums by value name, strings verbatim (no
//   quotes needed, none removed);
// - a message field takes only `none`, which removes it (an optional block such as `cmem`);
// - a repeated scalar field takes a comma-separated list that replaces the whole list (an empty
//   VALUE empties it); repeated message and map fields cannot be set (ArchConfig has none).
// Returns the dotted path that was set. Throws tpusim::Error("--set ASSIGNMENT: what is wrong").
std::string ApplyOverride(google::protobuf::Message& message, const std::string& assignment);

}  // namespace tpusim::sim
