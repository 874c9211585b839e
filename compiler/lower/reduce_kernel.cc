#include "compiler/lower/reduce_kernel.h"

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/elementwise_kernel.h"
#include "compiler/lower/megacore.h"
#include "compiler/lower/reduce_plan.h"
#include "isa/error.h"
#include "isa/layout_index.h"
#include "isa/element_type.h"
#include "isa/instruction_set.h"

namespace tpusim::compiler {
namespace {

using namespace isa::ops;

constexpr uint64_t kMaxBlockBytes = 512 * 1024;
// Semaphores: input block landed in buffer 0/1, VPU done, output stored, init value in SMEM.
constexpr uint32_t kLoadSem[2] = {0, 1};
constexpr uint32_t kVpuSem = 2;
constexpr uint32_t kStoreSem = 3;
constexpr uint32_t kSmemSem = 4;
// Scalar registers: a temp, the input tile address, an accumulator address, an output row
// address, loop counters; a lane fold's place (EmitLaneStart) and temps; the next block's HBM
// address in a loop over blocks.
constexpr int kScalarTemp = 5;
constexpr int kLaneShift = 6;      // the lanes the next strip's rows land at: S * (strip mod L/S)
constexpr int kStripInMatrix = 7;  // the next strip's index within its matrix
constexpr int kMatrix = 8;         // and its matrix
constexpr int kTempA = 9, kTempB = 10, kTempC = 11;
constexpr int kBlockCounter = 12;
constexpr int kLoadAddr = 13;
constexpr int kInAddr = 20;
constexpr int kAccAddr = 21;
constexpr int kRowAddr = 22;
constexpr int kTileCounter = 23;
constexpr int kStripCounter = 24;
constexpr int kMatrixCounter = 25;
// Vector registers. Working values low, constants pinned high.
constexpr int kP = 0, kX = 2, kT = 4, kU = 5, kG = 7, kA = 8, kR = 10, kY = 12,
              kInitFirst = 14;  // 14..16: the accumulator's first values (init only)
constexpr int kZero = 31, kIdent = 30, kInit = 29, kLane = 28;
// The registers of one strand of work: a running fold (p), a loaded value (x), a rotated copy
// (y), an accumulator read back (a). Strand B lets two independent folds interleave
// (ReduceEmitter::Zip).
struct Strand {
  int p, x, y, a;
};
constexpr Strand kStrandA = {kP, kX, kY, kA};
constexpr Strand kStrandB = {17, 19, 23, 25};
// A group of lane-fold strips (EmitLaneGroups): strand k folds strip k with p, x and y; the
// group's row Q and the group before's (kGathered); each lane's S-lane block (lane / S), pinned
// while a block's groups fold. Only strand A's accumulator register (kA) is used, to store a
// finished row, after kGathered has joined G.
constexpr int kMaxLaneGroup = 8;
constexpr Strand kGroupStrands[kMaxLaneGroup] = {{kP, kX, kY, kA},    {17, 19, 23, kA}, {1, 3, 4, kA},    {6, 9, 11, kA},
                                                 {13, 14, 15, kA},    {16, 18, 20, kA}, {21, 22, 24, kA}, {25, 26, 27, kA}};
constexpr int kQ = kR;
constexpr int kGathered = kA;  // the group before, transposed; free again before a row's Rmw
constexpr int kLaneBlock = kU;
// Mask registers: valid lanes of a strip's last tile, valid rows of a partial strip, lane 0, a
// temp, valid elements of a rank-1 operand's last tile.
constexpr int kLaneMask = 0, kRowMask = 1, kLane0Mask = 2, kTempMask = 3, kElementMask = 4;
constexpr int kGroupMask0 = 5, kGroupMasks = 3;  // m5..m7: a group's lane-block selects, in turn

class ReduceEmitter {
 public:
  explicit ReduceEmitter(KernelContext& context) : c_(context), out_(context.out) {}

  void Run() {
    Setup();
    if (c_.part.count > 1 && !split_) CannotLower(c_.instruction, "internal: split over cores where it cannot be");
    EmitPrologue();
    EmitAccumulatorInit();
    if (plan_.kind == ReduceKind::kLanes) {
      // The first result row starts empty: G gathers rows by or-ing them into zero lanes.
      Emit(isa::OPCODE_VMOV, {V(kG), V(kZero)});
      if (fused_) RunningFold(true);
      EmitLaneStart();
    }
    if (fused_) {
      EmitProducer(false);
    } else {
      EmitBlocks();
    }
    EmitFinish();
  }

  // Plans a fused reduce without emitting: throws CannotLower where it would not lower.
  void PlanOnly() {
    Setup();
    if (fused_) EmitProducer(true);  // a widened bf16 operand has no producer
  }

  // Whether the kernel splits over context.part.count cores (PlanCoreStrips).
  bool SplitsOverCores() {
    Setup();
    return split_;
  }

 private:
  // The plan and the VMEM layout; CannotLower where there is none.
  void Setup() {
    const isa::Target& target = out_.target();
    S_ = target.sublanes();
    L_ = target.lanes();
    if (target.semaphores() < 5) {
      CannotLower(c_.instruction, "the reduce kernel needs 5 semaphores" + LimitNote(c_.options, TargetLimit::kSemaphores));
    }
    if (target.vector_registers() < 32) {
      CannotLower(c_.instruction,
                  "the reduce kernel needs 32 vector registers" + LimitNote(c_.options, TargetLimit::kVectorRegisters));
    }
    fused_ = c_.group.fused();
    // A fused operand that is only a bf16 array widened to f32 (reduce(convert(x)): every bf16
    // sum XLA writes) is read as bf16 and widened as each tile loads, as a plain bf16 reduce is:
    // no producer writing an f32 copy to VMEM for the fold to read back (VMEM's reads were a
    // layer norm's mean's bound: 2 + 4 + 4 bytes per element at about 1 KiB a cycle).
    const DeviceBuffer* widened = fused_ ? WidenedBf16Operand() : nullptr;
    if ((!fused_ && c_.operands.size() != 2) || c_.results.size() != 1) {
      CannotLower(c_.instruction, "variadic (tuple-result) reduce is not lowered yet");
    }
    // Fused: the operand is computed block by block in VMEM (EmitProducer); the kernel reads the
    // group's operands, the init among them.
    init_ = c_.operands.at(fused_ ? InitOperand() : 1).at(0);
    if (widened != nullptr) fused_ = false;
    // A producer ending in a widening of bf16 to f32 hands the fold its bf16 values (half the
    // VMEM bytes to write and read back); the fold widens them as it loads them.
    produced_ = fused_ ? ProducedValue() : nullptr;
    const isa::Shape& operand = widened != nullptr ? widened->shape
                                : fused_          ? produced_->shape()
                                                  : c_.operands[0].at(0)->shape;
    if (!fused_) operand_ = widened != nullptr ? widened : c_.operands[0].at(0);
    result_ = c_.results[0];
    plan_ = PlanReduce(c_.instruction, operand, result_->shape, S_, L_);
    is_float_ = plan_.type == isa::ElementType::kF32 || plan_.type == isa::ElementType::kBF16;
    is_unsigned_ = plan_.type == isa::ElementType::kU32;
    needs_identity_ = plan_.op != ReduceOp::kAdd && plan_.op != ReduceOp::kOr && plan_.op != ReduceOp::kXor;
    PlanLaneGroup();
    PlanMemory();
    if (fused_ && PlanStripFold()) {
      // The fold reads one f32 tile per strip, the producer's strips folded in registers.
      plan_ = PlanReduce(c_.instruction, FoldedShape(), result_->shape, S_, L_);
      PlanLaneGroup();
      PlanMemory();
    }
    end_strip_ = plan_.in.strips;
    split_ = PlanCoreStrips();
  }

