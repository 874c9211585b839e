// Kernels written for the machine a config describes. The hand-written programs in tests/asm/
// assume a 128 x 128 MXU (matmul_128, matmul_512, mxu_peak_stream); the presets have 16 x 16
// (tiny), 128 x 128 (tpu_v4, tpu_v5e) and 256 x 256 (tpu_v6e) MXUs, and their pushes, pops and
// weight tiles differ in number (docs/isa.md, "MXU"). These functions write the same kernels as
// `.tpuasm` text for any of them, so that the tests run them on every preset.
//
// What the matmul kernel computes, and in which order it adds (the tests' expected values follow
// it exactly): C[M,N] f32 = A[M,K] bf16 x B[K,N] bf16, with K cut into blocks of R (the MXU's
// depth; the last one, or the only one when K < R, padded with zeros up to R). Block kb's partial
// sum P_kb is one MXU's dot product over its R k's (docs/isa.md: exact products added in f32 in
// increasing k, padding included), and C = ((P_0 + P_1) + P_2) + ..., by an `mxu.pop` of block 0
// and an `mxu.pop.acc` of each later block, in increasing kb.
#pragma once

#include <cstdint>
#include <string>

#include "sim/config/arch_config.pb.h"

namespace tpusim::test_kernels {

struct MatmulSpec {
  std::string name;      // the program's name
  int64_t m = 0;         // A: m x k, B: k x n, C: m x n; each a multiple of 128
  int64_t k = 0;
  int64_t n = 0;
  uint32_t max_mxus = 0;  // use at most this many MXUs (0: all of the machine's)
};

// A matmul kernel for `config`'s machine (docs in kernel_gen.cc). Buffers: parameters `a`
// (bf16[m,k]{1,0:T(8,128)(2,1)}) and `b` (bf16[k,n], the same layout), output `c`
// (f32[m,n]{1,0:T(8,128)}), all in HBM. Throws tpusim::Error if the machine's shape is one the
// generator does not handle (vregs other than 8 x 128, an MXU dimension that is neither a
// divisor nor a multiple of 128, or VMEM too small for its buffers).
std::string MatmulKernel(const ArchConfig& config, const MatmulSpec& spec);

// The MXUs `MatmulKernel` uses for `spec` on `config`'s machine.
uint32_t MatmulMxusUsed(const ArchConfig& config, const MatmulSpec& spec);

// A stream of `groups` bf16 row groups (16 rows each) through every MXU of `config`'s machine,
// weights latched once (1.0), the results summed into registers by mxu.pop.acc and stored at the
// end to the VMEM output `out`, accumulator a at rows 8a..8a+7 (per MXU k, half group h, column
// block q: a = (2k + h) x nc + q). `groups` is a multiple of the unroll (8) and at least the pop
// lag plus 8.
//   - lhs_from_vmem false: every push is one register holding LHS rows 1.0 (even) and 2.0 (odd):
//     what the MXUs alone sustain (tests/asm/mxu_peak_stream.tpuasm is the tpu_v4 instance).
//   - true: every push's vreg is loaded from the VMEM parameter `lhs` (bf16[16Q,128]{T(16,128)
//     (2,1)}, Q tiles read in rotation) a few groups ahead: the stream as a real kernel feeds it,
//     bounded by VMEM's read bandwidth as well.
std::string MxuPeakStreamKernel(const ArchConfig& config, int64_t groups, bool lhs_from_vmem = false);

}  // namespace tpusim::test_kernels
