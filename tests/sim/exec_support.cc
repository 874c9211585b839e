#include "tests/sim/exec_support.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>

#include "sim/config/load.h"
#include "sim/config/presets.h"

namespace tpusim::exec_test {
namespace {

// Everything a run of these tests writes, removed when the test binary exits.
const fs::path& TempRoot() {
  struct Root {
    fs::path path = fs::temp_directory_path() / ("tpusim_exec_test_" + std::to_string(getpid()));
    ~Root() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  };
  static const Root root;
  return root.path;
}

}  // namespace

Result RunTpusim(const std::string& args) { return RunTpusimWithin(args, 0); }

Result RunTpusimWithin(const std::string& args, int seconds) {
  const std::string limit = seconds > 0 ? "timeout -k 5 " + std::to_string(seconds) + " " : "";
  const std::string command = limit + std::string(TPUSIM_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string RunOk(const std::string& args) {
  const Result result = RunTpusim(args);
  INFO("tpusim " << args << "\n" << result.output);
  REQUIRE(result.exit_code == 0);
  return result.output;
}

std::string RunExpectingError(const std::string& args) {
  const Result result = RunTpusim(args);
  INFO("tpusim " << args << "\n" << result.output);
  REQUIRE(result.exit_code == 1);
  return result.output;
}

std::string RunModuleChecked(const fs::path& dir, const std::string& hlo, const std::string& preset, int inputs) {
  WriteText(dir / "m.hlo", hlo);
  std::string args = "run " + (dir / "m.hlo").string() + " --config " + preset + " --check --out " + (dir / "out").string();
  for (int i = 0; i < inputs; ++i) {
    args += " --input " + std::to_string(i) + "=" + (dir / ("in" + std::to_string(i) + ".npy")).string();
  }
  return RunOk(args);
}

fs::path TempDir(const std::string& name) {
  const fs::path dir = TempRoot() / name;
  fs::create_directories(dir);
  return dir;
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string PresetPath(const std::string& name) { return sim::ResolveConfigPath(name); }

ArchConfig LoadPreset(const std::string& name) { return sim::LoadArchConfig(PresetPath(name)); }

uint64_t ReportCycles(const fs::path& report) {
  const std::string json = ReadText(report);
  std::smatch match;
  REQUIRE(std::regex_search(json, match, std::regex(R"("cycles": (\d+))")));
  return std::stoull(match[1]);
}

double ReportNumber(const fs::path& report, const std::string& key) {
  const std::string json = ReadText(report);
  std::smatch match;
  REQUIRE(std::regex_search(json, match, std::regex("\"" + key + "\": ([-+0-9.eE]+)")));
  return std::stod(match[1]);
}

double JsonNumber(const std::string& text, const std::string& key, std::size_t from) {
  const std::size_t at = text.find("\"" + key + "\": ", from);
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + key.size() + 4));
}

double ReportSum(const fs::path& report, const std::string& key) {
  const std::string json = ReadText(report);
  const std::regex pattern("\"" + key + "\": ([-+0-9.eE]+)");
  double sum = 0;
  for (auto it = std::sregex_iterator(json.begin(), json.end(), pattern); it != std::sregex_iterator(); ++it) {
    sum += std::stod((*it)[1]);
  }
  return sum;
}

std::vector<std::string> KernelNames(const fs::path& report) {
  const std::string text = ReadText(report);
  const std::string ops = text.substr(text.find("\"ops\""));
  std::vector<std::string> names;
  const std::regex name("\\{\"name\": \"([^\"]+)\", \"opcode\"");
  for (auto it = std::sregex_iterator(ops.begin(), ops.end(), name); it != std::sregex_iterator(); ++it) {
    names.push_back((*it)[1]);
  }
  return names;
}

CheckedRun RunCheckedWithReport(const std::string& name, const std::string& hlo) {
  const fs::path dir = TempDir(name);
  WriteText(dir / "m.hlo", hlo);
  CheckedRun run;
  run.output = RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string());
  run.ops = KernelNames(dir / "r.json");
  return run;
}

WordDiff CompareWords(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  if (got.size() != want.size()) return {-1, -1};
  WordDiff diff;
  for (std::size_t w = 0; w < got.size() / 4; ++w) {
    if (std::memcmp(&got[4 * w], &want[4 * w], 4) != 0) {
      if (diff.first < 0) diff.first = static_cast<int64_t>(w);
      ++diff.count;
    }
  }
  return diff;
}

isa::NpyArray ReadOutput(const fs::path& path, isa::ElementType type) {
  REQUIRE(fs::exists(path));
  return isa::ReadNpy(path.string(), type);
}

std::vector<uint8_t> RandomBytes(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

std::vector<uint8_t> RandomBf16(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<uint8_t> bytes(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const float value = dist(rng);
    uint32_t word;
    std::memcpy(&word, &value, 4);
    const uint16_t bits = static_cast<uint16_t>(word >> 16);  // truncated to bf16
    bytes[2 * i] = static_cast<uint8_t>(bits);
    bytes[2 * i + 1] = static_cast<uint8_t>(bits >> 8);
  }
  return bytes;
}

uint16_t Bf16At(const std::vector<uint8_t>& bytes, std::size_t i) {
  return static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
}

std::vector<float> Bf16Values(const std::vector<uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / 2);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = Bf16ToF32(Bf16At(bytes, i));
  return values;
}

}  // namespace tpusim::exec_test
