#include "compiler/lower/elementwise_kernel.h"

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "compiler/hlo/reducer_pattern.h"
#include "compiler/lower/array_view.h"
#include "compiler/lower/broadcast_block_dmas.h"
#include "compiler/lower/dma_region.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/lower/f16_emulation.h"
#include "compiler/lower/megacore.h"
#include "compiler/lower/vpu_issue_clock.h"
#include "compiler/lower/vtile.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;
using namespace isa::ops;

constexpr uint64_t kMaxBlockBytesPerArray = 512 * 1024;
constexpr uint64_t kMinBlockBytesPerArray = 16 * 1024;
// Blocks per kernel the block size aims at, at least: the pipeline's fill and drain are about two
// blocks, so they stay within about 6% of a kernel that streams many; fewer, larger blocks cost
// the simulation less (each block is DMAs to plan and waits to simulate).
constexpr uint64_t kTargetBlocks = 32;
// Semaphores of the kernel: loads landed in buffer 0/1, stores done from buffer 0/1, VPU done.
// Blocks rotate through kBuffers VMEM buffers per stream: block b+2 loads while block b computes
// and block b-1 stores, so the DMA engines always have the next transfers queued. Where three
// strips of every stream do not fit VMEM (a fused chain over f32[16,2048,32000], 1 MiB per strip
// and stream), two: block b+1 loads while block b computes, and block b's stores overlap only
// the next block's compute.
constexpr int kBuffers = 3;
// Tiles in a body of EmitScheduled. The in-order VPU drains a body's last chains before the next
// body's first loads issue (no software pipelining across bodies), so each body costs a drain:
// 64 tiles where 32 were (layer norm's variance, whose producer folds its strips, 11.9 -> 11.3
// us; 128 gave 11.0 us for a program 1.3x longer again, 48.7 K -> 61.5 K instructions).
constexpr int kScheduledTiles = 64;
constexpr uint32_t kLoadSem[kBuffers] = {0, 1, 2};
constexpr uint32_t kStoreSem[kBuffers] = {3, 4, 5};
constexpr uint32_t kVpuSem = 6;
constexpr uint32_t kSmemSem = 7;
// Scalar registers: tile offsets within a block for 4-byte and 2-byte arrays, loop counters, temp.
constexpr int kOffset32 = 26;
constexpr int kOffset16 = 27;
constexpr int kOffset8 = 25;
constexpr int kTileCounter = 28;
constexpr int kStripCounter = 29;
constexpr int kScalarTemp = 5;
// A strip fold (ProducerSink::fold): the byte offset of the next strip's folded tile in the block.
constexpr int kFoldOffset = 30;
// Iotas (ExprNode::kIota): the index of the body's first strip among the result's strips (a
// register the reduce kernel, a producer's consumer, leaves alone).
constexpr int kIotaStrip = 19;
// A loop over blocks (EmitBlocks): its count, and per tile size (4, 2, 1 KiB) the byte offset of
// the block being computed in every stream with tiles of that size.
constexpr int kBlockCounter = 17;
constexpr int kBlockOffset[3] = {14, 15, 16};
// Mask registers: the partial strip's rows (or a rank-1 tail), the last tile's lanes, both.
constexpr int kRowMask = 0;
constexpr int kLaneMask = 1;
constexpr int kBothMask = 2;
constexpr int kFirstTempMask = 3;
constexpr int kMaskRegisters = 8;

enum Variant { kNone = 0, kRow = 1, kLane = 2, kBoth = 3 };


// The values a vcmp compares: f32, s32 or u32 (u32 has no eq or ne: the s32 ones compare its bits).
enum class CompareType { kF32, kS32, kU32 };

// The vcmp of HLO comparison `direction` (EQ, NE, LT, LE, GT, GE) on `type` values.
isa::Opcode CompareOpcode(const std::string& direction, CompareType type) {
  const bool f32 = type == CompareType::kF32;
  const bool u32 = type == CompareType::kU32;
  if (direction == "EQ" && !u32) return f32 ? isa::OPCODE_VCMP_EQ_F32 : isa::OPCODE_VCMP_EQ_S32;
  if (direction == "NE" && !u32) return f32 ? isa::OPCODE_VCMP_NE_F32 : isa::OPCODE_VCMP_NE_S32;
  if (direction == "LT") return f32 ? isa::OPCODE_VCMP_LT_F32 : u32 ? isa::OPCODE_VCMP_LT_U32 : isa::OPCODE_VCMP_LT_S32;
  if (direction == "LE") return f32 ? isa::OPCODE_VCMP_LE_F32 : u32 ? isa::OPCODE_VCMP_LE_U32 : isa::OPCODE_VCMP_LE_S32;
  if (direction == "GT") return f32 ? isa::OPCODE_VCMP_GT_F32 : u32 ? isa::OPCODE_VCMP_GT_U32 : isa::OPCODE_VCMP_GT_S32;
  if (direction == "GE") return f32 ? isa::OPCODE_VCMP_GE_F32 : u32 ? isa::OPCODE_VCMP_GE_U32 : isa::OPCODE_VCMP_GE_S32;
  throw Error("unknown comparison direction " + direction);
}

// `sublanes=0xf` where `half` (a 16-bit tile: its packed rows fill the first half), else none.
std::vector<KeywordArg> HalfTileKeywords(bool half) {
  if (!half) return {};
  return {{"sublanes", Bits(0xf)}};
}

// A streamed array: an operand read tile by tile, or a result written so.
struct Stream {
  const DeviceBuffer* buffer = nullptr;
  VtileGeometry geometry;
  uint64_t vmem[kBuffers] = {};
  // A broadcast of `buffer` into the result's dims, or an array view of it (ExprNode::view): its
  // operand seen in the tiles' index space, where the tiles' index 0 is in it, and the tiles it
  // fills (compiler/lower/broadcast_block_dmas.h). Null for a plain stream.
  const hlo::Instruction* view = nullptr;
  isa::Shape source_view;
  std::vector<int64_t> source_start;
  isa::Shape tiles;
  // A broadcast along the lanes (one value per row): its tiles hold the value in lane 0 and each
  // load replicates it across the lanes (vperm), rather than DMAs writing every lane.
  bool lanes_in_registers = false;
};

// Streams are one per (operand, view): an operand may be read plain, broadcast and sliced.
using LoadKey = std::pair<int, const hlo::Instruction*>;
LoadKey KeyOf(const ExprNode& node) { return {node.operand, node.view}; }

class Emitter {
 public:
  // A kernel of its own (sink null), or a producer inside another kernel, its result handed to `sink`.
  Emitter(KernelContext& context, ElementwiseExpr expr, const ProducerSink* sink = nullptr)
      : c_(context), out_(&context.out), expr_(std::move(expr)), sink_(sink) {
    results_ = c_.results;
    vmem_end_ = c_.options.vmem_capacity_bytes;
    if (sink_ != nullptr) {
      sink_buffer_.name = "(fused)";
      sink_buffer_.shape = sink_->shape;
      results_ = {&sink_buffer_};
      vmem_base_ = sink_->vmem_base;
      vmem_end_ = sink_->vmem_end;
      if (sink_->fold) fold_ = &*sink_->fold;
    }
  }

  void Run() {
    const isa::Target& target = out_->target();
    sublanes_ = target.sublanes();
    lanes_ = target.lanes();
    if (target.semaphores() < 8) {
      CannotLower(c_.instruction, "element-wise kernels need 8 semaphores" + LimitNote(c_.options, TargetLimit::kSemaphores));
    }
    Plan();
    if (fold_ != nullptr && !FoldsStrips()) CannotLower(c_.instruction, "internal: a strip fold where the producer cannot");
    copies_ = ChooseCopies();
    EmitScalarLoads();
    EmitRegisterSetup();
    EmitBlocks();
  }

  // The blocks the kernel streams (megacore: over all of its cores' parts).
  int64_t PlanBlocks() {
    sublanes_ = out_->target().sublanes();
    lanes_ = out_->target().lanes();
    Plan();
    return BlockCount();
  }

  // The strips of a block of whole strips, or 0 where blocks are pieces of strips (after Plan).
  int64_t block_strips() const { return pieces_ > 1 ? 0 : block_strips_; }

  // Whether a producer can fold its strips' tiles in registers (ProducerSink::fold), after Plan:
  // bodies of whole strips, scheduled tile by tile.
  bool FoldsStrips() {
    const isa::ElementType type = outputs_.at(0).buffer->shape.element_type;
    return pieces_ == 1 && grid_.strip_tiles >= 2 && ScheduledBody() && outputs_.size() == 1 &&
           (type == isa::ElementType::kF32 || type == isa::ElementType::kBF16);
  }

  // Plans without emitting: throws CannotLower where the kernel cannot be planned (VMEM, registers).
  void PlanOnly() {
    sublanes_ = out_->target().sublanes();
    lanes_ = out_->target().lanes();
    Plan();
    if (!BodyFits(1)) CannotLower(c_.instruction, "its expression needs more registers than the machine has");
    if (row_folds_) ChooseCopies(/*planning=*/true);
  }

 private:
  // EmitScheduled's state of one copy's value, and its steps.
  struct ScheduledValue {
    bool issued = false;
    bool done = false;    // issued and, where it has one, its rounding or unpack too
    bool finish = false;  // a rounding or unpack is still to emit
    double ready = 0;     // when its register holds it (VpuIssueClock's estimate)
    int readers = 0;      // nodes and stores yet to read it
    int stored = -1;      // a result's masked or packed copy: its register
    int owner = -1;       // a lane broadcast shared with an earlier tile of its strip: that tile
  };
  struct ScheduledStep {
    enum class Kind { kCompute, kFinish, kPrepare, kStore };
    int rank, copy;
    Kind kind;
    int index;  // a node; an output for kPrepare and kStore
  };

  // ---- planning ----
  void Plan() {
    const DeviceBuffer* first_output = results_.at(0);
    const auto geometry = GetVtileGeometry(first_output->shape, sublanes_, lanes_);
    if (!geometry) CannotLower(c_.instruction, "its layout is not one the element-wise kernels stream (T(8,128), T(8,128)(2,1), T(1024)...)");
    grid_ = *geometry;
    for (std::size_t o = 0; o < results_.size(); ++o) {
      const DeviceBuffer* buffer = results_[o];
      if (!SameTiling(buffer->shape, first_output->shape, sublanes_, lanes_)) {
        CannotLower(c_.instruction, "its results are not laid out alike");
      }
      outputs_.push_back(PlainStream(buffer));
    }
    for (const ExprNode& node : expr_.nodes) {
      if (node.kind == ExprNode::Kind::kLoad && node.view != nullptr && !loads_.contains(KeyOf(node))) {
        loads_[KeyOf(node)] = inputs_.size();
        inputs_.push_back(ViewStream(node, first_output->shape));
      }
      if (node.kind == ExprNode::Kind::kLoad && node.view == nullptr && !loads_.contains(KeyOf(node))) {
        const DeviceBuffer* buffer = c_.operands.at(node.operand).at(0);
        if (!SameTiling(buffer->shape, first_output->shape, sublanes_, lanes_)) {
          CannotLower(c_.instruction, "operand " + std::to_string(node.operand) + " " + isa::ToString(buffer->shape) +
                                          " is not laid out as the result " + isa::ToString(first_output->shape) +
                                          " (re-tiling operands is not lowered yet)");
        }
        loads_[KeyOf(node)] = inputs_.size();
        inputs_.push_back(PlainStream(buffer));
      }
      if (node.kind == ExprNode::Kind::kScalar) scalars_.insert(node.operand);
    }
    for (const ExprNode& node : expr_.nodes) {
      row_folds_ = row_folds_ || node.kind == ExprNode::Kind::kRowFold;
      iotas_ = iotas_ || node.kind == ExprNode::Kind::kIota;
    }
    for (int output : expr_.outputs) {
      if (!PreservesZero(expr_, output)) masked_ = true;
    }
    // An f16 result stored to an f16 array and used by nothing else is rounded by the store alone.
    std::set<int> used_as_input;
    for (const ExprNode& node : expr_.nodes) used_as_input.insert(node.inputs.begin(), node.inputs.end());
    for (std::size_t o = 0; o < expr_.outputs.size(); ++o) {
      const int output = expr_.outputs[o];
      const bool stored_as_f16 = outputs_.at(o).buffer->shape.element_type == isa::ElementType::kF16;
      const int stores = static_cast<int>(std::count(expr_.outputs.begin(), expr_.outputs.end(), output));
      if (stored_as_f16 && stores == 1 && !used_as_input.contains(output)) stored_only_.insert(output);
    }
    const bool has_padding = grid_.partial_rows != 0 || grid_.partial_lanes != 0 || grid_.partial_elements != 0;
    masked_ = masked_ && has_padding;

    // Blocks of whole strips, kBuffers deep, within VMEM and BlockBytesPerArray per array.
    uint64_t strip_bytes = 0;
    uint64_t widest_strip = 0;
    for (const Stream* stream : AllStreams()) {
      const uint64_t bytes = static_cast<uint64_t>(stream->geometry.strip_tiles * stream->geometry.tile_bytes);
      strip_bytes += bytes;
      widest_strip = std::max(widest_strip, bytes);
    }
    const uint64_t streams = AllStreams().size();
    for (const Stream& s : outputs_) {
      if (s.geometry.element_bits == 8) pack_scratch_bytes_ = 8 * sublanes_ * lanes_ * 4;  // one tile per copy
    }
    const auto fits = [&](int depth) {
      return depth * (strip_bytes + streams * 4096) + pack_scratch_bytes_ <= vmem_end_ - vmem_base_;
    };
    if (!fits(kBuffers)) depth_ = 2;
    if (!fits(depth_) && sink_ != nullptr) {
      CannotLower(c_.instruction, "two strips of every stream of its fused operand need " + std::to_string(2 * strip_bytes) +
                                      " bytes of VMEM, more than the " + std::to_string(vmem_end_ - vmem_base_) + " left to them");
    }
    if (!fits(depth_)) PlanPieces(streams, vmem_end_ - vmem_base_);
    // Few strips larger than a block (f32[8,47167]: one strip of 1.5 MB per array) stream in
    // pieces too: a kernel of whole strips would be one block, loaded, computed and stored in
    // turn, on one core.
    const uint64_t block_bytes = BlockBytesPerArray(streams, widest_strip * grid_.strips);
    if (pieces_ == 1 && sink_ == nullptr && widest_strip > block_bytes && static_cast<uint64_t>(grid_.strips) < kTargetBlocks) {
      PlanPieces(streams, block_bytes);
    }
    if (pieces_ == 1) {
      const uint64_t budget =
          vmem_end_ - vmem_base_ - streams * depth_ * 4096 - pack_scratch_bytes_;  // alignment slack
      const int64_t strips = std::max<int64_t>(
          1, static_cast<int64_t>(std::min(budget / (depth_ * strip_bytes),
                                           BlockBytesPerArray(streams, widest_strip * grid_.strips) / widest_strip)));
      block_strips_ = std::min<int64_t>(strips, grid_.strips);
      if (sink_ != nullptr && sink_->max_block_strips > 0) block_strips_ = std::min(block_strips_, sink_->max_block_strips);
      const int64_t multiple = sink_ != nullptr ? sink_->strip_multiple : 1;
      if (block_strips_ >= multiple) block_strips_ -= block_strips_ % multiple;
    }
    uint64_t cursor = vmem_base_;
    for (Stream* stream : AllStreams()) {
      const int64_t block_tiles = pieces_ > 1 ? piece_tiles_ : block_strips_ * stream->geometry.strip_tiles;
      const uint64_t bytes = AlignUp(std::max<uint64_t>(block_tiles * stream->geometry.tile_bytes, 4096), 4096);
      for (int buffer = 0; buffer < depth_; ++buffer) {
        stream->vmem[buffer] = cursor;
        cursor += bytes;
      }
    }
    pack_scratch_ = cursor;
    cursor += pack_scratch_bytes_;
    if (cursor > vmem_end_) CannotLower(c_.instruction, "its blocks do not fit in VMEM");
    PlanRegisters();
    if (row_folds_ || iotas_) CheckStripBodies();
  }

