#include "compiler/passes/fused_attention_expansion.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/fused_attention_hlo.h"
#include "compiler/passes/new_instruction.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;
using isa::ElementType;

constexpr const char* kForward = "te_fused_attn_forward_ffi";
constexpr const char* kBackward = "te_fused_attn_backward_ffi";

std::string Trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
}

// TE's backend_config as JAX writes it: `{attn_heads = 32 : i64, deterministic = false, ...}`.
class AttentionConfig {
 public:
  explicit AttentionConfig(const Instruction& call) : call_(call) {
    const hlo::Attribute* attribute = call.FindAttribute("backend_config");
    std::string text;
    if (attribute != nullptr) {
      if (const auto* raw = std::get_if<hlo::RawText>(&attribute->value)) text = raw->text;
      if (const auto* quoted = std::get_if<hlo::QuotedString>(&attribute->value)) text = quoted->value;
    }
    text = Trim(text);
    if (text.size() < 2 || text.front() != '{' || text.back() != '}') {
      Fail("backend_config", "is missing or not of the form {name = value, ...}");
    }
    std::size_t start = 1;
    while (start < text.size() - 1) {
      std::size_t end = text.find(',', start);
      if (end == std::string::npos) end = text.size() - 1;
      const std::string entry = text.substr(start, end - start);
      const auto equals = entry.find('=');
      if (equals != std::string::npos) {
        std::string value = entry.substr(equals + 1);
        value = Trim(value.substr(0, value.find(':')));  // `32 : i64` -> `32`
        fields_[Trim(entry.substr(0, equals))] = value;
      }
      start = end + 1;
    }
  }

  int64_t Int(const std::string& name) const {
    const std::string& text = Text(name);
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0') Fail(name, "= " + text + " is not an integer");
    return value;
  }
  double Double(const std::string& name) const {
    const std::string& text = Text(name);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0') Fail(name, "= " + text + " is not a number");
    return value;
  }
  // `name` must equal `expected`, or the message says what is supported.
  void Expect(const std::string& name, int64_t expected, const std::string& why) const {
    const int64_t value = Int(name);
    if (value != expected) Fail(name, "= " + std::to_string(value) + " is not supported: " + why);
  }
  [[noreturn]] void Fail(const std::string& field, const std::string& what) const {
    throw Error(call_.Describe() + ": " + call_.GetString("custom_call_target") + ": backend_config field '" +
                field + "' " + what);
  }

 private:
  const std::string& Text(const std::string& name) const {
    const auto found = fields_.find(name);
    if (found == fields_.end()) Fail(name, "is missing");
    return found->second;
  }

  const Instruction& call_;
  std::map<std::string, std::string> fields_;
};

[[noreturn]] void FailOperand(const Instruction& call, std::size_t index, const std::string& what) {
  throw Error(call.Describe() + ": " + call.GetString("custom_call_target") + ": operand " + std::to_string(index) +
              " (" + isa::ToString(call.operand(index)->shape()) + ") " + what);
}

// Operand `index` is a row-major array of `type` and rank `rank` (its dims are returned).
const std::vector<int64_t>& ArrayOperand(const Instruction& call, std::size_t index, ElementType type, int rank,
                                         const char* role) {
  if (index >= call.operand_count()) {
    throw Error(call.Describe() + ": " + call.GetString("custom_call_target") + " has " +
                std::to_string(call.operand_count()) + " operands; operand " + std::to_string(index) + " (" + role +
                ") is missing");
  }
  const isa::Shape& shape = call.operand(index)->shape();
  if (shape.is_tuple || shape.element_type != type || shape.rank() != rank) {
    FailOperand(call, index, std::string("is not the ") + role + " (" + std::string(isa::ElementTypeName(type)) +
                                 ", rank " + std::to_string(rank) + ")");
  }
  if (shape.layout.has_value() && shape.layout->minor_to_major != isa::MajorToMinorOrder(rank)) {
    FailOperand(call, index, std::string("(the ") + role + ") is not row-major");
  }
  return shape.dims;
}

