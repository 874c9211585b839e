#include "compiler/lower/conv_kernel.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/dot_epilogue.h"
#include "compiler/lower/megacore.h"
#include <fmt/format.h>

#include "compiler/passes/dot_output_fusion.h"
#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

using namespace isa::ops;

// A register plus a constant, or the constant alone where `reg` < 0.
RegPlus Item(int reg, int64_t offset) { return reg < 0 ? RegPlus(offset) : RegPlus(S(reg), offset); }

// `type[dims]` row-major with `tiles`.
isa::Shape RowMajorTiled(isa::ElementType type, const std::vector<int64_t>& dims, std::vector<isa::Tile> tiles) {
  isa::Shape shape = RowMajorUntiled(type, dims);
  shape.layout->tiles = std::move(tiles);
  return shape;
}

// The convolution in canonical form: input [B, H, W, Cin] (in_perm), kernel [KH, KW, I, O]
// (kernel_perm), output [B, Ho, Wo, Cout] (out_perm), stride 1.
struct ConvForm {
  int64_t batch = 1, cin = 1, cout = 1, groups = 1;
  int64_t h = 1, w = 1, kh = 1, kw = 1, ho = 1, wo = 1;
  int64_t pad_h = 0, pad_w = 0, hp = 1, wp = 1, dil_h = 1, dil_w = 1;
  std::vector<int64_t> in_perm, kernel_perm, out_perm;
};

ConvForm Analyze(const KernelContext& c) {
  const hlo::Instruction& conv = ContractionOf(c);
  const auto& dn = conv.GetConvolutionDimensionNumbers();
  if (dn.input_spatial_dimensions.size() != 2) {
    CannotLower(conv, "only convolutions with 2 spatial dims are lowered");
  }
  if (conv.GetInt("batch_group_count", 1) != 1) CannotLower(conv, "batch_group_count > 1 (not lowered yet)");
  const hlo::Window& window = conv.GetWindow();
  if (window.dimensions.size() != 2) CannotLower(conv, "its window does not have 2 dims");
  for (const hlo::WindowDimension& d : window.dimensions) {
    if (d.stride != 1) CannotLower(conv, "window strides other than 1 (not lowered yet)");
    if (d.lhs_dilation != 1) CannotLower(conv, "lhs (base) dilation (not lowered yet)");
    if (d.reversal) CannotLower(conv, "window reversal (not lowered yet)");
    if (d.padding_low < 0 || d.padding_high < 0) CannotLower(conv, "negative padding (not lowered yet)");
  }
  const isa::Shape& in = c.operands.at(0).at(0)->shape;
  const isa::Shape& kernel = c.operands.at(1).at(0)->shape;
  const isa::Shape& out = c.results.at(0)->shape;
  for (const isa::Shape* s : {&in, &kernel, &out}) {
    if (!s->layout || s->layout->memory_space != isa::kMemorySpaceHbm) CannotLower(conv, "operands and result must be in HBM");
  }
  ConvForm f;
  f.in_perm = {dn.input_batch_dimension, dn.input_spatial_dimensions[0], dn.input_spatial_dimensions[1],
               dn.input_feature_dimension};
  f.kernel_perm = {dn.kernel_spatial_dimensions[0], dn.kernel_spatial_dimensions[1], dn.kernel_input_feature_dimension,
                   dn.kernel_output_feature_dimension};
  f.out_perm = {dn.output_batch_dimension, dn.output_spatial_dimensions[0], dn.output_spatial_dimensions[1],
                dn.output_feature_dimension};
  f.batch = in.dims[f.in_perm[0]];
  f.h = in.dims[f.in_perm[1]];
  f.w = in.dims[f.in_perm[2]];
  f.cin = in.dims[f.in_perm[3]];
  f.kh = kernel.dims[f.kernel_perm[0]];
  f.kw = kernel.dims[f.kernel_perm[1]];
  f.cout = out.dims[f.out_perm[3]];
  f.ho = out.dims[f.out_perm[1]];
  f.wo = out.dims[f.out_perm[2]];
  f.groups = conv.GetInt("feature_group_count", 1);
  f.pad_h = window.dimensions[0].padding_low;
  f.pad_w = window.dimensions[1].padding_low;
  f.hp = f.h + f.pad_h + window.dimensions[0].padding_high;
  f.wp = f.w + f.pad_w + window.dimensions[1].padding_high;
  f.dil_h = window.dimensions[0].rhs_dilation;
  f.dil_w = window.dimensions[1].rhs_dilation;
  if (f.ho != f.hp - (f.kh - 1) * f.dil_h || f.wo != f.wp - (f.kw - 1) * f.dil_w || f.ho <= 0 || f.wo <= 0) {
    CannotLower(conv, "its output dims do not follow from its window");
  }
  if (out.dims[f.out_perm[0]] != f.batch) CannotLower(conv, "the output batch differs from the input's");
  return f;
}

// Zeroes VMEM [0, bytes) with vector stores, then waits for them.
void EmitZeroVmem(ProgramBuilder& out, const std::string& name, int64_t bytes, int zero_reg, int addr, int count, int vpu_sem) {
  const int64_t vreg_bytes = out.target().sublanes() * out.target().lanes() * 4;
  out.Emit(isa::OPCODE_VBCAST, {V(zero_reg), 0});
  out.Emit(isa::OPCODE_MOV, {S(addr), 0});
  out.Emit(isa::OPCODE_MOV, {S(count), CeilDiv(bytes, vreg_bytes)});
  const std::string loop = out.NewLabel(name + ".zero");
  out.Bind(loop);
  out.Emit(isa::OPCODE_VST, {V(zero_reg), Vmem(S(addr))});
  out.Emit(isa::OPCODE_ADD, {S(addr), S(addr), vreg_bytes});
  out.Emit(isa::OPCODE_LOOP, {S(count), Label(loop)});
  out.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(vpu_sem), 1});
  out.Emit(isa::OPCODE_SEM_WAIT, {Sem(vpu_sem), 1});
}

// Zeroes an HBM buffer from VMEM [0, zero_bytes) (already zero) by flat DMAs: for results whose
// layout has padding that the kernel's boxes do not cover (the zero-padding invariant).
void EmitZeroHbm(ProgramBuilder& out, const DeviceBuffer& buffer, uint64_t zero_bytes, uint32_t sem) {
  const uint32_t engines = out.target().dma_engines();
  uint64_t done = 0;
  int count = 0;
  while (done < buffer.size_bytes) {
    const uint64_t bytes = std::min(zero_bytes, buffer.size_bytes - done);
    EmitFlatDma(out, isa::MEMORY_SPACE_VMEM, 0, isa::MEMORY_SPACE_HBM, buffer.address + done, bytes, sem, count % engines);
    done += bytes;
    ++count;
  }
  out.Emit(isa::OPCODE_SEM_WAIT, {Sem(sem), count});
}

