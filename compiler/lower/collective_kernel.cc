#include "compiler/lower/collective_kernel.h"

#include <fmt/format.h>
#include <algorithm>
#include <string>
#include <vector>

#include "compiler/lower/collective_group.h"
#include "compiler/lower/dma_region.h"
#include "compiler/lower/reduce_plan.h"
#include "isa/error.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;
using namespace isa::ops;

// Semaphores of the ring kernels.
constexpr uint32_t kSendSem = 0;
constexpr uint32_t kArrivedSem[2] = {1, 2};  // a block's local bytes are in VMEM
constexpr uint32_t kStoredSem[2] = {3, 4};   // a block's sum is back in HBM
constexpr uint32_t kVpuSem = 5;
constexpr uint32_t kReceivedSem[2] = {6, 7};  // a received block is in VMEM, by receive engine
constexpr uint32_t kRingSemaphores = 8;
// Scalar registers of the VPU loop.
constexpr int kOffsetReg = 20;
constexpr int kCountReg = 21;
// A reduce-scatter step's received chunk is added in VMEM blocks of at most this many bytes.
constexpr uint64_t kMaxBlockBytes = uint64_t{1} << 20;
constexpr uint64_t kMinBlocks = 8;
constexpr uint64_t kMinBlockBytes = 64 * 1024;  // smaller blocks cost more in fixed costs than they overlap
// Received blocks in flight (VMEM slots); with the two local buffers, 6 blocks of VMEM.
constexpr int64_t kReceiveSlots = 4;
// A flat copy is cut into one piece per engine when each piece gets at least this much.
constexpr uint64_t kMinPieceBytes = 64 * 1024;
// Tiles added per VPU loop iteration (their loads and latencies overlap).
constexpr int64_t kTilesPerIteration = 4;

const DeviceBuffer& OnlyOperand(const KernelContext& c) {
  if (c.operands.size() != 1 || c.operands[0].size() != 1 || c.operands[0][0] == nullptr) {
    CannotLower(c.instruction, "takes one array operand here (several operands travelling as a tuple are not lowered)");
  }
  return *c.operands[0][0];
}

const DeviceBuffer& OnlyResult(const KernelContext& c) {
  if (c.results.size() != 1 || c.results[0] == nullptr) CannotLower(c.instruction, "expected one array result");
  return *c.results[0];
}

DeviceCount ModuleDevices(const hlo::Instruction& instruction) {
  const hlo::Computation* computation = instruction.parent();
  if (computation == nullptr || computation->parent() == nullptr) return {};
  return DevicesOf(*computation->parent());
}

// partition-id / replica-id: the value through SMEM into the u32 result.
void EmitDeviceId(KernelContext& c, int64_t value) {
  const DeviceBuffer& result = OnlyResult(c);
  if (result.shape.rank() != 0 || result.size_bytes != 4) CannotLower(c.instruction, "expected a u32[] result");
  c.out.Emit(isa::OPCODE_MOV, {S(1), value});
  c.out.Emit(isa::OPCODE_ST_S32, {S(1), Smem(0x0)});
  EmitFlatDma(c.out, isa::MEMORY_SPACE_SMEM, 0, isa::MEMORY_SPACE_HBM, result.address, 4, 0, 0);
  c.out.Emit(isa::OPCODE_SEM_WAIT, {Sem(0), 1});
}

// The engines a ring kernel uses for each stream, so that no stream queues behind another: sends
// on engine 0; receives on the next two, taking turns block by block so that one transfer's
// start overlaps the previous one's end and the link never idles between them; the VPU's
// loads and stores on the last. Fewer engines share.
struct RingEngines {
  std::vector<uint32_t> send;
  std::vector<uint32_t> receive;
  std::vector<uint32_t> local;
};

RingEngines EnginesFor(uint32_t count) {
  if (count <= 1) return {{0}, {0}, {0}};
  if (count == 2) return {{0}, {1}, {1}};
  if (count == 3) return {{0}, {1}, {2}};
  return {{0}, {1, 2}, {count - 1}};
}

