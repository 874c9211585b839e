// Kernel generators for the tests (kernel_gen.h). The text they write is ordinary `.tpuasm`: a
// test that fails can write it out and `tpusim exec` it.
//
// The matmul kernel (MatmulKernel)
// ---------------------------------
// Names: S x L vregs (8 x 128), P = 2S = 16 bf16 rows per packed vreg, an R x C MXU, nk =
// ceil(R / L) LHS pushes per row group, nc = ceil(C / L) pops per S result rows.
//
// Work split. K is cut into nkb = ceil(K / R) blocks of R, N into nnb = ceil(N / C) blocks of C.
// The MXUs form an mk x mn grid (mk K blocks at a time, mn column blocks at a time): MXU (i, j)
// holds the weight tile (kb = kc * mk + i, nb = chunk * mn + j). A "K chunk" kc covers mk blocks,
// so there are nkc = nkb / mk of them; a "column chunk" covers Wc = mn * C columns. On the
// presets: tiny (16 x 16, 1 MXU) 1 x 1 with 8 or 32 K chunks; tpu_v4 / tpu_v5e (128 x 128, 4
// MXUs) 4 x 1 for the 512 cube and 1 x 1 for the 128 cube (one MXU); tpu_v6e (256 x 256, 4 MXUs)
// 2 x 2 for the 512 cube, 1 x 1 for the 128 cube (K and N padded with zeros to 256).
//
// Order of the sums. Each row group's result rows are popped from MXU (0, j) with `mxu.pop` in K
// chunk 0 and with `mxu.pop.acc` otherwise, then from MXUs (1, j) .. (mk - 1, j) with
// `mxu.pop.acc`, K chunk after K chunk: C = ((P_0 + P_1) + P_2) + ... in increasing kb
// (kernel_gen.h). With one K chunk the popped rows are final and are stored at once (16 registers
// in rotation); with several, one accumulator register per 8 result rows lives across the K chunks
// (16 at most, which sets the row block: 128 rows on tiny) and is stored after the last.
//
// Data movement (double-buffered DMA). The output is computed in steps: a row block of Rb rows
// (256 with one K chunk, else what 16 accumulators hold) by a column panel of Wp columns
// (128, or Wc when that is wider, clipped to N). A step needs A's row block (bf16[Rb, K]) and B's
// panel (bf16[K, Wp]) in VMEM, both re-tiled by their DMAs from T(8,128)(2,1) to T(16,128)(2,1),
// whose 4 KiB tiles are exactly one packed vreg (docs/isa.md, "bf16 packing"), and writes a C stage
// (f32[Rb, Wp]{T(8,128)}) that a DMA takes to HBM. Each of the three has two buffers: while step
// t computes, A's next row block (and at a panel's first step, B's next panel) arrive, and step
// t - 1's results leave. Before a DMA overwrites a buffer, the VPU work that read it is complete
// (a `vpu.signal` and `sem.wait` end each step); before a step stores into a C stage, the DMA of
// step t - 2 out of it has completed.
//
// An MXU narrower than a vreg (R or C < L: tiny's 16 x 16) uses only the first R lanes of a push
// (docs/isa.md: clipped to R) and fills only the first C lanes of a pop (0 beyond). Loads then
// start at a lane offset inside a tile (vld vmem[tile + 4 * column]: sublane s reads the 128
// words from there, lanes 0..R-1 being the wanted columns; the rest, spilling into the next
// row pair, is never used, and each buffer has a 4 KiB guard after it), and stores write the C
// lanes at their lane offset under a lane mask.
//
// Inside a step: for each column chunk, for each K chunk: load the mk x mn weight tiles
// (ceil(min(R, K) / 16) x nc weight pushes each, a zero vreg for columns past N), latch, then
// push the Rb / 16 row groups (a zero vreg for K columns past K) with each group's pops `lag`
// groups behind its push, lag = floor(pipeline_drain_cycles / 16) + 1 (at most the step's
// groups), so that pops find their rows ready rather than holding the in-order MXU queue through
// the drain.
#include "tests/sim/kernel_gen.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "isa/error.h"

