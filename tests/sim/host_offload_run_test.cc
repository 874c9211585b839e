// End-to-end runs of host offload (compiler/passes/host_offload.h): modules that move arrays to
// host memory and back run with `tpusim run --check` against the reference evaluator (which passes
// MoveToHost and MoveToDevice through), and their outputs are compared with values computed here.
// Inputs are quarter values, so every expected value is exact in f32.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "isa/materialize.h"
#include "isa/npy.h"
#include "isa/shape.h"
#include "tests/compiler/host_offload_modules.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

// x[i] = ((i * 7) % 64 - 32) / 4: exact quarter values in [-8, 8).
std::vector<float> Quarters(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(static_cast<int>(i * 7 % 64) - 32) / 4.0f;
  return values;
}

std::vector<uint8_t> Bytes(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> Floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

// The cycles of the report's kernel `name`.
uint64_t KernelCycles(const fs::path& report, const std::string& name) {
  const std::string json = ReadText(report);
  std::smatch match;
  const std::regex pattern("\"name\": \"" + name + "\", [^}]*\"cycles\": ([0-9]+)");
  REQUIRE(std::regex_search(json, match, pattern));
  return std::stoull(match[1].str());
}

// Runs `text` on the tiny preset with x as its input, --check, outputs in DIR/out, memory in DIR/dump.
void RunWithX(const fs::path& dir, const std::string& text, const std::vector<float>& x,
              const std::vector<int64_t>& dims) {
  WriteText(dir / "module.hlo", text);
  tpusim::isa::WriteNpy((dir / "x.npy").string(), ElementType::kF32, dims, Bytes(x));
  const std::string output = RunOk("run " + (dir / "module.hlo").string() + " --input x=" + (dir / "x.npy").string() +
                                   " --check --config tiny --out " + (dir / "out").string() + " --dump-memory " +
                                   (dir / "dump").string() + " --report " + (dir / "report.json").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
}

}  // namespace

TEST_CASE("tpusim run: an array moved to host memory and back is exact", "[run][host_offload]") {
  const fs::path dir = TempDir("host_offload_round_trip");
  const std::vector<float> x = Quarters(64 * 256);
  RunWithX(dir, tpusim::host_offload_test::kRoundTrip, x, {64, 256});
  const std::vector<float> got = Floats(ReadOutput(dir / "out" / "output_0.npy", ElementType::kF32).data);
  REQUIRE(got.size() == x.size());
  int64_t wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) wrong += got[i] != 2 * x[i];  // d + x, d being x's bytes
  CHECK(wrong == 0);
  // Host memory served the parameter's 64 KiB and MoveToDevice's 64 KiB (read), and MoveToHost's
  // 64 KiB and the output's 64 KiB (written): without the moves it would be 65536 each way.
  CHECK_THAT(ReadText(dir / "report.json"),
             Catch::Contains(R"({"name": "host", "bytes_read": 131072, "bytes_written": 131072,)"));
  // Each move crosses the tiny preset's PCIe link (8 GB/s each way, 100 ns one way, host DRAM
  // 20 ns; docs/timing.md): 65536 bytes take at least 8192 ns on the link, plus L_pcie + L_host
  // for a write (MoveToHost) and 2 L_pcie + L_host for a read (MoveToDevice). In HBM (32 GB/s)
  // the same copy would take about 2 us. At 1 GHz a cycle is 1 ns.
  CHECK(KernelCycles(dir / "report.json", "h") >= 8192 + 120);
  CHECK(KernelCycles(dir / "report.json", "d") >= 8192 + 220);
  const std::string index = ReadText(dir / "dump" / "index.json");
  CHECK_THAT(index, Catch::Contains(R"("name": "x", "role": "parameter", "shape": "f32[64,256]{1,0:T(8,128)}", "memory_space": "hbm")"));
}

