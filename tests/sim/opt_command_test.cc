// `tpusim opt` (sim/opt_command.h): tpusim's HLO pass pipeline on the command line, and its
// output as a module of its own.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

const char* kBatchNorm = R"(HloModule bn
ENTRY e {
  x = f32[4,32,10,10] parameter(0)
  s = f32[32] parameter(1)
  o = f32[32] parameter(2)
  m = f32[32] parameter(3)
  v = f32[32] parameter(4)
  ROOT y = f32[4,32,10,10] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1
}
)";

// The device cycles `tpusim run --timing-only` reports for `module`.
std::string Cycles(const fs::path& module) {
  const std::string out = RunOk("run " + module.string() + " --timing-only");
  std::smatch match;
  REQUIRE(std::regex_search(out, match, std::regex(R"(\((\d+) cycles at)")));
  return match[1];
}

}  // namespace

TEST_CASE("tpusim opt prints the module the pipeline leaves, and --passes runs only some passes", "[sim][opt]") {
  const fs::path dir = TempDir("opt_batch_norm");
  WriteText(dir / "m.hlo", kBatchNorm);
  const std::string all = RunOk("opt " + (dir / "m.hlo").string());
  CHECK_THAT(all, Catch::Contains("rsqrt(") && !Catch::Contains("batch-norm"));
  CHECK_THAT(all, Catch::Contains("f32[4,32,10,10]{3,2,1,0:T(8,128)} add("));  // layout assignment ran
  const std::string one = RunOk("opt " + (dir / "m.hlo").string() + " --passes batch-norm-expansion");
  CHECK_THAT(one, Catch::Contains("rsqrt(") && !Catch::Contains("T(8,128)"));
  const std::string none = RunOk("opt " + (dir / "m.hlo").string() + " --passes layout-assignment");
  CHECK_THAT(none, Catch::Contains("batch-norm-inference"));
}

TEST_CASE("tpusim opt --dump-after all prints the module after every pass, in pipeline order", "[sim][opt]") {
  const fs::path dir = TempDir("opt_dump");
  WriteText(dir / "m.hlo", kBatchNorm);
  const std::string out = RunOk("opt " + (dir / "m.hlo").string() + " --dump-after all");
  std::size_t at = 0;
  for (const char* pass : {"memory-spaces", "async-collectives", "fused-attention-expansion", "batch-norm-expansion",
                           "strided-convolutions", "dot-convolutions", "call-inlining", "dce", "algebraic-simplifier",
                           "f8-conversion", "f16-normalization", "layout-assignment", "degenerate-reduce-dims", "layout-copies",
                           "dot-transpose-folding", "dot-dimension-sorter", "contraction-split", "reduce-split", "host-offload"}) {
    INFO(pass);
    at = out.find(std::string("// after pass ") + pass + "\nHloModule bn", at);
    CHECK(at != std::string::npos);
  }
  const std::string one = RunOk("opt " + (dir / "m.hlo").string() + " --dump-after batch-norm-expansion");
  CHECK(one.rfind("// after pass batch-norm-expansion\nHloModule bn", 0) == 0);
  CHECK_THAT(one, !Catch::Contains("T(8,128)"));
}

TEST_CASE("tpusim opt refuses an unknown pass, listing the passes", "[sim][opt]") {
  const fs::path dir = TempDir("opt_unknown");
  WriteText(dir / "m.hlo", kBatchNorm);
  CHECK_THAT(RunExpectingError("opt " + (dir / "m.hlo").string() + " --passes layout-assignment,nope"),
             Catch::Contains("unknown pass 'nope'; the passes are: memory-spaces, async-collectives,"));
  CHECK_THAT(RunExpectingError("opt " + (dir / "m.hlo").string() + " --passes layout-assignment --dump-after call-inlining"),
             Catch::Contains("--dump-after call-inlining: no such pass ran"));
}

TEST_CASE("tpusim opt on every shared workload verifies after each pass, and its output runs in the same cycles",
          "[sim][opt][workload]") {
  const fs::path shared = fs::path(TPUSIM_SHARED_DIR) / "workloads/xla";
  const fs::path dir = TempDir("opt_workloads");
  for (const auto& entry : fs::directory_iterator(shared)) {
    if (entry.path().extension() != ".hlo") continue;
    INFO(entry.path().filename());
    RunOk("opt " + entry.path().string() + " -o " + (dir / entry.path().filename()).string());
  }
  // The module after tpusim's passes compiles to the same program: the passes leave it as they
  // would leave it again.
  for (const char* name : {"layer_norm_1x4096x768_bf16", "isolated_convolution", "depthwise_conv_3x3_1x256x56x56_bf16",
                           "dot_bf16_0", "topk_logits_k10_1x50000_bf16", "dynamic_slice_loop_1x2048x768_bf16", "while"}) {
    INFO(name);
    const std::string file = std::string(name) + ".hlo";
    CHECK(Cycles(dir / file) == Cycles(shared / file));
  }
}