  // Megacore: a lane fold's result rows split over the cores, each core folding the strips of its
  // own rows and writing only those (EmitFinish). Where the reduced dims are the lanes alone
  // (kLanes with no reduced major dim): with several matrices (the kept dims above the rows), by
  // the first dim of size > 1 (those above it size 1), in units of one index of it (the matrices
  // below it); with one matrix, by its rows, in units of L (a result row of lanes, L / S strips).
  bool PlanLaneSplit() {
    lane_split_ = {};
    if (plan_.kind != ReduceKind::kLanes || plan_.rank1 || L_ % S_ != 0) return false;
    for (bool reduced : plan_.major_reduced) {
      if (reduced) return false;
    }
    const int64_t spm = plan_.in.strips_per_matrix;
    const std::vector<int64_t>& majors = plan_.major_dims;
    std::size_t d = 0;
    while (d < majors.size() && majors[d] == 1) ++d;
    if (d < majors.size()) {
      int64_t below = 1;
      for (std::size_t i = d + 1; i < majors.size(); ++i) below *= majors[i];
      lane_split_ = {below * spm, majors[d], static_cast<int>(d), 1};
    } else {
      const int64_t unit = L_ / S_;
      lane_split_ = {unit, (spm + unit - 1) / unit, static_cast<int>(majors.size()), L_};
    }
    return true;
  }

  // This core's strips [first_strip_, end_strip_) when the kernel splits over c_.part.count cores:
  // whole blocks of units (the producer's blocks when fused, made whole units; else one unit),
  // the cores taking equal shares of them in order, as the producer does. False where it does not
  // split (no lane split, a producer's blocks not whole units, fewer blocks than cores).
  bool PlanCoreStrips() {
    if (c_.part.count <= 1 || !PlanLaneSplit()) return false;
    const int64_t unit = lane_split_.unit_strips;
    int64_t block = unit;
    if (fused_) {
      KernelContext planned = c_;
      block = ElementwiseProducerBlockStrips(planned, Producer(), Sink());
      if (block <= 0 || block % unit != 0) return false;
      // Blocks the cores do not share evenly (a softmax's row maxima in 3: 1 and 2): at least two
      // per core, whole units, so that the shares differ by less than half of one.
      const int64_t count = (plan_.in.strips + block - 1) / block;
      const int64_t balanced = plan_.in.strips / (2 * c_.part.count) / unit * unit;
      if (count >= c_.part.count && count % c_.part.count != 0 && balanced >= unit && balanced < block) {
        max_block_strips_ = balanced;
        block = ElementwiseProducerBlockStrips(planned, Producer(), Sink());
        if (block <= 0 || block % unit != 0) return false;
      }
    }
    const int64_t blocks = (plan_.in.strips + block - 1) / block;
    if (blocks < c_.part.count) return false;
    const auto [begin, end] = PartRange(blocks, c_.part);
    first_strip_ = begin * block;
    end_strip_ = std::min(end * block, plan_.in.strips);
    return true;
  }

  // Lane folds in groups of lane_group_ strips (EmitLaneGroup) where a group never straddles a
  // result row or a matrix: the largest power of two up to kMaxLaneGroup that divides both the
  // strips of a result row (L / S) and of a matrix; at least 4, else strips go in pairs.
  void PlanLaneGroup() {
    lane_group_ = 1;
    if (plan_.kind != ReduceKind::kLanes || L_ % S_ != 0) return;
    int64_t n = kMaxLaneGroup;
    while (n > 1 && ((L_ / S_) % n != 0 || plan_.in.strips_per_matrix % n != 0)) n /= 2;
    if (n >= 4) lane_group_ = n;
  }

  // The bf16 value the reduce's operand widens to f32 (the operand a convert), or null.
  const hlo::Instruction* WidenedBf16() const {
    const hlo::Instruction* convert = c_.instruction.operand(0);
    if (convert->opcode() != hlo::Opcode::kConvert || convert->shape().element_type != isa::ElementType::kF32) return nullptr;
    const hlo::Instruction* source = convert->operand(0);
    return source->shape().element_type == isa::ElementType::kBF16 ? source : nullptr;
  }

  // The bf16 array the fused group only widens to f32 for the reduce, or null.
  const DeviceBuffer* WidenedBf16Operand() const {
    const hlo::Instruction* source = WidenedBf16();
    if (c_.group.members.size() != 2 || source == nullptr) return nullptr;
    const auto& operands = c_.group.operands;
    const auto it = std::find(operands.begin(), operands.end(), source);
    if (it == operands.end()) return nullptr;
    return c_.operands.at(static_cast<std::size_t>(it - operands.begin())).at(0);
  }

  std::size_t InitOperand() const {
    const auto& operands = c_.group.operands;
    const auto it = std::find(operands.begin(), operands.end(), c_.instruction.operand(1));
    if (it == operands.end()) CannotLower(c_.instruction, "its fused group does not read its init value");
    return static_cast<std::size_t>(it - operands.begin());
  }

  // The fused operand: its element-wise producers (the group's other members) compute it block by
  // block into VMEM above the reduce's own state, and each block is folded as a loaded one is.
  void EmitProducer(bool plan_only) {
    const KernelGroup producer = Producer();
    ProducerSink sink = Sink();
    sink.consume = [&](int64_t first, int64_t last, uint64_t address) {
      EmitFoldSetup();  // the producer's code used every vector register
      RunningFold(false);
      EmitBlockFold(first, last, address);
      RunningFold(true);
    };
    if (plan_only) {
      PlanElementwiseProducer(c_, producer, sink);
    } else {
      EmitElementwiseProducer(c_, producer, sink);
    }
  }

  // The value the producer computes for the fold: the reduce's operand, or, where that is a bf16
  // value computed in the group widened to f32 and read by nothing else, the bf16 value.
  const hlo::Instruction* ProducedValue() const {
    const hlo::Instruction* operand = c_.instruction.operand(0);
    const hlo::Instruction* source = WidenedBf16();
    const auto& members = c_.group.members;
    if (source == nullptr || std::find(members.begin(), members.end(), source) == members.end()) return operand;
    for (const hlo::Instruction* member : members) {
      if (member == &c_.instruction) continue;
      for (const hlo::Instruction* read : member->operands()) {
        if (read == operand) return operand;
      }
    }
    return source;
  }

  // A lane fold of an f32 sum, maximum or minimum whose producer can fold each strip's tiles in
  // registers (ElementwiseProducerFoldsStrips) has it do so: the producer's tiles never go
  // through VMEM, and the fold reads one tile a strip (a layer norm's variance, (x - mean)^2 over
  // rows of 768: 6 tiles a strip, each stored, loaded back and folded before). A maximum or
  // minimum only without padding lanes, which the producer zeroes and 0 is not their identity.
  bool PlanStripFold() {
    strip_fold_.reset();
    if (plan_.kind != ReduceKind::kLanes || plan_.rank1 || plan_.type != isa::ElementType::kF32 ||
        plan_.in.strip_tiles < 2) {
      return false;
    }
    ProducerSink::StripFold fold;
    switch (plan_.op) {
      case ReduceOp::kAdd: fold.op = isa::OPCODE_VADD_F32; break;
      case ReduceOp::kMaximum: fold.op = isa::OPCODE_VMAX_F32; break;
      case ReduceOp::kMinimum: fold.op = isa::OPCODE_VMIN_F32; break;
      default: return false;
    }
    if (plan_.op != ReduceOp::kAdd && plan_.in.partial_lanes != 0) return false;
    fold.identity = IdentityBits(plan_.op, plan_.type);
    ProducerSink sink = Sink();
    sink.fold = fold;
    KernelContext planned = c_;
    if (!ElementwiseProducerFoldsStrips(planned, Producer(), sink)) return false;
    strip_fold_ = fold;
    return true;
  }

  // The produced value as the strip fold hands it over: f32 tiles, one a strip (its minor dim
  // the lanes of one tile).
  isa::Shape FoldedShape() const {
    isa::Shape folded = produced_->shape();
    folded.element_type = isa::ElementType::kF32;
    folded.dims.at(folded.layout->minor_to_major.front()) = L_;
    folded.layout->tiles = {isa::Tile{{S_, L_}}};
    folded.layout->element_size_in_bits = 0;
    return folded;
  }

  // The fused group's element-wise producers of the produced value.
  KernelGroup Producer() const {
    KernelGroup producer;
    producer.root = produced_;
    for (const hlo::Instruction* member : c_.group.members) {
      // Not the reduce, nor a widening the fold does itself (ProducedValue).
      const bool widening_skipped = member == c_.instruction.operand(0) && member != produced_;
      if (member != &c_.instruction && !widening_skipped) producer.members.push_back(member);
    }
    producer.operands = c_.group.operands;
    return producer;
  }

