// A few of XLA's algebraic simplifications (compiler/passes/algebraic_simplifier.h): HLO in, HLO out.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/algebraic_simplifier.h"

namespace {

std::string Simplified(const std::string& text) {
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  tpusim::compiler::SimplifyAlgebraically(*module);
  tpusim::hlo::Verify(*module);
  return tpusim::hlo::ToString(*module);
}

}  // namespace

TEST_CASE("algebraic simplifier: identity broadcasts, transposes and reshapes read their operand", "[algebraic_simplifier]") {
  // The attention block's softmax: m [1,12,128] -> reshape [1,12,128,1] -> identity broadcast ->
  // reshape [1,12,128] -> broadcast along the rows. Both reshapes and the identity broadcast go:
  // the row broadcast reads m.
  const std::string out = Simplified(R"(HloModule s

ENTRY e {
  x = f32[1,12,128,128] parameter(0)
  m = f32[1,12,128] parameter(1)
  r = f32[1,12,128,1] reshape(m)
  b = f32[1,12,128,1] broadcast(r), dimensions={0,1,2,3}
  q = f32[1,12,128] reshape(b)
  w = f32[1,12,128,128] broadcast(q), dimensions={0,1,2}
  t = f32[1,12,128,128] transpose(x), dimensions={0,1,2,3}
  ROOT s = f32[1,12,128,128] subtract(t, w)
}
)");
  CHECK(out == R"(HloModule s

ENTRY e (x: f32[1,12,128,128], m: f32[1,12,128]) -> f32[1,12,128,128] {
  x = f32[1,12,128,128] parameter(0)
  m = f32[1,12,128] parameter(1)
  w = f32[1,12,128,128] broadcast(m), dimensions={0,1,2}
  ROOT s = f32[1,12,128,128] subtract(x, w)
}
)");
}

TEST_CASE("algebraic simplifier: an op that changes the layout, or the dims, stays", "[algebraic_simplifier]") {
  // A same-dims transpose into another layout moves bytes; a real transpose and a broadcast that
  // permutes dims are not identities.
  const std::string text = R"(HloModule s

ENTRY e (x: f32[8,128], y: f32[128,128]) -> (f32[8,128], f32[128,128], f32[128,128]) {
  x = f32[8,128]{1,0} parameter(0)
  y = f32[128,128]{1,0} parameter(1)
  c = f32[8,128]{0,1} reshape(x)
  t = f32[128,128]{1,0} transpose(y), dimensions={1,0}
  b = f32[128,128]{1,0} broadcast(y), dimensions={1,0}
  ROOT r = (f32[8,128]{0,1}, f32[128,128]{1,0}, f32[128,128]{1,0}) tuple(c, t, b)
}
)";
  const std::string out = Simplified(text);
  CHECK_THAT(out, Catch::Contains("c = f32[8,128]{0,1} reshape(x)"));
  CHECK_THAT(out, Catch::Contains("transpose(y), dimensions={1,0}"));
  CHECK_THAT(out, Catch::Contains("broadcast(y), dimensions={1,0}"));
}

TEST_CASE("algebraic simplifier: a squeeze of a transpose is the transpose of the squeezed operand", "[algebraic_simplifier]") {
  // The attention block's K^T: [1,12,128,64] transposed to [1,12,64,128], then [12,64,128]. As a
  // transpose of the [12,128,64] reshape of k, the dot reading it folds it (dot_transpose_folding.h).
  const std::string out = Simplified(R"(HloModule s

ENTRY e {
  k = bf16[1,12,128,64] parameter(0)
  t = bf16[1,12,64,128] transpose(k), dimensions={0,1,3,2}
  ROOT q = bf16[12,64,128] reshape(t)
}
)");
  CHECK(out == R"(HloModule s

ENTRY e (k: bf16[1,12,128,64]) -> bf16[12,64,128] {
  k = bf16[1,12,128,64] parameter(0)
  q.squeezed = bf16[12,128,64] reshape(k)
  ROOT q.transpose = bf16[12,64,128] transpose(q.squeezed), dimensions={0,2,1}
}
)");
}