namespace tpusim::test_kernels {
namespace {

constexpr int64_t kSublanes = 8;
constexpr int64_t kLanes = 128;
constexpr int64_t kBf16RowsPerVreg = 16;
constexpr int64_t kVregBytes = 4096;
constexpr int64_t kGuardBytes = 4096;

std::string Hex(int64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string Dec(int64_t value) { return std::to_string(value); }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// `vmem[sN + off]`
std::string Vmem(const std::string& reg, int64_t offset) {
  return "vmem[" + reg + (offset == 0 ? "" : " + " + Hex(offset)) + "]";
}

class Text {
 public:
  void Line(const std::string& line) { text_ += line + "\n"; }
  void Code(const std::string& line) { text_ += "  " + line + "\n"; }
  void Label(const std::string& label) { text_ += label + ":\n"; }
  void Comment(const std::string& comment) { text_ += "  // " + comment + "\n"; }
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

struct MachineShape {
  int64_t rows = 0;     // R
  int64_t columns = 0;  // C
  uint32_t mxus = 0;
  uint32_t vregs = 0;
  uint32_t dma_engines = 0;
  int64_t vmem_bytes = 0;
  double drain_cycles = 0;
};

MachineShape ShapeOf(const ArchConfig& config) {
  const auto& core = config.tensor_core();
  if (core.vpu().sublane_count() != kSublanes || core.vpu().lane_count() != kLanes) {
    throw Error("kernel_gen: the kernels are written for 8 x 128 vregs");
  }
  MachineShape shape;
  shape.rows = core.mxu().row_count();
  shape.columns = core.mxu().column_count();
  shape.mxus = core.mxu().count();
  shape.vregs = core.vpu().vector_register_count();
  shape.dma_engines = core.dma().engine_count();
  shape.vmem_bytes = static_cast<int64_t>(core.vmem().capacity_mib()) << 20;
  shape.drain_cycles = core.mxu().pipeline_drain_cycles();
  for (int64_t dim : {shape.rows, shape.columns}) {
    if (dim < kBf16RowsPerVreg || (dim % kLanes != 0 && kLanes % dim != 0)) {
      throw Error("kernel_gen: an MXU dimension of " + Dec(dim) +
                  " is neither a multiple of 128 nor a divisor of 128 of at least 16");
    }
  }
  if (shape.vregs < 32) throw Error("kernel_gen: the kernels need 32 vregs");
  if (core.mxu().bf16_passes() == 0) throw Error("kernel_gen: the MXU takes no bf16");
  return shape;
}

std::string TargetLine(const MachineShape& shape, uint32_t mxus, uint32_t engines, uint32_t semaphores) {
  return ".target sublanes=8, lanes=128, vregs=32, mxus=" + Dec(mxus) + ", mxu_rows=" + Dec(shape.rows) +
         ", mxu_cols=" + Dec(shape.columns) + ", dma_engines=" + Dec(engines) +
         ", semaphores=" + Dec(semaphores) + ", cmem=false";
}

// The MXU grid and the blocking of one matmul (the file comment's names).
struct MatmulPlan {
  int64_t m, k, n;
  int64_t r, c;        // MXU shape
  int64_t nk, nc;      // pushes per row group, pops per 8 rows
  int64_t mk, mn;      // MXU grid
  int64_t nkc;         // K chunks
  int64_t kc_columns;  // K columns per K chunk: mk * R
  int64_t k_tile;      // K rows of a weight tile that exist: min(R, K)
  int64_t wc;          // columns per column chunk: mn * C
  int64_t wp;          // panel width
  int64_t chunks;      // column chunks per panel
  int64_t panels;
  int64_t rb;          // rows per step
  int64_t row_blocks;
  int64_t groups;      // row groups per step: rb / 16
  int64_t lag;         // pops lag their push by this many groups
  uint32_t engines;
  // Pop targets per 8 result rows: (j, q) whose columns exist.
  struct Target {
    int64_t j, q;
    int64_t column;  // within the column chunk: j * C + q * L
  };
  std::vector<Target> targets;
  bool Real(int64_t j, int64_t q) const { return j * c + q * kLanes < std::min(wc, wp); }
};

int64_t LargestDivisorAtMost(int64_t value, int64_t limit) {
  for (int64_t d = std::min(value, limit); d > 1; --d) {
    if (value % d == 0) return d;
  }
  return 1;
}

MatmulPlan PlanMatmul(const MachineShape& shape, const MatmulSpec& spec) {
  MatmulPlan plan{};
  plan.m = spec.m;
  plan.k = spec.k;
  plan.n = spec.n;
  for (int64_t dim : {spec.m, spec.k, spec.n}) {
    if (dim <= 0 || dim % kLanes != 0) throw Error("kernel_gen: matmul dims must be multiples of 128");
  }
  plan.r = shape.rows;
  plan.c = shape.columns;
  plan.nk = CeilDiv(plan.r, kLanes);
  plan.nc = CeilDiv(plan.c, kLanes);
  if (spec.k % plan.r != 0 && spec.k > plan.r) {
    throw Error("kernel_gen: K must be a multiple of the MXU's " + Dec(plan.r) + " rows, or less");
  }
  if (spec.n % plan.c != 0 && spec.n > plan.c) {
    throw Error("kernel_gen: N must be a multiple of the MXU's " + Dec(plan.c) + " columns, or less");
  }
  const int64_t nkb = CeilDiv(spec.k, plan.r);
  const int64_t nnb = CeilDiv(spec.n, plan.c);
  const int64_t mxus = spec.max_mxus == 0 ? shape.mxus : std::min<int64_t>(spec.max_mxus, shape.mxus);
  plan.mk = LargestDivisorAtMost(nkb, mxus);
  plan.mn = LargestDivisorAtMost(nnb, mxus / plan.mk);
  // A lane offset inside a tile is one constant per K chunk / column chunk, so an MXU narrower
  // than a vreg is used alone along that dimension (on the presets, tiny has one MXU anyway).
  if (plan.r < kLanes) plan.mk = 1;
  if (plan.c < kLanes) plan.mn = 1;
  plan.nkc = nkb / plan.mk;
  plan.kc_columns = plan.mk * plan.r;
  plan.k_tile = std::min(plan.r, spec.k);
  plan.wc = plan.mn * plan.c;
  plan.wp = std::min(std::max<int64_t>(kLanes, plan.wc), spec.n);
  plan.chunks = std::max<int64_t>(1, plan.wp / plan.wc);
  plan.panels = spec.n / plan.wp;
  for (int64_t j = 0; j < plan.mn; ++j) {
    for (int64_t q = 0; q < plan.nc; ++q) {
      if (plan.Real(j, q)) plan.targets.push_back({j, q, j * plan.c + q * kLanes});
    }
  }
  const int64_t targets = static_cast<int64_t>(plan.targets.size());
  if (plan.nkc == 1) {
    plan.rb = std::min<int64_t>(spec.m, 256);
  } else {
    // 16 accumulators of 8 rows: 128 / targets rows, in whole row groups.
    plan.rb = std::min<int64_t>(spec.m, 16 * kSublanes / targets / kBf16RowsPerVreg * kBf16RowsPerVreg);
    if (plan.rb < kBf16RowsPerVreg) throw Error("kernel_gen: too many accumulators per row group");
  }
  if (spec.m % plan.rb != 0) throw Error("kernel_gen: m must be a multiple of the row block " + Dec(plan.rb));
  plan.row_blocks = spec.m / plan.rb;
  plan.groups = plan.rb / kBf16RowsPerVreg;
  plan.lag = std::min<int64_t>(plan.groups, static_cast<int64_t>(shape.drain_cycles) / kBf16RowsPerVreg + 1);
  plan.engines = std::min<uint32_t>(shape.dma_engines, 4);
  return plan;
}

// Byte offset of column `column` inside a row of 4 KiB tiles of 128 columns (bf16
// T(16,128)(2,1) and f32 T(8,128) alike): the tile, then the lane.
int64_t ColumnOffset(int64_t column) { return column / kLanes * kVregBytes + column % kLanes * 4; }

}  // namespace

uint32_t MatmulMxusUsed(const ArchConfig& config, const MatmulSpec& spec) {
  const MatmulPlan plan = PlanMatmul(ShapeOf(config), spec);
  return static_cast<uint32_t>(plan.mk * plan.mn);
}

std::string MatmulKernel(const ArchConfig& config, const MatmulSpec& spec) {
  const MachineShape shape = ShapeOf(config);
  const MatmulPlan p = PlanMatmul(shape, spec);
  const int64_t a_bytes = p.m * p.k * 2, b_bytes = p.k * p.n * 2, c_bytes = p.m * p.n * 4;
  const int64_t a_hbm = 0, b_hbm = a_bytes, c_hbm = a_bytes + b_bytes;
  // VMEM: two A row blocks, two B panels, two C stages, each followed by a guard.
  const int64_t abuf_bytes = p.rb * p.k * 2, bbuf_bytes = p.k * p.wp * 2, cbuf_bytes = p.rb * p.wp * 4;
  int64_t next = 0;
  auto place = [&](int64_t bytes) {
    const int64_t at = next;
    next += bytes + kGuardBytes;
    return at;
  };
  const int64_t abuf[2] = {place(abuf_bytes), place(abuf_bytes)};
  const int64_t bbuf[2] = {place(bbuf_bytes), place(bbuf_bytes)};
  const int64_t cbuf[2] = {place(cbuf_bytes), place(cbuf_bytes)};
  if (next > shape.vmem_bytes) {
    throw Error("kernel_gen: the matmul needs " + Dec(next) + " bytes of VMEM; the machine has " +
                Dec(shape.vmem_bytes));
  }
  const std::string a_shape = "bf16[" + Dec(p.m) + "," + Dec(p.k) + "]{1,0:T(8,128)(2,1)}";
  const std::string b_shape = "bf16[" + Dec(p.k) + "," + Dec(p.n) + "]{1,0:T(8,128)(2,1)}";
  const std::string c_shape = "f32[" + Dec(p.m) + "," + Dec(p.n) + "]{1,0:T(8,128)}";
  const std::string abuf_shape = "bf16[" + Dec(p.rb) + "," + Dec(p.k) + "]{1,0:T(16,128)(2,1)}";
  const std::string bbuf_shape = "bf16[" + Dec(p.k) + "," + Dec(p.wp) + "]{1,0:T(16,128)(2,1)}";
  const std::string cbuf_shape = "f32[" + Dec(p.rb) + "," + Dec(p.wp) + "]{1,0:T(8,128)}";
  // Semaphores: A's buffers 0, 1; B's 2, 3; the VPU 4; the C stages 5, 6.
  constexpr int kSemA = 0, kSemB = 2, kSemVpu = 4, kSemC = 5;
  const uint32_t mxus = static_cast<uint32_t>(p.mk * p.mn);
  auto mxu = [&](int64_t i, int64_t j) { return "mxu" + Dec(i * p.mn + j); };
  auto engine = [&](int64_t e) { return Dec(e % p.engines); };

  Text t;
  t.Line("// Generated by tests/sim/kernel_gen.cc (the algorithm is described there): C = A x B,");
  t.Line("// A bf16[" + Dec(p.m) + "," + Dec(p.k) + "], B bf16[" + Dec(p.k) + "," + Dec(p.n) + "], C f32, on " +
         Dec(mxus) + " MXU(s) of " + Dec(p.r) + " x " + Dec(p.c) + " as a " + Dec(p.mk) + " x " + Dec(p.mn) +
         " grid (K x N).");
  t.Line("// " + Dec(p.nkc) + " K chunk(s) of " + Dec(p.kc_columns) + " columns; panels of " + Dec(p.wp) +
         " columns in " + Dec(p.chunks) + " chunk(s) of " + Dec(p.wc) + "; row blocks of " + Dec(p.rb) +
         " rows; pops " + Dec(p.lag) + " groups behind their pushes.");
  t.Line(".program " + spec.name);
  t.Line(TargetLine(shape, mxus, p.engines, 8));
  t.Line(".buffer a, hbm[" + Hex(a_hbm) + "], size=" + Hex(a_bytes) + ", shape=" + a_shape + ", role=parameter(0)");
  t.Line(".buffer b, hbm[" + Hex(b_hbm) + "], size=" + Hex(b_bytes) + ", shape=" + b_shape + ", role=parameter(1)");
  t.Line(".buffer c, hbm[" + Hex(c_hbm) + "], size=" + Hex(c_bytes) + ", shape=" + c_shape + ", role=output(0)");
  for (int i = 0; i < 2; ++i) {
    t.Line(".buffer a_vmem" + Dec(i) + ", vmem[" + Hex(abuf[i]) + "], size=" + Hex(abuf_bytes) + ", shape=" + abuf_shape +
           ", role=temporary");
  }
  for (int i = 0; i < 2; ++i) {
    t.Line(".buffer b_vmem" + Dec(i) + ", vmem[" + Hex(bbuf[i]) + "], size=" + Hex(bbuf_bytes) + ", shape=" + bbuf_shape +
           ", role=temporary");
  }
  for (int i = 0; i < 2; ++i) {
    t.Line(".buffer c_stage" + Dec(i) + ", vmem[" + Hex(cbuf[i]) + "], size=" + Hex(cbuf_bytes) + ", shape=" +
           cbuf_shape + ", role=temporary");
  }
  t.Line("");

  auto dma_a = [&](int64_t step) {
    const int64_t rb = step % p.row_blocks;
    t.Code("dma hbm[" + Hex(a_hbm) + "] -> vmem[" + Hex(abuf[step % 2]) + "], src=" + a_shape + ", dst=" + abuf_shape +
           ", src_start=[" + Dec(rb * p.rb) + ", 0], size=[" + Dec(p.rb) + ", " + Dec(p.k) + "], sem=sem[" +
           Dec(kSemA + step % 2) + "], engine=" + engine(0));
  };
  auto dma_b = [&](int64_t panel) {
    t.Code("dma hbm[" + Hex(b_hbm) + "] -> vmem[" + Hex(bbuf[panel % 2]) + "], src=" + b_shape + ", dst=" + bbuf_shape +
           ", src_start=[0, " + Dec(panel * p.wp) + "], size=[" + Dec(p.k) + ", " + Dec(p.wp) + "], sem=sem[" +
           Dec(kSemB + panel % 2) + "], engine=" + engine(1));
  };

  // Registers: v0..v7 LHS, v8..v13 weights (rotating), v14 zero, v15 discarded pops,
  // v16..v31 results. m1: the lanes an MXU narrower than a vreg fills.
  t.Comment("constants: v14 = 0; m1 = the lanes a pop fills");
  t.Code("vbcast v14, 0");
  t.Code("vlaneid v13");
  t.Code("vbcast v12, " + Dec(std::min<int64_t>(p.c, kLanes)));
  t.Code("vcmp.lt.s32 m1, v13, v12");
  const bool masked_stores = p.c < kLanes;
  t.Comment("prologue: step 0's A row block and B panel");
  dma_a(0);
  dma_b(0);

  int lhs_rotation = 0, weight_rotation = 0, result_rotation = 0;
  // A row group's pops; `first`: this is K chunk 0 (mxu.pop from the first K block).
  // With one K chunk each result is stored once complete.
  auto emit_pops = [&](int64_t g, bool first) {
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t q = 0; q < p.nc; ++q) {
        for (int64_t j = 0; j < p.mn; ++j) {
          const bool real = p.Real(j, q);
          std::string reg = "v15";
          int64_t column = j * p.c + q * kLanes;
          if (real) {
            if (p.nkc == 1) {
              reg = "v" + Dec(16 + result_rotation++ % 16);
            } else {
              int64_t index = 0;
              while (p.targets[index].j != j || p.targets[index].q != q) ++index;
              reg = "v" + Dec(16 + (2 * g + h) * static_cast<int64_t>(p.targets.size()) + index);
            }
          }
          for (int64_t i = 0; i < p.mk; ++i) {
            const bool plain = !real || (first && i == 0);
            t.Code(std::string(plain ? "mxu.pop " : "mxu.pop.acc ") + mxu(i, j) + ", " + reg);
          }
          if (real && p.nkc == 1) {
            const int64_t offset = (2 * g + h) * (p.wp / kLanes) * kVregBytes + ColumnOffset(column);
            t.Code("vst " + reg + ", " + Vmem("s6", offset) + (masked_stores ? ", mask=m1" : ""));
          }
        }
      }
    }
  };
  // One K chunk: weights, latch, the row groups with their pops. s4: A at this K chunk's first
  // column; s5: B at this K chunk's first row and the column chunk's first column.
  auto emit_k_chunk = [&](bool first) {
    for (int64_t i = 0; i < p.mk; ++i) {
      for (int64_t j = 0; j < p.mn; ++j) {
        for (int64_t row = 0; row < p.k_tile; row += kBf16RowsPerVreg) {
          for (int64_t q = 0; q < p.nc; ++q) {
            std::string reg = "v14";
            if (p.Real(j, q)) {
              reg = "v" + Dec(8 + weight_rotation++ % 6);
              const int64_t offset = (i * p.r + row) / kBf16RowsPerVreg * (p.wp / kLanes) * kVregBytes +
                                     (j * p.c + q * kLanes) / kLanes * kVregBytes;
              t.Code("vld " + reg + ", " + Vmem("s5", offset));
            }
            t.Code("mxu.wpush.bf16 " + mxu(i, j) + ", " + reg);
          }
        }
      }
    }
    for (int64_t i = 0; i < p.mk; ++i) {
      for (int64_t j = 0; j < p.mn; ++j) t.Code("mxu.latch " + mxu(i, j));
    }
    for (int64_t g = 0; g < p.groups + p.lag; ++g) {
      if (g < p.groups) {
        for (int64_t i = 0; i < p.mk; ++i) {
          for (int64_t b = 0; b < p.nk; ++b) {
            std::string reg = "v14";
            // K columns past K exist only when K < R (one K block; PlanMatmul checks).
            if (i * p.r + b * kLanes < p.k) {
              reg = "v" + Dec(lhs_rotation++ % 8);
              const int64_t offset = g * (p.k / kLanes) * kVregBytes + (i * p.r + b * kLanes) / kLanes * kVregBytes;
              t.Code("vld " + reg + ", " + Vmem("s4", offset));
            }
            for (int64_t j = 0; j < p.mn; ++j) t.Code("mxu.push.bf16 " + mxu(i, j) + ", " + reg);
          }
        }
      }
      if (g >= p.lag) emit_pops(g - p.lag, first);
    }
  };
  // s10 = ColumnOffset(s10), through s11 and s12.
  auto column_offset = [&](const std::string& dst, const std::string& column) {
    t.Code("shr s11, " + column + ", 7");
    t.Code("shl s11, s11, 12");
    t.Code("and s12, " + column + ", 127");
    t.Code("shl s12, s12, 2");
    t.Code("add " + dst + ", s11, s12");
  };

