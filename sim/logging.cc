#include "sim/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace tpusim::sim {

void SetUpLogging(const std::string& level) {
  spdlog::drop("tpusim");
  auto logger = spdlog::stderr_color_st("tpusim");
  logger->set_pattern("tpusim: %^%l%$: %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace tpusim::sim
