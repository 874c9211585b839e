// End-to-end tests of the convolution kernels (compiler/lower/conv_kernel.cc): HLO convolutions
// compiled and run by `tpusim run --check`, outputs compared with values computed here by the
// definition of convolution (XLA's operation semantics: out[b][y][x][o] = sum over taps (ky, kx)
// and input features i of in[b][y + ky*dil - pad][x + kx*dil - pad][i] * k[ky][kx][i][o], zero
// outside the input). Inputs are small integers, so every product and partial sum is an integer
// below 2^24, exact in f32 and bf16-representable results in any order: comparisons are exact.
#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

struct ConvCase {
  std::string name, preset, type;  // type: f32 or bf16
  int64_t b, h, w, cin, cout, kh, kw;
  int64_t pad_lo_h, pad_hi_h, pad_lo_w, pad_hi_w, dil_h, dil_w;
  bool depthwise;
  // Dims of input / kernel / output in the canonical orders (b,0,1,f), (0,1,i,o), (b,0,1,f):
  // position of each canonical dim in the HLO array, with the dim_labels text to match.
  std::vector<int> in_pos, k_pos, out_pos;
  std::string labels, in_layout, out_layout;
};

float ValueAt(int64_t i, int seed) { return static_cast<float>((i * 5 + seed * 3 + i / 7) % 5 - 2); }

std::vector<int64_t> HloDims(const std::vector<int64_t>& canonical, const std::vector<int>& pos) {
  std::vector<int64_t> dims(4);
  for (int d = 0; d < 4; ++d) dims[pos[d]] = canonical[d];
  return dims;
}

int64_t Linear(const std::vector<int64_t>& dims, const std::vector<int>& pos, const std::vector<int64_t>& canonical_index) {
  std::vector<int64_t> index(4);
  for (int d = 0; d < 4; ++d) index[pos[d]] = canonical_index[d];
  int64_t linear = 0;
  for (int d = 0; d < 4; ++d) linear = linear * dims[d] + index[d];
  return linear;
}

void WriteValues(const fs::path& path, const std::string& type, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  const bool bf16 = type == "bf16";
  std::vector<uint8_t> bytes(v.size() * (bf16 ? 2 : 4));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(v[i]);
    if (bf16) {
      const uint16_t half = static_cast<uint16_t>(bits >> 16);
      std::memcpy(bytes.data() + 2 * i, &half, 2);
    } else {
      std::memcpy(bytes.data() + 4 * i, &bits, 4);
    }
  }
  tpusim::isa::WriteNpy(path.string(), bf16 ? ElementType::kBF16 : ElementType::kF32, dims, bytes);
}

std::string DimsText(const std::vector<int64_t>& d) { return fmt::format("{}", fmt::join(d, ",")); }