TEST_CASE("tpusim run --dump-memory shows an output in host memory as memory_space host", "[run][host_offload]") {
  const fs::path dir = TempDir("host_offload_output");
  const std::vector<float> x = Quarters(8 * 128);
  RunWithX(dir, R"(HloModule offload_output
ENTRY e {
  x = f32[8,128] parameter(0)
  ROOT h = f32[8,128] custom-call(x), custom_call_target="MoveToHost"
}
)", x, {8, 128});
  const std::string index = ReadText(dir / "dump" / "index.json");
  // The host heap starts after x's and the output's host buffers (4 KiB each).
  CHECK_THAT(index, Catch::Contains(R"("name": "output.0", "role": "output", "shape": "f32[8,128]{1,0:T(8,128)S(5)}", "memory_space": "host", "address": 8192, "size_bytes": 4096)"));
  const tpusim::isa::Shape shape = tpusim::isa::ParseShape("f32[8,128]{1,0:T(8,128)}");
  std::ifstream in(dir / "dump" / "output_0.bin", std::ios::binary);
  const std::vector<uint8_t> dumped((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(dumped == tpusim::isa::Materialize(shape, Bytes(x)));
  CHECK(Floats(ReadOutput(dir / "out" / "output_0.npy", ElementType::kF32).data) == x);
}

TEST_CASE("tpusim run: loops stacking activations in host memory and reading them back are exact",
          "[run][host_offload]") {
  const fs::path dir = TempDir("host_offload_scan");
  const std::vector<float> x = Quarters(8 * 128);
  RunWithX(dir, tpusim::host_offload_test::kScan, x, {8, 128});
  const std::vector<float> acc = Floats(ReadOutput(dir / "out" / "output_0.npy", ElementType::kF32).data);
  const std::vector<float> stack = Floats(ReadOutput(dir / "out" / "output_1.npy", ElementType::kF32).data);
  REQUIRE(acc.size() == x.size());
  REQUIRE(stack.size() == 4 * x.size());
  int64_t wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    wrong += acc[i] != -10 * x[i];
    for (std::size_t k = 0; k < 4; ++k) wrong += stack[k * x.size() + i] != static_cast<float>(2 << k) * x[i];
  }
  CHECK(wrong == 0);
}

TEST_CASE("tpusim run: one broadcast of zeros starting two host stacks and an HBM output is exact",
          "[run][host_offload]") {
  const fs::path dir = TempDir("host_offload_shared_zeros");
  const std::vector<float> x = Quarters(8 * 128);
  RunWithX(dir, tpusim::host_offload_test::kSharedZeros, x, {8, 128});
  std::vector<float> stacked = x;
  stacked.insert(stacked.end(), x.begin(), x.end());
  CHECK(Floats(ReadOutput(dir / "out" / "output_0.npy", ElementType::kF32).data) == stacked);
  CHECK(Floats(ReadOutput(dir / "out" / "output_1.npy", ElementType::kF32).data) == stacked);
  CHECK(Floats(ReadOutput(dir / "out" / "output_2.npy", ElementType::kF32).data) == std::vector<float>(2 * 8 * 128, 0.0f));
}

TEST_CASE("tpusim run: the same loops with the stack in HBM (updated in place) are exact", "[run][host_offload]") {
  // kScan with every move a copy: the stack stays in HBM, and fwd_body's dynamic-update-slice
  // writes into the loop state in place (buffer assignment), as it does in host memory.
  std::string text = tpusim::host_offload_test::kScan;
  for (const std::string target : {"MoveToHost", "MoveToDevice"}) {
    const std::string call = ", custom_call_target=\"" + target + "\"";
    for (std::size_t at = text.find(call); at != std::string::npos; at = text.find(call)) text.erase(at, call.size());
  }
  for (std::size_t at = text.find("custom-call("); at != std::string::npos; at = text.find("custom-call(")) {
    text.replace(at, 11, "copy");
  }
  REQUIRE(text.find("custom") == std::string::npos);
  const fs::path dir = TempDir("host_offload_scan_in_hbm");
  const std::vector<float> x = Quarters(8 * 128);
  RunWithX(dir, text, x, {8, 128});
  const std::vector<float> acc = Floats(ReadOutput(dir / "out" / "output_0.npy", ElementType::kF32).data);
  const std::vector<float> stack = Floats(ReadOutput(dir / "out" / "output_1.npy", ElementType::kF32).data);
  REQUIRE(acc.size() == x.size());
  REQUIRE(stack.size() == 4 * x.size());
  int64_t wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    wrong += acc[i] != -10 * x[i];
    for (std::size_t k = 0; k < 4; ++k) wrong += stack[k * x.size() + i] != static_cast<float>(2 << k) * x[i];
  }
  CHECK(wrong == 0);
}
