// topk: rows one after another. A row goes HBM -> VMEM by one DMA; a prologue turns its elements
// into 32-bit signed keys (one vcmp.gt.s32 orders them as the evaluator's total order does) and
// positions, in two work arrays of whole vregs; then k passes each scan every vreg of the work
// arrays with a per-word running best and finish with a cross-lane reduction. A pass takes the
// best (key, position) pair that comes strictly after the previous pass's pair in the order "key
// descending, position ascending": no element is masked in memory and ties go to the lower
// position. The positions go VMEM -> HBM (indices) and VMEM -> SMEM, from where the scalar core
// copies each chosen element from the row in VMEM to the values result, one DMA per element, so
// values keep their exact bits for every element type. See docs/compiler.md, "TopK".
#include "compiler/lower/topk_kernel.h"

#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using isa::ElementType;

// Vector registers with a fixed job for the whole kernel.
constexpr int kWordOffset = 30;  // s * L + l: a word's offset within a vreg
constexpr int kLength = 29;      // n
constexpr int kIntMin = 28;      // also the sign bit
constexpr int kIntMax = 27;
constexpr int kSixteen = 26;
constexpr int kHighHalf = 25;    // 0xffff0000
constexpr int kThirtyOne = 24;
constexpr int kOne = 23;
constexpr int kPrevKey = 20;     // the previous pass's pair (broadcast)
constexpr int kPrevPos = 21;
constexpr int kBestKey = 18;     // per-word running best of a pass
constexpr int kBestPos = 19;
constexpr int kOtherKey = 16;    // the second running best
constexpr int kOtherPos = 17;
constexpr int kFirstWord = 7;    // mask: sublane 0, lane 0

std::string Vmem(int reg, int64_t offset = 0) {
  if (offset == 0) return fmt::format("vmem[s{}]", reg);
  return offset > 0 ? fmt::format("vmem[s{} + {:#x}]", reg, offset) : fmt::format("vmem[s{} - {:#x}]", reg, -offset);
}

isa::Shape HbmView(const isa::Shape& shape) {
  return shape.rank() >= 2 ? WithoutMemorySpace(shape) : ExpandedView(shape, 2, {1});
}

class TopKEmitter {
 public:
  TopKEmitter(KernelContext& c) : c_(c), e_(c) {}
  void Run();

 private:
  ProgramBuilder& out() { return c_.out; }
  void EmitConstants();
  void EmitKeyTransform(int reg, int temp);
  void EmitPrologue();
  void EmitPasses();
  void EmitOutputs(const std::vector<DmaIndex>& row_start);

  KernelContext& c_;
  DmaEmitter e_;
  ElementType type_ = ElementType::kF32;
  bool narrow_ = false;  // 16-bit elements, two per word
  bool largest_ = true;
  int64_t rank_ = 2;     // of the [rows..., n] view
  std::vector<int64_t> dims_;
  int64_t n_ = 0, k_ = 0;
  int64_t tile_words_ = 1024;  // S x L
  int64_t word_tiles_ = 1;     // vregs of the row as loaded
  int64_t key_tiles_ = 1;      // vregs of the work arrays (twice word_tiles_ for 16-bit)
  uint64_t raw_ = 0, keys_ = 0, positions_ = 0, stage_ = 0;
  int s_a_ = 0, s_b_ = 0, s_c_ = 0, s_d_ = 0;  // scratch scalar registers
};

void TopKEmitter::EmitConstants() {
  const int64_t lanes = out().target().lanes();
  out().Emit("vlaneid v{}", kWordOffset);
  out().Emit("vsublaneid v1");
  out().Emit("vbcast v2, {}", lanes);
  out().Emit("vmul.s32 v1, v1, v2");
  out().Emit("vadd.s32 v{}, v{}, v1", kWordOffset, kWordOffset);
  out().Emit("vbcast v{}, {}", kLength, n_);
  out().Emit("vbcast v{}, 0x80000000", kIntMin);
  out().Emit("vbcast v{}, 0x7fffffff", kIntMax);
  out().Emit("vbcast v{}, 16", kSixteen);
  out().Emit("vbcast v{}, 0xffff0000", kHighHalf);
  out().Emit("vbcast v{}, 31", kThirtyOne);
  out().Emit("vbcast v{}, 1", kOne);
  out().Emit("vbcast v1, 0");
  out().Emit("vcmp.eq.s32 m{}, v{}, v1", kFirstWord, kWordOffset);
}

