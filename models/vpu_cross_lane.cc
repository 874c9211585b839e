// The cross-lane sub-unit: lane rotates and permutes within each sublane, the S x S block
// transpose, and lane reductions (docs/isa.md, "VPU: cross-lane unit"). Results are built in a
// fresh Vreg, so the destination may be the source.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "isa/error.h"
#include "models/f32_bits.h"
#include "models/vpu_semantics.h"

namespace tpusim::models {
namespace {

// vrot: vd[s][(l + k) mod L] = va[s][l] with k = n mod L in [0, L).
Vreg Rotate(const Vreg& a, int64_t n) {
  const auto lanes = static_cast<int64_t>(a.lanes());
  int64_t k = n % lanes;
  if (k < 0) k += lanes;
  Vreg out(a.sublanes(), a.lanes());
  for (uint32_t s = 0; s < a.sublanes(); ++s) {
    for (uint32_t l = 0; l < a.lanes(); ++l) {
      out.set_word(s, static_cast<uint32_t>((l + k) % lanes), a.word(s, l));
    }
  }
  return out;
}

// vperm: vd[s][l] = va[s][vi[s][l] mod L], vi unsigned.
Vreg Permute(const Vreg& a, const Vreg& index) {
  Vreg out(a.sublanes(), a.lanes());
  for (uint32_t s = 0; s < a.sublanes(); ++s) {
    for (uint32_t l = 0; l < a.lanes(); ++l)
      out.set_word(s, l, a.word(s, index.word(s, l) % a.lanes()));
  }
  return out;
}

// vxpose: each S x S block of lanes [bS, bS + S) transposed: vd[s][bS + t] = va[t][bS + s].
// CheckVpuOp has made sure that L is a multiple of S.
Vreg Transpose(const Vreg& a) {
  const uint32_t n = a.sublanes();
  Vreg out(n, a.lanes());
  for (uint32_t base = 0; base < a.lanes(); base += n) {
    for (uint32_t s = 0; s < n; ++s) {
      for (uint32_t t = 0; t < n; ++t) out.set_word(s, base + t, a.word(t, base + s));
    }
  }
  return out;
}

// f32 sum of one sublane by the fixed halving tree: n = L; repeat h = ceil(n / 2),
// x[i] += x[i + h] for i < n - h, n = h, until n = 1. Reproducible whatever the host.
uint32_t SumF32(std::vector<float>& x) {
  size_t n = x.size();
  while (n > 1) {
    const size_t h = (n + 1) / 2;
    for (size_t i = 0; i + h < n; ++i) x[i] = x[i] + x[i + h];
    n = h;
  }
  return ResultBits(x[0]);
}

enum class Reduction { kAdd, kMax, kMin };

uint32_t ReduceSublane(const Vreg& a, uint32_t s, Reduction kind, bool f32) {
  if (f32) {
    std::vector<float> x(a.lanes());
    for (uint32_t l = 0; l < a.lanes(); ++l) x[l] = a.f32(s, l);
    if (kind == Reduction::kAdd) return SumF32(x);
    // max / min: NaN if any lane is NaN (MaxF32 / MinF32 propagate it), -0 below +0.
    float result = x[0];
    for (uint32_t l = 1; l < a.lanes(); ++l)
      result = kind == Reduction::kMax ? MaxF32(result, x[l]) : MinF32(result, x[l]);
    return ResultBits(result);
  }
  uint32_t result = a.word(s, 0);
  for (uint32_t l = 1; l < a.lanes(); ++l) {
    const uint32_t w = a.word(s, l);
    switch (kind) {
      case Reduction::kAdd: result += w; break;  // wraps
      case Reduction::kMax:
        result = static_cast<int32_t>(w) > static_cast<int32_t>(result) ? w : result;
        break;
      case Reduction::kMin:
        result = static_cast<int32_t>(w) < static_cast<int32_t>(result) ? w : result;
        break;
    }
  }
  return result;
}

// vred (broadcast false): the result in lane 0, zeros elsewhere; vredb: in every lane.
Vreg Reduce(const Vreg& a, Reduction kind, bool f32, bool broadcast) {
  Vreg out(a.sublanes(), a.lanes());
  for (uint32_t s = 0; s < a.sublanes(); ++s) {
    const uint32_t result = ReduceSublane(a, s, kind, f32);
    for (uint32_t l = 0; l < (broadcast ? a.lanes() : 1); ++l) out.set_word(s, l, result);
  }
  return out;
}

}  // namespace

void ExecuteCrossLane(const VpuInstr& instr, VectorRegisterFile& regs) {
  using O = VpuOp;
  const Vreg& a = regs.vreg(instr.a);
  Vreg out;
  switch (instr.op) {
    case O::kRot: out = Rotate(a, instr.scalar); break;
    case O::kPerm: out = Permute(a, regs.vreg(instr.b)); break;
    case O::kXpose: out = Transpose(a); break;
    case O::kRedAddF32: out = Reduce(a, Reduction::kAdd, true, false); break;
    case O::kRedMaxF32: out = Reduce(a, Reduction::kMax, true, false); break;
    case O::kRedMinF32: out = Reduce(a, Reduction::kMin, true, false); break;
    case O::kRedAddS32: out = Reduce(a, Reduction::kAdd, false, false); break;
    case O::kRedMaxS32: out = Reduce(a, Reduction::kMax, false, false); break;
    case O::kRedMinS32: out = Reduce(a, Reduction::kMin, false, false); break;
    case O::kRedbAddF32: out = Reduce(a, Reduction::kAdd, true, true); break;
    case O::kRedbMaxF32: out = Reduce(a, Reduction::kMax, true, true); break;
    case O::kRedbMinF32: out = Reduce(a, Reduction::kMin, true, true); break;
    case O::kRedbAddS32: out = Reduce(a, Reduction::kAdd, false, true); break;
    case O::kRedbMaxS32: out = Reduce(a, Reduction::kMax, false, true); break;
    case O::kRedbMinS32: out = Reduce(a, Reduction::kMin, false, true); break;
    default:
      throw Error("VPU op " + std::string(GetVpuOpInfo(instr.op).mnemonic) + " is not cross-lane");
  }
  regs.vreg(instr.dst) = std::move(out);
}

}  // namespace tpusim::models
