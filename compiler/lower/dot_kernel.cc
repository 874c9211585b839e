#include "compiler/lower/dot_kernel.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/lower/mxu_tiling.h"
#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

// Semaphores: the two lhs panels, the weight panels, the two output stages, the VPU.
constexpr int kLhsSem = 0;  // + panel parity
constexpr int kWeightSem = 2;
constexpr int kOutSem = 3;  // + stage parity
constexpr int kVpuSem = 5;
// Scalar registers.
constexpr int kChunk = 1;       // flattened (batch, row chunk) index
constexpr int kChunksLeft = 2;  // loop counter
constexpr int kRow0 = 3;        // first row of the chunk
constexpr int kCol0 = 4;        // first column of the job's N block
constexpr int kLhs = 5;         // VMEM: this chunk's lhs panel
constexpr int kWeights = 6;     // VMEM: this N block's weight panel
constexpr int kStage = 7;       // output stage parity
constexpr int kStageBase = 8;   // VMEM: the output stage
constexpr int kBlocksLeft = 9;  // N loop counter
constexpr int kTemp = 10;
constexpr int kOtherWeights = 11;
constexpr int kBlock = 12;  // N block index
constexpr int kTemp2 = 13;
constexpr int kOtherLhs = 16;
constexpr int kNextChunk = 17;
constexpr int kNextRow0 = 18;
constexpr int kNextRowChunk = 19;
constexpr int kBatch = 20;      // s20..s23: the chunk's batch indices
constexpr int kNextBatch = 24;  // s24..s27: the next chunk's
constexpr int kRowChunk = 28;   // the chunk's index within its matrix
constexpr int kMaxBatchDims = 4;
// Mask registers for the partial output tiles.
constexpr int kRowMask = 0;
constexpr int kLaneMask = 1;
constexpr int kBothMask = 2;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string Item(int reg, int64_t offset) {
  if (reg < 0) return std::to_string(offset);
  if (offset == 0) return "s" + std::to_string(reg);
  return fmt::format("s{} + {}", reg, offset);
}

std::string List(const std::vector<std::string>& items) { return "[" + fmt::format("{}", fmt::join(items, ", ")) + "]"; }

// `shape` (an array with a layout) seen with its dims in the order `perm` (view dim i = dim
// perm[i]), over the same bytes: the layout's minor_to_major renamed, its tiles unchanged.
isa::Shape PermutedView(const isa::Shape& shape, const std::vector<int64_t>& perm) {
  isa::Shape view = shape;
  std::vector<int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) {
    view.dims[i] = shape.dims[perm[i]];
    inverse[perm[i]] = static_cast<int64_t>(i);
  }
  for (int64_t& dim : view.layout->minor_to_major) dim = inverse[dim];
  return view;
}

class DotEmitter {
 public:
  explicit DotEmitter(KernelContext& context) : c_(context), out_(context.out) {}

