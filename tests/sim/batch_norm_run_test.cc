// End-to-end tests of the batch-norm ops (compiler/passes/batch_norm_expansion.h: expanded as
// XLA's BatchNormExpander writes them, then lowered as reduces, broadcasts and element-wise
// kernels): `tpusim run --check` against the reference evaluator, which computes them whole in
// double, within the bound sim/output_check.cc states for them.
#include <catch2/catch.hpp>

#include <string>

#include <fmt/format.h>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

}  // namespace

TEST_CASE("tpusim run --check: batch-norm training, inference and grad, NHWC and NCHW, f32 and bf16", "[sim][batch_norm]") {
  struct Case {
    const char* name;
    const char* type;
    const char* dims;
    int64_t feature;
    int64_t features;  // the feature dim's size
  };
  // MobileNet-like NHWC activations (feature 3), and NCHW (feature 1, the features on rows).
  const Case cases[] = {{"nhwc_f32", "f32", "8,14,14,64", 3, 64}, {"nchw_f32", "f32", "4,32,10,10", 1, 32},
                        {"nhwc_bf16", "bf16", "16,28,28,32", 3, 32}};
  for (const Case& c : cases) {
    INFO(c.name);
    const fs::path dir = TempDir(std::string("batch_norm_") + c.name);
    const std::string x = fmt::format("{}[{}]", c.type, c.dims);
    const std::string v = fmt::format("{}[{}]", c.type, c.features);
    const std::string attributes = fmt::format("epsilon=0.001, feature_index={}", c.feature);
    WriteText(dir / "training.hlo",
              fmt::format("HloModule t\nENTRY e {{\n  x = {0} parameter(0)\n  s = {1} parameter(1)\n  o = {1} parameter(2)\n"
                          "  ROOT t = ({0}, {1}, {1}) batch-norm-training(x, s, o), {2}\n}}\n",
                          x, v, attributes));
    // The inference's variance from a training: random inputs would give negative variances.
    WriteText(dir / "inference.hlo",
              fmt::format("HloModule i\nENTRY e {{\n  x = {0} parameter(0)\n  s = {1} parameter(1)\n  o = {1} parameter(2)\n"
                          "  t = ({0}, {1}, {1}) batch-norm-training(x, s, o), {2}\n  m = {1} get-tuple-element(t), index=1\n"
                          "  var = {1} get-tuple-element(t), index=2\n"
                          "  ROOT y = {0} batch-norm-inference(x, s, o, m, var), {2}\n}}\n",
                          x, v, attributes));
    WriteText(dir / "grad.hlo",
              fmt::format("HloModule g\nENTRY e {{\n  x = {0} parameter(0)\n  s = {1} parameter(1)\n  o = {1} parameter(2)\n"
                          "  dy = {0} parameter(3)\n  t = ({0}, {1}, {1}) batch-norm-training(x, s, o), {2}\n"
                          "  m = {1} get-tuple-element(t), index=1\n  var = {1} get-tuple-element(t), index=2\n"
                          "  ROOT g = ({0}, {1}, {1}) batch-norm-grad(x, s, m, var, dy), {2}\n}}\n",
                          x, v, attributes));
    for (const char* module : {"training.hlo", "inference.hlo", "grad.hlo"}) {
      INFO(module);
      CHECK_THAT(RunOk("run " + (dir / module).string() + " --check --seed 5"), Catch::Contains("check passed"));
    }
  }
}

TEST_CASE("batch-norm training's check bound is the sum bound of its features' element count", "[sim][batch_norm]") {
  // 8 x 14 x 14 = 1568 elements per feature: 2 x 1568 f32 ulps, or 2 x 1568^2 x 2^-24 absolute.
  const fs::path dir = TempDir("batch_norm_bound");
  WriteText(dir / "m.hlo", "HloModule t\nENTRY e {\n  x = f32[8,14,14,64] parameter(0)\n  s = f32[64] parameter(1)\n"
                           "  o = f32[64] parameter(2)\n  ROOT t = (f32[8,14,14,64], f32[64], f32[64]) "
                           "batch-norm-training(x, s, o), epsilon=0.001, feature_index=3\n}\n");
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check"),
             Catch::Contains("check passed: 3 output(s) within 3136 ulp of the reference evaluator (batch-norm-training "
                             "'t' sums 1568 elements per feature in f32 (XLA's expansion) where the evaluator sums in double"));
}

TEST_CASE("element-wise fusion leaves an array that a broadcast reads to a kernel of its own", "[sim][fusion]") {
  // m is read by a [32] subtract and by a broadcast into [4,32,10,10]: a broadcast of an array
  // loads its operand from HBM, so m cannot be computed only inside the broadcast's group (it
  // was duplicated into it: "broadcast 'bm' of a non-scalar that is not a kernel operand").
  const fs::path dir = TempDir("fusion_broadcast_operand");
  WriteText(dir / "m.hlo", "HloModule fb\nENTRY e {\n  x = f32[4,32,10,10] parameter(0)\n  a = f32[32] parameter(1)\n"
                           "  b = f32[32] parameter(2)\n  m = f32[32] multiply(a, b)\n  s = f32[32] subtract(a, m)\n"
                           "  bm = f32[4,32,10,10] broadcast(m), dimensions={1}\n"
                           "  bs = f32[4,32,10,10] broadcast(s), dimensions={1}\n  xm = f32[4,32,10,10] multiply(x, bm)\n"
                           "  ROOT y = f32[4,32,10,10] add(xm, bs)\n}\n");
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check"),
             Catch::Contains("check passed: 1 output(s) within 0 ulp") && Catch::Contains("every element equal"));
}