  // A row fold (ExprNode::kRowFold) folds a strip's tiles in one body, and an iota's values
  // (ExprNode::kIota) come from where a tile is in its strip and where the body's strips are:
  // blocks of whole strips, a strip in one body scheduled tile by tile (a strip's last tile's
  // padding lanes fold as the fold's identity); an iota over row-major rows.
  void CheckStripBodies() {
    const char* what = row_folds_ ? "fold" : "compute an iota over";
    // Iotas over strips in several bodies (pieces, or strips longer than a body) take each
    // body's first column from its place in the strip and the tile loop's count (EmitIota); a
    // row fold needs the whole strip in one body.
    if (row_folds_ && (pieces_ > 1 || grid_.strip_tiles > kScheduledTiles)) {
      CannotLower(c_.instruction, std::string("its rows of ") + std::to_string(grid_.strip_tiles) + " tiles are too long to " +
                                      what + " in one body of the element-wise kernel");
    }
    if (row_folds_ && grid_.partial_elements != 0) {
      CannotLower(c_.instruction, "it folds rows of a rank-1 array (not lowered yet)");
    }
    if (!ScheduledBody()) CannotLower(c_.instruction, std::string("it cannot ") + what + " rows of f16 or 8-bit values (not lowered yet)");
    if (iotas_) {
      const isa::Shape& shape = results_.at(0)->shape;
      if (shape.rank() < 2 || shape.layout->minor_to_major != isa::MajorToMinorOrder(shape.rank())) {
        CannotLower(c_.instruction, "an iota over a layout that is not row-major (not lowered yet)");
      }
    }
  }

  // Where not even two strips of every stream fit VMEM (Llama's vocabulary-wide rows: 128256
  // columns, 4 MiB per f32 array), or a few strips are each larger than a block, a block is a
  // piece of one strip: its tiles are contiguous in every stream, and only the strip's last piece
  // has the strip's last tile (lane mask). The pieces are the fewest that fit three deep and hold
  // at most `max_piece_bytes` of any stream. A broadcast operand's fill writes the piece's column
  // tiles of the strip (EmitBlockLoads).
  void PlanPieces(uint64_t streams, uint64_t max_piece_bytes) {
    depth_ = kBuffers;
    const int64_t strip_tiles = grid_.strip_tiles;
    uint64_t tile_bytes = 0;  // one tile of every stream
    uint64_t widest_tile = 0;
    for (const Stream* stream : AllStreams()) {
      tile_bytes += stream->geometry.tile_bytes;
      widest_tile = std::max<uint64_t>(widest_tile, stream->geometry.tile_bytes);
    }
    const uint64_t room = c_.options.vmem_capacity_bytes > pack_scratch_bytes_ + depth_ * streams * 4096
                              ? c_.options.vmem_capacity_bytes - pack_scratch_bytes_ - depth_ * streams * 4096
                              : 0;
    piece_tiles_ = std::min<int64_t>({strip_tiles, static_cast<int64_t>(room / (depth_ * tile_bytes)),
                                      std::max<int64_t>(1, static_cast<int64_t>(max_piece_bytes / widest_tile))});
    if (piece_tiles_ < 1) {
      CannotLower(c_.instruction, "one tile of every operand and result, " + std::to_string(depth_) + " times, needs " +
                                      std::to_string(depth_ * tile_bytes) + " bytes of VMEM");
    }
    pieces_ = (strip_tiles + piece_tiles_ - 1) / piece_tiles_;
    piece_tiles_ = (strip_tiles + pieces_ - 1) / pieces_;  // equal pieces
    block_strips_ = 1;
  }

  // A stream of an array with the result's tiles, read or written tile for tile.
  Stream PlainStream(const DeviceBuffer* buffer) const {
    Stream stream;
    stream.buffer = buffer;
    stream.geometry = *GetVtileGeometry(buffer->shape, sublanes_, lanes_);
    return stream;
  }

  // The stream of a load through a view: its tiles are the result's, with the operand's element type.
  Stream ViewStream(const ExprNode& node, const isa::Shape& result) {
    Stream stream;
    stream.buffer = c_.operands.at(node.operand).at(0);
    stream.view = node.view;
    const isa::Shape& operand = stream.buffer->shape;
    const isa::Shape tiles = AsType(result, operand.element_type);
    const auto geometry = GetVtileGeometry(tiles, sublanes_, lanes_);
    if (!geometry || result.rank() < 2 || operand.is_tuple || !operand.layout) {
      CannotLower(c_.instruction, std::string(hlo::OpcodeName(node.view->opcode())) + " '" + node.view->name() + "' of " +
                                      isa::ToString(operand) + " into " + isa::ToString(result) +
                                      " (its tiles are not ones the element-wise kernels stream)");
    }
    stream.geometry = *geometry;
    if (node.box) {
      const ArrayViewSpace space = ArrayViewDmaSpace(*node.box, WithoutMemorySpace(tiles), WithoutMemorySpace(operand));
      stream.tiles = space.tiles;
      stream.source_view = space.source;
      stream.source_start = space.start;
      return stream;
    }
    stream.tiles = WithoutMemorySpace(tiles);
    stream.source_view = ExpandedView(operand, result.rank(), node.view->GetIntList("dimensions"));
    const int64_t minor = result.layout->minor_to_major.at(0);
    stream.lanes_in_registers =
        stream.source_view.dims[minor] == 1 && result.dims[minor] > 1 && stream.geometry.element_bits != 8;
    return stream;
  }

  // A block per array of the bytes that keep HBM busy, spread over the streams (Little's law:
  // bandwidth x latency in flight), or of the largest array over kTargetBlocks where that is more,
  // as a power of two within [kMin, kMax]BlockBytesPerArray. With blocks three deep, the next
  // blocks' loads are that much in flight while one computes, and the pipeline's fill (the first
  // block's loads) and drain (the last block's stores) stay short: on tpu_v4, split over its two
  // cores, each core's 614.4 B/ns x 300 ns over 3 streams, 64 KiB, up to arrays of 2 MiB. Unknown
  // HBM: the largest.
  uint64_t BlockBytesPerArray(uint64_t streams, uint64_t array_bytes) const {
    // Megacore: the cores of a split kernel share HBM, each keeping its share in flight.
    const double in_flight = c_.options.hbm_bytes_per_ns * c_.options.hbm_latency_ns / c_.part.count;
    if (in_flight <= 0 || streams == 0) return kMaxBlockBytesPerArray;
    const uint64_t per_stream = static_cast<uint64_t>(in_flight / static_cast<double>(streams));
    const uint64_t bytes = std::max<uint64_t>({per_stream, array_bytes / kTargetBlocks, 1});
    return std::clamp(std::bit_ceil(bytes), kMinBlockBytesPerArray, kMaxBlockBytesPerArray);
  }

  std::vector<Stream*> AllStreams() {
    std::vector<Stream*> all;
    for (Stream& s : inputs_) all.push_back(&s);
    for (Stream& s : outputs_) all.push_back(&s);
    return all;
  }

  // The input of node `n` when `n` is a float convert whose register form is its input's (a
  // widening to f32, which is exact, or a narrowing to f16 that only the store rounds), else -1:
  // such a convert takes over its input's register instead of copying it.
  int KeptRegisterSource(int n) const {
    const ExprNode& node = expr_.nodes[n];
    if (node.kind != ExprNode::Kind::kOp || node.hlo->opcode() != hlo::Opcode::kConvert) return -1;
    const isa::ElementType from = expr_.nodes[node.inputs.at(0)].type;
    if (DomainOf(from) != Domain::kFloat || DomainOf(node.type) != Domain::kFloat) return -1;
    const bool kept = node.type == isa::ElementType::kF32 || node.type == from ||
                      (node.type == isa::ElementType::kF16 && stored_only_.contains(n));
    return kept ? node.inputs.at(0) : -1;
  }

  // Constants and scalars live in registers for the whole kernel, from the last register down.
  void PlanRegisters() {
    int next_pinned = static_cast<int>(out_->target().vector_registers()) - 1;
    for (std::size_t n = 0; n < expr_.nodes.size(); ++n) {
      const ExprNode& node = expr_.nodes[n];
      const bool pinned = node.kind == ExprNode::Kind::kScalar || node.kind == ExprNode::Kind::kConstant;
      if (!pinned) continue;
      if (node.kind == ExprNode::Kind::kScalar && scalar_reg_.contains(node.operand)) {
        pinned_[static_cast<int>(n)] = scalar_reg_.at(node.operand);
        continue;
      }
      if (DomainOf(node.type) == Domain::kPred) {
        if (node.kind == ExprNode::Kind::kScalar && scalar_mask_.contains(node.operand)) {
          pinned_[static_cast<int>(n)] = scalar_mask_.at(node.operand);
          continue;
        }
        if (next_pinned_mask_ >= kMaskRegisters) CannotLower(c_.instruction, "too many pred constants and scalars");
        pinned_[static_cast<int>(n)] = next_pinned_mask_++;
        if (node.kind == ExprNode::Kind::kScalar) scalar_mask_[node.operand] = pinned_.at(static_cast<int>(n));
        continue;
      }
      // Equal constants share one register (rewrites such as f8_conversion.h's write one
      // broadcast constant per use).
      if (node.kind == ExprNode::Kind::kConstant && constant_reg_.contains(node.bits)) {
        pinned_[static_cast<int>(n)] = constant_reg_.at(node.bits);
        continue;
      }
      pinned_[static_cast<int>(n)] = next_pinned--;
      if (node.kind == ExprNode::Kind::kScalar) scalar_reg_[node.operand] = pinned_.at(static_cast<int>(n));
      if (node.kind == ExprNode::Kind::kConstant) constant_reg_[node.bits] = pinned_.at(static_cast<int>(n));
    }
    // A convert that keeps the register as it is reads a pinned value in place.
    for (std::size_t n = 0; n < expr_.nodes.size(); ++n) {
      const int source = KeptRegisterSource(static_cast<int>(n));
      if (source >= 0 && pinned_.contains(source)) pinned_[static_cast<int>(n)] = pinned_.at(source);
    }
    zero_reg_ = next_pinned--;
    one_reg_ = next_pinned--;
    if (fold_ != nullptr) fold_acc_reg_ = next_pinned--;
    for (const ExprNode& node : expr_.nodes) uses_8bit_ = uses_8bit_ || Is8Bit(node.type);
    for (const Stream* stream : AllStreams()) {
      if (stream->geometry.element_bits == 8) uses_8bit_ = true;  // s8, u8 and pred arrays
      if (stream->buffer->shape.element_type == isa::ElementType::kPred) moves_pred_ = true;
    }
    for (const ExprNode& node : expr_.nodes) uses_f16_ = uses_f16_ || node.type == isa::ElementType::kF16;
    if (uses_f16_) {
      std::set<uint32_t> values;
      for (uint32_t v : F16Emulation::WideningConstants()) values.insert(v);
      for (uint32_t v : F16Emulation::NarrowingConstants()) values.insert(v);
      for (uint32_t v : values) f16_constant_reg_[v] = next_pinned--;
    }
    if (uses_8bit_) {
      c24_reg_ = next_pinned--;
      c255_reg_ = next_pinned--;
      load_shift_reg_ = next_pinned--;
      store_shift_reg_ = next_pinned--;
    }
    first_pinned_ = next_pinned + 1;
    if (first_pinned_ < 8) {
      CannotLower(c_.instruction, "too many scalars and constants for the vector registers" +
                                      LimitNote(c_.options, TargetLimit::kVectorRegisters));
    }
  }

  // ---- code ----
  // Scalars: HBM -> SMEM, one word each (broadcast by EmitRegisterSetup).
  void EmitScalarLoads() {
    uint64_t smem = 0;
    for (int operand : scalars_) {
      const DeviceBuffer* buffer = c_.operands.at(operand).at(0);
      EmitFlatDma(*out_, isa::MEMORY_SPACE_HBM, buffer->address, isa::MEMORY_SPACE_SMEM, smem, buffer->size_bytes, kSmemSem, 0);
      scalar_smem_[operand] = smem;
      smem += 8;
    }
    if (!scalars_.empty()) out_->Emit(isa::OPCODE_SEM_WAIT, {Sem(kSmemSem), scalars_.size()});
  }

