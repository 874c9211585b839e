#include "compiler/lower/dot_kernel.h"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/dot_epilogue.h"
#include "compiler/lower/f16_emulation.h"
#include "compiler/lower/megacore.h"
#include "compiler/lower/mxu_tiling.h"
#include "isa/element_type.h"
#include "isa/instruction_builder.h"
#include "isa/instruction_set.h"

namespace tpusim::compiler {
namespace {

using namespace isa::ops;

// Semaphores: the two lhs panels, the output stage, the VPU; then the K slices' and the weight
// panels' ring slots' (ring_sem0_ + slot).
constexpr int kLhsSem = 0;  // + panel parity
constexpr int kOutSem = 2;  // + stage parity: 2 and 3
constexpr int kVpuSem = 4;
// K slices (more than one): lhs panel slice j of parity p signals kFirstSliceSem + p x slices + j,
// weight slice j of a single panel kFirstSliceSem + 2 x slices + j.
constexpr int kFirstSliceSem = 5;
// A dot whose MXUs' row passes bound it loses all the time before its first pass, so its first
// slice is as small as one K block (up to kMaxSlicesMxuBound slices: 669x295x1247 5.70 -> 4.99
// us); the others keep four: HBM bounds them, or their few rows leave the MXUs waiting on weight
// tiles that land with the slices (1x1243x1354 in 11 slices: 4.18 -> 5.18 us).
constexpr int64_t kMaxSlices = 4;
constexpr int64_t kMaxSlicesMxuBound = 16;
// The weight panels' ring slots at most: 8 panels in flight cover a round trip to HBM with jobs
// of a few hundred cycles each (PlanFirstRounds).
constexpr int64_t kMaxRingSlots = 9;
// Read registers a dot's epilogue runs over at once, at most: node by node over eight tiles, a
// GELU's chain of dependent instructions (a 16-cycle tanh among them) hides its latencies.
constexpr int kMaxEpilogueCopies = 8;
// Vector registers the read-out's K sums rotate through (two: one partial is read while the one
// before is added).
constexpr int64_t kKSumVregs = 2;
// Scalar registers.
constexpr int kJob = 1;          // flattened (batch, N group, row chunk) index
constexpr int kJobsLeft = 2;     // loop counter
constexpr int kRow0 = 3;         // first row of the job's chunk
constexpr int kCol0 = 4;         // first column of the job's N group
constexpr int kLhs = 5;          // VMEM: this job's lhs panel
constexpr int kWeights = 6;      // VMEM: this N group's weight panel (its ring slot)
constexpr int kRowChunk = 7;     // the job's row chunk within its matrix
constexpr int kGroup = 8;        // the job's N group
constexpr int kStage = 9;        // VMEM: this job's output stage
constexpr int kStageSem = 14;    // its semaphore, from kOutSem: 0 or 1
constexpr int kSliceSem = 15;    // this job's first lhs slice semaphore, less kFirstSliceSem
constexpr int kTemp = 10;
constexpr int kOtherWeights = 11;  // VMEM: a later panel's ring slot (prefetch, next first round)
constexpr int kPanel = 12;       // flattened (batch, N group) index of the job
constexpr int kTemp2 = 13;
constexpr int kOtherLhs = 16;
constexpr int kNextJob = 17;
constexpr int kNextRow0 = 18;
constexpr int kNextRowChunk = 19;
constexpr int kBatch = 20;       // s20..s23: the job's batch indices
constexpr int kNextBatch = 24;   // s24..s27: the next job's (or next panel's) batch indices
constexpr int kNextGroup = 28;
constexpr int kNextCol0 = 29;
constexpr int kRingSem = 30;     // the semaphore of a later panel's ring slot
constexpr int kReadJob = 31;     // pipelined: the job being read out
constexpr int kBiasColumns = 0;  // epilogue: the read-out job's first column in the bias rows (VMEM); a starting job's parity
constexpr int kMaxBatchDims = 4;
// Mask registers for the partial output tiles.
constexpr int kRowMask = 0;
constexpr int kLaneMask = 1;
constexpr int kBothMask = 2;
constexpr int kF16Mask = 3;  // scratch of the f16 rounding: one per interleaved tile, from 3 on

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A weight piece split by columns (stored rows of a [N, K] operand) holds whole packed tiles of
// 8-bit operands' rows (32), so every type's pieces start on a tile.
constexpr int64_t kWeightColUnit = 32;

// Piece p of `total` elements cut into `pieces` of whole `unit`s as evenly as the units allow,
// as [first, end): K = 9 tiles over four engines is 2, 2, 2 and 3 tiles, where pieces of
// ceil(9 / 4) = 3 tiles left the fourth engine without one (Gemma's MLP weights, stored with K
// minor, came in on three of the four engines: 70% of HBM's rate).
std::pair<int64_t, int64_t> EvenPiece(int64_t total, int64_t unit, int64_t pieces, int64_t p) {
  const int64_t units = CeilDiv(total, unit);
  return {std::min(total, units * p / pieces * unit), std::min(total, units * (p + 1) / pieces * unit)};
}

// Register `reg` plus `offset`, or `offset` alone where reg < 0.
RegPlus Item(int reg, int64_t offset) { return reg < 0 ? RegPlus(offset) : RegPlus(S(reg), offset); }

// `type[1,...,1,rows,cols]`, row-major, tiled so that one tile is one vreg: packed T(2S,L)(2,1)
// for a 16-bit type (`packed`), T(S,L) for a 32-bit one.
isa::Shape VregTiled(isa::ElementType type, int64_t rank, int64_t rows, int64_t cols, int64_t sublanes, int64_t lanes,
                     bool packed) {
  std::vector<int64_t> dims(static_cast<std::size_t>(rank - 2), 1);
  dims.push_back(rows);
  dims.push_back(cols);
  isa::Layout layout;
  layout.minor_to_major = isa::MajorToMinorOrder(rank);
  if (packed) {
    layout.tiles = {isa::Tile{{2 * sublanes, lanes}}, isa::Tile{{2, 1}}};
  } else {
    layout.tiles = {isa::Tile{{sublanes, lanes}}};
  }
  return isa::Shape::Array(type, std::move(dims), std::move(layout));
}

// How a dot's part on one core uses its MXUs: the tiling (its N groups' MXUs), and how the MXUs
// a group leaves idle help: as replicas, sets of a group's MXUs that share its weights and split
// its row groups (replica r sums the row groups i with i % replicas == r), and K sets, which split
// K (set j sums the K blocks kb with kb % k_sets == j, and the read-out adds the sets' sums).
struct MxuPlan {
  MxuTiling tiling;
  int64_t replicas = 1;
  int64_t k_sets = 1;
  double mxu_cycles = 0;  // estimated: the jobs one after another (EstimateMxuPlan)
  double hbm_cycles = 0;  // the part's bytes at the core's share of HBM
  double cycles = 0;      // the whole kernel: the longer of those, from the first bytes to the last
  int64_t slices = 1;     // K slices of the first panels (kMaxSlices, kMaxSlicesMxuBound)
  bool MxuBound() const { return mxu_cycles > hbm_cycles; }
};

// What a plan with fewer MXUs a group must gain on EstimateMxuPlan's figure before it replaces
// the most MXUs a group: the estimate leaves out per-job and per-DMA costs, so closer figures do
// not tell which runs faster.
constexpr double kEstimateMargin = 0.1;

// One job's cycles on its MXUs: its rounds of k_sets K blocks, each MXU passing its replica's
// share of the chunk's row groups, and their drain where `drains` (MxuRates::JobCycles).
double JobCycles(const MxuTiling& t, int64_t replicas, int64_t k_sets, const MxuRates& rates, isa::ElementType type,
                 bool drains) {
  const double rows = static_cast<double>(CeilDiv(t.groups, replicas) * t.rows_per_vreg);
  return rates.JobCycles(static_cast<double>(CeilDiv(t.k_blocks, k_sets)), rows, type, drains);
}

// A plan's estimated cycles. A job passes its rows' share on each MXU over K in rounds of k_sets
// blocks, each block at least a weight tile's load (MxuRates::KBlockCycles), then drains and is
// read out (every K set's sums, a vreg a cycle); jobs run one after another. HBM: the weights and
// the output once, and the lhs once per N group unless one row chunk keeps its panel for every
// group, in whole lanes of their minor dims, at the core's share of the bandwidth. The first job
// cannot end before its lhs and weight panels have landed (it passes each K slice as it lands:
// the last slice's share of its passes comes after), the later jobs' panels land during it, and
// the last job's output DMA follows the MXUs. So large chunks and wide first panels start late
// (a single job of 3235 rows with K = 21 waited 1.6 us for its lhs, and its output took 1.4 us
// more), and splitting a job's N blocks into more jobs leaves the first one waiting for all of
// the lhs (669x295x1247 in three jobs: 6.3 us, in one 5.7).
void EstimateMxuPlan(MxuPlan& plan, const DotForm& form, const CompileOptions& options, int64_t cores,
                     isa::ElementType in_type, int out_bytes) {
  const MxuTiling& t = plan.tiling;
  const MxuRates& rates = options.mxu_rates;
  const double jobs = static_cast<double>(form.batch * t.n_groups * t.m_chunks);
  const double read_vregs = static_cast<double>(t.chunk_rows / options.target.sublanes() * t.mxus * t.nc);
  const double job = JobCycles(t, plan.replicas, plan.k_sets, rates, in_type, true) +
                     static_cast<double>(plan.k_sets) * read_vregs;
  plan.mxu_cycles = jobs * job;
  plan.cycles = plan.mxu_cycles;
  plan.slices = std::min(t.k_blocks, kMaxSlices);
  if (options.hbm_bytes_per_ns <= 0 || rates.clock_mhz <= 0) return;
  const int64_t lanes = options.target.lanes();
  const double in_bytes = isa::ElementBitWidth(in_type) / 8;
  const double k = static_cast<double>(CeilDiv(form.k, lanes) * lanes);
  const double n = static_cast<double>(CeilDiv(form.n, lanes) * lanes);
  const double m = static_cast<double>(form.m), batch = static_cast<double>(form.batch);
  const double cycles_per_byte = static_cast<double>(cores) / options.hbm_bytes_per_ns * rates.clock_mhz / 1e3;
  const bool resident = t.m_chunks == 1 && form.batch == 1;
  const double lhs = batch * m * k * in_bytes * (resident ? 1.0 : static_cast<double>(t.n_groups));
  const double bytes = lhs + batch * k * n * in_bytes + batch * m * n * out_bytes;
  plan.hbm_cycles = bytes * cycles_per_byte;
  const double replica_rows = static_cast<double>(CeilDiv(t.groups, plan.replicas) * t.rows_per_vreg);
  const bool passes_bound = replica_rows * rates.PassesFor(in_type) >= rates.weight_load_cycles;
  plan.slices = std::min(t.k_blocks, plan.MxuBound() && passes_bound ? kMaxSlicesMxuBound : kMaxSlices);
  const double slices = static_cast<double>(plan.slices);
  const double first_in = k * static_cast<double>(t.chunk_rows + t.group_cols) * in_bytes * cycles_per_byte;
  const double first_job = std::max(first_in + job / slices, job);
  const double last_out = static_cast<double>(t.chunk_rows * t.group_cols * out_bytes) * cycles_per_byte;
  const double latency = options.hbm_latency_ns * rates.clock_mhz / 1e3;
  plan.cycles = std::max(first_job + (jobs - 1) * job, plan.hbm_cycles) + 2 * latency + last_out;
}

// Vector registers each operand's pushes rotate through.
constexpr int64_t kOperandVregs = 8;

// Where the dot kernel's read-out keeps its vector registers: an f16 result's rounding constants
// (f16_emulation.h) below the zero register, the K sets' partial sums below those, and the read
// vregs above the two operands' rotations; for an f16 result, the tiles rounded together. The
// shortfall's text where the target has too few.
struct ReadOutRegisters {
  int64_t k_sum_reg0 = 0;
  int64_t read_vregs = 0;
  int64_t f16_copies = 0;
  std::string shortfall;
};
ReadOutRegisters PlanReadOutRegisters(int64_t vector_registers, bool out_f16, int64_t k_sets) {
  ReadOutRegisters r;
  const int64_t f16_regs = out_f16 ? static_cast<int64_t>(F16Emulation::NarrowingConstants().size()) : 0;
  const int64_t k_sum_regs = k_sets > 1 ? kKSumVregs : 0;
  const int64_t read_reg0 = 2 * kOperandVregs;
  r.k_sum_reg0 = vector_registers - 1 - f16_regs - k_sum_regs;
  r.read_vregs = std::min<int64_t>(12, r.k_sum_reg0 - read_reg0);
  // (An f16 read-out reads into its own sets, below; only the clearing of unused tiles reads here.)
  if (r.read_vregs < (out_f16 ? 1 : 3)) {
    r.shortfall = "the dot kernel needs " + std::to_string(read_reg0 + 4 + f16_regs + k_sum_regs) + " vector registers";
    return r;
  }
  if (out_f16) {
    // Tiles rounded together: each takes a register in each of two read sets (one set is read
    // while the other's tiles are stored) and 3 scratch vregs and a mask; at most 4.
    const int64_t next = vector_registers - 2 - f16_regs - k_sum_regs;
    r.f16_copies = std::min<int64_t>({4, (next + 1) / 5, static_cast<int64_t>(isa::kMaskRegisterCount) - kF16Mask});
    r.f16_copies -= r.f16_copies % 2;  // whole lo/hi pairs
    if (r.f16_copies < 2) {
      r.shortfall = "the dot kernel's f16 rounding needs " + std::to_string(10 + f16_regs + k_sum_regs + 1) + " vector registers";
    }
  }
  return r;
}

// The plan with the fewest estimated cycles, over every number of MXUs per N group (N = 5 MXU
// blocks on four MXUs: in groups of 4 the last block's group passes every row on one MXU while
// three idle; in groups of 1, each on four replicas, the five blocks take 5/4 of a block's rows),
// every split of the MXUs left over into replicas and K sets, and chunks of at most 1024 rows or
// 1024 on each replica (one chunk keeps its lhs panel for every N group); on a tie, the most MXUs
// per group (fewer jobs), then the most replicas. Or nullopt and the first tiling's reason.
// `group_mxus` > 0 (a candidate the tuner tries, TunedGroupMxus): the most MXUs per group that
// fit at most that many, the replicas, K sets and chunks still by the estimate. Fewer MXUs a group
// need smaller weight panels, so a plan that fits at all fits at one MXU a group.
std::optional<MxuPlan> PlanMxus(const DotForm& form, const CompileOptions& options, int64_t cores,
                                isa::ElementType in_type, int out_bytes, std::string* why, int64_t group_mxus = 0) {
  const isa::Target& target = options.target;
  const int in_bytes = isa::ElementBitWidth(in_type) / 8;
  const int64_t most = MostGroupMxus(form, target);
  constexpr int64_t kChunkRows = 1024;
  std::optional<MxuPlan> best;
  int64_t best_mxus = 0;
  const int64_t first = std::max<int64_t>(1, group_mxus > 0 ? std::min(group_mxus, most) : most);
  for (int64_t mxus = first; mxus >= 1; --mxus) {
    if (group_mxus > 0 && best) break;  // the largest that fits
    const int64_t sets = std::max<int64_t>(1, target.mxu_count() / mxus);
    for (int64_t replicas = 1; replicas <= sets; ++replicas) {
      std::vector<int64_t> chunk_sizes = {kChunkRows};
      if (replicas > 1) chunk_sizes.push_back(kChunkRows * replicas);
      for (int64_t chunk_rows : chunk_sizes) {
        std::string reason;
        const auto tiling = PlanMxuTiling(form, target, options.vmem_capacity_bytes, in_bytes, out_bytes, &reason,
                                          {mxus, replicas, chunk_rows});
        if (!tiling) {
          if (why && mxus == first && replicas == 1) *why = reason;
          continue;
        }
        if (replicas > tiling->groups) continue;
        MxuPlan plan{*tiling, replicas, std::min(tiling->k_blocks, sets / replicas)};
        // K sets only where their partial sums have registers; else those MXUs idle.
        const bool out_f16 = in_type == isa::ElementType::kF16 && out_bytes == 2;
        if (plan.k_sets > 1 && !PlanReadOutRegisters(target.vector_registers(), out_f16, plan.k_sets).shortfall.empty()) {
          plan.k_sets = 1;
        }
        EstimateMxuPlan(plan, form, options, cores, in_type, out_bytes);
        // Fewer MXUs a group only where the MXUs bound the plan with the most, and that saves
        // more than an estimate's noise: more, narrower jobs cost DMAs and per-job work the
        // estimate does not count, which is all an HBM-bound dot would gain or lose.
        const bool better = !best || (mxus == best_mxus ? plan.cycles <= best->cycles
                                                        : best->MxuBound() && plan.cycles < (1 - kEstimateMargin) * best->cycles);
        if (better) {
          best = plan;
          best_mxus = mxus;
        }
      }
    }
  }
  return best;
}

class DotEmitter {
 public:
  // `group_mxus` > 0: at most that many MXUs an N group (PlanMxus), a candidate the tuner tries.
  // `epilogue`: the element-wise operations of a dot output fusion (dot_epilogue.h), or nullptr.
  DotEmitter(KernelContext& context, const DotForm& form, int64_t group_mxus, const DotEpilogue* epilogue)
      : c_(context), out_(context.out), epilogue_(epilogue), group_mxus_(group_mxus), form_(form) {}