// Element bits (16-bit ones in the high half) -> a signed key whose order is the evaluator's:
// floats by the total-order trick bits ^ ((bits >>a 31) >>l 1) (-NaN < -inf < -0 < +0 < +inf <
// +NaN), unsigned ints with the sign bit flipped; inverted for largest=false.
void TopKEmitter::EmitKeyTransform(int reg, int temp) {
  if (isa::IsFloat(type_)) {
    out().Emit("vsra v{}, v{}, v{}", temp, reg, kThirtyOne);
    out().Emit("vshr v{}, v{}, v{}", temp, temp, kOne);
    out().Emit("vxor v{}, v{}, v{}", reg, reg, temp);
  } else if (isa::IsUnsignedInt(type_)) {
    out().Emit("vxor v{}, v{}, v{}", reg, reg, kIntMin);
  }
  if (!largest_) out().Emit("vnot v{}, v{}", reg, reg);
}

// The row in VMEM -> keys and positions. Positions >= n (stale words past the row) get the
// smallest key and the largest position, so a pass takes them only when nothing else is left,
// which k <= n rules out. For 16-bit elements a loaded vreg gives two work vregs: the even
// positions (low halves) then the odd ones (high halves); a word keeps increasing positions
// from one work vreg to the next either way, which the passes rely on.
void TopKEmitter::EmitPrologue() {
  const int64_t tile_bytes = tile_words_ * 4;
  const int64_t delta = static_cast<int64_t>(positions_ - keys_);
  const int raw = s_a_, key = s_b_, word = s_c_, count = s_d_;
  out().Emit("mov s{}, {:#x}", raw, raw_);
  out().Emit("mov s{}, {:#x}", key, keys_);
  out().Emit("mov s{}, 0", word);
  out().Emit("mov s{}, {}", count, word_tiles_);
  const std::string top = out().NewLabel(c_.instruction.name() + ".keys");
  out().Bind(top);
  out().Emit("vld v1, {}", Vmem(raw));
  out().Emit("vbcast v2, s{}", word);
  out().Emit("vadd.s32 v2, v2, v{}", kWordOffset);
  const auto finish = [&](int key_reg, int pos_reg, int mask, int64_t offset) {
    EmitKeyTransform(key_reg, 9);
    out().Emit("vcmp.lt.s32 m{}, v{}, v{}", mask, pos_reg, kLength);
    out().Emit("vsel v{}, m{}, v{}, v{}", key_reg, mask, key_reg, kIntMin);
    out().Emit("vsel v{}, m{}, v{}, v{}", pos_reg, mask, pos_reg, kIntMax);
    out().Emit("vst v{}, {}", key_reg, Vmem(key, offset));
    out().Emit("vst v{}, {}", pos_reg, Vmem(key, offset + delta));
  };
  if (!narrow_) {
    finish(1, 2, 0, 0);
  } else {
    out().Emit("vshl v3, v1, v{}", kSixteen);
    out().Emit("vand v4, v1, v{}", kHighHalf);
    out().Emit("vadd.s32 v5, v2, v2");
    out().Emit("vadd.s32 v6, v5, v{}", kOne);
    finish(3, 5, 0, 0);
    finish(4, 6, 1, tile_bytes);
  }
  out().Emit("add s{}, s{}, {}", raw, raw, tile_bytes);
  out().Emit("add s{}, s{}, {}", key, key, tile_bytes * (narrow_ ? 2 : 1));
  out().Emit("add s{}, s{}, {}", word, word, tile_words_);
  out().Emit("loop s{}, {}", count, top);
}