// A flat copy of `bytes` cut into one piece per engine of `engines` (pieces of at least
// kMinPieceBytes, multiples of 4 bytes); returns the number of DMAs, all signalling `sem`.
int64_t EmitSpread(ProgramBuilder& out, isa::MemorySpace from_space, uint64_t from, isa::MemorySpace to_space, uint64_t to,
                   uint64_t bytes, uint32_t sem, const std::vector<uint32_t>& engines) {
  if (bytes == 0) return 0;
  const uint64_t wanted = std::min<uint64_t>(engines.size(), std::max<uint64_t>(1, bytes / kMinPieceBytes));
  const uint64_t per = bytes % 4 == 0 ? AlignUp((bytes + wanted - 1) / wanted, 4) : bytes;
  int64_t count = 0;
  for (uint64_t at = 0; at < bytes; at += per) {
    EmitFlatDma(out, from_space, from + at, to_space, to + at, std::min(per, bytes - at), sem,
                engines[static_cast<std::size_t>(count) % engines.size()]);
    ++count;
  }
  return count;
}

// A group of one: the result is the operand. Equal layouts copy the image (zero padding
// included); others copy elements after zeroing the result's padding.
void EmitCopy(KernelContext& c) {
  const DeviceBuffer& operand = OnlyOperand(c);
  const DeviceBuffer& result = OnlyResult(c);
  if (operand.shape.dims != result.shape.dims || operand.shape.element_type != result.shape.element_type) {
    CannotLower(c.instruction, "a group of one device must give the operand's shape");
  }
  if (isa::ToString(WithoutMemorySpace(operand.shape)) == isa::ToString(WithoutMemorySpace(result.shape))) {
    std::vector<uint32_t> engines;
    for (uint32_t e = 0; e < std::max<uint32_t>(1, c.out.target().dma_engines()); ++e) engines.push_back(e);
    const int64_t count = EmitSpread(c.out, isa::MEMORY_SPACE_HBM, operand.address, isa::MEMORY_SPACE_HBM, result.address, operand.size_bytes, 0, engines);
    if (count > 0) c.out.Emit(isa::OPCODE_SEM_WAIT, {Sem(0), count});
    return;
  }
  DmaEmitter dma(c);
  dma.ZeroLayoutPadding(HbmArray(result));
  const auto rank = static_cast<std::size_t>(operand.shape.rank());
  dma.SplitDma(HbmArray(operand), std::vector<int64_t>(rank, 0), HbmArray(result), std::vector<int64_t>(rank, 0),
               operand.shape.dims);
  dma.WaitDmas();
}

// `what`: "over a group of 8 devices", "from device 3".
[[noreturn]] void RefuseFunctional(const KernelContext& c, const std::string& what) {
  throw Error(c.instruction.Describe() + ": " + std::string(hlo::OpcodeName(c.instruction.opcode())) + " " + what +
              " needs the other devices' data, which a simulation of one device does not have; run it with "
              "`tpusim run --timing-only` (the collective then charges its ICI time and moves no data)");
}

// collective-permute: the operand to the target device (over the ICI when that is another
// device), the source's operand into the result. Exact when the source is this device (a copy)
// or no device (zeros, XLA's rule); a source elsewhere needs its data (timing-only: one receive
// over the ICI, one hop whatever the pair's distance).
void EmitCollectivePermute(KernelContext& c, const PermutePeers& peers, int64_t device) {
  const DeviceBuffer& operand = OnlyOperand(c);
  const DeviceBuffer& result = OnlyResult(c);
  const bool remote_source = peers.source >= 0 && peers.source != device;
  if (remote_source && !c.options.timing_only) RefuseFunctional(c, "from device " + std::to_string(peers.source));
  if (peers.source == device) {
    EmitCopy(c);
    return;
  }
  const RingEngines engines = EnginesFor(std::max<uint32_t>(1, c.out.target().dma_engines()));
  DmaEmitter dma(c);
  int64_t sends = 0;
  if (peers.target >= 0 && peers.target != device) {
    sends = EmitSpread(c.out, isa::MEMORY_SPACE_HBM, operand.address, isa::MEMORY_SPACE_ICI, 0, operand.size_bytes, kSendSem, engines.send);
  }
  if (remote_source) {
    const int64_t receives =
        EmitSpread(c.out, isa::MEMORY_SPACE_ICI, 0, isa::MEMORY_SPACE_HBM, result.address, result.size_bytes, kArrivedSem[0], engines.receive);
    c.out.Emit(isa::OPCODE_SEM_WAIT, {Sem(kArrivedSem[0]), receives});
  } else {  // nobody sends here: zeros, from a zeroed VMEM block
    const uint64_t block = AlignUp(std::min<uint64_t>(result.size_bytes, kMaxBlockBytes), 4096);
    const uint64_t zeros = dma.AllocVmem(block, "the zero block");
    dma.VpuFillWordsImmediate(zeros, block, 0);
    dma.WaitVpu();
    int64_t count = 0;
    for (uint64_t at = 0; at < result.size_bytes; at += block) {
      EmitFlatDma(c.out, isa::MEMORY_SPACE_VMEM, zeros, isa::MEMORY_SPACE_HBM, result.address + at, std::min(block, result.size_bytes - at), kArrivedSem[0],
                  engines.local[0]);
      ++count;
    }
    c.out.Emit(isa::OPCODE_SEM_WAIT, {Sem(kArrivedSem[0]), count});
  }
  if (sends > 0) c.out.Emit(isa::OPCODE_SEM_WAIT, {Sem(kSendSem), sends});
}

