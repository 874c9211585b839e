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
  // A 1-ulp family (a compensated add-reduce) accepts the same output: its bound is in ulps.
  const CheckResult one_ulp = CompareOutputs({&expected}, sign_flipped, CheckBound{1, 0, "reduce"});
  CHECK(one_ulp.ok);
  // Equal bits pass everywhere; one ulp off fails the exact family.
  CHECK(CompareOutputs({&expected}, {F32({-0.0f, 1.0f, 2.0f})}, CheckBound{}).ok);
  CHECK_FALSE(CompareOutputs({&expected}, {F32({-0.0f, std::nextafter(1.0f, 2.0f), 2.0f})}, CheckBound{}).ok);
}

}  // namespace
}  // namespace tpusim::sim
