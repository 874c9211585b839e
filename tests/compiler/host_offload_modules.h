// HLO modules of host offload (compiler/passes/host_offload.h), shared by the compiler tests
// (tests/compiler/host_offload_test.cc) and the end-to-end runs (tests/sim/host_offload_run_test.cc).
#pragma once

namespace tpusim::host_offload_test {

// x -> MoveToHost -> MoveToDevice -> add: one HBM -> host and one host -> HBM copy of 64 KiB
// (f32[64,256] in T(8,128) tiles: 64 x 256 x 4 bytes, no padding).
inline constexpr char kRoundTrip[] = R"(HloModule offload_round_trip
ENTRY e {
  x = f32[64,256] parameter(0)
  h = f32[64,256] custom-call(x), custom_call_target="MoveToHost"
  d = f32[64,256] custom-call(h), custom_call_target="MoveToDevice"
  ROOT r = f32[64,256] add(d, x)
}
)";

// The Llama activation-offloading pattern, scaled down: a forward loop multiplies its carry by 2
// and stacks each new carry into a host buffer (MoveToHost, a reshape to [1,8,128] and a
// dynamic-update-slice at the iteration's index into a loop-state element that starts as a
// broadcast of zeros); a backward loop reads the slices back in reverse order (dynamic-slice,
// reshape, MoveToDevice) and folds them into acc' = slice - acc. With x the input, the stack
// holds [2x, 4x, 8x, 16x] and acc ends as 2x - (4x - (8x - 16x)) = -10x, all exact in f32 for
// quarter-valued x. The stack also comes out, moved to the device.
inline constexpr char kScan[] = R"(HloModule offload_scan

fwd_body {
  p = (s32[], f32[8,128], f32[4,8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8,128] get-tuple-element(p), index=1
  stack = f32[4,8,128] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  two = f32[] constant(2)
  twos = f32[8,128] broadcast(two), dimensions={}
  y = f32[8,128] multiply(x, twos)
  h = f32[8,128] custom-call(y), custom_call_target="MoveToHost"
  hr = f32[1,8,128] reshape(h)
  zero = s32[] constant(0)
  stack1 = f32[4,8,128] dynamic-update-slice(stack, hr, i, zero, zero)
  ROOT t = (s32[], f32[8,128], f32[4,8,128]) tuple(i1, y, stack1)
}

cond {
  p = (s32[], f32[8,128], f32[4,8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

bwd_body {
  p = (s32[], f32[8,128], f32[4,8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = f32[8,128] get-tuple-element(p), index=1
  stack = f32[4,8,128] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  three = s32[] constant(3)
  j = s32[] subtract(three, i)
  zero = s32[] constant(0)
  s = f32[1,8,128] dynamic-slice(stack, j, zero, zero), dynamic_slice_sizes={1,8,128}
  sr = f32[8,128] reshape(s)
  d = f32[8,128] custom-call(sr), custom_call_target="MoveToDevice"
  acc1 = f32[8,128] subtract(d, acc)
  ROOT t = (s32[], f32[8,128], f32[4,8,128]) tuple(i1, acc1, stack)
}

ENTRY e {
  x = f32[8,128] parameter(0)
  zero_i = s32[] constant(0)
  zf = f32[] constant(0)
  stack0 = f32[4,8,128] broadcast(zf), dimensions={}
  init = (s32[], f32[8,128], f32[4,8,128]) tuple(zero_i, x, stack0)
  w = (s32[], f32[8,128], f32[4,8,128]) while(init), condition=cond, body=fwd_body
  stack = f32[4,8,128] get-tuple-element(w), index=2
  acc0 = f32[8,128] broadcast(zf), dimensions={}
  init2 = (s32[], f32[8,128], f32[4,8,128]) tuple(zero_i, acc0, stack)
  w2 = (s32[], f32[8,128], f32[4,8,128]) while(init2), condition=cond, body=bwd_body
  acc = f32[8,128] get-tuple-element(w2), index=1
  stack_out = f32[4,8,128] get-tuple-element(w2), index=2
  stack_dev = f32[4,8,128] custom-call(stack_out), custom_call_target="MoveToDevice"
  ROOT r = (f32[8,128], f32[4,8,128]) tuple(acc, stack_dev)
}
)";

// One broadcast of zeros starts two host loop-state elements and is an output in HBM too: each
// element gets its own clone (zeros.host1, zeros.host2), which its loop state takes over, and
// the original stays in HBM. The loop writes x into row i of both elements, so both come out as
// [x, x], and the third output is zeros.
inline constexpr char kSharedZeros[] = R"(HloModule shared_zeros

body {
  p = (s32[], f32[2,8,128], f32[2,8,128], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[2,8,128] get-tuple-element(p), index=1
  b = f32[2,8,128] get-tuple-element(p), index=2
  x = f32[8,128] get-tuple-element(p), index=3
  h = f32[8,128] custom-call(x), custom_call_target="MoveToHost"
  hr = f32[1,8,128] reshape(h)
  zero = s32[] constant(0)
  a1 = f32[2,8,128] dynamic-update-slice(a, hr, i, zero, zero)
  b1 = f32[2,8,128] dynamic-update-slice(b, hr, i, zero, zero)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[2,8,128], f32[2,8,128], f32[8,128]) tuple(i1, a1, b1, x)
}

cond {
  p = (s32[], f32[2,8,128], f32[2,8,128], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY e {
  x = f32[8,128] parameter(0)
  zf = f32[] constant(0)
  zeros = f32[2,8,128] broadcast(zf), dimensions={}
  zero_i = s32[] constant(0)
  init = (s32[], f32[2,8,128], f32[2,8,128], f32[8,128]) tuple(zero_i, zeros, zeros, x)
  w = (s32[], f32[2,8,128], f32[2,8,128], f32[8,128]) while(init), condition=cond, body=body
  a = f32[2,8,128] get-tuple-element(w), index=1
  b = f32[2,8,128] get-tuple-element(w), index=2
  ad = f32[2,8,128] custom-call(a), custom_call_target="MoveToDevice"
  bd = f32[2,8,128] custom-call(b), custom_call_target="MoveToDevice"
  ROOT r = (f32[2,8,128], f32[2,8,128], f32[2,8,128]) tuple(ad, bd, zeros)
}
)";

}  // namespace tpusim::host_offload_test