  // Where the producer puts the operand (without its consumer), its blocks whole lane-fold
  // groups, and whole units of the split over cores (PlanLaneSplit's) when split.
  ProducerSink Sink() const {
    ProducerSink sink;
    sink.shape = produced_->shape();
    sink.vmem_base = producer_vmem_;
    sink.vmem_end = c_.options.vmem_capacity_bytes;
    // A lane fold keeps its place in scalar registers the producer leaves alone (EmitLaneStart,
    // before the producer): its code is the same for every block.
    sink.same_code_every_block = plan_.kind == ReduceKind::kLanes;
    sink.strip_multiple = c_.part.count > 1 && lane_split_.unit_strips > 0 ? lane_split_.unit_strips : lane_group_;
    sink.max_block_strips = max_block_strips_;
    sink.fold = strip_fold_;
    return sink;
  }

  // What a fold carries from strip to strip in registers: a whole-matrix fold (kBoth) its running
  // P, a lane fold (kLanes) the rows gathered so far (G). Between fused blocks, whose producer uses
  // every register, it waits in VMEM (`save`), and comes back after.
  void RunningFold(bool save) {
    if (plan_.kind != ReduceKind::kBoth && plan_.kind != ReduceKind::kLanes) return;
    const int value = plan_.kind == ReduceKind::kBoth ? kP : kG;
    Emit(isa::OPCODE_MOV, {S(kAccAddr), 0});
    Emit(save ? isa::OPCODE_VST : isa::OPCODE_VLD, {V(value), VmemAt(kAccAddr, spill_)});
  }

  // ---- memory ----
  void PlanMemory() {
    out_tiles_ = std::max<int64_t>(plan_.out.tiles, 1);
    const ReduceVmemLayout vmem = PlanReduceVmem(plan_, S_, L_);
    acc_ = vmem.accumulators;
    stage_ = vmem.stage;
    scratch_ = vmem.scratch;
    strip_bytes_ = vmem.strip_bytes;
    uint64_t cursor = vmem.end;
    const uint64_t capacity = c_.options.vmem_capacity_bytes;
    if (fused_) {
      spill_ = cursor;
      producer_vmem_ = AlignUp(spill_ + S_ * L_ * 4, 4096);
      if (producer_vmem_ >= capacity) CannotLower(c_.instruction, "its accumulators do not fit in VMEM");
      return;
    }
    if (!vmem.Fits(capacity)) {
      CannotLower(c_.instruction, "its accumulators (" + std::to_string(cursor) + " bytes) and two operand strips do not fit in VMEM (" +
                                      std::to_string(capacity) + " bytes); splitting the output is not lowered yet");
    }
    const uint64_t room = (capacity - cursor - 2 * 4096) / 2;
    block_strips_ = std::max<int64_t>(1, std::min<uint64_t>(room, kMaxBlockBytes) / strip_bytes_);
    block_strips_ = std::min(block_strips_, plan_.in.strips);
    // Whole groups per block, so that every group starts where its rows' lanes do.
    if (lane_group_ > 1 && block_strips_ >= lane_group_) block_strips_ -= block_strips_ % lane_group_;
    for (uint64_t& base : in_) {
      base = cursor;
      cursor += AlignUp(block_strips_ * strip_bytes_, 4096);
    }
  }

  // ---- emission helpers ----
  // Every line goes through here, so two independent computations (strands) can be captured
  // apart and then interleaved line by line: the VPU issues in order, and one strand's chain of
  // dependent adds would otherwise leave it waiting for each result.
  void Emit(isa::Opcode opcode, std::initializer_list<Arg> positional = {}, std::initializer_list<KeywordArg> keywords = {},
            isa::CallSite where = {__builtin_FILE(), __builtin_LINE()}) {
    Add(isa::MakeInstruction(opcode, positional, keywords, where));
  }
  void Add(isa::Instruction instruction) {
    if (capture_ != nullptr) {
      capture_->push_back(std::move(instruction));
    } else {
      out_.Add(std::move(instruction));
    }
  }
  // vmem[s{reg} + offset].
  static AddressValue VmemAt(int reg, uint64_t offset) { return Vmem(S(reg), static_cast<int64_t>(offset)); }

  // Emits a() with strand A's registers and b() with strand B's, interleaved.
  template <typename A, typename B>
  void Zip(A a, B b) {
    std::vector<isa::Instruction> la, lb;
    capture_ = &la;
    st_ = &kStrandA;
    a();
    capture_ = &lb;
    st_ = &kStrandB;
    b();
    capture_ = nullptr;
    st_ = &kStrandA;
    EmitInterleaved({la, lb});
  }
  // Emits f() once per group strand k < n (st_ its registers, strand_ = k), interleaved line by
  // line.
  void ZipStrands(int n, const std::function<void()>& f) {
    std::vector<std::vector<isa::Instruction>> lines(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      capture_ = &lines[static_cast<std::size_t>(k)];
      st_ = &kGroupStrands[k];
      strand_ = k;
      f();
    }
    capture_ = nullptr;
    st_ = &kStrandA;
    strand_ = 0;
    EmitInterleaved(lines);
  }
  // Emits the strands' captured lines interleaved: line i of each, in strand order, then i + 1.
  void EmitInterleaved(const std::vector<std::vector<isa::Instruction>>& strands) {
    std::size_t longest = 0;
    for (const auto& lines : strands) longest = std::max(longest, lines.size());
    for (std::size_t i = 0; i < longest; ++i) {
      for (const auto& lines : strands) {
        if (i < lines.size()) out_.Add(lines[i]);
      }
    }
  }
  isa::Opcode OpCode() const { return ReduceOpInstruction(plan_.op, is_float_, is_unsigned_); }

  void Op(int d, int a, int b) { Emit(OpCode(), {V(d), V(a), V(b)}); }

  // p = p op x. Float sums are plain f32 additions, as the hardware's (the order differs from the
  // evaluator's: sim/output_check.cc states the bound).
  void FoldValue(int p, int x) { Op(p, p, x); }

  void LoadTile(int vd, const AddressValue& address) {
    LoadTileBits(vd, address);
    WidenTile(vd);
  }
  // LoadTile's two steps: the tile's bits (a bf16 operand's half vreg), then its f32 values.
  void LoadTileBits(int vd, const AddressValue& address) {
    if (plan_.load_type == isa::ElementType::kBF16) {
      Emit(isa::OPCODE_VLD, {V(vd), address}, {{"sublanes", Bits(0xf)}});
    } else {
      Emit(isa::OPCODE_VLD, {V(vd), address});
    }
  }
  void WidenTile(int vd) {
    if (plan_.load_type == isa::ElementType::kBF16) Emit(isa::OPCODE_VUNPACK_LO_BF16, {V(vd), V(vd)});
  }

  // p folded across each sublane's lanes; the result in every lane when `broadcast`, else in lane
  // 0 with zeros elsewhere.
  void LaneReduce(int p, bool broadcast) {
    const bool has_vred = !is_unsigned_ &&
                          (plan_.op == ReduceOp::kAdd || plan_.op == ReduceOp::kMaximum || plan_.op == ReduceOp::kMinimum);
    const bool has_vred_u32 = is_unsigned_ && plan_.op == ReduceOp::kAdd;
    if (has_vred || has_vred_u32) {
      // [broadcast][add, max, min][f32, s32]
      static constexpr isa::Opcode kReductions[2][3][2] = {
          {{isa::OPCODE_VRED_ADD_F32, isa::OPCODE_VRED_ADD_S32},
           {isa::OPCODE_VRED_MAX_F32, isa::OPCODE_VRED_MAX_S32},
           {isa::OPCODE_VRED_MIN_F32, isa::OPCODE_VRED_MIN_S32}},
          {{isa::OPCODE_VREDB_ADD_F32, isa::OPCODE_VREDB_ADD_S32},
           {isa::OPCODE_VREDB_MAX_F32, isa::OPCODE_VREDB_MAX_S32},
           {isa::OPCODE_VREDB_MIN_F32, isa::OPCODE_VREDB_MIN_S32}}};
      const int name = plan_.op == ReduceOp::kAdd ? 0 : plan_.op == ReduceOp::kMaximum ? 1 : 2;
      Emit(kReductions[broadcast ? 1 : 0][name][is_float_ ? 0 : 1], {V(p), V(p)});
      return;
    }
    // A rotation butterfly: after rotating by L/2, L/4, ..., 1 every lane holds the whole row.
    for (int64_t k = L_ / 2; k >= 1; k /= 2) {
      Emit(isa::OPCODE_VROT, {V(st_->y), V(p), k});
      FoldValue(p, st_->y);
    }
    if (!broadcast) Emit(isa::OPCODE_VSEL, {V(p), M(kLane0Mask), V(p), V(kZero)});
  }

