// End-to-end tests of the data-movement kernels (compiler/lower/data_movement_kernel.h): HLO
// modules compiled and run by the built binary with --check, which compares every output with the
// reference evaluator bit for bit (data movement is exact: the bound is 0 ulp). Shapes are odd on
// purpose ([20,130], [3,5,7]: partial tiles in both tiled dims), for f32, bf16 and s32. One test
// dumps memory to check that a result written over stale bytes has zero layout padding.
#include <catch2/catch.hpp>


#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "isa/layout_index.h"
#include "isa/shape.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

fs::path WriteModule(const std::string& name, const std::string& body) {
  const fs::path dir = TempDir(name);
  const fs::path path = dir / (name + ".hlo");
  std::ofstream(path) << "HloModule " << name << "\n\nENTRY main {\n" << body << "\n}\n";
  return path;
}

// Runs the module with --check; returns the output.
std::string RunChecked(const std::string& name, const std::string& body, const std::string& extra = "") {
  const fs::path path = WriteModule(name, body);
  INFO(name << ":\n" << body);
  const std::string output = RunOk("run " + path.string() + " --check " + extra);
  CHECK_THAT(output, Catch::Contains("check passed"));
  CHECK_THAT(output, Catch::Contains("every element equal"));
  return output;
}

const char* const kTypes[] = {"f32", "bf16", "s32"};

std::string Sub(std::string text, const std::string& type) {
  for (std::size_t at = text.find("T_"); at != std::string::npos; at = text.find("T_", at)) text.replace(at, 2, type);
  return text;
}

}  // namespace

TEST_CASE("data movement: copy and transpose of odd shapes", "[dma][e2e]") {
  for (const char* type : kTypes) {
    INFO(type);
    RunChecked(std::string("copy_layout_") + type,
               Sub("  p = T_[20,130]{1,0} parameter(0)\n  ROOT c = T_[20,130]{0,1} copy(p)", type));
    RunChecked(std::string("transpose2_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  ROOT t = T_[130,20] transpose(p), dimensions={1,0}", type));
    RunChecked(std::string("transpose3_") + type,
               Sub("  p = T_[3,5,7] parameter(0)\n  ROOT t = T_[7,3,5] transpose(p), dimensions={2,0,1}", type));
  }
}

TEST_CASE("data movement: reshapes through a row-major intermediate and as aliases", "[dma][e2e]") {
  for (const char* type : kTypes) {
    INFO(type);
    RunChecked(std::string("reshape_flat_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  ROOT r = T_[2600] reshape(p)", type));
    RunChecked(std::string("reshape_3d_") + type,
               Sub("  p = T_[3,5,7] parameter(0)\n  ROOT r = T_[7,15] reshape(p)", type));
    RunChecked(std::string("reshape_unflat_") + type,
               Sub("  p = T_[105] parameter(0)\n  ROOT r = T_[3,5,7] reshape(p)", type));
    // Same images: [16,128] and [2,8,128] (8 rows is a whole tile); a leading 1.
    RunChecked(std::string("reshape_alias_") + type,
               Sub("  p = T_[16,130] parameter(0)\n  n = T_[16,130] negate(p)\n"
                   "  r = T_[2,8,130] reshape(n)\n  ROOT s = T_[1,2,8,130] reshape(r)",
                   type == std::string("s32") ? "f32" : type));
  }
}

TEST_CASE("data movement: a one-element array reshaped to a scalar is its first bytes and no kernel", "[dma][e2e]") {
  // Gemma's cache position: s32[1]{0:T(1024)} read as s32[] by the scalar core (a 0.65 us kernel
  // each before); the dynamic slice reads its start through the view.
  const fs::path path = WriteModule("one_element_scalar",
                                    "  p = s32[1] parameter(0)\n  x = f32[64,256] parameter(1)\n"
                                    "  i = s32[] reshape(p)\n  z = s32[] constant(0)\n"
                                    "  ROOT d = f32[8,256] dynamic-slice(x, i, z), dynamic_slice_sizes={8,256}");
  const fs::path dir = path.parent_path();
  const std::vector<int64_t> one = {1};
  const int32_t start = 5;  // rows 5..12
  tpusim::isa::WriteNpy((dir / "p.npy").string(), tpusim::isa::ElementType::kS32, one,
                        std::span(reinterpret_cast<const uint8_t*>(&start), sizeof start));
  const std::string output = RunOk("run " + path.string() + " --check --input 0=" + (dir / "p.npy").string() +
                                   " --report " + (dir / "r.json").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"d"});
}

