// End-to-end tests of what the large workloads (MaxText's train step) need from the compiler:
// dots and reduces cut to fit VMEM (contraction_split.h, reduce_split.h), reduces over size-1
// dims and over column-major operands, layout copies (layout_copies.h), in-place
// dynamic-update-slice, scatter-add, reduce-precision, and element-wise kernels whose strips only
// fit twice. Each runs `tpusim run --check`: the simulated result must match the reference
// evaluator within the bound of docs/compiler.md, and the structure is checked from the report or
// the program.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

const char* const kCheckPassed = "check passed";

std::string RunChecked(const fs::path& dir, const std::string& hlo, const std::string& extra = "") {
  WriteText(dir / "m.hlo", hlo);
  return RunOk("run " + (dir / "m.hlo").string() + " --config tpu_v4 --check --report " + (dir / "r.json").string() +
               extra);
}

// The kernels the report lists (its "ops"), by name.
bool HasKernel(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_CASE("a dot whose K panels do not fit VMEM is summed over K slices", "[run][passes]") {
  const fs::path dir = TempDir("k_split");
  const std::string hlo =
      "HloModule ksplit\nENTRY e {\n  a = bf16[256,4096] parameter(0)\n  b = bf16[4096,512] parameter(1)\n"
      "  ROOT d = bf16[256,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  // With 16 MiB of VMEM the dot is one kernel.
  RunChecked(dir, hlo);
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"d"});
  // With 2 MiB, tpu_v4's 4 MXUs of 128 columns need 2 x 4096 x 512 x 2 B = 8 MiB of weight
  // panels: K is cut into slices whose panels fit, each an f32 dot, summed, then rounded once.
  const std::string split = RunChecked(dir, hlo, " --set tensor_core.vmem.capacity_mib=2");
  CHECK_THAT(split, Catch::Contains(kCheckPassed));
  const std::vector<std::string> names = KernelNames(dir / "r.json");
  CHECK(HasKernel(names, "d.k_split.lhs.0"));  // the slices are copies
  CHECK(HasKernel(names, "d.k_split.dot.0"));
  CHECK(HasKernel(names, "d.k_split.dot.1"));
  // The f32 sums and the convert back to bf16 are one loop fusion, the split dot's result.
  CHECK(HasKernel(names, "d.k_split.sum.0"));
  CHECK(names.size() == 16);  // 5 slices of each operand, 5 dots, the sum
  CHECK_FALSE(HasKernel(names, "d"));
  // An element-wise consumer reads the sum's result, as it would read the dot's: the f32 slices
  // are not computed in its kernel (they would stay live until it runs).
  const std::string consumed =
      "HloModule ksplit\nENTRY e {\n  a = bf16[256,4096] parameter(0)\n  b = bf16[4096,512] parameter(1)\n"
      "  c = bf16[256,512] parameter(2)\n  d = bf16[256,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  ROOT o = bf16[256,512] add(d, c)\n}\n";
  CHECK_THAT(RunChecked(dir, consumed, " --set tensor_core.vmem.capacity_mib=2"), Catch::Contains(kCheckPassed));
  const std::vector<std::string> consumed_names = KernelNames(dir / "r.json");
  CHECK(HasKernel(consumed_names, "d.k_split.sum.0"));
  CHECK(HasKernel(consumed_names, "o"));
  CHECK(consumed_names.size() == 17);
}

TEST_CASE("K slices of an operand's most major dim are ranges of its bytes, not copies", "[run][passes]") {
  // MaxText's weight gradients contract their leading dims ([16,2048,...]): the contraction split
  // cuts the outermost, dim 0, which lies above the tiles ([64,256] and [64,512] slabs one after
  // another), so each slice is an offset into its operand's buffer (AliasingSliceOffset) and only
  // the slices' dots and their sum run. With 1 MiB of VMEM: three slices.
  const fs::path dir = TempDir("k_split_alias");
  const std::string hlo =
      "HloModule ksplit\nENTRY e {\n  a = bf16[16,64,256] parameter(0)\n  b = bf16[16,64,512] parameter(1)\n"
      "  ROOT d = bf16[256,512] dot(a, b), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}\n}\n";
  CHECK_THAT(RunChecked(dir, hlo, " --set tensor_core.vmem.capacity_mib=1"), Catch::Contains(kCheckPassed));
  CHECK(KernelNames(dir / "r.json") ==
        std::vector<std::string>{"d.k_split.dot.0", "d.k_split.dot.1", "d.k_split.dot.2", "d.k_split.sum.0"});
}

