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

#include <fmt/format.h>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "isa/element_type.h"
#include "isa/instruction_builder.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using isa::ElementType;
using namespace isa::ops;

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

// vmem[s`reg` + offset].
AddressValue At(int reg, int64_t offset = 0) { return Vmem(S(reg), offset); }

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
  out().Emit(isa::OPCODE_VLANEID, {V(kWordOffset)});
  out().Emit(isa::OPCODE_VSUBLANEID, {V(1)});
  out().Emit(isa::OPCODE_VBCAST, {V(2), lanes});
  out().Emit(isa::OPCODE_VMUL_S32, {V(1), V(1), V(2)});
  out().Emit(isa::OPCODE_VADD_S32, {V(kWordOffset), V(kWordOffset), V(1)});
  out().Emit(isa::OPCODE_VBCAST, {V(kLength), n_});
  out().Emit(isa::OPCODE_VBCAST, {V(kIntMin), 0x80000000});
  out().Emit(isa::OPCODE_VBCAST, {V(kIntMax), 0x7fffffff});
  out().Emit(isa::OPCODE_VBCAST, {V(kSixteen), 16});
  out().Emit(isa::OPCODE_VBCAST, {V(kHighHalf), 0xffff0000});
  out().Emit(isa::OPCODE_VBCAST, {V(kThirtyOne), 31});
  out().Emit(isa::OPCODE_VBCAST, {V(kOne), 1});
  out().Emit(isa::OPCODE_VBCAST, {V(1), 0});
  out().Emit(isa::OPCODE_VCMP_EQ_S32, {M(kFirstWord), V(kWordOffset), V(1)});
}