  void Run() {
    Plan();
    EmitPrologue();
    // The epilogue's bias rows (EmitBiasDmas) have landed before the first read-out, whose VPU
    // wait shares their semaphore.
    if (bias_dmas_ > 0) out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), bias_dmas_});
    EmitJobLoop();
    for (int64_t stage = 0; stage < t_.stages; ++stage) out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kOutSem + stage), out_pieces_});
    for (int64_t j = 1; j < slices_ && sliced_weights_; ++j) {
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(WeightSliceSem(j)), weight_slice_pieces_[j]});
    }
    EmitLhsRelease();
  }

 private:
  [[noreturn]] void Refuse(const std::string& why) { CannotLower(c_.instruction, why); }

  // ---- planning ----
  void Plan() {
    const isa::Target& target = out_.target();
    s_ = target.sublanes();
    l_ = target.lanes();
    r_ = target.mxu_rows();
    c_cols_ = target.mxu_columns();
    const isa::Shape& lhs = c_.operands.at(0).at(0)->shape;
    const isa::Shape& rhs = c_.operands.at(1).at(0)->shape;
    const isa::Shape& result = c_.results.at(0)->shape;
    const bool both_bf16 = lhs.element_type == isa::ElementType::kBF16 && rhs.element_type == isa::ElementType::kBF16;
    // f16 x f16: the MXU's f16 mode (mxu.*.f16, the config's f16_passes per row), exact products
    // summed in f32 like bf16.
    const bool both_f16 = lhs.element_type == isa::ElementType::kF16 && rhs.element_type == isa::ElementType::kF16;
    in_f32_ = lhs.element_type == isa::ElementType::kF32 && rhs.element_type == isa::ElementType::kF32;
    if (!both_bf16 && !both_f16 && !in_f32_) {
      Refuse("only bf16 x bf16, f16 x f16 and f32 x f32 dots are lowered (operands are " +
             std::string(isa::ElementTypeName(lhs.element_type)) + " and " +
             std::string(isa::ElementTypeName(rhs.element_type)) + ")");
    }
    if (result.element_type != isa::ElementType::kF32 && result.element_type != isa::ElementType::kBF16 &&
        result.element_type != isa::ElementType::kF16) {
      Refuse("the result must be f32, bf16 or f16");
    }
    out_f16_ = result.element_type == isa::ElementType::kF16;
    out_bf16_ = result.element_type == isa::ElementType::kBF16 || out_f16_;  // out_bf16_: a packed 16-bit result
    if (in_f32_ && out_bf16_) Refuse("f32 x f32 dots with a 16-bit result are not lowered yet");
    if (both_bf16 && out_f16_) Refuse("bf16 x bf16 dots with an f16 result are not lowered yet");
    if (both_f16 && result.element_type == isa::ElementType::kBF16) Refuse("f16 x f16 dots with a bf16 result are not lowered yet");
    in_type_ = in_f32_ ? isa::ElementType::kF32 : both_f16 ? isa::ElementType::kF16 : isa::ElementType::kBF16;
    std::string why;
    batch_count_ = form_.batch;
    if (c_.part.count > 1) {
      // Megacore: this core's rows [row0_, + m), columns [col0_, + n) or batch elements
      // [batch_first_, + batch_count_) of the output; the kernel is the dot of those.
      const CoreSlice slice = DotCoreSlice(form_, c_.options, c_.part, *c_.results.at(0), lhs.element_type);
      if (slice.end <= slice.first) Refuse("its core part is empty");
      switch (slice.split) {
        case CoreSplit::kRows:
          row0_ = slice.first;
          form_.m = slice.end - slice.first;
          break;
        case CoreSplit::kColumns:
          col0_ = slice.first;
          form_.n = slice.end - slice.first;
          break;
        case CoreSplit::kBatch:
          batch_first_ = slice.first;
          batch_count_ = slice.end - slice.first;
          break;
        case CoreSplit::kNone:
          Refuse("internal: split over cores where it cannot be");
      }
    }
    if (static_cast<int64_t>(form_.batch_dims.size()) > kMaxBatchDims) Refuse("more than 4 batch dims");
    if (target.semaphores() < kFirstSliceSem + 2) {
      Refuse("the dot kernel needs " + std::to_string(kFirstSliceSem + 2) + " semaphores" +
             LimitNote(c_.options, TargetLimit::kSemaphores));
    }
    if (const auto problem = MxuTargetProblemFor(target, isa::ElementBitWidth(lhs.element_type) / 8)) {
      Refuse(problem->why + LimitNote(c_.options, problem->limit));
    }
    // The epilogue's bias rows sit at the top of VMEM: a row of f32 words per bias over this
    // core's columns (a bf16 element in the low half of its word); the words past them are
    // never stored (lanes past N are masked, or past the N group's columns, not sent).
    vmem_capacity_ = c_.options.vmem_capacity_bytes;
    if (epilogue_ != nullptr) {
      if (out_f16_) Refuse("a dot with an f16 result does not take an epilogue (not lowered yet)");
      // One lane tile more than the core's columns: an N group narrower than the lanes (an MXU of
      // fewer columns than the lanes) reads a whole tile from its first column.
      bias_stride_ = static_cast<uint64_t>((CeilDiv(form_.n, l_) + 1) * l_ * 4);
      const uint64_t reserved = AlignUp(bias_stride_ * epilogue_->biases.size(), kBufferAlignmentBytes);
      if (reserved >= vmem_capacity_) Refuse("its epilogue's bias rows do not fit VMEM");
      vmem_capacity_ -= reserved;
      bias_base_ = vmem_capacity_;
    }
    CompileOptions planning = c_.options;
    planning.vmem_capacity_bytes = vmem_capacity_;
    auto plan = PlanMxus(form_, planning, c_.part.count, lhs.element_type, out_bf16_ ? 2 : 4, &why, group_mxus_);
    if (plan && epilogue_ != nullptr && !epilogue_->arrays.empty()) {
      // The epilogue's arrays: a job's box of each in the job's stage layout, two slots (job
      // parity: a job's box lands while the job before is read out), below the bias rows. Where
      // the plan leaves too little VMEM, planned again without it (smaller chunks). Each array's
      // stage has an f32 stage's bytes, so every array is the same stride from the one before.
      const auto slots_bytes = [&](const MxuTiling& t) {
        const uint64_t bytes = epilogue_->arrays.size() * static_cast<uint64_t>(t.chunk_rows * t.mxus * t.nc * l_) * 4;
        return 2 * AlignUp(bytes, kBufferAlignmentBytes);
      };
      uint64_t need = slots_bytes(plan->tiling);
      if (plan->tiling.vmem_bytes + need > vmem_capacity_ && need < vmem_capacity_) {
        planning.vmem_capacity_bytes = vmem_capacity_ - need;
        plan = PlanMxus(form_, planning, c_.part.count, lhs.element_type, out_bf16_ ? 2 : 4, &why, group_mxus_);
        if (plan) need = slots_bytes(plan->tiling);
      }
      if (plan && plan->tiling.vmem_bytes + need > vmem_capacity_) Refuse("its epilogue's arrays do not fit VMEM");
      if (target.semaphores() < kFirstSliceSem + 2 + 2) {
        Refuse("the dot kernel with arrays in its epilogue needs " + std::to_string(kFirstSliceSem + 4) + " semaphores" +
               LimitNote(c_.options, TargetLimit::kSemaphores));
      }
      vmem_capacity_ -= need;
      array_base_ = vmem_capacity_;
      array_slot_bytes_ = need / 2;
      array_sem0_ = static_cast<int64_t>(target.semaphores()) - 2;
      reserved_sems_ = 2;
    }
    if (!plan) Refuse(why);
    t_ = plan->tiling;
    replicas_ = plan->replicas;
    k_sets_ = plan->k_sets;
    rank_ = static_cast<int64_t>(form_.batch_dims.size()) + 2;
    PlanSlices(target, plan->slices);
    PlanPipeline(target);
    PlanFirstRounds(lhs.element_type);
    for (const auto* buffer : {c_.operands[0][0], c_.operands[1][0], c_.results[0]}) {
      if (!buffer->shape.layout || buffer->shape.layout->memory_space != isa::kMemorySpaceHbm) {
        Refuse("its operands and result must be in HBM");
      }
    }
    rhs_view_ = ShapeArg(PermutedView(rhs, form_.rhs_perm));
    PlanOutputView(result);

    // VMEM: lhs panels, weight panels (zeroed once: their K padding is never written again), stage.
    lhs_cols_ = t_.k_blocks * t_.k_stride;
    weight_rows_ = t_.k_blocks * r_;
    width_ = t_.mxus * t_.nc * l_;
    PlanLhsView(lhs);
    lhs_base_[0] = 0;
    lhs_base_[1] = t_.lhs_panel_bytes;
    weight_base_ = 2 * t_.lhs_panel_bytes;
    stage_base_ = WeightSlot(ring_);
    // Panels are tiled so that one tile is one vreg: packed T(2S,L)(2,1) for bf16, T(S,L) for f32.
    lhs_panel_ = ShapeArg(VregTiled(in_type_, rank_, t_.chunk_rows, lhs_cols_, s_, l_, !in_f32_));
    weight_panel_ = ShapeArg(VregTiled(in_type_, rank_, weight_rows_, width_, s_, l_, !in_f32_));
    stage_ = out_bf16_ ? ShapeArg(VregTiled(out_f16_ ? isa::ElementType::kF16 : isa::ElementType::kBF16, rank_, t_.chunk_rows,
                                            width_, s_, l_, true))
                       : ShapeArg(VregTiled(isa::ElementType::kF32, rank_, t_.chunk_rows, width_, s_, l_, false));

    // The last row chunk and the last N group: their boxes reach the output's padded dims, and
    // rows or columns past M or N in them are masked to zero.
    last_rows_ = form_.m - (t_.m_chunks - 1) * t_.chunk_rows;
    last_row_box_ = padded_m_ - (t_.m_chunks - 1) * t_.chunk_rows;
    last_m_special_ = last_rows_ != t_.chunk_rows || last_row_box_ != t_.chunk_rows;
    last_cols_ = form_.n - (t_.n_groups - 1) * t_.group_cols;
    last_col_box_ = padded_n_ - (t_.n_groups - 1) * t_.group_cols;
    last_n_special_ = last_cols_ != t_.group_cols || last_col_box_ != t_.group_cols;

    const ReadOutRegisters registers = PlanReadOutRegisters(out_.target().vector_registers(), out_f16_, k_sets_);
    if (!registers.shortfall.empty()) Refuse(registers.shortfall + LimitNote(c_.options, TargetLimit::kVectorRegisters));
    k_sum_reg0_ = registers.k_sum_reg0;
    lhs_vregs_ = kOperandVregs;
    weight_vregs_ = kOperandVregs;
    lhs_reg0_ = 0;
    weight_reg0_ = lhs_reg0_ + lhs_vregs_;
    read_reg0_ = weight_reg0_ + weight_vregs_;
    read_vregs_ = registers.read_vregs;
    if (epilogue_ != nullptr) {
      // The epilogue's constants above the read registers, which give up what they need (at
      // least 3 stay: the masks' setup, the clearing of unused tiles). Its temps in the operands'
      // rotations, which no instruction reads between a job's last push and its read-out (the
      // f16 rounding's read sets live there too). As many read registers at once as both allow
      // (kMaxEpilogueCopies; pairs for a packed result).
      const int64_t constants = DotEpilogueVregs(*epilogue_, 0);
      read_vregs_ = std::min(read_vregs_, registers.k_sum_reg0 - read_reg0_ - constants);
      const int step = out_bf16_ ? 2 : 1;
      epilogue_copies_ = 0;
      for (int copies = kMaxEpilogueCopies; copies >= step && epilogue_copies_ == 0; copies -= step) {
        if (copies <= read_vregs_ && DotEpilogueVregs(*epilogue_, copies) - constants <= read_reg0_) epilogue_copies_ = copies;
      }
      if (read_vregs_ < 3 || epilogue_copies_ == 0) {
        Refuse("the dot kernel's epilogue needs " + std::to_string(constants) + " vector registers for constants and " +
               std::to_string(DotEpilogueVregs(*epilogue_, step) - constants) + " for values, more than the kernel has free" +
               LimitNote(c_.options, TargetLimit::kVectorRegisters));
      }
      epilogue_regs_.temp0 = static_cast<int>(lhs_reg0_);
      epilogue_regs_.constant0 = static_cast<int>(read_reg0_ + read_vregs_);
      epilogue_regs_.column_base = kBiasColumns;
      epilogue_regs_.bias_stride = bias_stride_;
      epilogue_regs_.array_base = kTemp;
      epilogue_regs_.stage_tiles = t_.mxus * t_.nc;
      PlanArrayViews();
    }
    zero_reg_ = static_cast<int>(out_.target().vector_registers() - 1);
    if (out_f16_) {
      int next = zero_reg_ - 1;
      for (uint32_t value : F16Emulation::NarrowingConstants()) f16_constant_reg_[value] = next--;
      f16_copies_ = registers.f16_copies;
    }
    engines_ = out_.target().dma_engines();
    // A single job's stage goes out in pieces as its rows are read out where one engine would
    // be busy writing it longer than a round trip: more than its share of the bytes HBM keeps in
    // flight (bandwidth x latency over the engines; tpu_v4: 46 KB; unknown HBM: never). Smaller,
    // a piece per engine only adds a VPU wait each.
    const bool single_job = Jobs() == 1;
    const double engine_share = c_.options.hbm_bytes_per_ns * c_.options.hbm_latency_ns / static_cast<double>(engines_);
    const bool progressive = single_job && engine_share > 0 && static_cast<double>(t_.stage_bytes) > engine_share;
    // Several jobs whose stages one engine writes more slowly than the MXUs make them (its
    // requests in flight over a round trip): on one engine the outputs queue and the last ones
    // follow the MXUs (50x2 x 2x3589: four 51 KB stages a core on engine 3, 1.3 us after the MXUs'
    // last pass, the other engines idle).
    const double in_flight = static_cast<double>(c_.options.dma_engine_bytes_in_flight);
    const double engine_ns = c_.options.hbm_latency_ns * (1 + static_cast<double>(t_.stage_bytes) / in_flight);
    const bool queued = !single_job && in_flight > 0 && c_.options.mxu_rates.clock_mhz > 0 && engine_ns > JobNs(acc_half_ == 0);
    if (SplitOverEngines(c_.options, static_cast<int64_t>(t_.stage_bytes)) || progressive || queued) {
      out_pieces_ = std::clamp<int64_t>(t_.chunk_rows / out_row_unit_, 1, engines_);
    }
  }

  // The panels' DMAs go out K slice by K slice, each slice split by rows over every engine, and a
  // job waits for a slice just before its first K block: the MXUs start on slice 0 while the
  // later slices land (a single-job dot waited for all of its panels before its first push).
  // A single weight panel (one batch, one N group) is sliced the same way; several stay whole,
  // each prefetched during the group before. As many slices as the plan's (MxuPlan::slices)
  // where the semaphores allow (each costs three and a wait).
  void PlanSlices(const isa::Target& target, int64_t slices) {
    slices = std::min<int64_t>(slices, (static_cast<int64_t>(target.semaphores()) - kFirstSliceSem - 2 - reserved_sems_) / 3);
    slice_blocks_ = CeilDiv(t_.k_blocks, std::max<int64_t>(1, slices));
    slices_ = CeilDiv(t_.k_blocks, slice_blocks_);
    if (slices_ > 1 && t_.k_stride != r_) {
      slice_blocks_ = t_.k_blocks;
      slices_ = 1;
    }
    // The first weight panel goes out by slices too, so the MXUs start on its first K slice; the
    // later panels land whole during the group before theirs.
    sliced_weights_ = slices_ > 1;
    // One row chunk and one batch: every job multiplies the same lhs panel, loaded once and kept
    // (it was loaded again for every N group: a 218 x 931 lhs 8 times against 3867 columns).
    lhs_resident_ = t_.m_chunks == 1 && batch_count_ == 1;
    // A slice's pieces split the lhs by rows and the weights by K rows, in whole tiles of the
    // operand as stored: where the split dim is the minor one (a transposed operand), a piece of
    // a few rows would read every tile of the slice in short runs (the weights of 122x1x1634,
    // stored [N, K], went in pieces of 32 of K's 128 lanes: 64-byte runs).
    const auto minor_is = [&](const DeviceBuffer& operand, const std::vector<int64_t>& perm, int64_t dim) {
      return PermutedView(operand.shape, perm).layout->minor_to_major.front() == dim;
    };
    lhs_row_unit_ = minor_is(*c_.operands[0][0], form_.lhs_perm, rank_ - 2) ? l_ : t_.rows_per_vreg;
    // A whole panel of weights stored with K minor ([N, K]: Flax's kernels read transposed) is
    // split by its stored rows, N, where K's tiles would not spread evenly (9 tiles over four
    // engines left one with 3); a slice, one or a few K blocks, by K (its pieces take turns on the
    // engines slice by slice; by N they would be pieces of a few rows of one block).
    weights_by_cols_ = minor_is(*c_.operands[1][0], form_.rhs_perm, rank_ - 2);
    weight_k_unit_ = weights_by_cols_ ? l_ : 2 * s_;
    const int64_t engines = target.dma_engines();
    lhs_slice_pieces_ = std::min(engines, CeilDiv(t_.chunk_rows, lhs_row_unit_));
    weight_slice_pieces_.clear();
    for (int64_t j = 0; j < slices_; ++j) {
      const int64_t rows = std::min(form_.k, (j + 1) * slice_blocks_ * r_) - j * slice_blocks_ * r_;
      weight_slice_pieces_.push_back(std::min(engines, CeilDiv(rows, weight_k_unit_)));
    }
  }

  // A job's time on the MXUs (JobCycles).
  double JobNs(bool drains) const {
    const MxuRates& mxu = c_.options.mxu_rates;
    return mxu.Ns(JobCycles(t_, replicas_, k_sets_, mxu, c_.operands[0][0]->shape.element_type, drains));
  }

  // Several jobs are pipelined (EmitJobLoop) where two jobs' rows fit the accumulators (a job
  // sums into ceil(G / replicas) row groups of each MXU's accumulator rows) and it pays: every
  // job after the first saves the array's fill and drain, but each read-out comes a job later,
  // so the last but one job's output DMA no longer overlaps the last job (its passes, and the
  // DMA's round trip and bytes at the core's share of HBM are the cost).
  void PlanPipeline(const isa::Target& target) {
    acc_half_ = 0;
    const int64_t rows = CeilDiv(t_.groups, replicas_) * t_.rows_per_vreg;
    const MxuRates& mxu = c_.options.mxu_rates;
    if (Jobs() < 2 || 2 * rows > static_cast<int64_t>(target.mxu_accumulator_rows()) || mxu.clock_mhz <= 0 ||
        c_.options.hbm_bytes_per_ns <= 0) {
      return;
    }
    const double saved_ns = mxu.Ns(static_cast<double>(Jobs() - 1) * mxu.pipeline_cycles);
    const double job_ns = JobNs(false);
    const double out_ns = c_.options.hbm_latency_ns +
                          static_cast<double>(t_.stage_bytes) * c_.part.count / c_.options.hbm_bytes_per_ns;
    if (saved_ns > job_ns + out_ns) acc_half_ = rows;
  }

  // The lhs as the DMAs read it, and the columns they copy (lhs_k_): K, or where K is the lhs's
  // minor dim in tiles of b lanes, K padded to b. The HBM padding is zero (docs/compiler.md, the
  // padding invariant) and lands as the panel's K padding, which then needs no zeroing (a short
  // K's panels are nearly all padding: zeroing them took 0.4 us before the first DMA of a
  // 2725x81x3 dot). The same bytes, as the output view is.
  void PlanLhsView(const isa::Shape& lhs) {
    isa::Shape view = PermutedView(lhs, form_.lhs_perm);
    lhs_k_ = form_.k;
    const int64_t rank = view.rank();
    bool k_minor = DotKernelWritesLayout(lhs);
    for (int64_t i = 0; i < rank; ++i) k_minor = k_minor && form_.lhs_perm[i] == i;
    if (k_minor && t_.k_stride == r_) {
      view = PaddedView(lhs);
      lhs_k_ = std::min(view.dims[rank - 1], lhs_cols_);
    }
    lhs_view_ = ShapeArg(view);
  }

  void PlanOutputView(const isa::Shape& result) {
    // The output as an array of its padded dims (same bytes): boxes that reach the padding write
    // it, with zeros, as the kernels' invariant asks.
    const isa::Layout& layout = *result.layout;
    if (!DotKernelWritesLayout(result)) Refuse("its result layout " + isa::ToString(result) + " is not row-major with 2-D tiles");
    const int64_t a = layout.tiles[0].dims[0];
    const int64_t b = layout.tiles[0].dims[1];
    if (a > t_.chunk_rows && t_.m_chunks > 1) Refuse("its result tiles are taller than a row chunk");
    // (A core's part starts at a multiple of a and b: its box ends at its own padding.)
    padded_m_ = CeilDiv(form_.m, a) * a;
    padded_n_ = CeilDiv(form_.n, b) * b;
    out_view_ = ShapeArg(PaddedView(result));
    if (padded_n_ - (t_.n_groups - 1) * t_.group_cols > t_.mxus * t_.nc * l_) {
      Refuse("its result tiles are wider than an N group");
    }
    // Output pieces: whole tiles of the stage and of the result.
    out_row_unit_ = std::lcm(out_bf16_ ? 2 * s_ : s_, a);
  }

  // Start items: the batch indices in registers first..., then `row` and `col`.
  IndexValue Start(int batch_reg, RegPlus row, RegPlus col) const {
    IndexValue index;
    for (std::size_t i = 0; i < form_.batch_dims.size(); ++i) {
      index.items.push_back(batch_reg < 0 ? RegPlus(0) : Item(batch_reg + static_cast<int>(i), 0));
    }
    index.items.push_back(row);
    index.items.push_back(col);
    return index;
  }
  SizesValue Size(int64_t rows, int64_t cols) const {
    SizesValue sizes{std::vector<int64_t>(form_.batch_dims.size(), 1)};
    sizes.items.push_back(rows);
    sizes.items.push_back(cols);
    return sizes;
  }
  // A `dma` from `from` to `to`.
  void EmitDma(const AddressValue& from, const AddressValue& to, const ShapeValue& src, const ShapeValue& dst,
               const IndexValue& src_start, const IndexValue& dst_start, const SizesValue& size, const SemaphoreValue& sem,
               int64_t engine, isa::CallSite where = {__builtin_FILE(), __builtin_LINE()}) {
    out_.Add(isa::MakeInstruction(isa::OPCODE_DMA, {from, to},
                                  {{"src", src},
                                   {"dst", dst},
                                   {"src_start", src_start},
                                   {"dst_start", dst_start},
                                   {"size", size},
                                   {"sem", sem},
                                   {"engine", engine}},
                                  where));
  }

  // ---- DMAs ----
  // The lhs panel of a chunk with `rows` valid rows: rows [row0, row0 + rows) x all of K, each K
  // block at its k_stride-aligned columns. Returns the number of DMAs.
  int64_t EmitLhsDmas(int batch_reg, int row0_reg, int dst_reg, int sem_reg, int64_t rows, int64_t only_slice = -1) {
    const uint64_t lhs = c_.operands[0][0]->address;
    if (slices_ > 1) {
      // Slice by slice; sem_reg holds parity x slices. A chunk with fewer row pieces signals the
      // missing ones itself, so the waits count lhs_slice_pieces_ always.
      const int64_t unit = lhs_row_unit_;
      const int64_t rows_per_piece = CeilDiv(CeilDiv(rows, lhs_slice_pieces_), unit) * unit;
      for (int64_t j = 0; j < slices_; ++j) {
        if (only_slice >= 0 && j != only_slice) continue;
        const int64_t k0 = j * slice_blocks_ * r_;
        const int64_t cols = std::min(lhs_k_, k0 + slice_blocks_ * r_) - k0;
        for (int64_t p = 0; p < lhs_slice_pieces_; ++p) {
          const int64_t r0 = p * rows_per_piece;
          const int64_t piece_rows = std::min(rows, r0 + rows_per_piece) - r0;
          const SemaphoreValue sem = Sem(Item(sem_reg, kFirstSliceSem + j));
          if (piece_rows <= 0) {
            out_.Emit(isa::OPCODE_SEM_SIGNAL, {sem, 1});
            continue;
          }
          EmitDma(Hbm(static_cast<int64_t>(lhs)), Vmem(Item(dst_reg, 0)), lhs_view_, lhs_panel_,
                  Start(batch_reg, Item(row0_reg, r0), k0), Start(-1, r0, k0), Size(piece_rows, cols), sem,
                  (j + p) % engines_);
        }
      }
      return lhs_slice_pieces_;
    }
    if (t_.k_stride == r_) {
      // Split by K columns over the engines (each engine runs one transfer at a time), and each
      // K piece by rows where there are fewer K pieces than engines and a piece would take an
      // engine more than a round trip (SplitOverEngines: a short K's panel, its rows padded to
      // the vreg's lanes, is many small requests). The pieces are cut from a full chunk's rows,
      // so every chunk's count is the same; a shorter chunk signals its missing pieces itself.
      const int64_t k_pieces = std::min<int64_t>(engines_, t_.k_blocks);
      const int64_t unit = lhs_row_unit_;
      const bool split_rows = SplitOverEngines(c_.options, static_cast<int64_t>(t_.lhs_panel_bytes) / k_pieces);
      const int64_t row_pieces =
          split_rows ? std::min(CeilDiv(engines_, k_pieces), CeilDiv(t_.chunk_rows, unit)) : 1;
      const int64_t rows_per_piece = CeilDiv(CeilDiv(t_.chunk_rows, row_pieces), unit) * unit;
      int64_t count = 0;
      for (int64_t p = 0; p < k_pieces; ++p) {
        const auto [block0, block_end] = EvenPiece(t_.k_blocks, 1, k_pieces, p);
        const int64_t k0 = block0 * r_;
        const int64_t cols = std::min(lhs_k_, block_end * r_) - k0;
        for (int64_t rp = 0; rp * rows_per_piece < t_.chunk_rows; ++rp) {
          const int64_t r0 = rp * rows_per_piece;
          const int64_t piece_rows = std::min(rows, r0 + rows_per_piece) - r0;
          if (piece_rows <= 0) {
            out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(Item(sem_reg, kLhsSem)), 1});
          } else {
            EmitDma(Hbm(static_cast<int64_t>(lhs)), Vmem(Item(dst_reg, 0)), lhs_view_, lhs_panel_,
                    Start(batch_reg, Item(row0_reg, r0), k0), Start(-1, r0, k0), Size(piece_rows, cols),
                    Sem(Item(sem_reg, kLhsSem)), count % engines_);
          }
          ++count;
        }
      }
      return count;
    }
    for (int64_t kb = 0; kb < t_.k_blocks; ++kb) {
      const int64_t cols = std::min(r_, form_.k - kb * r_);
      EmitDma(Hbm(static_cast<int64_t>(lhs)), Vmem(Item(dst_reg, 0)), lhs_view_, lhs_panel_,
              Start(batch_reg, Item(row0_reg, 0), kb * r_), Start(-1, 0, kb * t_.k_stride), Size(rows, cols),
              Sem(Item(sem_reg, kLhsSem)), kb % engines_);
    }
    return t_.k_blocks;
  }

  // The weight panel of an N group with `cols` valid columns starting at column `col0_reg`,
  // split by K rows over the engines when one engine would take more than a round trip
  // (SplitOverEngines). A smaller one is one DMA
  // on engine 1, beside the first lhs panel's on engine 0: split over every engine, it queued
  // the lhs behind it (a 128^3 dot waited 0.37 us for its lhs).
  int64_t WeightPieces() const {
    if (!SplitOverEngines(c_.options, static_cast<int64_t>(t_.weight_panel_bytes))) return 1;
    if (weights_by_cols_) return std::min<int64_t>(engines_, CeilDiv(t_.group_cols, kWeightColUnit));
    return std::min<int64_t>(engines_, CeilDiv(form_.k, weight_k_unit_));
  }
  // Piece p of a weight panel of `cols` columns and K rows [k_begin, k_end) as (first K row, K
  // rows, first column, columns): by K in whole tiles as stored, or (`by_cols`) by columns.
  std::array<int64_t, 4> WeightPiece(int64_t k_begin, int64_t k_end, int64_t cols, int64_t pieces, int64_t p,
                                     bool by_cols) const {
    if (by_cols) {
      const auto [c0, c1] = EvenPiece(cols, kWeightColUnit, pieces, p);
      return {k_begin, k_end - k_begin, c0, c1 - c0};
    }
    const auto [first, end] = EvenPiece(k_end - k_begin, weight_k_unit_, pieces, p);
    return {k_begin + first, end - first, 0, cols};
  }
  // Their semaphore: `sem_reg` (a register, or -1) plus `sem`.
  void EmitWeightDmas(int batch_reg, int col0_reg, int dst_reg, int64_t cols, int sem_reg, int64_t sem) {
    const uint64_t rhs = c_.operands[1][0]->address;
    const int64_t pieces = WeightPieces();
    for (int64_t p = 0; p < pieces; ++p) {
      const auto [k0, rows, c0, piece_cols] = WeightPiece(0, form_.k, cols, pieces, p, weights_by_cols_);
      if (rows <= 0 || piece_cols <= 0) {
        out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(Item(sem_reg, sem)), 1});  // keeps the wait count fixed
        continue;
      }
      EmitDma(Hbm(static_cast<int64_t>(rhs)), Vmem(Item(dst_reg, 0)), rhs_view_, weight_panel_,
              Start(batch_reg, k0, Item(col0_reg, c0)), Start(-1, k0, c0), Size(rows, piece_cols), Sem(Item(sem_reg, sem)),
              (p + 1) % engines_);
    }
  }
  // This core's jobs: its batch elements x N groups x row chunks.
  int64_t Jobs() const { return Panels() * t_.m_chunks; }
  // Its weight panels: its batch elements x N groups.
  int64_t Panels() const { return batch_count_ * t_.n_groups; }

  // The weight panels go through a ring of ring_ VMEM slots: panel p lands in slot p % ring_,
  // its DMAs issued at the start of panel p - ring_ + 1's group, so they have ring_ - 1 groups'
  // jobs to land in. Two slots (double buffering) left them one group: a short K's job (a few
  // hundred cycles) is shorter than a round trip to HBM, and every group waited for its panel
  // (6x2759x27: 3 panels a core, each 0.35 us behind the one before). As many slots as a panel's
  // DMAs need (a round trip, and its bytes at the core's share of HBM), where VMEM and the
  // semaphores allow.
  //
  // Where the ring has a slot for every panel, all of them go out in the prologue.
  //
  // Several jobs: a job's first weight round is loaded during the job before, its pushes spread
  // over that job's last round of row groups (EmitKBlocks), so the load runs while the job passes
  // its rows (after the job's read-out it waited for them to drain, and the next rows for a
  // pipeline fill). From the same panel always; from the next panel, which the last round would
  // then wait for, only where it has landed by then: it went out ring_ - 2 groups and all but a
  // round of a job before (or with the first, all in the prologue), else at the new panel's job.
  void PlanFirstRounds(isa::ElementType in_type) {
    const bool several = Jobs() > 1;
    ahead_same_panel_ = several;
    ring_ = 2;
    ring_sem0_ = slices_ > 1 ? kFirstSliceSem + 3 * slices_ : kFirstSliceSem;
    const MxuRates& mxu = c_.options.mxu_rates;
    if (!several || mxu.clock_mhz <= 0 || c_.options.hbm_bytes_per_ns <= 0) return;
    const double job_ns = JobNs(acc_half_ == 0);
    const double group_ns = job_ns * static_cast<double>(t_.m_chunks);
    // A panel's DMAs: a round trip, and its bytes at the core's share of HBM, which a job's own
    // DMAs share (its output, and its lhs panel unless resident).
    const int64_t in_bytes = isa::ElementBitWidth(in_type) / 8;
    const int64_t job_bytes = t_.chunk_rows * t_.group_cols * (out_bf16_ ? 2 : 4) +
                              (lhs_resident_ ? 0 : t_.chunk_rows * form_.k * in_bytes);
    const double bytes = static_cast<double>(form_.k * t_.group_cols * in_bytes + job_bytes);
    const double panel_ns = c_.options.hbm_latency_ns + bytes * c_.part.count / c_.options.hbm_bytes_per_ns;
    const int64_t panels = Panels();
    const int64_t by_sems = out_.target().semaphores() - ring_sem0_ - reserved_sems_;
    const int64_t free_vmem = static_cast<int64_t>(vmem_capacity_) - static_cast<int64_t>(t_.vmem_bytes);
    const int64_t by_vmem = 2 + std::max<int64_t>(0, free_vmem) / static_cast<int64_t>(t_.weight_panel_bytes);
    const int64_t wanted = 2 + static_cast<int64_t>(std::ceil(std::max(0.0, panel_ns - job_ns) / group_ns));
    ring_ = std::max<int64_t>(2, std::min({wanted, panels, by_sems, by_vmem, kMaxRingSlots}));
    all_in_prologue_ = ring_ >= panels;
    const double rounds = static_cast<double>(CeilDiv(t_.k_blocks, k_sets_));
    ahead_new_panel_ =
        all_in_prologue_ || static_cast<double>(ring_ - 2) * group_ns + job_ns * (rounds - 1) / rounds >= panel_ns;
  }

  // Weight slice j of the first panel (sliced_weights_): its K rows split over the engines.
  void EmitWeightSliceDmas(int64_t j) {
    const int64_t cols = t_.n_groups == 1 ? last_cols_ : t_.group_cols;
    const uint64_t rhs = c_.operands[1][0]->address;
    const int64_t k_begin = j * slice_blocks_ * r_;
    const int64_t k_end = std::min(form_.k, k_begin + slice_blocks_ * r_);
    const int64_t pieces = weight_slice_pieces_[j];
    for (int64_t p = 0; p < pieces; ++p) {
      const auto [k0, rows, c0, piece_cols] = WeightPiece(k_begin, k_end, cols, pieces, p, false);
      if (rows <= 0 || piece_cols <= 0) {
        out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(WeightSliceSem(j)), 1});
        continue;
      }
      EmitDma(Hbm(static_cast<int64_t>(rhs)), Vmem(static_cast<int64_t>(WeightSlot(0))), rhs_view_, weight_panel_,
              Start(kBatch, k0, col0_ + c0), Start(-1, k0, c0), Size(rows, piece_cols), Sem(WeightSliceSem(j)),
              (j + p + 1) % engines_);
    }
  }
  int64_t WeightSliceSem(int64_t j) const { return kFirstSliceSem + 2 * slices_ + j; }

  // The weight DMAs of the panel whose N group is in `group_reg` (columns from `col0_reg`), to
  // VMEM at `dst_reg`, signalling `sem_reg` + `sem`.
  void EmitWeightDmasFor(int batch_reg, int group_reg, int col0_reg, int dst_reg, int sem_reg, int64_t sem) {
    if (!last_n_special_) return EmitWeightDmas(batch_reg, col0_reg, dst_reg, t_.group_cols, sem_reg, sem);
    if (t_.n_groups == 1) return EmitWeightDmas(batch_reg, col0_reg, dst_reg, last_cols_, sem_reg, sem);
    const std::string last = out_.NewLabel(c_.instruction.name() + ".weights_last");
    const std::string done = out_.NewLabel(c_.instruction.name() + ".weights_done");
    out_.Emit(isa::OPCODE_BEQ, {S(group_reg), t_.n_groups - 1, Label(last)});
    EmitWeightDmas(batch_reg, col0_reg, dst_reg, t_.group_cols, sem_reg, sem);
    out_.Emit(isa::OPCODE_BR, {Label(done)});
    out_.Bind(last);
    EmitWeightDmas(batch_reg, col0_reg, dst_reg, last_cols_, sem_reg, sem);
    out_.Bind(done);
  }
  // Ring slot `slot`'s VMEM address, and its semaphore.
  uint64_t WeightSlot(int64_t slot) const { return weight_base_ + static_cast<uint64_t>(slot) * t_.weight_panel_bytes; }
  int64_t RingSem(int64_t slot) const { return ring_sem0_ + slot; }
  // The ring slot of panel `panel_reg` + `ahead` (mod ring_): its address into `address_reg`, its
  // semaphore into kRingSem.
  void EmitSlotOf(int panel_reg, int64_t ahead, int address_reg) {
    out_.Emit(isa::OPCODE_ADD, {S(kTemp2), S(panel_reg), ahead});
    out_.Emit(isa::OPCODE_REM, {S(kTemp2), S(kTemp2), ring_});
    out_.Emit(isa::OPCODE_ADD, {S(kRingSem), S(kTemp2), ring_sem0_});
    out_.Emit(isa::OPCODE_MUL, {S(address_reg), S(kTemp2), t_.weight_panel_bytes});
    out_.Emit(isa::OPCODE_ADD, {S(address_reg), S(address_reg), weight_base_});
  }
  void EmitLhsDmasFor(int batch_reg, int row0_reg, int row_chunk_reg, int dst_reg, int sem_reg) {
    if (slices_ > 1) out_.Emit(isa::OPCODE_MUL, {S(sem_reg), S(sem_reg), slices_});  // parity -> its first slice
    if (t_.m_chunks == 1) {
      lhs_dmas_ = EmitLhsDmas(batch_reg, row0_reg, dst_reg, sem_reg, last_rows_);
      return;
    }
    const std::string last = out_.NewLabel(c_.instruction.name() + ".lhs_last");
    const std::string done = out_.NewLabel(c_.instruction.name() + ".lhs_done");
    out_.Emit(isa::OPCODE_BEQ, {S(row_chunk_reg), t_.m_chunks - 1, Label(last)});
    lhs_dmas_ = EmitLhsDmas(batch_reg, row0_reg, dst_reg, sem_reg, t_.chunk_rows);
    out_.Emit(isa::OPCODE_BR, {Label(done)});
    out_.Bind(last);
    EmitLhsDmas(batch_reg, row0_reg, dst_reg, sem_reg, last_rows_);
    out_.Bind(done);
  }

  // The epilogue's arrays as the DMAs see them: in HBM with the canonical result's dims (their
  // bytes must be those of its row-major TPU layout in their type), and in a slot the job's
  // output stage's layout in their type.
  void PlanArrayViews() {
    epilogue_regs_.array_stride = static_cast<uint64_t>(t_.chunk_rows * width_) * 4;
    for (int n : epilogue_->arrays) {
      const ExprNode& node = epilogue_->expr.nodes[n];
      const DeviceBuffer& array = *c_.operands.at(node.operand + 1).at(0);
      isa::Shape view = isa::Shape::Array(node.type, c_.results[0]->shape.dims);
      view.layout = isa::DefaultTpuLayout(node.type, view.rank());
      view = WithoutMemorySpace(view);
      if (!SameRowMajorImage(WithoutMemorySpace(array.shape), view)) {
        Refuse("its epilogue's array " + isa::ToString(array.shape) + " is not laid out as the dot's result");
      }
      array_views_.push_back(ShapeArg(view));
      const bool bf16 = node.type == isa::ElementType::kBF16;
      array_stages_.push_back(ShapeArg(VregTiled(bf16 ? isa::ElementType::kBF16 : isa::ElementType::kF32, rank_, t_.chunk_rows,
                                                 width_, s_, l_, bf16)));
    }
  }

  // The job's box of each epilogue array into its parity's slot, signalling array_sem0_ + parity:
  // issued as the job starts, waited for by its read-out.
  void EmitArrayDmas() {
    const std::string odd = out_.NewLabel(c_.instruction.name() + ".arrays_odd");
    const std::string done = out_.NewLabel(c_.instruction.name() + ".arrays_done");
    out_.Emit(isa::OPCODE_AND, {S(kBiasColumns), S(kJob), 1});
    out_.Emit(isa::OPCODE_BNE, {S(kBiasColumns), 0, Label(odd)});
    for (int64_t parity = 0; parity < 2; ++parity) {
      EmitChunkGroupVariants("arrays" + std::to_string(parity), [&](bool last_chunk, bool last_group) {
        const int64_t rows = last_chunk ? last_rows_ : t_.chunk_rows;
        const int64_t cols = last_group ? last_cols_ : t_.group_cols;
        for (std::size_t a = 0; a < epilogue_->arrays.size(); ++a) {
          const ExprNode& node = epilogue_->expr.nodes[epilogue_->arrays[a]];
          EmitDma(Hbm(static_cast<int64_t>(c_.operands.at(node.operand + 1).at(0)->address)),
                  Vmem(static_cast<int64_t>(array_base_ + static_cast<uint64_t>(parity) * array_slot_bytes_ +
                                            a * epilogue_regs_.array_stride)),
                  array_views_[a], array_stages_[a], Start(kBatch, Item(kRow0, 0), Item(kCol0, 0)), Start(-1, 0, 0),
                  Size(rows, cols), Sem(array_sem0_ + parity), static_cast<int64_t>(a + 2) % engines_);
        }
      });
      if (parity == 0) {
        out_.Emit(isa::OPCODE_BR, {Label(done)});
        out_.Bind(odd);
      }
    }
    out_.Bind(done);
  }

  // The epilogue's bias rows: this core's columns of each bias, one DMA each on the last engine
  // (the first panels' go on the others first), signalling kVpuSem.
  void EmitBiasDmas() {
    for (std::size_t b = 0; b < epilogue_->biases.size(); ++b) {
      const ExprNode& node = epilogue_->expr.nodes.at(epilogue_->biases[b]);
      EmitBiasRowDma(out_, *c_.operands.at(node.operand + 1).at(0), col0_, form_.n, CeilDiv(form_.n, l_) * l_,
                     bias_base_ + b * bias_stride_, kVpuSem, static_cast<uint32_t>(engines_ - 1));
      ++bias_dmas_;
    }
  }

  // ---- code ----
  void EmitPrologue() {
    // Zero both lhs and weight panels where K has padding (K not a multiple of R, or K blocks
    // narrower than their vregs): it must be zero, and no DMA ever writes there. Rows past M and
    // columns past N need nothing: they reach only the output's padding, which is masked.
    out_.Emit(isa::OPCODE_VBCAST, {V(zero_reg_), 0});
    for (const auto& [value, reg] : f16_constant_reg_) out_.Emit(isa::OPCODE_VBCAST, {V(reg), value});
    const int64_t vreg_bytes = s_ * l_ * 4;
    if (t_.k_stride != r_) {
      // K blocks narrower than their vregs: every block has padding lanes; zero the panels whole.
      EmitZeroLoop(0, CeilDiv(static_cast<int64_t>(stage_base_), vreg_bytes), 1, vreg_bytes);
      zeroed_before_dmas_ = true;
    } else if (form_.k % r_ != 0) {
      // Only the tiles that hold K's padding (zeroing all of both panels, megabytes of stores,
      // took 3.8 us before the first DMA of a 784x583x620 dot), and before the DMAs only those a
      // DMA also writes: the weight row tile holding row K, the lhs column tile holding column
      // lhs_k_ (EmitPadding zeroes the rest while the DMAs fly).
      EmitPadding(true);
    }
    if (zeroed_before_dmas_) {
      out_.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
    }
    if (epilogue_ != nullptr) {
      EmitDotEpilogueConstants(out_, *epilogue_, epilogue_regs_);
      EmitBiasDmas();
    }
    // Masks of the partial output tiles.
    const int temp = read_reg0_;
    const int temp2 = read_reg0_ + 1;
    if (last_m_special_ && last_rows_ % s_ != 0) {
      out_.Emit(isa::OPCODE_VSUBLANEID, {V(temp)});
      out_.Emit(isa::OPCODE_VBCAST, {V(temp2), last_rows_ % s_});
      out_.Emit(isa::OPCODE_VCMP_LT_S32, {M(kRowMask), V(temp), V(temp2)});
    }
    if (last_n_special_ && last_cols_ % l_ != 0) {
      out_.Emit(isa::OPCODE_VLANEID, {V(temp)});
      out_.Emit(isa::OPCODE_VBCAST, {V(temp2), last_cols_ % l_});
      out_.Emit(isa::OPCODE_VCMP_LT_S32, {M(kLaneMask), V(temp), V(temp2)});
      out_.Emit(isa::OPCODE_MAND, {M(kBothMask), M(kRowMask), M(kLaneMask)});
    }
    for (int64_t stage = 0; stage < t_.stages; ++stage) {
      out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(kOutSem + stage), out_pieces_});  // the stages start free
    }
    // Job 0's panels: the weights of (the first batch element, group 0), then the lhs of chunk 0.
    int64_t first = batch_first_;
    for (std::size_t i = form_.batch_dims.size(); i-- > 0;) {
      out_.Emit(isa::OPCODE_MOV, {S(kBatch + static_cast<int>(i)), first % form_.batch_dims[i]});
      first /= form_.batch_dims[i];
    }
    out_.Emit(isa::OPCODE_MOV, {S(kCol0), col0_});
    out_.Emit(isa::OPCODE_MOV, {S(kGroup), 0});
    out_.Emit(isa::OPCODE_MOV, {S(kWeights), WeightSlot(0)});
    out_.Emit(isa::OPCODE_MOV, {S(kRow0), row0_});
    out_.Emit(isa::OPCODE_MOV, {S(kRowChunk), 0});
    out_.Emit(isa::OPCODE_MOV, {S(kTemp), lhs_base_[0]});
    out_.Emit(isa::OPCODE_MOV, {S(kTemp2), 0});
    if (sliced_weights_) {
      // Slice 0 of both panels first on every engine, then slice 1, ...: the engines' queues
      // deliver the slices in K order. (Job 0's chunk is the first, its rows known.)
      const int64_t rows = t_.m_chunks == 1 ? last_rows_ : t_.chunk_rows;
      for (int64_t j = 0; j < slices_; ++j) {
        EmitWeightSliceDmas(j);
        lhs_dmas_ = EmitLhsDmas(kBatch, kRow0, kTemp, kTemp2, rows, j);
      }
    } else {
      EmitWeightDmasFor(kBatch, kGroup, kCol0, kWeights, -1, RingSem(0));
      EmitLhsDmasFor(kBatch, kRow0, kRowChunk, kTemp, kTemp2);
    }
    // Panels 1 .. ring - 2 into their slots, behind job 0's (the job loop prefetches the rest,
    // each ring - 1 panels ahead), or all of them.
    for (int64_t panel = 1; panel < (all_in_prologue_ ? Panels() : ring_ - 1); ++panel) {
      const int64_t group = panel % t_.n_groups;
      int64_t batch = batch_first_ + panel / t_.n_groups;
      for (std::size_t i = form_.batch_dims.size(); i-- > 0;) {
        out_.Emit(isa::OPCODE_MOV, {S(kNextBatch + static_cast<int>(i)), batch % form_.batch_dims[i]});
        batch /= form_.batch_dims[i];
      }
      out_.Emit(isa::OPCODE_MOV, {S(kNextGroup), group});
      out_.Emit(isa::OPCODE_MOV, {S(kNextCol0), col0_ + group * t_.group_cols});
      out_.Emit(isa::OPCODE_MOV, {S(kOtherWeights), WeightSlot(panel)});
      EmitWeightDmasFor(kNextBatch, kNextGroup, kNextCol0, kOtherWeights, -1, RingSem(panel));
    }
    if (t_.k_stride == r_ && form_.k % r_ != 0) EmitPadding(false);
    if (!ahead_new_panel_) return;
    // Job 0's first round, its panel waited for here rather than at the job's start.
    if (sliced_weights_) {
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(WeightSliceSem(0)), weight_slice_pieces_[0]});
    } else {
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(RingSem(0)), WeightPieces()});
    }
    waited_slice_ = 0;
    EmitFirstRound(kWeights);
  }

  // The panels' tiles that hold K's padding, zeroed: those a DMA also writes (`shared`; then
  // zeroed_before_dmas_ says whether there were any), or those only the zeroing writes: the lhs
  // panels' column tiles from lhs_k_ (what the DMAs copy), in every row tile, and the weight
  // panels' row tiles from K. The pushes' loads of the latter follow the stores in the VPU's
  // order; the DMAs' writes must follow the former's.
  void EmitPadding(bool shared) {
    const int64_t vreg_bytes = s_ * l_ * 4;
    const int64_t p = t_.rows_per_vreg;
    const int64_t lhs_tiles_per_row = lhs_cols_ / l_;
    const int64_t width_tiles = width_ / l_;
    const int64_t lhs_partial = lhs_k_ % l_ != 0 ? 1 : 0;
    const int64_t weight_partial = form_.k % p != 0 ? 1 : 0;
    const int64_t first_col_tile = shared ? lhs_k_ / l_ : CeilDiv(lhs_k_, l_);
    const int64_t col_tiles = shared ? lhs_partial : lhs_tiles_per_row - first_col_tile;
    const int64_t first_row_tile = shared ? form_.k / p : CeilDiv(form_.k, p);
    const int64_t row_tiles = shared ? weight_partial : weight_rows_ / p - first_row_tile;
    if (shared) zeroed_before_dmas_ = col_tiles > 0 || row_tiles > 0;
    for (int parity = 0; parity < 2 && col_tiles > 0; ++parity) {
      EmitZeroLoop(lhs_base_[parity] + static_cast<uint64_t>(first_col_tile * vreg_bytes), t_.chunk_rows / p, col_tiles,
                   lhs_tiles_per_row * vreg_bytes);
    }
    for (int64_t slot = 0; slot < ring_ && row_tiles > 0; ++slot) {
      EmitZeroLoop(WeightSlot(slot) + static_cast<uint64_t>(first_row_tile * width_tiles * vreg_bytes), 1,
                   row_tiles * width_tiles, 0);
    }
  }

  // Zero vregs at VMEM `base`: `rows` times (a loop), `per_row` consecutive vregs, then `stride`
  // bytes on.
  void EmitZeroLoop(uint64_t base, int64_t rows, int64_t per_row, int64_t stride) {
    const int64_t vreg_bytes = s_ * l_ * 4;
    out_.Emit(isa::OPCODE_MOV, {S(kTemp), base});
    out_.Emit(isa::OPCODE_MOV, {S(kTemp2), rows});
    const std::string zero_loop = out_.NewLabel(c_.instruction.name() + ".zero");
    out_.Bind(zero_loop);
    for (int64_t i = 0; i < per_row; ++i) out_.Emit(isa::OPCODE_VST, {V(zero_reg_), Vmem(S(kTemp), i * vreg_bytes)});
    if (rows > 1) out_.Emit(isa::OPCODE_ADD, {S(kTemp), S(kTemp), stride});
    out_.Emit(isa::OPCODE_LOOP, {S(kTemp2), Label(zero_loop)});
  }

  // From the flattened job index in `job_reg`: row chunk, N group, batch indices first.., and
  // the flattened (batch, group) panel index in `panel_reg`.
  void EmitDecompose(int job_reg, int row_chunk_reg, int group_reg, int first, int panel_reg) {
    out_.Emit(isa::OPCODE_REM, {S(row_chunk_reg), S(job_reg), t_.m_chunks});
    out_.Emit(isa::OPCODE_DIV, {S(panel_reg), S(job_reg), t_.m_chunks});
    EmitPanelIndices(panel_reg, group_reg, first);
  }
  // From the flattened (batch, group) panel index in `panel_reg`: N group, batch indices first...
  void EmitPanelIndices(int panel_reg, int group_reg, int first) {
    out_.Emit(isa::OPCODE_REM, {S(group_reg), S(panel_reg), t_.n_groups});
    out_.Emit(isa::OPCODE_DIV, {S(kTemp2), S(panel_reg), t_.n_groups});
    if (batch_first_ != 0) out_.Emit(isa::OPCODE_ADD, {S(kTemp2), S(kTemp2), batch_first_});
    for (int64_t i = static_cast<int64_t>(form_.batch_dims.size()) - 1; i >= 0; --i) {
      out_.Emit(isa::OPCODE_REM, {S(first + i), S(kTemp2), form_.batch_dims[i]});
      out_.Emit(isa::OPCODE_DIV, {S(kTemp2), S(kTemp2), form_.batch_dims[i]});
    }
  }

  // Job after job: each job's K blocks, then its read-out. Pipelined (PlanPipeline), job j's K
  // blocks go first and then job j - 1's read-out, the two in the two halves of the accumulator
  // rows: the MXUs pass job j's rows while job j - 1's drain, where each job's rows drained,
  // were read out and only then the next job's passes began (a fill, a drain and a read-out per
  // job: a short K's jobs are little more). The loop is unrolled twice, each copy with its half
  // (immediate accumulator rows).
  void EmitJobLoop() {
    const int64_t jobs = Jobs();
    out_.Emit(isa::OPCODE_MOV, {S(kJob), 0});
    const std::string loop = out_.NewLabel(c_.instruction.name() + ".job");
    if (acc_half_ == 0) {
      out_.Emit(isa::OPCODE_MOV, {S(kJobsLeft), jobs});
      out_.Bind(loop);
      EmitJobStart();
      EmitKBlocks();
      EmitReadOutVariants();
      out_.Emit(isa::OPCODE_ADD, {S(kJob), S(kJob), 1});
      out_.Emit(isa::OPCODE_LOOP, {S(kJobsLeft), Label(loop)});
      return;
    }
    const std::string tail = out_.NewLabel(c_.instruction.name() + ".last_read_out");
    out_.Bind(loop);
    for (int64_t half = 0; half < 2; ++half) {
      EmitJobStart();
      acc_offset_ = half * acc_half_;
      EmitKBlocks();
      if (half == 0) {
        // Job 0 has no job before it to read out; the next job's prefetches overwrite its panels
        // once its loads have run, which a read-out's wait for the VPU ensured.
        const std::string read = out_.NewLabel(c_.instruction.name() + ".read_before");
        const std::string done = out_.NewLabel(c_.instruction.name() + ".read_before_done");
        out_.Emit(isa::OPCODE_BNE, {S(kJob), 0, Label(read)});
        out_.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
        out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
        out_.Emit(isa::OPCODE_BR, {Label(done)});
        out_.Bind(read);
        EmitReadOutOfJobBefore(1);
        out_.Bind(done);
      } else {
        EmitReadOutOfJobBefore(0);
      }
      out_.Emit(isa::OPCODE_ADD, {S(kJob), S(kJob), 1});
      if (half == 0) {
        out_.Emit(isa::OPCODE_BGE, {S(kJob), jobs, Label(tail)});
      } else {
        out_.Emit(isa::OPCODE_BLT, {S(kJob), jobs, Label(loop)});
      }
    }
    out_.Bind(tail);
    EmitReadOutOfJobBefore((jobs - 1) % 2);
    acc_offset_ = 0;
  }

  // The read-out of job kJob - 1, in accumulator half `half`: its indices decomposed again (the
  // job after it overwrote them) into the registers the read-out reads.
  void EmitReadOutOfJobBefore(int64_t half) {
    out_.Emit(isa::OPCODE_SUB, {S(kReadJob), S(kJob), 1});
    EmitJobIndices(kReadJob);
    acc_offset_ = half * acc_half_;
    read_stage_ = half;
    EmitReadOutVariants();
    read_stage_ = -1;
  }

  // Row chunk, N group, batch indices, panel, first row and column of the job in `job_reg`.
  void EmitJobIndices(int job_reg) {
    EmitDecompose(job_reg, kRowChunk, kGroup, kBatch, kPanel);
    out_.Emit(isa::OPCODE_MUL, {S(kRow0), S(kRowChunk), t_.chunk_rows});
    if (row0_ != 0) out_.Emit(isa::OPCODE_ADD, {S(kRow0), S(kRow0), row0_});
    out_.Emit(isa::OPCODE_MUL, {S(kCol0), S(kGroup), t_.group_cols});
    if (col0_ != 0) out_.Emit(isa::OPCODE_ADD, {S(kCol0), S(kCol0), col0_});
  }

  // Job kJob's start: its indices, its weight panel (at a new N group: waited for, and a later
  // one prefetched) and its lhs panel (waited for, and the next job's prefetched).
  void EmitJobStart() {
    const int64_t jobs = Jobs();
    EmitJobIndices(kJob);
    if (epilogue_ != nullptr && !epilogue_->arrays.empty()) EmitArrayDmas();
    // A new N group (row chunk 0): a later panel prefetched, then this one's ring slot, and its
    // weight panel waited for.
    const std::string same_group = out_.NewLabel(c_.instruction.name() + ".same_group");
    out_.Emit(isa::OPCODE_BNE, {S(kRowChunk), 0, Label(same_group)});
    // Panel + ring - 1 into the slot of the panel before this one (its last job is done with
    // it: every job waits for the VPU before its output DMA), before this panel's wait, so it goes
    // out a round trip earlier where that waits.
    if (!all_in_prologue_) {
      const std::string prefetched = out_.NewLabel(c_.instruction.name() + ".prefetched");
      out_.Emit(isa::OPCODE_BGE, {S(kPanel), Panels() - (ring_ - 1), Label(prefetched)});
      out_.Emit(isa::OPCODE_ADD, {S(kTemp), S(kPanel), ring_ - 1});
      EmitPanelIndices(kTemp, kNextGroup, kNextBatch);
      out_.Emit(isa::OPCODE_MUL, {S(kNextCol0), S(kNextGroup), t_.group_cols});
      if (col0_ != 0) out_.Emit(isa::OPCODE_ADD, {S(kNextCol0), S(kNextCol0), col0_});
      EmitSlotOf(kPanel, ring_ - 1, kOtherWeights);
      EmitWeightDmasFor(kNextBatch, kNextGroup, kNextCol0, kOtherWeights, kRingSem, 0);
      out_.Bind(prefetched);
    }
    // (A single panel stays in slot 0, where the prologue pointed kWeights.)
    const bool one_panel = Panels() == 1;
    if (!one_panel) EmitSlotOf(kPanel, 0, kWeights);
    if (ahead_new_panel_) {
      // Its panel was waited for where its first round was pushed (EmitPrologue, EmitNextFirstSource).
    } else if (!sliced_weights_) {
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(one_panel ? RegPlus(RingSem(0)) : RegPlus(S(kRingSem))), WeightPieces()});
    } else if (one_panel) {
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(WeightSliceSem(0)), weight_slice_pieces_[0]});
    } else {
      // The first panel's slice 0, or a later panel whole.
      const std::string later = out_.NewLabel(c_.instruction.name() + ".later_panel");
      const std::string waited = out_.NewLabel(c_.instruction.name() + ".panel_waited");
      out_.Emit(isa::OPCODE_BNE, {S(kPanel), 0, Label(later)});
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(WeightSliceSem(0)), weight_slice_pieces_[0]});
      out_.Emit(isa::OPCODE_BR, {Label(waited)});
      out_.Bind(later);
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(S(kRingSem)), WeightPieces()});
      out_.Bind(waited);
    }
    // The new panel's first round here, where it was not pushed during the job before.
    if (ahead_same_panel_ && !ahead_new_panel_) EmitFirstRound(kWeights);
    out_.Bind(same_group);
    // This job's lhs panel (parity kJob & 1; a resident panel's is 0) has landed; prefetch the
    // next job's.
    if (lhs_resident_) {
      out_.Emit(isa::OPCODE_MOV, {S(kTemp), 0});
    } else {
      out_.Emit(isa::OPCODE_AND, {S(kTemp), S(kJob), 1});
    }
    out_.Emit(isa::OPCODE_MUL, {S(kLhs), S(kTemp), t_.lhs_panel_bytes});
    if (slices_ > 1) {
      out_.Emit(isa::OPCODE_MUL, {S(kSliceSem), S(kTemp), slices_});
      WaitLhs(RegPlus(S(kSliceSem), kFirstSliceSem), lhs_slice_pieces_);  // slice 0
    } else {
      WaitLhs(RegPlus(S(kTemp), kLhsSem), lhs_dmas_);
    }
    if (lhs_resident_) return;
    out_.Emit(isa::OPCODE_XOR, {S(kTemp), S(kTemp), 1});
    out_.Emit(isa::OPCODE_MUL, {S(kOtherLhs), S(kTemp), t_.lhs_panel_bytes});
    const std::string no_prefetch = out_.NewLabel(c_.instruction.name() + ".no_lhs_prefetch");
    out_.Emit(isa::OPCODE_ADD, {S(kNextJob), S(kJob), 1});
    out_.Emit(isa::OPCODE_BGE, {S(kNextJob), jobs, Label(no_prefetch)});
    EmitDecompose(kNextJob, kNextRowChunk, kNextGroup, kNextBatch, kTemp);
    out_.Emit(isa::OPCODE_MUL, {S(kNextRow0), S(kNextRowChunk), t_.chunk_rows});
    if (row0_ != 0) out_.Emit(isa::OPCODE_ADD, {S(kNextRow0), S(kNextRow0), row0_});
    out_.Emit(isa::OPCODE_AND, {S(kTemp), S(kNextJob), 1});
    EmitLhsDmasFor(kNextBatch, kNextRow0, kNextRowChunk, kOtherLhs, kTemp);
    out_.Bind(no_prefetch);
  }

  // Waits for an lhs panel's DMAs (`sem`: the semaphore operand). A resident panel's semaphores
  // are signalled back for the later jobs, and taken back at the kernel's end (EmitLhsRelease).
  void WaitLhs(const RegPlus& sem, int64_t count) {
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(sem), count});
    if (lhs_resident_) out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(sem), count});
  }
  void EmitLhsRelease() {
    if (!lhs_resident_) return;
    if (slices_ == 1) {
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kLhsSem), lhs_dmas_});
      return;
    }
    for (int64_t j = 0; j < slices_; ++j) out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kFirstSliceSem + j), lhs_slice_pieces_});
  }

  // The MXU of K block kb's set, replica r, that holds N block q of the group.
  int64_t MxuOf(int64_t kb, int64_t r, int64_t q) const { return ((kb % k_sets_) * replicas_ + r) * t_.mxus + q; }

  // The MXU instructions of the operands' type.
  isa::Opcode WeightPushOpcode() const {
    switch (in_type_) {
      case isa::ElementType::kF32: return isa::OPCODE_MXU_WPUSH_F32;
      case isa::ElementType::kF16: return isa::OPCODE_MXU_WPUSH_F16;
      default: return isa::OPCODE_MXU_WPUSH_BF16;
    }
  }
  isa::Opcode PushAccOpcode() const {
    switch (in_type_) {
      case isa::ElementType::kF32: return isa::OPCODE_MXU_PUSH_ACC_F32;
      case isa::ElementType::kF16: return isa::OPCODE_MXU_PUSH_ACC_F16;
      default: return isa::OPCODE_MXU_PUSH_ACC_BF16;
    }
  }

  // Weight push b of N block q, K block kb: loaded once, pushed to that block's MXU in every
  // replica of the block's K set.
  void EmitWeightPush(int64_t kb, int64_t q, int64_t b, int base_reg = kWeights) {
    WaitForWeightSlice(kb);
    const int reg = static_cast<int>(weight_reg0_ + (weight_count_++ % weight_vregs_));
    const int64_t g = b / t_.nc;
    const int64_t j = b % t_.nc;
    const int64_t row_tile = kb * (r_ / t_.rows_per_vreg) + g;
    const int64_t offset = (row_tile * (t_.mxus * t_.nc) + q * t_.nc + j) * s_ * l_ * 4;
    out_.Emit(isa::OPCODE_VLD, {V(reg), Vmem(S(base_reg), offset)});
    for (int64_t r = 0; r < replicas_; ++r) out_.Emit(WeightPushOpcode(), {Mxu(MxuOf(kb, r, q)), V(reg)});
  }

  // The first weight panel's slice holding K block kb has landed (sliced_weights_): waited for
  // before the first push from it, and left signalled for the later jobs (the kernel's end takes
  // it back). Slice 0 is waited for at the job's start.
  void WaitForWeightSlice(int64_t kb) {
    if (!sliced_weights_) return;
    for (; waited_slice_ < kb / slice_blocks_; ++waited_slice_) {
      const int64_t j = waited_slice_ + 1;
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(WeightSliceSem(j)), weight_slice_pieces_[j]});
      out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(WeightSliceSem(j)), weight_slice_pieces_[j]});
    }
  }

  // Latches K block kb's weights in its set's MXUs.
  void EmitLatches(int64_t kb) {
    for (int64_t r = 0; r < replicas_; ++r) {
      for (int64_t q = 0; q < t_.mxus; ++q) out_.Emit(isa::OPCODE_MXU_LATCH, {Mxu(MxuOf(kb, r, q))});
    }
  }

  // Row group i of K block kb: each lhs vreg loaded once and pushed to the MXUs of the block's K
  // set, replica i % replicas, its rows added into their accumulator rows [i / replicas P, + P).
  void EmitPushes(int64_t kb, int64_t i) {
    const int64_t tile_cols = lhs_cols_ / l_;
    for (int64_t b = 0; b < t_.nk; ++b) {
      const int reg = static_cast<int>(lhs_reg0_ + (lhs_count_++ % lhs_vregs_));
      const int64_t offset = (i * tile_cols + kb * t_.nk + b) * s_ * l_ * 4;
      out_.Emit(isa::OPCODE_VLD, {V(reg), Vmem(S(kLhs), offset)});
      for (int64_t q = 0; q < t_.mxus; ++q) {
        out_.Emit(PushAccOpcode(), {Mxu(MxuOf(kb, i % replicas_, q)), V(reg),
                  acc_offset_ + i / replicas_ * t_.rows_per_vreg});
      }
    }
  }

  // All K blocks of the job, in rounds of k_sets blocks (one per K set) that proceed in step,
  // the sets' pushes interleaved: one scalar core feeds every MXU, and a push waits for its
  // rotating vreg to be read by the push before it, so block after block, one set's queue would
  // hold the others back. The first round's weights are loaded and latched first; then round
  // rho + 1's weights are pushed during round rho's later groups (two weight buffers) and latched
  // after its last group.
  std::vector<int64_t> RoundBlocks(int64_t round) const {
    std::vector<int64_t> blocks;
    for (int64_t kb = round * k_sets_; kb < std::min(t_.k_blocks, (round + 1) * k_sets_); ++kb) blocks.push_back(kb);
    return blocks;
  }

  // The first round's weights, from the panel at register `base_reg`, loaded and latched.
  void EmitFirstRound(int base_reg) {
    const int64_t total = t_.mxus * t_.weight_pushes;  // per block
    for (int64_t w = 0; w < total; ++w) {
      for (int64_t kb : RoundBlocks(0)) EmitWeightPush(kb, w % t_.mxus, w / t_.mxus, base_reg);
    }
    for (int64_t kb : RoundBlocks(0)) EmitLatches(kb);
  }

  // Where the next job's first round of weights comes from (PlanFirstRounds), into kOtherWeights:
  // this job's panel, or at a group's last row chunk the next panel (in its ring slot, waited for
  // here); 0 where there is no next job or its round waits for its own start.
  void EmitNextFirstSource() {
    out_.Emit(isa::OPCODE_MOV, {S(kOtherWeights), 0});
    const std::string same_panel = out_.NewLabel(c_.instruction.name() + ".next_same_panel");
    const std::string done = out_.NewLabel(c_.instruction.name() + ".next_source_done");
    out_.Emit(isa::OPCODE_ADD, {S(kNextJob), S(kJob), 1});
    out_.Emit(isa::OPCODE_BGE, {S(kNextJob), Jobs(), Label(done)});
    if (t_.m_chunks > 1) out_.Emit(isa::OPCODE_BNE, {S(kRowChunk), t_.m_chunks - 1, Label(same_panel)});
    if (ahead_new_panel_) {
      EmitSlotOf(kPanel, 1, kOtherWeights);
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(S(kRingSem)), WeightPieces()});
    }
    if (t_.m_chunks > 1) {
      out_.Emit(isa::OPCODE_BR, {Label(done)});
      out_.Bind(same_panel);
      out_.Emit(isa::OPCODE_MOV, {S(kOtherWeights), S(kWeights)});
    }
    out_.Bind(done);
  }

  void EmitKBlocks() {
    waited_slice_ = 0;
    int64_t waited_lhs_slice = 0;
    const int64_t total = t_.mxus * t_.weight_pushes;  // per block
    if (!ahead_same_panel_) EmitFirstRound(kWeights);  // a single job's
    // The last round's weight pushes are the next job's first round, from kOtherWeights
    // (EmitNextFirstSource), skipped where that is 0. (Every next job starts a new panel that may
    // not have landed: none.)
    const bool next_job_round = ahead_same_panel_ && (t_.m_chunks > 1 || ahead_new_panel_);
    // The next round's weight pushes, spread over the round's groups from the first: with two
    // or more weight buffers tile n + 1 loads into tile n - 1's buffer, free once tile n - 1's
    // last row has passed (docs/timing.md, MXU), before tile n's first group, so the pushes never
    // hold the in-order queue up. (They waited 8 groups into the block, for tile n - 1's drain:
    // a few-row dot's K block took its rows and then a tile's load, 105 rows 240 cycles where
    // 128 are the load.) With one buffer they wait for the tile's rows to leave wherever they
    // are, so they go after its last group.
    // With replicas, they go after each set of `replicas` groups (one group on each replica):
    // every MXU gets its share between two of its own groups, where after each group the one
    // MXU that passed it got them all, and its next group waited for their loads.
    const int64_t weight_start = c_.options.mxu_rates.weight_buffers >= 2 ? 0 : t_.groups - 1;
    const int64_t weight_slots = CeilDiv(t_.groups - weight_start, replicas_);
    const int64_t per_slot = CeilDiv(total, weight_slots);
    const int64_t rounds = CeilDiv(t_.k_blocks, k_sets_);
    for (int64_t round = 0; round < rounds; ++round) {
      const std::vector<int64_t> blocks = RoundBlocks(round);
      const bool last = round + 1 == rounds;
      const std::vector<int64_t> next = last && next_job_round ? RoundBlocks(0) : RoundBlocks(round + 1);
      const int base = last ? kOtherWeights : kWeights;
      for (; waited_lhs_slice < blocks.back() / slice_blocks_; ++waited_lhs_slice) {
        WaitLhs(RegPlus(S(kSliceSem), kFirstSliceSem + waited_lhs_slice + 1), lhs_slice_pieces_);
      }
      if (last && next_job_round) EmitNextFirstSource();
      // Code the next job's round skips where it has none.
      const auto for_next = [&](const std::function<void()>& emit) {
        if (!last) return emit();
        const std::string skip = out_.NewLabel(c_.instruction.name() + ".no_next_round");
        out_.Emit(isa::OPCODE_BEQ, {S(kOtherWeights), 0, Label(skip)});
        emit();
        out_.Bind(skip);
      };
      for (int64_t i = 0; i < t_.groups; ++i) {
        for (int64_t kb : blocks) EmitPushes(kb, i);
        const bool slot_end = (i - weight_start) % replicas_ == replicas_ - 1 || i + 1 == t_.groups;
        const int64_t first = (i - weight_start) / replicas_ * per_slot;
        if (i < weight_start || !slot_end || next.empty() || first >= total) continue;
        for_next([&] {
          for (int64_t w = first; w < std::min(first + per_slot, total); ++w) {
            for (int64_t kb : next) EmitWeightPush(kb, w % t_.mxus, w / t_.mxus, base);
          }
        });
      }
      if (!next.empty()) for_next([&] { for (int64_t kb : next) EmitLatches(kb); });
    }
  }

  void EmitReadOutVariants() {
    EmitChunkGroupVariants("read", [&](bool last_chunk, bool last_group) { EmitReadOut(last_chunk, last_group); });
  }

  // `emit`(last chunk, last group) for the job in kRowChunk and kGroup: branches where the last row
  // chunk or N group differs from the others (its rows or columns), labels from `what`.
  void EmitChunkGroupVariants(const std::string& what, const std::function<void(bool, bool)>& emit) {
    const bool m_branch = t_.m_chunks > 1 && last_m_special_;
    const bool n_branch = t_.n_groups > 1 && last_n_special_;
    const bool m_always = t_.m_chunks == 1 && last_m_special_;
    const bool n_always = t_.n_groups == 1 && last_n_special_;
    const std::string done = out_.NewLabel(c_.instruction.name() + "." + what + "_done");
    auto for_n = [&](bool last_chunk) {
      if (!n_branch) return emit(last_chunk, n_always);
      const std::string last = out_.NewLabel(c_.instruction.name() + "." + what + "_last_group");
      const std::string end = out_.NewLabel(c_.instruction.name() + "." + what + "_group_done");
      out_.Emit(isa::OPCODE_BEQ, {S(kGroup), t_.n_groups - 1, Label(last)});
      emit(last_chunk, false);
      out_.Emit(isa::OPCODE_BR, {Label(end)});
      out_.Bind(last);
      emit(last_chunk, true);
      out_.Bind(end);
    };
    if (!m_branch) {
      for_n(m_always);
      return;
    }
    const std::string last = out_.NewLabel(c_.instruction.name() + "." + what + "_last_chunk");
    out_.Emit(isa::OPCODE_BEQ, {S(kRowChunk), t_.m_chunks - 1, Label(last)});
    for_n(false);
    out_.Emit(isa::OPCODE_BR, {Label(done)});
    out_.Bind(last);
    for_n(true);
    out_.Bind(done);
  }

  // Which accumulator reads of the read-out being emitted are masked (EmitReadOut sets it).
  struct ReadMask {
    bool rows = false, lanes = false;
    int64_t row_vreg = 0, lane_tile = 0;  // the row vreg with partial rows, the column tile with partial lanes
  };

  // Where row vreg t (rows [t S, t S + S) of the chunk) of stage column tile ct sums: its row
  // group's replica's MXU, at the group's accumulator rows there.
  // K set j's MXU.
  int64_t ReadMxu(int64_t j, int64_t t, int64_t ct) const {
    return MxuOf(j, t * s_ / t_.rows_per_vreg % replicas_, ct / t_.nc);
  }
  int64_t ReadRow(int64_t t) const {
    const int64_t group = t * s_ / t_.rows_per_vreg;
    return acc_offset_ + group / replicas_ * t_.rows_per_vreg + t * s_ % t_.rows_per_vreg;
  }

  // Row vreg t of stage column tile ct into `reg`: the K sets' sums added in set order, masked
  // past M and N.
  void Read(int64_t t, int64_t ct, int reg) {
    ReadSums(t, ct, reg);
    Mask(t, ct, reg);
  }
  void ReadSums(int64_t t, int64_t ct, int reg) {
    out_.Emit(isa::OPCODE_MXU_ACC_READ_CLEAR, {Mxu(ReadMxu(0, t, ct)), V(reg), ReadRow(t), ct % t_.nc});
    for (int64_t j = 1; j < k_sets_; ++j) {
      const int partial = static_cast<int>(k_sum_reg0_ + (k_sum_count_++ % kKSumVregs));
      out_.Emit(isa::OPCODE_MXU_ACC_READ_CLEAR, {Mxu(ReadMxu(j, t, ct)), V(partial), ReadRow(t), ct % t_.nc});
      out_.Emit(isa::OPCODE_VADD_F32, {V(reg), V(reg), V(partial)});
    }
  }
  void Mask(int64_t t, int64_t ct, int reg) {
    const bool rows = read_mask_.rows && t == read_mask_.row_vreg;
    const bool lanes = read_mask_.lanes && ct == read_mask_.lane_tile;
    if (rows || lanes) {
      const int mask = rows && lanes ? kBothMask : rows ? kRowMask : kLaneMask;
      out_.Emit(isa::OPCODE_VSEL, {V(reg), M(mask), V(reg), V(zero_reg_)});
    }
  }

  // Reads the job's accumulators (clearing them for the next job), masks the rows and columns
  // past M and N, stores them in the stage and sends it to HBM.
  void EmitReadOut(bool last_chunk, bool last_group) {
    const int64_t row_vregs = t_.chunk_rows / s_;
    const bool mask_rows = last_chunk && last_rows_ % s_ != 0;
    const bool mask_lanes = last_group && last_cols_ % l_ != 0;
    const int64_t lane_tile = last_cols_ / l_;  // the stage column tile with partial lanes
    const int64_t row_vreg = last_rows_ / s_;   // the row vreg with partial rows
    const int64_t tiles = t_.mxus * t_.nc;      // stage column tiles
    // The last N group's output box may end before the group does (N = 640 in groups of 512: 128
    // columns): the tiles past it are only cleared for the next job, not rounded, packed or stored.
    const int64_t used = last_group ? std::min(tiles, CeilDiv(last_col_box_, l_)) : tiles;
    const int64_t vreg_bytes = s_ * l_ * 4;
    // This job's stage (job parity, with two), once the output DMAs of the job that used it last
    // have read it.
    if (t_.stages == 2 && read_stage_ >= 0) {
      out_.Emit(isa::OPCODE_MOV, {S(kStageSem), read_stage_});
      out_.Emit(isa::OPCODE_MOV, {S(kStage), stage_base_ + static_cast<uint64_t>(read_stage_) * t_.stage_bytes});
    } else if (t_.stages == 2) {
      out_.Emit(isa::OPCODE_AND, {S(kStageSem), S(kJob), 1});
      out_.Emit(isa::OPCODE_MUL, {S(kStage), S(kStageSem), t_.stage_bytes});
      out_.Emit(isa::OPCODE_ADD, {S(kStage), S(kStage), stage_base_});
    } else {
      out_.Emit(isa::OPCODE_MOV, {S(kStage), stage_base_});
      out_.Emit(isa::OPCODE_MOV, {S(kStageSem), 0});
    }
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(S(kStageSem), kOutSem), out_pieces_});
    if (epilogue_ != nullptr && !epilogue_->arrays.empty()) {
      // The job's arrays (EmitArrayDmas): its parity's slot, once its DMAs have landed.
      out_.Emit(isa::OPCODE_AND, {S(kTemp), S(read_stage_ >= 0 ? kReadJob : kJob), 1});
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(S(kTemp), array_sem0_), epilogue_->arrays.size()});
      out_.Emit(isa::OPCODE_MUL, {S(kTemp), S(kTemp), array_slot_bytes_});
      out_.Emit(isa::OPCODE_ADD, {S(kTemp), S(kTemp), array_base_});
    }
    if (epilogue_ != nullptr && !epilogue_->biases.empty()) {
      // The bias rows' words of this job's first column (kCol0 counts from the core's first).
      out_.Emit(isa::OPCODE_SUB, {S(kBiasColumns), S(kCol0), col0_});
      out_.Emit(isa::OPCODE_MUL, {S(kBiasColumns), S(kBiasColumns), 4});
      out_.Emit(isa::OPCODE_ADD, {S(kBiasColumns), S(kBiasColumns), bias_base_});
    }
    // Row vreg t of stage column tile ct into `reg`, masked past M and N.
    read_mask_ = {mask_rows, mask_lanes, row_vreg, lane_tile};
    auto read = [&](int64_t t, int64_t ct) {
      const int reg = static_cast<int>(read_reg0_ + (read_count_++ % read_vregs_));
      Read(t, ct, reg);
      return reg;
    };
    // Row vregs [t0, t1) of the stage: read, rounded or packed, stored.
    int64_t batch = 0;  // f16: batches so far, alternating the read sets
    const auto emit_rows = [&](int64_t t0, int64_t t1) {
      if (epilogue_ != nullptr) {
        // (row vreg, column tile) in store order, epilogue_copies_ at a time: read, the epilogue
        // over all of them, masked, stored (a packed result in lo/hi pairs, packed over lo).
        std::vector<std::pair<int64_t, int64_t>> tiles_in_order;
        for (int64_t u = t0; u < t1; u += out_bf16_ ? 2 : 1) {
          for (int64_t ct = 0; ct < used; ++ct) {
            tiles_in_order.push_back({u, ct});
            if (out_bf16_) tiles_in_order.push_back({u + 1, ct});
          }
        }
        for (std::size_t first = 0; first < tiles_in_order.size(); first += epilogue_copies_) {
          const std::size_t end = std::min(tiles_in_order.size(), first + epilogue_copies_);
          std::vector<int> reads;
          std::vector<StageTile> stage_tiles;
          for (std::size_t i = first; i < end; ++i) {
            reads.push_back(static_cast<int>(read_reg0_ + static_cast<int64_t>(i - first)));
            stage_tiles.push_back({tiles_in_order[i].first, tiles_in_order[i].second});
            ReadSums(tiles_in_order[i].first, tiles_in_order[i].second, reads.back());
          }
          EmitDotEpilogue(out_, *epilogue_, epilogue_regs_, reads, stage_tiles);
          for (std::size_t i = first; i < end; ++i) Mask(tiles_in_order[i].first, tiles_in_order[i].second, reads[i - first]);
          for (std::size_t i = first; i < end; i += out_bf16_ ? 2 : 1) {
            const auto [t, ct] = tiles_in_order[i];
            const int reg = reads[i - first];
            if (out_bf16_) out_.Emit(isa::OPCODE_VPACK_BF16, {V(reg), V(reg), V(reg + 1)});
            out_.Emit(isa::OPCODE_VST, {V(reg), Vmem(S(kStage), ((out_bf16_ ? t / 2 : t) * tiles + ct) * vreg_bytes)});
          }
        }
      } else if (out_f16_) {
        // f32 sums -> f16 in register form, which vpack.bf16 packs unchanged (f16_emulation.h),
        // f16_copies_ tiles at a time: the in-order VPU overlaps one rounding's latencies with
        // the others' work. Read sets alternate between registers [0, c) and [c, 2c), scratch
        // above.
        const F16Emulation f16([this](uint32_t value) { return f16_constant_reg_.at(value); });
        const int64_t pairs_per_batch = f16_copies_ / 2;
        const int64_t first_pair = t0 / 2 * used, pairs = t1 / 2 * used;
        for (int64_t first = first_pair; first < pairs; first += pairs_per_batch, ++batch) {
          const int set = static_cast<int>((batch % 2) * f16_copies_);
          std::vector<F16Emulation::Regs> regs;
          for (int64_t p = first; p < std::min(first + pairs_per_batch, pairs); ++p) {
            for (int64_t half = 0; half < 2; ++half) {
              const int copy = static_cast<int>(regs.size());
              const int reg = set + copy;
              Read(2 * (p / used) + half, p % used, reg);
              const int scratch = static_cast<int>(2 * f16_copies_) + 3 * copy;
              regs.push_back({reg, reg, scratch, scratch + 1, scratch + 2, kF16Mask + copy});
            }
          }
          f16.EmitNarrow(out_, regs);
          for (int64_t p = first; p < std::min(first + pairs_per_batch, pairs); ++p) {
            const int lo = set + static_cast<int>(2 * (p - first));
            out_.Emit(isa::OPCODE_VPACK_BF16, {V(lo), V(lo), V(lo + 1)});
            out_.Emit(isa::OPCODE_VST, {V(lo), Vmem(S(kStage), ((p / used) * tiles + p % used) * vreg_bytes)});
          }
        }
      } else if (out_bf16_) {
        for (int64_t u = t0 / 2; u < t1 / 2; ++u) {
          for (int64_t ct = 0; ct < used; ++ct) {
            const int lo = read(2 * u, ct);
            const int hi = read(2 * u + 1, ct);
            const int packed = static_cast<int>(read_reg0_ + (read_count_++ % read_vregs_));
            out_.Emit(isa::OPCODE_VPACK_BF16, {V(packed), V(lo), V(hi)});
            out_.Emit(isa::OPCODE_VST, {V(packed), Vmem(S(kStage), (u * tiles + ct) * vreg_bytes)});
          }
        }
      } else {
        for (int64_t t = t0; t < t1; ++t) {
          for (int64_t ct = 0; ct < used; ++ct) {
            const int reg = read(t, ct);
            out_.Emit(isa::OPCODE_VST, {V(reg), Vmem(S(kStage), (t * tiles + ct) * vreg_bytes)});
          }
        }
      }
    };
    const int64_t rows = last_chunk ? last_row_box_ : t_.chunk_rows;
    const int64_t cols = last_group ? last_col_box_ : t_.group_cols;
    // The stage goes out in out_pieces_ row pieces, one per engine (SplitOverEngines: one
    // engine keeps too few requests in flight to write at HBM's rate, and a dot with a short K,
    // attention's Q K^T, is bound by writing its output; a single job: each piece leaves as soon
    // as its rows are stored, while the next rows are read out). Each piece signals once; a job
    // with fewer rows than pieces signals the missing ones itself, so the next job always waits
    // for out_pieces_.
    const int64_t piece_rows = CeilDiv(CeilDiv(rows, out_pieces_), out_row_unit_) * out_row_unit_;
    const int64_t pieces = CeilDiv(rows, piece_rows);
    for (int64_t piece = 0; piece < pieces; ++piece) {
      const int64_t r0 = piece * piece_rows;
      const bool last = piece + 1 == pieces;
      emit_rows(r0 / s_, last ? row_vregs : std::min(row_vregs, (r0 + piece_rows) / s_));
      if (last) {
        for (int64_t t = 0; t < row_vregs; ++t) {
          for (int64_t ct = used; ct < tiles; ++ct) {
            for (int64_t j = 0; j < k_sets_; ++j) {
              out_.Emit(isa::OPCODE_MXU_ACC_READ_CLEAR, {Mxu(ReadMxu(j, t, ct)), V(read_reg0_), ReadRow(t), ct % t_.nc});
            }
          }
        }
      }
      out_.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
      EmitDma(Vmem(S(kStage)), Hbm(static_cast<int64_t>(c_.results[0]->address)), stage_, out_view_, Start(-1, r0, 0),
              Start(kBatch, Item(kRow0, r0), Item(kCol0, 0)), Size(std::min(piece_rows, rows - r0), cols),
              Sem(S(kStageSem), kOutSem), (engines_ - 1 - piece) % engines_);
    }
    if (pieces < out_pieces_) out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(S(kStageSem), kOutSem), out_pieces_ - pieces});
  }

  KernelContext& c_;
  ProgramBuilder& out_;
  const DotEpilogue* epilogue_ = nullptr;
  DotEpilogueRegisters epilogue_regs_;
  int epilogue_copies_ = 1;     // read registers the epilogue runs over at once
  uint64_t vmem_capacity_ = 0;  // VMEM for the panels and stages: all of it less the bias rows
  uint64_t bias_base_ = 0;      // VMEM of the first bias row
  uint64_t bias_stride_ = 0;    // bytes from one bias row to the next
  int64_t bias_dmas_ = 0;
  uint64_t array_base_ = 0;       // VMEM of the epilogue arrays' two slots (job parity)
  uint64_t array_slot_bytes_ = 0;
  int64_t array_sem0_ = 0;        // + job parity: the semaphore of a slot's DMAs
  int64_t reserved_sems_ = 0;     // semaphores at the top the arrays take
  std::vector<ShapeValue> array_views_, array_stages_;  // each array as its DMAs read and write it
  int64_t s_ = 8, l_ = 128, r_ = 128, c_cols_ = 128;
  bool out_bf16_ = false;        // a packed 16-bit result: bf16, or f16 when out_f16_
  bool out_f16_ = false;
  std::map<uint32_t, int> f16_constant_reg_;  // f16_emulation.h's constants -> vreg
  int64_t f16_copies_ = 2;  // tiles rounded together
  int64_t replicas_ = 1;    // MXU sets sharing a group's weights, splitting its row groups
  int64_t group_mxus_ = 0;  // the tuner's candidate: at most this many MXUs a group (0: the estimate's)
  int64_t k_sets_ = 1;      // groups of replicas splitting K (block kb: set kb % k_sets)
  int64_t waited_slice_ = 0;  // EmitKBlocks: the last weight slice its code has waited for
  int64_t k_sum_reg0_ = 0;    // the read-out's scratch for the K sets' sums (kKSumVregs)
  int64_t k_sum_count_ = 0;
  ReadMask read_mask_;
  bool in_f32_ = false;           // f32 x f32 (mxu.*.f32, the config's f32_passes per row)
  isa::ElementType in_type_ = isa::ElementType::kBF16;  // the operands' (and the MXUs') type
  DotForm form_;
  MxuTiling t_;
  int64_t rank_ = 2;
  ShapeValue lhs_view_, rhs_view_, out_view_, lhs_panel_, weight_panel_, stage_;
  int64_t lhs_k_ = 0;  // lhs columns the DMAs copy (PlanLhsView)
  int64_t padded_m_ = 0, padded_n_ = 0;
  int64_t row0_ = 0;                 // megacore: this core's first output row,
  int64_t col0_ = 0;                 // or column,
  int64_t batch_first_ = 0;          // or flattened batch element,
  int64_t batch_count_ = 1;          // and its batch elements (all of form_.batch unless split)
  int64_t lhs_cols_ = 0, weight_rows_ = 0, width_ = 0;
  uint64_t lhs_base_[2] = {0, 0};
  uint64_t weight_base_ = 0;  // VMEM: the weight panels' ring slots, ring_ of them
  uint64_t stage_base_ = 0;
  int64_t last_rows_ = 0, last_row_box_ = 0, last_cols_ = 0, last_col_box_ = 0;
  bool last_m_special_ = false, last_n_special_ = false;
  int64_t lhs_reg0_ = 0, weight_reg0_ = 0, read_reg0_ = 0;
  int64_t lhs_vregs_ = 8, weight_vregs_ = 8, read_vregs_ = 12;
  int zero_reg_ = 31;
  int64_t engines_ = 1;
  int64_t out_row_unit_ = 8;  // rows of an output piece: a multiple of this
  int64_t out_pieces_ = 1;    // output DMAs per job (and the stage semaphore's count)
  int64_t lhs_dmas_ = 1;
  int64_t slices_ = 1;                       // K slices of the panels' DMAs
  int64_t slice_blocks_ = 1;                 // K blocks per slice
  bool sliced_weights_ = false;              // the first weight panel goes out by slices too
  bool lhs_resident_ = false;                // one lhs panel for every job (PlanSlices)
  bool ahead_same_panel_ = false;            // PlanFirstRounds: a job's first round pushed during the job before,
  bool ahead_new_panel_ = false;             // also where it starts a new panel
  bool all_in_prologue_ = false;             // a ring slot for every weight panel, all sent first
  bool zeroed_before_dmas_ = false;          // EmitPadding: tiles a DMA also writes were zeroed
  int64_t acc_half_ = 0;                     // pipelined jobs: the accumulator rows of a half, else 0
  int64_t acc_offset_ = 0;                   // the pushes' and reads' half being emitted
  int64_t read_stage_ = -1;                  // the read-out's stage, or -1: from the job's parity
  int64_t ring_ = 2;                         // the weight panels' VMEM slots (PlanFirstRounds)
  int64_t ring_sem0_ = kFirstSliceSem;       // slot 0's semaphore
  int64_t lhs_slice_pieces_ = 1;             // DMAs (or signals) per lhs slice
  int64_t lhs_row_unit_ = 8, weight_k_unit_ = 16;  // a slice piece's rows: whole tiles as stored
  std::vector<int64_t> weight_slice_pieces_; // per weight slice
  bool weights_by_cols_ = false;             // weight pieces split by columns (K stored minor)
  int64_t weight_count_ = 0, lhs_count_ = 0, read_count_ = 0;
};

}  // namespace