  void Run() {
    Plan();
    EmitPrologue();
    EmitChunkLoop();
    out_.Emit("sem.wait sem[{}], 1", kOutSem);
    out_.Emit("sem.wait sem[{}], 1", kOutSem + 1);
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
    const hlo::Instruction& dot = c_.instruction;
    const isa::Shape& lhs = c_.operands.at(0).at(0)->shape;
    const isa::Shape& rhs = c_.operands.at(1).at(0)->shape;
    const isa::Shape& result = c_.results.at(0)->shape;
    const bool both_bf16 = lhs.element_type == isa::ElementType::kBF16 && rhs.element_type == isa::ElementType::kBF16;
    in_f32_ = lhs.element_type == isa::ElementType::kF32 && rhs.element_type == isa::ElementType::kF32;
    if (!both_bf16 && !in_f32_) {
      Refuse("only bf16 x bf16 and f32 x f32 dots are lowered (operands are " +
             std::string(isa::ElementTypeName(lhs.element_type)) + " and " +
             std::string(isa::ElementTypeName(rhs.element_type)) + ")");
    }
    if (result.element_type != isa::ElementType::kF32 && result.element_type != isa::ElementType::kBF16) {
      Refuse("the result must be f32 or bf16");
    }
    out_bf16_ = result.element_type == isa::ElementType::kBF16;
    if (in_f32_ && out_bf16_) Refuse("f32 x f32 dots with a bf16 result are not lowered yet");
    in_type_ = in_f32_ ? "f32" : "bf16";
    std::string why;
    const auto form = CanonicalDot(dot, &why);
    if (!form) Refuse(why);
    form_ = *form;
    if (static_cast<int64_t>(form_.batch_dims.size()) > kMaxBatchDims) Refuse("more than 4 batch dims");
    if (target.semaphores() < 6) Refuse("the dot kernel needs 6 semaphores");
    const auto tiling =
        PlanMxuTiling(form_, target, c_.options.vmem_capacity_bytes, in_f32_ ? 4 : 2, out_bf16_ ? 2 : 4, &why);
    if (!tiling) Refuse(why);
    t_ = *tiling;
    rank_ = static_cast<int64_t>(form_.batch_dims.size()) + 2;
    for (const auto* buffer : {c_.operands[0][0], c_.operands[1][0], c_.results[0]}) {
      if (!buffer->shape.layout || buffer->shape.layout->memory_space != isa::kMemorySpaceHbm) {
        Refuse("its operands and result must be in HBM");
      }
    }
    lhs_view_ = isa::ToString(PermutedView(lhs, form_.lhs_perm));
    rhs_view_ = isa::ToString(PermutedView(rhs, form_.rhs_perm));
    PlanOutputView(result);

    // VMEM: lhs panels, weight panels (zeroed once: their K padding is never written again), stages.
    lhs_cols_ = t_.k_steps * t_.mxus * t_.k_stride;
    weight_rows_ = t_.k_steps * t_.mxus * r_;
    width_ = t_.nc * l_;
    lhs_base_[0] = 0;
    lhs_base_[1] = t_.lhs_panel_bytes;
    weight_base_[0] = 2 * t_.lhs_panel_bytes;
    weight_base_[1] = weight_base_[0] + t_.weight_panel_bytes;
    stage_base_ = weight_base_[1] + t_.weight_panel_bytes;
    const std::string ones = Ones(rank_ - 2);
    const std::string mtm = MinorToMajor();
    // Panels are tiled so that one tile is one vreg: packed T(2S,L)(2,1) for bf16, T(S,L) for f32.
    const std::string panel_tiling =
        in_f32_ ? fmt::format("T({},{})", s_, l_) : fmt::format("T({},{})(2,1)", 2 * s_, l_);
    lhs_panel_ = fmt::format("{}[{}{},{}]{{{}:{}}}", in_type_, ones, t_.chunk_rows, lhs_cols_, mtm, panel_tiling);
    weight_panel_ = fmt::format("{}[{}{},{}]{{{}:{}}}", in_type_, ones, weight_rows_, width_, mtm, panel_tiling);
    stage_ = out_bf16_ ? fmt::format("bf16[{}{},{}]{{{}:T({},{})(2,1)}}", ones, t_.chunk_rows, width_, mtm, 2 * s_, l_)
                       : fmt::format("f32[{}{},{}]{{{}:T({},{})}}", ones, t_.chunk_rows, width_, mtm, s_, l_);

    // The last row chunk and the last N block: their boxes reach the output's padded dims, and
    // rows or columns past M or N in them are masked to zero.
    last_rows_ = form_.m - (t_.m_chunks - 1) * t_.chunk_rows;
    last_row_box_ = padded_m_ - (t_.m_chunks - 1) * t_.chunk_rows;
    last_m_special_ = last_rows_ != t_.chunk_rows || last_row_box_ != t_.chunk_rows;
    last_cols_ = form_.n - (t_.n_blocks - 1) * c_cols_;
    last_col_box_ = padded_n_ - (t_.n_blocks - 1) * c_cols_;
    last_n_special_ = last_cols_ != c_cols_ || last_col_box_ != c_cols_;

    const int64_t v = out_.target().vector_registers();
    lhs_reg0_ = t_.acc_vregs;
    weight_reg0_ = lhs_reg0_ + t_.lhs_vregs;
    zero_reg_ = static_cast<int>(v - 1);
    engines_ = out_.target().dma_engines();
  }

