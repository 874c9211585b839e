#include "compiler/lower/reduce_window_kernel.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/dma_strided.h"
#include "compiler/lower/reduce_plan.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

using isa::ElementType;
using namespace isa::ops;

constexpr uint64_t kChunkBytes = 4096;  // one 8 x 128 x 32-bit vreg: the unit of the VPU loops
constexpr int64_t kMaxStaging = 16;     // staging images whose tap DMAs run together
// Scalar registers of this kernel, above those EmitStridedCopy allocates (3 per walked dim).
constexpr int kAddress = 26;
constexpr int kAddress2 = 27;
constexpr int kCounter = 28;
constexpr int kWord = 29;
constexpr int kMaxRank = 8;


// Along one dim, for one tap index k: the output positions o whose tap reads an operand element,
// and which element q. They form arithmetic progressions (o step dst_step, q step src_step).
struct TapRange {
  int64_t dst_start = 0, dst_step = 1, src_start = 0, src_step = 1, count = 0;
};

TapRange RangeOf(const hlo::WindowDimension& w, int64_t operand_size, int64_t output_size, int64_t k) {
  TapRange range;
  for (int64_t o = 0; o < output_size; ++o) {
    const int64_t p = o * w.stride + k * w.rhs_dilation - w.padding_low;  // in the dilated, padded base
    if (p < 0 || p % w.lhs_dilation != 0) continue;
    const int64_t q = p / w.lhs_dilation;
    if (q >= operand_size) continue;
    if (range.count == 0) {
      range.dst_start = o;
      range.src_start = q;
    } else if (range.count == 1) {
      range.dst_step = o - range.dst_start;
      range.src_step = q - range.src_start;
    }
    ++range.count;
  }
  return range;
}

struct Tap {
  std::vector<TapRange> ranges;  // per dim
  bool full = true;              // reads an element for every output position
};

class ReduceWindowEmitter {
 public:
  explicit ReduceWindowEmitter(KernelContext& context) : c_(context), out_(context.out) {}