// One of n equal pieces of an image of `total` bytes (4-byte aligned). A piece past the end (a
// small array over many devices) is still one message of the first bytes: every ring step sends
// something.
struct Chunk {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
Chunk ChunkOf(uint64_t total, int64_t n, int64_t index) {
  const uint64_t unit = std::min<uint64_t>(total, 4);
  const uint64_t per = AlignUp((total + static_cast<uint64_t>(n) - 1) / static_cast<uint64_t>(n), unit);
  const uint64_t offset = per * static_cast<uint64_t>(index);
  if (offset >= total) return {0, std::min(per, total)};
  return {offset, std::min(per, total - offset)};
}

int64_t Mod(int64_t value, int64_t n) { return ((value % n) + n) % n; }

// The VPU's part of a reduce-scatter step: what the reducer is on which element type.
struct RingReduction {
  isa::Opcode op = isa::OPCODE_VADD_F32;  // vadd.f32, ...
  bool bf16 = false;    // tiles of 2 KiB, unpacked to f32 and packed back
  uint64_t tile_bytes = 4096;
};

RingReduction ReductionOf(const KernelContext& c, isa::ElementType type) {
  const hlo::Computation* reducer = c.instruction.GetComputation("to_apply");
  const hlo::Instruction* root = reducer->root();
  const bool binary = root->operand_count() == 2 && root->operand(0)->opcode() == Opcode::kParameter &&
                      root->operand(1)->opcode() == Opcode::kParameter;
  const Opcode reducer_op = root->opcode();
  const bool known = reducer_op == Opcode::kAdd || reducer_op == Opcode::kMultiply || reducer_op == Opcode::kMaximum ||
                     reducer_op == Opcode::kMinimum;
  RingReduction r;
  if (!binary || !known) {
    CannotLower(c.instruction, "the ring adds on the VPU: its to_apply must be add, multiply, maximum or minimum of its two parameters");
  }
  switch (type) {
    case isa::ElementType::kBF16:
      r.bf16 = true;
      r.tile_bytes = 2048;
      break;
    case isa::ElementType::kF32:
    case isa::ElementType::kS32:
    case isa::ElementType::kU32:
      break;
    default:
      CannotLower(c.instruction, "the ring reduces f32, bf16, s32 and u32 on the VPU; not " +
                                     std::string(isa::ElementTypeName(type)));
  }
  const hlo::ReduceOp op = reducer_op == Opcode::kAdd        ? hlo::ReduceOp::kAdd
                           : reducer_op == Opcode::kMultiply ? hlo::ReduceOp::kMultiply
                           : reducer_op == Opcode::kMaximum  ? hlo::ReduceOp::kMaximum
                                                             : hlo::ReduceOp::kMinimum;
  r.op = ReduceOpInstruction(op, type == isa::ElementType::kF32 || type == isa::ElementType::kBF16,
                             type == isa::ElementType::kU32);
  return r;
}

// The VPU combines `tiles` tiles at VMEM `local` with those at `received`, in place at `local`.
void EmitVpuCombine(ProgramBuilder& out, const RingReduction& r, uint64_t local, uint64_t received, int64_t tiles) {
  std::vector<KeywordArg> mask;
  if (r.bf16) mask.push_back({"sublanes", Bits(0xf)});
  // vmem[s<kOffsetReg> + at]
  const auto at = [](uint64_t address) { return Vmem(S(kOffsetReg), static_cast<int64_t>(address)); };
  const auto body = [&](int64_t count, uint64_t base) {
    for (int64_t u = 0; u < count; ++u) {
      out.Add(isa::MakeInstruction(isa::OPCODE_VLD, {V(u), at(local + base + u * r.tile_bytes)}, mask));
      out.Add(isa::MakeInstruction(isa::OPCODE_VLD, {V(u + count), at(received + base + u * r.tile_bytes)}, mask));
    }
    if (r.bf16) {
      for (int64_t u = 0; u < 2 * count; ++u) out.Emit(isa::OPCODE_VUNPACK_LO_BF16, {V(u), V(u)});
    }
    for (int64_t u = 0; u < count; ++u) out.Emit(r.op, {V(u), V(u), V(u + count)});
    if (r.bf16) {
      for (int64_t u = 0; u < count; ++u) {
        out.Emit(isa::OPCODE_VCVT_BF16_F32, {V(u), V(u)});
        out.Emit(isa::OPCODE_VPACK_BF16, {V(u), V(u), V(u)});
      }
    }
    for (int64_t u = 0; u < count; ++u) {
      out.Add(isa::MakeInstruction(isa::OPCODE_VST, {V(u), at(local + base + u * r.tile_bytes)}, mask));
    }
  };
  const int64_t loops = tiles / kTilesPerIteration;
  out.Emit(isa::OPCODE_MOV, {S(kOffsetReg), 0});
  if (loops > 0) {
    const std::string top = out.NewLabel("ring.add");
    out.Emit(isa::OPCODE_MOV, {S(kCountReg), loops});
    out.Bind(top);
    body(kTilesPerIteration, 0);
    out.Emit(isa::OPCODE_ADD, {S(kOffsetReg), S(kOffsetReg), kTilesPerIteration * r.tile_bytes});
    out.Emit(isa::OPCODE_LOOP, {S(kCountReg), Label(top)});
  }
  const int64_t rest = tiles % kTilesPerIteration;
  if (rest > 0) body(rest, 0);
}

class RingEmitter {
 public:
  RingEmitter(KernelContext& c, const CollectiveRing& ring)
      : c_(c), out_(c.out), n_(ring.size()), r_(ring.position),
        engines_(EnginesFor(std::max<uint32_t>(1, c.out.target().dma_engines()))) {
    if (c.out.target().semaphores() < kRingSemaphores) {
      CannotLower(c.instruction, "ring collectives need " + std::to_string(kRingSemaphores) + " semaphores" +
                                     LimitNote(c.options, TargetLimit::kSemaphores));
    }
  }

