// The evaluator driven by HLO text: dispatch of each op family, control flow, devices and
// collectives, custom-calls, errors, and the real workloads. Kernel semantics are tested op by op
// in the other eval_*_test.cc files; here the expected values are again the documents' own.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/eval/evaluator.h"
#include "compiler/eval/literal_util.h"
#include "compiler/hlo/parser.h"
#include "isa/error.h"

using namespace tpusim;
using eval::ToDoubles;
using hlo::Literal;
using isa::ElementType;

namespace {

std::unique_ptr<hlo::Module> Parse(const std::string& text) { return hlo::ParseModule(text, "test.hlo"); }

Literal Run(const std::string& text, std::vector<Literal> args = {}) {
  return eval::Evaluate(*Parse(text), args);
}

}  // namespace

TEST_CASE("seed 003 reduce: the (4,2,3) array of 1..6 copied 4 times", "[eval][module]") {
  const std::string module = R"(
HloModule reduce
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,2,3] parameter(0)
  zero = f32[] constant(0)
  r0 = f32[2,3] reduce(x, zero), dimensions={0}, to_apply=add
  r2 = f32[4,2] reduce(x, zero), dimensions={2}, to_apply=add
  r01 = f32[3] reduce(x, zero), dimensions={0,1}, to_apply=add
  all = f32[] reduce(x, zero), dimensions={0,1,2}, to_apply=add
  ROOT t = (f32[2,3], f32[4,2], f32[3], f32[]) tuple(r0, r2, r01, all)
})";
  std::vector<double> values;
  for (int copy = 0; copy < 4; ++copy) {
    for (double v : {1, 2, 3, 4, 5, 6}) values.push_back(v);
  }
  const Literal result = Run(module, {Literal::FromDoubles(ElementType::kF32, {4, 2, 3}, values)});
  // The seed's results: |4 8 12; 16 20 24|, |6 15| four times, |20 28 36|, 84.
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{4, 8, 12, 16, 20, 24});
  CHECK(ToDoubles(result.elements()[1]) == std::vector<double>{6, 15, 6, 15, 6, 15, 6, 15});
  CHECK(ToDoubles(result.elements()[2]) == std::vector<double>{20, 28, 36});
  CHECK(ToDoubles(result.elements()[3]) == std::vector<double>{84});
}

TEST_CASE("seed 003 while: 1000 iterations add a constant vector", "[eval][module]") {
  // init = {0, zero_vector[10]}; while (result(0) < 1000) result = {result(0) + 1, result(1) + c}.
  const std::string module = R"(
HloModule loop
cond {
  p = (s32[], f32[10]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  limit = s32[] constant(1000)
  ROOT lt = pred[] compare(i, limit), direction=LT
}
body {
  p = (s32[], f32[10]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  v = f32[10] get-tuple-element(p), index=1
  one = s32[] constant(1)
  next = s32[] add(i, one)
  c = f32[10] constant({0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5})
  sum = f32[10] add(v, c)
  ROOT t = (s32[], f32[10]) tuple(next, sum)
}
ENTRY main {
  zero = s32[] constant(0)
  z = f32[] constant(0)
  vec = f32[10] broadcast(z), dimensions={}
  init = (s32[], f32[10]) tuple(zero, vec)
  ROOT w = (s32[], f32[10]) while(init), condition=cond, body=body
})";
  const Literal result = Run(module);
  CHECK(result.elements()[0].GetInt(0) == 1000);
  CHECK(ToDoubles(result.elements()[1]) == std::vector<double>(10, 500.0));  // 1000 * 0.5, exact
}

TEST_CASE("while.hlo: a condition false at once returns the init value", "[eval][module]") {
  std::ifstream in(std::string(TPUSIM_SHARED_DIR) + "/workloads/xla/while.hlo");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const Literal init = eval::ScalarInt(ElementType::kS64, 7);
  // cond is arg < arg: false, so the body (arg + arg) never runs.
  CHECK(Run(text.str(), {init}).GetInt(0) == 7);
}

TEST_CASE("call, fusion, conditional and map", "[eval][module]") {
  const std::string module = R"(
HloModule control
double_it {
  x = f32[3] parameter(0)
  ROOT y = f32[3] add(x, x)
}
negate_it {
  x = f32[3] parameter(0)
  ROOT y = f32[3] negate(x)
}
square {
  a = f32[] parameter(0)
  ROOT b = f32[] multiply(a, a)
}
ENTRY main {
  x = f32[3] parameter(0)
  c = f32[3] call(x), to_apply=double_it
  f = f32[3] fusion(c), kind=kLoop, calls=negate_it
  t = pred[] constant(true)
  k = f32[3] conditional(t, x, x), true_computation=double_it, false_computation=negate_it
  i = s32[] constant(7)
  b = f32[3] conditional(i, x, x), branch_computations={double_it, negate_it}
  m = f32[3] map(x), dimensions={0}, to_apply=square
  ROOT r = (f32[3], f32[3], f32[3], f32[3]) tuple(f, k, b, m)
})";
  const Literal result = Run(module, {Literal::FromDoubles(ElementType::kF32, {3}, {1, 2, 3})});
  CHECK(ToDoubles(result.elements()[0]) == std::vector<double>{-2, -4, -6});
  CHECK(ToDoubles(result.elements()[1]) == std::vector<double>{2, 4, 6});
  // XLA: a branch index out of range runs the last branch.
  CHECK(ToDoubles(result.elements()[2]) == std::vector<double>{-1, -2, -3});
  CHECK(ToDoubles(result.elements()[3]) == std::vector<double>{1, 4, 9});
}

