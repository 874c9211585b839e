// HLO modules of memory planning (compiler/passes/memory_scheduler.h, NestedBinding::regions),
// shared by the compiler tests (tests/compiler/memory_scheduler_test.cc) and the end-to-end runs
// (tests/sim/control_flow_run_test.cc).
#pragma once

namespace tpusim::memory_planning_test {

// A one-iteration loop whose body needs 8 MiB (a broadcast and its reverse) while the caller has
// 12 MiB free between its buffers: a, read by its reduce before the loop, below b (a slice of a,
// so written while a lives; strided, so no view its reader would compute, compiler/lower/array_view.h), read after it. (A call would be inlined.)
inline constexpr char kLoopInAHole[] = R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
cond {
  s = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(1)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[1024] get-tuple-element(s), index=1
  b0 = f32[1024,1024] broadcast(v), dimensions={1}
  t = f32[1024,1024] reverse(b0), dimensions={0}
  z = f32[] constant(0)
  u = f32[1024] reduce(t, z), dimensions={0}, to_apply=add
  ROOT r = (s32[], f32[1024]) tuple(j, u)
}
ENTRY e {
  q = f32[3072,1024] parameter(0)
  a = f32[3072,1024] reverse(q), dimensions={0}
  b = f32[1024,1024] slice(a), slice={[0:2048:2], [0:1024]}
  z = f32[] constant(0)
  ra = f32[1024] reduce(a, z), dimensions={0}, to_apply=add
  zero = s32[] constant(0)
  init = (s32[], f32[1024]) tuple(zero, ra)
  w = (s32[], f32[1024]) while(init), condition=cond, body=body
  c = f32[1024] get-tuple-element(w), index=1
  rb = f32[1024] reduce(b, z), dimensions={0}, to_apply=add
  ROOT t = (f32[1024], f32[1024]) tuple(rb, c)
}
)";

}  // namespace tpusim::memory_planning_test