// Element bits (16-bit ones in the high half) -> a signed key whose order is the evaluator's:
// floats by the total-order trick bits ^ ((bits >>a 31) >>l 1) (-NaN < -inf < -0 < +0 < +inf <
// +NaN), unsigned ints with the sign bit flipped; inverted for largest=false.
void TopKEmitter::EmitKeyTransform(int reg, int temp) {
  if (isa::IsFloat(type_)) {
    out().Emit(isa::OPCODE_VSRA, {V(temp), V(reg), V(kThirtyOne)});
    out().Emit(isa::OPCODE_VSHR, {V(temp), V(temp), V(kOne)});
    out().Emit(isa::OPCODE_VXOR, {V(reg), V(reg), V(temp)});
  } else if (isa::IsUnsignedInt(type_)) {
    out().Emit(isa::OPCODE_VXOR, {V(reg), V(reg), V(kIntMin)});
  }
  if (!largest_) out().Emit(isa::OPCODE_VNOT, {V(reg), V(reg)});
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
  out().Emit(isa::OPCODE_MOV, {S(raw), raw_});
  out().Emit(isa::OPCODE_MOV, {S(key), keys_});
  out().Emit(isa::OPCODE_MOV, {S(word), 0});
  out().Emit(isa::OPCODE_MOV, {S(count), word_tiles_});
  const std::string top = out().NewLabel(c_.instruction.name() + ".keys");
  out().Bind(top);
  out().Emit(isa::OPCODE_VLD, {V(1), At(raw)});
  out().Emit(isa::OPCODE_VBCAST, {V(2), S(word)});
  out().Emit(isa::OPCODE_VADD_S32, {V(2), V(2), V(kWordOffset)});
  const auto finish = [&](int key_reg, int pos_reg, int mask, int64_t offset) {
    EmitKeyTransform(key_reg, 9);
    out().Emit(isa::OPCODE_VCMP_LT_S32, {M(mask), V(pos_reg), V(kLength)});
    out().Emit(isa::OPCODE_VSEL, {V(key_reg), M(mask), V(key_reg), V(kIntMin)});
    out().Emit(isa::OPCODE_VSEL, {V(pos_reg), M(mask), V(pos_reg), V(kIntMax)});
    out().Emit(isa::OPCODE_VST, {V(key_reg), At(key, offset)});
    out().Emit(isa::OPCODE_VST, {V(pos_reg), At(key, offset + delta)});
  };
  if (!narrow_) {
    finish(1, 2, 0, 0);
  } else {
    out().Emit(isa::OPCODE_VSHL, {V(3), V(1), V(kSixteen)});
    out().Emit(isa::OPCODE_VAND, {V(4), V(1), V(kHighHalf)});
    out().Emit(isa::OPCODE_VADD_S32, {V(5), V(2), V(2)});
    out().Emit(isa::OPCODE_VADD_S32, {V(6), V(5), V(kOne)});
    finish(3, 5, 0, 0);
    finish(4, 6, 1, tile_bytes);
  }
  out().Emit(isa::OPCODE_ADD, {S(raw), S(raw), tile_bytes});
  out().Emit(isa::OPCODE_ADD, {S(key), S(key), tile_bytes * (narrow_ ? 2 : 1)});
  out().Emit(isa::OPCODE_ADD, {S(word), S(word), tile_words_});
  out().Emit(isa::OPCODE_LOOP, {S(count), Label(top)});
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
  out().Emit(isa::OPCODE_VBCAST, {V(kPrevKey), 0x7fffffff});
  out().Emit(isa::OPCODE_VBCAST, {V(kPrevPos), -1});
  out().Emit(isa::OPCODE_MOV, {S(stage), stage_});
  out().Emit(isa::OPCODE_MOV, {S(pass), k_});
  const std::string pass_top = out().NewLabel(c_.instruction.name() + ".pass");
  out().Bind(pass_top);
  for (int best : {kBestKey, kOtherKey}) out().Emit(isa::OPCODE_VMOV, {V(best), V(kIntMin)});
  for (int best : {kBestPos, kOtherPos}) out().Emit(isa::OPCODE_VMOV, {V(best), V(kIntMax)});
  out().Emit(isa::OPCODE_MOV, {S(address), keys_ + (key_tiles_ - 1) * tile_bytes});
  // Two running bests (even and odd steps from the end) make two independent dependence chains.
  const auto load = [&](int key, int pos, int64_t offset) {
    out().Emit(isa::OPCODE_VLD, {V(key), At(address, offset)});
    out().Emit(isa::OPCODE_VLD, {V(pos), At(address, offset + delta)});
  };
  // Loads come first: the VPU issues in order and a load's result arrives after VMEM's latency.
  const auto scan = [&](int key, int pos, int mask, int best_key, int best_pos) {
    out().Emit(isa::OPCODE_VCMP_LT_S32, {M(mask), V(key), V(kPrevKey)});
    out().Emit(isa::OPCODE_VCMP_EQ_S32, {M(mask + 1), V(key), V(kPrevKey)});
    out().Emit(isa::OPCODE_VCMP_GT_S32, {M(mask + 2), V(pos), V(kPrevPos)});
    out().Emit(isa::OPCODE_MAND, {M(mask + 1), M(mask + 1), M(mask + 2)});
    out().Emit(isa::OPCODE_MOR, {M(mask), M(mask), M(mask + 1)});
    out().Emit(isa::OPCODE_VCMP_GE_S32, {M(mask + 1), V(key), V(best_key)});
    out().Emit(isa::OPCODE_MAND, {M(mask), M(mask), M(mask + 1)});
    out().Emit(isa::OPCODE_VSEL, {V(best_key), M(mask), V(key), V(best_key)});
    out().Emit(isa::OPCODE_VSEL, {V(best_pos), M(mask), V(pos), V(best_pos)});
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
    out().Emit(isa::OPCODE_SUB, {S(address), S(address), tile_bytes});
  }
  if (key_tiles_ >= kUnroll) {
    const std::string scan_top = out().NewLabel(c_.instruction.name() + ".scan");
    out().Emit(isa::OPCODE_MOV, {S(count), key_tiles_ / kUnroll});
    out().Bind(scan_top);
    for (int u = 0; u < kUnroll; ++u) load(key_regs[u], pos_regs[u], -u * tile_bytes);
    for (int u = 0; u < kUnroll; ++u) step(u);
    out().Emit(isa::OPCODE_SUB, {S(address), S(address), kUnroll * tile_bytes});
    out().Emit(isa::OPCODE_LOOP, {S(count), Label(scan_top)});
  }
  // Merge: the other best wins with a larger key, or an equal key at a lower position.
  out().Emit(isa::OPCODE_VCMP_GT_S32, {M(0), V(kOtherKey), V(kBestKey)});
  out().Emit(isa::OPCODE_VCMP_EQ_S32, {M(1), V(kOtherKey), V(kBestKey)});
  out().Emit(isa::OPCODE_VCMP_LT_S32, {M(2), V(kOtherPos), V(kBestPos)});
  out().Emit(isa::OPCODE_MAND, {M(1), M(1), M(2)});
  out().Emit(isa::OPCODE_MOR, {M(0), M(0), M(1)});
  out().Emit(isa::OPCODE_VSEL, {V(kBestKey), M(0), V(kOtherKey), V(kBestKey)});
  out().Emit(isa::OPCODE_VSEL, {V(kBestPos), M(0), V(kOtherPos), V(kBestPos)});
  out().Emit(isa::OPCODE_VREDB_MAX_S32, {V(3), V(kBestKey)});
  out().Emit(isa::OPCODE_VXPOSE, {V(3), V(3)});
  out().Emit(isa::OPCODE_VREDB_MAX_S32, {V(kPrevKey), V(3)});
  out().Emit(isa::OPCODE_VCMP_EQ_S32, {M(4), V(kBestKey), V(kPrevKey)});
  out().Emit(isa::OPCODE_VSEL, {V(4), M(4), V(kBestPos), V(kIntMax)});
  out().Emit(isa::OPCODE_VREDB_MIN_S32, {V(4), V(4)});
  out().Emit(isa::OPCODE_VXPOSE, {V(4), V(4)});
  out().Emit(isa::OPCODE_VREDB_MIN_S32, {V(kPrevPos), V(4)});
  out().Emit(isa::OPCODE_VST, {V(kPrevPos), At(stage)}, {{"sublanes", Bits(0x1)}, {"mask", M(kFirstWord)}});
  out().Emit(isa::OPCODE_ADD, {S(stage), S(stage), 4});
  out().Emit(isa::OPCODE_LOOP, {S(pass), Label(pass_top)});
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
  out().Emit(isa::OPCODE_MOV, {S(entry), 0});
  out().Emit(isa::OPCODE_MOV, {S(column), 0});
  out().Emit(isa::OPCODE_MOV, {S(count), k_});
  const std::string top = out().NewLabel(c_.instruction.name() + ".values");
  out().Bind(top);
  out().Emit(isa::OPCODE_LD_S32, {S(position), Smem(S(entry))});
  e_.Dma(row, src_start, values, dst_start, std::vector<int64_t>(rank_, 1), 0);
  out().Emit(isa::OPCODE_ADD, {S(entry), S(entry), 4});
  out().Emit(isa::OPCODE_ADD, {S(column), S(column), 1});
  out().Emit(isa::OPCODE_LOOP, {S(count), Label(top)});
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
  out().Emit(isa::OPCODE_MOV, {S(counter), 0});
  out().Emit(isa::OPCODE_MOV, {S(loop), rows});
  const std::string top = out().NewLabel(x.name() + ".row");
  out().Bind(top);
  out().Emit(isa::OPCODE_MOV, {S(tmp), S(counter)});
  for (int64_t d = rank_ - 2; d >= 0; --d) {
    out().Emit(isa::OPCODE_REM, {S(coords[d]), S(tmp), dims_[d]});
    out().Emit(isa::OPCODE_DIV, {S(tmp), S(tmp), dims_[d]});
  }
  e_.Dma(src, row_start, row, Zeros(rank_), box, e_.NextEngine());
  e_.WaitDmas();
  EmitPrologue();
  EmitPasses();
  EmitOutputs(row_start);
  out().Emit(isa::OPCODE_ADD, {S(counter), S(counter), 1});
  out().Emit(isa::OPCODE_LOOP, {S(loop), Label(top)});
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
