#include "sim/module_loading.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "isa/error.h"
#include "sim/logging.h"

namespace tpusim::sim {
std::unique_ptr<hlo::Module> LoadModule(const std::string& path, bool verify) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  std::stringstream text;
  text << in.rdbuf();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<hlo::Module> module = hlo::ParseModule(text.str(), path);
  spdlog::info("parsed {} in {:.3f} s", path, SecondsSince(start));
  if (verify) {
    start = std::chrono::steady_clock::now();
    hlo::Verify(*module);
    spdlog::info("verified {} in {:.3f} s", path, SecondsSince(start));
  }
  return module;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error(path + ": cannot write");
}

}  // namespace tpusim::sim
