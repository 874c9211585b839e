// TransformerEngine fused attention expanded into plain HLO (compiler/passes/fused_attention_expansion.h):
// the expanded module, run by the reference evaluator, against a hand-written unblocked attention
// (tests/compiler/fused_attention_test_support.h); the refusals of unsupported configurations.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/fused_attention_expansion.h"
#include "isa/error.h"
#include "tests/compiler/fused_attention_test_support.h"

using namespace tpusim;
using namespace tpusim::attention_test;
using hlo::Literal;
using isa::ElementType;

namespace {

// Uniform values in [-range, range], rounded to bf16, from a fixed linear congruential sequence.
Literal RandomBf16(std::vector<int64_t> dims, double range, uint64_t seed) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<double> values(count);
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& v : values) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v = range * (static_cast<double>(state >> 11) / 9007199254740992.0 * 2 - 1);
  }
  return Literal::FromDoubles(ElementType::kBF16, std::move(dims), values);
}

std::vector<Literal> Inputs(const Sizes& z, bool backward) {
  std::vector<Literal> inputs;
  inputs.push_back(RandomBf16({1, z.s, z.h, z.d}, 2.0, 1));
  inputs.push_back(RandomBf16({1, z.s, z.hkv, z.d}, 2.0, 2));
  inputs.push_back(RandomBf16({1, z.s, z.hkv, z.d}, 1.0, 3));
  if (backward) inputs.push_back(RandomBf16({1, z.s, z.h, z.d}, 1.0, 4));
  return inputs;
}

// The expanded module, with query blocks of `block_rows` rows.
std::unique_ptr<hlo::Module> Expanded(const std::string& text, const Sizes& z, int64_t block_rows, int expected_calls) {
  auto module = hlo::ParseModule(text, "test.hlo");
  compiler::FusedAttentionOptions options;
  options.max_score_block_bytes = static_cast<uint64_t>(z.h * block_rows * z.s) * 4;
  REQUIRE(compiler::ExpandFusedAttention(*module, options) == expected_calls);
  const std::string printed = hlo::ToString(*module);
  REQUIRE(printed.find("custom-call") == std::string::npos);
  // The loop runs s / block_rows times: its condition compares the counter with that constant.
  REQUIRE(printed.find("s32[] constant(" + std::to_string(z.s / block_rows) + ")") != std::string::npos);
  return module;
}

struct Difference {
  double worst = 0;     // largest |got - want| over finite pairs
  double largest = 0;   // largest |want|
  int64_t mismatched_infinities = 0;
  int64_t nans = 0;  // on either side
};

Difference Compare(const Literal& got, const Literal& want) {
  REQUIRE(got.element_count() == want.element_count());
  Difference d;
  for (int64_t i = 0; i < got.element_count(); ++i) {
    const double a = got.GetDouble(i), b = want.GetDouble(i);
    if (std::isinf(b) || std::isinf(a)) {
      if (a != b) ++d.mismatched_infinities;
      continue;
    }
    if (std::isnan(a) || std::isnan(b)) {
      ++d.nans;
      continue;
    }
    d.worst = std::max(d.worst, std::abs(a - b));
    d.largest = std::max(d.largest, std::abs(b));
  }
  return d;
}

}  // namespace

// Bounds. Both sides round at the same points (P to bf16 before the P V and P^T dO dots, dS to
// bf16, results to bf16) but compute P differently (E / l against exp(S - lse)) and sum in other
// orders (dK, dV over the query blocks), so a value next to a bf16 rounding boundary may round the
// other way: one bf16 ulp of that value. For a result that is at most one ulp of the largest result
// (2^-8 relative); a flip in P or dS moves a result by 2^-8 of one of its terms, far less.
// softmax_aux is f32 on both sides, computed from the same scores in the same order: 1e-5 (both
// give identical values today; the bound leaves room for a different reduction order).
TEST_CASE("fused attention forward expansion matches an unblocked reference", "[attention]") {
  Sizes z;
  for (int64_t q_length : {256, 200}) {
    CAPTURE(q_length);
    auto expanded = Expanded(ForwardModule(z, Config(z), q_length), z, 64, 1);
    const std::vector<Literal> inputs = Inputs(z, false);
    const Literal got = eval::Evaluate(*expanded, inputs);
    const Literal want = eval::Evaluate(*hlo::ParseModule(ReferenceModule(z, false, q_length, true), "ref.hlo"), inputs);
    const Difference o = Compare(got.elements()[0], want.elements()[0]);
    const Difference lse = Compare(got.elements()[1], want.elements()[1]);
    CAPTURE(o.worst, o.largest, lse.worst, lse.largest);
    CHECK(o.largest > 0.1);  // the outputs are not trivially zero
    CHECK(o.worst <= std::ldexp(o.largest, -8));
    CHECK(o.mismatched_infinities == 0);
    CHECK(o.nans == 0);
    CHECK(lse.worst <= 1e-5);
    CHECK(lse.mismatched_infinities == 0);
    CHECK(lse.nans == 0);
    // Padded query rows: O = 0 and lse = -inf (rows 200..255 of each head).
    if (q_length < z.s) {
      CHECK(got.elements()[0].GetDouble((q_length * z.h) * z.d) == 0.0);
      CHECK(std::isinf(got.elements()[1].GetDouble(q_length)));
    }
  }
}