TEST_CASE("data movement: broadcasts of scalars, rows, columns and planes", "[dma][e2e]") {
  for (const char* type : kTypes) {
    INFO(type);
    RunChecked(std::string("bcast_row_") + type,
               Sub("  p = T_[130] parameter(0)\n  ROOT b = T_[20,130] broadcast(p), dimensions={1}", type));
    RunChecked(std::string("bcast_col_") + type,
               Sub("  p = T_[20] parameter(0)\n  ROOT b = T_[20,130] broadcast(p), dimensions={0}", type));
    RunChecked(std::string("bcast_scalar_") + type,
               Sub("  p = T_[] parameter(0)\n  ROOT b = T_[3,5,7] broadcast(p), dimensions={}", type));
    RunChecked(std::string("bcast_plane_") + type,
               Sub("  p = T_[3,7] parameter(0)\n  ROOT b = T_[3,5,7] broadcast(p), dimensions={0,2}", type));
    RunChecked(std::string("bcast_transposing_") + type,
               Sub("  p = T_[7,3] parameter(0)\n  ROOT b = T_[3,5,7] broadcast(p), dimensions={2,0}", type));
  }
}

TEST_CASE("data movement: slices, strided slices, concatenates, reverses", "[dma][e2e]") {
  for (const char* type : kTypes) {
    INFO(type);
    RunChecked(std::string("slice_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  ROOT s = T_[17,126] slice(p), slice={[2:19], [3:129]}", type));
    RunChecked(std::string("slice_strided_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  ROOT s = T_[7,19] slice(p), slice={[1:20:3], [0:130:7]}", type));
    RunChecked(std::string("slice_3d_") + type,
               Sub("  p = T_[3,5,7] parameter(0)\n  ROOT s = T_[2,2,3] slice(p), slice={[1:3], [0:5:3], [1:7:2]}", type));
    RunChecked(std::string("concat_rows_") + type,
               Sub("  a = T_[20,130] parameter(0)\n  b = T_[7,130] parameter(1)\n"
                   "  ROOT c = T_[27,130] concatenate(a, b), dimensions={0}", type));
    RunChecked(std::string("concat_mid_") + type,
               Sub("  a = T_[3,5,7] parameter(0)\n  b = T_[3,2,7] parameter(1)\n  c = T_[3,1,7] parameter(2)\n"
                   "  ROOT d = T_[3,8,7] concatenate(a, b, c), dimensions={1}", type));
    RunChecked(std::string("reverse_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  ROOT r = T_[20,130] reverse(p), dimensions={0,1}", type));
    RunChecked(std::string("reverse_3d_") + type,
               Sub("  p = T_[3,5,7] parameter(0)\n  ROOT r = T_[3,5,7] reverse(p), dimensions={1}", type));
  }
}

TEST_CASE("data movement: pads with a run-time value, negative and interior padding", "[dma][e2e]") {
  for (const char* type : kTypes) {
    INFO(type);
    RunChecked(std::string("pad_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  v = T_[] parameter(1)\n"
                   "  ROOT r = T_[23,137] pad(p, v), padding=1_2x3_4", type));
    RunChecked(std::string("pad_negative_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  v = T_[] parameter(1)\n"
                   "  ROOT r = T_[21,129] pad(p, v), padding=-1_2x3_-4", type));
    RunChecked(std::string("pad_interior_") + type,
               Sub("  p = T_[3,5,7] parameter(0)\n  v = T_[] parameter(1)\n"
                   "  ROOT r = T_[7,5,19] pad(p, v), padding=1_1_1x0_0x0_0_2", type));
    RunChecked(std::string("pad_const_") + type,
               Sub("  p = T_[3,5,7] parameter(0)\n  v = T_[] constant(3)\n"
                   "  ROOT r = T_[4,9,7] pad(p, v), padding=0_1x2_2x0_0", type));
  }
}

TEST_CASE("data movement: iota along every dim", "[dma][e2e]") {
  for (const char* type : {"f32", "bf16", "s32", "u32"}) {
    INFO(type);
    RunChecked(std::string("iota_minor_") + type, Sub("  ROOT i = T_[20,1300] iota(), iota_dimension=1", type));
    RunChecked(std::string("iota_major_") + type, Sub("  ROOT i = T_[20,130] iota(), iota_dimension=0", type));
    RunChecked(std::string("iota_3d_") + type, Sub("  ROOT i = T_[3,5,7] iota(), iota_dimension=1", type));
  }
}

TEST_CASE("data movement: dynamic-slice and dynamic-update-slice clamp their starts", "[dma][e2e]") {
  for (const char* type : kTypes) {
    INFO(type);
    // Starts 5 and 200: the second is clamped to 130 - 7 = 123; -3 is clamped to 0.
    RunChecked(std::string("dslice_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  i = s32[] constant(5)\n  j = s32[] constant(200)\n"
                   "  ROOT s = T_[9,7] dynamic-slice(p, i, j), dynamic_slice_sizes={9,7}", type));
    RunChecked(std::string("dslice_3d_") + type,
               Sub("  p = T_[3,5,7] parameter(0)\n  i = s32[] constant(-3)\n  j = s32[] constant(1)\n"
                   "  k = s32[] constant(4)\n"
                   "  ROOT s = T_[2,3,3] dynamic-slice(p, i, j, k), dynamic_slice_sizes={2,3,3}", type));
    RunChecked(std::string("dus_") + type,
               Sub("  p = T_[20,130] parameter(0)\n  u = T_[9,7] parameter(1)\n  i = s32[] constant(15)\n"
                   "  j = s32[] constant(60)\n  ROOT s = T_[20,130] dynamic-update-slice(p, u, i, j)", type));
    // Run-time starts: random s32 parameters, clamped whatever they are.
    RunChecked(std::string("dus_param_") + type,
               Sub("  p = T_[3,5,7] parameter(0)\n  u = T_[2,2,2] parameter(1)\n  i = s32[] parameter(2)\n"
                   "  j = s32[] parameter(3)\n  k = s32[] parameter(4)\n"
                   "  ROOT s = T_[3,5,7] dynamic-update-slice(p, u, i, j, k)", type));
  }
}

