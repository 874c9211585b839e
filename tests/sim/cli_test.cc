// End-to-end tests of the `tpusim` command line: the built binary, run as a user runs it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "isa/materialize.h"
#include "isa/npy.h"
#include "isa/shape.h"
#include "tests/sim/exec_support.h"

namespace {

using tpusim::exec_test::RunExpectingError;
using tpusim::exec_test::RunOk;
using tpusim::exec_test::RunTpusim;

std::filesystem::path TempDir() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tpusim_cli_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<uint8_t> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("tpusim layout prints the physical and tiled shapes and the byte size", "[cli]") {
  const std::string r = RunOk("layout 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}' --index 0,0,5,7");
  CHECK_THAT(r, Catch::Contains("memory space    S(1) VMEM"));
  CHECK_THAT(r, Catch::Contains("physical shape  [1,8,1280,16384]  dims {1,0,2,3} major to minor"));
  CHECK_THAT(r, Catch::Contains("after T(8,128)  [1,8,160,128,8,128]"));
  CHECK_THAT(r, Catch::Contains("after T(2,1)    [1,8,160,128,4,128,2,1]"));
  CHECK_THAT(r, Catch::Contains("byte size       335544320"));
  // (r,c) = (5,7) in the first tile: (5/2)*256 + 2*7 + 5%2 = 527 elements, 1054 bytes.
  CHECK_THAT(r, Catch::Contains("index           {0,0,5,7} -> linear index 527, byte offset 1054"));
  // Quiet by default: no SystemC banner, no log lines.
  CHECK_THAT(r, !Catch::Contains("Copyright"));
  CHECK_THAT(r, !Catch::Contains("info"));
}

TEST_CASE("tpusim layout gives a shape without a layout the TPU default", "[cli]") {
  const std::string r = RunOk("layout 'bf16[2,8,128]' --index 0,2,0");
  CHECK_THAT(r, Catch::Contains("layout          {2,1,0:T(8,128)(2,1)} (the TPU default)"));
  CHECK_THAT(r, Catch::Contains("linear index 256, byte offset 512"));
}

TEST_CASE("tpusim layout errors exit non-zero with a message", "[cli]") {
  const std::string bad_shape = RunExpectingError("layout 'bf16[2,8,12'");
  CHECK_THAT(bad_shape, Catch::Contains("tpusim: error: SHAPE:1:12: expected ']' to close the dimensions"));
  CHECK_THAT(bad_shape, Catch::Contains("  bf16[2,8,12\n             ^"));

  const std::string bad_layout = RunExpectingError("layout 'f32[2,3]{0,0}'");
  CHECK_THAT(bad_layout, Catch::Contains("is not a permutation"));

  const std::string bad_index = RunExpectingError("layout 'f32[2,3]' --index 1,x");
  CHECK_THAT(bad_index, Catch::Contains("'x' is not an integer"));

  const std::string out_of_range = RunExpectingError("layout 'f32[2,3]' --index 2,0");
  CHECK_THAT(out_of_range, Catch::Contains("index 2 is out of bounds for dimension 0"));

  const std::string no_output = RunExpectingError("layout 'f32[2,3]' --materialize x.npy");
  CHECK_THAT(no_output, Catch::Contains("need -o OUT"));

  const std::string missing = RunExpectingError("layout 'f32[2,3]' --materialize /nonexistent/x.npy -o /tmp/x.bin");
  CHECK_THAT(missing, Catch::Contains("/nonexistent/x.npy"));

  // Command-line parse errors: CLI11's own exit codes, not 1.
  CHECK(RunTpusim("").exit_code != 0);
  CHECK(RunTpusim("layout 'f32[2]' --frobnicate").exit_code != 0);
}

TEST_CASE("tpusim layout --materialize and --dematerialize round-trip a .npy array", "[cli]") {
  using namespace tpusim::isa;
  const auto dir = TempDir();
  const std::string shape_text = "bf16[10,130]{0,1:T(8,128)(2,1)}";
  const Shape shape = ParseShape(shape_text);
  std::vector<uint8_t> values(10 * 130 * 2);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint8_t>(i * 7 + 3);
  WriteNpy((dir / "in.npy").string(), ElementType::kBF16, shape.dims, values);

  const std::string to_image = RunOk("layout '" + shape_text + "' --materialize " +
                                     (dir / "in.npy").string() + " -o " + (dir / "image.bin").string());
  // Physical dims [130,10]: 17 x 1 tiles of 8x128 bf16 = 17 * 1024 * 2 bytes.
  CHECK_THAT(to_image, Catch::Contains("wrote the 34816-byte device image"));
  CHECK(ReadFile(dir / "image.bin") == Materialize(shape, values));

  RunOk("layout '" + shape_text + "' --dematerialize " +
        (dir / "image.bin").string() + " -o " + (dir / "out.npy").string());
  const NpyArray array = ReadNpy((dir / "out.npy").string(), ElementType::kBF16);
  CHECK(array.dims == shape.dims);
  CHECK(array.data == values);

  // An array whose dims differ from SHAPE's, and an image of the wrong size, are refused.
  const std::string mismatch = RunExpectingError("layout 'bf16[10,131]' --materialize " + (dir / "in.npy").string() +
                                                 " -o " + (dir / "x.bin").string());
  CHECK_THAT(mismatch, Catch::Contains("array shape [10,130] does not match bf16[10,131]"));
  const std::string short_image = RunExpectingError("layout 'bf16[10,131]' --dematerialize " +
                                                    (dir / "in.npy").string() + " -o " + (dir / "x.npy").string());
  CHECK_THAT(short_image, Catch::Contains("but the image of bf16[10,131]"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("tpusim help, version and log levels", "[cli]") {
  const std::string help = RunOk("--help");
  CHECK_THAT(help, Catch::Contains("layout"));
  CHECK_THAT(help, Catch::Contains("--log-level"));
  const std::string layout_help = RunOk("layout --help");
  CHECK_THAT(layout_help, Catch::Contains("--materialize"));
  CHECK_THAT(layout_help, Catch::Contains("--dematerialize"));
  CHECK_THAT(layout_help, Catch::Contains("--index"));
  const std::string version = RunOk("--version");
  CHECK_THAT(version, Catch::Contains("tpusim 0.1.0 (SystemC 2.3.4"));
  CHECK(RunTpusim("--log-level loud layout 'f32[2]'").exit_code != 0);

  const auto dir = TempDir();
  const std::vector<uint8_t> values(8, 0);
  const std::vector<int64_t> dims = {2};
  tpusim::isa::WriteNpy((dir / "a.npy").string(), tpusim::isa::ElementType::kF32, dims, values);
  const std::string info = RunOk("--log-level info layout 'f32[2]' --materialize " +
                                 (dir / "a.npy").string() + " -o " + (dir / "a.bin").string());
  CHECK_THAT(info, Catch::Contains("tpusim: info: materialized 4096 bytes"));
  std::filesystem::remove_all(dir);
}

namespace {

std::string WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("tpusim parse summarizes, prints canonical text, and reports errors with file:line:col", "[cli]") {
  const std::string workload = std::string(TPUSIM_SHARED_DIR) + "/workloads/xla/mha_block_1x12x128x64_bf16.hlo";
  const std::string summary = RunOk("parse " + workload);
  CHECK_THAT(summary, Catch::Contains("module jit_f: 3 computations, 41 instructions, verified"));
  CHECK_THAT(summary, Catch::Contains("entry main.3: 3 parameters -> bf16[1,12,128,64]{3,2,1,0}"));

  const auto dir = TempDir();
  const std::string printed = RunOk("parse --print " + workload);
  const std::string once = WriteText(dir / "once.hlo", printed);
  CHECK(RunOk("parse --print " + once) == printed);  // print is a fixed point

  const std::string bad = WriteText(dir / "bad.hlo", "HloModule m\nENTRY e {\n  ROOT x = f32[2] frobnicate()\n}\n");
  const std::string error = RunExpectingError("parse " + bad);
  CHECK_THAT(error, Catch::Contains(bad + ":3:"));
  CHECK_THAT(error, Catch::Contains("frobnicate"));

  const std::string wrong_shape =
      WriteText(dir / "shape.hlo", "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT n = f32[3] negate(a)\n}\n");
  const std::string verify = RunExpectingError("parse " + wrong_shape);
  CHECK_THAT(verify, Catch::Contains(wrong_shape + ":4:8: instruction 'n'"));
  RunOk("parse --no-verify " + wrong_shape);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tpusim eval reads inputs by number or name and writes output_<i>.npy", "[cli]") {
  using namespace tpusim::isa;
  const auto dir = TempDir();
  const std::string module = WriteText(dir / "m.hlo", R"(HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  s = f32[3] add(a, b)
  n = s32[] constant(7)
  ROOT t = (f32[3], s32[]) tuple(s, n)
}
)");
  const std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  const std::vector<int64_t> dims = {3};
  auto bytes = [](const std::vector<float>& v) {
    return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                reinterpret_cast<const uint8_t*>(v.data() + v.size()));
  };
  WriteNpy((dir / "a.npy").string(), ElementType::kF32, dims, bytes(a));
  WriteNpy((dir / "b.npy").string(), ElementType::kF32, dims, bytes(b));
  const std::string r = RunOk("eval " + module + " --input 0=" + (dir / "a.npy").string() + " --input b=" +
                              (dir / "b.npy").string() + " --out " + (dir / "out").string());
  CHECK_THAT(r, Catch::Contains("output 0: f32[3] -> "));
  const NpyArray sum = ReadNpy((dir / "out" / "output_0.npy").string());
  CHECK(sum.data == bytes({11, 22, 33}));
  const NpyArray seven = ReadNpy((dir / "out" / "output_1.npy").string());
  CHECK(seven.type == ElementType::kS32);
  CHECK(seven.dims.empty());
  CHECK(seven.data == std::vector<uint8_t>{7, 0, 0, 0});

  // Without inputs the parameters are random but reproducible from the seed.
  const std::string out1 = (dir / "r1").string(), out2 = (dir / "r2").string();
  RunOk("eval " + module + " --seed 5 --out " + out1);
  RunOk("eval " + module + " --seed 5 --out " + out2);
  CHECK(ReadFile(dir / "r1" / "output_0.npy") == ReadFile(dir / "r2" / "output_0.npy"));

  const std::string unknown = RunExpectingError("eval " + module + " --input c=" + (dir / "a.npy").string() + " --out " + out1);
  CHECK_THAT(unknown, Catch::Contains("has no parameter c"));
  const std::string mismatch = RunExpectingError("eval " + module + " --input 0=" + (dir / "out" / "output_1.npy").string() +
                                                 " --out " + out1);
  CHECK_THAT(mismatch, Catch::Contains("output_1.npy"));
  std::filesystem::remove_all(dir);
}