// k passes. Each scans the work vregs from the last to the first, so a word sees decreasing
// positions and `key >= best` hands ties to the lower position; the first candidate always
// replaces the initial (INT_MIN, INT_MAX). Candidates: key < prev, or key == prev and position >
// prev position (pass 0 starts from (INT_MAX, -1), where everything is a candidate). The cross-
// lane step: max key over lanes (vredb), over sublanes (vxpose, vredb), then the smallest
// position among the words holding it. The position is stored to the stage by a one-word vst.
void TopKEmitter::EmitPasses() {
  const int64_t tile_bytes = tile_words_ * 4;
  const int64_t delta = static_cast<int64_t>(positions_ - keys_);
  const int stage = s_a_, pass = s_b_, address = s_c_, count = s_d_;
  out().Emit("vbcast v{}, 0x7fffffff", kPrevKey);
  out().Emit("vbcast v{}, -1", kPrevPos);
  out().Emit("mov s{}, {:#x}", stage, stage_);
  out().Emit("mov s{}, {}", pass, k_);
  const std::string pass_top = out().NewLabel(c_.instruction.name() + ".pass");
  out().Bind(pass_top);
  for (int best : {kBestKey, kOtherKey}) out().Emit("vmov v{}, v{}", best, kIntMin);
  for (int best : {kBestPos, kOtherPos}) out().Emit("vmov v{}, v{}", best, kIntMax);
  out().Emit("mov s{}, {:#x}", address, keys_ + (key_tiles_ - 1) * tile_bytes);
  // Two running bests (even and odd steps from the end) make two independent dependence chains.
  const auto load = [&](int key, int pos, int64_t offset) {
    out().Emit("vld v{}, {}", key, Vmem(address, offset));
    out().Emit("vld v{}, {}", pos, Vmem(address, offset + delta));
  };
  // Loads come first: the VPU issues in order and a load's result arrives after VMEM's latency.
  const auto scan = [&](int key, int pos, int mask, int best_key, int best_pos) {
    out().Emit("vcmp.lt.s32 m{}, v{}, v{}", mask, key, kPrevKey);
    out().Emit("vcmp.eq.s32 m{}, v{}, v{}", mask + 1, key, kPrevKey);
    out().Emit("vcmp.gt.s32 m{}, v{}, v{}", mask + 2, pos, kPrevPos);
    out().Emit("mand m{}, m{}, m{}", mask + 1, mask + 1, mask + 2);
    out().Emit("mor m{}, m{}, m{}", mask, mask, mask + 1);
    out().Emit("vcmp.ge.s32 m{}, v{}, v{}", mask + 1, key, best_key);
    out().Emit("mand m{}, m{}, m{}", mask, mask, mask + 1);
    out().Emit("vsel v{}, m{}, v{}, v{}", best_key, mask, key, best_key);
    out().Emit("vsel v{}, m{}, v{}, v{}", best_pos, mask, pos, best_pos);
  };
  // Four work vregs per iteration, loaded into their own registers before any compare, so that
  // the next iteration's loads do not wait for this one's compares to read their registers.
  constexpr int kUnroll = 4;
  const int key_regs[kUnroll] = {1, 5, 8, 11}, pos_regs[kUnroll] = {2, 6, 9, 12};
  const auto step = [&](int u) {
    if (u % 2 == 0) scan(key_regs[u], pos_regs[u], 0, kBestKey, kBestPos);
    else scan(key_regs[u], pos_regs[u], 3, kOtherKey, kOtherPos);
  };
  for (int64_t t = 0; t < key_tiles_ % kUnroll; ++t) {
    load(key_regs[0], pos_regs[0], 0);
    step(0);
    out().Emit("sub s{}, s{}, {}", address, address, tile_bytes);
  }
  if (key_tiles_ >= kUnroll) {
    const std::string scan_top = out().NewLabel(c_.instruction.name() + ".scan");
    out().Emit("mov s{}, {}", count, key_tiles_ / kUnroll);
    out().Bind(scan_top);
    for (int u = 0; u < kUnroll; ++u) load(key_regs[u], pos_regs[u], -u * tile_bytes);
    for (int u = 0; u < kUnroll; ++u) step(u);
    out().Emit("sub s{}, s{}, {}", address, address, kUnroll * tile_bytes);
    out().Emit("loop s{}, {}", count, scan_top);
  }
  // Merge: the other best wins with a larger key, or an equal key at a lower position.
  out().Emit("vcmp.gt.s32 m0, v{}, v{}", kOtherKey, kBestKey);
  out().Emit("vcmp.eq.s32 m1, v{}, v{}", kOtherKey, kBestKey);
  out().Emit("vcmp.lt.s32 m2, v{}, v{}", kOtherPos, kBestPos);
  out().Emit("mand m1, m1, m2");
  out().Emit("mor m0, m0, m1");
  out().Emit("vsel v{}, m0, v{}, v{}", kBestKey, kOtherKey, kBestKey);
  out().Emit("vsel v{}, m0, v{}, v{}", kBestPos, kOtherPos, kBestPos);
  out().Emit("vredb.max.s32 v3, v{}", kBestKey);
  out().Emit("vxpose v3, v3");
  out().Emit("vredb.max.s32 v{}, v3", kPrevKey);
  out().Emit("vcmp.eq.s32 m4, v{}, v{}", kBestKey, kPrevKey);
  out().Emit("vsel v4, m4, v{}, v{}", kBestPos, kIntMax);
  out().Emit("vredb.min.s32 v4, v4");
  out().Emit("vxpose v4, v4");
  out().Emit("vredb.min.s32 v{}, v4", kPrevPos);
  out().Emit("vst v{}, {}, sublanes=0x1, mask=m{}", kPrevPos, Vmem(stage), kFirstWord);
  out().Emit("add s{}, s{}, 4", stage, stage);
  out().Emit("loop s{}, {}", pass, pass_top);
}