bool HasPadding(const DeviceBuffer& buffer) {
  int64_t elements = 1;
  for (int64_t d : buffer.shape.dims) elements *= d;
  return buffer.size_bytes > static_cast<uint64_t>(elements * isa::ElementByteWidth(buffer.shape.element_type));
}

// ---------------------------------------------------------------------------------------------
// MXU path: f32, feature_group_count 1.
//
// VMEM holds, per image, the zero-padded input as untiled rows of L channels (one block per L
// input channels): row q = y * Wp + x. Output pixel row q (x < Wo valid, the others discarded)
// reads, for tap (ky, kx), input row q + ky*dil_h*Wp + kx*dil_w: every tap is one matmul of the
// same rows shifted by a constant, so 8 consecutive output rows are one `vld` at any row offset.
// The (tap x K block, row group) work of a chunk of rows is split evenly over the MXUs; their
// partial sums go into the same register accumulators by mxu.pop.acc.
class MxuConvEmitter {
 public:
  // `epilogue`: an output fusion's operations on the accumulators before they are stored, or nullptr.
  MxuConvEmitter(KernelContext& c, ConvForm f, const DotEpilogue* epilogue = nullptr)
      : c_(c), out_(c.out), f_(std::move(f)), epilogue_(epilogue) {}

  void Run() {
    Plan();
    EmitPrologue();
    EmitImageLoop();
  }

  // Megacore: the cores it splits its image groups (nb images) over: every core where each gets a
  // group and no core zeroes output padding another writes (an output without padding), else 1.
  int CoreParts() {
    Plan();
    const int cores = static_cast<int>(isa::TensorCores(out_.target()));
    return f_.batch / nb_ >= cores && !HasPadding(*c_.results[0]) ? cores : 1;
  }

 private:
  static constexpr int kLhsRegs = 8, kWeightRegs = 8;  // the vregs pushes rotate through
  static constexpr int kImageSem = 0;  // + parity
  static constexpr int kWeightSem = 2;
  static constexpr int kStageSem = 3;  // + parity
  static constexpr int kVpuSem = 5;
  static constexpr int kImgI = 13, kStI = 14, kILeft = 15;  // the image within its group
  static constexpr int kB = 1, kBLeft = 2, kParity = 3, kImg = 4, kOther = 5, kStage = 6, kRow = 7, kChunkLeft = 8,
                       kStRow = 9, kTemp = 10, kTemp2 = 11, kNext = 12;

  [[noreturn]] void Refuse(const std::string& why) { CannotLower(c_.instruction, why); }

  void Plan() {
    const isa::Target& t = out_.target();
    s_ = t.sublanes();
    l_ = t.lanes();
    r_ = t.mxu_rows();
    cc_ = t.mxu_columns();
    q_ = t.mxu_count();
    if (q_ < 1) Refuse("the target has no MXU");
    if (r_ % l_ != 0 || cc_ % l_ != 0 || r_ % s_ != 0) {
      Refuse(fmt::format("the MXU shape {}x{} is not a multiple of the {}-lane vregs (not lowered yet)", r_, cc_, l_));
    }
    if (t.semaphores() < 6) Refuse("the convolution kernel needs 6 semaphores" + LimitNote(c_.options, TargetLimit::kSemaphores));
    nk_ = r_ / l_;
    nc_ = cc_ / l_;
    k_blocks_ = CeilDiv(f_.cin, r_);
    lane_blocks_ = k_blocks_ * nk_;
    real_lane_blocks_ = CeilDiv(f_.cin, l_);
    cin_p_ = k_blocks_ * r_;
    cout_blocks_ = CeilDiv(f_.cout, cc_);
    cout_p_ = cout_blocks_ * cc_;
    const int64_t v = t.vector_registers();
    // An epilogue's constants below the zero register, taken from the accumulators.
    const int64_t constants = epilogue_ != nullptr ? DotEpilogueVregs(*epilogue_, 0) : 0;
    if (epilogue_ != nullptr && !epilogue_->arrays.empty()) {
      Refuse("an array of the result's dims in a convolution's epilogue (not lowered yet)");
    }
    groups_ = std::min<int64_t>((v - 1 - kLhsRegs - kWeightRegs - constants) / nc_, CeilDiv(f_.ho * f_.wp, s_));
    if (groups_ < 1) {
      Refuse("its accumulators do not fit the vector registers" + LimitNote(c_.options, TargetLimit::kVectorRegisters));
    }
    chunk_rows_ = groups_ * s_;
    chunks_ = CeilDiv(f_.ho * f_.wp, chunk_rows_);
    max_shift_ = (f_.kh - 1) * f_.dil_h * f_.wp + (f_.kw - 1) * f_.dil_w;
    image_h_ = CeilDiv(std::max(f_.hp * f_.wp, chunks_ * chunk_rows_ + max_shift_), f_.wp);  // rows of Wp pixels
    block_bytes_ = image_h_ * f_.wp * l_ * 4;  // one image, one lane block
    weight_bytes_ = f_.kh * f_.kw * cin_p_ * cout_p_ * 4;
    stage_rows_ = CeilDiv(chunks_ * chunk_rows_, f_.wp);  // in rows of Wp pixels
    stage_one_ = stage_rows_ * f_.wp * cout_p_ * 4;
    // Images move in groups of nb (a divisor of the batch, at most 8, as VMEM allows): with the
    // batch minor in HBM (b01f in {3,0,2,1}) one image's rows are 8 KiB apart, all in one HBM
    // channel, and a group of nb images spans nb channels.
    for (nb_ = std::min<int64_t>(8, f_.batch); nb_ > 1; --nb_) {
      const uint64_t need = 2 * nb_ * (lane_blocks_ * block_bytes_ + stage_one_) + weight_bytes_;
      if (f_.batch % nb_ == 0 && need <= c_.options.vmem_capacity_bytes) break;
    }
    lane_block_bytes_ = nb_ * block_bytes_;
    image_bytes_ = lane_blocks_ * lane_block_bytes_;
    stage_bytes_ = nb_ * stage_one_;
    image_base_[0] = 0;
    image_base_[1] = image_bytes_;
    weight_base_ = 2 * image_bytes_;
    stage_base_[0] = weight_base_ + weight_bytes_;
    stage_base_[1] = stage_base_[0] + stage_bytes_;
    vmem_bytes_ = stage_base_[1] + stage_bytes_;
    if (epilogue_ != nullptr) {
      // The bias rows after the stages: each over all output features, f32 words (a bf16 element
      // in the low half of its word).
      bias_base_ = vmem_bytes_;
      bias_stride_ = static_cast<uint64_t>(cout_p_) * 4;
      vmem_bytes_ += bias_stride_ * epilogue_->biases.size();
      // Its temps in the pushes' rotations (free once a chunk's last pop is done), over as many
      // accumulators at once as they hold.
      const int64_t temps = std::max(1, epilogue_->temps);
      epilogue_copies_ = std::clamp<int64_t>((kLhsRegs + kWeightRegs) / temps, 1, 8);
      if (epilogue_->temps > kLhsRegs + kWeightRegs) Refuse("its epilogue needs more vector registers than the kernel has free");
    }
    if (vmem_bytes_ > c_.options.vmem_capacity_bytes) {
      Refuse(fmt::format("its padded images, weights and output stages need {} bytes of VMEM, more than the {} there are "
                         "(splitting images is not lowered yet)",
                         vmem_bytes_, c_.options.vmem_capacity_bytes));
    }
    acc0_ = 0;
    lhs0_ = static_cast<int>(groups_ * nc_);
    weight0_ = lhs0_ + kLhsRegs;
    zero_reg_ = static_cast<int>(v - 1);
    if (epilogue_ != nullptr) {
      epilogue_regs_.temp0 = lhs0_;
      epilogue_regs_.constant0 = zero_reg_ - static_cast<int>(constants);
      epilogue_regs_.column_base = kBiasBase;
      epilogue_regs_.bias_stride = bias_stride_;
    }
    engines_ = t.dma_engines();
    taps_ = f_.kh * f_.kw;
    steps_ = taps_ * k_blocks_;
  }