TEST_CASE("a reduce whose accumulators do not fit VMEM is cut along a kept dim", "[run][passes]") {
  const fs::path dir = TempDir("reduce_split");
  const std::string hlo =
      "HloModule rsplit\nadd {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n  ROOT c = bf16[] add(a, b)\n}\n"
      "ENTRY e {\n  x = bf16[4096,8,128] parameter(0)\n  z = bf16[] constant(0)\n"
      "  ROOT r = bf16[4096,8] reduce(x, z), dimensions={2}, to_apply=add\n}\n";
  // The result's 8 columns tile to 128: 512 strips of one 4 KiB tile = 2 MiB of accumulators
  // and a 1 MiB bf16 stage, more than 1 MiB of VMEM.
  const std::string split = RunChecked(dir, hlo, " --set tensor_core.vmem.capacity_mib=1");
  CHECK_THAT(split, Catch::Contains(kCheckPassed));
  CHECK_THAT(split, Catch::Contains("every element equal"));
  const std::vector<std::string> names = KernelNames(dir / "r.json");
  CHECK(HasKernel(names, "r.split.reduce.0"));
  CHECK(HasKernel(names, "r.split.concatenate.0"));
  CHECK_FALSE(HasKernel(names, "r"));
}

TEST_CASE("reduces over size-1 dims and over column-major operands", "[run][passes]") {
  const fs::path dir = TempDir("reduce_layouts");
  const std::string add = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n";
  // Size-1 dims go: one reduce over [8,64,256]; both reshapes alias it (no copy kernel).
  const std::string degenerate = RunChecked(dir, "HloModule degen\n" + add +
                                                     "ENTRY e {\n  x = f32[8,1,64,256] parameter(0)\n  z = f32[] constant(0)\n"
                                                     "  r = f32[8,1,64] reduce(x, z), dimensions={3}, to_apply=add\n"
                                                     "  ROOT s = f32[8,1,64,1] reshape(r)\n}\n");
  CHECK_THAT(degenerate, Catch::Contains(kCheckPassed));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"r.squeezed_reduce"});
  // A column-major operand is reduced in memory order.
  const std::string column_major = RunChecked(dir, "HloModule colmajor\n" + add +
                                                       "ENTRY e {\n  x = f32[64,256]{0,1} parameter(0)\n  z = f32[] constant(0)\n"
                                                       "  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add\n}\n");
  CHECK_THAT(column_major, Catch::Contains(kCheckPassed));
}

TEST_CASE("operands in another layout than their reader's get a copy", "[run][passes]") {
  const fs::path dir = TempDir("layout_copies");
  // An element-wise operand, a Sharding annotation that changes the layout, and a call whose
  // parameter is row-major while its operand is column-major (inlined: its negate reads it).
  const std::string output = RunChecked(dir,
                                        "HloModule lcopy\ncallee {\n  p = f32[64,256]{1,0} parameter(0)\n"
                                        "  ROOT n = f32[64,256]{1,0} negate(p)\n}\nENTRY e {\n"
                                        "  a = f32[64,256]{1,0} parameter(0)\n  b = f32[64,256]{0,1} parameter(1)\n"
                                        "  s = f32[64,256]{1,0} add(a, b)\n"
                                        "  t = f32[64,256]{0,1} custom-call(s), custom_call_target=\"Sharding\", sharding={replicated}\n"
                                        "  c = f32[64,256]{1,0} call(t), to_apply=callee\n"
                                        "  ROOT r = f32[64,256]{1,0} multiply(c, t)\n}\n");
  CHECK_THAT(output, Catch::Contains("every element equal"));
  const std::vector<std::string> names = KernelNames(dir / "r.json");
  CHECK(HasKernel(names, "s.relayout.1"));  // b -> row-major for the add
  CHECK(HasKernel(names, "t.relayout.0"));  // s -> column-major for the Sharding
  CHECK(HasKernel(names, "c.n.relayout.0"));  // t -> row-major for the inlined callee's negate
  CHECK(HasKernel(names, "r.relayout.1"));  // t -> row-major for the multiply
}