bool DotKernelWritesLayout(const isa::Shape& result) {
  if (!result.layout) return false;
  const isa::Layout& layout = *result.layout;
  const int64_t rank = result.rank();
  for (int64_t i = 0; i < rank; ++i) {
    if (layout.minor_to_major[i] != rank - 1 - i) return false;
  }
  return !layout.tiles.empty() && layout.tiles[0].dims.size() == 2;
}

namespace {

// A core's estimated time for its part of a dot, [m, n] of the output with all of K (every core
// runs alike, sharing HBM): the longer of its MXU work and the chip's HBM traffic over the
// bandwidth. MXU: the kernel's plan for the part (PlanMxus; none: it cannot be lowered, never
// chosen). HBM: every core reads its rows of the lhs and its columns of the
// weights, and writes its part; a split by rows reads all the weights once per core, a split by
// columns all of the lhs.
double CorePartNs(const DotForm& form, const CompileOptions& options, int64_t m, int64_t n, int64_t cores,
                  bool rows, isa::ElementType in_type, int out_bytes) {
  DotForm part = form;
  part.m = m;
  part.n = n;
  const std::optional<MxuPlan> plan = PlanMxus(part, options, cores, in_type, out_bytes, nullptr);
  if (!plan) return std::numeric_limits<double>::infinity();
  const double mxu_ns = options.mxu_rates.Ns(plan->mxu_cycles);
  const int in_bytes = isa::ElementBitWidth(in_type) / 8;
  const double lhs = static_cast<double>(form.batch * form.m * form.k * in_bytes);
  const double weights = static_cast<double>(form.batch * form.k * form.n * in_bytes);
  const double out = static_cast<double>(form.batch * form.m * form.n * out_bytes);
  const double c = static_cast<double>(cores);
  const double bytes = rows ? lhs + c * weights + out : c * lhs + weights + out;
  return std::max(mxu_ns, bytes / options.hbm_bytes_per_ns);
}

}  // namespace