  const int64_t steps = p.panels * p.row_blocks;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t panel = step / p.row_blocks, rb = step % p.row_blocks;
    const std::string s = Dec(step);
    t.Line("");
    t.Line("// ---- step " + s + ": rows " + Dec(rb * p.rb) + ".." + Dec(rb * p.rb + p.rb - 1) + ", columns " +
           Dec(panel * p.wp) + ".." + Dec(panel * p.wp + p.wp - 1) + " ----");
    if (step + 1 < steps) dma_a(step + 1);
    if (rb == 0 && panel + 1 < p.panels) dma_b(panel + 1);
    t.Code("sem.wait sem[" + Dec(kSemA + step % 2) + "], 1");
    if (rb == 0) t.Code("sem.wait sem[" + Dec(kSemB + panel % 2) + "], 1");
    if (step >= 2) t.Code("sem.wait sem[" + Dec(kSemC + step % 2) + "], 1       // step " + Dec(step - 2) + "'s results have left this C stage");
    t.Code("mov s7, 0                 // column chunk");
    t.Code("mov s1, " + Dec(p.chunks));
    t.Label("chunk_" + s);
    t.Code("mul s10, s7, " + Dec(p.wc));
    column_offset("s10", "s10");
    t.Code("add s5, s10, " + Hex(bbuf[panel % 2]));
    t.Code("add s6, s10, " + Hex(cbuf[step % 2]));
    t.Code("mov s4, " + Hex(abuf[step % 2]));
    t.Comment("K chunk 0");
    emit_k_chunk(true);
    if (p.nkc > 1) {
      t.Code("mov s2, 1                 // K chunk");
      t.Code("mov s3, " + Dec(p.nkc - 1));
      t.Label("k_chunk_" + s);
      t.Code("mul s10, s2, " + Dec(p.kc_columns));
      column_offset("s10", "s10");
      t.Code("add s4, s10, " + Hex(abuf[step % 2]));
      t.Code("add s5, s5, " + Hex(p.kc_columns / kBf16RowsPerVreg * (p.wp / kLanes) * kVregBytes));
      emit_k_chunk(false);
      t.Code("add s2, s2, 1");
      t.Code("loop s3, k_chunk_" + s);
      t.Comment("the accumulators are final");
      for (int64_t g = 0; g < p.groups; ++g) {
        for (int64_t h = 0; h < 2; ++h) {
          for (size_t index = 0; index < p.targets.size(); ++index) {
            const int64_t reg = 16 + (2 * g + h) * static_cast<int64_t>(p.targets.size()) + static_cast<int64_t>(index);
            const int64_t offset = (2 * g + h) * (p.wp / kLanes) * kVregBytes + ColumnOffset(p.targets[index].column);
            t.Code("vst v" + Dec(reg) + ", " + Vmem("s6", offset) + (masked_stores ? ", mask=m1" : ""));
          }
        }
      }
    }
    t.Code("add s7, s7, 1");
    t.Code("loop s1, chunk_" + s);
    t.Code("vpu.signal sem[" + Dec(kSemVpu) + "], 1     // every load and store of the step is done");
    t.Code("sem.wait sem[" + Dec(kSemVpu) + "], 1");
    t.Code("dma vmem[" + Hex(cbuf[step % 2]) + "] -> hbm[" + Hex(c_hbm) + "], src=" + cbuf_shape + ", dst=" + c_shape +
           ", dst_start=[" + Dec(rb * p.rb) + ", " + Dec(panel * p.wp) + "], size=[" + Dec(p.rb) + ", " + Dec(p.wp) +
           "], sem=sem[" + Dec(kSemC + step % 2) + "], engine=" + engine(2 + step % 2));
  }
  t.Line("");
  t.Comment("the last results have left");
  for (int64_t step = std::max<int64_t>(0, steps - 2); step < steps; ++step) {
    t.Code("sem.wait sem[" + Dec(kSemC + step % 2) + "], 1");
  }
  t.Code("halt");
  return t.str();
}

