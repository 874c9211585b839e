// Dot output fusion run end to end (compiler/passes/dot_output_fusion.h, compiler/lower/dot_epilogue.h):
// a dense layer's bias, activation and convert run in the dot kernel's read-out, one kernel whose
// values `--check` compares with the reference evaluator (bf16 and f32 epilogues, odd shapes whose
// last tiles are masked, a split over both TensorCores by columns, batch dims, arrays of the
// result's dims); an epilogue the kernel does not hold (a vector along the rows) leaves the dot a
// kernel of its own.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

// Runs `module` with --check; returns its kernels' names, and its device time in `us`.
std::vector<std::string> RunChecked(const std::string& name, const std::string& module, double* us = nullptr) {
  const fs::path dir = TempDir(name);
  WriteText(dir / "m.hlo", module);
  const std::string output = RunOk("run " + (dir / "m.hlo").string() + " --check --report " + (dir / "r.json").string());
  CHECK_THAT(output, Catch::Contains("check passed"));
  if (us != nullptr) *us = ReportNumber(dir / "r.json", "device_time_us");
  return KernelNames(dir / "r.json");
}

// x[M,K] . w[K,N] -> f32, + b[N] broadcast along the rows, relu, then the root `tail` of r.
std::string Dense(int m, int k, int n, const std::string& tail) {
  const std::string mn = "[" + std::to_string(m) + "," + std::to_string(n) + "]";
  return "HloModule dense\nENTRY e {\n  x = bf16[" + std::to_string(m) + "," + std::to_string(k) + "] parameter(0)\n" +
         "  w = bf16[" + std::to_string(k) + "," + std::to_string(n) + "] parameter(1)\n" +
         "  b = f32[" + std::to_string(n) + "] parameter(2)\n" +
         "  d = f32" + mn + " dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n" +
         "  bb = f32" + mn + " broadcast(b), dimensions={1}\n  a = f32" + mn + " add(d, bb)\n" +
         "  z = f32[] constant(0)\n  zb = f32" + mn + " broadcast(z), dimensions={}\n" +
         "  r = f32" + mn + " maximum(a, zb)\n" + tail + "}\n";
}

}  // namespace

TEST_CASE("dot output fusion: a dense layer's bias, relu and convert run in the dot kernel, checked", "[dot_epilogue]") {
  // bf16[512,1024] x [1024,1024] -> f32, + bias, relu, -> bf16: one kernel, the f32 product never
  // written. Its epilogue (a bias load, an add, a maximum per tile, then the packing convert)
  // runs in the read-out, node by node over eight tiles. Against the same dot with a bf16 result
  // alone (the same bytes out): at most 10% more (6.566 against 6.157 us when this was written;
  // 7.401 while a stride-0 load read its row from VMEM once per sublane); before the fusion the
  // layer was the f32 dot, 7.579 us, and a 4.287 us kernel of its own.
  double fused_us = 0, dot_us = 0;
  CHECK(RunChecked("dot_epilogue_dense", Dense(512, 1024, 1024, "  ROOT c = bf16[512,1024] convert(r)\n"), &fused_us) ==
        std::vector<std::string>{"c"});
  const std::string dot_only = "HloModule dot\nENTRY e {\n  x = bf16[512,1024] parameter(0)\n  w = bf16[1024,1024] parameter(1)\n"
                               "  ROOT d = bf16[512,1024] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
  CHECK(RunChecked("dot_epilogue_dot_only", dot_only, &dot_us) == std::vector<std::string>{"d"});
  CHECK(fused_us <= 1.10 * dot_us);
}

TEST_CASE("dot output fusion: odd shapes, an f32 result, and a split over the cores by columns, checked",
          "[dot_epilogue]") {
  // 300 x 700 x 900: partial last row vreg and column tile, masked after the epilogue (the bias
  // rows' padding lanes hold whatever VMEM held). 16 x 256 x 4096: too few rows for a core each,
  // so the cores split the columns, each loading its own columns of the bias.
  CHECK(RunChecked("dot_epilogue_odd", Dense(300, 700, 900, "  ROOT o = f32[300,900] negate(r)\n")) ==
        std::vector<std::string>{"o"});
  CHECK(RunChecked("dot_epilogue_columns", Dense(16, 256, 4096, "  ROOT c = bf16[16,4096] convert(r)\n")) ==
        std::vector<std::string>{"c"});
}