  // kR = the fold of the S rows of the tile at vmem[reg + offset], in sublane 0; other sublanes 0.
  // Rows in order 0..S-1.
  void SublaneFold(int reg, uint64_t offset) {
    const auto at = [&](uint64_t off) { return VmemAt(reg, off); };
    Emit(isa::OPCODE_VLD, {V(kR), at(offset)}, {{"sublanes", Bits(0x1)}});
    for (int64_t k = 1; k < S_; ++k) {
      Emit(isa::OPCODE_VLD, {V(st_->x), at(offset + k * L_ * 4)}, {{"sublanes", Bits(0x1)}});
      FoldValue(kR, st_->x);
    }
  }

  // The accumulator at vmem[reg + offset] op= x: a whole tile, or (row) sublane 0 only, optionally
  // only where mask `mask` is set.
  void Rmw(int reg, uint64_t offset, int x, bool row, int mask = -1) {
    std::vector<KeywordArg> load, store;
    if (row) {
      load.push_back({"sublanes", Bits(0x1)});
      store.push_back({"sublanes", Bits(0x1)});
    }
    if (mask >= 0) store.push_back({"mask", M(mask)});
    Add(isa::MakeInstruction(isa::OPCODE_VLD, {V(st_->a), VmemAt(reg, offset)}, load));
    FoldValue(st_->a, x);
    Add(isa::MakeInstruction(isa::OPCODE_VST, {V(st_->a), VmemAt(reg, offset)}, store));
  }

  template <typename Body>
  void EmitLoop(int counter, int64_t count, Body body) {
    if (count <= 0) return;
    if (count == 1) {
      body();
      return;
    }
    const std::string label = out_.NewLabel(c_.instruction.name() + ".loop");
    Emit(isa::OPCODE_MOV, {S(counter), count});
    out_.Bind(label);
    body();
    Emit(isa::OPCODE_LOOP, {S(counter), Label(label)});
  }

  // ---- prologue ----
  void EmitPrologue() {
    // A constant init value (every reduce XLA writes: 0, -inf, ...) is broadcast from its bits,
    // where a round trip to HBM came before the first block's DMA (0.3 us).
    const hlo::Instruction* init = c_.instruction.operand(1);
    if (init->opcode() == hlo::Opcode::kConstant && init->literal() != nullptr && init->shape().rank() == 0) {
      const hlo::Literal& value = *init->literal();
      const uint32_t bits = is_float_ ? std::bit_cast<uint32_t>(static_cast<float>(value.GetDouble(0)))
                                      : static_cast<uint32_t>(value.GetInt(0));
      Emit(isa::OPCODE_VBCAST, {V(kInit), bits});
      EmitFoldSetup();
      return;
    }
    // Else HBM -> SMEM -> a broadcast vreg (bf16 widened to f32 exactly).
    EmitFlatDma(out_, isa::MEMORY_SPACE_HBM, init_->address, isa::MEMORY_SPACE_SMEM, 0, init_->size_bytes, kSmemSem, 0);
    Emit(isa::OPCODE_SEM_WAIT, {Sem(kSmemSem), 1});
    Emit(isa::OPCODE_LD_U32, {S(kScalarTemp), Smem(0)});
    if (plan_.type == isa::ElementType::kBF16) {
      Emit(isa::OPCODE_AND, {S(kScalarTemp), S(kScalarTemp), 0xffff});
      Emit(isa::OPCODE_SHL, {S(kScalarTemp), S(kScalarTemp), 16});
    }
    Emit(isa::OPCODE_VBCAST, {V(kInit), S(kScalarTemp)});
    EmitFoldSetup();
  }

  // The constants and masks the folds use.
  void EmitFoldSetup() {
    Emit(isa::OPCODE_VBCAST, {V(kZero), 0});
    Emit(isa::OPCODE_VBCAST, {V(kIdent), IdentityBits(plan_.op, plan_.type)});
    Emit(isa::OPCODE_VLANEID, {V(kLane)});
    Emit(isa::OPCODE_VCMP_EQ_S32, {M(kLane0Mask), V(kLane), V(kZero)});
    if (plan_.in.partial_lanes != 0) {
      Emit(isa::OPCODE_VBCAST, {V(kT), plan_.in.partial_lanes});
      Emit(isa::OPCODE_VCMP_LT_S32, {M(kLaneMask), V(kLane), V(kT)});
    }
    if (plan_.in.partial_rows != 0) {
      Emit(isa::OPCODE_VSUBLANEID, {V(kT)});
      Emit(isa::OPCODE_VBCAST, {V(kU), plan_.in.partial_rows});
      Emit(isa::OPCODE_VCMP_LT_S32, {M(kRowMask), V(kT), V(kU)});
    }
    if (plan_.in.partial_elements != 0) EmitElementMask(kElementMask, plan_.in.partial_elements);
  }

  // mask = (sublane * L + lane < n): the valid elements of a rank <= 1 array's last tile.
  void EmitElementMask(int mask, int64_t n) {
    Emit(isa::OPCODE_VSUBLANEID, {V(kT)});
    Emit(isa::OPCODE_VBCAST, {V(kU), L_});
    Emit(isa::OPCODE_VMUL_S32, {V(kT), V(kT), V(kU)});
    Emit(isa::OPCODE_VADD_S32, {V(kT), V(kT), V(kLane)});
    Emit(isa::OPCODE_VBCAST, {V(kU), n});
    Emit(isa::OPCODE_VCMP_LT_S32, {M(mask), V(kT), V(kU)});
  }

  // Every output tile of the accumulator: init where the result has an element, zero in its
  // padding (which every fold keeps zero: 0 op 0 = 0 for each op).
  void EmitAccumulatorInit() {
    const VtileGeometry& o = plan_.out;
    const int full = kInit;
    const int lane = kInitFirst, row = kInitFirst + 1, both = kInitFirst + 2;
    if (o.partial_lanes != 0) {
      Emit(isa::OPCODE_VBCAST, {V(kT), o.partial_lanes});
      Emit(isa::OPCODE_VCMP_LT_S32, {M(kTempMask), V(kLane), V(kT)});
      Emit(isa::OPCODE_VSEL, {V(lane), M(kTempMask), V(kInit), V(kZero)});
    }
    if (o.partial_rows != 0 || o.partial_elements != 0) {
      if (o.partial_elements != 0) {
        EmitElementMask(kTempMask, o.partial_elements);
      } else {
        Emit(isa::OPCODE_VSUBLANEID, {V(kT)});
        Emit(isa::OPCODE_VBCAST, {V(kU), o.partial_rows});
        Emit(isa::OPCODE_VCMP_LT_S32, {M(kTempMask), V(kT), V(kU)});
      }
      Emit(isa::OPCODE_VSEL, {V(row), M(kTempMask), V(kInit), V(kZero)});
      if (o.partial_lanes != 0) Emit(isa::OPCODE_VSEL, {V(both), M(kTempMask), V(lane), V(kZero)});
    }
    const auto store = [&](int value) {
      Emit(isa::OPCODE_VST, {V(value), VmemAt(kAccAddr, acc_)});
      Emit(isa::OPCODE_ADD, {S(kAccAddr), S(kAccAddr), S_ * L_ * 4});
    };
    Emit(isa::OPCODE_MOV, {S(kAccAddr), 0});
    if (plan_.result.rank() <= 1) {
      EmitLoop(kTileCounter, o.tiles - 1, [&] { store(full); });
      store(o.partial_elements != 0 ? row : full);
      return;
    }
    const auto strip = [&](bool partial_row) {
      EmitLoop(kTileCounter, o.strip_tiles - 1, [&] { store(partial_row ? row : full); });
      store(o.partial_lanes != 0 ? (partial_row ? both : lane) : (partial_row ? row : full));
    };
    EmitLoop(kMatrixCounter, o.strips / o.strips_per_matrix, [&] {
      EmitLoop(kStripCounter, o.strips_per_matrix - 1, [&] { strip(false); });
      strip(o.partial_rows != 0);
    });
  }