CoreSlice DotCoreSlice(const DotForm& form, const CompileOptions& options, const CorePart& part,
                       const DeviceBuffer& result, isa::ElementType in_type) {
  const isa::Target& target = options.target;
  const int64_t cores = part.count;
  const auto tile = [&](std::size_t dim) -> int64_t {
    const isa::Shape& shape = result.shape;
    if (!shape.layout || shape.layout->tiles.empty() || shape.layout->tiles[0].dims.size() != 2) return 1;
    return shape.layout->tiles[0].dims[dim];
  };
  const auto share = [&](int64_t size, int64_t unit) { return CeilDiv(CeilDiv(size, cores), unit) * unit; };
  // Rows where there are more than a pass of MXU rows (R): every K block's pushes, R cycles or
  // more on one core, shorten on each, down to the R cycles a weight tile takes to load. Columns
  // where there are more than an MXU's (C). With fewer, a core's passes are mostly pipeline fill,
  // drain and weight loading, which every core would repeat, and one core alone is as fast. Where
  // both are possible, columns only when the estimated time (CorePartNs) is shorter: a split by
  // rows has every core read all the weights, which for few rows against many columns doubles
  // the traffic of an HBM-bound dot. Each core's part: whole result tiles and packed 16-bit vregs
  // (2 x sublanes rows), or whole result tiles, lanes and MXU column blocks; every core must get
  // one. Where neither is possible, the flattened batch elements in equal shares, each core its
  // own whole dots (attention's [12 heads] of 128 x 128 x 64 ran on one core).
  const int64_t r = target.mxu_rows(), c = target.mxu_columns();
  const int64_t row_unit = std::lcm(int64_t{2} * target.sublanes(), tile(0));
  const int64_t col_unit = std::lcm(std::lcm(static_cast<int64_t>(target.lanes()), tile(1)), c);
  const bool by_rows = form.m > r && share(form.m, row_unit) * (cores - 1) < form.m;
  const bool by_cols = form.n > c && share(form.n, col_unit) * (cores - 1) < form.n;
  bool rows = by_rows;
  if (by_rows && by_cols && options.mxu_rates.clock_mhz > 0 && options.hbm_bytes_per_ns > 0) {
    const int out_bytes = isa::ElementBitWidth(result.shape.element_type) / 8;
    const double by_rows_ns = CorePartNs(form, options, share(form.m, row_unit), form.n, cores, true, in_type, out_bytes);
    const double by_cols_ns = CorePartNs(form, options, form.m, share(form.n, col_unit), cores, false, in_type, out_bytes);
    rows = by_rows_ns <= by_cols_ns;
  }
  CoreSlice slice;
  int64_t size = 0, per_core = 0;
  if (rows) {
    slice.split = CoreSplit::kRows;
    size = form.m;
    per_core = share(form.m, row_unit);
  } else if (by_cols) {
    slice.split = CoreSplit::kColumns;
    size = form.n;
    per_core = share(form.n, col_unit);
  } else if (form.batch > 1 && share(form.batch, 1) * (cores - 1) < form.batch) {
    slice.split = CoreSplit::kBatch;
    size = form.batch;
    per_core = share(form.batch, 1);
  } else {
    return slice;  // empty: one core
  }
  slice.first = std::min(size, part.index * per_core);
  slice.end = std::min(size, slice.first + per_core);
  return slice;
}

