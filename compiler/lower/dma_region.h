// Shared pieces of the data-movement kernels (docs/compiler.md, "Data movement"): arrays as a DMA
// sees them (a space, an address and a shape with its layout), views that describe the same bytes
// with other dims, and an emitter that writes `dma` instructions, spreads big boxes over the DMA
// engines, keeps count of what each semaphore will receive, and keeps the zero-padding invariant
// (a DMA writes logical elements only, so the layout padding of a result that may hold stale
// bytes is zeroed first, by flat DMAs from a zeroed VMEM block over the tiles that hold padding).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/lower/kernel.h"
#include "isa/instruction_builder.h"
#include "isa/program.pb.h"
#include "isa/shape.h"

namespace tpusim::compiler {

// Whether a transfer of `bytes` (those its requests span: padded tiles count) is spread over the
// DMA engines: more than one engine keeps in flight (CompileOptions::dma_engine_bytes_in_flight)
// takes more than one HBM round trip on one engine (TPU v4: 64 KiB, at most a third of a core's
// HBM bandwidth), fewer on several.
bool SplitOverEngines(const CompileOptions& options, int64_t bytes);

// An array in some memory, as a DMA operand describes it.
struct DmaArray {
  isa::MemorySpace space = isa::MEMORY_SPACE_HBM;
  uint64_t address = 0;
  isa::Shape shape;   // array shape with an explicit layout and no memory space
};

// The buffer's array in HBM.
DmaArray HbmArray(const DeviceBuffer& buffer);
// The buffer's array where it lives: HBM, or host memory for a host array (host offload).
DmaArray BufferArray(const DeviceBuffer& buffer);

// `shape`'s layout with the memory space cleared (DMA shapes name their space beside the address).
isa::Shape WithoutMemorySpace(isa::Shape shape);

// The same bytes with dims permuted: view dim k is `shape` dim perm[k] (a transpose's source seen
// in the result's index space), with its dynamic dims and padded dims permuted alike; the memory
// space cleared.
isa::Shape PermutedView(const isa::Shape& shape, const std::vector<int64_t>& perm);

// The same bytes as an array of rank `rank`: `shape` dim k becomes view dim dim_map[k], and the
// other view dims have size 1 and are the most major (so tiles, which apply to the most minor
// physical dims, still see the same dims). A broadcast's operand in the result's index space.
isa::Shape ExpandedView(const isa::Shape& shape, int64_t rank, const std::vector<int64_t>& dim_map);

// `type[dims]` row-major and untiled: the elements one after another with no padding.
isa::Shape RowMajorUntiled(isa::ElementType type, const std::vector<int64_t>& dims);

// The widest unsigned word (u32, u16 or u8) whose size divides `bytes`: a flat copy moves bytes as
// such words, as they lie.
isa::ElementType FlatWordType(int64_t bytes);

// Whether the layout puts bytes in the image that hold no element (tile padding, L(n), ...).
bool HasLayoutPadding(const isa::Shape& shape);

// `shape` with its minor dims padded to its first tile's (the same bytes, for a row-major layout
// whose first tile covers its minor dims): a DMA box of it that reaches the padding writes it.
// `shape` itself where the layout is not such.
isa::Shape PaddedView(const isa::Shape& shape);

// One start item of a DMA region: register (or -1) plus a constant.
struct DmaIndex {
  int reg = -1;
  int64_t offset = 0;
  DmaIndex() = default;
  DmaIndex(int64_t value) : offset(value) {}  // NOLINT: constants read naturally as indices
  DmaIndex(int r, int64_t o) : reg(r), offset(o) {}
  isa::ops::RegPlus Item() const { return reg < 0 ? isa::ops::RegPlus(offset) : isa::ops::RegPlus(isa::ops::S(reg), offset); }
};
std::vector<DmaIndex> Zeros(std::size_t rank);

class DmaEmitter {
 public:
  // Semaphore 0 counts DMAs; semaphore 1 the VPU's signal. Needs 2 semaphores.
  static constexpr uint32_t kDmaSem = 0;
  static constexpr uint32_t kVpuSem = 1;

  explicit DmaEmitter(KernelContext& context);

  KernelContext& context() { return c_; }
  ProgramBuilder& out() { return c_.out; }
  uint32_t engines() const { return engines_; }
  // The next engine in round-robin order.
  uint32_t NextEngine();

  // VMEM for this kernel: `bytes` rounded up to 4 KiB; CannotLower when VMEM is full.
  uint64_t AllocVmem(uint64_t bytes, std::string_view what);
  uint64_t vmem_free() const;

  // One `dma` of the box `size` (nothing for an empty box). Rank-0 arrays are sent as [1].
  void Dma(const DmaArray& src, const std::vector<DmaIndex>& src_start, const DmaArray& dst,
           const std::vector<DmaIndex>& dst_start, const std::vector<int64_t>& size, uint32_t engine);
  // The same box cut along the destination's most major physical dim into one piece per engine
  // when it is big enough for that to pay (constant starts only).
  void SplitDma(const DmaArray& src, const std::vector<int64_t>& src_start, const DmaArray& dst,
                const std::vector<int64_t>& dst_start, const std::vector<int64_t>& size);
  // Waits for every DMA emitted so far.
  void WaitDmas();
  // Waits for every VPU instruction emitted so far.
  void WaitVpu();
  int64_t pending_dmas() const { return pending_; }
  // For DMAs inside loops: each runs more often than it is written.
  void AddPendingDmas(int64_t count) { pending_ += count; }

  // Zeroes the tiles of `dst` (HBM) that hold layout padding and waits, so that DMAs that write
  // its elements afterwards leave the padding zero. Nothing when the layout has no padding.
  void ZeroLayoutPadding(const DmaArray& dst);

  // `bytes` (a multiple of 4 KiB) of VMEM at `vmem` filled with the 32-bit word in register `reg`,
  // by the VPU (vbcast + vst); not waited for.
  void VpuFillWords(uint64_t vmem, uint64_t bytes, int reg);
  void VpuFillWordsImmediate(uint64_t vmem, uint64_t bytes, uint32_t word);

  // Copies a scalar array (rank 0) from its memory into SMEM at `smem` (8-byte aligned) and waits.
  void LoadScalarsToSmem(const std::vector<std::pair<const DeviceBuffer*, uint64_t>>& scalars);

  // A scalar register for this kernel (s1..s31; s0 is kept free for ad-hoc use).
  int AllocSreg();

 private:
  KernelContext& c_;
  uint32_t engines_ = 1;
  uint32_t next_engine_ = 0;
  int64_t pending_ = 0;
  uint64_t vmem_cursor_ = 0;
  int next_sreg_ = 1;
  uint64_t zero_vmem_ = 0;
  uint64_t zero_vmem_bytes_ = 0;
};

// Boxes (start, size) that cover `size` starting at `start`, each of at most `max_elements`
// elements, cut along dims in `order` (major first).
struct Box {
  std::vector<int64_t> start;
  std::vector<int64_t> size;
};
std::vector<Box> CutBox(const Box& box, const std::vector<int64_t>& order, int64_t max_elements);

}  // namespace tpusim::compiler