  // ---- the operand's strips ----
  // Blocks of this core's strips [first_strip_, end_strip_) (all of them but in a split).
  void EmitBlocks() {
    const int64_t strips = end_strip_ - first_strip_;
    const uint64_t operand = operand_->address + first_strip_ * strip_bytes_;
    const int64_t blocks = (strips + block_strips_ - 1) / block_strips_;
    const uint32_t engines = out_.target().dma_engines();
    // Loads block `block` into `buffer`, from its HBM address, or (looped) from kLoadAddr.
    const auto load = [&](int64_t block, int buffer, bool looped) {
      const int64_t first = block * block_strips_;
      const int64_t count = std::min(block_strips_, strips - first);
      // Split across the DMA engines so several streams keep HBM busy.
      const int64_t parts = std::min<int64_t>(engines, count);
      for (int64_t p = 0; p < parts; ++p) {
        const int64_t a = count * p / parts;
        const int64_t b = count * (p + 1) / parts;
        const DmaAddress from = looped ? DmaAddress{isa::MEMORY_SPACE_HBM, a * strip_bytes_, kLoadAddr}
                                       : DmaAddress{isa::MEMORY_SPACE_HBM, operand + (first + a) * strip_bytes_};
        EmitFlatDma(out_, from, DmaAddress{isa::MEMORY_SPACE_VMEM, in_[buffer] + a * strip_bytes_}, (b - a) * strip_bytes_,
                    kLoadSem[buffer], static_cast<uint32_t>(p));
      }
      if (looped) Emit(isa::OPCODE_ADD, {S(kLoadAddr), S(kLoadAddr), count * strip_bytes_});
      return parts;
    };
    int64_t pending[2] = {0, 0};  // DMAs in flight into each buffer
    const auto step = [&](int64_t b, bool looped) {
      const int buffer = static_cast<int>(b % 2);
      if (b + 1 < blocks) pending[1 - buffer] = load(b + 1, 1 - buffer, looped);
      Emit(isa::OPCODE_SEM_WAIT, {Sem(kLoadSem[buffer]), pending[buffer]});
      const int64_t first = first_strip_ + b * block_strips_;
      EmitBlockFold(first, std::min(end_strip_, first + block_strips_), in_[buffer]);
      Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
      Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
    };
    pending[0] = load(0, 0, false);
    int64_t b = 0;
    // A lane fold's block code is the same for every full block but for the address it loads
    // from: pairs of blocks (buffers 0, 1) whose next block is full are one loop.
    const int64_t pairs = plan_.kind == ReduceKind::kLanes ? std::max<int64_t>(strips / block_strips_ - 1, 0) / 2 : 0;
    if (pairs > 1) {
      out_.Comment(fmt::format("blocks 1 to {} of {}, two per iteration", 2 * pairs, blocks));
      Emit(isa::OPCODE_MOV, {S(kLoadAddr), operand + block_strips_ * strip_bytes_});
      EmitLoop(kBlockCounter, pairs, [&] {
        step(0, true);
        step(1, true);
      });
      b = 2 * pairs;
    }
    for (; b < blocks; ++b) {
      out_.Comment(fmt::format("block {} of {}", b + 1, blocks));
      step(b, false);
    }
  }

  // Folds strips [first, last) of the operand, which lie at VMEM `base`, into the accumulators.
  void EmitBlockFold(int64_t first, int64_t last, uint64_t base) {
    if (plan_.kind == ReduceKind::kLanes) {
      EmitLaneBlockFold(first, last - first, base);
      return;
    }
    for (int64_t s = first; s < last;) {
      const uint64_t address = base + (s - first) * strip_bytes_;
      int64_t plain = 0;  // whole-matrix folds: strips that only fold their tiles into P
      while (plan_.kind == ReduceKind::kBoth && s + plain < last && FoldsOnly(s + plain)) ++plain;
      if (plain > 1) {
        // One loop over their tiles, which lie one after another: the code does not grow with
        // the strips (MaxText's gradient norm folds 20480 matrices of one tile into one sum).
        Emit(isa::OPCODE_MOV, {S(kInAddr), address});
        EmitLoop(kTileCounter, plain * plan_.in.strip_tiles, [&] {
          LoadTile(kX, Vmem(S(kInAddr)));
          FoldValue(kP, kX);
          Emit(isa::OPCODE_ADD, {S(kInAddr), S(kInAddr), plan_.in.tile_bytes});
        });
        s += plain;
      } else {
        EmitStrip(s, address);
        s += 1;
      }
    }
  }

  // Whole-matrix folds (kBoth) keep one running P over consecutive matrices that fold into the
  // same result element (reduced major dims), set at the first one's first strip and folded into
  // the result at the last one's last strip.
  bool StartsFold(int64_t strip) const {
    const int64_t spm = plan_.in.strips_per_matrix;
    const int64_t matrix = strip / spm;
    return strip % spm == 0 && (matrix == 0 || KeptMajorIndex(plan_, matrix - 1) != KeptMajorIndex(plan_, matrix));
  }
  bool EndsFold(int64_t strip) const {
    const int64_t spm = plan_.in.strips_per_matrix;
    const int64_t matrix = strip / spm;
    const int64_t matrices = plan_.in.strips / spm;
    return strip % spm == spm - 1 &&
           (matrix == matrices - 1 || KeptMajorIndex(plan_, matrix + 1) != KeptMajorIndex(plan_, matrix));
  }
  // A kBoth strip whose code is only the fold of its tiles: no start, no end, no padding to mask.
  bool FoldsOnly(int64_t strip) const {
    const int64_t spm = plan_.in.strips_per_matrix;
    const bool partial_strip = strip % spm == spm - 1 && (plan_.in.partial_rows != 0 || plan_.in.partial_elements != 0);
    const bool masked = needs_identity_ && (plan_.in.partial_lanes != 0 || partial_strip);
    return !StartsFold(strip) && !EndsFold(strip) && !masked;
  }

  // Loops over the strip's tiles (address in kInAddr), calling body(is_last_tile).
  void EmitStripTiles(const std::function<void(bool)>& body) {
    const int64_t n = plan_.in.strip_tiles;
    const bool split = needs_identity_ && plan_.in.partial_lanes != 0;
    const auto step = [&](bool last) {
      body(last);
      Emit(isa::OPCODE_ADD, {S(kInAddr), S(kInAddr), plan_.in.tile_bytes});
    };
    if (!split) {
      EmitLoop(kTileCounter, n, [&] { step(false); });
      return;
    }
    EmitLoop(kTileCounter, n - 1, [&] { step(false); });
    step(true);
  }

  // Replaces padding of the tile in kX with the identity where the op needs it.
  void MaskTile(bool last_tile, bool partial_strip) {
    if (!needs_identity_) return;
    if (last_tile) Emit(isa::OPCODE_VSEL, {V(st_->x), M(kLaneMask), V(st_->x), V(kIdent)});
    if (partial_strip) {
      const int mask = plan_.rank1 ? kElementMask : kRowMask;
      Emit(isa::OPCODE_VSEL, {V(st_->x), M(mask), V(st_->x), V(kIdent)});
    }
  }

  // The strip's tiles two at a time, interleaved: body(input offset, accumulator offset) for a
  // tile at kInAddr + input offset whose accumulator tile is at kAccAddr + accumulator offset.
  template <typename Body>
  void EmitTilePairs(Body body) {
    const int64_t n = plan_.in.strip_tiles;
    const uint64_t in_tile = plan_.in.tile_bytes;
    const uint64_t acc_tile = S_ * L_ * 4;
    const auto advance = [&](int64_t tiles) {
      Emit(isa::OPCODE_ADD, {S(kInAddr), S(kInAddr), tiles * in_tile});
      Emit(isa::OPCODE_ADD, {S(kAccAddr), S(kAccAddr), tiles * acc_tile});
    };
    EmitLoop(kTileCounter, n / 2, [&] {
      Zip([&] { body(0, 0); }, [&] { body(in_tile, acc_tile); });
      advance(2);
    });
    if (n % 2 != 0) {
      body(0, 0);
      advance(1);
    }
  }