  void AllReduce() {
    const DeviceBuffer& operand = OnlyOperand(c_);
    const DeviceBuffer& result = OnlyResult(c_);
    if (isa::ToString(WithoutMemorySpace(operand.shape)) != isa::ToString(WithoutMemorySpace(result.shape))) {
      CannotLower(c_.instruction, "the ring works on byte images: the operand and result layouts must be equal");
    }
    const uint64_t total = operand.size_bytes;
    // The sums of each chunk go to the result's same bytes.
    ReduceScatterSteps(total, operand.address, 0,
                       [&](int64_t, const Chunk& chunk) { return result.address + chunk.offset; });
    GatherSteps(total, result.address, 1);
  }

  // Reduce-scatter along the scattered dim as the same ring over byte images: the operand's image
  // in n chunks, the device's chunk r is what remains in the end. Exact in bytes when the
  // scattered dim is the most major and its shards whole tiles; otherwise the same bytes move.
  void ReduceScatter() {
    const DeviceBuffer& operand = OnlyOperand(c_);
    const DeviceBuffer& result = OnlyResult(c_);
    if (operand.shape.element_type != result.shape.element_type) CannotLower(c_.instruction, "expected one element type");
    const uint64_t total = std::min<uint64_t>(operand.size_bytes, result.size_bytes * static_cast<uint64_t>(n_));
    const uint64_t per = ChunkOf(total, n_, 0).bytes;
    // Intermediate sums (sent on at the next step) alternate between two chunks of HBM scratch;
    // the last step's go to the result.
    if (c_.hbm_scratch_bytes < 2 * per) {
      CannotLower(c_.instruction, "needs " + std::to_string(2 * per) + " bytes of HBM scratch for its partial sums, " +
                                      std::to_string(c_.hbm_scratch_bytes) + " are free");
    }
    const uint64_t scratch = c_.hbm_scratch_address;
    ReduceScatterSteps(total, operand.address, -1, [&](int64_t step, const Chunk&) {
      return step == n_ - 2 ? result.address : scratch + static_cast<uint64_t>(step % 2) * per;
    });
  }