TEST_CASE("a dynamic-update-slice of a loop's stacked state writes in place", "[run][passes]") {
  const fs::path dir = TempDir("dus_in_place");
  const std::string hlo =
      "HloModule dus\ncond {\n  s = (s32[], f32[8,64,128], f32[64,128]) parameter(0)\n"
      "  i = s32[] get-tuple-element(s), index=0\n  n = s32[] constant(8)\n"
      "  ROOT p = pred[] compare(i, n), direction=LT\n}\nbody {\n"
      "  s = (s32[], f32[8,64,128], f32[64,128]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
      "  stack = f32[8,64,128] get-tuple-element(s), index=1\n  x = f32[64,128] get-tuple-element(s), index=2\n"
      "  y = f32[64,128] add(x, x)\n  row = f32[1,64,128] reshape(y)\n  z = s32[] constant(0)\n"
      "  stack2 = f32[8,64,128] dynamic-update-slice(stack, row, i, z, z)\n  one = s32[] constant(1)\n"
      "  j = s32[] add(i, one)\n  ROOT t = (s32[], f32[8,64,128], f32[64,128]) tuple(j, stack2, y)\n}\n"
      "ENTRY e {\n  x = f32[64,128] parameter(0)\n  zero = s32[] constant(0)\n  c = f32[] constant(0)\n"
      "  init = f32[8,64,128] broadcast(c), dimensions={}\n"
      "  s = (s32[], f32[8,64,128], f32[64,128]) tuple(zero, init, x)\n"
      "  w = (s32[], f32[8,64,128], f32[64,128]) while(s), condition=cond, body=body\n"
      "  ROOT stack = f32[8,64,128] get-tuple-element(w), index=1\n}\n";
  const std::string output = RunChecked(dir, hlo);
  CHECK_THAT(output, Catch::Contains("every element equal"));
  RunOk("compile " + (dir / "m.hlo").string() + " --config tpu_v4 -o " + (dir / "m.tpuasm").string());
  const std::string program = ReadText(dir / "m.tpuasm");
  const auto kernel = [&](const std::string& name) {
    const std::size_t from = program.find(name + ".begin:");
    const std::size_t to = program.find(name + ".end:", from);
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    return program.substr(from, to - from);
  };
  const auto dmas = [](const std::string& code) {
    const std::regex dma("\\n\\s*dma ");
    return std::distance(std::sregex_iterator(code.begin(), code.end(), dma), std::sregex_iterator());
  };
  // The update's kernel: three start indices to SMEM and the [1,64,128] update; no copy of the
  // 256 KiB stack. Nothing is copied back into the state: the body updated the stack in place,
  // and the counter j = add(i, 1) and y = add(x, x) wrote over i and x, which nothing reads after
  // them (element-wise ops in place).
  CHECK(dmas(kernel("w_body_stack2")) == 4);
  CHECK(program.find("w_next_state.begin:") == std::string::npos);
}

TEST_CASE("scatter-add adds repeated indices in order", "[run][passes]") {
  for (const char* type : {"f32", "bf16"}) {
    DYNAMIC_SECTION(type) {
      const fs::path dir = TempDir(std::string("scatter_add_") + type);
      const bool is_bf16 = std::string(type) == "bf16";
      const ElementType element = is_bf16 ? ElementType::kBF16 : ElementType::kF32;
      // Random operand and updates; indices with repeats (row 3 four times), the last row, and
      // two out of range (-1, 64: skipped, as XLA does).
      const auto values = [&](std::size_t n, uint32_t seed) {
        const std::vector<uint8_t> data = RandomBf16(n, seed);
        if (is_bf16) return data;
        std::vector<uint8_t> f32(n * 4);
        for (std::size_t i = 0; i < n; ++i) {
          const float v = Bf16ToF32(Bf16At(data, i)) * 0.37f;
          std::memcpy(&f32[i * 4], &v, 4);
        }
        return f32;
      };
      const std::vector<int32_t> rows = {3, 0, 3, 7, 63, 3, -1, 12, 64, 3, 5, 0};
      std::vector<uint8_t> indices(rows.size() * 4);
      std::memcpy(indices.data(), rows.data(), indices.size());
      const int64_t n = static_cast<int64_t>(rows.size());
      tpusim::isa::WriteNpy((dir / "operand.npy").string(), element, std::vector<int64_t>{64, 256}, values(64 * 256, 1));
      tpusim::isa::WriteNpy((dir / "indices.npy").string(), ElementType::kS32, std::vector<int64_t>{n, 1}, indices);
      tpusim::isa::WriteNpy((dir / "updates.npy").string(), element, std::vector<int64_t>{n, 256}, values(n * 256, 2));
      const std::string t = type;
      const std::string hlo = "HloModule scatter_add\nadd {\n  a = " + t + "[] parameter(0)\n  b = " + t +
                              "[] parameter(1)\n  ROOT c = " + t + "[] add(a, b)\n}\nENTRY e {\n  x = " + t +
                              "[64,256] parameter(0)\n  i = s32[" + std::to_string(n) + ",1] parameter(1)\n  u = " + t +
                              "[" + std::to_string(n) + ",256] parameter(2)\n  ROOT s = " + t +
                              "[64,256] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, "
                              "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n";
      const std::string output = RunChecked(dir, hlo,
                                            " --input 0=" + (dir / "operand.npy").string() + " --input 1=" +
                                                (dir / "indices.npy").string() + " --input 2=" + (dir / "updates.npy").string());
      // Data movement and one rounding per add, in index order: bit for bit the evaluator's.
      CHECK_THAT(output, Catch::Contains("every element equal"));
    }
  }
}

