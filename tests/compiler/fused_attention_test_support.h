// HLO text of small modules that call TransformerEngine's fused attention the way JAX writes it
// (operands, layouts and backend_config as in llama3_8b_bf16_activation_offloading_1x8.hlo), and a
// hand-written unblocked attention in plain HLO to compare the expansion with
// (compiler/passes/fused_attention_expansion.h). Shared by tests/compiler and tests/sim.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

namespace tpusim::attention_test {

struct Sizes {
  int64_t s = 256, h = 4, hkv = 2, d = 64;
  int mask_type = 3;
  std::string scale = "0.125";
};

inline std::string Dims(int64_t a, int64_t b, int64_t c, int64_t d) {
  return "[" + std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c) + "," + std::to_string(d) + "]";
}

// TE's backend_config as JAX writes it for `z`, with `override_value` in place of the value of
// `override_field` (if given).
inline std::string Config(const Sizes& z, const std::string& override_field = "", const std::string& override_value = "") {
  const std::pair<std::string, std::string> fields[] = {
      {"attn_heads", std::to_string(z.h) + " : i64"}, {"bias_batch", "0 : i64"}, {"bias_heads", "0 : i64"},
      {"bias_type", "0 : i64"}, {"deterministic", "false"}, {"dropout_probability", "0.000000e+00 : f64"},
      {"input_batch", "1 : i64"}, {"is_training", "true"}, {"kv_max_seqlen", std::to_string(z.s) + " : i64"},
      {"mask_type", std::to_string(z.mask_type) + " : i64"}, {"max_segments_per_seq", "1 : i64"},
      {"num_gqa_groups", std::to_string(z.hkv) + " : i64"}, {"q_max_seqlen", std::to_string(z.s) + " : i64"},
      {"qk_head_dim", std::to_string(z.d) + " : i64"}, {"qkv_layout", "9 : i64"},
      {"scaling_factor", z.scale + " : f64"}, {"v_head_dim", std::to_string(z.d) + " : i64"},
      {"window_size_left", "-1 : i64"}, {"window_size_right", "-1 : i64"}};
  std::string text = "{";
  for (const auto& [name, value] : fields) {
    if (text.size() > 1) text += ", ";
    text += name + " = " + (name == override_field ? override_value : value);
  }
  return text + "}";
}

// Parameters q, k, v (and dO with `backward`) and the sequence lengths' cumulative form.
inline std::string Parameters(const Sizes& z, bool backward, int64_t q_length) {
  const std::string q = "bf16" + Dims(1, z.s, z.h, z.d), kv = "bf16" + Dims(1, z.s, z.hkv, z.d);
  std::string text = "  %q = " + q + "{3,2,1,0} parameter(0)\n  %k = " + kv + "{3,2,1,0} parameter(1)\n  %v = " + kv +
                     "{3,2,1,0} parameter(2)\n";
  if (backward) text += "  %do = " + q + "{3,2,1,0} parameter(3)\n";
  return text + "  %bias = bf16[0]{0} constant({})\n  %seed = u32[2]{0} constant({0, 0})\n  %cuq = s32[2]{0} constant({0, " +
         std::to_string(q_length) + "})\n  %cukv = s32[2]{0} constant({0, " + std::to_string(z.s) +
         "})\n  %none = f32[0]{0} constant({})\n";
}

inline std::string ForwardCall(const Sizes& z, const std::string& config) {
  const std::string q = "bf16" + Dims(1, z.s, z.h, z.d), kv = "bf16" + Dims(1, z.s, z.hkv, z.d),
                    aux = "f32" + Dims(1, z.h, z.s, 1);
  return "  %fwd = (" + q + "{3,2,1,0}, " + aux + "{3,2,1,0}, u32[2,4]{1,0}, u8[288]{0}) custom-call(%q, %k, %v, %bias, "
         "%seed, %cuq, %cukv, %none, %none, %none, %none, %none, %none), custom_call_target=\"te_fused_attn_forward_ffi\", "
         "operand_layout_constraints={" + q + "{3,2,1,0}, " + kv + "{3,2,1,0}, " + kv + "{3,2,1,0}, bf16[0]{0}, u32[2]{0}, "
         "s32[2]{0}, s32[2]{0}, f32[0]{0}, f32[0]{0}, f32[0]{0}, f32[0]{0}, f32[0]{0}, f32[0]{0}}, "
         "api_version=API_VERSION_TYPED_FFI, backend_config=" + config + "\n"
         "  %o = " + q + "{3,2,1,0} get-tuple-element(%fwd), index=0\n"
         "  %aux = " + aux + "{3,2,1,0} get-tuple-element(%fwd), index=1\n"
         "  %rng = u32[2,4]{1,0} get-tuple-element(%fwd), index=2\n";
}