  // Image loads go to the first half of the engines and output stores to the second, so that a
  // store never queues behind the next image's load: an image whose rows are 8 KiB apart in HBM
  // (b01f in {3,0,2,1}: 8 images per tile) lies in one HBM channel, and its load and its store each
  // take about as long as the image's matmuls. Each is split by rows over its half.
  int64_t LoadEngines() const { return std::max<int64_t>(1, engines_ / 2); }
  int64_t StoreEngines() const { return std::max<int64_t>(1, engines_ - LoadEngines()); }
  int64_t StoreEngine0() const { return engines_ > 1 ? LoadEngines() : 0; }
  int64_t LoadPieces() const { return std::min<int64_t>(LoadEngines(), f_.h); }
  int64_t StorePieces() const { return std::min<int64_t>(StoreEngines(), f_.ho); }
  // The group of images from b_reg into the image buffer at s[dst_reg]: per lane block an array
  // [nb, image_h, Wp, L], each image zero-padded.
  void EmitImageDmas(int b_reg, int dst_reg, int sem_reg) {
    const isa::Shape view = PermutedView(c_.operands[0][0]->shape, f_.in_perm);
    const int64_t pieces = LoadPieces();
    for (int64_t lb = 0; lb < real_lane_blocks_; ++lb) {
      const int64_t lanes = std::min(l_, f_.cin - lb * l_);
      for (int64_t p = 0; p < pieces; ++p) {
        const int64_t y0 = f_.h * p / pieces, y1 = f_.h * (p + 1) / pieces;
        out_.Emit(isa::OPCODE_DMA, {Hbm(c_.operands[0][0]->address), Vmem(Item(dst_reg, lb * lane_block_bytes_))},
                  {{"src", ShapeArg(view)},
                   {"dst", ShapeArg(RowMajorUntiled(isa::ElementType::kF32, {nb_, image_h_, f_.wp, l_}))},
                   {"src_start", Index({Item(b_reg, 0), y0, 0, lb * l_})},
                   {"dst_start", Index({0, f_.pad_h + y0, f_.pad_w, 0})},
                   {"size", Sizes({nb_, y1 - y0, f_.w, lanes})},
                   {"sem", Sem(Item(sem_reg, kImageSem))},
                   {"engine", next_engine_++ % LoadEngines()}});
      }
    }
  }

