// Strided convolutions as stride-1 convolutions over space-to-depth images
// (compiler/passes/strided_convolution.h): HLO in, HLO out.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/strided_convolution.h"

namespace {

std::string Rewritten(const std::string& text) {
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  tpusim::compiler::RewriteStridedConvolutions(*module);
  tpusim::hlo::Verify(*module);
  return tpusim::hlo::ToString(*module);
}

}  // namespace

TEST_CASE("strided convolution: a 3x3 stride-2 convolution becomes a 2x2 one over 4x the features", "[strided_convolution]") {
  // H = W = 9 with padding 1_1: 11 rows, 5 outputs; whole strides and every output's window need
  // (5 - 1 + 2) x 2 = 12 rows, so the image is padded 1 low and 2 high, then [1,6,2,6,2,4] ->
  // [1,6,6,2,2,4] -> [1,6,6,16]. The kernel is padded to 4x4, [2,2,2,2,4,8] -> [2,2,2,2,4,8] ->
  // [2,2,16,8]. The stride-1 convolution gives 5x5 outputs: no slice; b01f needs no transposes.
  const std::string out = Rewritten(R"(HloModule sc

ENTRY e {
  x = f32[1,9,9,4] parameter(0)
  k = f32[3,3,4,8] parameter(1)
  ROOT y = f32[1,5,5,8] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
)");
  CHECK_THAT(out, Catch::Contains("f32[1,12,12,4] pad(x, y.s2d0), padding=0_0x1_2x1_2x0_0"));
  CHECK_THAT(out, Catch::Contains("f32[1,6,2,6,2,4] reshape(y.s2d1)"));
  CHECK_THAT(out, Catch::Contains("f32[1,6,6,2,2,4] transpose(y.s2d2), dimensions={0,1,3,2,4,5}"));
  CHECK_THAT(out, Catch::Contains("f32[1,6,6,16] reshape(y.s2d3)"));
  CHECK_THAT(out, Catch::Contains("f32[4,4,4,8] pad(k, y.s2d5), padding=0_1x0_1x0_0x0_0"));
  CHECK_THAT(out, Catch::Contains("f32[2,2,2,2,4,8] transpose(y.s2d7), dimensions={0,2,1,3,4,5}"));
  CHECK_THAT(out, Catch::Contains("f32[2,2,16,8] reshape(y.s2d8)"));
  CHECK_THAT(out, Catch::Contains("ROOT y.s2d10 = f32[1,5,5,8] convolution(y.s2d4, y.s2d9), window={size=2x2}, "
                                  "dim_labels=b01f_01io->b01f"));
  CHECK_THAT(out, !Catch::Contains("stride=") && !Catch::Contains("slice("));
}

TEST_CASE("strided convolution: other layouts go to canonical order and back, extra outputs are sliced", "[strided_convolution]") {
  // bf01 input and oi01 kernel: transposed to b01f and 01io; 7x7 inputs with a 3x3 window and
  // stride 2 (3 outputs) need 4 whole strides = 8 rows: the stride-1 convolution over 4x4 gives
  // 3x3 outputs. Unequal strides 3x1 and a 1-wide window elsewhere: a slice where they overshoot.
  const std::string out = Rewritten(R"(HloModule sc

ENTRY e {
  x = f32[2,4,7,7] parameter(0)
  k = f32[8,4,3,3] parameter(1)
  ROOT y = f32[2,8,3,3] convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=bf01_oi01->bf01
}
)");
  CHECK_THAT(out, Catch::Contains("f32[2,7,7,4] transpose(x), dimensions={0,2,3,1}"));
  CHECK_THAT(out, Catch::Contains("f32[3,3,4,8] transpose(k), dimensions={2,3,1,0}"));
  CHECK_THAT(out, Catch::Contains("f32[2,3,3,8] convolution("));
  CHECK_THAT(out, Catch::Contains("= f32[2,8,3,3] transpose(") && Catch::Contains("dimensions={0,3,1,2}"));
  const std::string sliced = Rewritten(R"(HloModule sc

ENTRY e {
  x = f32[1,10,5,2] parameter(0)
  k = f32[2,1,2,4] parameter(1)
  ROOT y = f32[1,3,5,4] convolution(x, k), window={size=2x1 stride=3x1}, dim_labels=b01f_01io->b01f
}
)");
  // 10 rows in strides of 3: 4 blocks; the window 2 -> 1 block: 4 outputs, 3 kept.
  CHECK_THAT(sliced, Catch::Contains("f32[1,12,5,2] pad(x,"));
  CHECK_THAT(sliced, Catch::Contains("f32[1,4,5,4] convolution("));
  CHECK_THAT(sliced, Catch::Contains("f32[1,3,5,4] slice(") && Catch::Contains("slice={[0:1], [0:3], [0:5], [0:4]}"));
}