void RunCase(const ConvCase& c) {
  INFO(c.name << " on " << c.preset);
  const fs::path dir = TempDir("conv_" + c.name + "_" + c.preset);
  const int64_t ho = c.h + c.pad_lo_h + c.pad_hi_h - (c.kh - 1) * c.dil_h;
  const int64_t wo = c.w + c.pad_lo_w + c.pad_hi_w - (c.kw - 1) * c.dil_w;
  const int64_t kin = c.depthwise ? 1 : c.cin;
  const std::vector<int64_t> in_dims = HloDims({c.b, c.h, c.w, c.cin}, c.in_pos);
  const std::vector<int64_t> k_dims = HloDims({c.kh, c.kw, kin, c.cout}, c.k_pos);
  const std::vector<int64_t> out_dims = HloDims({c.b, ho, wo, c.cout}, c.out_pos);
  auto count = [](const std::vector<int64_t>& d) { return d[0] * d[1] * d[2] * d[3]; };
  std::vector<float> in(count(in_dims)), k(count(k_dims));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = ValueAt(static_cast<int64_t>(i), 1);
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = ValueAt(static_cast<int64_t>(i), 2);
  WriteValues(dir / "in0.npy", c.type, in_dims, in);
  WriteValues(dir / "in1.npy", c.type, k_dims, k);
  const std::string groups = c.depthwise ? fmt::format(", feature_group_count={}", c.cin) : "";
  WriteText(dir / "m.hlo",
            fmt::format("HloModule m\n\nENTRY main {{\n  a = {0}[{1}]{2} parameter(0)\n  k = {0}[{3}] parameter(1)\n"
                        "  ROOT c = {0}[{4}]{5} convolution(a, k), window={{size={6}x{7} pad={8}_{9}x{10}_{11} "
                        "rhs_dilate={12}x{13}}}, dim_labels={14}{15}\n}}\n",
                        c.type, DimsText(in_dims), c.in_layout, DimsText(k_dims), DimsText(out_dims), c.out_layout, c.kh,
                        c.kw, c.pad_lo_h, c.pad_hi_h, c.pad_lo_w, c.pad_hi_w, c.dil_h, c.dil_w, c.labels, groups));
  RunOk("run " + (dir / "m.hlo").string() + " --config " + c.preset + " --check --out " +
        (dir / "out").string() + " --input 0=" + (dir / "in0.npy").string() + " --input 1=" +
        (dir / "in1.npy").string());
  const bool bf16 = c.type == "bf16";
  const tpusim::isa::NpyArray got =
      tpusim::isa::ReadNpy((dir / "out" / "output_0.npy").string(), bf16 ? ElementType::kBF16 : ElementType::kF32);
  REQUIRE(got.data.size() == static_cast<std::size_t>(count(out_dims) * (bf16 ? 2 : 4)));
  int64_t bad = 0;
  std::string first;
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t y = 0; y < ho; ++y) {
      for (int64_t x = 0; x < wo; ++x) {
        for (int64_t o = 0; o < c.cout; ++o) {
          double sum = 0;
          for (int64_t ky = 0; ky < c.kh; ++ky) {
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = y + ky * c.dil_h - c.pad_lo_h, ix = x + kx * c.dil_w - c.pad_lo_w;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              for (int64_t i = 0; i < kin; ++i) {
                const int64_t channel = c.depthwise ? o : i;
                sum += static_cast<double>(in[Linear(in_dims, c.in_pos, {b, iy, ix, channel})]) *
                       k[Linear(k_dims, c.k_pos, {ky, kx, i, o})];
              }
            }
          }
          const int64_t at = Linear(out_dims, c.out_pos, {b, y, x, o});
          uint32_t bits = 0;
          if (bf16) {
            uint16_t half = 0;
            std::memcpy(&half, got.data.data() + 2 * at, 2);
            bits = static_cast<uint32_t>(half) << 16;
          } else {
            std::memcpy(&bits, got.data.data() + 4 * at, 4);
          }
          if (std::bit_cast<float>(bits) != static_cast<float>(sum) && bad++ == 0) {
            first = fmt::format("[{},{},{},{}]: want {}, got {}", b, y, x, o, sum, std::bit_cast<float>(bits));
          }
        }
      }
    }
  }
  INFO(first);
  CHECK(bad == 0);
}

const std::vector<int> kB01f = {0, 1, 2, 3};
const std::vector<int> k01io = {0, 1, 2, 3};
const std::vector<int> k01oi = {0, 1, 3, 2};
const std::vector<int> kBf01 = {0, 2, 3, 1};
const std::vector<int> kOi01 = {2, 3, 1, 0};

}  // namespace

TEST_CASE("convolution: f32 b01f_01io on the MXUs with padding, rhs dilation and ragged features on tpu_v4", "[conv]") {
  RunCase({"mxu_small", "tpu_v4", "f32", 2, 6, 7, 20, 24, 3, 3, 1, 1, 0, 2, 1, 2, false, kB01f, k01io, kB01f,
           "b01f_01io->b01f", "", ""});
}

TEST_CASE("convolution: f32 b01f_01oi->b01f with layout {3,0,2,1} and two K blocks over the MXUs on tpu_v4", "[conv]") {
  RunCase({"mxu_isolated_like", "tpu_v4", "f32", 3, 5, 5, 130, 140, 3, 3, 1, 1, 1, 1, 1, 1, false, kB01f, k01oi, kB01f,
           "b01f_01oi->b01f", "{3,0,2,1}", "{3,0,2,1}"});
}

TEST_CASE("convolution: f32 on the 256x256 MXUs of tpu_v6e (two lane blocks per K block and per column block)", "[conv]") {
  RunCase({"mxu_v6e", "tpu_v6e", "f32", 2, 4, 6, 300, 260, 2, 3, 0, 1, 1, 1, 1, 1, false, kB01f, k01io, kB01f,
           "b01f_01io->b01f", "", ""});
}

TEST_CASE("convolution: depthwise bf16 bf01_oi01 on the VPU on tiny and tpu_v4", "[conv]") {
  RunCase({"depthwise_bf16", "tiny", "bf16", 2, 10, 12, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, true, kBf01, kOi01, kBf01,
           "bf01_oi01->bf01", "", ""});
  RunCase({"depthwise_f32", "tpu_v4", "f32", 1, 9, 20, 6, 6, 3, 2, 2, 0, 1, 1, 1, 2, true, kBf01, kOi01, kBf01,
           "bf01_oi01->bf01", "", ""});
}