TEST_CASE("fused attention backward expansion matches an unblocked reference", "[attention]") {
  Sizes z;
  for (int mask_type : {3, 1}) {
    CAPTURE(mask_type);
    z.mask_type = mask_type;
    auto expanded = Expanded(TrainingModule(z, Config(z), z.s), z, 64, 2);
    const std::vector<Literal> inputs = Inputs(z, true);
    const Literal got = eval::Evaluate(*expanded, inputs);
    const Literal want =
        eval::Evaluate(*hlo::ParseModule(ReferenceModule(z, true, z.s, mask_type == 3), "ref.hlo"), inputs);
    for (int r = 0; r < 3; ++r) {
      const Difference x = Compare(got.elements()[r], want.elements()[r]);
      CAPTURE(r, x.worst, x.largest);
      CHECK(x.largest > 0.01);
      CHECK(x.worst <= std::ldexp(x.largest, -8));
      CHECK(x.mismatched_infinities == 0);
      CHECK(x.nans == 0);
    }
  }
}

TEST_CASE("fused attention expansion refuses configurations it does not implement", "[attention]") {
  Sizes z;
  const auto error = [&](const std::string& field, const std::string& value) {
    auto module = hlo::ParseModule(ForwardModule(z, Config(z, field, value), z.s), "test.hlo");
    try {
      compiler::ExpandFusedAttention(*module);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string where = "test.hlo:12:3: instruction 'fwd': te_fused_attn_forward_ffi: backend_config field ";
  CHECK(error("bias_type", "1 : i64") == where + "'bias_type' = 1 is not supported: only 0 (NVTE_NO_BIAS) is expanded");
  CHECK(error("dropout_probability", "1.000000e-01 : f64") ==
        where + "'dropout_probability' = 0.100000 is not supported: only 0 is expanded");
  CHECK(error("qkv_layout", "3 : i64").find(where + "'qkv_layout' = 3 is not supported: only 9") == 0);
  CHECK(error("mask_type", "4 : i64").find(where + "'mask_type' = 4 is not supported") == 0);
  CHECK(error("attn_heads", "8 : i64") == where + "'attn_heads' = 8 does not match the operands (4)");
  CHECK(error("window_size_left", "128 : i64").find(where + "'window_size_left' = 128 is not supported") == 0);
}


TEST_CASE("fused attention expansion on the Llama 3 8B module", "[attention]") {
  const std::string path = std::string(TPUSIM_SHARED_DIR) + "/workloads/xla/llama3_8b_bf16_activation_offloading_1x8.hlo";
  std::ifstream file(path);
  REQUIRE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  auto module = hlo::ParseModule(text.str(), "llama.hlo");
  // One forward, one backward; both sit in the layer loops' bodies.
  REQUIRE(compiler::ExpandFusedAttention(*module) == 2);
  REQUIRE_NOTHROW(hlo::Verify(*module));  // shapes of the calls and their readers agree
  const std::string printed = hlo::ToString(*module);
  CHECK(printed.find("custom_call_target=\"te_fused_attn") == std::string::npos);
  // 8192 queries x 32 heads x 8192 keys: 256-row blocks of 256 MiB scores, 32 iterations.
  CHECK(printed.find("f32[1,32,256,8192]") != std::string::npos);
  CHECK(printed.find("te_fused_attn_forward_ffi.5.expanded = (bf16[1,8192,32,128]{3,2,1,0}, f32[1,32,8192,1]{3,2,1,0}, "
                     "u32[2,4]{1,0}) call(") != std::string::npos);
  CHECK(printed.find("te_fused_attn_backward_ffi.6.expanded = (bf16[1,8192,32,128]{3,2,1,0}, bf16[1,8192,8,128]{3,2,1,0}, "
                     "bf16[1,8192,8,128]{3,2,1,0}) call(") != std::string::npos);
}