  void EmitPrologue() {
    EmitZeroVmem(out_, c_.instruction.name(), static_cast<int64_t>(stage_base_[0]), zero_reg_, kTemp, kTemp2, kVpuSem);
    if (HasPadding(*c_.results[0])) EmitZeroHbm(out_, *c_.results[0], stage_base_[0], kStageSem);
    // The whole kernel, as [KH, KW, Cin_p, Cout_p] f32 in T(S, L) tiles (zero padding).
    const isa::Shape kview = PermutedView(c_.operands[1][0]->shape, f_.kernel_perm);
    out_.Emit(isa::OPCODE_DMA, {Hbm(c_.operands[1][0]->address), Vmem(weight_base_)},
              {{"src", ShapeArg(kview)},
               {"dst", ShapeArg(RowMajorTiled(isa::ElementType::kF32, {f_.kh, f_.kw, cin_p_, cout_p_}, {isa::Tile{{s_, l_}}}))},
               {"size", Sizes({f_.kh, f_.kw, f_.cin, f_.cout})},
               {"sem", Sem(kWeightSem)},
               {"engine", 0}});
    // This core's image groups [first_group_, end_group_) (all of them on one core).
    std::tie(first_group_, end_group_) = PartRange(f_.batch / nb_, c_.part);
    out_.Emit(isa::OPCODE_MOV, {S(kB), first_group_ * nb_});
    out_.Emit(isa::OPCODE_MOV, {S(kImg), image_base_[first_group_ % 2]});
    out_.Emit(isa::OPCODE_MOV, {S(kTemp2), first_group_ % 2});
    EmitImageDmas(kB, kImg, kTemp2);
    if (epilogue_ != nullptr) {
      EmitDotEpilogueConstants(out_, *epilogue_, epilogue_regs_);
      EmitBiasDmas();
    }
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kWeightSem), 1 + (epilogue_ != nullptr ? epilogue_->biases.size() : 0)});
    out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(kStageSem), StorePieces()});  // the stages start free
    out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(kStageSem + 1), StorePieces()});
  }

  void EmitImageLoop() {
    const std::string name = c_.instruction.name();
    out_.Emit(isa::OPCODE_MOV, {S(kBLeft), end_group_ - first_group_});
    const std::string loop = out_.NewLabel(name + ".image");
    out_.Bind(loop);
    out_.Emit(isa::OPCODE_DIV, {S(kParity), S(kB), nb_});
    out_.Emit(isa::OPCODE_AND, {S(kParity), S(kParity), 1});
    out_.Emit(isa::OPCODE_MUL, {S(kImg), S(kParity), image_bytes_});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(S(kParity), kImageSem), real_lane_blocks_ * LoadPieces()});
    // Prefetch the next image into the other buffer (its reader, image b - 1, is done).
    const std::string no_prefetch = out_.NewLabel(name + ".no_prefetch");
    out_.Emit(isa::OPCODE_ADD, {S(kNext), S(kB), nb_});
    out_.Emit(isa::OPCODE_BGE, {S(kNext), end_group_ * nb_, Label(no_prefetch)});
    out_.Emit(isa::OPCODE_XOR, {S(kTemp2), S(kParity), 1});
    out_.Emit(isa::OPCODE_MUL, {S(kOther), S(kTemp2), image_bytes_});
    EmitImageDmas(kNext, kOther, kTemp2);
    out_.Bind(no_prefetch);
    out_.Emit(isa::OPCODE_MUL, {S(kStage), S(kParity), stage_bytes_});
    out_.Emit(isa::OPCODE_ADD, {S(kStage), S(kStage), stage_base_[0]});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(S(kParity), kStageSem), StorePieces()});
    out_.Emit(isa::OPCODE_MOV, {S(kImgI), S(kImg)});
    out_.Emit(isa::OPCODE_MOV, {S(kStI), S(kStage)});
    out_.Emit(isa::OPCODE_MOV, {S(kILeft), nb_});
    const std::string image = out_.NewLabel(name + ".image_in_group");
    out_.Bind(image);
    for (int64_t ob = 0; ob < cout_blocks_; ++ob) EmitChunks(ob);
    out_.Emit(isa::OPCODE_ADD, {S(kImgI), S(kImgI), block_bytes_});
    out_.Emit(isa::OPCODE_ADD, {S(kStI), S(kStI), stage_one_});
    out_.Emit(isa::OPCODE_LOOP, {S(kILeft), Label(image)});
    out_.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
    const isa::Shape oview = PermutedView(c_.results[0]->shape, f_.out_perm);
    const int64_t pieces = StorePieces();
    for (int64_t p = 0; p < pieces; ++p) {
      const int64_t y0 = f_.ho * p / pieces, y1 = f_.ho * (p + 1) / pieces;
      out_.Emit(isa::OPCODE_DMA, {Vmem(S(kStage)), Hbm(c_.results[0]->address)},
                {{"src", ShapeArg(RowMajorUntiled(isa::ElementType::kF32, {nb_, stage_rows_, f_.wp, cout_p_}))},
                 {"dst", ShapeArg(oview)},
                 {"src_start", Index({0, y0, 0, 0})},
                 {"dst_start", Index({Item(kB, 0), y0, 0, 0})},
                 {"size", Sizes({nb_, y1 - y0, f_.wo, f_.cout})},
                 {"sem", Sem(S(kParity), kStageSem)},
                 {"engine", StoreEngine0() + p % StoreEngines()}});
    }
    out_.Emit(isa::OPCODE_ADD, {S(kB), S(kB), nb_});
    out_.Emit(isa::OPCODE_LOOP, {S(kBLeft), Label(loop)});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kStageSem), StorePieces()});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kStageSem + 1), StorePieces()});
  }

  // All chunks of output rows for output-feature block `ob`.
  void EmitChunks(int64_t ob) {
    out_.Emit(isa::OPCODE_MOV, {S(kRow), S(kImgI)});  // VMEM address of the chunk's first input row
    out_.Emit(isa::OPCODE_MOV, {S(kStRow), S(kStI)});
    out_.Emit(isa::OPCODE_MOV, {S(kChunkLeft), chunks_});
    const std::string loop = out_.NewLabel(c_.instruction.name() + ".chunk");
    out_.Bind(loop);
    for (int64_t a = 0; a < groups_ * nc_; ++a) out_.Emit(isa::OPCODE_VBCAST, {V(static_cast<uint32_t>(acc0_ + a)), 0});
    // The chunk's work items (step, row group), step-major, cut into Q contiguous runs, one per
    // MXU: every MXU gets the same number of rows whatever steps % Q is, and re-latches weights
    // only when its run crosses a step. Software pipeline: the pops of slot i follow the pushes
    // of slot i + lag (the rows' drain), so no pop holds its MXU's queue and the weight pushes of
    // a new step overlap the previous rows' compute.
    const int64_t items = steps_ * groups_;
    std::vector<std::vector<std::pair<int64_t, int64_t>>> runs(q_);
    int64_t longest = 0;
    for (int64_t q = 0; q < q_; ++q) {
      for (int64_t i = items * q / q_; i < items * (q + 1) / q_; ++i) runs[q].push_back({i / groups_, i % groups_});
      longest = std::max<int64_t>(longest, static_cast<int64_t>(runs[q].size()));
    }
    const int64_t lag = CeilDiv(cc_, s_);
    std::vector<int64_t> latched(q_, -1);
    for (int64_t i = 0; i < longest + lag; ++i) {
      for (int64_t q = 0; q < q_ && i < longest; ++q) {
        if (i >= static_cast<int64_t>(runs[q].size())) continue;
        const auto [step, g] = runs[q][i];
        if (latched[q] != step) {
          EmitWeights(step, q, ob);
          latched[q] = step;
        }
        EmitPush(step, q, g);
      }
      const int64_t j = i - lag;
      for (int64_t q = 0; q < q_ && j >= 0; ++q) {
        if (j >= static_cast<int64_t>(runs[q].size())) continue;
        for (int64_t c = 0; c < nc_; ++c) out_.Emit(isa::OPCODE_MXU_POP_ACC, {Mxu(static_cast<uint32_t>(q)), V(static_cast<uint32_t>(acc0_ + runs[q][j].second * nc_ + c))});
      }
    }
    if (epilogue_ != nullptr) {
      // The epilogue on the accumulators, epilogue_copies_ at a time (column tile ob nc + j of
      // the bias rows); rows past Wo are computed and never stored, like their sums.
      std::vector<int> accumulators;
      std::vector<StageTile> tiles;
      for (int64_t g = 0; g < groups_; ++g) {
        for (int64_t j = 0; j < nc_; ++j) {
          accumulators.push_back(static_cast<int>(acc0_ + g * nc_ + j));
          tiles.push_back({g, ob * nc_ + j});
        }
      }
      for (std::size_t first = 0; first < accumulators.size(); first += static_cast<std::size_t>(epilogue_copies_)) {
        const std::size_t end = std::min(accumulators.size(), first + static_cast<std::size_t>(epilogue_copies_));
        EmitDotEpilogue(out_, *epilogue_, epilogue_regs_, {accumulators.begin() + first, accumulators.begin() + end},
                        {tiles.begin() + first, tiles.begin() + end});
      }
    }
    // Stage rows are cout_p words apart: a stride of cout_p / L vreg rows.
    const int64_t stride = cout_p_ / l_;
    for (int64_t g = 0; g < groups_; ++g) {
      for (int64_t j = 0; j < nc_; ++j) {
        out_.Emit(isa::OPCODE_VST,
                  {V(static_cast<uint32_t>(acc0_ + g * nc_ + j)), Vmem(S(kStRow), (g * s_ * cout_p_ + ob * cc_ + j * l_) * 4)},
                  {{"stride", stride}});
      }
    }
    out_.Emit(isa::OPCODE_ADD, {S(kRow), S(kRow), chunk_rows_ * l_ * 4});
    out_.Emit(isa::OPCODE_ADD, {S(kStRow), S(kStRow), chunk_rows_ * cout_p_ * 4});
    out_.Emit(isa::OPCODE_LOOP, {S(kChunkLeft), Label(loop)});
  }

  // Step t = tap * k_blocks + kb: the weight tile rows [kb R, kb R + R) of tap, columns of block ob.
  void EmitWeights(int64_t step, int64_t q, int64_t ob) {
    const int64_t tap = step / k_blocks_;
    const int64_t kb = step % k_blocks_;
    const int64_t col_tiles = cout_p_ / l_;
    for (int64_t b = 0; b < (r_ / s_) * nc_; ++b) {
      const int64_t g = b / nc_;
      const int64_t j = b % nc_;
      const int64_t row_tile = (tap * cin_p_ + kb * r_) / s_ + g;
      const int64_t offset = (row_tile * col_tiles + ob * nc_ + j) * s_ * l_ * 4;
      const int reg = static_cast<int>(weight0_ + (weight_count_++ % kWeightRegs));
      out_.Emit(isa::OPCODE_VLD, {V(reg), Vmem(static_cast<int64_t>(weight_base_) + offset)});
      out_.Emit(isa::OPCODE_MXU_WPUSH_F32, {Mxu(static_cast<uint32_t>(q)), V(reg)});
    }
    out_.Emit(isa::OPCODE_MXU_LATCH, {Mxu(static_cast<uint32_t>(q))});
  }

  void EmitPush(int64_t step, int64_t q, int64_t g) {
    const int64_t tap = step / k_blocks_;
    const int64_t kb = step % k_blocks_;
    const int64_t shift = (tap / f_.kw) * f_.dil_h * f_.wp + (tap % f_.kw) * f_.dil_w;
    for (int64_t b = 0; b < nk_; ++b) {
      const int64_t lb = kb * nk_ + b;
      const int reg = static_cast<int>(lhs0_ + (lhs_count_++ % kLhsRegs));
      out_.Emit(isa::OPCODE_VLD, {V(reg), Vmem(S(kRow), lb * lane_block_bytes_ + (g * s_ + shift) * l_ * 4)});
      out_.Emit(isa::OPCODE_MXU_PUSH_F32, {Mxu(static_cast<uint32_t>(q)), V(reg)});
    }
  }

  // An epilogue's bias rows, one DMA each at the kernel's start beside the weights'.
  void EmitBiasDmas() {
    out_.Emit(isa::OPCODE_MOV, {S(kBiasBase), bias_base_});
    for (std::size_t b = 0; b < epilogue_->biases.size(); ++b) {
      const ExprNode& node = epilogue_->expr.nodes.at(epilogue_->biases[b]);
      EmitBiasRowDma(out_, *c_.operands.at(node.operand + 1).at(0), 0, f_.cout, cout_p_, bias_base_ + b * bias_stride_,
                     kWeightSem, static_cast<uint32_t>((b + 1) % static_cast<std::size_t>(engines_)));
    }
  }

  KernelContext& c_;
  ProgramBuilder& out_;
  ConvForm f_;
  const DotEpilogue* epilogue_ = nullptr;
  DotEpilogueRegisters epilogue_regs_;
  int64_t epilogue_copies_ = 1;
  uint64_t bias_base_ = 0, bias_stride_ = 0;
  static constexpr int kBiasBase = 16;  // VMEM of the epilogue's first bias row
  int64_t s_ = 8, l_ = 128, r_ = 128, cc_ = 128, q_ = 1, nk_ = 1, nc_ = 1;
  int64_t k_blocks_ = 1, lane_blocks_ = 1, real_lane_blocks_ = 1, cin_p_ = 0, cout_blocks_ = 1, cout_p_ = 0;
  int64_t groups_ = 1, chunk_rows_ = 8, chunks_ = 1, max_shift_ = 0, image_h_ = 0, nb_ = 1;
  int64_t lane_block_bytes_ = 0, stage_one_ = 0;
  int64_t block_bytes_ = 0, image_bytes_ = 0, weight_bytes_ = 0, stage_rows_ = 0, stage_bytes_ = 0;
  uint64_t image_base_[2] = {0, 0}, weight_base_ = 0, stage_base_[2] = {0, 0}, vmem_bytes_ = 0;
  int64_t first_group_ = 0, end_group_ = 0;
  int acc0_ = 0, lhs0_ = 0, weight0_ = 0, zero_reg_ = 31;
  int64_t engines_ = 1, taps_ = 1, steps_ = 1;
  int64_t weight_count_ = 0, lhs_count_ = 0;
  uint64_t next_engine_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Depthwise path on the VPU: f32 or bf16, one input channel per output channel.