int DotCoreParts(const KernelContext& context) {
  const int cores = static_cast<int>(isa::TensorCores(context.options.target));
  std::string why;
  const auto form = CanonicalDot(ContractionOf(context), &why);
  if (cores <= 1 || !form || context.results.size() != 1 || !DotKernelWritesLayout(context.results[0]->shape)) return 1;
  const CoreSlice last = DotCoreSlice(*form, context.options, {cores - 1, cores}, *context.results[0],
                                      context.operands.at(0).at(0)->shape.element_type);
  return last.end > last.first ? cores : 1;
}

namespace {

// Dots whose estimated time exceeds this are left to the estimate: a candidate's run costs wall
// time in proportion to its simulated time (a few ms a simulated us on the project's machine),
// and a long dot's plans (many long jobs a core, their DMAs deep in the pipeline) are what the
// estimate sees well; the short ones' single or last jobs are not (EstimateMxuPlan).
constexpr double kMostTunedNs = 64e3;

// What the tuner remembers a dot's choice under: its operands' and result's shapes with layouts,
// dimension numbers, core parts and its epilogue's operations.
std::string TuningKey(const KernelContext& context, const DotForm& form, const DotEpilogue* epilogue) {
  std::string key = "dot";
  for (const auto& operand : context.operands) key += " " + isa::ToString(operand.at(0)->shape);
  if (epilogue != nullptr) {
    key += " epilogue";
    for (const ExprNode& node : epilogue->expr.nodes) {
      key += " " + (node.hlo != nullptr ? std::string(hlo::OpcodeName(node.hlo->opcode())) : std::string("sums"));
    }
  }
  key += " -> " + isa::ToString(context.results.at(0)->shape);
  key += fmt::format(" lhs_perm={{{}}} rhs_perm={{{}}}", fmt::join(form.lhs_perm, ","), fmt::join(form.rhs_perm, ","));
  return key + fmt::format(" on {} of {} cores", context.part.count, isa::TensorCores(context.options.target));
}

// The MXUs an N group of the dot's plan: 0, the estimate's (PlanMxus), or where the options
// have a tuner and the dot is short, whichever of the estimate's plan and the plans of at most
// 4, 3, 2 and 1 MXUs a group (tpu_v4's four) runs fastest in simulation, every core part with
// it. Gemma 3's MLP down-projection (11 x 6912 x 1152, 5 and 4 column blocks a core): the
// estimate's groups of 4 MXUs leave the fifth block's group on four MXUs for one block's columns,
// its 54 K blocks a weight load each after the last bytes landed (21.8 us); groups of one MXU
// with K in four sets pass it in a quarter of that.
int64_t TunedGroupMxus(const KernelContext& context, const DotForm& form, const DotEpilogue* epilogue) {
  const CompileOptions& options = context.options;
  if (!options.kernel_tuner || options.mxu_rates.clock_mhz <= 0) return 0;
  const isa::ElementType in_type = context.operands.at(0).at(0)->shape.element_type;
  const int out_bytes = isa::ElementBitWidth(context.results.at(0)->shape.element_type) / 8;
  const auto estimate = PlanMxus(form, options, context.part.count, in_type, out_bytes, nullptr);
  if (!estimate || options.mxu_rates.Ns(estimate->cycles) / static_cast<double>(context.part.count) > kMostTunedNs) {
    return 0;
  }
  std::vector<int64_t> candidates = {0};
  for (int64_t mxus = options.target.mxu_count(); mxus >= 1; --mxus) candidates.push_back(mxus);
  const std::size_t chosen = options.kernel_tuner->Choose(TuningKey(context, form, epilogue), [&] {
    std::vector<isa::Program> programs;
    for (int64_t mxus : candidates) {
      ProgramBuilder trial("dot_candidate", options.target);
      EmitOnCores(trial, context.part.count, [&](const CorePart& part) {
        KernelContext copy{trial,          context.options,         context.instruction,
                           context.group,  context.operands,        context.results,
                           context.hbm_scratch_address, context.hbm_scratch_bytes, part};
        DotEmitter(copy, form, mxus, epilogue).Run();
      });
      trial.Emit(isa::OPCODE_HALT);
      programs.push_back(trial.Finish());
    }
    return programs;
  });
  return candidates[chosen];
}

}  // namespace

void EmitDotKernel(KernelContext& context, const DotForm& form, const DotEpilogue* epilogue) {
  DotEmitter(context, form, TunedGroupMxus(context, form, epilogue), epilogue).Run();
}

}  // namespace tpusim::compiler