// The stage -> the indices result (one DMA) and SMEM; then one DMA per element, row -> values.
void TopKEmitter::EmitOutputs(const std::vector<DmaIndex>& row_start) {
  e_.WaitVpu();
  std::vector<int64_t> box(rank_, 1);
  box.back() = k_;
  const isa::Shape stage_shape = RowMajorUntiled(ElementType::kS32, box);
  e_.Dma({isa::MEMORY_SPACE_VMEM, stage_, stage_shape}, Zeros(rank_), {isa::MEMORY_SPACE_HBM, c_.results[1]->address, HbmView(c_.results[1]->shape)},
         row_start, box, e_.NextEngine());
  const isa::Shape flat = RowMajorUntiled(ElementType::kS32, {k_});
  e_.Dma({isa::MEMORY_SPACE_VMEM, stage_, flat}, Zeros(1), {isa::MEMORY_SPACE_SMEM, 0, flat}, Zeros(1), {k_}, e_.NextEngine());
  e_.WaitDmas();
  const int entry = s_a_, column = s_b_, position = s_c_, count = s_d_;
  std::vector<int64_t> row_dims(rank_, 1);
  row_dims.back() = n_;
  const DmaArray row{isa::MEMORY_SPACE_VMEM, raw_, RowMajorUntiled(type_, row_dims)};
  const DmaArray values{isa::MEMORY_SPACE_HBM, c_.results[0]->address, HbmView(c_.results[0]->shape)};
  std::vector<DmaIndex> src_start = Zeros(rank_), dst_start = row_start;
  src_start.back() = DmaIndex(position, 0);
  dst_start.back() = DmaIndex(column, 0);
  out().Emit("mov s{}, 0", entry);
  out().Emit("mov s{}, 0", column);
  out().Emit("mov s{}, {}", count, k_);
  const std::string top = out().NewLabel(c_.instruction.name() + ".values");
  out().Bind(top);
  out().Emit("ld.s32 s{}, smem[s{}]", position, entry);
  e_.Dma(row, src_start, values, dst_start, std::vector<int64_t>(rank_, 1), 0);
  out().Emit("add s{}, s{}, 4", entry, entry);
  out().Emit("add s{}, s{}, 1", column, column);
  out().Emit("loop s{}, {}", count, top);
  e_.AddPendingDmas(k_ - 1);
  e_.WaitDmas();
}