  // ---- lane folds (kLanes) ----
  // A lane fold's code does not depend on which strip it folds: where the strip's rows go (the
  // lane shift within the result row, the result row's address) lives in scalar registers, and a
  // result row is stored when its last strip is folded (a branch). So the strips of a block are
  // one loop, and the blocks of an unfused kernel are one loop too (EmitBlocks): MaxText's
  // attention softmax sums over [16,8,2048,2048] were 3.3 M instructions unrolled.

  // The lane-fold registers at the first strip. The producer of a fused fold leaves them alone.
  void EmitLaneStart() {
    // This core's first strip (0 but in a split): the first of a result row.
    const int64_t spm = plan_.in.strips_per_matrix;
    const int64_t matrix = first_strip_ / spm;
    const int64_t strip = first_strip_ % spm;
    std::vector<int64_t> index = KeptMajorIndex(plan_, matrix);
    index.push_back(strip * S_);
    Emit(isa::OPCODE_MOV, {S(kLaneShift), strip % (L_ / S_) * S_});
    Emit(isa::OPCODE_MOV, {S(kStripInMatrix), strip});
    Emit(isa::OPCODE_MOV, {S(kMatrix), matrix});
    Emit(isa::OPCODE_MOV, {S(kRowAddr), OutByte(index)});
  }

  // kRowAddr = the byte offset of the first result row of matrix kMatrix: OutputWord's formula
  // (reduce_plan.cc) in scalar code, the kept major indices taken apart by div and rem.
  void EmitMatrixRowAddress() {
    const int64_t rank = plan_.result.rank();
    if (rank <= 1) {
      Emit(isa::OPCODE_MOV, {S(kRowAddr), 0});
      return;
    }
    const std::size_t majors = plan_.major_dims.size();
    std::size_t last_kept = majors;
    for (std::size_t d = 0; d < majors; ++d) {
      if (!plan_.major_reduced[d]) last_kept = d;
    }
    int64_t stride = 1;
    std::vector<int64_t> strides(majors);
    for (std::size_t d = majors; d-- > 0;) {
      strides[d] = stride;
      stride *= plan_.major_dims[d];
    }
    // kTempA: the result's matrix index (its dims above the last two); kTempB: its row.
    Emit(isa::OPCODE_MOV, {S(kTempA), 0});
    for (std::size_t d = 0; d < majors; ++d) {
      if (plan_.major_reduced[d]) continue;
      const int target = d == last_kept ? kTempB : kTempC;
      Emit(isa::OPCODE_DIV, {S(target), S(kMatrix), strides[d]});
      Emit(isa::OPCODE_REM, {S(target), S(target), plan_.major_dims[d]});
      if (d == last_kept) continue;
      Emit(isa::OPCODE_MUL, {S(kTempA), S(kTempA), plan_.major_dims[d]});
      Emit(isa::OPCODE_ADD, {S(kTempA), S(kTempA), S(kTempC)});
    }
    const int64_t rows = plan_.result.dims[rank - 2];
    const int64_t columns = plan_.result.dims[rank - 1];
    const int64_t strip_tiles = (columns + L_ - 1) / L_;
    const int64_t strips_per_matrix = (rows + S_ - 1) / S_;
    // word = ((matrix * strips_per_matrix + row / S) * strip_tiles) * S * L + (row % S) * L
    Emit(isa::OPCODE_MUL, {S(kTempA), S(kTempA), strips_per_matrix});
    Emit(isa::OPCODE_DIV, {S(kTempC), S(kTempB), S_});
    Emit(isa::OPCODE_ADD, {S(kTempA), S(kTempA), S(kTempC)});
    Emit(isa::OPCODE_MUL, {S(kTempA), S(kTempA), strip_tiles * S_ * L_ * 4});
    Emit(isa::OPCODE_REM, {S(kTempC), S(kTempB), S_});
    Emit(isa::OPCODE_MUL, {S(kTempC), S(kTempC), L_ * 4});
    Emit(isa::OPCODE_ADD, {S(kRowAddr), S(kTempA), S(kTempC)});
  }

  // Folds `count` strips at VMEM `base`, strip `first` on (the lane-fold registers say where they
  // go): in groups where the block is whole groups from a group's start (a block of the same code
  // that runs for later blocks has the same count, so they start at multiples of it), else two
  // at a time in strands A and B.
  void EmitLaneBlockFold(int64_t first, int64_t count, uint64_t base) {
    Emit(isa::OPCODE_MOV, {S(kInAddr), base});
    const int64_t n = lane_group_;
    if (n > 1 && first % n == 0 && count % n == 0) {
      EmitLaneGroups(count / n);
      return;
    }
    EmitLoop(kStripCounter, count / 2, [&] { EmitLaneStrips(2); });
    if (count % 2 != 0) EmitLaneStrips(1);
  }

  // `groups` groups of lane_group_ strips at kInAddr, each strip in its own strand: its tiles
  // folded, then folded across lanes with the sum in every lane (vredb, or the butterfly); strip
  // k's sums are selected into the lanes of the group's S-lane block k in the result row and
  // or-ed into Q, and one vxpose puts row t of strip k at lane t of that block: the group's rows
  // in order, in place. Per strip one cross-lane fold, where pairs take three (vred, vxpose, vrot)
  // and wait on each: the MHA block's softmax sums (rows of 128) were bound by that latency.
  // Software-pipelined, as the VPU issues in order: group g's folds, group g - 1's vxpose, group
  // g's selects (its folds done by then, and the vxpose too), then group g - 1's rows join G.
  void EmitLaneGroups(int64_t groups) {
    // Each lane's block, set here: the accumulators' init uses the register as a temp.
    Emit(isa::OPCODE_VBCAST, {V(kQ), S_});
    Emit(isa::OPCODE_VDIV_S32, {V(kLaneBlock), V(kLane), V(kQ)});
    EmitGroupFolds();
    EmitGroupSelects(false);
    EmitLoop(kStripCounter, groups - 1, [&] {
      EmitGroupFolds();
      Emit(isa::OPCODE_VXPOSE, {V(kGathered), V(kQ)});
      EmitGroupSelects(true);
      EmitGroupGather();
    });
    Emit(isa::OPCODE_VXPOSE, {V(kGathered), V(kQ)});
    EmitGroupGather();
  }

  // The group's strips at kInAddr (which moves past them) folded, each into its strand's p.
  void EmitGroupFolds() {
    const int n = static_cast<int>(lane_group_);
    const auto strands = [&](const std::function<void()>& f) { ZipStrands(n, f); };
    const bool masked = needs_identity_ && plan_.in.partial_lanes != 0;
    if (!masked && plan_.in.strip_tiles == 1) {
      // One tile a strip (a producer's strips folded, ProducerSink::fold): the tile is the fold
      // (identity op x = x, for -0 too), loaded straight into p.
      strands([&] { LoadTile(st_->p, VmemAt(kInAddr, strand_ * strip_bytes_)); });
      Emit(isa::OPCODE_ADD, {S(kInAddr), S(kInAddr), n * strip_bytes_});
      strands([&] { LaneReduce(st_->p, true); });
      return;
    }
    strands([&] { Emit(isa::OPCODE_VMOV, {V(st_->p), V(kIdent)}); });
    if (masked) {
      EmitStripTiles([&](bool last) {
        strands([&] {
          LoadTile(st_->x, VmemAt(kInAddr, strand_ * strip_bytes_));
          MaskTile(last, false);
          FoldValue(st_->p, st_->x);
        });
      });
    } else {
      EmitPipelinedStripTiles(strands);
    }
    Emit(isa::OPCODE_ADD, {S(kInAddr), S(kInAddr), (n - 1) * strip_bytes_});
    strands([&] { LaneReduce(st_->p, true); });
  }