  // The registers that hold their values for the whole kernel: scalars, constants, masks. A
  // producer sets them up again before each block, after its consumer's code has used them.
  void EmitRegisterSetup() {
    for (const auto& [value, reg] : f16_constant_reg_) out_->Emit(isa::OPCODE_VBCAST, {V(reg), value});
    for (int operand : scalars_) {
      const isa::ElementType type = c_.operands.at(operand).at(0)->shape.element_type;
      out_->Emit(isa::OPCODE_LD_U32, {S(kScalarTemp), Smem(scalar_smem_.at(operand))});
      if (type == isa::ElementType::kBF16 || type == isa::ElementType::kF16) {
        out_->Emit(isa::OPCODE_AND, {S(kScalarTemp), S(kScalarTemp), 0xffff});
        out_->Emit(isa::OPCODE_SHL, {S(kScalarTemp), S(kScalarTemp), 16});
      } else if (isa::ElementBitWidth(type) == 8) {
        // One byte: pred 0/1, u8 zero-extended, s8 sign-extended, as the vector loads leave them.
        out_->Emit(isa::OPCODE_AND, {S(kScalarTemp), S(kScalarTemp), 0xff});
        if (type == isa::ElementType::kS8) {
          out_->Emit(isa::OPCODE_SHL, {S(kScalarTemp), S(kScalarTemp), 56});
          out_->Emit(isa::OPCODE_SRA, {S(kScalarTemp), S(kScalarTemp), 56});
        }
      }
      if (type == isa::ElementType::kPred) {
        out_->Emit(isa::OPCODE_VBCAST, {V(0), S(kScalarTemp)});
        out_->Emit(isa::OPCODE_VBCAST, {V(1), 0});
        out_->Emit(isa::OPCODE_VCMP_NE_S32, {M(scalar_mask_.at(operand)), V(0), V(1)});
      } else {
        const int reg = scalar_reg_.at(operand);
        out_->Emit(isa::OPCODE_VBCAST, {V(reg), S(kScalarTemp)});
        // v0, v1 and m0 are free here: the masks and temporaries are set up after the scalars.
        if (type == isa::ElementType::kF16) F16().EmitWiden(*out_, {{reg, reg, 0, 1, 2, kRowMask}});
      }
    }
    for (const auto& [node, reg] : pinned_) {
      const ExprNode& n = expr_.nodes[node];
      if (n.kind != ExprNode::Kind::kConstant || DomainOf(n.type) != Domain::kPred) continue;
      out_->Emit(n.bits != 0 ? isa::OPCODE_VCMP_EQ_S32 : isa::OPCODE_VCMP_NE_S32, {M(reg), V(0), V(0)});
    }
    for (const auto& [bits, reg] : constant_reg_) out_->Emit(isa::OPCODE_VBCAST, {V(reg), bits});
    bool converts_pred = false;
    for (const ExprNode& node : expr_.nodes) {
      if (node.kind == ExprNode::Kind::kOp && node.hlo->opcode() == Opcode::kConvert &&
          (DomainOf(node.type) == Domain::kPred || DomainOf(expr_.nodes[node.inputs[0]].type) == Domain::kPred)) {
        converts_pred = true;
      }
    }
    if (uses_8bit_) {
      // Row s of an 8-bit tile is byte s%4 of its word: shifting left by 24 - 8*(s%4) and back by
      // 24 extracts it; packing shifts it left by 8*(s%4).
      out_->Emit(isa::OPCODE_VBCAST, {V(c24_reg_), 24});
      out_->Emit(isa::OPCODE_VBCAST, {V(c255_reg_), 0xff});
      out_->Emit(isa::OPCODE_VSUBLANEID, {V(store_shift_reg_)});
      out_->Emit(isa::OPCODE_VBCAST, {V(load_shift_reg_), 3});
      out_->Emit(isa::OPCODE_VAND, {V(store_shift_reg_), V(store_shift_reg_), V(load_shift_reg_)});
      out_->Emit(isa::OPCODE_VBCAST, {V(load_shift_reg_), 8});
      out_->Emit(isa::OPCODE_VMUL_S32, {V(store_shift_reg_), V(store_shift_reg_), V(load_shift_reg_)});
      out_->Emit(isa::OPCODE_VSUB_S32, {V(load_shift_reg_), V(c24_reg_), V(store_shift_reg_)});
    }
    // Zero: the masks' fill, and the lane index every lane of a lane broadcast reads.
    if (masked_ || converts_pred || moves_pred_ || LaneBroadcasts() || row_folds_) out_->Emit(isa::OPCODE_VBCAST, {V(zero_reg_), 0});
    if (converts_pred) out_->Emit(isa::OPCODE_VBCAST, {V(one_reg_), 0x3f800000});  // 1.0f
    // (A row fold reads the lane mask for its strips' padding lanes: EmitRowFold.)
    if (masked_ || (row_folds_ && grid_.partial_lanes != 0)) {
      if (grid_.partial_elements != 0) {
        // Rank <= 1: element sublane * L + lane of the last tile is valid below partial_elements.
        out_->Emit(isa::OPCODE_VSUBLANEID, {V(0)});
        out_->Emit(isa::OPCODE_VBCAST, {V(1), lanes_});
        out_->Emit(isa::OPCODE_VMUL_S32, {V(0), V(0), V(1)});
        out_->Emit(isa::OPCODE_VLANEID, {V(1)});
        out_->Emit(isa::OPCODE_VADD_S32, {V(0), V(0), V(1)});
        out_->Emit(isa::OPCODE_VBCAST, {V(1), grid_.partial_elements});
        out_->Emit(isa::OPCODE_VCMP_LT_S32, {M(kRowMask), V(0), V(1)});
      }
      if (grid_.partial_rows != 0) {
        out_->Emit(isa::OPCODE_VSUBLANEID, {V(0)});
        out_->Emit(isa::OPCODE_VBCAST, {V(1), grid_.partial_rows});
        out_->Emit(isa::OPCODE_VCMP_LT_S32, {M(kRowMask), V(0), V(1)});
      }
      if (grid_.partial_lanes != 0) {
        out_->Emit(isa::OPCODE_VLANEID, {V(0)});
        out_->Emit(isa::OPCODE_VBCAST, {V(1), grid_.partial_lanes});
        out_->Emit(isa::OPCODE_VCMP_LT_S32, {M(kLaneMask), V(0), V(1)});
        if (grid_.partial_rows != 0) out_->Emit(isa::OPCODE_MAND, {M(kBothMask), M(kRowMask), M(kLaneMask)});
      }
    }
  }

  // The DMAs of one stream's block, split over every engine, round-robin: one engine keeps only
  // max_outstanding_requests bursts in flight, too few to fill HBM alone. Returns the count.
  // Looped (`looped_block` >= 0: the block whose offset the kBlockOffset registers hold), the HBM
  // address is that register plus the block's distance from it.
  int EmitBlockDmas(const Stream& s, int64_t block, int buffer, bool load, uint32_t semaphore,
                    int64_t looped_block = -1) {
    const uint32_t engines = out_->target().dma_engines();
    auto [offset, bytes] = BlockBytes(s, block);
    int base_register = -1;
    if (looped_block >= 0) {
      offset -= BlockBytes(s, looped_block).first;
      base_register = OffsetRegister(s);
    }
    const uint64_t tile = std::max<uint64_t>(s.geometry.tile_bytes, 1);
    const uint64_t tiles = (bytes + tile - 1) / tile;
    const uint64_t parts = std::max<uint64_t>(1, std::min<uint64_t>(engines, tiles));
    int count = 0;
    for (uint64_t p = 0; p < parts; ++p) {
      const uint64_t first = tiles * p / parts * tile;
      const uint64_t last = std::min(bytes, tiles * (p + 1) / parts * tile);
      if (last <= first) continue;
      const uint32_t engine = next_engine_++ % engines;
      const DmaAddress hbm{isa::MEMORY_SPACE_HBM, s.buffer->address + offset + first, base_register};
      const DmaAddress vmem{isa::MEMORY_SPACE_VMEM, s.vmem[buffer] + first};
      EmitFlatDma(*out_, load ? hbm : vmem, load ? vmem : hbm, last - first, semaphore, engine);
      ++count;
    }
    return count;
  }

  int EmitBlockLoads(int64_t block, int buffer, int64_t looped_block = -1) {
    int count = 0;
    for (const Stream& s : inputs_) {
      if (s.view == nullptr) {
        count += EmitBlockDmas(s, block, buffer, true, kLoadSem[buffer], looped_block);
        continue;
      }
      BroadcastBlock fill;
      fill.source_address = s.buffer->address;
      fill.source = s.source_view;
      fill.source_start = s.source_start;
      fill.tiles = s.tiles;
      fill.vmem = s.vmem[buffer];
      fill.first_strip = block * block_strips_;
      fill.strips = std::min(block_strips_, grid_.strips - fill.first_strip);
      if (pieces_ > 1) {  // tiles [first_tile, first_tile + tiles) of one strip: lanes_ columns each
        const auto [first_tile, tiles] = PieceTiles(block);
        fill.first_strip = first_tile / grid_.strip_tiles;
        fill.strips = 1;
        fill.first_column = first_tile % grid_.strip_tiles * lanes_;
        fill.columns = tiles * lanes_;
      }
      fill.strips_per_matrix = grid_.strips_per_matrix;
      fill.strip_bytes = s.geometry.strip_tiles * s.geometry.tile_bytes;
      fill.sublanes = sublanes_;
      fill.lanes_in_registers = s.lanes_in_registers;
      // The tiles that load a lane broadcast: each strip's first (EmitStrips), or each body's
      // first where a strip or piece takes several bodies.
      fill.lane_tile_stride = pieces_ > 1 || grid_.strip_tiles > copies_ ? copies_ : 0;
      count += EmitBroadcastBlockDmas(*out_, fill, kLoadSem[buffer], next_engine_);
    }
    return count;
  }

  // Byte offset and size of block `block` of a stream.
  std::pair<uint64_t, uint64_t> BlockBytes(const Stream& s, int64_t block) const {
    if (pieces_ > 1) {
      const auto [first_tile, tiles] = PieceTiles(block);
      return {first_tile * s.geometry.tile_bytes, tiles * s.geometry.tile_bytes};
    }
    const int64_t first_strip = block * block_strips_;
    const int64_t strips = std::min(block_strips_, grid_.strips - first_strip);
    if (s.buffer->shape.rank() == 0) return {0, s.buffer->size_bytes};
    const uint64_t tile_bytes = s.geometry.tile_bytes;
    return {first_strip * s.geometry.strip_tiles * tile_bytes, strips * s.geometry.strip_tiles * tile_bytes};
  }

  // A piece block's first tile (counted over the whole array) and tile count.
  std::pair<int64_t, int64_t> PieceTiles(int64_t block) const {
    const int64_t strip = block / pieces_;
    const int64_t first = (block % pieces_) * piece_tiles_;
    const int64_t tiles = std::min(grid_.strip_tiles, first + piece_tiles_) - first;
    return {strip * grid_.strip_tiles + first, tiles};
  }

  int64_t BlockCount() const {
    return pieces_ > 1 ? grid_.strips * pieces_ : (grid_.strips + block_strips_ - 1) / block_strips_;
  }

  // Blocks [begin, blocks) of the kernel; megacore: this core's equal share of them.
  void EmitBlocks() {
    const int64_t total = BlockCount();
    const auto [begin, blocks] = PartRange(total, c_.part);
    if (iotas_) out_->Emit(isa::OPCODE_MOV, {S(kIotaStrip), begin * block_strips_});
    int loads[kBuffers] = {};   // DMAs in flight into each buffer
    int stores[kBuffers] = {};  // and out of it
    for (int64_t b = begin; b < std::min<int64_t>(begin + depth_ - 1, blocks) && !inputs_.empty(); ++b) {
      loads[b % depth_] = EmitBlockLoads(b, static_cast<int>(b % depth_));
    }
    // Block b's code; looped, its HBM addresses are kBlockOffset registers (block b's offsets) plus
    // constants, and it moves the registers on to block b + 1.
    const auto step = [&](int64_t b, bool looped) {
      const int buffer = static_cast<int>(b % depth_);
      const int64_t looped_block = looped ? b : -1;
      // Block b + depth - 1 goes into the buffer block b - 1 computed from (done: waited below).
      const int64_t ahead = b + depth_ - 1;
      if (ahead < blocks && !inputs_.empty()) {
        loads[ahead % depth_] = EmitBlockLoads(ahead, static_cast<int>(ahead % depth_), looped_block);
      }
      if (loads[buffer] > 0) out_->Emit(isa::OPCODE_SEM_WAIT, {Sem(kLoadSem[buffer]), loads[buffer]});
      if (stores[buffer] > 0) out_->Emit(isa::OPCODE_SEM_WAIT, {Sem(kStoreSem[buffer]), stores[buffer]});
      if (sink_ != nullptr && b > 0) EmitRegisterSetup();
      EmitBlockCompute(b, buffer);
      if (sink_ != nullptr) {
        // The VPU runs in order: the consumer's loads follow the block's stores.
        const int64_t first = b * block_strips_;
        sink_->consume(first, std::min(grid_.strips, first + block_strips_), outputs_[0].vmem[buffer]);
        out_->Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
        out_->Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
      } else {
        out_->Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
        out_->Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
        stores[buffer] = 0;
        for (const Stream& s : outputs_) stores[buffer] += EmitBlockDmas(s, b, buffer, false, kStoreSem[buffer], looped_block);
      }
      if (looped) {
        for (const auto& [tile_bytes, reg] : offset_registers_) {
          out_->Emit(isa::OPCODE_ADD, {S(reg), S(reg), block_strips_ * grid_.strip_tiles * tile_bytes});
        }
      }
    };
    const auto [first_looped, iterations] = LoopedBlocks(begin, blocks);
    int64_t b = begin;
    for (; b < std::min(first_looped, blocks); ++b) {
      out_->Comment(fmt::format("block {} of {}", b + 1, total));
      step(b, false);
    }
    if (iterations > 0) {
      out_->Comment(fmt::format("blocks {} to {} of {}, {} per iteration", b + 1, b + iterations * depth_, total, depth_));
      for (const Stream* s : AllStreams()) OffsetRegister(*s);
      for (const auto& [tile_bytes, reg] : offset_registers_) {
        out_->Emit(isa::OPCODE_MOV, {S(reg), b * block_strips_ * grid_.strip_tiles * tile_bytes});
      }
      EmitLoop(kBlockCounter, iterations, [&] {
        for (int k = 0; k < depth_; ++k) step(b + k, true);
      });
      b += iterations * depth_;
    }
    for (; b < blocks; ++b) {
      out_->Comment(fmt::format("block {} of {}", b + 1, total));
      step(b, false);
    }
    for (int buffer = 0; buffer < depth_; ++buffer) {
      if (stores[buffer] > 0) out_->Emit(isa::OPCODE_SEM_WAIT, {Sem(kStoreSem[buffer]), stores[buffer]});
    }
  }

  // The blocks whose code is the same but for their HBM addresses, as (first, iterations of
  // depth_ blocks): full blocks of whole strips, none with a partial strip to mask, whose next
  // loads are full blocks too, after the first depth_ blocks (every buffer's waits then count
  // full blocks), with no broadcast fill (its DMAs depend on the strips) and a consumer whose
  // code does not depend on the block. Two iterations at least, else none. (An array of rank 0
  // is one block: never looped.) Of blocks [begin, end).
  std::pair<int64_t, int64_t> LoopedBlocks(int64_t begin, int64_t end) const {
    const bool partial_strips = masked_ && (grid_.partial_rows != 0 || grid_.partial_elements != 0);
    bool varies = pieces_ > 1 || partial_strips || (sink_ != nullptr && !sink_->same_code_every_block);
    for (const Stream& s : inputs_) varies = varies || s.view != nullptr;
    if (varies) return {end, 0};
    const int64_t full = std::min(end, grid_.strips / block_strips_);
    const int64_t first = begin + depth_;
    const int64_t iterations = std::max<int64_t>(full - depth_ - first + 1, 0) / depth_;
    return {first, iterations >= 2 ? iterations : 0};
  }

  // The kBlockOffset register of `s`'s tile size.
  int OffsetRegister(const Stream& s) {
    const uint64_t tile_bytes = s.geometry.tile_bytes;
    const auto it = offset_registers_.find(tile_bytes);
    if (it != offset_registers_.end()) return it->second;
    const int reg = kBlockOffset[offset_registers_.size()];
    offset_registers_[tile_bytes] = reg;
    return reg;
  }

  bool IsPartialStrip(int64_t strip) const {
    const bool any = grid_.partial_rows != 0 || grid_.partial_elements != 0;
    return masked_ && any && strip % grid_.strips_per_matrix == grid_.strips_per_matrix - 1;
  }