//
// Per chunk of `cc` channels of one image, tap k's DMA writes X_k[c][y][x] = in[c][y + oy][x + ox]
// (oy = ky dil_h - pad_h, ox likewise) into VMEM over the box where that is inside the input; the
// rest of X_k is zero from the start and never written (every chunk writes the same box). Each
// output tile is then sum_k X_k tile * w[c][k] on the VPU, f32 products and sums in tap order
// (the evaluator's order), rounded once to bf16 for bf16 results. X_k and the output stage share
// the element-wise kernels' tiling of [Ho, Wo] (vtile.h).
class DepthwiseEmitter {
 public:
  DepthwiseEmitter(KernelContext& c, ConvForm f) : c_(c), out_(c.out), f_(std::move(f)) {}

  void Run() {
    Plan();
    EmitPrologue();
    EmitChunkLoop();
  }

  // Megacore: the cores it splits its chunks (a chunk: cc channels of one image) over: every core
  // where each gets a chunk and no core zeroes output padding another writes (a flat output, or
  // one without padding), else 1.
  int CoreParts() {
    Plan();
    const int cores = static_cast<int>(isa::TensorCores(out_.target()));
    const bool zeroes_output = !flat_out_ && HasPadding(*c_.results[0]);
    return f_.batch * chunks_per_image_ >= cores && !zeroes_output ? cores : 1;
  }

 private:
  static constexpr int kLoadSem = 0, kStoreSem = 2, kVpuSem = 3, kSmemSem = 4;  // loads: + set parity
  static constexpr int kB = 1, kC0 = 2, kLeft = 3, kChan = 4, kChanLeft = 5, kTile = 6, kTileLeft = 7, kW = 8,
                       kTemp = 9, kTemp2 = 10, kHalf = 11, kNextB = 12, kNextC0 = 13, kCur = 14, kNxt = 15,
                       kPar = 16, kOtherPar = 17, kSt = 18;

  [[noreturn]] void Refuse(const std::string& why) { CannotLower(c_.instruction, why); }

