#include "compiler/lower/mxu_tiling.h"

#include <algorithm>

namespace tpusim::compiler {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool Fail(std::string* why, std::string text) {
  if (why) *why = std::move(text);
  return false;
}

// An MXU side (R or C) the kernel can tile with L-lane vregs: a divisor of L or a multiple of it.
bool Tileable(int64_t side, int64_t lanes) { return side > 0 && (side <= lanes ? lanes % side == 0 : side % lanes == 0); }

}  // namespace

std::optional<DotForm> CanonicalDot(const hlo::Instruction& dot, std::string* why) {
  return CanonicalDot(dot.operand(0)->shape(), dot.operand(1)->shape(),
                      {dot.GetIntListOrEmpty("lhs_batch_dims"), dot.GetIntListOrEmpty("rhs_batch_dims"),
                       dot.GetIntListOrEmpty("lhs_contracting_dims"), dot.GetIntListOrEmpty("rhs_contracting_dims")},
                      why);
}

std::optional<DotForm> CanonicalDot(const isa::Shape& lhs, const isa::Shape& rhs, const DotDimensionNumbers& numbers,
                                    std::string* why) {
  const auto fail = [&](std::string text) {
    Fail(why, std::move(text));
    return std::nullopt;
  };
  const std::vector<int64_t>& lhs_batch = numbers.lhs_batch;
  const std::vector<int64_t>& rhs_batch = numbers.rhs_batch;
  const std::vector<int64_t>& lhs_contracting = numbers.lhs_contracting;
  const std::vector<int64_t>& rhs_contracting = numbers.rhs_contracting;
  const int64_t nb = static_cast<int64_t>(lhs_batch.size());
  for (int64_t i = 0; i < nb; ++i) {
    if (lhs_batch[i] != i || rhs_batch.size() != lhs_batch.size() || rhs_batch[i] != i) {
      return fail("its batch dims are not the leading dims of both operands in order (transposing batch dims is not lowered yet)");
    }
  }
  if (rhs_batch.size() != lhs_batch.size()) return fail("lhs and rhs have different batch dims");
  if (lhs.rank() != nb + 2 || rhs.rank() != nb + 2) {
    return fail("each operand must have exactly one free and one contracting dim besides the batch dims "
                "(matrix-vector and multi-dim contractions are not lowered yet)");
  }
  if (lhs_contracting.size() != 1 || rhs_contracting.size() != 1) return fail("it contracts more than one dim");
  const int64_t lc = lhs_contracting[0];
  const int64_t rc = rhs_contracting[0];
  DotForm form;
  for (int64_t i = 0; i < nb; ++i) {
    form.batch_dims.push_back(lhs.dims[i]);
    form.batch *= lhs.dims[i];
    form.lhs_perm.push_back(i);
    form.rhs_perm.push_back(i);
  }
  const int64_t lf = lc == nb ? nb + 1 : nb;
  const int64_t rf = rc == nb ? nb + 1 : nb;
  form.lhs_perm.push_back(lf);
  form.lhs_perm.push_back(lc);
  form.rhs_perm.push_back(rc);
  form.rhs_perm.push_back(rf);
  form.m = lhs.dims[lf];
  form.k = lhs.dims[lc];
  form.n = rhs.dims[rf];
  if (form.m == 0 || form.n == 0 || form.k == 0 || form.batch == 0) return fail("zero-sized dots are not lowered yet");
  return form;
}

int64_t MostGroupMxus(const DotForm& form, const isa::Target& target) {
  const int64_t c = target.mxu_columns();
  return c < target.lanes() ? 1 : std::min<int64_t>(target.mxu_count(), CeilDiv(form.n, c));
}

std::optional<MxuTargetProblem> MxuTargetProblemFor(const isa::Target& target, int in_bytes) {
  const int64_t l = target.lanes();
  const int64_t r = target.mxu_rows();
  const int64_t c = target.mxu_columns();
  const int64_t rows_per_vreg = target.sublanes() * 4 / in_bytes;  // 2S packed bf16 rows, or S f32 rows
  if (r % rows_per_vreg != 0 || !Tileable(r, l) || !Tileable(c, l)) {
    return MxuTargetProblem{"the MXU shape " + std::to_string(r) + "x" + std::to_string(c) + " is not tileable by vregs of " +
                                std::to_string(rows_per_vreg) + "x" + std::to_string(l),
                            TargetLimit::kMxuShape};
  }
  if (target.mxu_accumulator_rows() < rows_per_vreg) {
    return MxuTargetProblem{"the target has " + std::to_string(target.mxu_accumulator_rows()) +
                                " MXU accumulator rows; the dot kernel needs at least " + std::to_string(rows_per_vreg),
                            TargetLimit::kMxuAccumulatorRows};
  }
  return std::nullopt;
}

