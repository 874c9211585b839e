// Batch norm as the ops it is made of (compiler/passes/batch_norm_expansion.h): HLO in, HLO out.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/batch_norm_expansion.h"

namespace {

std::string Expanded(const std::string& text) {
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  tpusim::compiler::ExpandBatchNorms(*module);
  tpusim::hlo::Verify(*module);
  return tpusim::hlo::ToString(*module);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("batch-norm expansion: inference folds scale and shift per feature, as XLA's expander", "[batch_norm]") {
  // s' = scale * rsqrt(var + epsilon) and the shift offset - mean * s' on the feature vectors,
  // then y = x * s' + shift with both broadcast along the feature dim (1).
  const std::string out = Expanded(R"(HloModule bn

ENTRY e {
  x = f32[2,3] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  m = f32[3] parameter(3)
  v = f32[3] parameter(4)
  ROOT y = f32[2,3] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1
}
)");
  CHECK(out == R"(HloModule bn

ENTRY e (x: f32[2,3], s: f32[3], o: f32[3], m: f32[3], v: f32[3]) -> f32[2,3] {
  x = f32[2,3] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  m = f32[3] parameter(3)
  v = f32[3] parameter(4)
  y.1 = f32[] constant(0.001)
  y.0 = f32[3] broadcast(y.1), dimensions={}
  y.2 = f32[3] add(v, y.0)
  y.3 = f32[3] rsqrt(y.2)
  y.4 = f32[3] multiply(s, y.3)
  y.5 = f32[3] multiply(m, y.4)
  y.6 = f32[3] subtract(o, y.5)
  y.7 = f32[2,3] broadcast(y.4), dimensions={1}
  y.8 = f32[2,3] multiply(x, y.7)
  y.9 = f32[2,3] broadcast(y.6), dimensions={1}
  ROOT y.10 = f32[2,3] add(y.8, y.9)
}
)");
}

TEST_CASE("batch-norm expansion: training and grad sum over every dim but the feature dim", "[batch_norm]") {
  // Training: sum(x) and sum(x * x) over dims {0,1,2} of an NHWC operand (feature 3), one add
  // computation per element type, shared; the result tuple (y, mean, var). Grad: sum(dy) and
  // sum(dy * (x - mean)). A batch norm inside a called computation is expanded too.
  const std::string out = Expanded(R"(HloModule bn

body {
  bx = f32[2,4,4,8] parameter(0)
  bs = f32[8] parameter(1)
  bm = f32[8] parameter(2)
  bv = f32[8] parameter(3)
  ROOT g = (f32[2,4,4,8], f32[8], f32[8]) batch-norm-grad(bx, bs, bm, bv, bx), epsilon=0.001, feature_index=3
}

ENTRY e {
  x = f32[2,4,4,8] parameter(0)
  s = f32[8] parameter(1)
  o = f32[8] parameter(2)
  t = (f32[2,4,4,8], f32[8], f32[8]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=3
  m = f32[8] get-tuple-element(t), index=1
  v = f32[8] get-tuple-element(t), index=2
  c = (f32[2,4,4,8], f32[8], f32[8]) call(x, s, m, v), to_apply=body
  ROOT r = ((f32[2,4,4,8], f32[8], f32[8]), (f32[2,4,4,8], f32[8], f32[8])) tuple(t, c)
}
)");
  CHECK(Count(out, "batch-norm") == 0);
  CHECK(Count(out, "batch_norm.add.f32 (") == 1);  // the add computation, once
  CHECK(Count(out, "reduce(") == 4);
  CHECK(Count(out, "dimensions={0,1,2}, to_apply=batch_norm.add.f32") == 4);
  CHECK(Count(out, "rsqrt(") == 2);
  // The tuples replace the ops: the get-tuple-elements and the root read them.
  CHECK_THAT(out, Catch::Contains("t.25 = (f32[2,4,4,8], f32[8], f32[8]) tuple(t.24, t.4, t.12)"));
  CHECK_THAT(out, Catch::Contains("m = f32[8] get-tuple-element(t.25), index=1"));
  CHECK_THAT(out, Catch::Contains("ROOT g.27 = (f32[2,4,4,8], f32[8], f32[8]) tuple(g.26, g.11, g.6)"));
}

TEST_CASE("batch-norm expansion: a feature_index outside the operand is an error naming the op", "[batch_norm]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule bn

ENTRY e {
  x = f32[2,3] parameter(0)
  s = f32[3] parameter(1)
  ROOT y = f32[2,3] batch-norm-inference(x, s, s, s, s), epsilon=0.001, feature_index=1
}
)", "test.hlo");
  module->entry()->root()->mutable_attributes().back().value = int64_t{2};
  CHECK_THROWS_WITH(tpusim::compiler::ExpandBatchNorms(*module),
                    Catch::Contains("feature_index 2 is not a dim of f32[2,3]") && Catch::Contains("test.hlo:6"));
}
