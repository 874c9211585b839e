// sort: a bitonic sorting network on the VPU. Rows (every index of the dims other than the
// sorted one) are independent, so a chunk of up to 1024 rows is laid out in VMEM with the sorted
// dim most major: position p of every row of the chunk is one (partial) vreg at `base + p *
// stride`, a row per word. A compare-exchange of positions i and l is then element-wise: two
// vlds per array, a compare, two vsels and two vsts per array, no cross-lane work. The transposing
// DMA (HBM -> VMEM) builds that layout; see docs/compiler.md for the algorithm and its costs.
#include "compiler/lower/sort_kernel.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/sort_key_pattern.h"
#include "compiler/lower/dma_region.h"
#include "isa/element_type.h"
#include "isa/instruction_builder.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;
using namespace isa::ops;

// ---------------------------------------------------------------------------------------------
// The comparator.

}  // namespace

std::optional<SortKeySpec> MatchSortComparator(const hlo::Computation& comparator) {
  const Instruction& root = *comparator.root();
  if (root.opcode() != Opcode::kCompare) return std::nullopt;
  const Instruction* lhs = root.operand(0);
  const Instruction* rhs = root.operand(1);
  SortKeySpec spec;
  if (lhs->opcode() != Opcode::kParameter) {
    lhs = hlo::CanonicalizedSortKey(*lhs);
    rhs = hlo::CanonicalizedSortKey(*rhs);
    if (!lhs || !rhs) return std::nullopt;
    spec.canonical = true;
  }
  if (lhs->opcode() != Opcode::kParameter || rhs->opcode() != Opcode::kParameter) return std::nullopt;
  const std::string& direction = root.GetIdentifier("direction");
  if (lhs->parameter_number() == 0 && rhs->parameter_number() == 1) {
    if (direction == "LT") spec.descending = false;
    else if (direction == "GT") spec.descending = true;
    else return std::nullopt;
  } else if (lhs->parameter_number() == 1 && rhs->parameter_number() == 0) {
    if (direction == "LT") spec.descending = true;  // p1 < p0: p0 goes first when larger
    else if (direction == "GT") spec.descending = false;
    else return std::nullopt;
  } else {
    return std::nullopt;
  }
  const isa::ElementType type = lhs->shape().element_type;
  std::string compare_type = isa::IsFloat(type) ? "FLOAT" : isa::IsSignedInt(type) ? "SIGNED" : "UNSIGNED";
  if (root.HasAttribute("type")) compare_type = root.GetIdentifier("type");
  if (isa::IsFloat(type)) {
    if (compare_type == "TOTALORDER") spec.total_order = true;
    else if (compare_type != "FLOAT") return std::nullopt;
  } else {
    if (spec.canonical) return std::nullopt;
    if (compare_type == "UNSIGNED") spec.is_unsigned = true;
    else if (compare_type != "SIGNED") return std::nullopt;
  }
  return spec;
}