  void PlanOutputView(const isa::Shape& result) {
    // The output as an array of its padded dims (same bytes): boxes that reach the padding write
    // it, with zeros, as the kernels' invariant asks.
    const isa::Layout& layout = *result.layout;
    const int64_t rank = result.rank();
    bool row_major = true;
    for (int64_t i = 0; i < rank; ++i) row_major = row_major && layout.minor_to_major[i] == rank - 1 - i;
    if (!row_major || layout.tiles.empty() || layout.tiles[0].dims.size() != 2) {
      Refuse("its result layout " + isa::ToString(result) + " is not row-major with 2-D tiles");
    }
    const int64_t a = layout.tiles[0].dims[0];
    const int64_t b = layout.tiles[0].dims[1];
    if (a > t_.chunk_rows && t_.m_chunks > 1) Refuse("its result tiles are taller than a row chunk");
    isa::Shape padded = result;
    padded_m_ = CeilDiv(form_.m, a) * a;
    padded_n_ = CeilDiv(form_.n, b) * b;
    padded.dims[rank - 2] = padded_m_;
    padded.dims[rank - 1] = padded_n_;
    out_view_ = isa::ToString(padded);
    if (padded_n_ - (t_.n_blocks - 1) * c_cols_ > t_.nc * l_) Refuse("its result tiles are wider than an N block");
  }

  std::string Ones(int64_t count) const {
    std::string text;
    for (int64_t i = 0; i < count; ++i) text += "1,";
    return text;
  }
  std::string MinorToMajor() const {
    std::vector<std::string> dims;
    for (int64_t i = rank_ - 1; i >= 0; --i) dims.push_back(std::to_string(i));
    return fmt::format("{}", fmt::join(dims, ","));
  }
  // Start items: the batch indices in registers first..., then `rest`.
  std::vector<std::string> Start(int batch_reg, std::vector<std::string> rest) const {
    std::vector<std::string> items;
    for (std::size_t i = 0; i < form_.batch_dims.size(); ++i) {
      items.push_back(batch_reg < 0 ? "0" : Item(batch_reg + static_cast<int>(i), 0));
    }
    items.insert(items.end(), rest.begin(), rest.end());
    return items;
  }
  std::vector<std::string> Size(int64_t rows, int64_t cols) const {
    std::vector<std::string> items(form_.batch_dims.size(), "1");
    items.push_back(std::to_string(rows));
    items.push_back(std::to_string(cols));
    return items;
  }

  // ---- DMAs ----
  // The lhs panel of a chunk with `rows` valid rows: rows [row0, row0 + rows) x all of K, each K
  // block at its k_stride-aligned columns. Returns the number of DMAs.
  int64_t EmitLhsDmas(int batch_reg, int row0_reg, int dst_reg, int sem_reg, int64_t rows) {
    const uint64_t lhs = c_.operands[0][0]->address;
    if (t_.k_stride == r_) {
      // Split by K columns over the engines (each engine runs one transfer at a time).
      const int64_t pieces = std::min<int64_t>(engines_, t_.k_blocks);
      const int64_t blocks_per_piece = CeilDiv(t_.k_blocks, pieces);
      int64_t count = 0;
      for (int64_t p = 0; p * blocks_per_piece < t_.k_blocks; ++p) {
        const int64_t k0 = p * blocks_per_piece * r_;
        const int64_t cols = std::min(form_.k, k0 + blocks_per_piece * r_) - k0;
        out_.Emit("dma hbm[{:#x}] -> vmem[{}], src={}, dst={}, src_start={}, dst_start={}, size={}, sem=sem[{}], engine={}",
                  lhs, Item(dst_reg, 0), lhs_view_, lhs_panel_, List(Start(batch_reg, {Item(row0_reg, 0), std::to_string(k0)})),
                  List(Start(-1, {"0", std::to_string(k0)})), List(Size(rows, cols)), Item(sem_reg, kLhsSem), p % engines_);
        ++count;
      }
      return count;
    }
    for (int64_t kb = 0; kb < t_.k_blocks; ++kb) {
      const int64_t cols = std::min(r_, form_.k - kb * r_);
      out_.Emit("dma hbm[{:#x}] -> vmem[{}], src={}, dst={}, src_start={}, dst_start={}, size={}, sem=sem[{}], engine={}",
                lhs, Item(dst_reg, 0), lhs_view_, lhs_panel_, List(Start(batch_reg, {Item(row0_reg, 0), std::to_string(kb * r_)})),
                List(Start(-1, {"0", std::to_string(kb * t_.k_stride)})), List(Size(rows, cols)), Item(sem_reg, kLhsSem),
                kb % engines_);
    }
    return t_.k_blocks;
  }