  void EmitBlockCompute(int64_t block, int buffer) {
    buffer_ = buffer;
    if (fold_ != nullptr) out_->Emit(isa::OPCODE_MOV, {S(kFoldOffset), 0});
    out_->Emit(isa::OPCODE_MOV, {S(kOffset32), 0});
    out_->Emit(isa::OPCODE_MOV, {S(kOffset16), 0});
    out_->Emit(isa::OPCODE_MOV, {S(kOffset8), 0});
    const bool lane_masked = masked_ && grid_.partial_lanes != 0;
    if (pieces_ > 1) {
      // A piece is part of one strip: its tiles share their lane broadcasts.
      const Variant base = IsPartialStrip(block / pieces_) ? kRow : kNone;
      const int64_t tiles = PieceTiles(block).second;
      if (iotas_) {
        out_->Emit(isa::OPCODE_MOV, {S(kIotaStrip), block / pieces_});
        iota_column_tile_ = (block % pieces_) * piece_tiles_;
      }
      shared_tiles_ = copies_;
      const bool last_piece = block % pieces_ == pieces_ - 1;
      EmitStripTail(base, lane_masked && last_piece ? static_cast<Variant>(base | kLane) : base, tiles);
      shared_tiles_ = 1;
      return;
    }
    const int64_t first = block * block_strips_;
    const int64_t last = std::min(grid_.strips, first + block_strips_);
    for (int64_t s = first; s < last;) {
      const bool partial = IsPartialStrip(s);
      int64_t run = 0;
      while (s + run < last && IsPartialStrip(s + run) == partial) ++run;
      const Variant base = partial ? kRow : kNone;
      if (!lane_masked && !LaneBroadcasts() && fold_ == nullptr && !row_folds_ && !iotas_) {
        EmitTiles(base, run * grid_.strip_tiles);
      } else {
        EmitStrips(base, run, lane_masked);
      }
      s += run;
    }
  }

  // `strips` whole strips in bodies aligned to them: a strip's last tile has padding lanes to
  // zero where `lane_masked`, and its tiles share their lane broadcasts (shared_tiles_). Strips of
  // at most copies_ tiles go several to a body (a [34624,15] f32 array is one tile per strip: one
  // tile per body would leave the in-order VPU waiting for each tile's whole chain, 4.5x its HBM
  // time); a longer strip goes in bodies of its own.
  void EmitStrips(Variant base, int64_t strips, bool lane_masked) {
    const int64_t tiles = grid_.strip_tiles;
    const Variant last = lane_masked ? static_cast<Variant>(base | kLane) : base;
    if (tiles > copies_) {
      shared_tiles_ = copies_;
      EmitLoop(kStripCounter, strips, [&] {
        // A strip fold runs through the strip's bodies in a register of its own.
        if (fold_ != nullptr) out_->Emit(isa::OPCODE_VBCAST, {V(fold_acc_reg_), fold_->identity});
        iota_column_tile_ = 0;
        EmitStripTail(base, last, tiles);
        if (iotas_) out_->Emit(isa::OPCODE_ADD, {S(kIotaStrip), S(kIotaStrip), 1});
      });
      shared_tiles_ = 1;
      return;
    }
    fold_strip_tiles_ = static_cast<int>(tiles);
    const int64_t per_body = copies_ / tiles;
    const auto body = [&](int64_t body_strips) {
      std::vector<Variant> variants;
      for (int64_t s = 0; s < body_strips; ++s) {
        variants.insert(variants.end(), tiles - 1, base);
        variants.push_back(last);
      }
      EmitBody(variants);
      if (iotas_) out_->Emit(isa::OPCODE_ADD, {S(kIotaStrip), S(kIotaStrip), body_strips});
    };
    shared_tiles_ = static_cast<int>(tiles);
    EmitLoop(kStripCounter, strips / per_body, [&] { body(per_body); });
    if (strips % per_body != 0) body(strips % per_body);
    shared_tiles_ = 1;
    fold_strip_tiles_ = 0;
  }

  // `tiles` tiles of one strip, the last of them `last`: the last body interleaves that tile with
  // the ones before it.
  void EmitStripTail(Variant base, Variant last, int64_t tiles) {
    const int64_t last_body = (tiles - 1) % copies_ + 1;
    EmitTiles(base, tiles - last_body);
    std::vector<Variant> variants(last_body, base);
    variants.back() = last;
    fold_strip_ends_ = true;
    EmitBody(variants);
    fold_strip_ends_ = false;
  }

  bool LaneBroadcasts() const {
    for (const Stream& s : inputs_) {
      if (s.lanes_in_registers) return true;
    }
    return false;
  }

  template <typename Body>
  void EmitLoop(int counter, int64_t count, Body body) {
    if (count <= 0) return;
    if (count == 1) {
      body();
      return;
    }
    const std::string label = out_->NewLabel(c_.instruction.name() + ".loop");
    out_->Emit(isa::OPCODE_MOV, {S(counter), count});
    out_->Bind(label);
    body();
    out_->Emit(isa::OPCODE_LOOP, {S(counter), Label(label)});
  }

  // ---- one tile ----
  // The current copy's tile of `s` in the buffer being computed (plus `byte_offset`).
  AddressValue TileAddress(const Stream& s) const {
    return TileAddressAt(s, 0);
  }
  AddressValue TileAddressAt(const Stream& s, int64_t byte_offset) const {
    const int bits = s.geometry.element_bits;
    const int reg = bits == 32 ? kOffset32 : bits == 16 ? kOffset16 : kOffset8;
    const int64_t tile = sublanes_ * lanes_ * bits / 8;
    return Vmem(S(reg), static_cast<int64_t>(s.vmem[buffer_] + copy_ * tile + byte_offset));
  }

  int AllocVreg() {
    for (int r = 0; r < first_pinned_; ++r) {
      if (!vreg_used_[r]) {
        vreg_used_[r] = true;
        peak_vregs_ = std::max<int>(peak_vregs_, std::count(vreg_used_.begin(), vreg_used_.begin() + first_pinned_, true));
        return r;
      }
    }
    CannotLower(c_.instruction, "its expression needs more vector registers than the machine has");
  }
  int AllocMask() {
    for (int r = kFirstTempMask; r < kMaskRegisters; ++r) {
      if (r >= next_pinned_mask_ && !mask_used_[r]) {
        mask_used_[r] = true;
        peak_masks_ = std::max<int>(peak_masks_, std::count(mask_used_.begin() + kFirstTempMask, mask_used_.end(), true));
        return r;
      }
    }
    CannotLower(c_.instruction, "its expression needs more mask registers than the machine has");
  }

  // Last use of each node within a body (outputs are used at the end; -1: dead).
  std::vector<int> LastUses() const {
    const int end = static_cast<int>(expr_.nodes.size());
    std::vector<int> last_use(expr_.nodes.size(), -1);
    for (int n = 0; n < end; ++n) {
      for (int input : expr_.nodes[n].inputs) last_use[input] = n;
    }
    for (int output : expr_.outputs) last_use[output] = end;
    return last_use;
  }

  // `copies` consecutive tiles, interleaved operation by operation so the in-order VPU overlaps
  // one tile's latencies with the others' work (what software pipelining buys on a TPU).
  void EmitBody(Variant variant, int copies) { EmitBody(std::vector<Variant>(copies, variant)); }

  // One tile per entry of `variants`, each stored with its own padding masked.
  void EmitBody(const std::vector<Variant>& variants) {
    const int copies = static_cast<int>(variants.size());
    vreg_used_.assign(out_->target().vector_registers(), false);  // up to the target's count (1024)
    aliases_.clear();
    mask_used_.assign(kMaskRegisters, false);
    peak_vregs_ = 0;
    peak_masks_ = 0;
    const std::vector<int> last_use = LastUses();
    regs_.assign(copies, std::vector<int>(expr_.nodes.size(), -1));
    if (ScheduledBody()) {
      EmitScheduled(variants, last_use);
    } else {
      EmitPhased(copies, last_use);
      EmitPhasedStores(variants);
    }
    copy_ = 0;
    bool any32 = false;
    bool any16 = false;
    bool any8 = false;
    for (Stream* s : AllStreams()) {
      if (s->buffer->shape.rank() == 0) continue;
      (s->geometry.element_bits == 32 ? any32 : s->geometry.element_bits == 16 ? any16 : any8) = true;
    }
    if (any32) out_->Emit(isa::OPCODE_ADD, {S(kOffset32), S(kOffset32), copies * sublanes_ * lanes_ * 4});
    if (any16) out_->Emit(isa::OPCODE_ADD, {S(kOffset16), S(kOffset16), copies * sublanes_ * lanes_ * 2});
    if (any8) out_->Emit(isa::OPCODE_ADD, {S(kOffset8), S(kOffset8), copies * sublanes_ * lanes_});
  }

  // The values of `copies` tiles, operation by operation, each for every copy before the next
  // (f16 and 8-bit expressions: their conversions are interleaved over the copies as one step).
  void EmitPhased(int copies, const std::vector<int>& last_use) {
    const int end = static_cast<int>(expr_.nodes.size());
    for (int n = 0; n < end; ++n) {
      const ExprNode& node = expr_.nodes[n];
      if (last_use[n] < 0) continue;  // dead
      const int kept_source = KeptRegisterSource(n);
      for (copy_ = 0; copy_ < copies; ++copy_) {
        if (pinned_.contains(n)) {
          Regs()[n] = pinned_.at(n);
        } else if (kept_source >= 0 && last_use[kept_source] == n) {
          Regs()[n] = Regs()[kept_source];
          continue;  // the register is n's now: its input is not released
        } else if (node.kind == ExprNode::Kind::kLoad) {
          const Stream& s = inputs_[loads_.at(KeyOf(node))];
          const int r = AllocVreg();
          if (s.geometry.element_bits == 8) {
            EmitLoad8(s, r);
          } else {
            // A lane broadcast's value is in the first tile of its strip's tiles (shared_tiles_).
            const int copy = copy_;
            if (s.lanes_in_registers) copy_ -= copy_ % shared_tiles_;
            out_->Add(isa::MakeInstruction(isa::OPCODE_VLD, {V(r), TileAddress(s)},
                                           HalfTileKeywords(s.geometry.element_bits != 32)));
            copy_ = copy;
          }
          Regs()[n] = r;
        } else {
          EmitOp(n);
        }
        for (int input : node.inputs) {
          if (last_use[input] == n) Release(input);
        }
      }
      // An operation's bf16 roundings follow every copy's operation: right after each, the
      // in-order VPU waited for each result (an exp's 16 cycles, once per tile).
      for (int d : pending_bf16_rounds_) out_->Emit(isa::OPCODE_VCVT_BF16_F32, {V(d), V(d)});
      pending_bf16_rounds_.clear();
      // A bf16 load is unpacked once every copy's load has issued: the in-order VPU then waits
      // for the first load's latency once, not once per tile.
      if (node.kind == ExprNode::Kind::kLoad && inputs_[loads_.at(KeyOf(node))].geometry.element_bits == 16) {
        for (copy_ = 0; copy_ < copies; ++copy_) out_->Emit(isa::OPCODE_VUNPACK_LO_BF16, {V(Regs()[n]), V(Regs()[n])});
        if (inputs_[loads_.at(KeyOf(node))].buffer->shape.element_type == isa::ElementType::kF16) {
          std::vector<F16Emulation::Regs> regs(copies);
          for (copy_ = 0; copy_ < copies; ++copy_) regs[copy_] = F16Temps(Regs()[n], Regs()[n], false);
          F16().EmitWiden(*out_, regs);
          ReleaseF16Temps(regs);
        }
      }
      if (IsLaneBroadcast(n)) {
        for (copy_ = 0; copy_ < copies; ++copy_) out_->Emit(isa::OPCODE_VPERM, {V(Regs()[n]), V(Regs()[n]), V(zero_reg_)});
      }
      if (node.kind == ExprNode::Kind::kLoad && inputs_[loads_.at(KeyOf(node))].geometry.element_bits == 8) {
        for (copy_ = 0; copy_ < copies; ++copy_) {
          out_->Emit(isa::OPCODE_VSHL, {V(Regs()[n]), V(Regs()[n]), V(load_shift_reg_)});
          out_->Emit(node.type == isa::ElementType::kS8 ? isa::OPCODE_VSRA : isa::OPCODE_VSHR,
                     {V(Regs()[n]), V(Regs()[n]), V(c24_reg_)});
        }
        if (node.type == isa::ElementType::kPred) {
          // A pred byte is 0 or 1: the mask is set where it is not 0.
          for (copy_ = 0; copy_ < copies; ++copy_) {
            const int byte = Regs()[n];
            const int mask = AllocMask();
            out_->Emit(isa::OPCODE_VCMP_NE_S32, {M(mask), V(byte), V(zero_reg_)});
            vreg_used_[byte] = false;
            Regs()[n] = mask;
          }
        }
      }
    }
  }

  // The results of EmitPhased: mask the padding, pack, store; each step for every copy before
  // the next.
  void EmitPhasedStores(const std::vector<Variant>& variants) {
    const int copies = static_cast<int>(variants.size());
    // Results: mask the padding, pack bf16, store; each step for every copy before the next.
    for (std::size_t o = 0; o < outputs_.size(); ++o) {
      const Stream& s = outputs_[o];
      const bool packed = s.geometry.element_bits == 16;
      const bool packed8 = s.geometry.element_bits == 8;
      std::vector<int> values(copies);
      std::vector<int> temps(copies, -1);
      const bool pred = s.buffer->shape.element_type == isa::ElementType::kPred;
      // An f16 result stored once is rounded and packed in its own register (one vreg per tile
      // fewer: more tiles interleave, docs/validation.md).
      const int node = expr_.outputs[o];
      const bool f16_in_place = s.buffer->shape.element_type == isa::ElementType::kF16 && !pinned_.contains(node) &&
                                std::count(expr_.outputs.begin(), expr_.outputs.end(), node) == 1;
      for (copy_ = 0; copy_ < copies; ++copy_) {
        values[copy_] = Regs()[expr_.outputs[o]];
        const Variant variant = variants[copy_];
        if (!f16_in_place && (variant != kNone || packed || packed8)) temps[copy_] = AllocVreg();
        if (pred) {
          // The mask as bytes 0 and 1.
          out_->Emit(isa::OPCODE_VBCAST, {V(temps[copy_]), 1});
          out_->Emit(isa::OPCODE_VSEL, {V(temps[copy_]), M(values[copy_]), V(temps[copy_]), V(zero_reg_)});
          values[copy_] = temps[copy_];
        }
        if (variant != kNone) {
          const int mask = variant == kRow ? kRowMask : variant == kLane ? kLaneMask : kBothMask;
          const int into = temps[copy_] >= 0 ? temps[copy_] : values[copy_];
          out_->Emit(isa::OPCODE_VSEL, {V(into), M(mask), V(values[copy_]), V(zero_reg_)});
          values[copy_] = into;
        }
      }
      if (s.buffer->shape.element_type == isa::ElementType::kF16) {
        // f32 -> f16 in register form: vpack.bf16 then packs it unchanged (f16_emulation.h).
        std::vector<F16Emulation::Regs> regs(copies);
        for (copy_ = 0; copy_ < copies; ++copy_) {
          const int into = temps[copy_] >= 0 ? temps[copy_] : values[copy_];
          regs[copy_] = F16Temps(into, values[copy_], true);
        }
        F16().EmitNarrow(*out_, regs);
        ReleaseF16Temps(regs);
        for (copy_ = 0; copy_ < copies; ++copy_) values[copy_] = regs[copy_].d;
      }
      if (packed) {
        for (copy_ = 0; copy_ < copies; ++copy_) {
          const int into = temps[copy_] >= 0 ? temps[copy_] : values[copy_];
          out_->Emit(isa::OPCODE_VPACK_BF16, {V(into), V(values[copy_]), V(values[copy_])});
          values[copy_] = into;
        }
      }
      if (packed8) {
        EmitStore8(s, values, temps);
      } else {
        for (copy_ = 0; copy_ < copies; ++copy_) {
          out_->Add(isa::MakeInstruction(isa::OPCODE_VST, {V(values[copy_]), TileAddress(s)}, HalfTileKeywords(packed)));
        }
      }
      for (copy_ = 0; copy_ < copies; ++copy_) {
        if (temps[copy_] >= 0) vreg_used_[temps[copy_]] = false;
      }
    }
    for (copy_ = 0; copy_ < copies; ++copy_) {
      for (int output : expr_.outputs) Release(output);
    }
  }