TEST_CASE("reduce-precision to its type's own widths is the identity, narrower is refused", "[run][passes]") {
  const fs::path dir = TempDir("reduce_precision");
  const std::string hlo =
      "HloModule rp\nENTRY e {\n  a = bf16[64,256] parameter(0)\n"
      "  b = bf16[64,256] reduce-precision(a), exponent_bits=8, mantissa_bits=7\n"
      "  ROOT r = bf16[64,256] add(b, b)\n}\n";
  const std::string same = RunChecked(dir, hlo);
  CHECK_THAT(same, Catch::Contains("every element equal"));
  std::string narrower = hlo;
  narrower.replace(narrower.find("exponent_bits=8, mantissa_bits=7"), 32, "exponent_bits=5, mantissa_bits=2");
  WriteText(dir / "m.hlo", narrower);
  const std::string refused = RunExpectingError("run " + (dir / "m.hlo").string() + " --config tpu_v4 --check");
  CHECK_THAT(refused, Catch::Contains("m.hlo:5:8"));
  CHECK_THAT(refused, Catch::Contains("reduce-precision 'b' to fewer exponent or mantissa bits than bf16 has"));
}

TEST_CASE("an element-wise kernel whose strips fit VMEM twice but not three times runs", "[run][passes]") {
  const fs::path dir = TempDir("elementwise_depth");
  // Six f32[8,28800] operands and the result: a strip is 225 tiles of 4 KiB = 900 KiB per array,
  // 6.2 MiB for the seven; three of them (18.5 MiB) exceed tpu_v4's 16 MiB, two (12.3 MiB) fit.
  std::string hlo = "HloModule wide\nENTRY e {\n";
  for (int i = 0; i < 6; ++i) hlo += "  p" + std::to_string(i) + " = f32[8,28800] parameter(" + std::to_string(i) + ")\n";
  hlo += "  a = f32[8,28800] add(p0, p1)\n  b = f32[8,28800] multiply(a, p2)\n  c = f32[8,28800] subtract(b, p3)\n"
         "  d = f32[8,28800] maximum(c, p4)\n  ROOT e = f32[8,28800] add(d, p5)\n}\n";
  const std::string output = RunChecked(dir, hlo);
  CHECK_THAT(output, Catch::Contains("every element equal"));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"e"});
}

TEST_CASE("an array with size-1 dims is not padded to whole tiles along them", "[run][passes]") {
  const fs::path dir = TempDir("size_one_dims");
  RunChecked(dir, "HloModule ones\nENTRY e {\n  p = f32[256,64,1] parameter(0)\n  ROOT r = f32[256,64,1] add(p, p)\n}\n",
             " --dump-memory " + (dir / "dump").string());
  const std::string index = ReadText(dir / "dump" / "index.json");
  // Tiled as [256, 64] (the 64 columns padded to 128 lanes): 256 x 128 x 4 B, not the
  // 256 x 64 x 128 x 4 B of T(8,128) over (64, 1).
  CHECK_THAT(index, Catch::Contains("\"shape\": \"f32[256,64,1]{1,0,2:T(8,128)}\""));
  CHECK_THAT(index, Catch::Contains("\"size_bytes\": 131072"));
}

}  // namespace

