// Lane-broadcast sinking (compiler/passes/lane_broadcast_sinking.h): HLO in, HLO out.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/lane_broadcast_sinking.h"

namespace {

std::string Sunk(const std::string& text) {
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  tpusim::compiler::SinkLaneBroadcasts(*module);
  tpusim::hlo::Verify(*module);
  return tpusim::hlo::ToString(*module);
}

}  // namespace

TEST_CASE("lane-broadcast sinking: a row statistic's chain moves below each lane broadcast", "[lane_broadcast_sinking]") {
  // Layer norm's 1/sqrt(var + eps) shape: the row sums s [1,64] through a size-1 reshape, a
  // divide by a scalar, a convert, an add of a scalar and a sqrt, then broadcast along the 256
  // lanes twice. Each broadcast gets its own chain over broadcast(s) with s's size-1 dim at the
  // result's size-1 dim 0; the scalars are broadcast to the result; the original chain, read by
  // nothing now, goes.
  const std::string out = Sunk(R"(HloModule s

ENTRY e {
  x = bf16[1,64,256] parameter(0)
  s = f32[1,64] parameter(1)
  r = f32[1,64,1] reshape(s)
  n = f32[] constant(256)
  nb = f32[1,64,1] broadcast(n), dimensions={}
  m = f32[1,64,1] divide(r, nb)
  c = bf16[1,64,1] convert(m)
  e = bf16[] constant(1)
  eb = bf16[1,64,1] broadcast(e), dimensions={}
  a = bf16[1,64,1] add(c, eb)
  q = bf16[1,64,1] sqrt(a)
  q2 = bf16[1,64] reshape(q)
  w = bf16[1,64,256] broadcast(q2), dimensions={0,1}
  w2 = bf16[1,64,256] broadcast(q2), dimensions={0,1}
  d = bf16[1,64,256] divide(x, w)
  ROOT o = bf16[1,64,256] add(d, w2)
}
)");
  CHECK(out == R"(HloModule s

ENTRY e (x: bf16[1,64,256], s: f32[1,64]) -> bf16[1,64,256] {
  x = bf16[1,64,256] parameter(0)
  s = f32[1,64] parameter(1)
  n = f32[] constant(256)
  e = bf16[] constant(1)
  w.s = f32[1,64,256] broadcast(s), dimensions={0,1}
  w.m.scalar = f32[1,64,256] broadcast(n), dimensions={}
  w.m = f32[1,64,256] divide(w.s, w.m.scalar)
  w.c = bf16[1,64,256] convert(w.m)
  w.a.scalar = bf16[1,64,256] broadcast(e), dimensions={}
  w.a = bf16[1,64,256] add(w.c, w.a.scalar)
  w.q = bf16[1,64,256] sqrt(w.a)
  d = bf16[1,64,256] divide(x, w.q)
  w2.s = f32[1,64,256] broadcast(s), dimensions={0,1}
  w2.m.scalar = f32[1,64,256] broadcast(n), dimensions={}
  w2.m = f32[1,64,256] divide(w2.s, w2.m.scalar)
  w2.c = bf16[1,64,256] convert(w2.m)
  w2.a.scalar = bf16[1,64,256] broadcast(e), dimensions={}
  w2.a = bf16[1,64,256] add(w2.c, w2.a.scalar)
  w2.q = bf16[1,64,256] sqrt(w2.a)
  ROOT o = bf16[1,64,256] add(d, w2.q)
}
)");
}

TEST_CASE("lane-broadcast sinking: what stays", "[lane_broadcast_sinking]") {
  // Not along the lanes (the minor dim comes from the operand); a plain broadcast of an array
  // (no operation to move); a chain of s32 (the kernels share float chains only); a broadcast
  // written with tiles.
  const std::string text = R"(HloModule s

ENTRY e (x: f32[64,256], s: f32[64], t: f32[256], i: s32[64]) -> (f32[64,256], f32[64,256], s32[64,256], f32[64,256]) {
  x = f32[64,256] parameter(0)
  s = f32[64] parameter(1)
  t = f32[256] parameter(2)
  i = s32[64] parameter(3)
  te = f32[256] exponential(t)
  a = f32[64,256] broadcast(te), dimensions={1}
  b = f32[64,256] broadcast(s), dimensions={0}
  ia = s32[64] add(i, i)
  c = s32[64,256] broadcast(ia), dimensions={0}
  se = f32[64] exponential(s)
  f = f32[64,256]{1,0:T(8,128)} broadcast(se), dimensions={0}
  ROOT r = (f32[64,256], f32[64,256], s32[64,256], f32[64,256]) tuple(a, b, c, f)
}
)";
  CHECK(Sunk(text) == tpusim::hlo::ToString(*tpusim::hlo::ParseModule(text, "test.hlo")));
}

TEST_CASE("lane-broadcast sinking: a cheap chain moves below a broadcast along the rows too", "[lane_broadcast_sinking]") {
  // Gemma's RMS norm scale: (scale + 1) of a [1152] vector, through a reshape to one row, spread
  // over 11 rows: the add moves below the broadcast, computed for each tile of the consumer; a
  // divide under the same kind of broadcast stays (the "what stays" case above has an exponential).
  const std::string out = Sunk(R"(HloModule s

ENTRY e {
  x = bf16[1,11,1152] parameter(0)
  p = bf16[1152] parameter(1)
  r = bf16[1,1,1152] reshape(p)
  one = bf16[] constant(1)
  ob = bf16[1,1,1152] broadcast(one), dimensions={}
  a = bf16[1,1,1152] add(r, ob)
  q = bf16[1,1152] reshape(a)
  w = bf16[1,11,1152] broadcast(q), dimensions={0,2}
  m = bf16[1,11,1152] multiply(x, w)
  v = bf16[1152] divide(p, p)
  vw = bf16[1,11,1152] broadcast(v), dimensions={2}
  ROOT o = bf16[1,11,1152] add(m, vw)
}
)");
  CHECK(out == R"(HloModule s

ENTRY e (x: bf16[1,11,1152], p: bf16[1152]) -> bf16[1,11,1152] {
  x = bf16[1,11,1152] parameter(0)
  p = bf16[1152] parameter(1)
  one = bf16[] constant(1)
  w.p = bf16[1,11,1152] broadcast(p), dimensions={2}
  w.a.scalar = bf16[1,11,1152] broadcast(one), dimensions={}
  w.a = bf16[1,11,1152] add(w.p, w.a.scalar)
  m = bf16[1,11,1152] multiply(x, w.a)
  v = bf16[1152] divide(p, p)
  vw = bf16[1,11,1152] broadcast(v), dimensions={2}
  ROOT o = bf16[1,11,1152] add(m, vw)
}
)");
}