  // Whether EmitScheduled orders the body: f16 values, s8 and u8 values and 8-bit results
  // convert in multi-instruction steps that EmitPhased interleaves over the copies. Loaded pred
  // arrays (a causal mask) are scheduled: their load and their widening to a mask are a value's
  // two steps (EmitCompute, EmitFinish), as a bf16 load's unpack is.
  bool ScheduledBody() {
    if (uses_f16_) return false;
    for (const ExprNode& node : expr_.nodes) {
      if (Is8Bit(node.type)) return false;
    }
    for (const Stream* s : AllStreams()) {
      if (s->buffer->shape.element_type == isa::ElementType::kF16) return false;
    }
    for (const Stream& s : outputs_) {
      if (s.geometry.element_bits == 8) return false;
    }
    return true;
  }

  // Per node: whether a strip's tiles share it, its first tile computing it for all: a lane
  // broadcast, and an operation (not a mask) on such values and pinned scalars and constants only
  // (a row statistic's chain, compiler/passes/lane_broadcast_sinking.h), which has the same value
  // in every tile of the strip.
  std::vector<bool> StripShared(const std::vector<int>& last_use) const {
    std::vector<bool> shared(expr_.nodes.size(), false);
    for (std::size_t n = 0; n < expr_.nodes.size(); ++n) {
      const ExprNode& node = expr_.nodes[n];
      if (last_use[n] < 0) continue;
      if (node.kind == ExprNode::Kind::kLoad) {
        shared[n] = IsLaneBroadcast(static_cast<int>(n));
        continue;
      }
      // An iota along a dim other than the lanes' has one value per row.
      if (node.kind == ExprNode::Kind::kRowFold ||
          (node.kind == ExprNode::Kind::kIota && node.bits + 1 < static_cast<uint32_t>(node.hlo->shape().rank()))) {
        shared[n] = true;
        continue;
      }
      const bool operation = node.kind == ExprNode::Kind::kOp && DomainOf(node.type) != Domain::kPred;
      if (!operation || pinned_.contains(static_cast<int>(n))) continue;
      bool any = false, all = true;
      for (int i : node.inputs) {
        any = any || shared[i];
        all = all && (shared[i] || pinned_.contains(i));
      }
      shared[n] = any && all;
    }
    return shared;
  }

  // Whether a strip's tiles share an operation (not only a lane broadcast's load); `shared` is
  // StripShared's.
  bool SharesOperations(const std::vector<bool>& shared) const {
    for (std::size_t n = 0; n < expr_.nodes.size(); ++n) {
      if (shared[n] && expr_.nodes[n].kind != ExprNode::Kind::kLoad) return true;
    }
    return false;
  }

  // A shared value computed by tile `copy` is in the same register for the strip's later tiles.
  void ShareWithStrip(int copy, int n, int copies, const std::vector<std::vector<ScheduledValue>>& values) {
    for (int c = copy + 1; c < copies && values[c][n].owner == copy; ++c) regs_[c][n] = regs_[copy][n];
  }

  // Whether node n loads a broadcast the kernel replicates along the lanes.
  bool IsLaneBroadcast(int n) const {
    const ExprNode& node = expr_.nodes[n];
    return node.kind == ExprNode::Kind::kLoad && inputs_[loads_.at(KeyOf(node))].lanes_in_registers;
  }

  VpuSlot SlotOf(const ExprNode& node) const {
    if (node.kind == ExprNode::Kind::kLoad) return VpuSlot::kLoadStore;
    if (node.kind == ExprNode::Kind::kRowFold) return VpuSlot::kCrossLane;
    switch (node.hlo->opcode()) {
      case Opcode::kExp: case Opcode::kLog: case Opcode::kRsqrt: case Opcode::kSqrt: case Opcode::kTanh:
      case Opcode::kLogistic: case Opcode::kSin: case Opcode::kCos: case Opcode::kPower:
        return VpuSlot::kTranscendental;
      default:
        return VpuSlot::kElementwise;
    }
  }

  // The live nodes (last_use >= 0) in an order where each comes after its inputs (`inputs`: each
  // node's distinct inputs) and, of those whose inputs are placed, the one with the longest chain
  // of latencies to the end of the expression goes first (lowest index on ties): a list
  // scheduler's critical-path priority. A lane broadcast's load and cross-lane spread (and an
  // exp's operand) then start before the cheap operations that do not wait for them.
  std::vector<int> CriticalOrder(const std::vector<std::vector<int>>& inputs, const std::vector<int>& last_use) const {
    const int end = static_cast<int>(expr_.nodes.size());
    const VpuTiming& timing = c_.options.vpu_timing;
    const auto latency = [&](VpuSlot slot) { return timing.slots[static_cast<int>(slot)].latency_cycles; };
    std::vector<double> tail(end, 0);
    for (int n = end - 1; n >= 0; --n) {
      if (last_use[n] < 0) continue;
      tail[n] += latency(SlotOf(expr_.nodes[n])) + (IsLaneBroadcast(n) ? latency(VpuSlot::kCrossLane) : 0);
      for (int i : inputs[n]) tail[i] = std::max(tail[i], tail[n]);
    }
    std::vector<int> waiting(end, 0);
    std::vector<std::vector<int>> readers(end);
    for (int n = 0; n < end; ++n) {
      if (last_use[n] < 0) continue;
      waiting[n] = static_cast<int>(inputs[n].size());
      for (int i : inputs[n]) readers[i].push_back(n);
    }
    std::vector<int> order;
    std::vector<bool> placed(end, false);
    while (true) {
      int best = -1;
      for (int n = 0; n < end; ++n) {
        if (last_use[n] < 0 || placed[n] || waiting[n] > 0) continue;
        if (best < 0 || tail[n] > tail[best]) best = n;
      }
      if (best < 0) break;
      placed[best] = true;
      order.push_back(best);
      for (int r : readers[best]) --waiting[r];
    }
    return order;
  }

  // `variants.size()` tiles computed and stored in the order the in-order VPU issues soonest.
  // Each tile's steps (an operation, a bf16 rounding or unpack, a result's masking and packing,
  // its store) go in its own order, the nodes' longest chains of latency first (CriticalOrder);
  // each step emits, of the tiles' next steps, the one VpuIssueClock says issues first (on ties
  // the lowest rank, position + tile: a wavefront in which tile t is a node behind tile t - 1).
  // So a tile's cheap operations fill the cycles another tile's transcendental result is in
  // flight, and tiles' stores overlap later tiles' loads, where in the phase order every operation
  // after an exp waited for its tile's result in turn. Tiles begin in order, at most
  // max_in_flight_ at a time: each holds at most one tile's peak of registers (its steps go in the
  // same order as alone), so the body never needs more than max_in_flight_ times that.
  void EmitScheduled(const std::vector<Variant>& variants, const std::vector<int>& last_use) {
    const int copies = static_cast<int>(variants.size());
    const int end = static_cast<int>(expr_.nodes.size());
    const int outputs = static_cast<int>(outputs_.size());
    using Value = ScheduledValue;
    std::vector<std::vector<int>> inputs(end);  // distinct
    std::vector<int> readers(end, 0);
    // Of those, the readers that every tile computes: a tile that shares a strip's value (not its
    // first) still reads it from these, not from shared ones, which only the strip's first computes.
    std::vector<int> tile_readers(end, 0);
    const std::vector<bool> shared = StripShared(last_use);
    for (int n = 0; n < end; ++n) {
      if (last_use[n] < 0) continue;
      std::set<int> distinct(expr_.nodes[n].inputs.begin(), expr_.nodes[n].inputs.end());
      inputs[n].assign(distinct.begin(), distinct.end());
      for (int i : inputs[n]) {
        ++readers[i];
        if (!shared[n]) ++tile_readers[i];
      }
    }
    for (int output : expr_.outputs) {
      ++readers[output];
      ++tile_readers[output];
    }
    // values[c][n] for nodes; values[c][end + o] for result o's masked and packed copy.
    std::vector<std::vector<Value>> values(copies, std::vector<Value>(end + outputs));
    const std::vector<int> order = CriticalOrder(inputs, last_use);
    using Kind = ScheduledStep::Kind;
    using Step = ScheduledStep;
    // Each copy's steps in its own order: its nodes' operations (and roundings), then its stores.
    std::vector<std::vector<Step>> steps(copies);
    for (int c = 0; c < copies; ++c) {
      for (std::size_t position = 0; position < order.size(); ++position) {
        const int n = order[position];
        const int rank = static_cast<int>(position) + c;
        Value& v = values[c][n];
        v.readers = readers[n];
        if (pinned_.contains(n)) {
          regs_[c][n] = pinned_.at(n);
          v.issued = v.done = true;
          continue;
        }
        if (shared[n] && c % shared_tiles_ != 0) {
          // A tile of the strip of tile `owner`: that tile's value is this one's too, its
          // register held until every tile of the strip has read it.
          v.owner = c - c % shared_tiles_;
          values[v.owner][n].readers += tile_readers[n];
          v.readers = 0;
          continue;
        }
        steps[c].push_back({rank, c, Kind::kCompute, n});
        steps[c].push_back({rank, c, Kind::kFinish, n});
      }
      for (int o = 0; o < outputs; ++o) {
        if (NeedsPrepare(o, variants[c])) steps[c].push_back({end + c, c, Kind::kPrepare, o});
        steps[c].push_back({end + c, c, Kind::kStore, o});
      }
    }
    // A value as copy c reads it: its own, or the strip's shared lane broadcast.
    const auto value_of = [&](int c, int n) -> Value& {
      Value& v = values[c][n];
      return v.owner >= 0 ? values[v.owner][n] : v;
    };
    // A strip fold adds a strip's tiles in order: each after the one before it in the body
    // (fold_strip_tiles_: of its strip).
    std::vector<bool> stored(copies, false);
    // Whether step's inputs are computed (a copy's own are, its steps going in its order; a shared
    // one may not be yet), and when they are ready.
    const auto computed = [&](const Step& step) {
      // A result the strip shares may be its first tile's, not computed yet.
      if ((step.kind == Kind::kPrepare || step.kind == Kind::kStore) &&
          !value_of(step.copy, expr_.outputs[step.index]).done) {
        return false;
      }
      if (step.kind == Kind::kStore && fold_ != nullptr) {
        const bool strip_start = fold_strip_tiles_ > 0 ? step.copy % fold_strip_tiles_ == 0 : step.copy == 0;
        return strip_start || stored[step.copy - 1];
      }
      if (step.kind != Kind::kCompute) return true;
      for (int i : inputs[step.index]) {
        const auto [first, end] = FoldedCopies(step);
        for (int c = first; c < end; ++c) {
          if (!value_of(c, i).done) return false;
        }
      }
      return true;
    };
    const auto sources = [&](const Step& step) {
      double ready = 0;
      const std::vector<Value>& v = values[step.copy];
      switch (step.kind) {
        case Kind::kCompute:
          for (int i : inputs[step.index]) {
            const auto [first, end] = FoldedCopies(step);
            for (int c = first; c < end; ++c) ready = std::max(ready, value_of(c, i).ready);
          }
          break;
        case Kind::kFinish:
          ready = v[step.index].ready;
          break;
        case Kind::kPrepare:
          ready = value_of(step.copy, expr_.outputs[step.index]).ready;
          break;
        case Kind::kStore:
          ready = v[end + step.index].issued ? v[end + step.index].ready
                                             : value_of(step.copy, expr_.outputs[step.index]).ready;
          break;
      }
      return ready;
    };
    const auto slot = [&](const Step& step) {
      if (step.kind == Kind::kCompute) return SlotOf(expr_.nodes[step.index]);
      if (step.kind == Kind::kFinish && IsLaneBroadcast(step.index)) return VpuSlot::kCrossLane;
      return step.kind == Kind::kStore && fold_ == nullptr ? VpuSlot::kLoadStore : VpuSlot::kElementwise;
    };
    VpuIssueClock clock(c_.options.vpu_timing);
    std::map<int, int> strip_folds;  // a strip of the body (fold_strip_tiles_) -> its fold's register
    std::vector<std::size_t> next(copies, 0);  // each copy's next step
    int started = 0;                           // copies 0 .. started - 1 have begun
    int in_flight = 0;                         // begun and not yet stored
    // The next strip's first tile may compute its shared values (a row statistic's chain, a
    // lane broadcast) before it begins: their latency (a cross-lane spread, a square root) then
    // passes while the strip before computes, where the strip's tiles would all wait for it.
    // ChooseCopies keeps a tile's peak of registers for it.
    const bool ahead = SharesOperations(shared);
    while (true) {
      const Step* best = nullptr;
      double best_issue = 0;
      const int early = ahead ? started + (shared_tiles_ - started % shared_tiles_) % shared_tiles_ : -1;
      for (int c = 0; c < std::min(copies, std::max(started, early) + 1); ++c) {
        const bool admitted = c < started || (c == started && in_flight < max_in_flight_);
        if (!admitted && c != early) continue;
        while (next[c] < steps[c].size() && Skipped(steps[c][next[c]], values)) ++next[c];
        if (next[c] == steps[c].size()) continue;
        const Step& step = steps[c][next[c]];
        if (!computed(step)) continue;
        if (!admitted && (step.kind == Kind::kPrepare || step.kind == Kind::kStore || !shared[step.index])) continue;
        const double issue = clock.EarliestIssue(slot(step), sources(step));
        if (best == nullptr || issue < best_issue || (issue == best_issue && step.rank < best->rank)) {
          best = &step;
          best_issue = issue;
        }
      }
      if (best == nullptr) break;
      const Step& step = *best;
      if (step.copy == started && in_flight < max_in_flight_) {
        ++started;
        ++in_flight;
      }
      if (++next[step.copy] == steps[step.copy].size()) --in_flight;
      const double ready = sources(step);
      copy_ = step.copy;
      std::vector<Value>& v = values[step.copy];
      const std::size_t before = out_->instruction_count();
      switch (step.kind) {
        case Kind::kCompute: {
          Value& value = v[step.index];
          if (expr_.nodes[step.index].kind == ExprNode::Kind::kRowFold) {
            value.ready = EmitRowFold(step, values, clock, ready);
            ShareWithStrip(step.copy, step.index, copies, values);
            break;
          }
          if (EmitCompute(step.index, v)) {
            value.ready = ready;  // took over its input's register: no instruction
            ShareWithStrip(step.copy, step.index, copies, values);
            break;
          }
          const ExprNode& node = expr_.nodes[step.index];
          if (node.kind == ExprNode::Kind::kLoad && inputs_[loads_.at(KeyOf(node))].geometry.element_bits == 8) {
            // EmitLoad8: a load per word row of four sublanes' bytes, OR-ed together.
            const int64_t word_rows = WordRows8();
            value.ready = ready;
            for (int64_t w = 0; w < word_rows; ++w) value.ready = clock.IssueLoad(ready, static_cast<double>(lanes_ * 4 * 4));
            if (word_rows > 1) value.ready = clock.Issue(VpuSlot::kElementwise, value.ready, static_cast<int>(word_rows - 1));
          } else if (node.kind == ExprNode::Kind::kLoad) {
            const Stream& s = inputs_[loads_.at(KeyOf(node))];
            value.ready = clock.IssueLoad(ready, static_cast<double>(sublanes_ * lanes_ * s.geometry.element_bits / 8));
          } else {
            value.ready = clock.Issue(slot(step), ready, static_cast<int>(out_->instruction_count() - before));
          }
          for (int i : inputs[step.index]) {
            if (--value_of(step.copy, i).readers == 0) Release(i);
          }
          if (value.done) ShareWithStrip(step.copy, step.index, copies, values);
          break;
        }
        case Kind::kFinish:
          EmitFinish(step.index);
          v[step.index].ready = clock.Issue(slot(step), ready, static_cast<int>(out_->instruction_count() - before));
          v[step.index].done = true;
          ShareWithStrip(step.copy, step.index, copies, values);
          break;
        case Kind::kPrepare: {
          const int o = step.index;
          Value& prepared = v[end + o];
          prepared.stored = EmitPrepare(o, variants[step.copy]);
          prepared.ready = clock.Issue(slot(step), ready, static_cast<int>(out_->instruction_count() - before));
          prepared.issued = prepared.done = true;
          if (--value_of(step.copy, expr_.outputs[o]).readers == 0) Release(expr_.outputs[o]);
          break;
        }
        case Kind::kStore: {
          const int o = step.index;
          const Stream& s = outputs_[o];
          Value& prepared = v[end + o];
          const int reg = prepared.issued ? prepared.stored : Regs()[expr_.outputs[o]];
          stored[step.copy] = true;
          if (fold_ != nullptr) {
            EmitFoldStore(step.copy, copies, prepared, value_of(step.copy, expr_.outputs[o]), strip_folds);
            clock.Issue(slot(step), ready, static_cast<int>(out_->instruction_count() - before));
            break;
          }
          out_->Add(isa::MakeInstruction(isa::OPCODE_VST, {V(reg), TileAddress(s)},
                                         HalfTileKeywords(s.geometry.element_bits == 16)));
          clock.Issue(slot(step), ready, 1);
          if (prepared.issued) {
            vreg_used_[reg] = false;
          } else if (--value_of(step.copy, expr_.outputs[o]).readers == 0) {
            Release(expr_.outputs[o]);
          }
          break;
        }
      }
    }
    for (int c = 0; c < copies; ++c) {
      while (next[c] < steps[c].size() && Skipped(steps[c][next[c]], values)) ++next[c];
      if (next[c] < steps[c].size()) CannotLower(c_.instruction, "internal: the element-wise body's schedule left steps out");
    }
    copy_ = 0;
  }

