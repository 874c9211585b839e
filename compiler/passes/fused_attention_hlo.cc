#include "compiler/passes/fused_attention_hlo.h"

#include <cstdio>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace tpusim::compiler {
namespace {

// "bf16[1,4,256,64]".
std::string Sh(const char* type, std::initializer_list<int64_t> dims) {
  std::string text = std::string(type) + "[";
  bool first = true;
  for (int64_t d : dims) {
    if (!first) text += ",";
    text += std::to_string(d);
    first = false;
  }
  return text + "]";
}

std::string F32Text(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

// Builds one computation's instructions line by line.
class Body {
 public:
  // `name = shape op`: the rest of the line follows.
  Body& Line(const std::string& name, const std::string& shape, const std::string& rest) {
    text_ << "  %" << name << " = " << shape << " " << rest << "\n";
    return *this;
  }
  void Root(const std::string& shape, const std::string& rest) { text_ << "  ROOT %root = " << shape << " " << rest << "\n"; }
  std::string str() const { return text_.str(); }

 private:
  std::ostringstream text_;
};

struct Names {
  std::string prefix;
  std::string Comp(const char* what) const { return "%" + prefix + "." + what; }
};

std::string Reducers(const Names& n) {
  return n.Comp("max") + " (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
         "  ROOT %m = f32[] maximum(%a, %b)\n}\n\n" +
         n.Comp("add") + " (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
         "  ROOT %s = f32[] add(%a, %b)\n}\n\n";
}

std::string Condition(const Names& n, const std::string& state, int64_t blocks) {
  return n.Comp("cond") + " (state: " + state + ") -> pred[] {\n  %state = " + state +
         " parameter(0)\n  %i = s32[] get-tuple-element(%state), index=0\n  %n = s32[] constant(" +
         std::to_string(blocks) + ")\n  ROOT %more = pred[] compare(%i, %n), direction=LT\n}\n\n";
}

// The body's first lines: the counter, the block's first row, scalar constants, and `valid3`
// (pred[b,blk,skv]: causal and padding masks for the block's query rows, the same for every head). `qlen`/`kvlen` name
// s32[b] state elements (read only with padding).
void BlockPrologue(Body& b, const FusedAttentionShape& s) {
  const int64_t B = s.batch, H = s.heads, R = s.block_rows, C = s.kv_seq;
  b.Line("i", "s32[]", "get-tuple-element(%state), index=0")
      .Line("rows", "s32[]", "constant(" + std::to_string(R) + ")")
      .Line("row0", "s32[]", "multiply(%i, %rows)")
      .Line("z", "s32[]", "constant(0)")
      .Line("one.i", "s32[]", "constant(1)")
      .Line("next", "s32[]", "add(%i, %one.i)")
      .Line("zero", "f32[]", "constant(0)")
      .Line("zero.b", Sh("f32", {B, H, R, C}), "broadcast(%zero), dimensions={}")
      .Line("scale", "f32[]", "constant(" + F32Text(s.scale) + ")")
      .Line("scale.b", Sh("f32", {B, H, R, C}), "broadcast(%scale), dimensions={}");
  const std::string m3 = Sh("s32", {B, R, C}), p3 = Sh("pred", {B, R, C});
  std::vector<std::string> terms;
  if (s.causal || s.padding) {
    b.Line("qrow", m3, "iota(), iota_dimension=1")
        .Line("row0.b", m3, "broadcast(%row0), dimensions={}")
        .Line("qpos", m3, "add(%qrow, %row0.b)")
        .Line("kpos", m3, "iota(), iota_dimension=2");
  }
  if (s.causal) {
    b.Line("causal", p3, "compare(%kpos, %qpos), direction=LE");
    terms.push_back("%causal");
  }
  if (s.padding) {
    b.Line("qlen.b", m3, "broadcast(%qlen), dimensions={0}")
        .Line("q.ok", p3, "compare(%qpos, %qlen.b), direction=LT")
        .Line("kvlen.b", m3, "broadcast(%kvlen), dimensions={0}")
        .Line("kv.ok", p3, "compare(%kpos, %kvlen.b), direction=LT");
    terms.push_back("%q.ok");
    terms.push_back("%kv.ok");
  }
  if (terms.empty()) {
    b.Line("true", "pred[]", "constant(true)").Line("valid3", p3, "broadcast(%true), dimensions={}");
  } else {
    std::string last = terms[0];
    for (std::size_t t = 1; t < terms.size(); ++t) {
      const std::string name = "mask" + std::to_string(t);
      b.Line(name, p3, "and(" + last + ", " + terms[t] + ")");
      last = "%" + name;
    }
    b.Line("valid3", p3, "copy(" + last + ")");
  }
}

// The block's mask broadcast to the scores' dims for one reader: a broadcast read by one kernel
// is fused into it (loaded with replicating DMAs), one read by two would be materialized.
std::string Valid(Body& b, const FusedAttentionShape& s, const std::string& reader) {
  const std::string name = "valid." + reader;
  b.Line(name, Sh("pred", {s.batch, s.heads, s.block_rows, s.kv_seq}), "broadcast(%valid3), dimensions={0,2,3}");
  return "%" + name;
}

// The entry's first lines: parameters, q/k/v as [b, heads, seq, dim] with k and v repeated for
// every query head of their group, and the sequence lengths (s32[b]).
void EntryPrologue(Body& b, const FusedAttentionShape& s, const FusedAttentionOperands& o, bool backward,
                   std::string& signature) {
  const int64_t B = s.batch, H = s.heads, HK = s.kv_heads, G = s.heads / s.kv_heads, D = s.qk_dim;
  std::vector<std::pair<std::string, std::string>> params = {{"q", o.q}, {"k", o.k}, {"v", o.v}};
  if (backward) {
    params.push_back({"aux", o.softmax_aux});
    params.push_back({"o", o.output});
    params.push_back({"do", o.d_output});
  }
  if (s.padding) {
    params.push_back({"cuq", o.q_cu_seqlens});
    params.push_back({"cukv", o.kv_cu_seqlens});
  }
  signature = "(";
  for (std::size_t p = 0; p < params.size(); ++p) {
    signature += (p ? ", " : "") + params[p].first + ": " + params[p].second;
    b.Line(params[p].first, params[p].second, "parameter(" + std::to_string(p) + ")");
  }
  signature += ")";
  b.Line("qt", Sh("bf16", {B, H, s.q_seq, s.qk_dim}), "transpose(%q), dimensions={0,2,1,3}");
  const auto repeat = [&](const std::string& x, int64_t dim) {
    b.Line(x + "t", Sh("bf16", {B, HK, s.kv_seq, dim}), "transpose(%" + x + "), dimensions={0,2,1,3}")
        .Line(x + "g", Sh("bf16", {B, HK, G, s.kv_seq, dim}), "broadcast(%" + x + "t), dimensions={0,1,3,4}")
        .Line(x + "x", Sh("bf16", {B, H, s.kv_seq, dim}), "reshape(%" + x + "g)");
  };
  repeat("k", s.qk_dim);
  repeat("v", s.v_dim);
  // Transposed once for the dots that contract d: [M, K] x [K, N] runs the MXU far better than
  // [M, K] x [N, K] (a transposing read of the weights in every dot).
  b.Line("kxt", Sh("bf16", {B, H, D, s.kv_seq}), "transpose(%kx), dimensions={0,1,3,2}");
  if (backward) b.Line("vxt", Sh("bf16", {B, H, s.v_dim, s.kv_seq}), "transpose(%vx), dimensions={0,1,3,2}");
  const auto lengths = [&](const std::string& name, const std::string& cu, int64_t full) {
    if (s.padding) {
      b.Line(cu + ".hi", Sh("s32", {B}), "slice(%" + cu + "), slice={[1:" + std::to_string(B + 1) + "]}")
          .Line(cu + ".lo", Sh("s32", {B}), "slice(%" + cu + "), slice={[0:" + std::to_string(B) + "]}")
          .Line(name, Sh("s32", {B}), "subtract(%" + cu + ".hi, %" + cu + ".lo)");
    } else {
      b.Line(name + ".full", "s32[]", "constant(" + std::to_string(full) + ")")
          .Line(name, Sh("s32", {B}), "broadcast(%" + name + ".full), dimensions={}");
    }
  };
  lengths("qlen", "cuq", s.q_seq);
  lengths("kvlen", "cukv", s.kv_seq);
  b.Line("start", "s32[]", "constant(0)").Line("zero", "f32[]", "constant(0)");
}

std::string DotDims(int lhs_contracting, int rhs_contracting) {
  return "lhs_batch_dims={0,1}, lhs_contracting_dims={" + std::to_string(lhs_contracting) +
         "}, rhs_batch_dims={0,1}, rhs_contracting_dims={" + std::to_string(rhs_contracting) + "}";
}

}  // namespace

std::string FusedAttentionForwardHlo(const FusedAttentionShape& s, const FusedAttentionOperands& o,
                                     const std::string& prefix) {
  const Names n{prefix};
  const int64_t B = s.batch, H = s.heads, R = s.block_rows, SQ = s.q_seq, SK = s.kv_seq;
  const std::string qt = Sh("bf16", {B, H, SQ, s.qk_dim}), kx = Sh("bf16", {B, H, s.qk_dim, SK}),
                    vx = Sh("bf16", {B, H, SK, s.v_dim}), len = Sh("s32", {B}), ot = Sh("bf16", {B, H, SQ, s.v_dim}),
                    lse = Sh("f32", {B, H, SQ});
  const std::string state = "(s32[], " + qt + ", " + kx + ", " + vx + ", " + len + ", " + len + ", " + ot + ", " + lse + ")";

  Body body;
  body.Line("state", state, "parameter(0)")
      .Line("qt", qt, "get-tuple-element(%state), index=1")
      .Line("kxt", kx, "get-tuple-element(%state), index=2")
      .Line("vx", vx, "get-tuple-element(%state), index=3")
      .Line("qlen", len, "get-tuple-element(%state), index=4")
      .Line("kvlen", len, "get-tuple-element(%state), index=5")
      .Line("o", ot, "get-tuple-element(%state), index=6")
      .Line("lse", lse, "get-tuple-element(%state), index=7");
  BlockPrologue(body, s);
  const std::string sc = Sh("f32", {B, H, R, SK}), row = Sh("f32", {B, H, R});
  body.Line("qb", Sh("bf16", {B, H, R, s.qk_dim}),
            "dynamic-slice(%qt, %z, %z, %row0, %z), dynamic_slice_sizes={" + std::to_string(B) + "," +
                std::to_string(H) + "," + std::to_string(R) + "," + std::to_string(s.qk_dim) + "}")
      .Line("s", sc, "dot(%qb, %kxt), " + DotDims(3, 2))
      .Line("ss", sc, "multiply(%s, %scale.b)")
      .Line("lowest", "f32[]", "constant(-3.40282347e+38)")
      .Line("lowest.b", sc, "broadcast(%lowest), dimensions={}")
      .Line("sm", sc, "select(" + Valid(body, s, "sm") + ", %ss, %lowest.b)")
      .Line("m", row, "reduce(%sm, %lowest), dimensions={3}, to_apply=" + n.Comp("max"))
      // Masked scores are the lowest f32, so exp(sm - m) is 0 there without a select, unless the
      // whole row is masked (m is the lowest f32 then): such rows get r = 0 and lse = -inf.
      .Line("m.b", sc, "broadcast(%m), dimensions={0,1,2}")
      .Line("shifted", sc, "subtract(%sm, %m.b)")
      .Line("e", sc, "exponential(%shifted)")
      .Line("l", row, "reduce(%e, %zero), dimensions={3}, to_apply=" + n.Comp("add"))
      .Line("lowest.r", row, "broadcast(%lowest), dimensions={}")
      .Line("some", Sh("pred", {B, H, R}), "compare(%m, %lowest.r), direction=GT")
      .Line("logl", row, "log(%l)")
      .Line("lse.any", row, "add(%m, %logl)")
      .Line("ninf", "f32[]", "constant(-inf)")
      .Line("ninf.r", row, "broadcast(%ninf), dimensions={}")
      .Line("lse.blk", row, "select(%some, %lse.any, %ninf.r)")
      .Line("one", "f32[]", "constant(1)")
      .Line("one.r", row, "broadcast(%one), dimensions={}")
      .Line("zero.r", row, "broadcast(%zero), dimensions={}")
      .Line("inv", row, "divide(%one.r, %l)")
      .Line("r", row, "select(%some, %inv, %zero.r)")
      .Line("r.b", sc, "broadcast(%r), dimensions={0,1,2}")
      .Line("p", sc, "multiply(%e, %r.b)")
      .Line("pb", Sh("bf16", {B, H, R, SK}), "convert(%p)")
      .Line("ob", Sh("bf16", {B, H, R, s.v_dim}), "dot(%pb, %vx), " + DotDims(3, 2))
      .Line("o.next", ot, "dynamic-update-slice(%o, %ob, %z, %z, %row0, %z)")
      .Line("lse.next", lse, "dynamic-update-slice(%lse, %lse.blk, %z, %z, %row0)");
  body.Root(state, "tuple(%next, %qt, %kxt, %vx, %qlen, %kvlen, %o.next, %lse.next)");

  Body entry;
  std::string signature;
  EntryPrologue(entry, s, o, false, signature);
  const std::string out = Sh("bf16", {B, SQ, H, s.v_dim}), aux = Sh("f32", {B, H, SQ, 1}),
                    result = "(" + out + ", " + aux + ", u32[2,4])";
  entry.Line("zero.bf16", "bf16[]", "constant(0)")
      .Line("o0", ot, "broadcast(%zero.bf16), dimensions={}")
      .Line("lse0", lse, "broadcast(%zero), dimensions={}")
      .Line("init", state, "tuple(%start, %qt, %kxt, %vx, %qlen, %kvlen, %o0, %lse0)")
      .Line("loop", state, "while(%init), condition=" + n.Comp("cond") + ", body=" + n.Comp("body"))
      .Line("ot", ot, "get-tuple-element(%loop), index=6")
      .Line("out", out, "transpose(%ot), dimensions={0,2,1,3}")
      .Line("lset", lse, "get-tuple-element(%loop), index=7")
      .Line("aux", aux, "reshape(%lset)")
      .Line("zero.u32", "u32[]", "constant(0)")
      .Line("rng", "u32[2,4]", "broadcast(%zero.u32), dimensions={}");
  entry.Root(result, "tuple(%out, %aux, %rng)");

  return "HloModule " + prefix + "\n\n" + Reducers(n) + Condition(n, state, SQ / R) + n.Comp("body") + " (state: " +
         state + ") -> " + state + " {\n" + body.str() + "}\n\nENTRY " + n.Comp("main") + " " + signature + " -> " +
         result + " {\n" + entry.str() + "}\n";
}

std::string FusedAttentionBackwardHlo(const FusedAttentionShape& s, const FusedAttentionOperands& o,
                                      const std::string& prefix) {
  const Names n{prefix};
  const int64_t B = s.batch, H = s.heads, HK = s.kv_heads, G = s.heads / s.kv_heads, R = s.block_rows,
                SQ = s.q_seq, SK = s.kv_seq, D = s.qk_dim, DV = s.v_dim;
  const std::string qt = Sh("bf16", {B, H, SQ, D}), kx = Sh("bf16", {B, H, SK, D}), vx = Sh("bf16", {B, H, SK, DV}),
                    dot_t = Sh("bf16", {B, H, SQ, DV}), row_all = Sh("f32", {B, H, SQ}), len = Sh("s32", {B}),
                    dk = Sh("f32", {B, H, SK, D}), dv = Sh("f32", {B, H, SK, DV});
  const std::string kxt = Sh("bf16", {B, H, D, SK}), vxt = Sh("bf16", {B, H, DV, SK});
  const std::string state = "(s32[], " + qt + ", " + kx + ", " + kxt + ", " + vxt + ", " + dot_t + ", " + row_all +
                            ", " + row_all + ", " + len + ", " + len + ", " + qt + ", " + dk + ", " + dv + ")";
  const auto sizes = [&](int64_t last) {
    return "dynamic_slice_sizes={" + std::to_string(B) + "," + std::to_string(H) + "," + std::to_string(R) +
           (last > 0 ? "," + std::to_string(last) : std::string()) + "}";
  };

  Body body;
  body.Line("state", state, "parameter(0)")
      .Line("qt", qt, "get-tuple-element(%state), index=1")
      .Line("kx", kx, "get-tuple-element(%state), index=2")
      .Line("kxt", kxt, "get-tuple-element(%state), index=3")
      .Line("vxt", vxt, "get-tuple-element(%state), index=4")
      .Line("dot", dot_t, "get-tuple-element(%state), index=5")
      .Line("lse", row_all, "get-tuple-element(%state), index=6")
      .Line("dsum", row_all, "get-tuple-element(%state), index=7")
      .Line("qlen", len, "get-tuple-element(%state), index=8")
      .Line("kvlen", len, "get-tuple-element(%state), index=9")
      .Line("dq", qt, "get-tuple-element(%state), index=10")
      .Line("dk", dk, "get-tuple-element(%state), index=11")
      .Line("dv", dv, "get-tuple-element(%state), index=12");
  BlockPrologue(body, s);
  const std::string sc = Sh("f32", {B, H, R, SK}), row = Sh("f32", {B, H, R});
  body.Line("qb", Sh("bf16", {B, H, R, D}), "dynamic-slice(%qt, %z, %z, %row0, %z), " + sizes(D))
      .Line("dob", Sh("bf16", {B, H, R, DV}), "dynamic-slice(%dot, %z, %z, %row0, %z), " + sizes(DV))
      .Line("lse.blk", row, "dynamic-slice(%lse, %z, %z, %row0), " + sizes(0))
      .Line("dsum.blk", row, "dynamic-slice(%dsum, %z, %z, %row0), " + sizes(0))
      .Line("s", sc, "dot(%qb, %kxt), " + DotDims(3, 2))
      .Line("ss", sc, "multiply(%s, %scale.b)")
      .Line("lse.b", sc, "broadcast(%lse.blk), dimensions={0,1,2}")
      .Line("shifted", sc, "subtract(%ss, %lse.b)")
      .Line("ex", sc, "exponential(%shifted)")
      .Line("p", sc, "select(" + Valid(body, s, "p") + ", %ex, %zero.b)")
      .Line("pb", Sh("bf16", {B, H, R, SK}), "convert(%p)")
      .Line("dv.blk", dv, "dot(%pb, %dob), " + DotDims(2, 2))
      .Line("dv.next", dv, "add(%dv, %dv.blk)")
      .Line("dp", sc, "dot(%dob, %vxt), " + DotDims(3, 2))
      .Line("dsum.b", sc, "broadcast(%dsum.blk), dimensions={0,1,2}")
      .Line("dpd", sc, "subtract(%dp, %dsum.b)")
      .Line("pdpd", sc, "multiply(%p, %dpd)")
      .Line("ds", sc, "multiply(%pdpd, %scale.b)")
      .Line("dsb", Sh("bf16", {B, H, R, SK}), "convert(%ds)")
      .Line("dqb", Sh("bf16", {B, H, R, D}), "dot(%dsb, %kx), " + DotDims(3, 2))
      .Line("dq.next", qt, "dynamic-update-slice(%dq, %dqb, %z, %z, %row0, %z)")
      .Line("dk.blk", dk, "dot(%dsb, %qb), " + DotDims(2, 2))
      .Line("dk.next", dk, "add(%dk, %dk.blk)");
  body.Root(state,
            "tuple(%next, %qt, %kx, %kxt, %vxt, %dot, %lse, %dsum, %qlen, %kvlen, %dq.next, %dk.next, %dv.next)");

  Body entry;
  std::string signature;
  EntryPrologue(entry, s, o, true, signature);
  const std::string dq_out = Sh("bf16", {B, SQ, H, D}), dk_out = Sh("bf16", {B, SK, HK, D}),
                    dv_out = Sh("bf16", {B, SK, HK, DV}), result = "(" + dq_out + ", " + dk_out + ", " + dv_out + ")";
  entry.Line("dot", dot_t, "transpose(%do), dimensions={0,2,1,3}")
      .Line("ot", dot_t, "transpose(%o), dimensions={0,2,1,3}")
      .Line("dof", Sh("f32", {B, H, SQ, DV}), "convert(%dot)")
      .Line("of", Sh("f32", {B, H, SQ, DV}), "convert(%ot)")
      .Line("dof.of", Sh("f32", {B, H, SQ, DV}), "multiply(%dof, %of)")
      .Line("dsum", row_all, "reduce(%dof.of, %zero), dimensions={3}, to_apply=" + n.Comp("add"))
      .Line("lse", row_all, "reshape(%aux)")
      .Line("zero.bf16", "bf16[]", "constant(0)")
      .Line("dq0", qt, "broadcast(%zero.bf16), dimensions={}")
      .Line("dk0", dk, "broadcast(%zero), dimensions={}")
      .Line("dv0", dv, "broadcast(%zero), dimensions={}")
      .Line("init", state, "tuple(%start, %qt, %kx, %kxt, %vxt, %dot, %lse, %dsum, %qlen, %kvlen, %dq0, %dk0, %dv0)")
      .Line("loop", state, "while(%init), condition=" + n.Comp("cond") + ", body=" + n.Comp("body"))
      .Line("dqt", qt, "get-tuple-element(%loop), index=10")
      .Line("dq", dq_out, "transpose(%dqt), dimensions={0,2,1,3}");
  // dK, dV: the query heads of each group summed in f32 (slices and adds in group order: a reduce
  // over the group dim would need the whole [b, hkv, s, d] result as VMEM accumulators), rounded
  // once, back to [b, s, hkv, d].
  const auto per_kv_head = [&](const std::string& x, int index, int64_t dim, const std::string& out) {
    const std::string sum = Sh("f32", {B, HK, SK, dim});
    entry.Line(x + "h", Sh("f32", {B, H, SK, dim}), "get-tuple-element(%loop), index=" + std::to_string(index))
        .Line(x + "g", Sh("f32", {B, HK, G, SK, dim}), "reshape(%" + x + "h)");
    std::string total;
    for (int64_t g = 0; g < G; ++g) {
      const std::string part = x + ".g" + std::to_string(g);
      entry.Line(part + "s", Sh("f32", {B, HK, 1, SK, dim}),
                 "slice(%" + x + "g), slice={[0:" + std::to_string(B) + "], [0:" + std::to_string(HK) + "], [" +
                     std::to_string(g) + ":" + std::to_string(g + 1) + "], [0:" + std::to_string(SK) + "], [0:" +
                     std::to_string(dim) + "]}")
          .Line(part, sum, "reshape(%" + part + "s)");
      if (g == 0) {
        total = part;
      } else {
        entry.Line(part + ".sum", sum, "add(%" + total + ", %" + part + ")");
        total = part + ".sum";
      }
    }
    entry.Line(x + "b", Sh("bf16", {B, HK, SK, dim}), "convert(%" + total + ")")
        .Line(x, out, "transpose(%" + x + "b), dimensions={0,2,1,3}");
  };
  per_kv_head("dk", 11, D, dk_out);
  per_kv_head("dv", 12, DV, dv_out);
  entry.Root(result, "tuple(%dq, %dk, %dv)");

  return "HloModule " + prefix + "\n\n" + Reducers(n) + Condition(n, state, SQ / R) + n.Comp("body") + " (state: " +
         state + ") -> " + state + " {\n" + body.str() + "}\n\nENTRY " + n.Comp("main") + " " + signature + " -> " +
         result + " {\n" + entry.str() + "}\n";
}

}  // namespace tpusim::compiler