namespace {

// ---------------------------------------------------------------------------------------------
// The plan.

constexpr int kWords = 128;  // lanes; a row of the chunk is a word of a sublane

// vmem[s`reg` + offset].
AddressValue At(int reg, int64_t offset) { return Vmem(S(reg), offset); }
// vmem[s`reg` + base + offset], `base` an array's VMEM address.
AddressValue At(int reg, uint64_t base, int64_t offset) {
  return Vmem(S(reg), static_cast<int64_t>(base) + offset);
}
// vmem[address].
AddressValue At(uint64_t address) { return Vmem(static_cast<int64_t>(address)); }

struct SortPlan {
  int64_t rank = 0;       // of the view (rank-1 operands are seen as [1, N])
  int64_t sort_dim = 0;   // in the view
  int64_t q = -1;         // the non-sorted dim whose indices fill a chunk's rows
  std::vector<int64_t> dims;
  int64_t n = 0;          // length of the sorted dim
  int64_t n_pow2 = 1;     // padded to a power of two with +max keys
  int64_t chunk_rows = 1; // rows per full chunk (along q)
  int64_t q_chunks = 1;   // chunks along q
  int64_t sublanes = 1;   // sublanes of the work vregs
  int64_t stride = 512;   // bytes between positions
  bool fused = false;     // key and index in one word (16-bit keys)
  bool row_order16 = false;  // 16-bit arrays unpacked in row order (mixed widths)
  int arrays = 0;         // payloads, K, (I)
};

isa::Shape StagingShape(const SortPlan& p, isa::ElementType type) {
  std::vector<int64_t> dims(p.rank, 1);
  dims[p.sort_dim] = p.n;
  dims[p.q] = p.stride * 8 / isa::ElementBitWidth(type);
  isa::Layout layout;
  layout.minor_to_major.push_back(p.q);
  for (int64_t d = p.rank - 1; d >= 0; --d) {
    if (d != p.q && d != p.sort_dim) layout.minor_to_major.push_back(d);
  }
  layout.minor_to_major.push_back(p.sort_dim);
  return isa::Shape::Array(type, dims, layout);
}

isa::Shape HbmView(const isa::Shape& shape) {
  return shape.rank() >= 2 ? WithoutMemorySpace(shape) : ExpandedView(shape, 2, {1});
}

class SortEmitter {
 public:
  SortEmitter(KernelContext& c, SortKeySpec spec) : c_(c), e_(c), spec_(spec) {}

  void Run();

 private:
  ProgramBuilder& out() { return c_.out; }
  // The keywords of a vld or vst of `sublanes` sublanes: stride where given, and the sublane mask
  // where there are fewer than 8.
  static std::vector<KeywordArg> MemoryKeywords(int64_t sublanes, std::optional<int64_t> stride) {
    std::vector<KeywordArg> keywords;
    if (stride) keywords.push_back({"stride", *stride});
    if (sublanes < 8) keywords.push_back({"sublanes", Bits((uint64_t{1} << sublanes) - 1)});
    return keywords;
  }
  void Vld(int vd, const AddressValue& at, int64_t sublanes, std::optional<int64_t> stride = std::nullopt,
           isa::CallSite where = {__builtin_FILE(), __builtin_LINE()}) {
    out().Add(isa::MakeInstruction(isa::OPCODE_VLD, {V(vd), at}, MemoryKeywords(sublanes, stride), where));
  }
  void Vst(int va, const AddressValue& at, int64_t sublanes, std::optional<int64_t> stride = std::nullopt,
           isa::CallSite where = {__builtin_FILE(), __builtin_LINE()}) {
    out().Add(isa::MakeInstruction(isa::OPCODE_VST, {V(va), at}, MemoryKeywords(sublanes, stride), where));
  }
  void Plan();
  void EmitPadKeys();
  void EmitChunk(const std::vector<DmaIndex>& starts, int64_t rows);
  void EmitKeys();
  void EmitNetwork();
  void EmitStage(bool flip, int64_t block, int64_t pairs);
  void EmitRepack();
  void EmitLaneConstants();
  void EmitUnpackRowOrder(uint64_t base);
  void EmitRepackRowOrder(uint64_t base);