inline std::string BackwardCall(const Sizes& z, const std::string& config) {
  const std::string q = "bf16" + Dims(1, z.s, z.h, z.d), kv = "bf16" + Dims(1, z.s, z.hkv, z.d),
                    aux = "f32" + Dims(1, z.h, z.s, 1);
  return "  %bwd = (" + q + "{3,2,1,0}, " + kv + "{3,2,1,0}, " + kv + "{3,2,1,0}, bf16[0]{0}, u8[4096]{0}) custom-call("
         "%q, %k, %v, %bias, %aux, %rng, %o, %do, %cuq, %cukv, %none, %none, %none, %none, %none, %none), "
         "custom_call_target=\"te_fused_attn_backward_ffi\", api_version=API_VERSION_TYPED_FFI, backend_config=" + config + "\n"
         "  %dq = " + q + "{3,2,1,0} get-tuple-element(%bwd), index=0\n"
         "  %dk = " + kv + "{3,2,1,0} get-tuple-element(%bwd), index=1\n"
         "  %dv = " + kv + "{3,2,1,0} get-tuple-element(%bwd), index=2\n";
}

// Forward alone: outputs (O, softmax_aux). `q_length` < s pads the queries (mask types 1, 3).
inline std::string ForwardModule(const Sizes& z, const std::string& config, int64_t q_length) {
  const std::string q = "bf16" + Dims(1, z.s, z.h, z.d), aux = "f32" + Dims(1, z.h, z.s, 1);
  return "HloModule te_forward\n\nENTRY %main {\n" + Parameters(z, false, q_length) + ForwardCall(z, config) +
         "  ROOT %out = (" + q + ", " + aux + ") tuple(%o, %aux)\n}\n";
}

// Forward then backward (dO a parameter): outputs (dQ, dK, dV).
inline std::string TrainingModule(const Sizes& z, const std::string& config, int64_t q_length) {
  const std::string q = "bf16" + Dims(1, z.s, z.h, z.d), kv = "bf16" + Dims(1, z.s, z.hkv, z.d);
  return "HloModule te_training\n\nENTRY %main {\n" + Parameters(z, true, q_length) + ForwardCall(z, config) +
         BackwardCall(z, config) + "  ROOT %out = (" + q + ", " + kv + ", " + kv + ") tuple(%dq, %dk, %dv)\n}\n";
}

}  // namespace tpusim::attention_test

