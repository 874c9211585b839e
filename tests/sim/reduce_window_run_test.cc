// End-to-end runs of the reduce-window kernel (compiler/lower/reduce_window_kernel.h) through the
// built binary: results compared with values computed here by hand (a cumulative sum as Gemma 3
// writes it, a 2x2 stride-2 max pool), `--check` against the evaluator over strides, padding and
// both dilations, and the refusals.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "isa/npy.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

// ROOT y = TYPE[OUT] reduce-window(x: TYPE[IN], init), window={WINDOW}, to_apply=op.
std::string WindowModule(const std::string& type, const std::string& in, const std::string& out,
                         const std::string& window, const std::string& op, const std::string& init) {
  return "HloModule w\nreducer {\n  a = " + type + "[] parameter(0)\n  b = " + type + "[] parameter(1)\n  ROOT c = " +
         type + "[] " + op + "(a, b)\n}\nENTRY e {\n  x = " + type + "[" + in + "] parameter(0)\n  i = " + type +
         "[] constant(" + init + ")\n  ROOT y = " + type + "[" + out + "] reduce-window(x, i), window={" + window +
         "}, to_apply=reducer\n}\n";
}

template <typename T>
fs::path WriteInput(const fs::path& dir, ElementType type, const std::vector<int64_t>& dims, const std::vector<T>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  const fs::path path = dir / "x.npy";
  tpusim::isa::WriteNpy(path.string(), type, dims, bytes);
  return path;
}

template <typename T>
std::vector<T> RunAndRead(const fs::path& dir, const std::string& module, const fs::path& input, ElementType type) {
  const fs::path path = dir / "module.hlo";
  WriteText(path, module);
  const std::string output = RunOk("run " + path.string() + " --check --input 0=" + input.string() + " --out " +
                                   (dir / "out").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  const tpusim::isa::NpyArray out = ReadOutput(dir / "out" / "output_0.npy", type);
  std::vector<T> values(out.data.size() / sizeof(T));
  std::memcpy(values.data(), out.data.data(), out.data.size());
  return values;
}

}  // namespace

TEST_CASE("reduce-window: a cumulative sum as Gemma 3 writes it, from the init value", "[sim][reduce_window]") {
  // Gemma 3's cumsum: window size 11 with padding 10_0 along the sequence, so y[i] = init +
  // x[0] + ... + x[i]. With x[j] = j + 1: y[i] = init + (i + 1)(i + 2) / 2. The init 5 is not the
  // identity, so it must be applied once per element, not once per padded tap.
  const fs::path dir = TempDir("rw_cumsum");
  std::vector<int32_t> x(11);
  for (int j = 0; j < 11; ++j) x[j] = j + 1;
  const fs::path input = WriteInput(dir, ElementType::kS32, {1, 11}, x);
  const std::vector<int32_t> y = RunAndRead<int32_t>(
      dir, WindowModule("s32", "1,11", "1,11", "size=1x11 pad=0_0x10_0", "add", "5"), input, ElementType::kS32);
  REQUIRE(y.size() == 11);
  for (int i = 0; i < 11; ++i) CHECK(y[i] == 5 + (i + 1) * (i + 2) / 2);
}

TEST_CASE("reduce-window: a 2x2 stride-2 max pool", "[sim][reduce_window]") {
  // x[r][c] = -(10 r + c) on [4, 6]: every value is negative, so a zero from padding or a stale
  // staging word would win the max. Block (i, j) holds rows 2i, 2i+1 and columns 2j, 2j+1, whose
  // largest value is -(20 i + 2 j).
  const fs::path dir = TempDir("rw_maxpool");
  std::vector<float> x(4 * 6);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 6; ++c) x[r * 6 + c] = -static_cast<float>(10 * r + c);
  }
  const fs::path input = WriteInput(dir, ElementType::kF32, {4, 6}, x);
  const std::vector<float> y = RunAndRead<float>(
      dir, WindowModule("f32", "4,6", "2,3", "size=2x2 stride=2x2", "maximum", "-inf"), input, ElementType::kF32);
  REQUIRE(y.size() == 6);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) CHECK(y[i * 3 + j] == -static_cast<float>(20 * i + 2 * j));
  }
}

TEST_CASE("tpusim run --check: reduce-window over strides, padding and dilations", "[sim][reduce_window]") {
  // Output sizes follow XLA's rule: (dilated base + padding - dilated window) / stride + 1, with
  // the dilated base (n - 1) * base_dilation + 1 and the dilated window (w - 1) * dilation + 1.
  struct Case {
    const char* name;
    const char* type;
    const char* in;
    const char* out;
    const char* window;
    const char* op;
    const char* init;
  };
  const Case cases[] = {
      // (20 + 2 - 3) / 2 + 1 = 10 and (130 + 0 - 2) / 1 + 1 = 129: partial tiles both ways.
      {"max_f32_strided_padded", "f32", "20,130", "10,129", "size=3x2 stride=2x1 pad=1_1x0_0", "maximum", "-inf"},
      // window dilation 2: the dilated window 5 wide; (40 + 4 - 5) + 1 = 40.
      {"add_s32_window_dilated", "s32", "3,40", "3,40", "size=1x3 pad=0_0x2_2 rhs_dilate=1x2", "add", "7"},
      // base dilation 2: the dilated base 2 * 9 - 1 = 17; (17 + 1 - 2) / 1 + 1 = 17.
      {"min_u32_base_dilated", "u32", "9", "17", "size=2 pad=0_1 lhs_dilate=2", "minimum", "4000000000"},
      // rank 3, a window over every dim, stride 3 along the last: (10 - 2) / 3 + 1 = 3.
      {"max_s32_rank3", "s32", "2,9,10", "1,8,3", "size=2x2x2 stride=1x1x3", "maximum", "-2147483648"},
      {"and_s32_rank1", "s32", "1000", "998", "size=3", "and", "-1"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const fs::path dir = TempDir(std::string("rw_") + c.name);
    const fs::path path = dir / "module.hlo";
    WriteText(path, WindowModule(c.type, c.in, c.out, c.window, c.op, c.init));
    const std::string output = RunOk("run " + path.string() + " --check --seed 5");
    CHECK_THAT(output, Catch::Contains("check passed"));
  }
}

TEST_CASE("reduce-window: what is not lowered is refused with the reason", "[sim][reduce_window]") {
  const fs::path dir = TempDir("rw_refused");
  const fs::path path = dir / "module.hlo";
  // bf16 would need each fold rounded to bf16; the kernel holds 32-bit words only.
  WriteText(path, WindowModule("bf16", "8,128", "8,64", "size=1x2 stride=1x2", "add", "0"));
  const std::string output = RunExpectingError("run " + path.string());
  CHECK_THAT(output, Catch::Contains("cannot lower reduce-window"));
  CHECK_THAT(output, Catch::Contains("only f32, s32 and u32 reduce-windows are lowered (its type is bf16)"));
}
