// The plain HLO that TransformerEngine's fused attention custom-calls are expanded into
// (compiler/passes/fused_attention_expansion.h says when and why): text of a module whose entry
// takes the custom-call's used operands and returns its real outputs, processing the queries in
// blocks of `block_rows` inside a `while` loop so that only one block's scores exist at a time.
//
// Forward, for query block i (rows r = i*block_rows ...), per query head h (kv head h / (H/Hkv)):
//   S = scale * Q_blk K^T (bf16 x bf16 -> f32 on the MXU), masked; m = rowmax; E = exp(S - m)
//   (0 where masked); l = rowsum E; lse = m + log l (cuDNN's "stats", -inf for a row with no
//   valid key); P = E / l in f32, rounded to bf16 for the P V dot (cuDNN rounds the
//   unnormalized exp(S - running max) and divides by l at the end); O_blk = P V rounded to bf16.
// Backward, same blocks: P = exp(S - lse) (0 where masked); dV += P^T dO and dK += dS^T Q in f32
// over the blocks; dP = dO V^T; D = rowsum(dO * O) (f32, once before the loop);
// dS = P (dP - D) scale, rounded to bf16 for its two dots; dQ_blk = dS K. dK and dV are per query
// head in the loop and summed over the heads that share a kv head at the end, then rounded.
// Mask: causal is top-left (key j <= query i); padding uses the cumulative sequence lengths
// cu[b+1] - cu[b] read at run time (queries at or past the length and keys past it are masked;
// such rows give O = 0, dQ = 0 and lse = -inf).
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::compiler {

struct FusedAttentionShape {
  int64_t batch = 0;
  int64_t q_seq = 0;
  int64_t kv_seq = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t qk_dim = 0;
  int64_t v_dim = 0;
  int64_t block_rows = 0;  // divides q_seq
  double scale = 1.0;
  bool causal = false;
  bool padding = false;  // the entry also takes cu_seqlens for q and kv (s32[batch + 1])
};

// Computation names start with `prefix` (the entry is `prefix`.main). Parameter shapes (their
// layouts included) are given as text so that the call's operands fit exactly.
struct FusedAttentionOperands {
  std::string q, k, v, q_cu_seqlens, kv_cu_seqlens;  // cu_seqlens used only with padding
  std::string softmax_aux, output, d_output;          // backward only
};

// Entry (q, k, v [, q_cu, kv_cu]) -> (O bf16[b,sq,h,dv], softmax_aux f32[b,h,sq,1], rng_state
// u32[2,4] zeros).
std::string FusedAttentionForwardHlo(const FusedAttentionShape& shape, const FusedAttentionOperands& operands,
                                     const std::string& prefix);

// Entry (q, k, v, softmax_aux, O, dO [, q_cu, kv_cu]) -> (dQ, dK, dV) in q's, k's and v's dims.
std::string FusedAttentionBackwardHlo(const FusedAttentionShape& shape, const FusedAttentionOperands& operands,
                                      const std::string& prefix);

}  // namespace tpusim::compiler