  // The weight panel of an N block with `cols` valid columns starting at column `col0` (a
  // register, or -1 for 0), split by K rows over the engines.
  int64_t WeightPieces() const { return std::min<int64_t>(engines_, CeilDiv(form_.k, 2 * s_)); }
  void EmitWeightDmas(int col0_reg, int dst_reg, int64_t cols) {
    const uint64_t rhs = c_.operands[1][0]->address;
    const int64_t pieces = WeightPieces();
    const int64_t rows_per_piece = CeilDiv(CeilDiv(form_.k, pieces), 2 * s_) * 2 * s_;
    for (int64_t p = 0; p < pieces; ++p) {
      const int64_t k0 = p * rows_per_piece;
      const int64_t rows = std::min(form_.k, k0 + rows_per_piece) - k0;
      if (rows <= 0) {
        out_.Emit("sem.signal sem[{}], 1", kWeightSem);  // keeps the wait count fixed
        continue;
      }
      out_.Emit("dma hbm[{:#x}] -> vmem[{}], src={}, dst={}, src_start={}, dst_start={}, size={}, sem=sem[{}], engine={}",
                rhs, Item(dst_reg, 0), rhs_view_, weight_panel_, List(Start(kBatch, {std::to_string(k0), Item(col0_reg, 0)})),
                List(Start(-1, {std::to_string(k0), "0"})), List(Size(rows, cols)), kWeightSem, (p + 1) % engines_);
    }
  }

  // ---- code ----
  void EmitPrologue() {
    // Zero both lhs and weight panels: the K padding (and the padded K blocks of the last step)
    // must be zero, and no DMA ever writes there.
    const int64_t vreg_bytes = s_ * l_ * 4;
    const int64_t zero_vregs = CeilDiv(static_cast<int64_t>(stage_base_), vreg_bytes);
    out_.Emit("vbcast v{}, 0", zero_reg_);
    out_.Emit("mov s{}, 0", kTemp);
    out_.Emit("mov s{}, {}", kTemp2, zero_vregs);
    const std::string zero_loop = out_.NewLabel(c_.instruction.name() + ".zero");
    out_.Bind(zero_loop);
    out_.Emit("vst v{}, vmem[s{}]", zero_reg_, kTemp);
    out_.Emit("add s{}, s{}, {:#x}", kTemp, kTemp, vreg_bytes);
    out_.Emit("loop s{}, {}", kTemp2, zero_loop);
    out_.Emit("vpu.signal sem[{}], 1", kVpuSem);
    out_.Emit("sem.wait sem[{}], 1", kVpuSem);
    // Masks of the partial output tiles.
    const int temp = weight_reg0_;
    const int temp2 = weight_reg0_ + 1;
    if (last_m_special_ && last_rows_ % s_ != 0) {
      out_.Emit("vsublaneid v{}", temp);
      out_.Emit("vbcast v{}, {}", temp2, last_rows_ % s_);
      out_.Emit("vcmp.lt.s32 m{}, v{}, v{}", kRowMask, temp, temp2);
    }
    if (last_n_special_ && last_cols_ % l_ != 0) {
      out_.Emit("vlaneid v{}", temp);
      out_.Emit("vbcast v{}, {}", temp2, last_cols_ % l_);
      out_.Emit("vcmp.lt.s32 m{}, v{}, v{}", kLaneMask, temp, temp2);
      out_.Emit("mand m{}, m{}, m{}", kBothMask, kRowMask, kLaneMask);
    }
    // The stages start free.
    out_.Emit("sem.signal sem[{}], 1", kOutSem);
    out_.Emit("sem.signal sem[{}], 1", kOutSem + 1);
    out_.Emit("mov s{}, 0", kStage);
    out_.Emit("mov s{}, {:#x}", kStageBase, stage_base_);
    // Chunk 0's lhs panel.
    for (std::size_t i = 0; i < form_.batch_dims.size(); ++i) out_.Emit("mov s{}, 0", kBatch + static_cast<int>(i));
    out_.Emit("mov s{}, 0", kRow0);
    out_.Emit("mov s{}, {:#x}", kTemp, lhs_base_[0]);
    out_.Emit("mov s{}, 0", kTemp2);
    lhs_dmas_ = EmitLhsDmas(kBatch, kRow0, kTemp, kTemp2, t_.m_chunks == 1 ? last_rows_ : t_.chunk_rows);
  }