  void Run() {
    const hlo::Instruction& rw = c_.instruction;
    if (rw.operand_count() != 2 || rw.shape().is_tuple || c_.results.size() != 1) {
      CannotLower(rw, "variadic reduce-window (several operands) is not lowered yet");
    }
    const std::optional<ReduceOp> op = ReducerOpOf(rw);
    if (!op) CannotLower(rw, "its reducer is not one add/multiply/maximum/minimum/and/or/xor of its two parameters");
    op_ = *op;
    const DeviceBuffer& input = *c_.operands.at(0).at(0);
    const DeviceBuffer& init = *c_.operands.at(1).at(0);
    const DeviceBuffer& output = *c_.results.at(0);
    type_ = output.shape.element_type;
    if (type_ != ElementType::kF32 && type_ != ElementType::kS32 && type_ != ElementType::kU32) {
      CannotLower(rw, "only f32, s32 and u32 reduce-windows are lowered (its type is " +
                          std::string(isa::ElementTypeName(type_)) + ")");
    }
    if (input.shape.element_type != type_) CannotLower(rw, "its operand and result types differ");
    if (type_ == ElementType::kF32 && (op_ == ReduceOp::kAnd || op_ == ReduceOp::kOr || op_ == ReduceOp::kXor)) {
      CannotLower(rw, "a bitwise reducer on floats");
    }
    const int64_t rank = output.shape.rank();
    if (rank == 0 || rank > kMaxRank) CannotLower(rw, "reduce-windows of rank 0 or above 8 are not lowered");
    const std::vector<hlo::WindowDimension>& window = rw.GetWindow().dimensions;
    if (static_cast<int64_t>(window.size()) != rank) CannotLower(rw, "its window's rank is not the operand's");
    for (const hlo::WindowDimension& w : window) {
      if (w.reversal) CannotLower(rw, "window reversal is not lowered");
      if (w.size < 1 || w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1) {
        CannotLower(rw, "window sizes, strides and dilations must be at least 1");
      }
    }
    image_ = WithoutMemorySpace(output.shape);
    const uint64_t image_bytes = AlignUp(isa::LayoutMap(image_).byte_size(), kChunkBytes);
    chunks_ = static_cast<int64_t>(image_bytes / kChunkBytes);
    const uint64_t vmem = c_.options.vmem_capacity_bytes;
    if (2 * image_bytes > vmem) {
      CannotLower(rw, "its result's image (" + std::to_string(image_bytes) +
                          " bytes) does not fit twice in VMEM (tiling the result is not lowered yet)");
    }
    const std::vector<Tap> taps = Taps(window, input.shape.dims, output.shape.dims);

    {
      DmaEmitter setup(c_);
      setup.ZeroLayoutPadding(HbmArray(output));  // the result DMA below writes elements only
      setup.LoadScalarsToSmem({{&init, 0}});
    }
    // The accumulator at VMEM 0, filled with the init value.
    out_.Emit(isa::OPCODE_LD_U32, {S(kWord), Smem(0)});
    Fill(0, kWord);
    const int64_t staging = std::max<int64_t>(
        1, std::min<int64_t>({kMaxStaging, static_cast<int64_t>(taps.size()),
                              static_cast<int64_t>((vmem - image_bytes) / image_bytes)}));
    const DmaArray source = HbmArray(input);
    for (std::size_t first = 0; first < taps.size(); first += staging) {
      const std::size_t end = std::min(taps.size(), first + staging);
      // Staging images of taps that leave positions unread hold the identity there.
      out_.Emit(isa::OPCODE_MOV, {S(kWord), IdentityBits(op_, type_)});
      for (std::size_t t = first; t < end; ++t) {
        if (!taps[t].full) Fill(StagingAddress(t - first, image_bytes), kWord);
      }
      // The DMAs overwrite staging images the VPU filled or last read.
      out_.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(DmaEmitter::kVpuSem), 1});
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(DmaEmitter::kVpuSem), 1});
      int64_t pending = 0;
      for (std::size_t t = first; t < end; ++t) {
        DmaEmitter copy(c_);
        StridedSide src{source, {}, {}};
        StridedSide dst{DmaArray{isa::MEMORY_SPACE_VMEM, StagingAddress(t - first, image_bytes), image_}, {}, {}};
        std::vector<int64_t> size;
        for (const TapRange& r : taps[t].ranges) {
          src.start.push_back(r.src_start);
          src.step.push_back(r.src_step);
          dst.start.push_back(r.dst_start);
          dst.step.push_back(r.dst_step);
          size.push_back(r.count);
        }
        EmitStridedCopy(copy, src, dst, size);
        pending += copy.pending_dmas();
      }
      if (pending > 0) out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(DmaEmitter::kDmaSem), pending});
      for (std::size_t t = first; t < end; ++t) Fold(StagingAddress(t - first, image_bytes));
    }
    out_.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(DmaEmitter::kVpuSem), 1});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(DmaEmitter::kVpuSem), 1});
    DmaEmitter store(c_);
    const std::vector<int64_t> origin(rank, 0);
    store.SplitDma(DmaArray{isa::MEMORY_SPACE_VMEM, 0, image_}, origin, HbmArray(output), origin, output.shape.dims);
    store.WaitDmas();
  }

 private:
  // Every window position (row-major) that reads at least one operand element.
  std::vector<Tap> Taps(const std::vector<hlo::WindowDimension>& window, const std::vector<int64_t>& operand,
                        const std::vector<int64_t>& output) {
    std::vector<Tap> taps;
    const auto rank = window.size();
    std::vector<int64_t> k(rank, 0);
    while (true) {
      Tap tap;
      bool empty = false;
      for (std::size_t d = 0; d < rank; ++d) {
        tap.ranges.push_back(RangeOf(window[d], operand[d], output[d], k[d]));
        empty = empty || tap.ranges.back().count == 0;
        tap.full = tap.full && tap.ranges.back().count == output[d];
      }
      if (!empty) taps.push_back(std::move(tap));
      std::size_t d = rank;
      while (d > 0 && ++k[d - 1] == window[d - 1].size) k[--d] = 0;
      if (d == 0) break;
    }
    return taps;
  }

  static uint64_t StagingAddress(std::size_t slot, uint64_t image_bytes) { return (slot + 1) * image_bytes; }

  // The image at `vmem` filled with the word in scalar register `reg`.
  void Fill(uint64_t vmem, int reg) {
    out_.Emit(isa::OPCODE_VBCAST, {V(0), S(reg)});
    out_.Emit(isa::OPCODE_MOV, {S(kAddress), vmem});
    out_.Emit(isa::OPCODE_MOV, {S(kCounter), chunks_});
    const std::string label = out_.NewLabel(c_.instruction.name() + ".fill");
    out_.Bind(label);
    out_.Emit(isa::OPCODE_VST, {V(0), Vmem(S(kAddress))});
    out_.Emit(isa::OPCODE_ADD, {S(kAddress), S(kAddress), kChunkBytes});
    out_.Emit(isa::OPCODE_LOOP, {S(kCounter), Label(label)});
  }

  // accumulator = op(accumulator, staging image at `vmem`), word by word, `unroll` vregs per
  // iteration so the in-order VPU overlaps one chunk's load latency with the others.
  void Fold(uint64_t vmem) {
    const int64_t unroll = chunks_ % 4 == 0 ? 4 : chunks_ % 2 == 0 ? 2 : 1;
    const isa::Opcode op = ReduceOpInstruction(op_, type_ == ElementType::kF32, type_ == ElementType::kU32);
    out_.Emit(isa::OPCODE_MOV, {S(kAddress), 0});
    out_.Emit(isa::OPCODE_MOV, {S(kAddress2), vmem});
    out_.Emit(isa::OPCODE_MOV, {S(kCounter), chunks_ / unroll});
    const std::string label = out_.NewLabel(c_.instruction.name() + ".fold");
    out_.Bind(label);
    for (int64_t u = 0; u < unroll; ++u) {
      const auto offset = static_cast<int64_t>(u * kChunkBytes);
      out_.Emit(isa::OPCODE_VLD, {V(1 + 2 * u), Vmem(S(kAddress), offset)});
      out_.Emit(isa::OPCODE_VLD, {V(2 + 2 * u), Vmem(S(kAddress2), offset)});
    }
    for (int64_t u = 0; u < unroll; ++u) out_.Emit(op, {V(1 + 2 * u), V(1 + 2 * u), V(2 + 2 * u)});
    for (int64_t u = 0; u < unroll; ++u) {
      out_.Emit(isa::OPCODE_VST, {V(1 + 2 * u), Vmem(S(kAddress), static_cast<int64_t>(u * kChunkBytes))});
    }
    out_.Emit(isa::OPCODE_ADD, {S(kAddress), S(kAddress), unroll * kChunkBytes});
    out_.Emit(isa::OPCODE_ADD, {S(kAddress2), S(kAddress2), unroll * kChunkBytes});
    out_.Emit(isa::OPCODE_LOOP, {S(kCounter), Label(label)});
  }

  KernelContext& c_;
  ProgramBuilder& out_;
  ReduceOp op_ = ReduceOp::kAdd;
  ElementType type_ = ElementType::kF32;
  isa::Shape image_;
  int64_t chunks_ = 0;
};

}  // namespace

void EmitReduceWindowKernel(KernelContext& context) { ReduceWindowEmitter(context).Run(); }

}  // namespace tpusim::compiler
