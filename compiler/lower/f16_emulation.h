#pragma once
// f16 on a VPU without f16: the VPU computes in f32 (docs/isa.md has no f16 vector op or
// convert), so kernels widen each loaded f16 to f32 with integer ops, compute in f32, and round
// back to f16 with integer ops before packing. TPU v4 has no f16 VPU arithmetic either, and XLA
// emulates f16 the same way: the conversions are real VPU work, and the timing model charges it.
//
// Register form of an f16 h: the 32-bit word h << 16 (what vunpack.lo/hi.bf16 give for a packed
// 16-bit tile, and what vpack.bf16 packs back exactly: its low half is zero, and the only f16 NaN
// these sequences produce, 0x7E00, is not an f32 NaN pattern, so vpack does not alter it).
//
// For +, -, *, / and sqrt, computing in f32 and rounding once to f16 equals rounding the exact
// result (f32 has 24 >= 2 x 11 + 2 significand bits), which is what compiler/eval does.

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/lower/program_builder.h"

namespace tpusim::compiler {

class F16Emulation {
 public:
  // The 32-bit constants the sequences read from vector registers (vbcast once per kernel).
  static std::vector<uint32_t> WideningConstants();
  static std::vector<uint32_t> NarrowingConstants();

  // `reg_of(value)` names the vector register holding the broadcast constant `value`.
  explicit F16Emulation(std::function<int(uint32_t)> reg_of) : reg_of_(std::move(reg_of)) {}

  // The registers of one conversion: result d, source x (d may be x), scratch vregs t1..t3 and a
  // scratch mask m, all distinct from d and x (EmitWiden does not use t3).
  struct Regs {
    int d = 0, x = 0, t1 = 0, t2 = 0, t3 = 0, m = 0;
  };

  // Each conversion is emitted step by step over all `copies` (independent tiles), so the
  // in-order VPU overlaps one tile's latencies with the others' work.

  // v{d} = the f32 value of the f16 in register form in v{x} (exact, NaN payload kept).
  // 8 VPU instructions per copy.
  void EmitWiden(ProgramBuilder& out, const std::vector<Regs>& copies) const;

  // v{d} = the f32 in v{x} rounded to f16 (nearest even; overflow to infinity; any NaN to the
  // quiet NaN 0x7E00 with the sign kept), in register form. 17 VPU instructions per copy.
  void EmitNarrow(ProgramBuilder& out, const std::vector<Regs>& copies) const;

 private:
  int K(uint32_t value) const { return reg_of_(value); }
  std::function<int(uint32_t)> reg_of_;
};

}  // namespace tpusim::compiler