  // The copies [first, end) whose input values a step reads: its own, or, for a row fold, each
  // tile of its strip (the step's copy is the strip's first).
  std::pair<int, int> FoldedCopies(const ScheduledStep& step) const {
    const bool fold = step.kind == ScheduledStep::Kind::kCompute && expr_.nodes[step.index].kind == ExprNode::Kind::kRowFold;
    return {step.copy, step.copy + (fold ? shared_tiles_ : 1)};
  }

  // Row fold `step.index` for the strip whose first tile is `step.copy`: its tiles' values folded
  // in order, then each row across its lanes with the result in every lane (vredb), as the reduce
  // kernel folds a strip (so the results are the same); an add from +0, the reduce's init, and a
  // bf16 sum rounded once.
  // Returns when the value is ready.
  double EmitRowFold(const ScheduledStep& step, std::vector<std::vector<ScheduledValue>>& values, VpuIssueClock& clock,
                     double ready) {
    const ExprNode& node = expr_.nodes[step.index];
    const int input = node.inputs.at(0);
    const hlo::ReduceOp op = *hlo::ReducerOpOf(*node.hlo);
    const isa::Opcode combine = op == hlo::ReduceOp::kAdd       ? isa::OPCODE_VADD_F32
                                : op == hlo::ReduceOp::kMaximum ? isa::OPCODE_VMAX_F32
                                                                : isa::OPCODE_VMIN_F32;
    const isa::Opcode across = op == hlo::ReduceOp::kAdd       ? isa::OPCODE_VREDB_ADD_F32
                               : op == hlo::ReduceOp::kMaximum ? isa::OPCODE_VREDB_MAX_F32
                                                               : isa::OPCODE_VREDB_MIN_F32;
    // Each tile's value is in its register (a strip-shared one in every tile's: ShareWithStrip).
    const auto [first, end] = FoldedCopies(step);
    copy_ = step.copy;
    const int d = AllocVreg();
    Regs()[step.index] = d;
    // A row that ends in padding lanes: its last tile's padding lanes hold the fold's identity
    // (an add's +0, a maximum's -inf, a minimum's +inf), as the reduce kernel's do, so whatever
    // the chain computed there (an exponential of stale bytes) folds into nothing.
    int last = regs_[end - 1][input];
    int identity = -1;
    if (grid_.partial_lanes != 0) {
      if (op == hlo::ReduceOp::kAdd) {
        identity = zero_reg_;
      } else {
        identity = AllocVreg();
        out_->Emit(isa::OPCODE_VBCAST, {V(identity), op == hlo::ReduceOp::kMaximum ? 0xff800000u : 0x7f800000u});
      }
      const int padded = identity == zero_reg_ ? AllocVreg() : identity;
      out_->Emit(isa::OPCODE_VSEL, {V(padded), M(kLaneMask), V(last), V(identity)});
      last = padded;
    }
    int folded = end - 1 == first ? last : regs_[first][input];
    for (int c = first + 1; c < end; ++c) {
      out_->Emit(combine, {V(d), V(folded), V(c == end - 1 ? last : regs_[c][input])});
      folded = d;
    }
    if (last != regs_[end - 1][input]) vreg_used_[last] = false;
    out_->Emit(across, {V(d), V(folded)});
    const bool add = op == hlo::ReduceOp::kAdd;
    if (add) out_->Emit(isa::OPCODE_VADD_F32, {V(d), V(d), V(zero_reg_)});
    // A bf16 sum is rounded once (a maximum or minimum of bf16 values is one of them).
    const bool rounds = add && node.type == isa::ElementType::kBF16;
    if (rounds) out_->Emit(isa::OPCODE_VCVT_BF16_F32, {V(d), V(d)});
    std::set<int> owners;  // each distinct value read once (a strip-shared input is one)
    for (int c = first; c < end; ++c) owners.insert(values[c][input].owner >= 0 ? values[c][input].owner : c);
    for (int c : owners) {
      copy_ = c;
      if (--values[c][input].readers == 0) Release(input);
    }
    copy_ = step.copy;
    ScheduledValue& value = values[step.copy][step.index];
    value.issued = value.done = true;
    const int pads = grid_.partial_lanes == 0 ? 0 : op == hlo::ReduceOp::kAdd ? 1 : 2;
    double at = clock.Issue(VpuSlot::kElementwise, ready, end - first - 1 + pads);
    at = clock.Issue(VpuSlot::kCrossLane, at, 1);
    return add ? clock.Issue(VpuSlot::kElementwise, at, rounds ? 2 : 1) : at;
  }

  // A strip fold's step for tile `copy` of the body (ProducerSink::fold): the strip's first tile
  // starts its fold (its register taken over where nothing else reads it), the others fold into
  // it; the strip's last tile stores the fold, one f32 tile, at the strip's place (kFoldOffset).
  // A strip that spans bodies folds in fold_acc_reg_ from the identity (EmitStrips).
  void EmitFoldStore(int copy, int copies, ScheduledValue& prepared, ScheduledValue& value, std::map<int, int>& folds) {
    const int output = expr_.outputs[0];
    const int reg = prepared.issued ? prepared.stored : Regs()[output];
    const int tiles = fold_strip_tiles_;
    const bool first = tiles > 0 && copy % tiles == 0;
    const bool ends = tiles > 0 ? copy % tiles == tiles - 1 : fold_strip_ends_ && copy == copies - 1;
    int fold = tiles > 0 && !first ? folds.at(copy / tiles) : fold_acc_reg_;
    bool release = true;
    if (first) {
      const bool own = prepared.issued ||
                       (value.readers == 1 && value.owner < 0 && !pinned_.contains(output) && !aliases_.contains(reg));
      if (own) {
        fold = reg;
        release = false;
        if (!prepared.issued) value.readers = 0;
      } else {
        fold = AllocVreg();
        out_->Emit(isa::OPCODE_VMOV, {V(fold), V(reg)});
      }
      folds[copy / tiles] = fold;
    } else {
      out_->Emit(fold_->op, {V(fold), V(fold), V(reg)});
    }
    if (release) {
      if (prepared.issued) {
        vreg_used_[reg] = false;
      } else if (--value.readers == 0) {
        Release(output);
      }
    }
    if (ends) {
      out_->Emit(isa::OPCODE_VST, {V(fold), Vmem(S(kFoldOffset), static_cast<int64_t>(outputs_[0].vmem[buffer_]))});
      out_->Emit(isa::OPCODE_ADD, {S(kFoldOffset), S(kFoldOffset), sublanes_ * lanes_ * 4});
      if (tiles > 0) vreg_used_[fold] = false;
    }
  }

  // A finish step its value turned out not to need.
  static bool Skipped(const ScheduledStep& step, const std::vector<std::vector<ScheduledValue>>& values) {
    if (step.kind != ScheduledStep::Kind::kFinish) return false;
    const ScheduledValue& v = values[step.copy][step.index];
    return v.issued && !v.finish;
  }

  // Whether result o's store reads a masked or packed copy of its value.
  bool NeedsPrepare(int o, Variant variant) const {
    return variant != kNone || (outputs_[o].geometry.element_bits == 16 && fold_ == nullptr);
  }

  // Result o's value for the current copy masked to zero in the padding (`variant`) and packed to
  // bf16, into a register of its own; returns that register.
  int EmitPrepare(int o, Variant variant) {
    const Stream& s = outputs_[o];
    int value = Regs()[expr_.outputs[o]];
    const int into = AllocVreg();
    if (variant != kNone) {
      const int mask = variant == kRow ? kRowMask : variant == kLane ? kLaneMask : kBothMask;
      out_->Emit(isa::OPCODE_VSEL, {V(into), M(mask), V(value), V(zero_reg_)});
      value = into;
    }
    if (s.geometry.element_bits == 16 && fold_ == nullptr) out_->Emit(isa::OPCODE_VPACK_BF16, {V(into), V(value), V(value)});
    return into;
  }

  // Node n's operation for the current copy (a load or an operation), recording whether a
  // rounding or unpack is to follow; or, for a convert that is its input's last reader and
  // keeps its register form, nothing: n takes over the register (returns true).
  bool EmitCompute(int n, std::vector<ScheduledValue>& values) {
    const ExprNode& node = expr_.nodes[n];
    ScheduledValue& value = values[n];
    const int kept_source = KeptRegisterSource(n);
    if (kept_source >= 0 && values[kept_source].readers == 1) {
      // The register is n's now: its input is not released.
      Regs()[n] = Regs()[kept_source];
      values[kept_source].readers = 0;
      value.issued = value.done = true;
      return true;
    }
    if (kept_source >= 0 && !pinned_.contains(kept_source)) {
      // Its input is read by others too: both name one register (nothing writes a value's
      // register after its value is done), freed when both are released. Layer norm's f32 view
      // of x, folded into the mean while x itself is read again: 6 copies and registers a strip.
      Regs()[n] = Regs()[kept_source];
      ++aliases_[Regs()[n]];
      --values[kept_source].readers;
      value.issued = value.done = true;
      return true;
    }
    if (node.kind == ExprNode::Kind::kLoad) {
      const Stream& s = inputs_[loads_.at(KeyOf(node))];
      const int r = AllocVreg();
      if (s.geometry.element_bits == 8) {
        EmitLoad8(s, r);
      } else {
        out_->Add(isa::MakeInstruction(isa::OPCODE_VLD, {V(r), TileAddress(s)},
                                       HalfTileKeywords(s.geometry.element_bits != 32)));
      }
      Regs()[n] = r;
      value.finish = s.geometry.element_bits != 32 || s.lanes_in_registers;
    } else if (node.kind == ExprNode::Kind::kIota) {
      Regs()[n] = EmitIota(node);
      value.finish = false;
    } else {
      EmitOp(n);
      value.finish = !pending_bf16_rounds_.empty();
      pending_bf16_rounds_.clear();
    }
    value.issued = true;
    value.done = !value.finish;
    return false;
  }

  // Iota `node`'s values in the current copy's tile (CheckStripBodies: the body is whole strips,
  // kIotaStrip the index of its first): along the lanes, the tile's first column plus each lane's
  // index; along the rows of a matrix, the strip's first row plus each sublane's; along a major
  // dim, the matrix's index in that dim, from the strip's by scalar division. Then converted to
  // the iota's type (exact in f32 below 2^24; bf16 rounds as XLA's iota does).
  int EmitIota(const ExprNode& node) {
    const isa::Shape& shape = node.hlo->shape();
    const int64_t rank = shape.rank();
    const int64_t dim = node.bits;
    const int tile = copy_ % shared_tiles_;
    const int strip = copy_ / shared_tiles_;
    const int d = AllocVreg();
    const auto add_ids = [&](isa::Opcode ids) {
      const int t = AllocVreg();
      out_->Emit(ids, {V(t)});
      out_->Emit(isa::OPCODE_VADD_S32, {V(d), V(d), V(t)});
      vreg_used_[t] = false;
    };
    if (dim == rank - 1 && (pieces_ > 1 || grid_.strip_tiles > copies_)) {
      // A strip in several bodies: the body's first column tile is iota_column_tile_, plus, in
      // the tile loop, copies_ tiles for each iteration done (the count minus kTileCounter's).
      const int64_t first = (iota_column_tile_ + tile) * lanes_;
      if (iota_loop_count_ > 0) {
        out_->Emit(isa::OPCODE_MOV, {S(kScalarTemp), iota_loop_count_});
        out_->Emit(isa::OPCODE_SUB, {S(kScalarTemp), S(kScalarTemp), S(kTileCounter)});
        out_->Emit(isa::OPCODE_MUL, {S(kScalarTemp), S(kScalarTemp), copies_ * lanes_});
        out_->Emit(isa::OPCODE_ADD, {S(kScalarTemp), S(kScalarTemp), first});
        out_->Emit(isa::OPCODE_VBCAST, {V(d), S(kScalarTemp)});
      } else {
        out_->Emit(isa::OPCODE_VBCAST, {V(d), first});
      }
      add_ids(isa::OPCODE_VLANEID);
    } else if (dim == rank - 1 && tile == 0) {
      out_->Emit(isa::OPCODE_VLANEID, {V(d)});
    } else if (dim == rank - 1) {
      out_->Emit(isa::OPCODE_VBCAST, {V(d), tile * lanes_});
      add_ids(isa::OPCODE_VLANEID);
    } else {
      out_->Emit(isa::OPCODE_ADD, {S(kScalarTemp), S(kIotaStrip), strip});
      if (dim == rank - 2) {
        out_->Emit(isa::OPCODE_REM, {S(kScalarTemp), S(kScalarTemp), grid_.strips_per_matrix});
        out_->Emit(isa::OPCODE_MUL, {S(kScalarTemp), S(kScalarTemp), sublanes_});
        out_->Emit(isa::OPCODE_VBCAST, {V(d), S(kScalarTemp)});
        add_ids(isa::OPCODE_VSUBLANEID);
      } else {
        int64_t inner = 1;  // matrices per step of `dim`
        for (int64_t k = dim + 1; k < rank - 2; ++k) inner *= shape.dims[k];
        out_->Emit(isa::OPCODE_DIV, {S(kScalarTemp), S(kScalarTemp), grid_.strips_per_matrix * inner});
        out_->Emit(isa::OPCODE_REM, {S(kScalarTemp), S(kScalarTemp), shape.dims[dim]});
        out_->Emit(isa::OPCODE_VBCAST, {V(d), S(kScalarTemp)});
      }
    }
    if (DomainOf(node.type) == Domain::kFloat) out_->Emit(isa::OPCODE_VCVT_F32_S32, {V(d), V(d)});
    if (node.type == isa::ElementType::kBF16) out_->Emit(isa::OPCODE_VCVT_BF16_F32, {V(d), V(d)});
    return d;
  }