void ExpectDims(const Instruction& call, std::size_t index, const std::vector<int64_t>& dims,
                const std::vector<int64_t>& expected, const char* role) {
  if (dims != expected) {
    isa::Shape want = isa::Shape::Array(call.operand(index)->shape().element_type, expected);
    FailOperand(call, index, std::string("does not fit the ") + role + " " + isa::ToString(want));
  }
}

// The attention's sizes from the operands, checked against the config, and its supported modes.
FusedAttentionShape ShapeOf(const Instruction& call, bool backward, const FusedAttentionOptions& options) {
  const AttentionConfig config(call);
  config.Expect("qkv_layout", 9, "only 9 (NVTE_BSHD_BSHD_BSHD: separate q [b,s,h,d], k and v [b,s,hkv,d]) is expanded");
  config.Expect("bias_type", 0, "only 0 (NVTE_NO_BIAS) is expanded");
  config.Expect("max_segments_per_seq", 1, "only 1 (one segment per sequence) is expanded");
  config.Expect("window_size_left", -1, "only -1 (no sliding window) is expanded");
  const int64_t mask = config.Int("mask_type");
  if (mask < 0 || mask > 3) {
    config.Fail("mask_type", "= " + std::to_string(mask) +
                                 " is not supported: 0..3 (no mask, padding, causal, padding + causal; top-left "
                                 "diagonal) are expanded");
  }
  const int64_t right = config.Int("window_size_right");
  const bool causal = mask == 2 || mask == 3;
  if (right != -1 && !(right == 0 && causal)) {
    config.Fail("window_size_right", "= " + std::to_string(right) + " is not supported: only -1 (or 0 with a causal mask)");
  }
  const double dropout = config.Double("dropout_probability");
  if (dropout != 0.0) config.Fail("dropout_probability", "= " + std::to_string(dropout) + " is not supported: only 0 is expanded");

  const auto& q = ArrayOperand(call, 0, ElementType::kBF16, 4, "q [b,s,h,d]");
  const auto& k = ArrayOperand(call, 1, ElementType::kBF16, 4, "k [b,s,hkv,d]");
  const auto& v = ArrayOperand(call, 2, ElementType::kBF16, 4, "v [b,s,hkv,dv]");
  FusedAttentionShape s;
  s.batch = q[0];
  s.q_seq = q[1];
  s.heads = q[2];
  s.qk_dim = q[3];
  s.kv_seq = k[1];
  s.kv_heads = k[2];
  s.v_dim = v[3];
  s.causal = causal;
  s.padding = mask == 1 || mask == 3;
  s.scale = config.Double("scaling_factor");
  ExpectDims(call, 1, k, {s.batch, s.kv_seq, s.kv_heads, s.qk_dim}, "k");
  ExpectDims(call, 2, v, {s.batch, s.kv_seq, s.kv_heads, s.v_dim}, "v");
  const auto matches = [&](const char* field, int64_t value) {
    if (config.Int(field) != value) {
      config.Fail(field, "= " + std::to_string(config.Int(field)) + " does not match the operands (" +
                             std::to_string(value) + ")");
    }
  };
  matches("input_batch", s.batch);
  matches("q_max_seqlen", s.q_seq);
  matches("kv_max_seqlen", s.kv_seq);
  matches("attn_heads", s.heads);
  matches("num_gqa_groups", s.kv_heads);
  matches("qk_head_dim", s.qk_dim);
  matches("v_head_dim", s.v_dim);
  if (s.kv_heads <= 0 || s.heads % s.kv_heads != 0) {
    config.Fail("num_gqa_groups", "= " + std::to_string(s.kv_heads) + " does not divide attn_heads");
  }
  const std::size_t bias = 3;
  if (bias < call.operand_count() && isa::ElementCount(call.operand(bias)->shape()) != 0) {
    FailOperand(call, bias, "is a bias, but bias_type is 0 (no bias)");
  }
  const std::size_t cu = backward ? 8 : 5;
  if (s.padding) {
    for (std::size_t i = cu; i < cu + 2; ++i) {
      ExpectDims(call, i, ArrayOperand(call, i, ElementType::kS32, 1, "cu_seqlens [b+1]"), {s.batch + 1}, "cu_seqlens");
    }
  }
  if (backward) {
    ExpectDims(call, 4, ArrayOperand(call, 4, ElementType::kF32, 4, "softmax_aux [b,h,s,1]"),
               {s.batch, s.heads, s.q_seq, 1}, "softmax_aux");
    ExpectDims(call, 6, ArrayOperand(call, 6, ElementType::kBF16, 4, "output [b,s,h,dv]"),
               {s.batch, s.q_seq, s.heads, s.v_dim}, "output");
    ExpectDims(call, 7, ArrayOperand(call, 7, ElementType::kBF16, 4, "d_output [b,s,h,dv]"),
               {s.batch, s.q_seq, s.heads, s.v_dim}, "d_output");
  }
  // The largest divisor of s_q whose f32 scores fit the budget (at least one row).
  const uint64_t row_bytes = static_cast<uint64_t>(s.batch * s.heads * s.kv_seq) * 4;
  s.block_rows = 1;
  for (int64_t rows = s.q_seq; rows >= 1; --rows) {
    if (s.q_seq % rows == 0 && static_cast<uint64_t>(rows) * row_bytes <= options.max_score_block_bytes) {
      s.block_rows = rows;
      break;
    }
  }
  return s;
}