std::optional<MxuTiling> PlanMxuTiling(const DotForm& form, const isa::Target& target, uint64_t vmem_capacity,
                                       int in_bytes, int out_bytes, std::string* why, MxuGrouping grouping) {
  const auto fail = [&](std::string text) {
    Fail(why, std::move(text));
    return std::nullopt;
  };
  const int64_t s = target.sublanes();
  const int64_t l = target.lanes();
  const int64_t r = target.mxu_rows();
  const int64_t c = target.mxu_columns();
  MxuTiling t;
  t.rows_per_vreg = s * 4 / in_bytes;  // 2S packed bf16 rows, or S f32 rows
  if (target.mxu_count() < 1) return fail("the target has no MXU");
  if (const auto problem = MxuTargetProblemFor(target, in_bytes)) return fail(problem->why);
  const int64_t acc_rows = target.mxu_accumulator_rows();
  t.nk = CeilDiv(r, l);
  t.nc = CeilDiv(c, l);
  t.k_stride = t.nk * l;
  t.k_blocks = CeilDiv(form.k, r);
  t.mxus = MostGroupMxus(form, target);
  if (grouping.mxus > 0) t.mxus = std::min(t.mxus, grouping.mxus);
  const int64_t replicas = std::max<int64_t>(1, grouping.replicas);
  t.group_cols = t.mxus * c;
  t.n_groups = CeilDiv(form.n, t.group_cols);
  t.weight_pushes = (r / t.rows_per_vreg) * t.nc;
  const uint64_t k_rows = static_cast<uint64_t>(t.k_blocks * r);
  const uint64_t k_cols = static_cast<uint64_t>(t.k_blocks * t.k_stride);
  const uint64_t width = static_cast<uint64_t>(t.mxus * t.nc * l);
  t.weight_panel_bytes = k_rows * width * static_cast<uint64_t>(in_bytes);
  // The most rows the accumulators hold, up to grouping.chunk_rows, fewer while the panels do not
  // fit VMEM. Replicas each hold their share of the chunk's row groups.
  const int64_t p = t.rows_per_vreg;
  int64_t rows = std::min<int64_t>({acc_rows / p * p * replicas, CeilDiv(form.m, p) * p, grouping.chunk_rows});
  for (; rows >= p; rows -= p) {
    t.lhs_panel_bytes = static_cast<uint64_t>(rows) * k_cols * static_cast<uint64_t>(in_bytes);
    t.stage_bytes = static_cast<uint64_t>(rows) * width * static_cast<uint64_t>(out_bytes);
    t.vmem_bytes = 2 * (t.lhs_panel_bytes + t.weight_panel_bytes) + t.stage_bytes;
    if (t.vmem_bytes <= vmem_capacity) break;
  }
  if (rows < p) {
    return fail("K = " + std::to_string(form.k) + " needs " + std::to_string(t.vmem_bytes) +
                " bytes of VMEM for double-buffered panels of one row group, more than the " +
                std::to_string(vmem_capacity) + " there are (splitting K over panels is not lowered yet)");
  }
  // As few chunks as that allows, of equal size: the last chunk pushes whole row groups like the
  // others, so [4096 rows in chunks of at most 448] is 10 chunks of 416 (64 rows past M), not
  // 9 of 448 and a last one with 384 rows past M.
  t.m_chunks = CeilDiv(form.m, rows);
  t.chunk_rows = CeilDiv(CeilDiv(form.m, t.m_chunks), p) * p;
  t.groups = t.chunk_rows / p;
  t.lhs_panel_bytes = static_cast<uint64_t>(t.chunk_rows) * k_cols * static_cast<uint64_t>(in_bytes);
  t.stage_bytes = static_cast<uint64_t>(t.chunk_rows) * width * static_cast<uint64_t>(out_bytes);
  t.vmem_bytes = 2 * (t.lhs_panel_bytes + t.weight_panel_bytes) + t.stage_bytes;
  if (t.m_chunks * t.n_groups * form.batch > 1 && t.vmem_bytes + t.stage_bytes <= vmem_capacity) {
    t.stages = 2;
    t.vmem_bytes += t.stage_bytes;
  }
  return t;
}

}  // namespace tpusim::compiler
