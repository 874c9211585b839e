// TransformerEngine's fused attention (JAX: `te_fused_attn_forward_ffi`,
// `te_fused_attn_backward_ffi`, GPU custom-calls into cuDNN) expanded into plain HLO that the
// compiler lowers: each such custom-call becomes a `call` of a computation built by
// compiler/passes/fused_attention_hlo.h (a `while` over blocks of query rows), before layout
// assignment (docs/compiler.md, "TransformerEngine fused attention").
//
// Operands (TE's FFI order): forward q, k, v, bias, seed, q_cu_seqlens, kv_cu_seqlens, then
// unused seq-offset and segment placeholders; backward q, k, v, bias, softmax_aux, rng_state,
// output, d_output, q_cu_seqlens, kv_cu_seqlens, placeholders. Results: forward (O, softmax_aux,
// rng_state, workspace), backward (dQ, dK, dV, dbias, workspace). rng_state is zeros (no dropout);
// dbias and the workspace, which nothing reads in a JAX module, become zeros where something does.
//
// Supported backend_config: qkv_layout 9 (NVTE_BSHD_BSHD_BSHD: q [b,s,h,d], k, v [b,s,hkv,d]),
// mask_type 0..3 (no mask, padding, causal, padding + causal; causal is top-left), bias_type 0,
// dropout_probability 0, window_size_left/right -1 (right 0 also with a causal mask),
// max_segments_per_seq 1, attn_heads a multiple of num_gqa_groups; the sizes in the config must
// match the operands. Anything else is a tpusim::Error naming the instruction and the field.
#pragma once

#include <cstdint>

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

struct FusedAttentionOptions {
  // The largest f32 score block [b, h, block_rows, s_kv] the loop may make: block_rows is the
  // largest divisor of s_q within it (256 rows for Llama 3 8B's 32 heads x 8192 keys, 256 MiB;
  // a handful of such arrays are live at once in the loop body).
  uint64_t max_score_block_bytes = 256ull << 20;
};

// Rewrites every such custom-call in the module; returns how many.
int ExpandFusedAttention(hlo::Module& module, const FusedAttentionOptions& options = {});

}  // namespace tpusim::compiler
