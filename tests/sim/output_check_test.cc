// The --check comparison (sim/output_check.h): bit-exact families allow no difference, not even
// between -0 and +0 (0 ulps apart); bounded families allow their ulps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "sim/output_check.h"

namespace tpusim::sim {
namespace {

isa::NpyArray F32(std::vector<float> values) {
  isa::NpyArray array{isa::ElementType::kF32, {static_cast<int64_t>(values.size())}, {}};
  array.data.resize(values.size() * 4);
  std::memcpy(array.data.data(), values.data(), array.data.size());
  return array;
}

TEST_CASE("tpusim run --check's exact families tell -0 from +0, its bounded ones allow their ulps", "[check]") {
  const hlo::Literal expected = hlo::Literal::FromDoubles(isa::ElementType::kF32, {3}, {-0.0, 1.0, 2.0});
  const std::vector<isa::NpyArray> sign_flipped = {F32({0.0f, 1.0f, 2.0f})};
  const CheckResult exact = CompareOutputs({&expected}, sign_flipped, CheckBound{});
  CHECK_FALSE(exact.ok);
  CHECK(exact.mismatches == 1);
  CHECK(exact.worst_ulps == 0);  // the ulp distance alone would not have caught it
  // A 1-ulp family accepts the same output: its bound is in ulps.
  const CheckResult one_ulp = CompareOutputs({&expected}, sign_flipped, CheckBound{1, 0, "reduce"});
  CHECK(one_ulp.ok);
  // Equal bits pass everywhere; one ulp off fails the exact family.
  CHECK(CompareOutputs({&expected}, {F32({-0.0f, 1.0f, 2.0f})}, CheckBound{}).ok);
  CHECK_FALSE(CompareOutputs({&expected}, {F32({-0.0f, std::nextafter(1.0f, 2.0f), 2.0f})}, CheckBound{}).ok);
}

TEST_CASE("tpusim run --check: a bound in f32 ulps allows a bf16 output one flip plus its scaled share", "[check]") {
  // 2048 f32 ulps of relative error are 2048 / 2^16 of a bf16 ulp (7 stored mantissa bits to
  // f32's 23), and rounding to bf16 can flip one more: 2. f16 (10 bits): 1 + 2048 / 2^13 = 2.
  const CheckBound sum{2048, 0, "sum"};
  CHECK(UlpsFor(sum, isa::ElementType::kF32) == 2048);
  CHECK(UlpsFor(sum, isa::ElementType::kBF16) == 2);
  CHECK(UlpsFor(sum, isa::ElementType::kF16) == 2);
  CHECK(UlpsFor(CheckBound{65537, 0, "sum"}, isa::ElementType::kBF16) == 3);
  CHECK(UlpsFor(CheckBound{}, isa::ElementType::kBF16) == 0);  // exact stays exact
  // bf16 1.0 is 0x3f80: two ulps up (0x3f82) pass that bound, three (0x3f83) do not.
  const hlo::Literal one = hlo::Literal::FromDoubles(isa::ElementType::kBF16, {1}, {1.0});
  const auto bf16 = [](uint16_t bits) {
    isa::NpyArray array{isa::ElementType::kBF16, {1}, {}};
    array.data = {static_cast<uint8_t>(bits & 0xff), static_cast<uint8_t>(bits >> 8)};
    return array;
  };
  CHECK(CompareOutputs({&one}, {bf16(0x3f82)}, sum).ok);
  CHECK_FALSE(CompareOutputs({&one}, {bf16(0x3f83)}, sum).ok);
}

TEST_CASE("tpusim run --check bounds each output by what it is computed from: an element-wise output stays exact "
          "beside a large dot", "[check]") {
  // Issue 21: one bound for the whole module let the dot's K = 4096 (8192 f32 ulps) loosen the
  // element-wise output too, so a kernel one ulp off there passed. Output 0 is the dot's, output 1
  // an add of the parameters alone, output 2 an add of the dot's result (its rounding errors
  // flow into it), and output 3 a while loop's result whose body reduces (the loop's
  // computations count).
  const auto module = hlo::ParseModule(R"(HloModule m
sum {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
cond {
  c = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  b = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[8] get-tuple-element(b), index=1
  zero = f32[] constant(0)
  r = f32[] reduce(v, zero), dimensions={0}, to_apply=sum
  rb = f32[8] broadcast(r), dimensions={}
  ROOT t = (s32[], f32[8]) tuple(j, rb)
}
ENTRY e {
  a = f32[8,4096] parameter(0)
  w = f32[4096,8] parameter(1)
  x = f32[8,8] parameter(2)
  d = f32[8,8] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  add = f32[8,8] add(x, x)
  after = f32[8,8] add(d, x)
  z = s32[] constant(0)
  v = f32[8] parameter(3)
  init = (s32[], f32[8]) tuple(z, v)
  loop = (s32[], f32[8]) while(init), condition=cond, body=body
  out = f32[8] get-tuple-element(loop), index=1
  ROOT o = (f32[8,8], f32[8,8], f32[8,8], f32[8]) tuple(d, add, after, out)
}
)",
                                      "bounds.hlo");
  const std::vector<CheckBound> bounds = BoundsFor(compiler::OutputAccumulations(*module));
  REQUIRE(bounds.size() == 4);
  CHECK(bounds[0].max_ulps == 2 * 4096);
  CHECK(bounds[1].max_ulps == 0);
  CHECK(bounds[1].max_abs == 0);
  CHECK(bounds[2].max_ulps == 2 * 4096);
  CHECK(bounds[3].max_ulps == 2 * 8);  // the body's reduce of 8 elements
  // One ulp planted in the add's output fails; the same in the dot's passes.
  const hlo::Literal want = hlo::Literal::FromDoubles(isa::ElementType::kF32, {2}, {1.0, 2.0});
  const isa::NpyArray exact = F32({1.0f, 2.0f});
  const isa::NpyArray one_ulp_off = F32({std::nextafter(1.0f, 2.0f), 2.0f});
  const std::vector<CheckBound> dot_then_add = {bounds[0], bounds[1]};
  CHECK_FALSE(CompareOutputs({&want, &want}, {exact, one_ulp_off}, dot_then_add).ok);
  CHECK(CompareOutputs({&want, &want}, {one_ulp_off, exact}, dot_then_add).ok);
}

}  // namespace
}  // namespace tpusim::sim