TEST_CASE("conditional: branch k takes operand k + 1 alone", "[eval][module]") {
  // The branches read different operands of different shapes: the false branch must see the
  // tuple y, not w.
  const std::string module = R"(
HloModule branches
negate_w {
  w = f32[3] parameter(0)
  ROOT n = f32[3] negate(w)
}
first_of_y {
  y = (f32[3], s32[]) parameter(0)
  ROOT g = f32[3] get-tuple-element(y), index=0
}
ENTRY main {
  p = pred[] parameter(0)
  w = f32[3] parameter(1)
  v = f32[3] parameter(2)
  s = s32[] parameter(3)
  y = (f32[3], s32[]) tuple(v, s)
  ROOT r = f32[3] conditional(p, w, y), true_computation=negate_w, false_computation=first_of_y
}
)";
  for (const bool predicate : {false, true}) {
    std::vector<Literal> args;
    args.push_back(Literal::FromDoubles(ElementType::kPred, {}, {predicate ? 1.0 : 0.0}));
    args.push_back(Literal::FromDoubles(ElementType::kF32, {3}, {1, 2, 3}));
    args.push_back(Literal::FromDoubles(ElementType::kF32, {3}, {4, 5, 6}));
    args.push_back(Literal::FromDoubles(ElementType::kS32, {}, {9}));
    CHECK(ToDoubles(Run(module, args)) == (predicate ? std::vector<double>{-1, -2, -3} : std::vector<double>{4, 5, 6}));
  }
}

TEST_CASE("sort with a generic comparator and a known one agree", "[eval][module]") {
  // The comparator of the argsort workload: NaN and -0 canonicalised, then TOTALORDER LT.
  const std::string module = R"(
HloModule sorts
generic {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  zero = f32[] constant(0)
  eqa = pred[] compare(a, zero), direction=EQ
  ca = f32[] select(eqa, zero, a)
  eqb = pred[] compare(b, zero), direction=EQ
  cb = f32[] select(eqb, zero, b)
  ROOT lt = pred[] compare(ca, cb), direction=LT, type=TOTALORDER
}
known {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[6] parameter(0)
  i = s32[6] iota(), iota_dimension=0
  g = (f32[6], s32[6]) sort(x, i), dimensions={0}, is_stable=true, to_apply=generic
  k = (f32[6], s32[6]) sort(x, i), dimensions={0}, is_stable=true, to_apply=known
  gi = s32[6] get-tuple-element(g), index=1
  ki = s32[6] get-tuple-element(k), index=1
  ROOT r = (s32[6], s32[6]) tuple(gi, ki)
})";
  const Literal result =
      Run(module, {Literal::FromDoubles(ElementType::kF32, {6}, {3, -1, 0, 2, -0.0, -5})});
  // Ascending: -5 (5), -1 (1), 0 (2), -0 (4; equal to 0 after canonicalising, stable), 2 (3), 3 (0).
  CHECK(eval::ToInts(result.elements()[0]) == std::vector<int64_t>{5, 1, 2, 4, 3, 0});
  CHECK(eval::ToInts(result.elements()[1]) == std::vector<int64_t>{5, 1, 2, 4, 3, 0});
}