namespace {

TEST_CASE("float add reduces keep the sign of a sum of negative zeros", "[run][reduce]") {
  // The reduce kernels' identity for float add is -0 (reduce_plan.h, IdentityBits): -0 + -0 = -0,
  // while a +0 identity would turn every column of -0 summed from a -0 init into +0.
  const fs::path dir = TempDir("negative_zero_sum");
  std::vector<uint8_t> zeros(16 * 256 * 4);
  for (std::size_t i = 3; i < zeros.size(); i += 4) zeros[i] = 0x80;  // -0.0f
  tpusim::isa::WriteNpy((dir / "x.npy").string(), ElementType::kF32, std::vector<int64_t>{16, 256}, zeros);
  const std::string hlo =
      "HloModule nz\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
      "ENTRY e {\n  x = f32[16,256] parameter(0)\n  z = f32[] constant(-0)\n"
      "  ROOT r = f32[256] reduce(x, z), dimensions={0}, to_apply=add\n}\n";
  RunChecked(dir, hlo, " --input 0=" + (dir / "x.npy").string() + " --out " + (dir / "out").string());
  const tpusim::isa::NpyArray out = ReadOutput(dir / "out" / "output_0.npy", ElementType::kF32);
  REQUIRE(out.data.size() == 256 * 4);
  for (std::size_t i = 0; i < 256; ++i) {
    INFO("element " << i);
    CHECK(out.data[i * 4 + 3] == 0x80);
    CHECK(out.data[i * 4] == 0);
  }
}

}  // namespace

namespace {

TEST_CASE("an element-wise kernel whose strips do not fit VMEM twice works on pieces of strips", "[run][passes]") {
  // f32[12,128200]: a strip is 1002 tiles of 4 KiB = 3.9 MiB per array, 15.7 MiB for the four;
  // twice that exceeds tpu_v4's 16 MiB, so each strip is cut into pieces (three here). exp makes
  // the kernel mask the padding: the last tile of each strip has 72 valid lanes
  // (128200 = 1001 x 128 + 72), and the second strip 4 valid rows.
  const fs::path dir = TempDir("elementwise_pieces");
  const std::string output = RunChecked(dir,
                                        "HloModule wide\nENTRY e {\n  a = f32[12,128200] parameter(0)\n  b = f32[12,128200] parameter(1)\n"
                                        "  c = f32[12,128200] parameter(2)\n  x = f32[12,128200] exponential(a)\n"
                                        "  y = f32[12,128200] multiply(x, b)\n  ROOT z = f32[12,128200] add(y, c)\n}\n",
                                        " --dump-memory " + (dir / "dump").string());
  CHECK_THAT(output, Catch::Contains("every element equal"));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"z"});
  // The layout's padding is zero (docs/compiler.md's invariant), in every piece.
  const std::string bytes = ReadText(dir / "dump" / "output_0.bin");
  const int64_t strip_tiles = 1002;
  REQUIRE(bytes.size() == static_cast<std::size_t>(2 * strip_tiles * 4096));
  int64_t nonzero = 0;
  for (int64_t strip = 0; strip < 2; ++strip) {
    for (int64_t tile = 0; tile < strip_tiles; ++tile) {
      for (int64_t row = 0; row < 8; ++row) {
        for (int64_t lane = 0; lane < 128; ++lane) {
          if (!((strip == 1 && row >= 4) || (tile == strip_tiles - 1 && lane >= 72))) continue;
          const std::size_t at = static_cast<std::size_t>(((strip * strip_tiles + tile) * 8 + row) * 128 + lane) * 4;
          for (int k = 0; k < 4; ++k) nonzero += bytes[at + k] != 0;
        }
      }
    }
  }
  CHECK(nonzero == 0);
}

}  // namespace