  void AllGather() {
    const DeviceBuffer& operand = OnlyOperand(c_);
    const DeviceBuffer& result = OnlyResult(c_);
    const std::vector<int64_t>& dims = c_.instruction.GetIntList("dimensions");
    if (dims.size() != 1) CannotLower(c_.instruction, "expects one dimension in dimensions={...}");
    const int64_t d = dims[0];
    const int64_t shard = operand.shape.dims.at(static_cast<std::size_t>(d));
    if (result.shape.dims.at(static_cast<std::size_t>(d)) != shard * n_) {
      CannotLower(c_.instruction, "the gathered dim must be the operand's times the group size");
    }
    DmaEmitter dma(c_);
    dma.ZeroLayoutPadding(HbmArray(result));
    const auto rank = static_cast<std::size_t>(operand.shape.rank());
    const std::vector<int64_t> zeros(rank, 0);
    const DmaArray ici{isa::MEMORY_SPACE_ICI, 0, WithoutMemorySpace(operand.shape)};
    const auto at_shard = [&](int64_t index) {
      std::vector<int64_t> start(rank, 0);
      start[static_cast<std::size_t>(d)] = index * shard;
      return start;
    };
    out_.Comment("the device's own shard");
    SpreadRegion(dma, HbmArray(operand), zeros, HbmArray(result), at_shard(r_), operand.shape.dims, engines_.local);
    for (int64_t s = 0; s + 1 < n_; ++s) {
      out_.Comment(fmt::format("all-gather step {} of {}", s + 1, n_ - 1));
      if (s == 0) {
        SpreadRegion(dma, HbmArray(operand), zeros, ici, zeros, operand.shape.dims, engines_.send);
      } else {
        SpreadRegion(dma, HbmArray(result), at_shard(Mod(r_ - s, n_)), ici, zeros, operand.shape.dims, engines_.send);
      }
      SpreadRegion(dma, ici, zeros, HbmArray(result), at_shard(Mod(r_ - s - 1, n_)), operand.shape.dims, engines_.receive);
      dma.WaitDmas();
    }
    dma.WaitDmas();
  }

 private:
  // The box cut along its most major dim of size > 1 into one piece per engine of `engines`.
  void SpreadRegion(DmaEmitter& dma, const DmaArray& src, const std::vector<int64_t>& src_start, const DmaArray& dst,
                    const std::vector<int64_t>& dst_start, const std::vector<int64_t>& size,
                    const std::vector<uint32_t>& engines) {
    const auto to_index = [](const std::vector<int64_t>& v) { return std::vector<DmaIndex>(v.begin(), v.end()); };
    std::size_t d = 0;
    while (d < size.size() && size[d] <= 1) ++d;
    const int64_t pieces = d == size.size() ? 1 : std::min<int64_t>(static_cast<int64_t>(engines.size()), size[d]);
    if (pieces <= 1) {
      dma.Dma(src, to_index(src_start), dst, to_index(dst_start), size, engines[0]);
      return;
    }
    const int64_t per = (size[d] + pieces - 1) / pieces;
    for (int64_t i = 0, k = 0; i < size[d]; i += per, ++k) {
      std::vector<int64_t> s = src_start, t = dst_start, z = size;
      s[d] += i;
      t[d] += i;
      z[d] = std::min(per, size[d] - i);
      dma.Dma(src, to_index(s), dst, to_index(t), z, engines[static_cast<std::size_t>(k) % engines.size()]);
    }
  }

