// tpusim's logging: spdlog to stderr, quiet by default (warnings and errors only).
#pragma once

#include <chrono>
#include <string>

namespace tpusim::sim {

// The names --log-level accepts, in order of verbosity.
inline constexpr const char* kLogLevels[] = {"trace", "debug", "info", "warn", "error", "off"};

// Installs the stderr logger at `level` (one of kLogLevels).
void SetUpLogging(const std::string& level);

// Wall seconds since `start`, for the info lines that time each step.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tpusim::sim