TEST_CASE("collectives run over replica_count devices in lockstep", "[eval][module]") {
  const std::string module = R"(
HloModule collectives, replica_count=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  id = u32[] replica-id()
  f = f32[] convert(id)
  v = f32[2] broadcast(f), dimensions={}
  all = f32[2] all-reduce(v), replica_groups={}, to_apply=add
  pairs = f32[2] all-reduce(v), replica_groups={{0,1},{2,3}}, to_apply=add
  gathered = f32[8] all-gather(v), replica_groups={}, dimensions={0}
  shifted = f32[2] collective-permute(v), source_target_pairs={{0,1},{1,2},{2,3}}
  ROOT r = (f32[2], f32[2], f32[8], f32[2]) tuple(all, pairs, gathered, shifted)
})";
  const auto module_ir = Parse(module);
  const eval::EvaluationResult result = eval::EvaluateModule(*module_ir, {});
  REQUIRE(result.device_results.size() == 4);
  for (int r = 0; r < 4; ++r) {
    INFO("replica " << r);
    const auto& value = result.device_results[r].elements();
    CHECK(ToDoubles(value[0]) == std::vector<double>{6, 6});  // 0+1+2+3
    const double pair_sum = r < 2 ? 1 : 5;                    // 0+1, 2+3
    CHECK(ToDoubles(value[1]) == std::vector<double>{pair_sum, pair_sum});
    CHECK(ToDoubles(value[2]) == std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3});
    const double from = r == 0 ? 0 : r - 1;  // replica 0 is no pair's target: zeros
    CHECK(ToDoubles(value[3]) == std::vector<double>{from, from});
  }
}

TEST_CASE("custom-calls that annotate pass values through, unknown ones are errors", "[eval][module]") {
  const std::string module = R"(
HloModule calls
ENTRY main {
  x = f32[2] parameter(0)
  s = f32[2] custom-call(x), custom_call_target="Sharding", sharding={replicated}
  h = f32[2] custom-call(s), custom_call_target="MoveToHost"
  ROOT d = f32[2] custom-call(h), custom_call_target="MoveToDevice"
})";
  const Literal x = Literal::FromDoubles(ElementType::kF32, {2}, {1.5, -2});
  CHECK(Run(module, {x}) == x);
  const std::string unknown = R"(
HloModule calls
ENTRY main {
  x = f32[2] parameter(0)
  ROOT y = f32[2] custom-call(x), custom_call_target="my_kernel"
})";
  CHECK_THROWS_WITH(Run(unknown, {x}), Catch::Contains("test.hlo:5:8: instruction 'y'") &&
                                           Catch::Contains("unknown custom-call target \"my_kernel\""));
}

TEST_CASE("evaluator errors name the problem", "[eval][module]") {
  const std::string module = R"(
HloModule m
ENTRY main {
  x = f32[2] parameter(0)
  ROOT y = f32[2] negate(x)
})";
  CHECK_THROWS_WITH(Run(module, {}), Catch::Contains("takes 1 parameters, got 0 arguments"));
  CHECK_THROWS_WITH(Run(module, {Literal::FromDoubles(ElementType::kF32, {3}, {1, 2, 3})}),
                    Catch::Contains("argument 0 has shape f32[3], the parameter is f32[2]"));
  const std::string forever = R"(
HloModule m
cond {
  p = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  ROOT p = s32[] parameter(0)
}
ENTRY main {
  z = s32[] constant(0)
  ROOT w = s32[] while(z), condition=cond, body=body
})";
  eval::EvaluatorOptions options;
  options.max_while_iterations = 1000;
  CHECK_THROWS_WITH(eval::Evaluate(*Parse(forever), {}, options),
                    Catch::Contains("ran 1000 iterations, more than the evaluator's limit"));
}

TEST_CASE("rng is deterministic from the seed", "[eval][module]") {
  const std::string module = R"(
HloModule m
ENTRY main {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  ROOT r = f32[64] rng(lo, hi), distribution=rng_uniform
})";
  const auto ir = Parse(module);
  eval::EvaluatorOptions a, b, c;
  a.seed = b.seed = 42;
  c.seed = 43;
  const Literal ra = eval::Evaluate(*ir, {}, a);
  CHECK(ra == eval::Evaluate(*ir, {}, b));
  CHECK_FALSE(ra == eval::Evaluate(*ir, {}, c));
  for (double v : ToDoubles(ra)) CHECK((v >= 0 && v < 1));
}
