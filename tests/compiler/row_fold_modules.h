// The layer norm module of the row-fold tests, shared by the fusion tests
// (tests/compiler/row_fold_fusion_test.cc) and the end-to-end runs (tests/sim/row_fold_run_test.cc).
#pragma once

#include <string>

namespace tpusim::row_fold_test {

// Layer norm as JAX writes it (the shared workload's form after lane-broadcast sinking): the mean,
// the variance of x - mean, and (x - mean) / sqrt(variance + eps), with `extra` more lines and
// `root` as the result.
inline std::string LayerNorm(const std::string& extra, const std::string& root) {
  return R"(HloModule t
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = bf16[64,768] parameter(0)
  xf = f32[64,768] convert(x)
  z = f32[] constant(0)
  sum = f32[64] reduce(xf, z), dimensions={1}, to_apply=add
  sb = f32[64,768] broadcast(sum), dimensions={0}
  n = f32[] constant(768)
  nb = f32[64,768] broadcast(n), dimensions={}
  mean = f32[64,768] divide(sb, nb)
  meanb = bf16[64,768] convert(mean)
  d = bf16[64,768] subtract(x, meanb)
  d2 = bf16[64,768] multiply(d, d)
  d2f = f32[64,768] convert(d2)
  var = f32[64] reduce(d2f, z), dimensions={1}, to_apply=add
  vb = f32[64,768] broadcast(var), dimensions={0}
  v = f32[64,768] divide(vb, nb)
  vbf = bf16[64,768] convert(v)
  eps = bf16[] constant(1e-05)
  epsb = bf16[64,768] broadcast(eps), dimensions={}
  ve = bf16[64,768] add(vbf, epsb)
  sd = bf16[64,768] sqrt(ve)
)" + extra + "  ROOT r = " + root + "\n}\n";
}

}  // namespace tpusim::row_fold_test