// Softmax cross-entropy over bf16 logits as MaxText writes it (a one-hot `call`): input fusion
// computes the f32 logits, their differences from the maxima and the one-hot inside the reduce
// and loss kernels; only the exponentials reach HBM. [4,100,1000]: 50 strips in 4 blocks per
// reduce, rows of 100 (a partial strip per matrix) and 1000 columns (a partial last tile).
const char* const kCrossEntropy = R"(HloModule xent
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
onehot {
  t = s32[4,100] parameter(0)
  b2 = s32[4,100,1000] broadcast(t), dimensions={0,1}
  io = s32[1000] iota(), iota_dimension=0
  b3 = s32[4,100,1000] broadcast(io), dimensions={2}
  c = pred[4,100,1000] compare(b2, b3), direction=EQ
  ROOT f = f32[4,100,1000] convert(c)
}
ENTRY e {
  logits = bf16[4,100,1000] parameter(0)
  targets = s32[4,100] parameter(1)
  xf = f32[4,100,1000] convert(logits)
  ninf = f32[] constant(-inf)
  mx = f32[4,100] reduce(xf, ninf), dimensions={2}, to_apply=max
  mb = f32[4,100,1000] broadcast(mx), dimensions={0,1}
  d = f32[4,100,1000] subtract(xf, mb)
  ex = f32[4,100,1000] exponential(d)
  zero = f32[] constant(0)
  s = f32[4,100] reduce(ex, zero), dimensions={2}, to_apply=add
  sb = f32[4,100,1000] broadcast(s), dimensions={0,1}
  p = f32[4,100,1000] divide(ex, sb)
  oh = f32[4,100,1000] call(targets), to_apply=onehot
  g = f32[4,100,1000] subtract(p, oh)
  gb = bf16[4,100,1000] convert(g)
  picked = f32[4,100,1000] multiply(oh, d)
  nll = f32[4,100] reduce(picked, zero), dimensions={2}, to_apply=add
  ROOT r = (bf16[4,100,1000], f32[4,100], f32[4,100]) tuple(gb, nll, s)
}
)";

TEST_CASE("input fusion: softmax cross-entropy keeps its f32 logits out of HBM", "[run][passes]") {
  const fs::path dir = TempDir("input_fusion_xent");
  const std::string output = RunChecked(dir, kCrossEntropy, " --seed 3");
  CHECK_THAT(output, Catch::Contains(kCheckPassed));
  std::vector<std::string> names = KernelNames(dir / "r.json");
  std::sort(names.begin(), names.end());
  // Three reduces with their producers, the gradient's loop fusion, and the exponential, which
  // two kernels read (not duplicated: compiler/passes/elementwise_fusion.cc). The one-hot's iota,
  // a broadcast rank-1 iota, is computed by the gradient's and the loss's kernels
  // (ExprNode::kIota), where it was a kernel of its own.
  CHECK(names == std::vector<std::string>{"ex", "gb", "mx", "nll", "s"});
}

TEST_CASE("input fusion: a reduce whose fused blocks do not fit VMEM reads its operand from HBM", "[run][passes]") {
  const fs::path dir = TempDir("input_fusion_unfit");
  // A strip of 60000 columns: 1.9 MB in f32, 0.96 MB in bf16. With 5 MiB of VMEM the reduce alone
  // fits (two strips, 3.8 MB) but not with its producer's streams (two strips of x and of the
  // result, 5.8 MB): the exponential becomes a kernel of its own.
  const std::string hlo = R"(HloModule unfit
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = bf16[16,60000] parameter(0)
  xf = f32[16,60000] convert(x)
  ex = f32[16,60000] exponential(xf)
  zero = f32[] constant(0)
  ROOT s = f32[16] reduce(ex, zero), dimensions={1}, to_apply=add
}
)";
  const std::string output = RunChecked(dir, hlo, " --seed 5 --set tensor_core.vmem.capacity_mib=5");
  CHECK_THAT(output, Catch::Contains(kCheckPassed));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"ex", "s"});
  // With the default 16 MiB, one fused kernel.
  CHECK_THAT(RunChecked(dir, hlo, " --seed 5"), Catch::Contains(kCheckPassed));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"s"});
}