  KernelContext& c_;
  DmaEmitter e_;
  SortKeySpec spec_;
  SortPlan p_;
  std::vector<isa::ElementType> types_;
  std::vector<uint64_t> base_;  // VMEM address of each array: payloads, then K, then I
  int key_ = 0, index_ = 0;     // array numbers of K and I
  uint64_t scratch_vmem_ = 0;   // one vreg of VMEM (row_order16)
  int scratch_pos_ = 0, scratch_index_ = 0, scratch_count_ = 0, scratch_x_ = 0, scratch_y_ = 0;
};

void SortEmitter::Plan() {
  const Instruction& x = c_.instruction;
  const isa::Shape& shape0 = c_.operands.at(0).at(0)->shape;
  for (const auto& leaves : c_.operands) {
    const isa::ElementType type = leaves.at(0)->shape.element_type;
    const int bits = isa::ElementBitWidth(type);
    if (bits != 32 && bits != 16) CannotLower(x, "sort operands must have 16- or 32-bit elements");
    // Mixed widths: 16-bit operands are then unpacked in row order (EmitUnpackRowOrder), so that
    // word r of every array is row r of the chunk, as it is for the 32-bit ones.
    if (!types_.empty() && bits != isa::ElementBitWidth(types_[0])) p_.row_order16 = true;
    types_.push_back(type);
  }
  const isa::ElementType key_type = types_[0];
  using isa::ElementType;
  if (key_type != ElementType::kF32 && key_type != ElementType::kBF16 && key_type != ElementType::kS32 &&
      key_type != ElementType::kU32) {
    CannotLower(x, "the sort key (operand 0) must be f32, bf16, s32 or u32");
  }
  const int64_t dimension = x.GetIntList("dimensions").at(0);
  p_.dims = HbmView(shape0).dims;
  p_.rank = static_cast<int64_t>(p_.dims.size());
  p_.sort_dim = shape0.rank() >= 2 ? dimension : 1;
  p_.n = p_.dims[p_.sort_dim];
  while (p_.n_pow2 < p_.n) p_.n_pow2 *= 2;
  for (int64_t d = p_.rank - 1; d >= 0; --d) {
    if (d != p_.sort_dim) { p_.q = d; break; }
  }
  p_.fused = isa::ElementBitWidth(key_type) == 16 && p_.n_pow2 <= 65536;
  p_.arrays = static_cast<int>(types_.size()) + (p_.fused ? 1 : 2);
  key_ = static_cast<int>(types_.size());
  index_ = key_ + 1;

  // Zero the results' padding first: it takes VMEM of its own.
  for (const DeviceBuffer* result : c_.results) e_.ZeroLayoutPadding(HbmArray(*result));
  if (p_.row_order16) scratch_vmem_ = e_.AllocVmem(8 * 512, "the sort's unpacking scratch");
  const bool any16 = std::any_of(types_.begin(), types_.end(), [](auto t) { return isa::ElementBitWidth(t) == 16; });
  const int64_t granule = any16 ? 2 : 1;
  const uint64_t per_sublane = static_cast<uint64_t>(p_.arrays) * p_.n_pow2 * 512;
  int64_t fit = std::min<int64_t>(8, static_cast<int64_t>(e_.vmem_free() / per_sublane));
  fit -= fit % granule;
  if (fit < granule) {
    CannotLower(x, fmt::format("{} positions x {} arrays of work words need {} bytes of VMEM per 128 rows, {} are free",
                               p_.n_pow2, p_.arrays, per_sublane, e_.vmem_free()));
  }
  const int64_t rows = p_.dims[p_.q];
  p_.q_chunks = (rows + fit * kWords - 1) / (fit * kWords);
  p_.chunk_rows = (rows + p_.q_chunks - 1) / p_.q_chunks;
  p_.sublanes = (p_.chunk_rows + kWords - 1) / kWords;
  p_.sublanes += p_.sublanes % granule;
  p_.stride = p_.sublanes * 512;
  for (int a = 0; a < p_.arrays; ++a) base_.push_back(e_.AllocVmem(p_.n_pow2 * p_.stride, "the sort's work arrays"));
}

// Positions past n hold the largest key and index, so they stay last.
void SortEmitter::EmitPadKeys() {
  if (p_.n_pow2 == p_.n) return;
  out().Emit(isa::OPCODE_VBCAST, {V(0), 0x7fffffff});
  for (int a : {key_, index_}) {
    if (a == index_ && p_.fused) continue;
    const int reg = e_.AllocSreg(), count = e_.AllocSreg();
    out().Emit(isa::OPCODE_MOV, {S(reg), base_[a] + p_.n * p_.stride});
    out().Emit(isa::OPCODE_MOV, {S(count), p_.n_pow2 - p_.n});
    const std::string top = out().NewLabel(c_.instruction.name() + ".pad");
    out().Bind(top);
    Vst(0, At(reg, 0), p_.sublanes);
    out().Emit(isa::OPCODE_ADD, {S(reg), S(reg), p_.stride});
    out().Emit(isa::OPCODE_LOOP, {S(count), Label(top)});
  }
}

// Per position: 16-bit payloads unpacked in place into two words per packed word (even rows in
// the first half of the sublanes, odd rows in the second), then the key (and index) of operand 0.
void SortEmitter::EmitKeys() {
  const int pos = scratch_pos_, index = scratch_index_, count = scratch_count_;
  out().Emit(isa::OPCODE_MOV, {S(pos), 0});
  out().Emit(isa::OPCODE_MOV, {S(index), 0});
  out().Emit(isa::OPCODE_MOV, {S(count), p_.n});
  // Constants: v20 = 16, v21 = 31, v22 = 1, v23 = 0xffff0000, v24 = +NaN, v25 = 0, v26 = sign bit.
  out().Emit(isa::OPCODE_VBCAST, {V(20), 16});
  out().Emit(isa::OPCODE_VBCAST, {V(21), 31});
  out().Emit(isa::OPCODE_VBCAST, {V(22), 1});
  out().Emit(isa::OPCODE_VBCAST, {V(23), 0xffff0000});
  out().Emit(isa::OPCODE_VBCAST, {V(24), 0x7fc00000});
  out().Emit(isa::OPCODE_VBCAST, {V(25), 0});
  out().Emit(isa::OPCODE_VBCAST, {V(26), 0x80000000});
  if (p_.row_order16) EmitLaneConstants();
  const std::string top = out().NewLabel(c_.instruction.name() + ".keys");
  out().Bind(top);
  const int64_t half = p_.sublanes / 2;
  for (std::size_t k = 0; k < types_.size(); ++k) {
    if (isa::ElementBitWidth(types_[k]) != 16) continue;
    if (p_.row_order16) {
      EmitUnpackRowOrder(base_[k]);
      continue;
    }
    Vld(1, At(pos, base_[k], 0), half);
    out().Emit(isa::OPCODE_VSHL, {V(2), V(1), V(20)});
    out().Emit(isa::OPCODE_VAND, {V(3), V(1), V(23)});
    Vst(2, At(pos, base_[k], 0), half);
    Vst(3, At(pos, base_[k], half * 512), half);
  }
  Vld(4, At(pos, base_[0], 0), p_.sublanes);
  if (isa::IsFloat(types_[0])) {
    if (spec_.canonical || !spec_.total_order) {
      out().Emit(isa::OPCODE_VCMP_EQ_F32, {M(0), V(4), V(25)});
      out().Emit(isa::OPCODE_VSEL, {V(4), M(0), V(25), V(4)});
    }
    if (spec_.canonical) {
      out().Emit(isa::OPCODE_VCMP_NE_F32, {M(1), V(4), V(4)});
      out().Emit(isa::OPCODE_VSEL, {V(4), M(1), V(24), V(4)});
    }
    out().Emit(isa::OPCODE_VSRA, {V(5), V(4), V(21)});
    out().Emit(isa::OPCODE_VSHR, {V(5), V(5), V(22)});
    out().Emit(isa::OPCODE_VXOR, {V(4), V(4), V(5)});
  } else if (spec_.is_unsigned) {
    out().Emit(isa::OPCODE_VXOR, {V(4), V(4), V(26)});
  }
  if (spec_.descending) out().Emit(isa::OPCODE_VNOT, {V(4), V(4)});
  out().Emit(isa::OPCODE_VBCAST, {V(6), S(index)});
  if (p_.fused) {
    out().Emit(isa::OPCODE_VAND, {V(4), V(4), V(23)});
    out().Emit(isa::OPCODE_VOR, {V(4), V(4), V(6)});
  } else {
    Vst(6, At(pos, base_[index_], 0), p_.sublanes);
  }
  Vst(4, At(pos, base_[key_], 0), p_.sublanes);
  out().Emit(isa::OPCODE_ADD, {S(pos), S(pos), p_.stride});
  out().Emit(isa::OPCODE_ADD, {S(index), S(index), 1});
  out().Emit(isa::OPCODE_LOOP, {S(count), Label(top)});
}

// One stage of the network: blocks of `block` positions, `pairs` compare-exchanges in each:
// (t, block - 1 - t) for the flip that starts a merge, (t, t + pairs) for the half-cleaners.
// Every exchange puts the smaller (key, index) first: one direction for the whole network.
void SortEmitter::EmitStage(bool flip, int64_t block, int64_t pairs) {
  const int vregs = static_cast<int>(out().target().vector_registers());
  const int per_ce = 4 * p_.arrays;
  const int masks = p_.fused ? 1 : 3;
  int64_t unroll = 1;
  while (unroll * 2 <= pairs && (unroll * 2) * per_ce <= vregs && unroll * 2 * masks <= 8 && unroll < 4) unroll *= 2;
  const int blocks_reg = scratch_count_, block_pos = scratch_pos_, x = scratch_x_, y = scratch_y_, t = scratch_index_;
  const int64_t s = p_.stride;
  out().Emit(isa::OPCODE_MOV, {S(blocks_reg), p_.n_pow2 / block});
  out().Emit(isa::OPCODE_MOV, {S(block_pos), 0});
  const std::string outer = out().NewLabel(c_.instruction.name() + ".blocks");
  const std::string inner = out().NewLabel(c_.instruction.name() + ".pairs");
  out().Bind(outer);
  out().Emit(isa::OPCODE_MOV, {S(t), pairs / unroll});
  out().Emit(isa::OPCODE_MOV, {S(x), S(block_pos)});
  if (flip) out().Emit(isa::OPCODE_ADD, {S(y), S(block_pos), (block - 1) * s});
  out().Bind(inner);
  const auto lo = [&](int64_t u) { return std::pair<int, int64_t>{x, u * s}; };
  const auto hi = [&](int64_t u) {
    return flip ? std::pair<int, int64_t>{y, -u * s} : std::pair<int, int64_t>{x, (pairs + u) * s};
  };
  const auto reg = [&](int64_t u, int a, int which) { return static_cast<int>(u * per_ce + a * 4 + which); };
  // Position `at` of array a.
  const auto addr = [&](std::pair<int, int64_t> at, int a) { return At(at.first, base_[a], at.second); };
  const int64_t sub = p_.sublanes;
  for (int64_t u = 0; u < unroll; ++u) {
    for (int a : {key_, index_}) {
      if (a == index_ && p_.fused) continue;
      Vld(reg(u, a, 0), addr(lo(u), a), sub);
      Vld(reg(u, a, 1), addr(hi(u), a), sub);
    }
  }
  for (int64_t u = 0; u < unroll; ++u) {
    const int m = static_cast<int>(u * masks);
    if (p_.fused) {
      out().Emit(isa::OPCODE_VCMP_GT_S32, {M(m), V(reg(u, key_, 0)), V(reg(u, key_, 1))});
    } else {
      out().Emit(isa::OPCODE_VCMP_GT_S32, {M(m), V(reg(u, key_, 0)), V(reg(u, key_, 1))});
      out().Emit(isa::OPCODE_VCMP_EQ_S32, {M(m + 1), V(reg(u, key_, 0)), V(reg(u, key_, 1))});
      out().Emit(isa::OPCODE_VCMP_GT_S32, {M(m + 2), V(reg(u, index_, 0)), V(reg(u, index_, 1))});
    }
  }
  for (int64_t u = 0; u < unroll; ++u) {
    for (int a = 0; a < key_; ++a) {
      Vld(reg(u, a, 0), addr(lo(u), a), sub);
      Vld(reg(u, a, 1), addr(hi(u), a), sub);
    }
    if (!p_.fused) {
      const int m = static_cast<int>(u * masks);
      out().Emit(isa::OPCODE_MAND, {M(m + 1), M(m + 1), M(m + 2)});
      out().Emit(isa::OPCODE_MOR, {M(m), M(m), M(m + 1)});
    }
  }
  for (int64_t u = 0; u < unroll; ++u) {
    const int m = static_cast<int>(u * masks);
    for (int a = 0; a < p_.arrays; ++a) {
      out().Emit(isa::OPCODE_VSEL, {V(reg(u, a, 2)), M(m), V(reg(u, a, 1)), V(reg(u, a, 0))});
      out().Emit(isa::OPCODE_VSEL, {V(reg(u, a, 3)), M(m), V(reg(u, a, 0)), V(reg(u, a, 1))});
      Vst(reg(u, a, 2), addr(lo(u), a), sub);
      Vst(reg(u, a, 3), addr(hi(u), a), sub);
    }
  }
  out().Emit(isa::OPCODE_ADD, {S(x), S(x), unroll * s});
  if (flip) out().Emit(isa::OPCODE_SUB, {S(y), S(y), unroll * s});
  out().Emit(isa::OPCODE_LOOP, {S(t), Label(inner)});
  out().Emit(isa::OPCODE_ADD, {S(block_pos), S(block_pos), block * s});
  out().Emit(isa::OPCODE_LOOP, {S(blocks_reg), Label(outer)});
}

void SortEmitter::EmitNetwork() {
  for (int64_t k = 2; k <= p_.n_pow2; k *= 2) {
    EmitStage(true, k, k / 2);
    for (int64_t j = k / 4; j >= 1; j /= 2) EmitStage(false, 2 * j, j);
  }
}

// 16-bit payloads packed back in place: word = (even row >> 16) | odd row.
void SortEmitter::EmitRepack() {
  const bool any16 = std::any_of(types_.begin(), types_.end(), [](auto t) { return isa::ElementBitWidth(t) == 16; });
  if (!any16) return;
  const int pos = scratch_pos_, count = scratch_count_;
  out().Emit(isa::OPCODE_MOV, {S(pos), 0});
  out().Emit(isa::OPCODE_MOV, {S(count), p_.n});
  out().Emit(isa::OPCODE_VBCAST, {V(20), 16});
  if (p_.row_order16) EmitLaneConstants();
  const std::string top = out().NewLabel(c_.instruction.name() + ".repack");
  out().Bind(top);
  const int64_t half = p_.sublanes / 2;
  for (std::size_t k = 0; k < types_.size(); ++k) {
    if (isa::ElementBitWidth(types_[k]) != 16) continue;
    if (p_.row_order16) {
      EmitRepackRowOrder(base_[k]);
      continue;
    }
    Vld(1, At(pos, base_[k], 0), half);
    Vld(2, At(pos, base_[k], half * 512), half);
    out().Emit(isa::OPCODE_VSHR, {V(1), V(1), V(20)});
    out().Emit(isa::OPCODE_VOR, {V(1), V(1), V(2)});
    Vst(1, At(pos, base_[k], 0), half);
  }
  out().Emit(isa::OPCODE_ADD, {S(pos), S(pos), p_.stride});
  out().Emit(isa::OPCODE_LOOP, {S(count), Label(top)});
}

// Row-order unpacking (mixed widths). Packed word w of a position holds rows 2w (low half) and
// 2w + 1 (high half); unpacked, row r is word r (sublane r / 128, lane r % 128), as for 32-bit
// arrays. Constants: v10 = the lanes to read, (s % 2) * 64 + l / 2; v11 = 2l mod 128 and v12 =
// 2l + 1 mod 128 (packing); m5 = even lanes; m6 = lanes < 64; v20 = 16; v23 = 0xffff0000.
void SortEmitter::EmitLaneConstants() {
  out().Emit(isa::OPCODE_VBCAST, {V(20), 16});
  out().Emit(isa::OPCODE_VBCAST, {V(23), 0xffff0000});
  out().Emit(isa::OPCODE_VLANEID, {V(13)});
  out().Emit(isa::OPCODE_VSUBLANEID, {V(14)});
  out().Emit(isa::OPCODE_VBCAST, {V(15), 1});
  out().Emit(isa::OPCODE_VBCAST, {V(16), kWords / 2});
  out().Emit(isa::OPCODE_VBCAST, {V(17), kWords});
  out().Emit(isa::OPCODE_VAND, {V(18), V(14), V(15)});
  out().Emit(isa::OPCODE_VMUL_S32, {V(18), V(18), V(16)});
  out().Emit(isa::OPCODE_VSHR, {V(19), V(13), V(15)});
  out().Emit(isa::OPCODE_VADD_S32, {V(10), V(18), V(19)});
  out().Emit(isa::OPCODE_VADD_S32, {V(11), V(13), V(13)});
  out().Emit(isa::OPCODE_VADD_S32, {V(12), V(11), V(15)});
  out().Emit(isa::OPCODE_VREM_S32, {V(11), V(11), V(17)});
  out().Emit(isa::OPCODE_VREM_S32, {V(12), V(12), V(17)});
  out().Emit(isa::OPCODE_VAND, {V(18), V(13), V(15)});
  out().Emit(isa::OPCODE_VBCAST, {V(19), 0});
  out().Emit(isa::OPCODE_VCMP_EQ_S32, {M(5), V(18), V(19)});
  out().Emit(isa::OPCODE_VCMP_LT_S32, {M(6), V(13), V(16)});
}

// Sublane s of D = packed sublane s / 2 (two strided stores to the scratch, one load); a lane
// permute brings each row's word to its lane; the row's half goes to the high bits.
void SortEmitter::EmitUnpackRowOrder(uint64_t base) {
  const int pos = scratch_pos_;
  const int64_t half = p_.sublanes / 2;
  Vld(1, At(pos, base, 0), half);
  Vst(1, At(scratch_vmem_), half, 2);
  Vst(1, At(scratch_vmem_ + 512), half, 2);
  Vld(2, At(scratch_vmem_), p_.sublanes);
  out().Emit(isa::OPCODE_VPERM, {V(3), V(2), V(10)});
  out().Emit(isa::OPCODE_VSHL, {V(4), V(3), V(20)});
  out().Emit(isa::OPCODE_VAND, {V(5), V(3), V(23)});
  out().Emit(isa::OPCODE_VSEL, {V(4), M(5), V(4), V(5)});
  Vst(4, At(pos, base, 0), p_.sublanes);
}

// The inverse: W[s][l] (l < 64) = packed word 64 s + l from rows 128 s + 2l and + 1; packed
// sublane t is W[2t] in lanes < 64 and W[2t + 1] (duplicated to lanes >= 64 by the permute).
void SortEmitter::EmitRepackRowOrder(uint64_t base) {
  const int pos = scratch_pos_;
  const int64_t half = p_.sublanes / 2;
  Vld(1, At(pos, base, 0), p_.sublanes);
  out().Emit(isa::OPCODE_VPERM, {V(2), V(1), V(11)});
  out().Emit(isa::OPCODE_VPERM, {V(3), V(1), V(12)});
  out().Emit(isa::OPCODE_VSHR, {V(2), V(2), V(20)});
  out().Emit(isa::OPCODE_VAND, {V(3), V(3), V(23)});
  out().Emit(isa::OPCODE_VOR, {V(2), V(2), V(3)});
  Vst(2, At(scratch_vmem_), p_.sublanes);
  Vld(4, At(scratch_vmem_), half, 2);
  Vld(5, At(scratch_vmem_ + 512), half, 2);
  out().Emit(isa::OPCODE_VSEL, {V(4), M(6), V(4), V(5)});
  Vst(4, At(pos, base, 0), half);
}

void SortEmitter::EmitChunk(const std::vector<DmaIndex>& starts, int64_t rows) {
  std::vector<int64_t> box(p_.rank, 1);
  box[p_.sort_dim] = p_.n;
  box[p_.q] = rows;
  const std::vector<DmaIndex> zeros = Zeros(p_.rank);
  for (std::size_t k = 0; k < types_.size(); ++k) {
    const DmaArray src{isa::MEMORY_SPACE_HBM, c_.operands[k][0]->address, HbmView(c_.operands[k][0]->shape)};
    const DmaArray dst{isa::MEMORY_SPACE_VMEM, base_[k], StagingShape(p_, types_[k])};
    e_.Dma(src, starts, dst, zeros, box, e_.NextEngine());
  }
  e_.WaitDmas();
  EmitKeys();
  EmitNetwork();
  EmitRepack();
  e_.WaitVpu();
  for (std::size_t k = 0; k < types_.size(); ++k) {
    const DmaArray src{isa::MEMORY_SPACE_VMEM, base_[k], StagingShape(p_, types_[k])};
    const DmaArray dst{isa::MEMORY_SPACE_HBM, c_.results[k]->address, HbmView(c_.results[k]->shape)};
    e_.Dma(src, zeros, dst, starts, box, e_.NextEngine());
  }
  e_.WaitDmas();
}

void SortEmitter::Run() {
  Plan();
  scratch_pos_ = e_.AllocSreg();
  scratch_index_ = e_.AllocSreg();
  scratch_count_ = e_.AllocSreg();
  scratch_x_ = e_.AllocSreg();
  scratch_y_ = e_.AllocSreg();
  EmitPadKeys();
  // Chunks: q in steps of chunk_rows, every index of the other non-sorted dims.
  std::vector<int64_t> others;
  int64_t chunks = p_.q_chunks;
  for (int64_t d = p_.rank - 1; d >= 0; --d) {
    if (d != p_.q && d != p_.sort_dim) {
      others.push_back(d);
      chunks *= p_.dims[d];
    }
  }
  const int counter = e_.AllocSreg(), loop = e_.AllocSreg(), tmp = e_.AllocSreg(), q_index = e_.AllocSreg();
  const int q_start = e_.AllocSreg();
  std::vector<DmaIndex> starts(p_.rank, DmaIndex(0));
  starts[p_.q] = DmaIndex(q_start, 0);
  std::vector<int> coords;
  for (int64_t d : others) {
    coords.push_back(e_.AllocSreg());
    starts[d] = DmaIndex(coords.back(), 0);
  }
  const std::string& name = c_.instruction.name();
  out().Emit(isa::OPCODE_MOV, {S(counter), 0});
  out().Emit(isa::OPCODE_MOV, {S(loop), chunks});
  const std::string top = out().NewLabel(name + ".chunk");
  const std::string partial = out().NewLabel(name + ".partial");
  const std::string next = out().NewLabel(name + ".next");
  out().Bind(top);
  out().Emit(isa::OPCODE_REM, {S(q_index), S(counter), p_.q_chunks});
  out().Emit(isa::OPCODE_DIV, {S(tmp), S(counter), p_.q_chunks});
  out().Emit(isa::OPCODE_MUL, {S(q_start), S(q_index), p_.chunk_rows});
  for (std::size_t i = 0; i < others.size(); ++i) {
    out().Emit(isa::OPCODE_REM, {S(coords[i]), S(tmp), p_.dims[others[i]]});
    out().Emit(isa::OPCODE_DIV, {S(tmp), S(tmp), p_.dims[others[i]]});
  }
  const int64_t last_rows = p_.dims[p_.q] - (p_.q_chunks - 1) * p_.chunk_rows;
  if (last_rows != p_.chunk_rows) out().Emit(isa::OPCODE_BEQ, {S(q_index), p_.q_chunks - 1, Label(partial)});
  EmitChunk(starts, p_.chunk_rows);
  if (last_rows != p_.chunk_rows) {
    out().Emit(isa::OPCODE_BR, {Label(next)});
    out().Bind(partial);
    EmitChunk(starts, last_rows);
  }
  out().Bind(next);
  out().Emit(isa::OPCODE_ADD, {S(counter), S(counter), 1});
  out().Emit(isa::OPCODE_LOOP, {S(loop), Label(top)});
}

}  // namespace

void EmitSortKernel(KernelContext& context) {
  const Instruction& x = context.instruction;
  const hlo::Computation* comparator = x.GetComputation("to_apply");
  const std::optional<SortKeySpec> spec = comparator ? MatchSortComparator(*comparator) : std::nullopt;
  if (!spec) {
    CannotLower(x, "only comparators that compare operand 0 with LT or GT (optionally JAX's NaN/-0 "
                   "canonicalization) are lowered");
  }
  if (context.operands.size() != context.results.size() || context.operands.empty()) {
    CannotLower(x, "operands and results do not correspond");
  }
  for (const auto& leaves : context.operands) {
    if (leaves.size() != 1 || leaves[0] == nullptr) CannotLower(x, "sort operands must be arrays");
  }
  if (context.operands[0][0]->shape.rank() == 0) CannotLower(x, "sort of a scalar");
  if (isa::ElementCount(context.operands[0][0]->shape) == 0) return;
  SortEmitter(context, *spec).Run();
}

}  // namespace tpusim::compiler
