// TransformerEngine fused attention (compiler/passes/fused_attention_expansion.h) end to end: the
// small forward and forward + backward modules of tests/compiler/fused_attention_test_support.h,
// expanded with query blocks of 64 rows (4 loop iterations) and printed as plain HLO, run by
// `tpusim run --check` (tpusim's seeded random inputs; the evaluator runs the same plain HLO).
// The module as written, with its custom-calls, passes too: Compile expands them itself (with one
// block: 256 rows fit the default score budget), and so does run's reference for the evaluator.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/passes/fused_attention_expansion.h"
#include "tests/compiler/fused_attention_test_support.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using namespace tpusim::attention_test;

std::string ExpandedText(const std::string& text, const Sizes& z, int64_t block_rows) {
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  tpusim::compiler::FusedAttentionOptions options;
  options.max_score_block_bytes = static_cast<uint64_t>(z.h * block_rows * z.s) * 4;
  tpusim::compiler::ExpandFusedAttention(*module, options);
  return tpusim::hlo::ToString(*module);
}

}  // namespace

TEST_CASE("fused attention expanded forward and backward pass tpusim run --check", "[attention][run]") {
  const Sizes z;
  const fs::path dir = TempDir("fused_attention");
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"forward", ForwardModule(z, Config(z), 200)},
                                   {"training", TrainingModule(z, Config(z), z.s)}}) {
    CAPTURE(name);
    const fs::path path = dir / (name + ".hlo");
    WriteText(path, ExpandedText(text, z, 64));
    const std::string output = RunOk("run " + path.string() + " --config tpu_v4 --check");
    CHECK(output.find("check passed") != std::string::npos);
    const fs::path original = dir / (name + "_custom_call.hlo");
    WriteText(original, text);
    const std::string as_written = RunOk("run " + original.string() + " --config tpu_v4 --check");
    CHECK(as_written.find("check passed") != std::string::npos);
  }
}