  // A scheduled value's second step: a bf16 load's unpack, a lane broadcast's replication and a
  // pred load's widening to a mask (each row's byte shifted out, as EmitPhased does), or a bf16
  // operation's rounding.
  void EmitFinish(int n) {
    const ExprNode& node = expr_.nodes[n];
    if (node.kind == ExprNode::Kind::kLoad) {
      const Stream& s = inputs_[loads_.at(KeyOf(node))];
      if (s.geometry.element_bits == 16) out_->Emit(isa::OPCODE_VUNPACK_LO_BF16, {V(Regs()[n]), V(Regs()[n])});
      if (s.lanes_in_registers) out_->Emit(isa::OPCODE_VPERM, {V(Regs()[n]), V(Regs()[n]), V(zero_reg_)});
      if (s.geometry.element_bits == 8) {
        const int byte = Regs()[n];
        out_->Emit(isa::OPCODE_VSHL, {V(byte), V(byte), V(load_shift_reg_)});
        out_->Emit(isa::OPCODE_VSHR, {V(byte), V(byte), V(c24_reg_)});
        // A pred byte is 0 or 1: the mask is set where it is not 0.
        const int mask = AllocMask();
        out_->Emit(isa::OPCODE_VCMP_NE_S32, {M(mask), V(byte), V(zero_reg_)});
        vreg_used_[byte] = false;
        Regs()[n] = mask;
      }
    } else {
      out_->Emit(isa::OPCODE_VCVT_BF16_F32, {V(Regs()[n]), V(Regs()[n])});
    }
  }

  // The 32-bit rows an 8-bit tile's bytes fill: four sublanes' bytes a word.
  int64_t WordRows8() const { return sublanes_ / 4; }

  // An 8-bit tile into `r` as 32-bit words, row s still in byte s%4 (the caller shifts it out):
  // sublanes 4w..4w+3 all read word row w (stride 0), one load per word row, OR-ed together.
  void EmitLoad8(const Stream& s, int r) {
    const int64_t word_rows = WordRows8();
    const int t = word_rows > 1 ? AllocVreg() : -1;
    for (int64_t w = 0; w < word_rows; ++w) {
      const uint64_t mask = uint64_t{0xf} << (4 * w);
      out_->Emit(isa::OPCODE_VLD, {V(w == 0 ? r : t), TileAddressAt(s, w * lanes_ * 4)},
                 {{"stride", 0}, {"sublanes", Bits(mask)}});
      if (w > 0) out_->Emit(isa::OPCODE_VOR, {V(r), V(r), V(t)});
    }
    if (t >= 0) vreg_used_[t] = false;
  }

  // Packs each copy's 32-bit values (low byte kept) into an 8-bit tile: row s's byte shifted to
  // 8*(s%4), stored to the scratch tile, then word row w = OR over j < 4 of scratch row 4w + j,
  // read for every w at once by a stride-4 load from row j.
  void EmitStore8(const Stream& s, const std::vector<int>& values, const std::vector<int>& temps) {
    const int copies = static_cast<int>(values.size());
    const int64_t tile = sublanes_ * lanes_ * 4;
    const int64_t word_rows = WordRows8();
    const uint64_t rows_mask = (uint64_t{1} << word_rows) - 1;
    for (copy_ = 0; copy_ < copies; ++copy_) {
      out_->Emit(isa::OPCODE_VAND, {V(temps[copy_]), V(values[copy_]), V(c255_reg_)});
      out_->Emit(isa::OPCODE_VSHL, {V(temps[copy_]), V(temps[copy_]), V(store_shift_reg_)});
      out_->Emit(isa::OPCODE_VST, {V(temps[copy_]), Vmem(static_cast<int64_t>(pack_scratch_ + copy_ * tile))});
    }
    const int part = AllocVreg();
    for (copy_ = 0; copy_ < copies; ++copy_) {
      for (int64_t j = 0; j < 4; ++j) {
        out_->Emit(isa::OPCODE_VLD,
                   {V(j == 0 ? temps[copy_] : part), Vmem(static_cast<int64_t>(pack_scratch_ + copy_ * tile + j * lanes_ * 4))},
                   {{"stride", 4}, {"sublanes", Bits(rows_mask)}});
        if (j > 0) out_->Emit(isa::OPCODE_VOR, {V(temps[copy_]), V(temps[copy_]), V(part)});
      }
      out_->Emit(isa::OPCODE_VST, {V(temps[copy_]), TileAddress(s)}, {{"sublanes", Bits(rows_mask)}});
    }
    vreg_used_[part] = false;
  }

  // Phase order: the most tiles (up to 8) whose interleaved body fits in the registers.
  // Scheduled: kScheduledTiles, as many in flight as one tile's peak of registers allows.
  // `planning`: only whether the kernel lowers (row folds: the fewest tiles in flight fit).
  int ChooseCopies(bool planning = false) {
    if (ScheduledBody()) {
      max_in_flight_ = 1;
      if (!BodyFits(1)) CannotLower(c_.instruction, "its expression needs more registers than the machine has");
      const int free_masks = kMaskRegisters - std::max(kFirstTempMask, next_pinned_mask_);
      // A strip's shared operations computed ahead (EmitScheduled) hold at most a tile's peak.
      max_in_flight_ = std::max(1, first_pinned_ / std::max(1, peak_vregs_) -
                                        (SharesOperations(StripShared(LastUses())) ? 1 : 0));
      if (peak_masks_ > 0) max_in_flight_ = std::max(1, std::min(max_in_flight_, free_masks / peak_masks_));
      if (fold_ != nullptr) {
        // Strip folds live beside the tiles in flight: one for each strip those tiles touch, one
        // for a strip whose first tile is stored before the others begin, one spare.
        const int tiles = static_cast<int>(std::min<int64_t>(grid_.strip_tiles, kScheduledTiles));
        const auto registers = [&](int in_flight) {
          return in_flight * std::max(1, peak_vregs_) + (in_flight + tiles - 1) / tiles + 2;
        };
        while (max_in_flight_ > 1 && registers(max_in_flight_) > first_pinned_) --max_in_flight_;
      }
      if (row_folds_) ChooseRowFoldInFlight(planning);
      return kScheduledTiles;
    }
    int copies = 8;
    while (copies > 1 && !BodyFits(copies)) --copies;
    return copies;
  }

  // With row folds: a fold waits for every tile of its strip, so they are all in flight at once,
  // and a strip's chain of latencies (a cross-lane fold, a square root) is long, so more tiles in
  // flight let the next strips' loads and folds fill it: as many as a body of whole strips fits
  // in the registers (tried, as the phased bodies' copies are, by bisection: a body that fits
  // with n in flight fits with fewer). Layer norm (strips of 6 tiles): 8 in flight by one
  // tile's peak, 14 by trying. `planning`: only whether a strip's tiles fit.
  void ChooseRowFoldInFlight(bool planning) {
    const int64_t tiles = grid_.strip_tiles;
    const auto fits = [&](int in_flight) {
      max_in_flight_ = in_flight;
      shared_tiles_ = static_cast<int>(tiles);
      const bool fits = BodyFits(std::vector<Variant>(static_cast<std::size_t>(kScheduledTiles / tiles * tiles), kRow));
      shared_tiles_ = 1;
      return fits;
    };
    if (!fits(static_cast<int>(tiles))) {
      CannotLower(c_.instruction, "the " + std::to_string(tiles) + " tiles of a row it folds do not fit the vector registers at once");
    }
    int fitting = static_cast<int>(tiles);  // fits
    int failing = kScheduledTiles + 1;      // does not, or past a body
    while (!planning && failing - fitting > 1) {
      const int middle = (fitting + failing) / 2;
      (fits(middle) ? fitting : failing) = middle;
    }
    max_in_flight_ = fitting;
  }

  // Whether `copies` interleaved tiles fit in the registers.
  bool BodyFits(int copies) { return BodyFits(std::vector<Variant>(copies, kBoth)); }
  // Whether a body of these tiles fits in the registers (emitted into a scratch builder).
  bool BodyFits(const std::vector<Variant>& variants) {
    ProgramBuilder scratch = ProgramBuilder::Scratch(out_->target());
    ProgramBuilder* real = out_;
    out_ = &scratch;
    bool fits = true;
    try {
      EmitBody(variants);
    } catch (const Error&) {
      fits = false;
    }
    out_ = real;
    return fits;
  }

  // `tiles` tiles of one variant: loops of `copies_` interleaved tiles, then the remainder.
  void EmitTiles(Variant variant, int64_t tiles) {
    iota_loop_count_ = tiles / copies_ > 1 ? tiles / copies_ : 0;  // EmitLoop loops only then
    EmitLoop(kTileCounter, tiles / copies_, [&] { EmitBody(variant, copies_); });
    iota_loop_count_ = 0;
    iota_column_tile_ += tiles / copies_ * copies_;
    if (tiles % copies_ != 0) EmitBody(variant, static_cast<int>(tiles % copies_));
    iota_column_tile_ += tiles % copies_;
  }

  void Release(int node) {
    if (pinned_.contains(node) || Regs()[node] < 0) return;
    if (DomainOf(expr_.nodes[node].type) == Domain::kPred) {
      mask_used_[Regs()[node]] = false;
    } else if (const auto alias = aliases_.find(Regs()[node]); alias != aliases_.end()) {
      if (--alias->second == 0) aliases_.erase(alias);
    } else {
      vreg_used_[Regs()[node]] = false;
    }
  }