TEST_CASE("dot output fusion: a bf16 GELU with a bf16 bias, every bf16 step rounded as XLA does, checked",
          "[dot_epilogue]") {
  // tanh-approximated GELU on a bf16 dot plus a bf16 bias: 13 operations, 4 constants; each bf16
  // result rounded to bf16, the dot's sums rounded once, a bf16 bias widened by a shift.
  const std::string s = "bf16[300,900]";
  std::string module = "HloModule gelu\nENTRY e {\n  x = bf16[300,700] parameter(0)\n  w = bf16[700,900] parameter(1)\n"
                       "  b = bf16[900] parameter(2)\n"
                       "  d = " + s + " dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                       "  bb = " + s + " broadcast(b), dimensions={1}\n  a = " + s + " add(d, bb)\n";
  const char* constants[][2] = {{"h", "0.5"}, {"c3", "0.044715"}, {"k", "0.7978846"}, {"one", "1"}};
  for (const auto& [name, value] : constants) {
    module += std::string("  ") + name + " = bf16[] constant(" + value + ")\n  " + name + "b = " + s + " broadcast(" +
              name + "), dimensions={}\n";
  }
  module += "  a2 = " + s + " multiply(a, a)\n  a3 = " + s + " multiply(a2, a)\n  t1 = " + s + " multiply(a3, c3b)\n" +
            "  t2 = " + s + " add(a, t1)\n  t3 = " + s + " multiply(t2, kb)\n  t4 = " + s + " tanh(t3)\n" +
            "  t5 = " + s + " add(t4, oneb)\n  t6 = " + s + " multiply(t5, hb)\n  ROOT g = " + s + " multiply(a, t6)\n}\n";
  CHECK(RunChecked("dot_epilogue_gelu", module) == std::vector<std::string>{"g"});
}

TEST_CASE("dot output fusion: MXUs narrower than the lanes (tiny's), and 64 x 64 MXUs", "[dot_epilogue]") {
  // On tiny an N group is narrower than a lane tile, so the read-out's bias load of the last
  // group reaches past N (the bias row has a tile of slack; those lanes are not stored).
  // `--no-tuning`: fused wherever it fits (on 64 x 64 MXUs the two kernels run faster in the
  // trial, output_fusion_trial.h, which would leave this epilogue untested).
  const std::string module =
      "HloModule wide\nENTRY e {\n  x = bf16[8,512] parameter(0)\n  w = bf16[512,8192] parameter(1)\n"
      "  b = bf16[8192] parameter(2)\n"
      "  d = bf16[8,8192] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  bb = bf16[8,8192] broadcast(b), dimensions={1}\n  a = bf16[8,8192] add(d, bb)\n"
      "  ROOT l = bf16[8,8192] logistic(a)\n}\n";
  for (const std::string flags : {"--config tiny", "--set tensor_core.mxu.row_count=64 --set tensor_core.mxu.column_count=64"}) {
    INFO(flags);
    const fs::path dir = TempDir("dot_epilogue_narrow");
    WriteText(dir / "m.hlo", module);
    CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --no-tuning " + flags + " --report " +
                     (dir / "r.json").string()),
               Catch::Contains("check passed"));
    CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"l"});
  }
}

TEST_CASE("dot output fusion: a general dot whose canonical result is its result in place", "[dot_epilogue]") {
  // bf16[2,64,256] x [256,512]: two free dims on the lhs (merged into M = 128 in place), the
  // result [2,64,512] the canonical [128,512]'s bytes, so the epilogue runs in the canonical dot's
  // read-out (2.697 -> 1.696 us when this was written).
  const std::string module =
      "HloModule general\nENTRY e {\n  x = bf16[2,64,256] parameter(0)\n  w = bf16[256,512] parameter(1)\n"
      "  b = bf16[512] parameter(2)\n"
      "  d = bf16[2,64,512] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n"
      "  bb = bf16[2,64,512] broadcast(b), dimensions={2}\n  a = bf16[2,64,512] add(d, bb)\n"
      "  ROOT r = bf16[2,64,512] multiply(a, a)\n}\n";
  CHECK(RunChecked("dot_epilogue_general", module) == std::vector<std::string>{"r"});
}