  // Sets batch registers first.. from the flattened chunk index in `chunk_reg`, and
  // `row_chunk_reg` = the chunk within its matrix.
  void EmitDecompose(int chunk_reg, int row_chunk_reg, int first) {
    out_.Emit("rem s{}, s{}, {}", row_chunk_reg, chunk_reg, t_.m_chunks);
    out_.Emit("div s{}, s{}, {}", kTemp2, chunk_reg, t_.m_chunks);
    for (int64_t i = static_cast<int64_t>(form_.batch_dims.size()) - 1; i >= 0; --i) {
      out_.Emit("rem s{}, s{}, {}", first + i, kTemp2, form_.batch_dims[i]);
      out_.Emit("div s{}, s{}, {}", kTemp2, kTemp2, form_.batch_dims[i]);
    }
  }

  void EmitChunkLoop() {
    const int64_t chunks = form_.batch * t_.m_chunks;
    out_.Emit("mov s{}, 0", kChunk);
    out_.Emit("mov s{}, {}", kChunksLeft, chunks);
    const std::string loop = out_.NewLabel(c_.instruction.name() + ".chunk");
    const std::string next = out_.NewLabel(c_.instruction.name() + ".next_chunk");
    out_.Bind(loop);
    EmitDecompose(kChunk, kRowChunk, kBatch);
    out_.Emit("mul s{}, s{}, {}", kRow0, kRowChunk, t_.chunk_rows);
    // This chunk's panel (parity kChunk & 1) has landed.
    out_.Emit("and s{}, s{}, 1", kTemp, kChunk);
    out_.Emit("mul s{}, s{}, {:#x}", kLhs, kTemp, t_.lhs_panel_bytes);
    out_.Emit("sem.wait sem[s{} + {}], {}", kTemp, kLhsSem, lhs_dmas_);
    out_.Emit("xor s{}, s{}, 1", kTemp, kTemp);
    out_.Emit("mul s{}, s{}, {:#x}", kOtherLhs, kTemp, t_.lhs_panel_bytes);
    // N block 0's weights, queued on the engines before the next chunk's lhs panel (engines
    // complete their transfers in order).
    out_.Emit("mov s{}, {:#x}", kWeights, weight_base_[0]);
    out_.Emit("mov s{}, {:#x}", kOtherWeights, weight_base_[1]);
    out_.Emit("mov s{}, 0", kCol0);
    out_.Emit("mov s{}, 0", kBlock);
    EmitWeightDmas(-1, kWeights, t_.n_blocks == 1 ? last_cols_ : c_cols_);
    // Prefetch the next chunk's panel into the other one (its last reader, chunk - 1, is done:
    // every job waits for the VPU before its output DMA).
    const std::string no_prefetch = out_.NewLabel(c_.instruction.name() + ".no_lhs_prefetch");
    out_.Emit("add s{}, s{}, 1", kNextChunk, kChunk);
    out_.Emit("bge s{}, {}, {}", kNextChunk, chunks, no_prefetch);
    EmitDecompose(kNextChunk, kNextRowChunk, kNextBatch);
    out_.Emit("mul s{}, s{}, {}", kNextRow0, kNextRowChunk, t_.chunk_rows);
    out_.Emit("and s{}, s{}, 1", kTemp, kNextChunk);
    if (t_.m_chunks == 1) {
      EmitLhsDmas(kNextBatch, kNextRow0, kOtherLhs, kTemp, last_rows_);
    } else {
      const std::string last = out_.NewLabel(c_.instruction.name() + ".lhs_last");
      out_.Emit("beq s{}, {}, {}", kNextRowChunk, t_.m_chunks - 1, last);
      EmitLhsDmas(kNextBatch, kNextRow0, kOtherLhs, kTemp, t_.chunk_rows);
      out_.Emit("br {}", no_prefetch);
      out_.Bind(last);
      EmitLhsDmas(kNextBatch, kNextRow0, kOtherLhs, kTemp, last_rows_);
    }
    out_.Bind(no_prefetch);
    if (t_.m_chunks == 1 || !last_m_special_) {
      EmitBlocks(t_.m_chunks == 1 && last_m_special_);
    } else {
      const std::string last = out_.NewLabel(c_.instruction.name() + ".last_chunk");
      out_.Emit("beq s{}, {}, {}", kRowChunk, t_.m_chunks - 1, last);
      EmitBlocks(false);
      out_.Emit("br {}", next);
      out_.Bind(last);
      EmitBlocks(true);
    }
    out_.Bind(next);
    out_.Emit("add s{}, s{}, 1", kChunk, kChunk);
    out_.Emit("loop s{}, {}", kChunksLeft, loop);
  }

