// The --check comparison (sim/output_check.h): bit-exact families allow no difference, not even
// between -0 and +0 (0 ulps apart); bounded families allow their ulps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "compiler/hlo/literal.h"
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

}  // namespace
}  // namespace tpusim::sim