  void Plan() {
    const isa::Target& t = out_.target();
    s_ = t.sublanes();
    l_ = t.lanes();
    const isa::ElementType type = c_.results[0]->shape.element_type;
    for (const DeviceBuffer* b : {c_.operands[0][0], c_.operands[1][0], c_.results[0]}) {
      if (b->shape.element_type != type) Refuse("depthwise convolutions with mixed element types (not lowered yet)");
    }
    if (type != isa::ElementType::kF32 && type != isa::ElementType::kBF16) {
      Refuse("depthwise convolutions of " + std::string(isa::ElementTypeName(type)) + " (f32 and bf16 are lowered)");
    }
    bf16_ = type == isa::ElementType::kBF16;
    type_ = bf16_ ? isa::ElementType::kBF16 : isa::ElementType::kF32;
    taps_ = f_.kh * f_.kw;
    if (taps_ + 2 > static_cast<int64_t>(t.vector_registers())) {
      Refuse("its window has more taps than vector registers" + LimitNote(c_.options, TargetLimit::kVectorRegisters));
    }
    copies_ = std::max<int64_t>(1, std::min<int64_t>(8, (static_cast<int64_t>(t.vector_registers()) - taps_) / 2));
    if (t.semaphores() < 5) Refuse("the depthwise kernel needs 5 semaphores" + LimitNote(c_.options, TargetLimit::kSemaphores));
    tile_bytes_ = s_ * l_ * (bf16_ ? 2 : 4);
    tiles_ = CeilDiv(f_.ho, s_) * CeilDiv(f_.wo, l_);
    channel_bytes_ = tiles_ * tile_bytes_;
    // cc channels per chunk: a divisor of C, two sets of the taps' copies and the stage within
    // half of VMEM.
    const uint64_t per_channel = static_cast<uint64_t>((2 * taps_ + 1) * channel_bytes_);
    const int64_t most = static_cast<int64_t>(std::min<uint64_t>(c_.options.vmem_capacity_bytes / 2 / per_channel, 64));
    if (most < 1) Refuse("one channel's shifted copies do not fit in VMEM (splitting images is not lowered yet)");
    cc_ = 1;
    for (int64_t d = std::min(most, f_.cin); d >= 1; --d) {
      if (f_.cin % d == 0) {
        cc_ = d;
        break;
      }
    }
    array_bytes_ = cc_ * channel_bytes_;
    set_bytes_ = taps_ * array_bytes_;
    stage_base_ = 2 * set_bytes_;
    vmem_bytes_ = stage_base_ + array_bytes_;
    weight_bytes_ = f_.cout * taps_ * (bf16_ ? 2 : 4);
    if (static_cast<uint64_t>(weight_bytes_) > c_.options.smem_capacity_bytes) {
      Refuse(fmt::format("its {} bytes of weights do not fit in SMEM", weight_bytes_));
    }
    chunks_per_image_ = f_.cin / cc_;
    engines_ = t.dma_engines();
    const isa::Shape oview = PermutedView(c_.results[0]->shape, f_.out_perm);
    // The output in [B, C, Ho, Wo] order with the stage's tiling: a chunk is a flat byte range.
    isa::Shape flat = oview;
    flat.dims = {f_.batch, f_.cout, f_.ho, f_.wo};
    flat.layout->minor_to_major = {3, 2, 1, 0};
    const isa::Shape canonical_out = PermutedView(c_.results[0]->shape, {f_.out_perm[0], f_.out_perm[3], f_.out_perm[1], f_.out_perm[2]});
    flat_out_ = isa::ToString(canonical_out) == isa::ToString(flat) && canonical_out.layout->tiles == StageTiles();
  }

  std::vector<isa::Tile> StageTiles() const {
    std::vector<isa::Tile> tiles = {isa::Tile{{s_, l_}}};
    if (bf16_) tiles.push_back(isa::Tile{{2, 1}});
    return tiles;
  }
  isa::Shape StageShape(int64_t channels) const {
    return RowMajorTiled(type_, {1, channels, f_.ho, f_.wo}, StageTiles());
  }

  // The taps' copies of chunk (b_reg, c0_reg) into the copy set at VMEM s[dst_reg], signalling
  // sem[s[sem_reg] + kLoadSem]; each tap's box split by channels over every engine.
  int EmitTapDmas(int b_reg, int c0_reg, int dst_reg, int sem_reg) {
    const isa::Shape view = PermutedView(c_.operands[0][0]->shape, {f_.in_perm[0], f_.in_perm[3], f_.in_perm[1], f_.in_perm[2]});
    const int64_t pieces = std::min<int64_t>(engines_, cc_);
    int count = 0;
    for (int64_t k = 0; k < taps_; ++k) {
      const int64_t oy = (k / f_.kw) * f_.dil_h - f_.pad_h;
      const int64_t ox = (k % f_.kw) * f_.dil_w - f_.pad_w;
      const int64_t y0 = std::max<int64_t>(0, -oy), y1 = std::min(f_.ho, f_.h - oy);
      const int64_t x0 = std::max<int64_t>(0, -ox), x1 = std::min(f_.wo, f_.w - ox);
      if (y1 <= y0 || x1 <= x0) continue;
      for (int64_t p = 0; p < pieces; ++p) {
        const int64_t lo = cc_ * p / pieces, hi = cc_ * (p + 1) / pieces;
        out_.Emit(isa::OPCODE_DMA, {Hbm(c_.operands[0][0]->address), Vmem(Item(dst_reg, k * array_bytes_))},
                  {{"src", ShapeArg(view)},
                   {"dst", ShapeArg(StageShape(cc_))},
                   {"src_start", Index({Item(b_reg, 0), Item(c0_reg, lo), y0 + oy, x0 + ox})},
                   {"dst_start", Index({0, lo, y0, x0})},
                   {"size", Sizes({1, hi - lo, y1 - y0, x1 - x0})},
                   {"sem", Sem(Item(sem_reg, kLoadSem))},
                   {"engine", next_engine_++ % engines_}});
        ++count;
      }
    }
    return count;
  }