// A result placed where a dead temporary of full tiles lay must still have zero padding: t (no
// padding, every byte an element of -p) dies at s; the copy c is then placed at t's address.
TEST_CASE("data movement: results written over stale bytes keep zero layout padding", "[dma][e2e]") {
  const struct {
    const char* name;
    const char* root;
  } cases[] = {
      {"copy", "ROOT c = f32[20,130] copy(s)"},
      {"transpose", "ROOT c = f32[130,20] transpose(s), dimensions={1,0}"},
      {"broadcast", "ROOT c = f32[20,130] broadcast(s2), dimensions={0,1}"},
      {"concat", "ROOT c = f32[20,130] concatenate(s1, s1), dimensions={1}"},
      {"reverse", "ROOT c = f32[20,130] reverse(s), dimensions={1}"},
      {"iota", "ROOT c = f32[20,130] iota(), iota_dimension=1"},
  };
  for (const auto& test : cases) {
    INFO(test.name);
    const std::string body = std::string(
                                 "  p = f32[24,256] parameter(0)\n  t = f32[24,256] negate(p)\n"
                                 "  s = f32[20,130] slice(t), slice={[0:20], [0:130]}\n"
                                 "  s1 = f32[20,65] slice(t), slice={[0:20], [0:65]}\n"
                                 "  s2 = f32[20,130] slice(t), slice={[1:21], [1:131]}\n  ") +
                             test.root;
    const std::string name = std::string("stale_") + test.name;
    const fs::path dump = TempDir(name) / "dump";
    RunChecked(name, body, "--dump-memory " + dump.string());
    std::ifstream in(dump / "output_0.bin", std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    const std::string shape_text = std::string(test.name) == "transpose" ? "f32[130,20]{1,0:T(8,128)}"
                                                                         : "f32[20,130]{1,0:T(8,128)}";
    const tpusim::isa::LayoutMap map(tpusim::isa::ParseShape(shape_text));
    REQUIRE(bytes.size() == static_cast<std::size_t>(map.byte_size()));
    int64_t nonzero_padding = 0, padding = 0;
    for (int64_t e = 0; e < map.physical_element_count(); ++e) {
      if (map.LogicalIndex(e).has_value()) continue;
      ++padding;
      for (int b = 0; b < 4; ++b) nonzero_padding += bytes[e * 4 + b] != 0;
    }
    // [20,130] in T(8,128): 3 x 2 tiles of 1024 = 6144 slots, 2600 elements.
    CHECK(padding == map.physical_element_count() - map.element_count());
    CHECK(nonzero_padding == 0);
  }
}

TEST_CASE("tpusim run: a module over the configured HBM is refused, naming the field that set the capacity", "[dma][e2e]") {
  // 32 MiB of weights against --set hbm.capacity_mib=16: the error names the peak, the capacity,
  // the field and its value (so the user knows what to --set), and what fills it.
  const fs::path path = WriteModule("over_capacity", "  x = bf16[1,11,1152] parameter(0)\n  w = bf16[13824,1152] parameter(1)\n"
                                                    "  ROOT d = bf16[1,11,13824] dot(x, w), lhs_contracting_dims={2}, "
                                                    "rhs_contracting_dims={1}");
  const std::string output = RunExpectingError("run " + path.string() + " --timing-only --set hbm.capacity_mib=16");
  CHECK_THAT(output, Catch::Contains("bytes of HBM at its peak, more than the chip's 16777216 (hbm.capacity_mib = 16 MiB); "
                                     "the largest buffers live here: w (31850496 bytes)"));
}

TEST_CASE("tpusim run --check: a dynamic-update-slice of a whole-size update is the update and runs no kernel", "[sim][data]") {
  // The update covers the operand, so any start (the random s32 given here, clamped) writes all of
  // it: the algebraic simplifier reads the update instead, and the module's one kernel is the add.
  using namespace tpusim::exec_test;
  const fs::path dir = TempDir("dus_whole_update");
  WriteText(dir / "m.hlo", R"(HloModule m
ENTRY e {
  cache = bf16[1,11,256] parameter(0)
  u = bf16[1,11,256] parameter(1)
  i = s32[] parameter(2)
  zero = s32[] constant(0)
  d = bf16[1,11,256] dynamic-update-slice(cache, u, zero, i, zero)
  ROOT s = bf16[1,11,256] add(d, cache)
})");
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --seed 9"), Catch::Contains("every element equal"));
  RunOk("run " + (dir / "m.hlo").string() + " --timing-only --report " + (dir / "r.json").string());
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"s"});
}
