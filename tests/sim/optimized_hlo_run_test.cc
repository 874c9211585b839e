// Optimized modules as XLA's TPU pipeline dumps them (after its fusion and memory-space
// assignment): `fusion` instructions of every kind, copy-start / copy-done into S(3), matmuls
// written as convolutions without spatial dims, asynchronous collectives. `tpusim run --check`
// against the reference evaluator (which evaluates them as written).
#include <catch2/catch.hpp>

#include <string>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

}  // namespace

TEST_CASE("tpusim run --check: loop, input, output and multi-output fusions as an optimized dump writes them", "[sim][optimized]") {
  // kLoop (element-wise: a kernel as written), kInput (exp fused into a row sum: inlined, then
  // tpusim's input fusion), a multi-output kLoop (tuple root: one kernel, two outputs) and kOutput
  // (a dot and its bias: inlined, the dot kernel then an element-wise kernel).
  const fs::path dir = TempDir("optimized_fusions");
  WriteText(dir / "m.hlo", R"(HloModule po

fused_loop {
  p0 = f32[256,512] parameter(0)
  p1 = f32[256,512] parameter(1)
  m = f32[256,512] multiply(p0, p1)
  ROOT a = f32[256,512] add(m, p0)
}

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

fused_input {
  p0 = f32[256,512] parameter(0)
  e = f32[256,512] exponential(p0)
  z = f32[] constant(0)
  ROOT r = f32[256] reduce(e, z), dimensions={1}, to_apply=add_f32
}

fused_multi {
  p0 = f32[256,512] parameter(0)
  n = f32[256,512] negate(p0)
  ab = f32[256,512] abs(p0)
  ROOT t = (f32[256,512], f32[256,512]) tuple(n, ab)
}

fused_output {
  p0 = f32[256,512] parameter(0)
  p1 = f32[512,128] parameter(1)
  p2 = f32[128] parameter(2)
  d = f32[256,128] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[256,128] broadcast(p2), dimensions={1}
  ROOT o = f32[256,128] add(d, b)
}

ENTRY e {
  x = f32[256,512] parameter(0)
  y = f32[256,512] parameter(1)
  w = f32[512,128] parameter(2)
  bias = f32[128] parameter(3)
  l = f32[256,512] fusion(x, y), kind=kLoop, calls=fused_loop
  i = f32[256] fusion(l), kind=kInput, calls=fused_input
  mo = (f32[256,512], f32[256,512]) fusion(l), kind=kLoop, calls=fused_multi
  g0 = f32[256,512] get-tuple-element(mo), index=0
  g1 = f32[256,512] get-tuple-element(mo), index=1
  o = f32[256,128] fusion(g0, w, bias), kind=kOutput, calls=fused_output
  ROOT t = (f32[256], f32[256,512], f32[256,128]) tuple(i, g1, o)
}
)");
  const std::string out = RunOk("run " + (dir / "m.hlo").string() + " --check");
  CHECK_THAT(out, Catch::Contains("check passed: 3 output(s)"));
  // The kernels: the loop fusion and the multi-output one as written, the input fusion's reduce
  // with its exp, the output fusion's dot and add.
  CHECK_THAT(out, Catch::Contains("  l ") && Catch::Contains("  mo ") && Catch::Contains("i.r"));
}

TEST_CASE("tpusim run --check: a TPU dump's matmul, its lhs prefetched into S(3) by copy-start and copy-done", "[sim][optimized]") {
  // As ../shared/validation/tpu_v4/tpu_hlo_instructions.txt writes it: the lhs (row- or
  // column-major) copied to memory space 3 (CMEM), then a kOutput fusion whose convolution has no
  // spatial dims (bf_io->bf): placed in HBM, the copy an alias, the convolution a dot.
  const fs::path dir = TempDir("optimized_matmul");
  for (const char* lhs_layout : {"1,0", "0,1"}) {
    INFO(lhs_layout);
    const std::string l = lhs_layout;
    WriteText(dir / "m.hlo", "HloModule po2\n\n"
              "%fused_computation (param_0: f16[512,384], param_1: f16[384,256]) -> f16[512,256] {\n"
              "  %param_0 = f16[512,384]{" + l + ":T(8,128)(2,1)S(3)} parameter(0)\n"
              "  %param_1 = f16[384,256]{1,0:T(8,128)(2,1)} parameter(1)\n"
              "  ROOT %convolution = f16[512,256]{1,0:T(8,128)(2,1)} convolution(%param_0, %param_1), dim_labels=bf_io->bf\n}\n\n"
              "ENTRY %main (Arg_0.1: f16[512,384], Arg_1.2: f16[384,256]) -> f16[512,256] {\n"
              "  %Arg_0.1 = f16[512,384]{" + l + ":T(8,128)(2,1)} parameter(0)\n"
              "  %Arg_1.2 = f16[384,256]{1,0:T(8,128)(2,1)} parameter(1)\n"
              "  %copy-start = (f16[512,384]{" + l + ":T(8,128)(2,1)S(3)}, f16[512,384]{" + l + ":T(8,128)(2,1)}, u32[]{:S(2)}) "
              "copy-start(%Arg_0.1)\n"
              "  %copy-done = f16[512,384]{" + l + ":T(8,128)(2,1)S(3)} copy-done(%copy-start)\n"
              "  ROOT %fusion = f16[512,256]{1,0:T(8,128)(2,1)} fusion(%copy-done, %Arg_1.2), kind=kOutput, "
              "calls=%fused_computation\n}\n");
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check"),
               Catch::Contains("check passed: 1 output(s)") && Catch::Contains("every element equal"));
  }
}

TEST_CASE("tpusim run --check: asynchronous all-reduce and collective-permute run as their synchronous forms", "[sim][optimized]") {
  const fs::path dir = TempDir("optimized_async");
  WriteText(dir / "m.hlo", R"(HloModule ar

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[256,128] parameter(0)
  s = f32[256,128] all-reduce-start(x), replica_groups={}, to_apply=add
  d = f32[256,128] all-reduce-done(s)
  cp = (f32[256,128], f32[256,128]) collective-permute-start(d), source_target_pairs={{0,0}}
  cd = f32[256,128] collective-permute-done(cp)
  ROOT y = f32[256,128] add(cd, x)
}
)");
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check"),
             Catch::Contains("check passed: 1 output(s)") && Catch::Contains("every element equal"));
}