std::string MxuPeakStreamKernel(const ArchConfig& config, int64_t groups, bool lhs_from_vmem) {
  const MachineShape shape = ShapeOf(config);
  const int64_t nk = CeilDiv(shape.rows, kLanes), nc = CeilDiv(shape.columns, kLanes);
  const int64_t weight_pushes = CeilDiv(shape.rows, kBf16RowsPerVreg) * nc;
  constexpr int64_t kUnroll = 8;
  // Pops trail their push by more than drain / 16 groups (docs/timing.md, MXU), rounded up to
  // whole loop iterations: a group's last pop then comes after its rows are ready, and before the
  // array is free for the group that follows it in the queue. (Exactly drain / 16 groups leaves
  // the second pop of a column pair one cycle behind its rows: that group's successor waits for
  // it in the in-order queue.)
  const int64_t lag =
      CeilDiv(static_cast<int64_t>(shape.drain_cycles) / kBf16RowsPerVreg + 1, kUnroll) * kUnroll;
  if (groups % kUnroll != 0 || groups < lag + kUnroll) {
    throw Error("kernel_gen: the stream needs a multiple of 8 groups, at least " + Dec(lag + kUnroll));
  }
  const int64_t accumulators = shape.mxus * 2 * nc;
  if (accumulators > 16) throw Error("kernel_gen: the stream keeps at most 16 accumulators");
  auto acc = [&](int64_t mxu, int64_t h, int64_t q) { return "v" + Dec(16 + (mxu * 2 + h) * nc + q); };
  const int64_t out_rows = accumulators * kSublanes;
  // From VMEM: each group loads its n LHS vregs into v0..v(Q-1) in rotation, `ahead` groups before
  // its pushes (as far ahead as the rotation allows), from Q tiles of the `lhs` buffer.
  const int64_t loads_per_group = shape.mxus * nk;
  const int64_t rotation = std::min<int64_t>(16, kUnroll * loads_per_group);
  const int64_t ahead = rotation / loads_per_group - 1;
  const int64_t lhs_address = out_rows * kLanes * 4;
  if (lhs_from_vmem && (rotation % loads_per_group != 0 || ahead < 0)) {
    throw Error("kernel_gen: too many LHS vregs per group to load from VMEM");
  }

  Text t;
  t.Line("// Generated by tests/sim/kernel_gen.cc (MxuPeakStreamKernel); tests/asm/mxu_peak_stream.tpuasm");
  t.Line("// is the tpu_v4 instance with comments. " + Dec(groups) + " groups of 16 bf16 rows through each of " +
         Dec(shape.mxus) + " MXUs of " + Dec(shape.rows) + " x " + Dec(shape.columns) +
         (lhs_from_vmem ? ", the LHS loaded from VMEM " + Dec(ahead) + " groups ahead." : "."));
  t.Line(".program mxu_peak_stream");
  t.Line(TargetLine(shape, shape.mxus, 1, 1));
  t.Line(".buffer out, vmem[0x0], size=" + Hex(out_rows * kLanes * 4) + ", shape=f32[" + Dec(out_rows) +
         ",128]{1,0:T(8,128)}, role=output(0)");
  if (lhs_from_vmem) {
    t.Line(".buffer lhs, vmem[" + Hex(lhs_address) + "], size=" + Hex(rotation * kVregBytes) + ", shape=bf16[" +
           Dec(rotation * kBf16RowsPerVreg) + ",128]{1,0:T(16,128)(2,1)}, role=parameter(0)");
  }
  t.Line("");
  if (lhs_from_vmem) {
    t.Comment("v0: weights, every element 1.0 (then LHS vregs)");
    t.Code("mov s1, 0x3f803f80");
    t.Code("vbcast v0, s1");
  } else {
    t.Comment("v1: weights, every element 1.0; v0: LHS rows, even rows 1.0 and odd rows 2.0 (bf16 pairs)");
    t.Code("mov s1, 0x3f803f80");
    t.Code("vbcast v1, s1");
    t.Code("mov s1, 0x40003f80");
    t.Code("vbcast v0, s1");
  }
  t.Code("mov s9, " + Dec(weight_pushes));
  t.Label("weights");
  for (uint32_t k = 0; k < shape.mxus; ++k) t.Code("mxu.wpush.bf16 mxu" + Dec(k) + (lhs_from_vmem ? ", v0" : ", v1"));
  t.Code("loop s9, weights");
  for (uint32_t k = 0; k < shape.mxus; ++k) t.Code("mxu.latch mxu" + Dec(k));
  // Group u of an unrolled iteration (the rotation repeats every iteration: 8n is a multiple of Q).
  auto lhs = [&](int64_t u, int64_t m) { return (u * loads_per_group + m) % rotation; };
  auto loads = [&](int64_t u) {
    if (!lhs_from_vmem) return;
    for (int64_t m = 0; m < loads_per_group; ++m) {
      t.Code("vld v" + Dec(lhs(u, m)) + ", vmem[" + Hex(lhs_address + lhs(u, m) * kVregBytes) + "]");
    }
  };
  auto pushes = [&](int64_t u) {
    loads(u + ahead);
    for (uint32_t k = 0; k < shape.mxus; ++k) {
      for (int64_t b = 0; b < nk; ++b) {
        t.Code("mxu.push.bf16 mxu" + Dec(k) + ", v" + (lhs_from_vmem ? Dec(lhs(u, k * nk + b)) : "0"));
      }
    }
  };
  auto pops = [&] {
    for (uint32_t k = 0; k < shape.mxus; ++k) {
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t q = 0; q < nc; ++q) t.Code("mxu.pop.acc mxu" + Dec(k) + ", " + acc(k, h, q));
      }
    }
  };
  if (lhs_from_vmem) {
    t.Comment("the first " + Dec(ahead) + " groups' LHS");
    for (int64_t u = 0; u < ahead; ++u) loads(u);
  }
  t.Comment("the first " + Dec(lag) + " groups: pushes only");
  t.Code("mov s9, " + Dec(lag / kUnroll));
  t.Label("fill");
  for (int64_t u = 0; u < kUnroll; ++u) pushes(u);
  t.Code("loop s9, fill");
  t.Comment("steady state: each group's push, and the pops of the group " + Dec(lag) + " before it");
  t.Code("mov s9, " + Dec((groups - lag) / kUnroll));
  t.Label("stream");
  for (int64_t u = 0; u < kUnroll; ++u) {
    pushes(u);
    pops();
  }
  t.Code("loop s9, stream");
  t.Comment("the last " + Dec(lag) + " groups' pops");
  t.Code("mov s9, " + Dec(lag / kUnroll));
  t.Label("drain");
  for (int64_t u = 0; u < kUnroll; ++u) pops();
  t.Code("loop s9, drain");
  for (int64_t a = 0; a < accumulators; ++a) {
    t.Code("vst v" + Dec(16 + a) + ", vmem[" + Hex(a * kVregBytes) + "]");
  }
  t.Code("halt");
  return t.str();
}

}  // namespace tpusim::test_kernels