  void EmitBlocks(bool last_chunk) {
    const int64_t full = t_.n_blocks - (last_n_special_ ? 1 : 0);
    if (full > 0) {
      const std::string loop = out_.NewLabel(c_.instruction.name() + ".block");
      out_.Emit("mov s{}, {}", kBlocksLeft, full);
      out_.Bind(loop);
      EmitJob(last_chunk, false);
      out_.Emit("loop s{}, {}", kBlocksLeft, loop);
    }
    if (last_n_special_) EmitJob(last_chunk, true);
  }

  int AccReg(int64_t row_vreg, int64_t col_block) const { return static_cast<int>(row_vreg * t_.nc + col_block); }

  // One job: the chunk's rows times one N block, over all of K.
  void EmitJob(bool last_chunk, bool last_block) {
    out_.Emit("sem.wait sem[{}], {}", kWeightSem, WeightPieces());
    if (!last_block && t_.n_blocks > 1) {
      // Prefetch the next N block's weights into the other panel.
      const std::string done = out_.NewLabel(c_.instruction.name() + ".weights_done");
      out_.Emit("add s{}, s{}, 1", kTemp, kBlock);
      out_.Emit("bge s{}, {}, {}", kTemp, t_.n_blocks, done);
      out_.Emit("add s{}, s{}, {}", kTemp2, kCol0, c_cols_);
      if (last_n_special_) {
        const std::string last = out_.NewLabel(c_.instruction.name() + ".weights_last");
        out_.Emit("beq s{}, {}, {}", kTemp, t_.n_blocks - 1, last);
        EmitWeightDmas(kTemp2, kOtherWeights, c_cols_);
        out_.Emit("br {}", done);
        out_.Bind(last);
        EmitWeightDmas(kTemp2, kOtherWeights, last_cols_);
      } else {
        EmitWeightDmas(kTemp2, kOtherWeights, c_cols_);
      }
      out_.Bind(done);
    }
    for (int64_t a = 0; a < t_.acc_vregs; ++a) out_.Emit("vbcast v{}, 0", a);
    EmitSteps();
    EmitStore(last_chunk, last_block);
    // Next N block: swap the weight panels.
    out_.Emit("add s{}, s{}, {}", kCol0, kCol0, c_cols_);
    out_.Emit("add s{}, s{}, 1", kBlock, kBlock);
    out_.Emit("mov s{}, s{}", kTemp, kWeights);
    out_.Emit("mov s{}, s{}", kWeights, kOtherWeights);
    out_.Emit("mov s{}, s{}", kOtherWeights, kTemp);
  }

