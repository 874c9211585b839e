// What the end-to-end tests of the `tpusim` binary share (tests/sim/*_test.cc): running it,
// temporary directories, reading its report, bf16 test data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "isa/convert.h"
#include "isa/element_type.h"
#include "isa/npy.h"
#include "sim/config/arch_config.pb.h"

namespace tpusim::exec_test {

namespace fs = std::filesystem;

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs `tpusim ARGS` (the binary this build made).
Result RunTpusim(const std::string& args);
// The same, stopped after `seconds` of wall time: exit code 124 then (coreutils' timeout).
Result RunTpusimWithin(const std::string& args, int seconds);

// Runs `tpusim ARGS`, requires it to succeed (exit code 0; the failure shows the command and its
// output) and returns its output.
std::string RunOk(const std::string& args);
// Runs `tpusim ARGS`, requires a reported error (exit code 1: a tpusim::Error, not a crash or a
// command-line parse error) and returns the output, which names it.
std::string RunExpectingError(const std::string& args);
// Writes `hlo` to DIR/m.hlo and runs it with --check on `preset`, its inputs DIR/in0.npy ..
// in<inputs - 1>.npy and its outputs written to DIR/out; as RunOk.
std::string RunModuleChecked(const fs::path& dir, const std::string& hlo, const std::string& preset, int inputs);

// A fresh directory under one root that is removed when the test binary exits.
fs::path TempDir(const std::string& name);

std::string ReadText(const fs::path& path);
void WriteText(const fs::path& path, const std::string& text);

std::string PresetPath(const std::string& name);
ArchConfig LoadPreset(const std::string& name);

// The presets every kernel runs on.
inline const char* const kPresets[] = {"tiny", "tpu_v4", "tpu_v5e", "tpu_v6e"};

// Numbers from a `--report` JSON file.
uint64_t ReportCycles(const fs::path& report);
double ReportNumber(const fs::path& report, const std::string& key);  // the first "key": N
// The number after `"key": ` in a report's text: the first, or the first after `from`.
double JsonNumber(const std::string& text, const std::string& key, std::size_t from = 0);
double ReportSum(const fs::path& report, const std::string& key);     // the sum of every "key": N
// The names of a report's ops (its kernels), in the report's order.
std::vector<std::string> KernelNames(const fs::path& report);

// `run --check --report` of `hlo` (written to a fresh directory `name`): its output (as RunOk:
// the run must succeed) and its kernels' names.
struct CheckedRun {
  std::vector<std::string> ops;
  std::string output;
};
CheckedRun RunCheckedWithReport(const std::string& name, const std::string& hlo);

// The 32-bit words where two byte images differ: how many (-1 if the sizes differ), and the
// first (-1 if none). Tests report a mismatch this way rather than by printing megabytes.
struct WordDiff {
  int64_t count = 0;
  int64_t first = -1;
};
WordDiff CompareWords(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want);

isa::NpyArray ReadOutput(const fs::path& path, isa::ElementType type);

std::vector<uint8_t> RandomBytes(std::size_t n, uint32_t seed);
// Random finite bf16 values in (-4, 4), as little-endian bytes.
std::vector<uint8_t> RandomBf16(std::size_t n, uint32_t seed);
using isa::Bf16ToF32;  // bf16 bits -> f32 (exact)
uint16_t Bf16At(const std::vector<uint8_t>& bytes, std::size_t i);
// bf16 bytes (little-endian) as f32 values.
std::vector<float> Bf16Values(const std::vector<uint8_t>& bytes);

}  // namespace tpusim::exec_test
