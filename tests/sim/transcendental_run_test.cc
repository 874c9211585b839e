// sine, cosine and power in element-wise kernels (vsin, vcos, vpow; docs/isa.md): values known
// exactly checked by hand, and random inputs checked bit for bit against the evaluator, which calls
// the same C library functions (the element-wise bound is 0 ulps).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "isa/npy.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

}  // namespace

TEST_CASE("sine, cosine and power give the exact values known by hand", "[sim][elementwise]") {
  // sin(0) = 0, cos(0) = 1, 2^10 = 1024, 3^2 = 9, x^0 = 1 and 1^y = 1 even for NaN (XLA's power),
  // 4^0.5 = 2.
  const fs::path dir = TempDir("transcendental_exact");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.0f, 2.0f, 3.0f, nan, 1.0f, 4.0f};
  const std::vector<float> y = {0.0f, 10.0f, 2.0f, 0.0f, nan, 0.5f};
  const auto write = [&](const std::string& name, const std::vector<float>& v) {
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    const std::vector<int64_t> dims = {6};
    tpusim::isa::WriteNpy((dir / name).string(), ElementType::kF32, dims, bytes);
  };
  write("x.npy", x);
  write("y.npy", y);
  WriteText(dir / "m.hlo",
            "HloModule t\nENTRY e {\n  x = f32[6] parameter(0)\n  y = f32[6] parameter(1)\n  s = f32[6] sine(x)\n"
            "  c = f32[6] cosine(x)\n  p = f32[6] power(x, y)\n  ROOT r = (f32[6], f32[6], f32[6]) tuple(s, c, p)\n}\n");
  const std::string output = RunOk("run " + (dir / "m.hlo").string() + " --check --input 0=" + (dir / "x.npy").string() +
                                   " --input 1=" + (dir / "y.npy").string() + " --out " + (dir / "out").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  const auto read = [&](int i) {
    const tpusim::isa::NpyArray a = ReadOutput(dir / "out" / ("output_" + std::to_string(i) + ".npy"), ElementType::kF32);
    std::vector<float> v(a.data.size() / 4);
    std::memcpy(v.data(), a.data.data(), a.data.size());
    return v;
  };
  const std::vector<float> s = read(0), c = read(1), p = read(2);
  REQUIRE(p.size() == 6);
  CHECK(s[0] == 0.0f);
  CHECK(c[0] == 1.0f);
  CHECK(p[0] == 1.0f);
  CHECK(p[1] == 1024.0f);
  CHECK(p[2] == 9.0f);
  CHECK(p[3] == 1.0f);
  CHECK(p[4] == 1.0f);
  CHECK(p[5] == 2.0f);
}

TEST_CASE("tpusim run --check: sine, cosine and power on random f32 and bf16 tiles", "[sim][elementwise]") {
  // [20,130]: partial tiles both ways, so cosine's and power's non-zero images of the zero padding
  // must be masked out of the results.
  for (const char* type : {"f32", "bf16"}) {
    INFO(type);
    const std::string t = type;
    const fs::path dir = TempDir(std::string("transcendental_") + type);
    WriteText(dir / "m.hlo", "HloModule t\nENTRY e {\n  x = " + t + "[20,130] parameter(0)\n  y = " + t +
                                 "[20,130] parameter(1)\n  a = " + t + "[20,130] abs(x)\n  s = " + t +
                                 "[20,130] sine(x)\n  c = " + t + "[20,130] cosine(s)\n  ROOT p = " + t +
                                 "[20,130] power(a, c)\n}\n");
    const std::string output = RunOk("run " + (dir / "m.hlo").string() + " --check --seed 4");
    CHECK_THAT(output, Catch::Contains("check passed"));
  }
}