  void EmitOp(int n) {
    const ExprNode& node = expr_.nodes[n];
    const hlo::Instruction& x = *node.hlo;
    const Domain domain = DomainOf(node.type);
    const auto in = [&](int i) { return Regs()[node.inputs.at(i)]; };
    const auto in_type = [&](int i) { return expr_.nodes[node.inputs.at(i)].type; };
    const bool is_unsigned = node.type == isa::ElementType::kU32;
    if (domain == Domain::kPred) {
      const int d = AllocMask();
      Regs()[n] = d;
      switch (x.opcode()) {
        case Opcode::kCompare: {
          const std::string direction = x.GetIdentifier("direction");
          const isa::ElementType t = in_type(0);
          if (DomainOf(t) == Domain::kPred) {
            if (direction != "EQ" && direction != "NE") CannotLower(c_.instruction, "ordered compare of preds");
            out_->Emit(isa::OPCODE_MXOR, {M(d), M(in(0)), M(in(1))});
            if (direction == "EQ") out_->Emit(isa::OPCODE_MNOT, {M(d), M(d)});
            return;
          }
          CompareType type = DomainOf(t) == Domain::kFloat     ? CompareType::kF32
                             : t == isa::ElementType::kU32 ? CompareType::kU32
                                                           : CompareType::kS32;
          if (type == CompareType::kU32 && (direction == "EQ" || direction == "NE")) type = CompareType::kS32;
          out_->Emit(CompareOpcode(direction, type), {M(d), V(in(0)), V(in(1))});
          return;
        }
        case Opcode::kAnd: out_->Emit(isa::OPCODE_MAND, {M(d), M(in(0)), M(in(1))}); return;
        case Opcode::kOr: out_->Emit(isa::OPCODE_MOR, {M(d), M(in(0)), M(in(1))}); return;
        case Opcode::kXor: out_->Emit(isa::OPCODE_MXOR, {M(d), M(in(0)), M(in(1))}); return;
        case Opcode::kNot: out_->Emit(isa::OPCODE_MNOT, {M(d), M(in(0))}); return;
        case Opcode::kSelect: {
          const int t = AllocMask();
          out_->Emit(isa::OPCODE_MAND, {M(t), M(in(0)), M(in(1))});
          out_->Emit(isa::OPCODE_MNOT, {M(d), M(in(0))});
          out_->Emit(isa::OPCODE_MAND, {M(d), M(d), M(in(2))});
          out_->Emit(isa::OPCODE_MOR, {M(d), M(d), M(t)});
          mask_used_[t] = false;
          return;
        }
        case Opcode::kConvert: {
          const isa::ElementType from = in_type(0);
          if (DomainOf(from) == Domain::kPred) {
            out_->Emit(isa::OPCODE_MAND, {M(d), M(in(0)), M(in(0))});
          } else {
            out_->Emit(DomainOf(from) == Domain::kFloat ? isa::OPCODE_VCMP_NE_F32 : isa::OPCODE_VCMP_NE_S32,
                       {M(d), V(in(0)), V(zero_reg_)});
          }
          return;
        }
        default:
          CannotLower(c_.instruction, std::string(hlo::OpcodeName(x.opcode())) + " '" + x.name() + "' on pred");
      }
    }
    const int d = AllocVreg();
    Regs()[n] = d;
    // The operation's f32 or s32 form (f), or f32, u32 or s32 form (fu), by the value's domain.
    const auto f = [&](isa::Opcode f32, isa::Opcode s32) { return domain == Domain::kFloat ? f32 : s32; };
    const auto fu = [&](isa::Opcode f32, isa::Opcode u32, isa::Opcode s32) {
      return domain == Domain::kFloat ? f32 : is_unsigned ? u32 : s32;
    };
    bool round = node.type == isa::ElementType::kBF16 || node.type == isa::ElementType::kF16;
    switch (x.opcode()) {
      case Opcode::kAdd: out_->Emit(f(isa::OPCODE_VADD_F32, isa::OPCODE_VADD_S32), {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kSubtract: out_->Emit(f(isa::OPCODE_VSUB_F32, isa::OPCODE_VSUB_S32), {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kMultiply: out_->Emit(f(isa::OPCODE_VMUL_F32, isa::OPCODE_VMUL_S32), {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kDivide:
        out_->Emit(fu(isa::OPCODE_VDIV_F32, isa::OPCODE_VDIV_U32, isa::OPCODE_VDIV_S32), {V(d), V(in(0)), V(in(1))});
        break;
      case Opcode::kRemainder:
        if (domain == Domain::kFloat) CannotLower(c_.instruction, "floating-point remainder (not lowered yet)");
        out_->Emit(is_unsigned ? isa::OPCODE_VREM_U32 : isa::OPCODE_VREM_S32, {V(d), V(in(0)), V(in(1))});
        break;
      case Opcode::kMaximum:
        out_->Emit(fu(isa::OPCODE_VMAX_F32, isa::OPCODE_VMAX_U32, isa::OPCODE_VMAX_S32), {V(d), V(in(0)), V(in(1))});
        round = false;
        break;
      case Opcode::kMinimum:
        out_->Emit(fu(isa::OPCODE_VMIN_F32, isa::OPCODE_VMIN_U32, isa::OPCODE_VMIN_S32), {V(d), V(in(0)), V(in(1))});
        round = false;
        break;
      case Opcode::kNegate: out_->Emit(f(isa::OPCODE_VNEG_F32, isa::OPCODE_VNEG_S32), {V(d), V(in(0))}); round = false; break;
      case Opcode::kAbs: out_->Emit(f(isa::OPCODE_VABS_F32, isa::OPCODE_VABS_S32), {V(d), V(in(0))}); round = false; break;
      case Opcode::kExp: case Opcode::kLog: case Opcode::kRsqrt: case Opcode::kSqrt: case Opcode::kTanh:
      case Opcode::kLogistic: case Opcode::kSin: case Opcode::kCos:
        if (domain != Domain::kFloat) CannotLower(c_.instruction, "a transcendental op on integers");
        out_->Emit(FloatVpuOpcode(x.opcode()).value(), {V(d), V(in(0))});
        break;
      case Opcode::kPower:
        if (domain != Domain::kFloat) CannotLower(c_.instruction, "integer power (not lowered yet)");
        out_->Emit(isa::OPCODE_VPOW_F32, {V(d), V(in(0)), V(in(1))});
        break;
      case Opcode::kAnd: out_->Emit(isa::OPCODE_VAND, {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kOr: out_->Emit(isa::OPCODE_VOR, {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kXor: out_->Emit(isa::OPCODE_VXOR, {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kNot: out_->Emit(isa::OPCODE_VNOT, {V(d), V(in(0))}); break;
      case Opcode::kShiftLeft: out_->Emit(isa::OPCODE_VSHL, {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kShiftRightArithmetic: out_->Emit(isa::OPCODE_VSRA, {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kShiftRightLogical: out_->Emit(isa::OPCODE_VSHR, {V(d), V(in(0)), V(in(1))}); break;
      case Opcode::kSelect: out_->Emit(isa::OPCODE_VSEL, {V(d), M(in(0)), V(in(1)), V(in(2))}); round = false; break;
      case Opcode::kClamp:
        out_->Emit(fu(isa::OPCODE_VMAX_F32, isa::OPCODE_VMAX_U32, isa::OPCODE_VMAX_S32), {V(d), V(in(1)), V(in(0))});
        out_->Emit(fu(isa::OPCODE_VMIN_F32, isa::OPCODE_VMIN_U32, isa::OPCODE_VMIN_S32), {V(d), V(d), V(in(2))});
        round = false;
        break;
      case Opcode::kConvert:
        round = EmitConvert(x, in_type(0), node.type, d, in(0));
        break;
      case Opcode::kBitcastConvert:  // 32-bit to 32-bit only (elementwise_expr.cc): the same bits
        out_->Emit(isa::OPCODE_VOR, {V(d), V(in(0)), V(in(0))});
        round = false;
        break;
      default:
        CannotLower(c_.instruction, std::string(hlo::OpcodeName(x.opcode())) + " '" + x.name() + "'");
    }
    if (round && domain == Domain::kFloat && node.type == isa::ElementType::kBF16) pending_bf16_rounds_.push_back(d);
    if (round && domain == Domain::kFloat && node.type == isa::ElementType::kF16 && !stored_only_.contains(n)) {
      // Round to f16 and widen back; a value only stored is rounded once by the store instead.
      const F16Emulation::Regs regs = F16Temps(d, d, true);
      F16().EmitNarrow(*out_, {regs});
      F16().EmitWiden(*out_, {regs});
      ReleaseF16Temps({regs});
    }
    // 8-bit integers wrap: bring the 32-bit result back into the type's range (select, min, max
    // and clamp of in-range values are in range; converts normalize themselves).
    const bool keeps_range = x.opcode() == Opcode::kSelect || x.opcode() == Opcode::kMaximum ||
                             x.opcode() == Opcode::kMinimum || x.opcode() == Opcode::kClamp ||
                             x.opcode() == Opcode::kConvert;
    if (Is8Bit(node.type) && !keeps_range) Normalize8(node.type, d);
  }

  F16Emulation F16() const {
    return F16Emulation([this](uint32_t value) { return f16_constant_reg_.at(value); });
  }

  // Registers for one f16 conversion of v{x} into v{d}: scratch vregs and a mask, taken from the
  // free ones (released by ReleaseF16Temps).
  F16Emulation::Regs F16Temps(int d, int x, bool narrowing) {
    F16Emulation::Regs r;
    r.d = d;
    r.x = x;
    r.t1 = AllocVreg();
    r.t2 = AllocVreg();
    r.t3 = narrowing ? AllocVreg() : r.t2;
    r.m = AllocMask();
    return r;
  }
  void ReleaseF16Temps(const std::vector<F16Emulation::Regs>& regs) {
    for (const F16Emulation::Regs& r : regs) {
      vreg_used_[r.t1] = false;
      vreg_used_[r.t2] = false;
      vreg_used_[r.t3] = false;
      mask_used_[r.m] = false;
    }
  }

  void Normalize8(isa::ElementType type, int d) {
    if (type == isa::ElementType::kS8) {
      out_->Emit(isa::OPCODE_VSHL, {V(d), V(d), V(c24_reg_)});
      out_->Emit(isa::OPCODE_VSRA, {V(d), V(d), V(c24_reg_)});
    } else {
      out_->Emit(isa::OPCODE_VAND, {V(d), V(d), V(c255_reg_)});
    }
  }

  // Emits convert; returns whether the result still needs rounding to bf16.
  bool EmitConvert(const hlo::Instruction& x, isa::ElementType from, isa::ElementType to, int d, int a) {
    const Domain from_domain = DomainOf(from);
    const Domain to_domain = DomainOf(to);
    const auto refuse = [&] {
      CannotLower(c_.instruction, "convert '" + x.name() + "' from " + std::string(isa::ElementTypeName(from)) + " to " +
                                      std::string(isa::ElementTypeName(to)) + " (not lowered yet)");
    };
    if (from_domain == Domain::kPred) {
      const int one = to_domain == Domain::kFloat ? one_reg_ : -1;
      if (one < 0) {
        out_->Emit(isa::OPCODE_VBCAST, {V(d), 1});
        out_->Emit(isa::OPCODE_VSEL, {V(d), M(a), V(d), V(zero_reg_)});
      } else {
        out_->Emit(isa::OPCODE_VSEL, {V(d), M(a), V(one), V(zero_reg_)});
      }
      return false;
    }
    if (from_domain == Domain::kFloat && to_domain == Domain::kFloat) {
      if (to == isa::ElementType::kBF16 && from != to) {
        // The rounding reads the source: one instruction, where a copy and a rounding were two.
        out_->Emit(isa::OPCODE_VCVT_BF16_F32, {V(d), V(a)});
        return false;
      }
      out_->Emit(isa::OPCODE_VMOV, {V(d), V(a)});
      return (to == isa::ElementType::kBF16 || to == isa::ElementType::kF16) && from != to;
    }
    if (from_domain == Domain::kFloat && Is8Bit(to)) {
      // XLA: truncate toward zero, saturate to the type's range, NaN -> 0 (vcvt gives 0 for NaN).
      const bool is_signed = to == isa::ElementType::kS8;
      const int t = AllocVreg();
      out_->Emit(isa::OPCODE_VCVT_S32_F32, {V(d), V(a)});
      out_->Emit(isa::OPCODE_VBCAST, {V(t), is_signed ? 0xffffff80u : 0u});
      out_->Emit(isa::OPCODE_VMAX_S32, {V(d), V(d), V(t)});
      out_->Emit(isa::OPCODE_VBCAST, {V(t), is_signed ? 127 : 255});
      out_->Emit(isa::OPCODE_VMIN_S32, {V(d), V(d), V(t)});
      vreg_used_[t] = false;
      return false;
    }
    if (Is8Bit(from) && to_domain == Domain::kFloat) {
      // Exact: every 8-bit integer is an f32 and a bf16, so no rounding and no double rounding.
      out_->Emit(isa::OPCODE_VCVT_F32_S32, {V(d), V(a)});
      return false;
    }
    if (from_domain == Domain::kFloat && to == isa::ElementType::kS32) {
      out_->Emit(isa::OPCODE_VCVT_S32_F32, {V(d), V(a)});
      return false;
    }
    if (from == isa::ElementType::kS32 && to == isa::ElementType::kF32) {
      out_->Emit(isa::OPCODE_VCVT_F32_S32, {V(d), V(a)});
      return false;
    }
    if (from_domain == Domain::kInt && to_domain == Domain::kInt) {
      out_->Emit(isa::OPCODE_VMOV, {V(d), V(a)});
      if (Is8Bit(to) && to != from) Normalize8(to, d);  // wraps modulo 2^8, as XLA
      return false;
    }
    refuse();
    return false;
  }

  KernelContext& c_;
  ProgramBuilder* out_;
  ElementwiseExpr expr_;
  const ProducerSink* sink_ = nullptr;
  DeviceBuffer sink_buffer_;                // a producer's result: in VMEM only, never in HBM
  std::vector<const DeviceBuffer*> results_;  // c_.results, or the sink's
  uint64_t vmem_base_ = 0;  // the kernel's VMEM: [vmem_base_, vmem_end_)
  uint64_t vmem_end_ = 0;
  std::map<int, uint64_t> scalar_smem_;  // scalar operand -> its SMEM word
  int64_t sublanes_ = 8;
  int64_t lanes_ = 128;
  VtileGeometry grid_;
  std::vector<Stream> inputs_;
  std::vector<Stream> outputs_;
  std::map<LoadKey, std::size_t> loads_;  // (operand, broadcast) -> inputs_ index
  std::set<int> scalars_;
  std::map<int, int> scalar_reg_;     // operand -> vreg
  std::map<int, int> scalar_mask_;    // pred scalar operand -> mask register
  std::map<int, int> pinned_;         // node -> register
  std::map<uint32_t, int> constant_reg_;  // a non-pred constant's 32-bit word -> its register
  int next_pinned_mask_ = kFirstTempMask;
  int first_pinned_ = 32;
  int zero_reg_ = 0;
  int one_reg_ = 0;
  bool moves_pred_ = false;  // a pred array is loaded or stored: bytes 0/1 <-> mask registers
  bool uses_f16_ = false;   // then the constants of f16_emulation.h, pinned
  std::map<uint32_t, int> f16_constant_reg_;  // constant -> vreg
  std::set<int> stored_only_;  // f16 op nodes whose only use is a store (which rounds them)
  bool uses_8bit_ = false;  // then: 24, 0xff, and the per-sublane shifts of 8-bit rows, pinned
  int c24_reg_ = -1;
  int c255_reg_ = -1;
  int load_shift_reg_ = -1;
  int store_shift_reg_ = -1;
  uint64_t pack_scratch_ = 0;  // VMEM: one 32-bit tile per body copy, to pack 8-bit results
  uint64_t pack_scratch_bytes_ = 0;
  bool masked_ = false;
  std::vector<int> pending_bf16_rounds_;  // EmitBody: this operation's results, rounded after every copy's
  int64_t block_strips_ = 1;
  int depth_ = kBuffers;  // VMEM buffers each stream rotates through (3, or 2 where 3 do not fit)
  int64_t pieces_ = 1;      // blocks per strip (PlanPieces), 1: blocks of whole strips
  int64_t piece_tiles_ = 0;
  // Iotas in pieces (EmitIota): the column tile of the body being emitted, counted from its
  // strip's first, and the tile loop's iteration count while it is emitted in one (else 0).
  int64_t iota_column_tile_ = 0;
  int64_t iota_loop_count_ = 0;
  int buffer_ = 0;
  int copies_ = 1;  // tiles per unrolled body
  int max_in_flight_ = 1;
  bool row_folds_ = false;  // the expression folds rows (ExprNode::kRowFold)
  bool iotas_ = false;      // and computes iotas (ExprNode::kIota)
  // EmitScheduled: registers that several live nodes name (a convert kept in its input's
  // register, EmitCompute), with how many more releases they wait for before they are free.
  std::map<int, int> aliases_;  // EmitScheduled: tiles begun and not yet stored, at most
  // EmitScheduled: copies c and c' of a body are tiles of one strip, sharing their lane
  // broadcasts, where c / shared_tiles_ == c' / shared_tiles_ (1: none share).
  int shared_tiles_ = 1;
  // ProducerSink::fold, where the sink asks for it: a strip that spans bodies runs in the pinned
  // fold_acc_reg_, and the body that ends it has fold_strip_ends_; bodies of whole strips have
  // fold_strip_tiles_ tiles a strip, each strip's fold in a register of the body's.
  const ProducerSink::StripFold* fold_ = nullptr;
  int fold_acc_reg_ = -1;
  int fold_strip_tiles_ = 0;
  bool fold_strip_ends_ = false;
  int peak_vregs_ = 0;     // the most vector and mask registers held at once in the last body
  int peak_masks_ = 0;
  uint32_t next_engine_ = 0;  // DMAs go round-robin over the engines
  std::map<uint64_t, int> offset_registers_;  // a loop over blocks: tile bytes -> kBlockOffset register
  std::vector<std::vector<int>> regs_;  // per tile copy of the unrolled body: node -> register
  int copy_ = 0;
  std::vector<int>& Regs() { return regs_[copy_]; }
  std::vector<bool> vreg_used_;
  std::vector<bool> mask_used_;
};

}  // namespace

void EmitElementwiseKernel(KernelContext& context) {
  Emitter(context, BuildElementwiseExpr(context.group)).Run();
}

int ElementwiseCoreParts(const KernelContext& context) {
  const int cores = static_cast<int>(isa::TensorCores(context.options.target));
  if (cores <= 1) return 1;
  KernelContext planned = context;
  planned.part = {0, cores};
  return Emitter(planned, BuildElementwiseExpr(context.group)).PlanBlocks() >= cores ? cores : 1;
}

bool ElementwiseFusionFits(const KernelGroup& group, const CompileOptions& options) {
  return GroupPlans(group, options, [](KernelContext& context) { Emitter(context, BuildElementwiseExpr(context.group)).PlanOnly(); });
}

void EmitElementwiseProducer(KernelContext& context, const KernelGroup& producer, const ProducerSink& sink) {
  Emitter(context, BuildElementwiseExpr(producer), &sink).Run();
}

void PlanElementwiseProducer(KernelContext& context, const KernelGroup& producer, const ProducerSink& sink) {
  Emitter(context, BuildElementwiseExpr(producer), &sink).PlanOnly();
}

int64_t ElementwiseProducerBlockStrips(KernelContext& context, const KernelGroup& producer, const ProducerSink& sink) {
  Emitter emitter(context, BuildElementwiseExpr(producer), &sink);
  emitter.PlanOnly();
  return emitter.block_strips();
}

bool ElementwiseProducerFoldsStrips(KernelContext& context, const KernelGroup& producer, const ProducerSink& sink) {
  Emitter emitter(context, BuildElementwiseExpr(producer), &sink);
  emitter.PlanOnly();
  return emitter.FoldsStrips();
}

}  // namespace tpusim::compiler