TEST_CASE("dot output fusion: batch dims, the bias along the last dim", "[dot_epilogue]") {
  const std::string module =
      "HloModule batched\nENTRY e {\n  x = bf16[4,64,128] parameter(0)\n  w = bf16[4,128,256] parameter(1)\n"
      "  b = f32[256] parameter(2)\n"
      "  d = f32[4,64,256] dot(x, w), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
      "rhs_contracting_dims={1}\n"
      "  bb = f32[4,64,256] broadcast(b), dimensions={2}\n  ROOT a = f32[4,64,256] add(d, bb)\n}\n";
  CHECK(RunChecked("dot_epilogue_batch", module) == std::vector<std::string>{"a"});
}

TEST_CASE("dot output fusion: arrays of the result's dims (a residual) loaded per job, checked", "[dot_epilogue]") {
  // Each job's box of the array lands in its parity's VMEM slot while the job before is read out.
  // bf16 residual on a bf16 dot (one packed vreg unpacked per row vreg); an f32 array times the
  // biased f32 product, converted to bf16 (odd shape: partial row vreg and lane tile); a general
  // dot in place; batch dims; a short K whose jobs are pipelined (job j's passes before job j - 1's
  // read-out, so the two slots hold two jobs' boxes at once).
  const auto module = [](const std::string& body) { return "HloModule m\nENTRY e {\n" + body + "}\n"; };
  CHECK(RunChecked("dot_epilogue_residual_bf16",
                   module("  x = bf16[512,1024] parameter(0)\n  w = bf16[1024,1024] parameter(1)\n"
                          "  y = bf16[512,1024] parameter(2)\n"
                          "  d = bf16[512,1024] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                          "  ROOT a = bf16[512,1024] add(d, y)\n")) == std::vector<std::string>{"a"});
  CHECK(RunChecked("dot_epilogue_residual_f32",
                   module("  x = bf16[300,700] parameter(0)\n  w = bf16[700,900] parameter(1)\n"
                          "  y = f32[300,900] parameter(2)\n  b = f32[900] parameter(3)\n"
                          "  d = f32[300,900] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                          "  bb = f32[300,900] broadcast(b), dimensions={1}\n  a = f32[300,900] add(d, bb)\n"
                          "  m = f32[300,900] multiply(a, y)\n  ROOT c = bf16[300,900] convert(m)\n")) ==
        std::vector<std::string>{"c"});
  CHECK(RunChecked("dot_epilogue_residual_general",
                   module("  x = bf16[2,64,256] parameter(0)\n  w = bf16[256,512] parameter(1)\n"
                          "  y = bf16[2,64,512] parameter(2)\n"
                          "  d = bf16[2,64,512] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n"
                          "  ROOT a = bf16[2,64,512] add(d, y)\n")) == std::vector<std::string>{"a"});
  CHECK(RunChecked("dot_epilogue_residual_batch",
                   module("  x = bf16[4,64,128] parameter(0)\n  w = bf16[4,128,256] parameter(1)\n"
                          "  y = bf16[4,64,256] parameter(2)\n"
                          "  d = bf16[4,64,256] dot(x, w), lhs_batch_dims={0}, rhs_batch_dims={0}, "
                          "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
                          "  ROOT a = bf16[4,64,256] multiply(d, y)\n")) == std::vector<std::string>{"a"});
  CHECK(RunChecked("dot_epilogue_residual_pipelined",
                   module("  x = bf16[200,64] parameter(0)\n  w = bf16[64,3000] parameter(1)\n"
                          "  y = f32[200,3000] parameter(2)\n"
                          "  d = f32[200,3000] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                          "  s = f32[200,3000] subtract(d, y)\n  ROOT a = f32[200,3000] abs(s)\n")) ==
        std::vector<std::string>{"a"});
}

TEST_CASE("dot output fusion: a vector along the rows stays a kernel of its own", "[dot_epilogue]") {
  // The epilogue holds vectors along the columns, arrays of the result's dims and constants; a
  // per-row scale is not loaded in the read-out (yet), so the dot writes its result.
  const std::string module =
      "HloModule rows\nENTRY e {\n  x = bf16[128,256] parameter(0)\n  w = bf16[256,256] parameter(1)\n"
      "  v = f32[128] parameter(2)\n"
      "  d = f32[128,256] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      "  vb = f32[128,256] broadcast(v), dimensions={0}\n  ROOT a = f32[128,256] multiply(d, vb)\n}\n";
  CHECK(RunChecked("dot_epilogue_rows", module) == std::vector<std::string>{"d", "a"});
}

TEST_CASE("convolution output fusion: bias and activation in the MXU convolution's stores, NHWC and NCHW, checked",
          "[dot_epilogue]") {
  // f32 3x3 convolutions, a bias along the output features (dim 3 of b01f, dim 1 of bf01), relu or
  // tanh: one kernel each, the epilogue on the accumulators before the stage stores (69.564 ->
  // 64.879 us and 64.409 -> 55.726 us when this was written: the activation kernel's read and
  // write of the output gone).
  CHECK(RunChecked("conv_epilogue_nhwc",
                   "HloModule c\nENTRY e {\n  x = f32[8,16,16,64] parameter(0)\n  w = f32[3,3,64,128] parameter(1)\n"
                   "  b = f32[128] parameter(2)\n"
                   "  c = f32[8,16,16,128] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
                   "  bb = f32[8,16,16,128] broadcast(b), dimensions={3}\n  a = f32[8,16,16,128] add(c, bb)\n"
                   "  z = f32[] constant(0)\n  zb = f32[8,16,16,128] broadcast(z), dimensions={}\n"
                   "  ROOT r = f32[8,16,16,128] maximum(a, zb)\n}\n") == std::vector<std::string>{"r"});
  CHECK(RunChecked("conv_epilogue_nchw",
                   "HloModule c\nENTRY e {\n  x = f32[4,32,15,15] parameter(0)\n  w = f32[48,32,3,3] parameter(1)\n"
                   "  b = f32[48] parameter(2)\n"
                   "  c = f32[4,48,15,15] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01\n"
                   "  bb = f32[4,48,15,15] broadcast(b), dimensions={1}\n  a = f32[4,48,15,15] add(c, bb)\n"
                   "  ROOT t = f32[4,48,15,15] tanh(a)\n}\n") == std::vector<std::string>{"t"});
}

TEST_CASE("convolution output fusion: a depthwise convolution keeps its consumers in a kernel of their own",
          "[dot_epilogue]") {
  // The depthwise path runs on the VPU and takes no epilogue (yet): two kernels, still checked.
  CHECK(RunChecked("conv_epilogue_depthwise",
                   "HloModule c\nENTRY e {\n  x = f32[1,32,32,64] parameter(0)\n  w = f32[3,3,1,64] parameter(1)\n"
                   "  b = f32[64] parameter(2)\n"
                   "  c = f32[1,32,32,64] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
                   "feature_group_count=64\n"
                   "  bb = f32[1,32,32,64] broadcast(b), dimensions={3}\n  ROOT a = f32[1,32,32,64] add(c, bb)\n}\n") ==
        std::vector<std::string>{"c", "a"});
}

TEST_CASE("output fusion trial: where the two kernels run faster in simulation, the dot keeps its own kernel",
          "[dot_epilogue]") {
  // A bf16 chain with a tanh on 2048x256x2048: the epilogue's VPU work outlasts the MXUs' passes
  // and runs after them in the read-out (32.7 us fused), where the separate kernel overlaps it
  // with its DMAs on both cores (30.5 us with the dot). The trial (output_fusion_trial.h) keeps
  // the two kernels; `--no-tuning` (no trials) fuses. Both pass --check.
  const std::string s = "bf16[2048,2048]";
  const std::string module = "HloModule g\nENTRY e {\n  x = bf16[2048,256] parameter(0)\n  w = bf16[256,2048] parameter(1)\n"
                             "  b = bf16[2048] parameter(2)\n"
                             "  d = " + s + " dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                             "  bb = " + s + " broadcast(b), dimensions={1}\n  a = " + s + " add(d, bb)\n"
                             "  h = bf16[] constant(0.5)\n  hb = " + s + " broadcast(h), dimensions={}\n"
                             "  t = " + s + " tanh(a)\n  u = " + s + " add(t, hb)\n  ROOT g = " + s + " multiply(a, u)\n}\n";
  double tried_us = 0, fused_us = 0;
  CHECK(RunChecked("output_fusion_trial", module, &tried_us) == std::vector<std::string>{"d", "g"});
  const fs::path dir = TempDir("output_fusion_trial_off");
  WriteText(dir / "m.hlo", module);
  CHECK_THAT(RunOk("run " + (dir / "m.hlo").string() + " --check --no-tuning --report " + (dir / "r.json").string()),
             Catch::Contains("check passed"));
  CHECK(KernelNames(dir / "r.json") == std::vector<std::string>{"g"});
  fused_us = ReportNumber(dir / "r.json", "device_time_us");
  CHECK(tried_us < fused_us);
}

TEST_CASE("dot output fusion: seeded random epilogues on odd shapes pass --check, each one kernel", "[dot_epilogue]") {
  // 12 modules from a fixed seed: M, K, N from sets with odd sizes (a row, partial row vregs and
  // lane tiles), an f32 or bf16 dot, then 1 to 4 steps drawn from: a bias along the columns, an
  // array of the result's dims, a constant, a unary operation (tanh, exp, logistic, sqrt of abs,
  // negate, abs), a convert between f32 and bf16. Every one must fuse into one kernel and match
  // the reference evaluator within the dot's bound (40 such modules on tpu_v4 and tiny passed
  // when this was written).
  std::mt19937 random(20261128);
  const auto pick = [&](const std::vector<std::string>& from) { return from[random() % from.size()]; };
  for (int i = 0; i < 12; ++i) {
    const std::string m = pick({"1", "8", "17", "130", "300", "513"});
    const std::string k = pick({"16", "128", "200", "1000"});
    const std::string n = pick({"128", "130", "384", "700", "2000"});
    std::string type = pick({"f32", "bf16"});
    const auto shape = [&] { return type + "[" + m + "," + n + "]"; };
    std::string body = "  x = bf16[" + m + "," + k + "] parameter(0)\n  w = bf16[" + k + "," + n + "] parameter(1)\n  d = " +
                       shape() + " dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n";
    std::string value = "d";
    int parameter = 2;
    const int steps = 1 + static_cast<int>(random() % 4);
    for (int step = 0; step < steps; ++step) {
      const std::string name = "v" + std::to_string(step);
      const std::string p = "p" + std::to_string(parameter);
      const std::string kind = pick({"bias", "array", "constant", "unary", "convert"});
      if (kind == "bias") {
        body += "  " + p + " = " + type + "[" + n + "] parameter(" + std::to_string(parameter++) + ")\n  b" + name + " = " +
                shape() + " broadcast(" + p + "), dimensions={1}\n  " + name + " = " + shape() + " " +
                pick({"add", "multiply", "subtract", "maximum"}) + "(" + value + ", b" + name + ")\n";
      } else if (kind == "array") {
        body += "  " + p + " = " + shape() + " parameter(" + std::to_string(parameter++) + ")\n  " + name + " = " + shape() +
                " " + pick({"add", "multiply", "minimum"}) + "(" + value + ", " + p + ")\n";
      } else if (kind == "constant") {
        body += "  c" + name + " = " + type + "[] constant(" + pick({"0.5", "-1.25", "3"}) + ")\n  k" + name + " = " + shape() +
                " broadcast(c" + name + "), dimensions={}\n  " + name + " = " + shape() + " " +
                pick({"add", "multiply", "maximum"}) + "(" + value + ", k" + name + ")\n";
      } else if (kind == "unary") {
        const std::string op = pick({"negate", "abs", "tanh", "exponential", "logistic", "sqrt"});
        std::string source = value;
        if (op == "sqrt") {
          body += "  a" + name + " = " + shape() + " abs(" + value + ")\n";
          source = "a" + name;
        }
        body += "  " + name + " = " + shape() + " " + op + "(" + source + ")\n";
      } else {
        type = type == "f32" ? "bf16" : "f32";
        body += "  " + name + " = " + shape() + " convert(" + value + ")\n";
      }
      value = name;
    }
    const std::size_t last = body.rfind("  " + value + " =");
    body.insert(last + 2, "ROOT ");
    INFO(body);
    CHECK(RunChecked("dot_epilogue_random", "HloModule r\nENTRY e {\n" + body + "}\n") == std::vector<std::string>{value});
  }
}