  // The reduce-scatter half of a ring: steps s = 0..n-2 send chunk r+shift-s (the operand's at
  // s = 0, then the sums of the step before) and receive chunk r+shift-s-1, whose sums go to
  // sums_at(s, chunk). The device ends with the sums of chunk r+shift+1.
  template <typename SumsAt>
  void ReduceScatterSteps(uint64_t total, uint64_t operand, int64_t shift, const SumsAt& sums_at) {
    const RingReduction reduction = ReductionOf(c_, OnlyOperand(c_).shape.element_type);
    // At least kMinBlocks blocks per chunk, so that receiving overlaps adding, unless that makes
    // them smaller than kMinBlockBytes; at most kMaxBlockBytes each, and six must fit VMEM.
    const uint64_t chunk = ChunkOf(total, n_, 0).bytes;
    const uint64_t wanted = AlignUp(std::max(kMinBlockBytes, (chunk + kMinBlocks - 1) / kMinBlocks), reduction.tile_bytes);
    const uint64_t vmem_blocks = 2 + kReceiveSlots;
    const uint64_t block = std::min({kMaxBlockBytes, wanted,
                                     c_.options.vmem_capacity_bytes / vmem_blocks / reduction.tile_bytes * reduction.tile_bytes});
    if (block == 0) CannotLower(c_.instruction, "VMEM is too small for the ring's six blocks");
    for (int64_t s = 0; s + 1 < n_; ++s) {
      out_.Comment(fmt::format("reduce-scatter step {} of {}", s + 1, n_ - 1));
      const Chunk send = ChunkOf(total, n_, Mod(r_ + shift - s, n_));
      const uint64_t from = s == 0 ? operand + send.offset : sums_at(s - 1, send);
      const int64_t sends = EmitSpread(out_, isa::MEMORY_SPACE_HBM, from, isa::MEMORY_SPACE_ICI, send.offset, send.bytes, kSendSem, engines_.send);
      const Chunk receive = ChunkOf(total, n_, Mod(r_ + shift - s - 1, n_));
      ReceiveAndCombine(reduction, receive, operand, sums_at(s, receive), block);
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kSendSem), sends});
    }
  }

  // Receives `chunk` from the ICI block by block into a ring of kReceiveSlots VMEM slots, kept
  // that many blocks ahead on the receive engines (which take turns, so one transfer's start
  // overlaps the previous one's end and the link never idles between blocks); the operand's same
  // bytes come from HBM into two local buffers, the VPU combines them in place, and the sums go to
  // `sums` (the chunk's first byte).
  void ReceiveAndCombine(const RingReduction& reduction, const Chunk& chunk, uint64_t operand, uint64_t sums,
                         uint64_t block) {
    const uint64_t local[2] = {0, block};
    const auto slot = [&](int64_t b) { return (2 + static_cast<uint64_t>(b % kReceiveSlots)) * block; };
    const int64_t blocks = static_cast<int64_t>((chunk.bytes + block - 1) / block);
    const auto at = [&](int64_t b) { return chunk.offset + static_cast<uint64_t>(b) * block; };
    const auto bytes_of = [&](int64_t b) { return std::min(block, chunk.bytes - static_cast<uint64_t>(b) * block); };
    const std::size_t receivers = engines_.receive.size();
    // Each receive engine completes its blocks in order, so block b is the next signal of its sem.
    const auto receive = [&](int64_t b) {
      const std::size_t j = static_cast<std::size_t>(b) % receivers;
      EmitFlatDma(out_, isa::MEMORY_SPACE_ICI, at(b), isa::MEMORY_SPACE_VMEM, slot(b), bytes_of(b), kReceivedSem[j], engines_.receive[j]);
    };
    const auto load = [&](int64_t b) {
      EmitFlatDma(out_, isa::MEMORY_SPACE_HBM, operand + at(b), isa::MEMORY_SPACE_VMEM, local[b % 2], bytes_of(b), kArrivedSem[b % 2], engines_.local[0]);
    };
    int64_t stores[2] = {0, 0};
    const auto wait_store = [&](int k) {
      if (stores[k] > 0) out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kStoredSem[k]), stores[k]});
      stores[k] = 0;
    };
    for (int64_t b = 0; b < std::min<int64_t>(blocks, kReceiveSlots); ++b) receive(b);
    load(0);
    for (int64_t b = 0; b < blocks; ++b) {
      const int k = static_cast<int>(b % 2);
      if (b + 1 < blocks) {
        wait_store(1 - k);  // block b-1's sum has left the buffer block b+1 loads into
        load(b + 1);
      }
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kArrivedSem[k]), 1});
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kReceivedSem[static_cast<std::size_t>(b) % receivers]), 1});
      const auto tiles = static_cast<int64_t>((bytes_of(b) + reduction.tile_bytes - 1) / reduction.tile_bytes);
      EmitVpuCombine(out_, reduction, local[k], slot(b), tiles);
      out_.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
      if (b + kReceiveSlots < blocks) receive(b + kReceiveSlots);  // into the slot just read
      EmitFlatDma(out_, isa::MEMORY_SPACE_VMEM, local[k], isa::MEMORY_SPACE_HBM, sums + static_cast<uint64_t>(b) * block, bytes_of(b), kStoredSem[k],
                  engines_.local[0]);
      stores[k] = 1;
    }
    wait_store(0);
    wait_store(1);
  }

  // The all-gather half of an all-reduce over the result's image: after the reduce-scatter the
  // device holds the sum of chunk position + 1; step s sends chunk position + 1 - s and receives
  // chunk position - s.
  void GatherSteps(uint64_t total, uint64_t result, int64_t first_chunk_shift) {
    for (int64_t s = 0; s + 1 < n_; ++s) {
      out_.Comment(fmt::format("all-gather step {} of {}", s + 1, n_ - 1));
      const Chunk send = ChunkOf(total, n_, Mod(r_ + first_chunk_shift - s, n_));
      const Chunk receive = ChunkOf(total, n_, Mod(r_ + first_chunk_shift - s - 1, n_));
      const int64_t sends = EmitSpread(out_, isa::MEMORY_SPACE_HBM, result + send.offset, isa::MEMORY_SPACE_ICI, send.offset, send.bytes, kSendSem, engines_.send);
      const int64_t receives = EmitSpread(out_, isa::MEMORY_SPACE_ICI, receive.offset, isa::MEMORY_SPACE_HBM, result + receive.offset, receive.bytes,
                                          kArrivedSem[0], engines_.receive);
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kSendSem), sends});
      out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(kArrivedSem[0]), receives});
    }
  }

  KernelContext& c_;
  ProgramBuilder& out_;
  int64_t n_;
  int64_t r_;
  RingEngines engines_;
};

}  // namespace

