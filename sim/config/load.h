// Loading an ArchConfig: text proto, then --set overrides, then validation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/config/arch_config.pb.h"

namespace tpusim::sim {

// Reads the text-format ArchConfig at `path` with protobuf's TextFormat, applies `overrides`
// ("PATH=VALUE" as given to --set; see ApplyOverride) in order, and validates the result
// (ValidateArchConfig). Throws tpusim::Error:
// - `PATH: cannot open for reading` when the file cannot be read;
// - `PATH:LINE:COL: message`, then the line and a caret under the column, for a syntax error,
//   an unknown field, a value of the wrong type or a field given twice (lines and columns from 1,
//   columns counting bytes);
// - `--set ASSIGNMENT: message` for an override that does not apply;
// - one line per invalid value, naming where it was set (see ValidateArchConfig).
// Nothing is printed: protobuf's errors go to a collector, not to its stderr log.
ArchConfig LoadArchConfig(const std::string& path, const std::vector<std::string>& overrides = {});

// The same on config `text`; `source` names it in errors (a path, or e.g. "(test)").
ArchConfig ParseArchConfig(std::string_view text, const std::string& source,
                           const std::vector<std::string>& overrides = {});

}  // namespace tpusim::sim