TEST_CASE("algebraic simplifier: a maximum with -inf and a minimum with +inf are their other operand", "[algebraic_simplifier]") {
  const std::string out = Simplified(R"(HloModule s

ENTRY e {
  x = bf16[12,128] parameter(0)
  ni = bf16[] constant(-inf)
  nb = bf16[12,128] broadcast(ni), dimensions={}
  m = bf16[12,128] maximum(x, nb)
  pi = bf16[] constant(inf)
  pi.b = bf16[12,128] broadcast(pi), dimensions={}
  n = bf16[12,128] minimum(pi.b, m)
  q = bf16[12,128] maximum(x, pi.b)
  ROOT r = (bf16[12,128], bf16[12,128]) tuple(n, q)
}
)");
  // n is x; q (a maximum with +inf) is not an identity and stays.
  CHECK_THAT(out, Catch::Contains("ROOT r = (bf16[12,128], bf16[12,128]) tuple(x, q)"));
  CHECK_THAT(out, Catch::Contains("q = bf16[12,128] maximum(x, pi.b)"));
  CHECK_THAT(out, !Catch::Contains("minimum(") && !Catch::Contains("constant(-inf)"));
}

TEST_CASE("algebraic simplifier: a convert read only by a reshape or a broadcast goes after it", "[algebraic_simplifier]") {
  // The attention block's row sums: f32 -> bf16, reshaped, broadcast along the rows, read by a
  // divide. The convert moves after the reshape and then after the broadcast: the divide's kernel
  // converts, and no kernel of its own rounds the sums. A convert with another reader stays.
  const std::string out = Simplified(R"(HloModule s

ENTRY e {
  x = bf16[12,128,128] parameter(0)
  r = f32[12,128] parameter(1)
  c = bf16[12,128] convert(r)
  q = bf16[12,128,1] reshape(c)
  b = bf16[12,128,128] broadcast(c), dimensions={0,1}
  d = bf16[12,128,128] divide(x, b)
  k = bf16[12,128] convert(r)
  kb = bf16[12,128,128] broadcast(k), dimensions={0,1}
  ROOT t = (bf16[12,128,128], bf16[12,128,1], bf16[12,128,128], bf16[12,128]) tuple(d, q, kb, k)
}
)");
  // c has two readers (q, b): it stays; k has two (kb, the tuple): it stays too.
  CHECK_THAT(out, Catch::Contains("c = bf16[12,128] convert(r)") && Catch::Contains("k = bf16[12,128] convert(r)"));
  const std::string sunk = Simplified(R"(HloModule s

ENTRY e {
  x = bf16[12,128,128] parameter(0)
  r = f32[12,128] parameter(1)
  c = bf16[12,128] convert(r)
  q = bf16[12,128,1] reshape(c)
  p = bf16[12,128] reshape(q)
  b = bf16[12,128,128] broadcast(p), dimensions={0,1}
  ROOT d = bf16[12,128,128] divide(x, b)
}
)");
  CHECK_THAT(sunk, Catch::Contains("f32[12,128,128] broadcast(r), dimensions={0,1}"));
  CHECK_THAT(sunk, Catch::Contains("bf16[12,128,128] convert(") && Catch::Contains("ROOT d = bf16[12,128,128] divide(x, "));
  CHECK_THAT(sunk, !Catch::Contains("bf16[12,128] convert(") && !Catch::Contains("reshape("));
}

TEST_CASE("algebraic simplifier: an integer compared with itself is a constant, a float is not", "[algebraic_simplifier]") {
  // XLA's rule: y == y, y >= y, y <= y are true and y != y, y > y, y < y false for integers and
  // preds; for floats NaN != NaN, so those stay. (A loop condition `i == i` is then constant.)
  const std::string out = Simplified(R"(HloModule s

ENTRY e {
  i = s32[4] parameter(0)
  f = f32[] parameter(1)
  eq = pred[4] compare(i, i), direction=EQ
  lt = pred[4] compare(i, i), direction=LT
  ff = pred[] compare(f, f), direction=EQ
  ROOT t = (pred[4], pred[4], pred[]) tuple(eq, lt, ff)
}
)");
  CHECK(out == R"(HloModule s

ENTRY e (i: s32[4], f: f32[]) -> (pred[4], pred[4], pred[]) {
  i = s32[4] parameter(0)
  f = f32[] parameter(1)
  ff = pred[] compare(f, f), direction=EQ
  eq.constant = pred[] constant(true)
  eq.broadcast = pred[4] broadcast(eq.constant), dimensions={}
  lt.constant = pred[] constant(false)
  lt.broadcast = pred[4] broadcast(lt.constant), dimensions={}
  ROOT t = (pred[4], pred[4], pred[]) tuple(eq.broadcast, lt.broadcast, ff)
}
)");
}