bool IsCollectiveKernelOpcode(Opcode opcode) {
  switch (opcode) {
    case Opcode::kPartitionId: case Opcode::kReplicaId: case Opcode::kAllReduce: case Opcode::kAllGather:
    case Opcode::kReduceScatter: case Opcode::kCollectivePermute:
      return true;
    default:
      return false;
  }
}

void EmitCollectiveKernel(KernelContext& c) {
  const hlo::Instruction& instruction = c.instruction;
  const DeviceCount count = ModuleDevices(instruction);
  const int64_t device = c.options.device_id;
  if (device < 0 || device >= count.devices()) {
    CannotLower(instruction, "the simulated device " + std::to_string(device) + " is not one of the module's " +
                                 std::to_string(count.devices()) + " devices");
  }
  switch (instruction.opcode()) {
    case Opcode::kPartitionId: EmitDeviceId(c, device % count.partitions); return;
    case Opcode::kReplicaId: EmitDeviceId(c, device / count.partitions); return;
    case Opcode::kCollectivePermute: EmitCollectivePermute(c, PeersOf(instruction, count, device), device); return;
    default: break;
  }
  const CollectiveRing ring = RingOf(instruction, count, device);
  if (ring.size() == 1) {
    EmitCopy(c);
    return;
  }
  if (!c.options.timing_only) RefuseFunctional(c, "over a group of " + std::to_string(ring.size()) + " devices");
  if (OnlyOperand(c).size_bytes == 0 || OnlyResult(c).size_bytes == 0) return;  // an empty array: nothing to send
  RingEmitter emitter(c, ring);
  switch (instruction.opcode()) {
    case Opcode::kAllReduce: emitter.AllReduce(); return;
    case Opcode::kAllGather: emitter.AllGather(); return;
    case Opcode::kReduceScatter: emitter.ReduceScatter(); return;
    default: break;
  }
  CannotLower(instruction, "over more than one device is not lowered yet (a group of one is)");
}

}  // namespace tpusim::compiler