  void EmitWeightPush(int64_t step, int64_t q, int64_t b) {
    const int reg = static_cast<int>(weight_reg0_ + (weight_count_++ % t_.weight_vregs));
    const int64_t kb = step * t_.mxus + q;
    const int64_t offset = ((kb * (r_ / t_.rows_per_vreg)) * t_.nc + b) * s_ * l_ * 4;
    out_.Emit("vld v{}, vmem[s{} + {:#x}]", reg, kWeights, offset);
    out_.Emit("mxu.wpush.{} mxu{}, v{}", in_type_, q, reg);
  }

  void EmitPushes(int64_t slot) {
    const int64_t step = slot / t_.groups;
    const int64_t group = slot % t_.groups;
    const int64_t tile_cols = lhs_cols_ / l_;
    for (int64_t q = 0; q < t_.mxus; ++q) {
      for (int64_t b = 0; b < t_.nk; ++b) {
        const int reg = static_cast<int>(lhs_reg0_ + (slot % 2) * t_.mxus * t_.nk + q * t_.nk + b);
        const int64_t offset = (group * tile_cols + (step * t_.mxus + q) * t_.nk + b) * s_ * l_ * 4;
        out_.Emit("vld v{}, vmem[s{} + {:#x}]", reg, kLhs, offset);
        out_.Emit("mxu.push.{} mxu{}, v{}", in_type_, q, reg);
      }
    }
  }

  void EmitPops(int64_t slot) {
    const int64_t group = slot % t_.groups;
    const int64_t halves = t_.rows_per_vreg / s_;
    for (int64_t h = 0; h < halves; ++h) {
      for (int64_t j = 0; j < t_.nc; ++j) {
        for (int64_t q = 0; q < t_.mxus; ++q) {
          out_.Emit("mxu.pop.acc mxu{}, v{}", q, AccReg(group * halves + h, j));
        }
      }
    }
  }

  // The K steps, software-pipelined: the pops of slot i come after the pushes of slot i + lag,
  // and step s + 1's weights are pushed during step s's last groups (two weight buffers).
  void EmitSteps() {
    const int64_t slots = t_.k_steps * t_.groups;
    for (int64_t q = 0; q < t_.mxus; ++q) {
      for (int64_t b = 0; b < t_.weight_pushes; ++b) EmitWeightPush(0, q, b);
    }
    for (int64_t q = 0; q < t_.mxus; ++q) out_.Emit("mxu.latch mxu{}", q);
    const int64_t weight_start = std::min(t_.lag, t_.groups - 1);
    const int64_t weight_groups = t_.groups - weight_start;
    const int64_t per_group = CeilDiv(t_.mxus * t_.weight_pushes, weight_groups);
    int64_t popped = 0;
    for (int64_t slot = 0; slot < slots; ++slot) {
      const int64_t step = slot / t_.groups;
      const int64_t group = slot % t_.groups;
      EmitPushes(slot);
      if (step + 1 < t_.k_steps && group >= weight_start) {
        // Pushes b-major over the MXUs, so each MXU's tile fills evenly.
        const int64_t first = (group - weight_start) * per_group;
        const int64_t last = std::min(first + per_group, t_.mxus * t_.weight_pushes);
        for (int64_t i = first; i < last; ++i) EmitWeightPush(step + 1, i % t_.mxus, i / t_.mxus);
        if (group == t_.groups - 1) {
          for (int64_t q = 0; q < t_.mxus; ++q) out_.Emit("mxu.latch mxu{}", q);
        }
      }
      if (slot >= t_.lag) EmitPops(popped++);
    }
    while (popped < slots) EmitPops(popped++);
  }