TEST_CASE("algebraic simplifier: a broadcast of a reshape that only adds size-1 dims spreads the reshape's operand",
          "[algebraic_simplifier]") {
  // Gemma's rotary frequencies: p [128] -> reshape [1,1,128] -> identity broadcast -> reshape
  // [1,128] -> broadcast along 11 rows. The broadcast reads p, its dim 2 where the reshape's 128
  // went; a reshape that drops or moves a dim of p's (k) stays.
  const std::string out = Simplified(R"(HloModule s

ENTRY e {
  x = f32[1,11,128] parameter(0)
  p = f32[128] parameter(1)
  r = f32[1,1,128] reshape(p)
  i = f32[1,1,128] broadcast(r), dimensions={0,1,2}
  q = f32[1,128] reshape(i)
  w = f32[1,11,128] broadcast(q), dimensions={0,2}
  d = f32[1,11,128] divide(x, w)
  k = f32[4,32] parameter(2)
  kr = f32[1,128] reshape(k)
  kw = f32[1,11,128] broadcast(kr), dimensions={0,2}
  ROOT s = f32[1,11,128] add(d, kw)
}
)");
  CHECK(out == R"(HloModule s

ENTRY e (x: f32[1,11,128], p: f32[128], k: f32[4,32]) -> f32[1,11,128] {
  x = f32[1,11,128] parameter(0)
  p = f32[128] parameter(1)
  w.unreshaped = f32[1,11,128] broadcast(p), dimensions={2}
  d = f32[1,11,128] divide(x, w.unreshaped)
  k = f32[4,32] parameter(2)
  kr = f32[1,128] reshape(k)
  kw = f32[1,11,128] broadcast(kr), dimensions={0,2}
  ROOT s = f32[1,11,128] add(d, kw)
}
)");
}

TEST_CASE("algebraic simplifier: a dynamic-update-slice of an update as large as its operand is the update", "[algebraic_simplifier]") {
  // Gemma 3's key/value cache of its 11 positions, updated whole at a computed position: the start
  // is clamped to 0, so the result is the update, and the position's computation goes unread. A
  // smaller update (u2, 4 of the 11 rows) stays.
  const std::string out = Simplified(R"(HloModule s

ENTRY e {
  cache = bf16[1,11,256] parameter(0)
  u = bf16[1,11,256] parameter(1)
  i = s32[] parameter(2)
  zero = s32[] constant(0)
  lt = pred[] compare(i, zero), direction=LT
  at = s32[] select(lt, zero, i)
  d = bf16[1,11,256] dynamic-update-slice(cache, u, zero, at, zero)
  u2 = bf16[1,4,256] parameter(3)
  d2 = bf16[1,11,256] dynamic-update-slice(cache, u2, zero, i, zero)
  ROOT s = bf16[1,11,256] add(d, d2)
}
)");
  CHECK(out == R"(HloModule s

ENTRY e (cache: bf16[1,11,256], u: bf16[1,11,256], i: s32[], u2: bf16[1,4,256]) -> bf16[1,11,256] {
  cache = bf16[1,11,256] parameter(0)
  u = bf16[1,11,256] parameter(1)
  i = s32[] parameter(2)
  zero = s32[] constant(0)
  u2 = bf16[1,4,256] parameter(3)
  d2 = bf16[1,11,256] dynamic-update-slice(cache, u2, zero, i, zero)
  ROOT s = bf16[1,11,256] add(u, d2)
}
)");
}