  void EmitPrologue() {
    EmitZeroVmem(out_, c_.instruction.name(), static_cast<int64_t>(vmem_bytes_), 31, kTemp, kTemp2, kVpuSem);
    if (!flat_out_ && HasPadding(*c_.results[0])) EmitZeroHbm(out_, *c_.results[0], vmem_bytes_, kStoreSem);
    // Weights to SMEM as [O, 1, KH, KW] untiled: channel c's taps at element c * taps.
    const isa::Shape kview =
        PermutedView(c_.operands[1][0]->shape, {f_.kernel_perm[3], f_.kernel_perm[2], f_.kernel_perm[0], f_.kernel_perm[1]});
    out_.Emit(isa::OPCODE_DMA, {Hbm(c_.operands[1][0]->address), Smem(0)},
              {{"src", ShapeArg(kview)},
               {"dst", ShapeArg(RowMajorUntiled(type_, {f_.cout, 1, f_.kh, f_.kw}))},
               {"size", Sizes({f_.cout, 1, f_.kh, f_.kw})},
               {"sem", Sem(kSmemSem)},
               {"engine", 0}});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kSmemSem), 1});
    // This core's chunks [first_chunk_, end_chunk_) (all of them on one core).
    std::tie(first_chunk_, end_chunk_) = PartRange(f_.batch * chunks_per_image_, c_.part);
    out_.Emit(isa::OPCODE_MOV, {S(kB), first_chunk_ / chunks_per_image_});
    out_.Emit(isa::OPCODE_MOV, {S(kC0), first_chunk_ % chunks_per_image_ * cc_});
    out_.Emit(isa::OPCODE_MOV, {S(kCur), 0});
    out_.Emit(isa::OPCODE_MOV, {S(kNxt), set_bytes_});
    out_.Emit(isa::OPCODE_MOV, {S(kPar), 0});
    loads_ = EmitTapDmas(kB, kC0, kCur, kPar);
    out_.Emit(isa::OPCODE_SEM_SIGNAL, {Sem(kStoreSem), 1});  // the stage starts free
  }

  // Chunk n computes from copy set n % 2 while chunk n + 1's copies load into the other.
  void EmitChunkLoop() {
    const std::string name = c_.instruction.name();
    out_.Emit(isa::OPCODE_MOV, {S(kLeft), end_chunk_ - first_chunk_});
    const std::string loop = out_.NewLabel(name + ".chunk");
    out_.Bind(loop);
    if (loads_ > 0) out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(S(kPar), kLoadSem), loads_});
    // The next chunk: (b, c0 + cc), wrapping to the next image; its copies go into the other set
    // (its reader, the previous chunk's VPU work, is done).
    const std::string same = out_.NewLabel(name + ".same_image");
    const std::string no_prefetch = out_.NewLabel(name + ".no_prefetch");
    out_.Emit(isa::OPCODE_ADD, {S(kNextC0), S(kC0), cc_});
    out_.Emit(isa::OPCODE_MOV, {S(kNextB), S(kB)});
    out_.Emit(isa::OPCODE_BLT, {S(kNextC0), f_.cin, Label(same)});
    out_.Emit(isa::OPCODE_MOV, {S(kNextC0), 0});
    out_.Emit(isa::OPCODE_ADD, {S(kNextB), S(kNextB), 1});
    out_.Bind(same);
    out_.Emit(isa::OPCODE_BLE, {S(kLeft), 1, Label(no_prefetch)});  // this core's last chunk
    out_.Emit(isa::OPCODE_XOR, {S(kOtherPar), S(kPar), 1});
    EmitTapDmas(kNextB, kNextC0, kNxt, kOtherPar);
    out_.Bind(no_prefetch);
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kStoreSem), 1});  // the stage is free again
    // Channel loop.
    out_.Emit(isa::OPCODE_MOV, {S(kChan), S(kC0)});
    out_.Emit(isa::OPCODE_MOV, {S(kTile), S(kCur)});
    out_.Emit(isa::OPCODE_MOV, {S(kSt), stage_base_});
    out_.Emit(isa::OPCODE_MOV, {S(kChanLeft), cc_});
    const std::string chan = out_.NewLabel(name + ".channel");
    out_.Bind(chan);
    EmitWeightBroadcasts();
    // The channel's tiles, `copies_` at a time interleaved (the in-order VPU overlaps one tile's
    // latencies with the others' work), then the remainder.
    if (tiles_ / copies_ > 1) {
      out_.Emit(isa::OPCODE_MOV, {S(kTileLeft), tiles_ / copies_});
      const std::string tile = out_.NewLabel(name + ".tile");
      out_.Bind(tile);
      EmitTiles(copies_);
      out_.Emit(isa::OPCODE_LOOP, {S(kTileLeft), Label(tile)});
    } else if (tiles_ / copies_ == 1) {
      EmitTiles(copies_);
    }
    if (tiles_ % copies_ != 0) EmitTiles(tiles_ % copies_);
    out_.Emit(isa::OPCODE_ADD, {S(kChan), S(kChan), 1});
    out_.Emit(isa::OPCODE_LOOP, {S(kChanLeft), Label(chan)});
    out_.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
    const isa::Shape oview = PermutedView(c_.results[0]->shape, {f_.out_perm[0], f_.out_perm[3], f_.out_perm[1], f_.out_perm[2]});
    if (flat_out_) {
      out_.Emit(isa::OPCODE_MUL, {S(kTemp), S(kB), f_.cout});
      out_.Emit(isa::OPCODE_ADD, {S(kTemp), S(kTemp), S(kC0)});
      out_.Emit(isa::OPCODE_MUL, {S(kTemp), S(kTemp), channel_bytes_});
      out_.Emit(isa::OPCODE_ADD, {S(kTemp), S(kTemp), c_.results[0]->address});
      const isa::Shape words = RowMajorUntiled(isa::ElementType::kU32, {array_bytes_ / 4});
      out_.Emit(isa::OPCODE_DMA, {Vmem(stage_base_), Hbm(S(kTemp))},
                {{"src", ShapeArg(words)},
                 {"dst", ShapeArg(words)},
                 {"size", Sizes({array_bytes_ / 4})},
                 {"sem", Sem(kStoreSem)},
                 {"engine", engines_ - 1}});
    } else {
      out_.Emit(isa::OPCODE_DMA, {Vmem(stage_base_), Hbm(c_.results[0]->address)},
                {{"src", ShapeArg(StageShape(cc_))},
                 {"dst", ShapeArg(oview)},
                 {"dst_start", Index({Item(kB, 0), Item(kC0, 0), 0, 0})},
                 {"size", Sizes({1, cc_, f_.ho, f_.wo})},
                 {"sem", Sem(kStoreSem)},
                 {"engine", engines_ - 1}});
    }
    out_.Emit(isa::OPCODE_MOV, {S(kB), S(kNextB)});
    out_.Emit(isa::OPCODE_MOV, {S(kC0), S(kNextC0)});
    out_.Emit(isa::OPCODE_MOV, {S(kTemp), S(kCur)});
    out_.Emit(isa::OPCODE_MOV, {S(kCur), S(kNxt)});
    out_.Emit(isa::OPCODE_MOV, {S(kNxt), S(kTemp)});
    out_.Emit(isa::OPCODE_XOR, {S(kPar), S(kPar), 1});
    out_.Emit(isa::OPCODE_LOOP, {S(kLeft), Label(loop)});
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kStoreSem), 1});
  }

  // v0..v(taps-1) = channel kChan's weights broadcast (f32 bits).
  void EmitWeightBroadcasts() {
    out_.Emit(isa::OPCODE_MUL, {S(kW), S(kChan), taps_});
    for (int64_t k = 0; k < taps_; ++k) {
      if (!bf16_) {
        out_.Emit(isa::OPCODE_SHL, {S(kTemp), S(kW), 2});
        out_.Emit(isa::OPCODE_LD_U32, {S(kTemp), Smem(S(kTemp), k * 4)});
      } else {
        // Element i = kW + k is the half (i & 1) of word i / 2.
        out_.Emit(isa::OPCODE_ADD, {S(kTemp2), S(kW), k});
        out_.Emit(isa::OPCODE_AND, {S(kHalf), S(kTemp2), 1});
        out_.Emit(isa::OPCODE_SHL, {S(kHalf), S(kHalf), 4});
        out_.Emit(isa::OPCODE_SHR, {S(kTemp2), S(kTemp2), 1});
        out_.Emit(isa::OPCODE_SHL, {S(kTemp2), S(kTemp2), 2});
        out_.Emit(isa::OPCODE_LD_U32, {S(kTemp), Smem(S(kTemp2))});
        out_.Emit(isa::OPCODE_SHR, {S(kTemp), S(kTemp), S(kHalf)});
        out_.Emit(isa::OPCODE_AND, {S(kTemp), S(kTemp), 0xffff});
        out_.Emit(isa::OPCODE_SHL, {S(kTemp), S(kTemp), 16});
      }
      out_.Emit(isa::OPCODE_VBCAST, {V(static_cast<uint32_t>(k)), S(kTemp)});
    }
  }

  // `copies` output tiles at VMEM offsets kTile.. (copies) and kSt.. (stage), interleaved step by
  // step: acc_c = sum over taps k of X_k tile * w_k, in tap order.
  void EmitTiles(int64_t copies) {
    const auto acc = [&](int64_t c) { return static_cast<int>(taps_ + 2 * c); };
    const auto x = [&](int64_t c) { return static_cast<int>(taps_ + 2 * c + 1); };
    // bf16 tiles fill half the sublanes.
    const std::vector<KeywordArg> sub =
        bf16_ ? std::vector<KeywordArg>{{"sublanes", Bits(0xf)}} : std::vector<KeywordArg>{};
    for (int64_t k = 0; k < taps_; ++k) {
      const auto dst = [&](int64_t c) { return k == 0 ? acc(c) : x(c); };
      for (int64_t c = 0; c < copies; ++c) {
        out_.Add(isa::MakeInstruction(isa::OPCODE_VLD, {V(dst(c)), Vmem(S(kTile), k * array_bytes_ + c * tile_bytes_)}, sub));
      }
      if (bf16_) {
        for (int64_t c = 0; c < copies; ++c) out_.Emit(isa::OPCODE_VUNPACK_LO_BF16, {V(dst(c)), V(dst(c))});
      }
      for (int64_t c = 0; c < copies; ++c) out_.Emit(isa::OPCODE_VMUL_F32, {V(dst(c)), V(dst(c)), V(static_cast<uint32_t>(k))});
      if (k > 0) {
        for (int64_t c = 0; c < copies; ++c) out_.Emit(isa::OPCODE_VADD_F32, {V(acc(c)), V(acc(c)), V(x(c))});
      }
    }
    for (int64_t c = 0; c < copies; ++c) {
      if (bf16_) {
        out_.Emit(isa::OPCODE_VPACK_BF16, {V(x(c)), V(acc(c)), V(acc(c))});
        out_.Emit(isa::OPCODE_VST, {V(x(c)), Vmem(S(kSt), c * tile_bytes_)}, {{"sublanes", Bits(0xf)}});
      } else {
        out_.Emit(isa::OPCODE_VST, {V(acc(c)), Vmem(S(kSt), c * tile_bytes_)});
      }
    }
    out_.Emit(isa::OPCODE_ADD, {S(kTile), S(kTile), copies * tile_bytes_});
    out_.Emit(isa::OPCODE_ADD, {S(kSt), S(kSt), copies * tile_bytes_});
  }


  KernelContext& c_;
  ProgramBuilder& out_;
  ConvForm f_;
  int64_t s_ = 8, l_ = 128;
  bool bf16_ = false;
  isa::ElementType type_ = isa::ElementType::kF32;
  int64_t taps_ = 1, tile_bytes_ = 0, tiles_ = 0, channel_bytes_ = 0, cc_ = 1, array_bytes_ = 0;
  uint64_t stage_base_ = 0, vmem_bytes_ = 0, set_bytes_ = 0;
  uint64_t next_engine_ = 0;
  int64_t weight_bytes_ = 0, chunks_per_image_ = 1, engines_ = 1;
  int loads_ = 0;
  bool flat_out_ = false;
  int64_t first_chunk_ = 0, end_chunk_ = 0;
  int64_t copies_ = 1;  // output tiles computed together
};