  // The group's tiles folded with the next tile's loads ahead of this one's widening and fold,
  // in x and y by turns: the in-order VPU issued a tile's loads after the tile before had
  // folded, and its first widening waited on a load (VMEM's read port takes a bf16 tile in 2
  // cycles): the sum workload 10.5 -> 9.5 us.
  void EmitPipelinedStripTiles(const std::function<void(const std::function<void()>&)>& strands) {
    const int64_t n = plan_.in.strip_tiles;
    const uint64_t tile = plan_.in.tile_bytes;
    const auto load = [&](int reg, uint64_t offset) {
      LoadTileBits(reg, VmemAt(kInAddr, strand_ * strip_bytes_ + offset));
    };
    const auto fold = [&](int reg) {
      WidenTile(reg);
      FoldValue(st_->p, reg);
    };
    strands([&] { load(st_->x, 0); });
    EmitLoop(kTileCounter, (n - 1) / 2, [&] {
      strands([&] {
        load(st_->y, tile);
        fold(st_->x);
      });
      strands([&] {
        load(st_->x, 2 * tile);
        fold(st_->y);
      });
      Emit(isa::OPCODE_ADD, {S(kInAddr), S(kInAddr), 2 * tile});
    });
    if (n % 2 == 0) {
      strands([&] {
        load(st_->y, tile);
        fold(st_->x);
      });
      strands([&] { fold(st_->y); });
    } else {
      strands([&] { fold(st_->x); });
    }
    Emit(isa::OPCODE_ADD, {S(kInAddr), S(kInAddr), (n % 2 == 0 ? 2 : 1) * tile});
  }

  // Q = strip k's sums in the lanes of the group's block k (the group's first strip's place in
  // its matrix, in blocks of S lanes, mod L / S, plus k), zeros elsewhere: each strand's selected
  // on its own, then or-ed pairwise. `next`: the lane-fold registers still place the group before.
  void EmitGroupSelects(bool next) {
    const int n = static_cast<int>(lane_group_);
    Emit(isa::OPCODE_ADD, {S(kTempA), S(kStripInMatrix), next ? n : 0});
    Emit(isa::OPCODE_REM, {S(kTempA), S(kTempA), plan_.in.strips_per_matrix});
    Emit(isa::OPCODE_REM, {S(kTempA), S(kTempA), L_ / S_});
    for (int k = 0; k < n; ++k) {
      Emit(isa::OPCODE_ADD, {S(kTempB), S(kTempA), k});
      Emit(isa::OPCODE_VBCAST, {V(kGroupStrands[k].y), S(kTempB)});
    }
    for (int k = 0; k < n; ++k) {
      const Strand& s = kGroupStrands[k];
      const int mask = kGroupMask0 + k % kGroupMasks;
      Emit(isa::OPCODE_VCMP_EQ_S32, {M(mask), V(kLaneBlock), V(s.y)});
      Emit(isa::OPCODE_VSEL, {V(s.p), M(mask), V(s.p), V(kZero)});
    }
    for (int step = 1; step < n; step *= 2) {
      for (int k = 0; k + step < n; k += 2 * step) {
        const int into = 2 * step >= n ? kQ : kGroupStrands[k].p;
        Emit(isa::OPCODE_VOR, {V(into), V(kGroupStrands[k].p), V(kGroupStrands[k + step].p)});
      }
    }
  }

  // The group before (its rows vxposed into kGathered) joins G.
  void EmitGroupGather() {
    Emit(isa::OPCODE_VOR, {V(kG), V(kG), V(kGathered)});  // its other lanes are zero
    EmitGatheredStrips(lane_group_);
  }

  // One or two strips (a pair: strands A and B) at kInAddr, which moves past them: fold each
  // strip's tiles, fold across lanes, gather the rows' values into the result row.
  void EmitLaneStrips(int count) {
    const auto both = [&](const std::function<void()>& f) {
      if (count == 2) {
        Zip(f, f);
      } else {
        f();
      }
    };
    both([&] { Emit(isa::OPCODE_VMOV, {V(st_->p), V(kIdent)}); });
    EmitStripTiles([&](bool last) {
      const auto tile = [&](uint64_t off) {
        LoadTile(st_->x, VmemAt(kInAddr, off));
        MaskTile(last, false);
        FoldValue(st_->p, st_->x);
      };
      if (count == 2) {
        Zip([&] { tile(0); }, [&] { tile(strip_bytes_); });
      } else {
        tile(0);
      }
    });
    if (count == 2) Emit(isa::OPCODE_ADD, {S(kInAddr), S(kInAddr), strip_bytes_});
    both([&] { LaneReduce(st_->p, false); });
    for (int k = 0; k < count; ++k) {
      st_ = k == 0 ? &kStrandA : &kStrandB;
      EmitGatherRows();
    }
    st_ = &kStrandA;
  }

  // The strip's row values (lane 0 of each sublane, in p) join the result row gathered in G at
  // lanes [shift, shift + S); the row is folded into its accumulator once full, or at the
  // matrix's last strip.
  void EmitGatherRows() {
    Emit(isa::OPCODE_VXPOSE, {V(st_->p), V(st_->p)});  // row t's value to lane t of sublane 0
    Emit(isa::OPCODE_VROT, {V(st_->p), V(st_->p), S(kLaneShift)});
    Emit(isa::OPCODE_VOR, {V(kG), V(kG), V(st_->p)});  // the other lanes of both are zero
    EmitGatheredStrips(1);
  }

  // `count` strips' rows have joined G: the lane shift and the strip index move on; the row is
  // folded into its accumulator once full, or at the matrix's last strip (only G's sublane 0 is
  // stored).
  void EmitGatheredStrips(int64_t count) {
    const int64_t spm = plan_.in.strips_per_matrix;
    Emit(isa::OPCODE_ADD, {S(kLaneShift), S(kLaneShift), count * S_});
    Emit(isa::OPCODE_ADD, {S(kStripInMatrix), S(kStripInMatrix), count});
    const std::string row_done = out_.NewLabel(c_.instruction.name() + ".row_done");
    const std::string next = out_.NewLabel(c_.instruction.name() + ".next_strip");
    Emit(isa::OPCODE_BEQ, {S(kLaneShift), L_, Label(row_done)});
    Emit(isa::OPCODE_BNE, {S(kStripInMatrix), spm, Label(next)});
    out_.Bind(row_done);
    Rmw(kRowAddr, acc_, kG, true);
    Emit(isa::OPCODE_VMOV, {V(kG), V(kZero)});
    Emit(isa::OPCODE_MOV, {S(kLaneShift), 0});
    Emit(isa::OPCODE_ADD, {S(kRowAddr), S(kRowAddr), plan_.result.rank() >= 2 ? S_ * L_ * 4 : L_ * 4});
    Emit(isa::OPCODE_BNE, {S(kStripInMatrix), spm, Label(next)});
    Emit(isa::OPCODE_MOV, {S(kStripInMatrix), 0});
    Emit(isa::OPCODE_ADD, {S(kMatrix), S(kMatrix), 1});
    if (plan_.in.strips > spm) EmitMatrixRowAddress();
    out_.Bind(next);
  }

  uint64_t OutByte(const std::vector<int64_t>& index) const {
    return static_cast<uint64_t>(OutputWord(plan_.result, index, S_, L_)) * 4;
  }