void TopKEmitter::Run() {
  const Instruction& x = c_.instruction;
  const isa::Shape& shape = c_.operands.at(0).at(0)->shape;
  type_ = shape.element_type;
  if (type_ != ElementType::kF32 && type_ != ElementType::kS32 && type_ != ElementType::kU32 &&
      type_ != ElementType::kBF16 && type_ != ElementType::kF16) {
    CannotLower(x, "topk is lowered for f32, bf16, f16, s32 and u32 operands");
  }
  narrow_ = isa::ElementBitWidth(type_) == 16;
  largest_ = x.HasAttribute("largest") ? x.GetBool("largest", true) : true;
  k_ = x.GetInt("k");
  dims_ = HbmView(shape).dims;
  rank_ = static_cast<int64_t>(dims_.size());
  n_ = dims_.back();
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank_; ++d) rows *= dims_[d];
  if (k_ == 0 || rows == 0) return;
  if (out().target().vector_registers() < 32) {
    CannotLower(x, "topk needs 32 vector registers" + LimitNote(c_.options, TargetLimit::kVectorRegisters));
  }
  const int64_t sublanes = out().target().sublanes(), lanes = out().target().lanes();
  if (lanes % sublanes != 0) CannotLower(x, "topk's cross-sublane step needs lanes to be a multiple of sublanes");
  if (k_ * 4 > static_cast<int64_t>(c_.options.smem_capacity_bytes)) {
    CannotLower(x, fmt::format("k = {} positions do not fit in SMEM ({} bytes)", k_, c_.options.smem_capacity_bytes));
  }
  tile_words_ = sublanes * lanes;
  const int64_t words = narrow_ ? (n_ + 1) / 2 : n_;
  word_tiles_ = (words + tile_words_ - 1) / tile_words_;
  key_tiles_ = word_tiles_ * (narrow_ ? 2 : 1);

  for (const DeviceBuffer* result : c_.results) e_.ZeroLayoutPadding(HbmArray(*result));
  const uint64_t tile_bytes = static_cast<uint64_t>(tile_words_) * 4;
  raw_ = e_.AllocVmem(word_tiles_ * tile_bytes, "topk's row");
  keys_ = e_.AllocVmem(key_tiles_ * tile_bytes, "topk's keys");
  positions_ = e_.AllocVmem(key_tiles_ * tile_bytes, "topk's positions");
  // One-word stores of the last positions touch a whole sublane row past the stage's end.
  stage_ = e_.AllocVmem(static_cast<uint64_t>(k_) * 4 + lanes * 4, "topk's chosen positions");
  s_a_ = e_.AllocSreg();
  s_b_ = e_.AllocSreg();
  s_c_ = e_.AllocSreg();
  s_d_ = e_.AllocSreg();
  EmitConstants();

  // Rows: every index of the dims before the last, by div/rem of a counter.
  const int counter = e_.AllocSreg(), loop = e_.AllocSreg(), tmp = e_.AllocSreg();
  std::vector<DmaIndex> row_start(rank_, DmaIndex(0));
  std::vector<int> coords;
  for (int64_t d = 0; d + 1 < rank_; ++d) {
    coords.push_back(e_.AllocSreg());
    row_start[d] = DmaIndex(coords.back(), 0);
  }
  std::vector<int64_t> box(rank_, 1);
  box.back() = n_;
  const DmaArray src{isa::MEMORY_SPACE_HBM, c_.operands[0][0]->address, HbmView(shape)};
  const DmaArray row{isa::MEMORY_SPACE_VMEM, raw_, RowMajorUntiled(type_, box)};
  out().Emit("mov s{}, 0", counter);
  out().Emit("mov s{}, {}", loop, rows);
  const std::string top = out().NewLabel(x.name() + ".row");
  out().Bind(top);
  out().Emit("mov s{}, s{}", tmp, counter);
  for (int64_t d = rank_ - 2; d >= 0; --d) {
    out().Emit("rem s{}, s{}, {}", coords[d], tmp, dims_[d]);
    out().Emit("div s{}, s{}, {}", tmp, tmp, dims_[d]);
  }
  e_.Dma(src, row_start, row, Zeros(rank_), box, e_.NextEngine());
  e_.WaitDmas();
  EmitPrologue();
  EmitPasses();
  EmitOutputs(row_start);
  out().Emit("add s{}, s{}, 1", counter, counter);
  out().Emit("loop s{}, {}", loop, top);
}

}  // namespace

void EmitTopKKernel(KernelContext& context) {
  const Instruction& x = context.instruction;
  if (context.operands.size() != 1 || context.operands[0].size() != 1 || context.operands[0][0] == nullptr) {
    CannotLower(x, "topk takes one array operand");
  }
  if (context.results.size() != 2) CannotLower(x, "topk's result must be a (values, indices) tuple");
  if (context.operands[0][0]->shape.rank() == 0) CannotLower(x, "topk of a scalar");
  TopKEmitter(context).Run();
}

}  // namespace tpusim::compiler
