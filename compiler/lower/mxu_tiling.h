// How a dot is cut up for the MXUs (docs/compiler.md, "Dot"): the canonical problem
// out[b][m][n] = sum_k lhs[b][m][k] * rhs[b][k][n], and the tile sizes the dot kernel uses.
//
// The kernel is weight-stationary with the MXUs splitting N: a job is a chunk of Mc rows times an
// N group of Qa x C columns; in K block kb, MXU q holds the weight tile (kb, N block q of the
// group), every lhs vreg of the chunk is loaded once and pushed to all Qa MXUs with mxu.push.acc,
// and the sums over K stay in the MXU accumulators (Mc <= accumulator rows) until one read-out per
// job. The panels (all of K for the chunk's rows and for the group's columns) are limited by VMEM.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lower/compile.h"
#include "isa/program.pb.h"

namespace tpusim::compiler {

// A dot in canonical form: batch dims leading on both sides and in the output, one free and one
// contracting dim per operand. `lhs_perm` lists the lhs dims in the order [batch..., m, k] (so
// lhs_perm = identity when lhs is [.., M, K], and ends in (k, m) swapped when it is [.., K, M]);
// `rhs_perm` in the order [batch..., k, n].
struct DotForm {
  std::vector<int64_t> batch_dims;  // sizes
  int64_t batch = 1;                // their product
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  std::vector<int64_t> lhs_perm;
  std::vector<int64_t> rhs_perm;
};

// A dot's dimension numbers (XLA's DotDimensionNumbers).
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
};

// The canonical form of `dot`, or the reason it has none the kernel lowers.
std::optional<DotForm> CanonicalDot(const hlo::Instruction& dot, std::string* why);
// The same for operands of these shapes and these dimension numbers (a dot the general dot
// kernel computes on canonical copies, which is no HLO instruction).
std::optional<DotForm> CanonicalDot(const isa::Shape& lhs, const isa::Shape& rhs, const DotDimensionNumbers& numbers,
                                    std::string* why);

struct MxuTiling {
  int64_t mxus = 1;            // Qa: MXUs used, each one C-column block of a job's N group
  int64_t rows_per_vreg = 16;  // P: rows of the input type in one vreg (2 x sublanes for bf16, S for f32)
  int64_t nk = 1;              // pushes per row group: ceil(R / L)
  int64_t nc = 1;              // accumulator column blocks per MXU, weight pushes per P rows: ceil(C / L)
  int64_t k_stride = 128;      // lhs panel columns per K block (nk x L; K block = R columns)
  int64_t k_blocks = 1;        // ceil(K / R); the K padding is zero in VMEM
  int64_t group_cols = 128;    // Qa x C: output columns per job
  int64_t n_groups = 1;        // ceil(N / group_cols)
  int64_t groups = 1;          // row groups per chunk (G)
  int64_t chunk_rows = 16;     // Mc = G x P <= the accumulator rows
  int64_t m_chunks = 1;        // ceil(M / Mc)
  int64_t weight_pushes = 8;   // per tile: (R / P) x nc
  // VMEM: two lhs panels [Mc, k_blocks x k_stride], two weight panels [k_blocks x R, Qa x nc x L],
  // and output stages [Mc, Qa x nc x L] of the output type: two where they fit, so one job's
  // output DMAs overlap the next job's read-out, else one.
  uint64_t lhs_panel_bytes = 0;
  uint64_t weight_panel_bytes = 0;
  uint64_t stage_bytes = 0;  // one stage
  int64_t stages = 1;
  uint64_t vmem_bytes = 0;
};

// The most MXUs one N group of `form` spans on `target`: every MXU, or fewer when N is narrow;
// one when an MXU is narrower than a vreg (tiny's 16 columns would share a stage column tile).
int64_t MostGroupMxus(const DotForm& form, const isa::Target& target);

// How a dot's MXUs are grouped: `mxus` per N group (0: as many as the target has and N fills),
// and `replicas`, the sets of that many MXUs that share each group's weights, splitting its row
// groups (so a chunk may hold that many times an MXU's accumulator rows), in chunks of at most
// `chunk_rows` rows (past 1024 an MXU, the per-job costs are small and the panels only grow).
struct MxuGrouping {
  int64_t mxus = 0;
  int64_t replicas = 1;
  int64_t chunk_rows = 1024;
};

// The tiling for `form` on `target` with `vmem_capacity` bytes of VMEM, inputs of `in_bytes`
// (2: bf16, 4: f32) and an output of `out_bytes` bytes per element, or the reason there is none.
// Why the target's MXUs cannot take a dot of `in_bytes` elements at all, and which limit: their
// shape not tileable by the vregs that feed them, or fewer accumulator rows than a vreg's rows;
// nullopt when they can.
struct MxuTargetProblem {
  std::string why;
  TargetLimit limit;
};
std::optional<MxuTargetProblem> MxuTargetProblemFor(const isa::Target& target, int in_bytes);

std::optional<MxuTiling> PlanMxuTiling(const DotForm& form, const isa::Target& target, uint64_t vmem_capacity,
                                       int in_bytes, int out_bytes, std::string* why, MxuGrouping grouping = {});

}  // namespace tpusim::compiler