  void EmitStore(bool last_chunk, bool last_block) {
    const int64_t row_vregs = t_.chunk_rows / s_;
    const bool mask_rows = last_chunk && last_rows_ % s_ != 0;
    const bool mask_lanes = last_block && last_cols_ % l_ != 0;
    const int64_t lane_block = last_cols_ / l_;  // the column block with partial lanes
    const int64_t row_vreg = last_rows_ / s_;    // the row vreg with partial rows
    for (int64_t t = 0; t < row_vregs; ++t) {
      for (int64_t j = 0; j < t_.nc; ++j) {
        const bool rows = mask_rows && t == row_vreg;
        const bool lanes = mask_lanes && j == lane_block;
        if (!rows && !lanes) continue;
        const int mask = rows && lanes ? kBothMask : rows ? kRowMask : kLaneMask;
        out_.Emit("vsel v{}, m{}, v{}, v{}", AccReg(t, j), mask, AccReg(t, j), zero_reg_);
      }
    }
    out_.Emit("sem.wait sem[s{} + {}], 1", kStage, kOutSem);
    const int64_t vreg_bytes = s_ * l_ * 4;
    if (out_bf16_) {
      for (int64_t g = 0; g < t_.groups; ++g) {
        for (int64_t j = 0; j < t_.nc; ++j) {
          const int temp = static_cast<int>(weight_reg0_ + (weight_count_++ % t_.weight_vregs));
          out_.Emit("vpack.bf16 v{}, v{}, v{}", temp, AccReg(2 * g, j), AccReg(2 * g + 1, j));
          out_.Emit("vst v{}, vmem[s{} + {:#x}]", temp, kStageBase, (g * t_.nc + j) * vreg_bytes);
        }
      }
    } else {
      for (int64_t t = 0; t < row_vregs; ++t) {
        for (int64_t j = 0; j < t_.nc; ++j) {
          out_.Emit("vst v{}, vmem[s{} + {:#x}]", AccReg(t, j), kStageBase, (t * t_.nc + j) * vreg_bytes);
        }
      }
    }
    out_.Emit("vpu.signal sem[{}], 1", kVpuSem);
    out_.Emit("sem.wait sem[{}], 1", kVpuSem);
    const int64_t rows = last_chunk ? last_row_box_ : t_.chunk_rows;
    const int64_t cols = last_block ? last_col_box_ : c_cols_;
    out_.Emit("dma vmem[s{}] -> hbm[{:#x}], src={}, dst={}, dst_start={}, size={}, sem=sem[s{} + {}], engine={}", kStageBase,
              c_.results[0]->address, stage_, out_view_, List(Start(kBatch, {Item(kRow0, 0), Item(kCol0, 0)})),
              List(Size(rows, cols)), kStage, kOutSem, engines_ - 1);
    out_.Emit("xor s{}, s{}, 1", kStage, kStage);
    out_.Emit("mul s{}, s{}, {:#x}", kStageBase, kStage, t_.stage_bytes);
    out_.Emit("add s{}, s{}, {:#x}", kStageBase, kStageBase, stage_base_);
  }

  KernelContext& c_;
  AsmBuilder& out_;
  int64_t s_ = 8, l_ = 128, r_ = 128, c_cols_ = 128;
  bool out_bf16_ = false;
  bool in_f32_ = false;           // f32 x f32 (mxu.*.f32, the config's f32_passes per row)
  std::string in_type_ = "bf16";
  DotForm form_;
  MxuTiling t_;
  int64_t rank_ = 2;
  std::string lhs_view_, rhs_view_, out_view_, lhs_panel_, weight_panel_, stage_;
  int64_t padded_m_ = 0, padded_n_ = 0;
  int64_t lhs_cols_ = 0, weight_rows_ = 0, width_ = 0;
  uint64_t lhs_base_[2] = {0, 0};
  uint64_t weight_base_[2] = {0, 0};
  uint64_t stage_base_ = 0;
  int64_t last_rows_ = 0, last_row_box_ = 0, last_cols_ = 0, last_col_box_ = 0;
  bool last_m_special_ = false, last_n_special_ = false;
  int64_t lhs_reg0_ = 0, weight_reg0_ = 0;
  int zero_reg_ = 31;
  int64_t engines_ = 1;
  int64_t lhs_dmas_ = 1;
  int64_t weight_count_ = 0;
};

}  // namespace

void EmitDotKernel(KernelContext& context) { DotEmitter(context).Run(); }

}  // namespace tpusim::compiler