TEST_CASE("input fusion: fused operands folded over rows, lanes, whole matrices and major dims", "[run][passes]") {
  const fs::path dir = TempDir("input_fusion_kinds");
  // Each reduce reads its own copy of x*y - broadcast(v) (producer duplication, four groups), over
  // [6,70,900]: 53 strips per reduce in blocks of up to 16, partial rows and lanes.
  const std::string output = RunChecked(dir, R"(HloModule kinds
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[6,70,900] parameter(0)
  y = bf16[6,70,900] parameter(1)
  v = f32[900] parameter(2)
  yf = f32[6,70,900] convert(y)
  xy = f32[6,70,900] multiply(x, yf)
  vb = f32[6,70,900] broadcast(v), dimensions={2}
  d = f32[6,70,900] subtract(xy, vb)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  lanes = f32[6,70] reduce(d, zero), dimensions={2}, to_apply=add
  rows = f32[6,900] reduce(d, ninf), dimensions={1}, to_apply=max
  both = f32[6] reduce(d, zero), dimensions={1,2}, to_apply=add
  major = f32[70,900] reduce(d, zero), dimensions={0}, to_apply=add
  ROOT r = (f32[6,70], f32[6,900], f32[6], f32[70,900]) tuple(lanes, rows, both, major)
}
)", " --seed 7");
  CHECK_THAT(output, Catch::Contains(kCheckPassed));
  std::vector<std::string> names = KernelNames(dir / "r.json");
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"both", "lanes", "major", "rows"});
}

TEST_CASE("blocks whose code differs only in addresses are one loop, and compute the same", "[run][passes]") {
  // Element-wise over [2300, 520] with 4-, 2- and 1-byte streams (f32, bf16, s8, pred): a strip
  // is 5 tiles (20 KiB of f32), a block 12 strips (at most 256 KiB per array: the f32 array's
  // 4.6 MiB over 32 blocks, as a power of two): 288 strips are 24 blocks, 12 on each of tpu_v4's
  // TensorCores. After each core's first three (every buffer used once), the blocks whose next
  // load is a full block of the core's (4 to 9, 16 to 21) are a loop of three blocks per
  // iteration, with each tile size's HBM offset in a register.
  const fs::path dir = TempDir("block_loop");
  const std::string elementwise =
      "HloModule ew\nENTRY e {\n  x = bf16[2300,520] parameter(0)\n  y = f32[2300,520] parameter(1)\n"
      "  c = s8[2300,520] parameter(2)\n  xf = f32[2300,520] convert(x)\n  cf = f32[2300,520] convert(c)\n"
      "  s = f32[2300,520] multiply(xf, y)\n  t = f32[2300,520] add(s, cf)\n"
      "  p = pred[2300,520] compare(t, y), direction=GT\n  n = s8[2300,520] convert(t)\n"
      "  ROOT r = (f32[2300,520], pred[2300,520], bf16[2300,520], s8[2300,520]) tuple(t, p, x, n)\n}\n";
  CHECK_THAT(RunChecked(dir, elementwise), Catch::Contains(kCheckPassed));
  const std::string compiled = RunOk("compile " + (dir / "m.hlo").string() + " -o " + (dir / "m.tpuasm").string());
  CHECK_THAT(ReadText(dir / "m.tpuasm"), Catch::Contains("blocks 4 to 9 of 24, 3 per iteration"));
  CHECK_THAT(ReadText(dir / "m.tpuasm"), Catch::Contains("blocks 16 to 21 of 24, 3 per iteration"));

  // A sum over lanes fed by its fused producer: the fold keeps its place in registers, so the
  // producer loops over its blocks with the fold inside. bf16 [600, 8, 700]: 600 matrices of one
  // strip (6 tiles), 21 strips per block (24 KiB of f32 each); the result rows' addresses come
  // from the matrix index.
  const std::string fused =
      "HloModule lanes\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
      "ENTRY e {\n  x = bf16[600,8,700] parameter(0)\n  y = bf16[600,8,700] parameter(1)\n"
      "  xf = f32[600,8,700] convert(x)\n  yf = f32[600,8,700] convert(y)\n  m = f32[600,8,700] multiply(xf, yf)\n"
      "  z = f32[] constant(0)\n  ROOT r = f32[600,8] reduce(m, z), dimensions={2}, to_apply=add\n}\n";
  CHECK_THAT(RunChecked(dir, fused), Catch::Contains(kCheckPassed));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"r"});
  RunOk("compile " + (dir / "m.hlo").string() + " -o " + (dir / "m.tpuasm").string());
  CHECK_THAT(ReadText(dir / "m.tpuasm"), Catch::Contains("per iteration"));
}