namespace tpusim::attention_test {

// Unblocked attention in plain HLO, written independently of the expansion: GQA by grouping the
// query heads ([b, s, hkv, g, d]) and dots with batch dims in place; masked scores -inf;
// P = exp(S - lse). Forward outputs (O, softmax_aux); with `backward`, (dQ, dK, dV).
inline std::string ReferenceModule(const Sizes& z, bool backward, int64_t q_length, bool causal) {
  const int64_t s = z.s, h = z.h, hk = z.hkv, g = z.h / z.hkv, d = z.d;
  const auto sh = [](const char* t, std::initializer_list<int64_t> dims) {
    std::string x = std::string(t) + "[";
    for (int64_t v : dims) x += (x.back() == '[' ? "" : ",") + std::to_string(v);
    return x + "]";
  };
  const std::string sc = sh("f32", {1, hk, s, g, s}), pr = sh("pred", {1, hk, s, g, s}), row = sh("f32", {1, hk, s, g}),
                    i5 = sh("s32", {1, hk, s, g, s}), q5 = sh("bf16", {1, s, hk, g, d});
  std::string t = "HloModule reference\n\n%max (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                  "  %b = f32[] parameter(1)\n  ROOT %m = f32[] maximum(%a, %b)\n}\n\n%add (a: f32[], b: f32[]) -> f32[] {\n"
                  "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\nENTRY %main {\n";
  t += "  %q = " + sh("bf16", {1, s, h, d}) + " parameter(0)\n  %k = " + sh("bf16", {1, s, hk, d}) +
       " parameter(1)\n  %v = " + sh("bf16", {1, s, hk, d}) + " parameter(2)\n";
  if (backward) t += "  %do = " + sh("bf16", {1, s, h, d}) + " parameter(3)\n";
  t += "  %q5 = " + q5 + " reshape(%q)\n"
       "  %raw = " + sc + " dot(%q5, %k), lhs_batch_dims={0,2}, lhs_contracting_dims={4}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}\n"
       "  %scale = f32[] constant(" + z.scale + ")\n  %scale.b = " + sc + " broadcast(%scale), dimensions={}\n"
       "  %scores = " + sc + " multiply(%raw, %scale.b)\n"
       "  %qi = " + i5 + " iota(), iota_dimension=2\n  %kj = " + i5 + " iota(), iota_dimension=4\n"
       "  %qlen = s32[] constant(" + std::to_string(q_length) + ")\n  %qlen.b = " + i5 + " broadcast(%qlen), dimensions={}\n"
       "  %inside = " + pr + " compare(%qi, %qlen.b), direction=LT\n"
       "  %before = " + pr + " compare(%kj, %qi), direction=LE\n";
  t += causal ? "  %valid = " + pr + " and(%inside, %before)\n" : "  %valid = " + pr + " copy(%inside)\n";
  t += "  %ninf = f32[] constant(-inf)\n  %ninf.b = " + sc + " broadcast(%ninf), dimensions={}\n"
       "  %zero = f32[] constant(0)\n  %zero.b = " + sc + " broadcast(%zero), dimensions={}\n"
       "  %masked = " + sc + " select(%valid, %scores, %ninf.b)\n"
       "  %m = " + row + " reduce(%masked, %ninf), dimensions={4}, to_apply=%max\n"
       "  %m.b = " + sc + " broadcast(%m), dimensions={0,1,2,3}\n  %sub = " + sc + " subtract(%masked, %m.b)\n"
       "  %ex = " + sc + " exponential(%sub)\n  %e = " + sc + " select(%valid, %ex, %zero.b)\n"
       "  %l = " + row + " reduce(%e, %zero), dimensions={4}, to_apply=%add\n  %logl = " + row + " log(%l)\n"
       "  %lse = " + row + " add(%m, %logl)\n  %lse.b = " + sc + " broadcast(%lse), dimensions={0,1,2,3}\n"
       "  %sl = " + sc + " subtract(%scores, %lse.b)\n  %pe = " + sc + " exponential(%sl)\n"
       "  %p = " + sc + " select(%valid, %pe, %zero.b)\n  %pb = " + sh("bf16", {1, hk, s, g, s}) + " convert(%p)\n"
       "  %o5 = " + sh("f32", {1, hk, s, g, d}) + " dot(%pb, %v), lhs_batch_dims={0,1}, lhs_contracting_dims={4}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}\n"
       "  %o5t = " + sh("f32", {1, s, hk, g, d}) + " transpose(%o5), dimensions={0,2,1,3,4}\n"
       "  %o5b = " + q5 + " convert(%o5t)\n  %o = " + sh("bf16", {1, s, h, d}) + " reshape(%o5b)\n"
       "  %lset = " + sh("f32", {1, hk, g, s}) + " transpose(%lse), dimensions={0,1,3,2}\n"
       "  %aux = " + sh("f32", {1, h, s, 1}) + " reshape(%lset)\n";
  if (!backward) return t + "  ROOT %out = (" + sh("bf16", {1, s, h, d}) + ", " + sh("f32", {1, h, s, 1}) + ") tuple(%o, %aux)\n}\n";
  const std::string f5 = sh("f32", {1, s, hk, g, d}), kvf = sh("f32", {1, hk, s, d});
  t += "  %do5 = " + q5 + " reshape(%do)\n"
       "  %dv.f = " + kvf + " dot(%pb, %do5), lhs_batch_dims={0,1}, lhs_contracting_dims={2,3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1,3}\n"
       "  %dv.b = " + sh("bf16", {1, hk, s, d}) + " convert(%dv.f)\n  %dv = " + sh("bf16", {1, s, hk, d}) + " transpose(%dv.b), dimensions={0,2,1,3}\n"
       "  %dp = " + sc + " dot(%do5, %v), lhs_batch_dims={0,2}, lhs_contracting_dims={4}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}\n"
       "  %do.f = " + f5 + " convert(%do5)\n  %o.f = " + f5 + " convert(%o5b)\n  %prod = " + f5 + " multiply(%do.f, %o.f)\n"
       "  %dsum = " + sh("f32", {1, s, hk, g}) + " reduce(%prod, %zero), dimensions={4}, to_apply=%add\n"
       "  %dsum.t = " + row + " transpose(%dsum), dimensions={0,2,1,3}\n  %dsum.b = " + sc + " broadcast(%dsum.t), dimensions={0,1,2,3}\n"
       "  %dpd = " + sc + " subtract(%dp, %dsum.b)\n  %pdpd = " + sc + " multiply(%p, %dpd)\n  %ds = " + sc + " multiply(%pdpd, %scale.b)\n"
       "  %dsb = " + sh("bf16", {1, hk, s, g, s}) + " convert(%ds)\n"
       "  %dq5 = " + sh("f32", {1, hk, s, g, d}) + " dot(%dsb, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={4}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}\n"
       "  %dq5t = " + f5 + " transpose(%dq5), dimensions={0,2,1,3,4}\n  %dq5b = " + q5 + " convert(%dq5t)\n"
       "  %dq = " + sh("bf16", {1, s, h, d}) + " reshape(%dq5b)\n"
       "  %dk.f = " + kvf + " dot(%dsb, %q5), lhs_batch_dims={0,1}, lhs_contracting_dims={2,3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1,3}\n"
       "  %dk.b = " + sh("bf16", {1, hk, s, d}) + " convert(%dk.f)\n  %dk = " + sh("bf16", {1, s, hk, d}) + " transpose(%dk.b), dimensions={0,2,1,3}\n";
  return t + "  ROOT %out = (" + sh("bf16", {1, s, h, d}) + ", " + sh("bf16", {1, s, hk, d}) + ", " + sh("bf16", {1, s, hk, d}) +
         ") tuple(%dq, %dk, %dv)\n}\n";
}

}  // namespace tpusim::attention_test