  void EmitStrip(int64_t strip, uint64_t address) {
    const int64_t spm = plan_.in.strips_per_matrix;
    const int64_t matrix = strip / spm;
    const int64_t s = strip % spm;
    const std::vector<int64_t> kept = KeptMajorIndex(plan_, matrix);
    const bool partial_strip = s == spm - 1 && (plan_.in.partial_rows != 0 || plan_.in.partial_elements != 0);
    Emit(isa::OPCODE_MOV, {S(kInAddr), address});
    const auto in = [&] { return Vmem(S(kInAddr)); };
    switch (plan_.kind) {
      case ReduceKind::kMajor: {
        // The result tile of (kept, s, j) is the operand tile of (matrix, s, j), same positions.
        int64_t out_matrix = 0;
        int64_t stride = 1;
        for (std::size_t d = plan_.major_dims.size(), k = kept.size(); d-- > 0;) {
          if (plan_.major_reduced[d]) continue;
          out_matrix += kept[--k] * stride;
          stride *= plan_.major_dims[d];
        }
        const int64_t tile = (out_matrix * spm + s) * plan_.in.strip_tiles;
        Emit(isa::OPCODE_MOV, {S(kAccAddr), tile * S_ * L_ * 4});
        EmitTilePairs([&](uint64_t in_off, uint64_t acc_off) {
          LoadTile(st_->x, VmemAt(kInAddr, in_off));
          Rmw(kAccAddr, acc_ + acc_off, st_->x, false);
        });
        return;
      }
      case ReduceKind::kLanes:
        throw Error("internal: lane folds go through EmitLaneBlockFold");
      case ReduceKind::kRows: {
        const uint64_t tile = S_ * L_ * 4;
        if (s == 0) {
          Emit(isa::OPCODE_MOV, {S(kAccAddr), 0});
          EmitLoop(kTileCounter, plan_.in.strip_tiles, [&] {
            Emit(isa::OPCODE_VST, {V(kIdent), VmemAt(kAccAddr, scratch_)});
            Emit(isa::OPCODE_ADD, {S(kAccAddr), S(kAccAddr), tile});
          });
        }
        Emit(isa::OPCODE_MOV, {S(kAccAddr), 0});
        EmitTilePairs([&](uint64_t in_off, uint64_t acc_off) {
          LoadTile(st_->x, VmemAt(kInAddr, in_off));
          MaskTile(false, partial_strip);
          Rmw(kAccAddr, scratch_ + acc_off, st_->x, false);
        });
        if (s != spm - 1) return;
        // The matrix is done: fold each column tile's sublanes into its result row.
        std::vector<int64_t> index = kept;
        index.push_back(0);
        Emit(isa::OPCODE_MOV, {S(kAccAddr), 0});
        Emit(isa::OPCODE_MOV, {S(kRowAddr), OutByte(index)});
        const uint64_t row_stride = plan_.result.rank() >= 2 ? tile : L_ * 4;
        EmitLoop(kTileCounter, plan_.in.strip_tiles, [&] {
          SublaneFold(kAccAddr, scratch_);
          Rmw(kRowAddr, acc_, kR, true);
          Emit(isa::OPCODE_ADD, {S(kAccAddr), S(kAccAddr), tile});
          Emit(isa::OPCODE_ADD, {S(kRowAddr), S(kRowAddr), row_stride});
        });
        return;
      }
      case ReduceKind::kBoth: {
        if (StartsFold(strip)) Emit(isa::OPCODE_VMOV, {V(kP), V(kIdent)});
        EmitStripTiles([&](bool last) {
          LoadTile(kX, in());
          MaskTile(last, partial_strip);
          FoldValue(kP, kX);
        });
        if (!EndsFold(strip)) return;
        // The matrix is done: sublanes, then lanes, then into its one result element.
        Emit(isa::OPCODE_MOV, {S(kAccAddr), 0});
        Emit(isa::OPCODE_VST, {V(kP), VmemAt(kAccAddr, scratch_)});
        SublaneFold(kAccAddr, scratch_);
        LaneReduce(kR, true);
        const uint64_t at = OutByte(kept);
        const uint64_t lane = (at / 4) % L_;
        Emit(isa::OPCODE_VBCAST, {V(kT), lane});
        Emit(isa::OPCODE_VCMP_EQ_S32, {M(kTempMask), V(kLane), V(kT)});
        Emit(isa::OPCODE_MOV, {S(kRowAddr), at - lane * 4});
        Rmw(kRowAddr, acc_, kR, true, kTempMask);
        return;
      }
    }
  }

  // ---- the result ----
  void EmitFinish() {
    const bool bf16 = plan_.type == isa::ElementType::kBF16;
    const uint64_t tile = S_ * L_ * 4;
    if (bf16) {
      Emit(isa::OPCODE_MOV, {S(kAccAddr), 0});
      Emit(isa::OPCODE_MOV, {S(kRowAddr), 0});
      EmitLoop(kTileCounter, out_tiles_, [&] {
        Emit(isa::OPCODE_VLD, {V(kA), VmemAt(kAccAddr, acc_)});
        Emit(isa::OPCODE_VPACK_BF16, {V(kA), V(kA), V(kA)});
        Emit(isa::OPCODE_VST, {V(kA), VmemAt(kRowAddr, stage_)}, {{"sublanes", Bits(0xf)}});
        Emit(isa::OPCODE_ADD, {S(kRowAddr), S(kRowAddr), tile / 2});
        Emit(isa::OPCODE_ADD, {S(kAccAddr), S(kAccAddr), tile});
      });
    }
    Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
    Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
    const uint64_t image = bf16 ? stage_ : acc_;
    if (split_) {
      EmitCoreResultDma(image);
    } else {
      const uint64_t bytes = static_cast<uint64_t>(plan_.out.tiles * plan_.out.tile_bytes);
      EmitFlatDma(out_, isa::MEMORY_SPACE_VMEM, image, isa::MEMORY_SPACE_HBM, result_->address, bytes, kStoreSem, 0);
    }
    Emit(isa::OPCODE_SEM_WAIT, {Sem(kStoreSem), 1});
  }

  // A split's result: this core's box of the result image at VMEM `image`, its units along the
  // split dim and all of the others, the last core's reaching the padding (which it writes, zero).
  void EmitCoreResultDma(uint64_t image) {
    const isa::Shape view = PaddedView(plan_.result);
    const int64_t rank = view.rank();
    const int d = lane_split_.dim;
    std::vector<int64_t> start(static_cast<std::size_t>(rank), 0);
    std::vector<int64_t> size = view.dims;
    const int64_t unit = lane_split_.unit_strips;
    const int64_t begin = first_strip_ / unit * lane_split_.unit_elements;
    const bool last = c_.part.index + 1 == c_.part.count;
    const int64_t end = last ? view.dims[d] : end_strip_ / unit * lane_split_.unit_elements;
    start[d] = begin;
    size[d] = end - begin;
    const IndexValue first = Index(std::vector<RegPlus>(start.begin(), start.end()));
    Emit(isa::OPCODE_DMA, {Vmem(static_cast<int64_t>(image)), Hbm(static_cast<int64_t>(result_->address))},
         {{"src", ShapeArg(view)},
          {"dst", ShapeArg(view)},
          {"src_start", first},
          {"dst_start", first},
          {"size", Sizes(size)},
          {"sem", Sem(kStoreSem)},
          {"engine", 0}});
  }

  KernelContext& c_;
  ProgramBuilder& out_;
  int64_t S_ = 8;
  int64_t L_ = 128;
  const DeviceBuffer* operand_ = nullptr;
  const DeviceBuffer* init_ = nullptr;
  const DeviceBuffer* result_ = nullptr;
  ReducePlan plan_;
  bool is_float_ = true;
  bool is_unsigned_ = false;
  bool needs_identity_ = false;
  std::vector<isa::Instruction>* capture_ = nullptr;
  const Strand* st_ = &kStrandA;
  int strand_ = 0;  // ZipStrands: the group strand being emitted
  int64_t out_tiles_ = 1;
  uint64_t acc_ = 0, stage_ = 0, scratch_ = 0;
  uint64_t in_[2] = {0, 0};
  bool fused_ = false;        // the operand is computed in the kernel (input fusion)
  const hlo::Instruction* produced_ = nullptr;  // fused: what the producer computes (ProducedValue)
  std::optional<ProducerSink::StripFold> strip_fold_;  // fused: the producer folds its strips (PlanStripFold)
  uint64_t spill_ = 0;         // fused: the running fold between blocks (RunningFold)
  uint64_t producer_vmem_ = 0;  // fused: the producer's VMEM starts here
  int64_t max_block_strips_ = 0;  // fused and split: the producer's blocks at most (PlanCoreStrips)
  uint64_t strip_bytes_ = 0;
  int64_t block_strips_ = 1;
  int64_t lane_group_ = 1;  // strips per lane-fold group (PlanLaneGroup); 1: pairs
  // Megacore (PlanLaneSplit): units of `unit_strips` strips, `units` of them; unit u is elements
  // [u x unit_elements, + unit_elements) of the result's dim `dim`.
  struct LaneSplit {
    int64_t unit_strips = 0, units = 0;
    int dim = 0;
    int64_t unit_elements = 0;
  };
  LaneSplit lane_split_;
  bool split_ = false;  // split over c_.part.count cores: this core folds strips [first_strip_, end_strip_)
  int64_t first_strip_ = 0, end_strip_ = 0;
};

}  // namespace

void EmitReduceKernel(KernelContext& context) { ReduceEmitter(context).Run(); }

int ReduceCoreParts(const KernelContext& context) {
  const int cores = static_cast<int>(isa::TensorCores(context.options.target));
  if (cores <= 1) return 1;
  KernelContext planned = context;
  planned.part = {0, cores};
  return ReduceEmitter(planned).SplitsOverCores() ? cores : 1;
}

bool ReduceInputFusionFits(const KernelGroup& group, const CompileOptions& options) {
  return GroupPlans(group, options, [](KernelContext& context) { ReduceEmitter(context).PlanOnly(); });
}

}  // namespace tpusim::compiler