// A computation-name prefix no computation of the module starts with.
std::string UniquePrefix(const hlo::Module& module, const std::string& base) {
  for (int n = 0;; ++n) {
    const std::string prefix = n == 0 ? base : base + "." + std::to_string(n);
    bool taken = false;
    for (const auto& computation : module.computations()) {
      if (computation->name().rfind(prefix + ".", 0) == 0) taken = true;
    }
    if (!taken) return prefix;
  }
}

// Zeros of an array `shape` (dbias, workspace) next to `origin`.
Instruction* Zeros(const Instruction& origin, const isa::Shape& shape) {
  Instruction* scalar = AddInstructionFor(origin, origin.name() + ".zero", Opcode::kConstant,
                            isa::Shape::Array(shape.element_type, {}));
  scalar->set_constant(hlo::ConstantForm::kLiteral, hlo::Literal::FromDoubles(shape.element_type, {}, {0.0}), "0");
  Instruction* zeros = AddInstructionFor(origin, origin.name() + ".zeros", Opcode::kBroadcast, shape);
  zeros->AddOperand(scalar);
  zeros->AddAttribute({"dimensions", std::vector<int64_t>{}, {}});
  return zeros;
}

void Expand(hlo::Module& module, Instruction* custom_call, bool backward, const FusedAttentionOptions& options) {
  const FusedAttentionShape shape = ShapeOf(*custom_call, backward, options);
  const isa::Shape& result = custom_call->shape();
  const std::size_t outputs = 3;  // (O, aux, rng) or (dQ, dK, dV); the rest are zeros
  if (!result.is_tuple || result.tuple_shapes.size() < outputs) {
    throw Error(custom_call->Describe() + ": " + custom_call->GetString("custom_call_target") + " returns " +
                isa::ToString(result) + ", not a tuple of at least " + std::to_string(outputs) + " results");
  }
  std::vector<std::size_t> used = {0, 1, 2};
  if (backward) used = {0, 1, 2, 4, 6, 7};
  if (shape.padding) {
    used.push_back(backward ? 8 : 5);
    used.push_back(backward ? 9 : 6);
  }
  FusedAttentionOperands texts;
  const auto text = [&](std::size_t i) { return isa::ToString(custom_call->operand(i)->shape()); };
  texts.q = text(0);
  texts.k = text(1);
  texts.v = text(2);
  if (backward) {
    texts.softmax_aux = text(4);
    texts.output = text(6);
    texts.d_output = text(7);
  }
  if (shape.padding) {
    texts.q_cu_seqlens = text(used[used.size() - 2]);
    texts.kv_cu_seqlens = text(used.back());
  }
  const std::string prefix = UniquePrefix(module, custom_call->name() + ".expanded");
  const std::string hlo_text = backward ? FusedAttentionBackwardHlo(shape, texts, prefix)
                                        : FusedAttentionForwardHlo(shape, texts, prefix);
  std::unique_ptr<hlo::Module> expansion = hlo::ParseModule(hlo_text, custom_call->name() + " (expanded)");
  hlo::Verify(*expansion);  // a generator bug shows here, not as a wrong result
  hlo::Computation* main = expansion->entry();
  // The generated outputs must be the custom-call's first results exactly (layouts aside).
  for (std::size_t i = 0; i < outputs; ++i) {
    isa::Shape want = result.tuple_shapes[i];
    isa::Shape got = main->root()->shape().tuple_shapes.at(i);
    want.layout.reset();
    got.layout.reset();
    if (want.element_type != got.element_type || want.dims != got.dims) {
      throw Error(custom_call->Describe() + ": result " + std::to_string(i) + " is " +
                  isa::ToString(result.tuple_shapes[i]) + "; the expansion gives " + isa::ToString(got));
    }
  }
  for (auto& computation : expansion->ReleaseComputations()) module.AddComputation(std::move(computation));

  hlo::Computation& computation = *custom_call->parent();
  std::vector<isa::Shape> call_results(result.tuple_shapes.begin(), result.tuple_shapes.begin() + outputs);
  Instruction* call = AddInstructionFor(*custom_call, custom_call->name() + ".expanded", Opcode::kCall,
                          isa::Shape::Tuple(std::move(call_results)));
  for (std::size_t i : used) call->AddOperand(custom_call->operand(i));
  call->AddAttribute({"to_apply", main, {}});

  // Readers of the first results read the call; of dbias or the workspace, zeros; anything that
  // reads the tuple whole gets it rebuilt.
  std::vector<Instruction*> readers;
  for (const auto& x : computation.instructions()) {
    for (std::size_t i = 0; i < x->operand_count(); ++i) {
      if (x->operand(i) == custom_call) {
        readers.push_back(x.get());
        break;
      }
    }
  }
  Instruction* whole = nullptr;
  const auto rebuilt = [&]() {
    if (whole != nullptr) return whole;
    whole = AddInstructionFor(*custom_call, custom_call->name() + ".results", Opcode::kTuple, result);
    for (std::size_t i = 0; i < result.tuple_shapes.size(); ++i) {
      if (i < outputs) {
        Instruction* element = AddInstructionFor(*custom_call, custom_call->name() + ".result", Opcode::kGetTupleElement,
                                   result.tuple_shapes[i]);
        element->AddOperand(call);
        element->AddAttribute({"index", int64_t{static_cast<int64_t>(i)}, {}});
        whole->AddOperand(element);
      } else {
        whole->AddOperand(Zeros(*custom_call, result.tuple_shapes[i]));
      }
    }
    return whole;
  };
  for (Instruction* reader : readers) {
    for (std::size_t i = 0; i < reader->operand_count(); ++i) {
      if (reader->operand(i) != custom_call) continue;
      if (reader->opcode() == Opcode::kGetTupleElement && reader->GetInt("index") < static_cast<int64_t>(outputs)) {
        reader->ReplaceOperand(i, call);
      } else if (reader->opcode() == Opcode::kGetTupleElement) {
        // Nothing computes dbias or the workspace: a zero array stands in for the element.
        computation.ReplaceUses(reader, Zeros(*reader, reader->shape()));
        computation.RemoveInstruction(reader);
        break;
      } else {
        reader->ReplaceOperand(i, rebuilt());
      }
    }
  }
  if (computation.root() == custom_call) computation.set_root(rebuilt());
  computation.RemoveInstruction(custom_call);
  computation.OrderOperandsFirst();  // the call and the zeros were appended after their readers
}

}  // namespace

int ExpandFusedAttention(hlo::Module& module, const FusedAttentionOptions& options) {
  std::vector<std::pair<Instruction*, bool>> calls;
  for (const auto& computation : module.computations()) {
    for (const auto& x : computation->instructions()) {
      if (x->opcode() != Opcode::kCustomCall) continue;
      const auto* target = x->Find<hlo::QuotedString>("custom_call_target");
      if (target == nullptr) continue;
      if (target->value == kForward) calls.push_back({x.get(), false});
      if (target->value == kBackward) calls.push_back({x.get(), true});
    }
  }
  for (const auto& [call, backward] : calls) Expand(module, call, backward, options);
  return static_cast<int>(calls.size());
}

}  // namespace tpusim::compiler