TEST_CASE("convolution: strided depthwise and strided dilated convolutions are refused with the op named", "[conv]") {
  // compiler/passes/strided_convolution.h rewrites strided convolutions with one feature group
  // and no dilation; a depthwise one (feature_group_count = 4) and a dilated one stay strided.
  const fs::path dir = TempDir("conv_refuse");
  WriteText(dir / "m.hlo",
            "HloModule m\n\nENTRY main {\n  a = f32[1,8,8,4] parameter(0)\n  k = f32[3,3,1,4] parameter(1)\n"
            "  ROOT c = f32[1,3,3,4] convolution(a, k), window={size=3x3 stride=2x2}, dim_labels=b01f_01io->b01f, "
            "feature_group_count=4\n}\n");
  const std::string run = RunExpectingError("run " + (dir / "m.hlo").string() + " --config tpu_v4");
  CHECK_THAT(run, Catch::Contains("cannot lower convolution f32[1,3,3,4]") && Catch::Contains("window strides"));
  WriteText(dir / "dilated.hlo",
            "HloModule m\n\nENTRY main {\n  a = f32[1,9,9,4] parameter(0)\n  k = f32[3,3,4,4] parameter(1)\n"
            "  ROOT c = f32[1,3,3,4] convolution(a, k), window={size=3x3 stride=2x2 rhs_dilate=2x2}, "
            "dim_labels=b01f_01io->b01f\n}\n");
  CHECK_THAT(RunExpectingError("run " + (dir / "dilated.hlo").string() + " --config tpu_v4"),
             Catch::Contains("cannot lower convolution f32[1,3,3,4]") && Catch::Contains("window strides"));
  // tiny's 16x16 MXU is narrower than its 128-lane vregs: the MXU path is refused there.
  WriteText(dir / "tiny.hlo",
            "HloModule m\n\nENTRY main {\n  a = f32[1,8,8,4] parameter(0)\n  k = f32[3,3,4,4] parameter(1)\n"
            "  ROOT c = f32[1,6,6,4] convolution(a, k), window={size=3x3}, dim_labels=b01f_01io->b01f\n}\n");
  const std::string tiny = RunExpectingError("run " + (dir / "tiny.hlo").string() + " --config tiny");
  CHECK_THAT(tiny, Catch::Contains("instruction 'c': cannot lower convolution") &&
                              Catch::Contains("MXU shape 16x16 is not a multiple of the 128-lane vregs"));
}

TEST_CASE("convolution: strided convolutions run as stride-1 convolutions over space-to-depth images", "[conv]") {
  // compiler/passes/strided_convolution.h: a ResNet stem (7x7 stride 2, 3 features, padding 3), a
  // 3x3 stride-2 NCHW convolution with an oi01 kernel, a 1x1 stride-2 projection, and unequal
  // strides and window dims with asymmetric padding (3x2 window, strides 3 and 2), --check'd.
  const fs::path dir = TempDir("conv_strided");
  const char* modules[] = {
      "  x = f32[2,32,32,3] parameter(0)\n  k = f32[7,7,3,64] parameter(1)\n  ROOT y = f32[2,16,16,64] "
      "convolution(x, k), window={size=7x7 stride=2x2 pad=3_3x3_3}, dim_labels=b01f_01io->b01f\n",
      "  x = f32[4,64,15,15] parameter(0)\n  k = f32[128,64,3,3] parameter(1)\n  ROOT y = f32[4,128,7,7] "
      "convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=bf01_oi01->bf01\n",
      "  x = f32[2,28,28,64] parameter(0)\n  k = f32[1,1,64,128] parameter(1)\n  ROOT y = f32[2,14,14,128] "
      "convolution(x, k), window={size=1x1 stride=2x2}, dim_labels=b01f_01io->b01f\n",
      "  x = f32[1,17,20,8] parameter(0)\n  k = f32[3,2,8,16] parameter(1)\n  ROOT y = f32[1,6,10,16] "
      "convolution(x, k), window={size=3x2 stride=3x2 pad=1_0x0_1}, dim_labels=b01f_01io->b01f\n",
  };
  for (const char* body : modules) {
    INFO(body);
    WriteText(dir / "m.hlo", std::string("HloModule m\n\nENTRY main {\n") + body + "}\n");
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --config tpu_v4"), Catch::Contains("check passed"));
  }
}

TEST_CASE("convolution: the isolated_convolution and depthwise workloads pass --check on tpu_v4", "[conv][workload]") {
  for (const char* name : {"isolated_convolution.hlo", "depthwise_conv_3x3_1x256x56x56_bf16.hlo"}) {
    INFO(name);
    RunOk(std::string("run ") + TPUSIM_SHARED_DIR + "/workloads/xla/" + name + " --config tpu_v4 --check");
  }
}
