// tpusim's logging: spdlog to stderr, quiet by default (warnings and errors only).
#pragma once

#include <string>

namespace tpusim::sim {

// The names --log-level accepts, in order of verbosity.
inline constexpr const char* kLogLevels[] = {"trace", "debug", "info", "warn", "error", "off"};

// Installs the stderr logger at `level` (one of kLogLevels).
void SetUpLogging(const std::string& level);

}  // namespace tpusim::sim