// An output fusion's epilogue (its biases along the output features), which only the MXU path
// takes; nullopt for a convolution of its own.
std::optional<DotEpilogue> EpilogueOf(const KernelContext& context, const ConvForm& form) {
  if (FusedConvolution(context.group) == nullptr) return std::nullopt;
  if (form.groups != 1) CannotLower(context.instruction, "an epilogue on a depthwise convolution (not lowered yet)");
  return BuildDotEpilogue(context.group, form.out_perm[3]);
}

}  // namespace

int ConvolutionCoreParts(const KernelContext& context) {
  if (isa::TensorCores(context.options.target) == 1) return 1;
  KernelContext planned = context;
  ConvForm form = Analyze(planned);
  if (form.groups == 1) {
    // Other types are refused by EmitConvolutionKernel, with its own message.
    for (const DeviceBuffer* b : {context.operands[0][0], context.operands[1][0], context.results[0]}) {
      if (b->shape.element_type != isa::ElementType::kF32) return 1;
    }
    const std::optional<DotEpilogue> epilogue = EpilogueOf(context, form);
    return MxuConvEmitter(planned, std::move(form), epilogue ? &*epilogue : nullptr).CoreParts();
  }
  if (form.groups != form.cin || form.cout != form.cin) return 1;
  return DepthwiseEmitter(planned, std::move(form)).CoreParts();
}

void EmitConvolutionKernel(KernelContext& context) {
  ConvForm form = Analyze(context);
  const std::optional<DotEpilogue> epilogue = EpilogueOf(context, form);
  if (form.groups == 1) {
    for (const DeviceBuffer* b : {context.operands[0][0], context.operands[1][0], context.results[0]}) {
      if (b->shape.element_type != isa::ElementType::kF32) {
        CannotLower(context.instruction, "convolutions on the MXUs take f32 operands and results (" +
                                             std::string(isa::ElementTypeName(b->shape.element_type)) +
                                             " is not lowered yet)");
      }
    }
    MxuConvEmitter(context, std::move(form), epilogue ? &*epilogue : nullptr).Run();
    return;
  }
  if (form.groups == form.cin && form.cout == form.cin) {
    DepthwiseEmitter(context, std::move(form)).Run();
    return;
  }
  CannotLower(context.instruction, fmt::format("feature_group_count={} with {} input and {} output features (only 1 and "
                                               "depthwise with one output per input feature are lowered)",
                                               form.groups, form.cin, form.cout));
}

}  // namespace tpusim::compiler
