#include "compiler/lower/dma_region.h"

#include <fmt/format.h>
#include <algorithm>
#include <numeric>

#include "isa/error.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

using namespace isa::ops;

int64_t Product(const std::vector<int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), int64_t{1}, std::multiplies<>());
}

// The zeroed VMEM block that padding tiles are cleared from.
constexpr uint64_t kZeroBlockBytes = 256 * 1024;

void CutInto(const Box& box, const std::vector<int64_t>& order, std::size_t at, int64_t max_elements,
             std::vector<Box>& out) {
  const int64_t elements = Product(box.size);
  if (elements == 0) return;
  if (elements <= max_elements || at >= order.size()) {
    out.push_back(box);
    return;
  }
  const auto d = static_cast<std::size_t>(order[at]);
  const int64_t per_unit = elements / box.size[d];
  if (per_unit > max_elements) {
    for (int64_t i = 0; i < box.size[d]; ++i) {
      Box sub = box;
      sub.start[d] += i;
      sub.size[d] = 1;
      CutInto(sub, order, at + 1, max_elements, out);
    }
    return;
  }
  const int64_t step = max_elements / per_unit;
  for (int64_t i = 0; i < box.size[d]; i += step) {
    Box sub = box;
    sub.start[d] += i;
    sub.size[d] = std::min(step, box.size[d] - i);
    out.push_back(sub);
  }
}

}  // namespace

DmaArray HbmArray(const DeviceBuffer& buffer) { return {isa::MEMORY_SPACE_HBM, buffer.address, WithoutMemorySpace(buffer.shape)}; }

DmaArray BufferArray(const DeviceBuffer& buffer) {
  return {buffer.memory_space(), buffer.address, WithoutMemorySpace(buffer.shape)};
}

isa::Shape WithoutMemorySpace(isa::Shape shape) {
  if (!shape.layout) {
    shape.layout.emplace();
    shape.layout->minor_to_major = isa::MajorToMinorOrder(shape.rank());
  }
  shape.layout->memory_space = 0;
  return shape;
}

isa::Shape PermutedView(const isa::Shape& shape, const std::vector<int64_t>& perm) {
  isa::Shape view = WithoutMemorySpace(shape);
  std::vector<int64_t> inverse(perm.size());
  for (std::size_t k = 0; k < perm.size(); ++k) {
    view.dims[k] = shape.dims[perm[k]];
    inverse[perm[k]] = static_cast<int64_t>(k);
  }
  if (!shape.dynamic_dims.empty()) {
    for (std::size_t k = 0; k < perm.size(); ++k) view.dynamic_dims[k] = shape.dynamic_dims[perm[k]];
  }
  for (int64_t& dim : view.layout->minor_to_major) dim = inverse[dim];
  if (!view.layout->padded_dimensions.empty()) {
    for (std::size_t k = 0; k < perm.size(); ++k) view.layout->padded_dimensions[k] = shape.layout->padded_dimensions[perm[k]];
  }
  return view;
}

isa::Shape ExpandedView(const isa::Shape& shape, int64_t rank, const std::vector<int64_t>& dim_map) {
  const isa::Shape from = WithoutMemorySpace(shape);
  isa::Shape view = from;
  view.dims.assign(rank, 1);
  view.dynamic_dims.clear();
  std::vector<bool> mapped(rank, false);
  for (std::size_t k = 0; k < dim_map.size(); ++k) {
    view.dims[dim_map[k]] = from.dims[k];
    mapped[dim_map[k]] = true;
  }
  std::vector<int64_t>& minor_to_major = view.layout->minor_to_major;
  minor_to_major.clear();
  for (int64_t dim : from.layout->minor_to_major) minor_to_major.push_back(dim_map[dim]);
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (!mapped[d]) minor_to_major.push_back(d);
  }
  return view;
}

isa::Shape RowMajorUntiled(isa::ElementType type, const std::vector<int64_t>& dims) {
  isa::Layout layout;
  layout.minor_to_major = isa::MajorToMinorOrder(static_cast<int64_t>(dims.size()));
  return isa::Shape::Array(type, dims, layout);
}

bool SplitOverEngines(const CompileOptions& options, int64_t bytes) {
  return options.target.dma_engines() > 1 && options.dma_engine_bytes_in_flight > 0 &&
         bytes > static_cast<int64_t>(options.dma_engine_bytes_in_flight);
}

isa::Shape PaddedView(const isa::Shape& shape) {
  if (!shape.layout || shape.layout->tiles.empty()) return shape;
  const int64_t rank = shape.rank();
  for (int64_t i = 0; i < rank; ++i) {
    if (shape.layout->minor_to_major[i] != rank - 1 - i) return shape;
  }
  const std::vector<int64_t>& tile = shape.layout->tiles[0].dims;
  const int64_t tiled = static_cast<int64_t>(tile.size());
  if (tiled > rank) return shape;
  isa::Shape padded = shape;
  for (int64_t j = 0; j < tiled; ++j) {
    const int64_t d = rank - tiled + j;
    if (tile[j] <= 0) return shape;  // a combined dim (*): not a plain tile
    padded.dims[d] = (shape.dims[d] + tile[j] - 1) / tile[j] * tile[j];
  }
  return padded;
}

isa::ElementType FlatWordType(int64_t bytes) {
  return bytes % 4 == 0 ? isa::ElementType::kU32 : bytes % 2 == 0 ? isa::ElementType::kU16 : isa::ElementType::kU8;
}

bool HasLayoutPadding(const isa::Shape& shape) {
  const isa::LayoutMap map(shape);
  return map.physical_element_count() != map.element_count();
}

std::vector<DmaIndex> Zeros(std::size_t rank) { return std::vector<DmaIndex>(rank, DmaIndex(0)); }

std::vector<Box> CutBox(const Box& box, const std::vector<int64_t>& order, int64_t max_elements) {
  std::vector<Box> out;
  CutInto(box, order, 0, std::max<int64_t>(1, max_elements), out);
  return out;
}

DmaEmitter::DmaEmitter(KernelContext& context) : c_(context) {
  engines_ = std::max<uint32_t>(1, c_.out.target().dma_engines());
  if (c_.out.target().semaphores() < 2) {
    CannotLower(c_.instruction, "data-movement kernels need 2 semaphores" + LimitNote(c_.options, TargetLimit::kSemaphores));
  }
}

uint32_t DmaEmitter::NextEngine() {
  const uint32_t engine = next_engine_;
  next_engine_ = (next_engine_ + 1) % engines_;
  return engine;
}

uint64_t DmaEmitter::AllocVmem(uint64_t bytes, std::string_view what) {
  const uint64_t address = vmem_cursor_;
  const uint64_t end = AlignUp(address + std::max<uint64_t>(bytes, 1), 4096);
  if (end > c_.options.vmem_capacity_bytes) {
    CannotLower(c_.instruction, fmt::format("{} needs {} bytes of VMEM, {} are left", what, bytes, vmem_free()));
  }
  vmem_cursor_ = end;
  return address;
}

uint64_t DmaEmitter::vmem_free() const {
  return c_.options.vmem_capacity_bytes > vmem_cursor_ ? c_.options.vmem_capacity_bytes - vmem_cursor_ : 0;
}

int DmaEmitter::AllocSreg() {
  if (next_sreg_ > 31) CannotLower(c_.instruction, "the kernel needs more scalar registers than the machine has");
  return next_sreg_++;
}

void DmaEmitter::Dma(const DmaArray& src, const std::vector<DmaIndex>& src_start, const DmaArray& dst,
                     const std::vector<DmaIndex>& dst_start, const std::vector<int64_t>& size, uint32_t engine) {
  if (Product(size) == 0) return;
  if (size.empty()) {
    // A scalar: the same bytes as a one-element rank-1 array.
    DmaArray s = src, d = dst;
    s.shape = ExpandedView(src.shape, 1, {});
    d.shape = ExpandedView(dst.shape, 1, {});
    Dma(s, {0}, d, {0}, {1}, engine);
    return;
  }
  using namespace isa::ops;
  const auto index = [](const std::vector<DmaIndex>& start) {
    IndexValue items;
    for (const DmaIndex& i : start) items.items.push_back(i.Item());
    return items;
  };
  c_.out.Emit(isa::OPCODE_DMA,
              {Address(src.space, static_cast<int64_t>(src.address)), Address(dst.space, static_cast<int64_t>(dst.address))},
              {{"src", ShapeArg(src.shape)},
               {"dst", ShapeArg(dst.shape)},
               {"src_start", index(src_start)},
               {"dst_start", index(dst_start)},
               {"size", Sizes(size)},
               {"sem", Sem(kDmaSem)},
               {"engine", engine}});
  ++pending_;
}

void DmaEmitter::SplitDma(const DmaArray& src, const std::vector<int64_t>& src_start, const DmaArray& dst,
                          const std::vector<int64_t>& dst_start, const std::vector<int64_t>& size) {
  const auto to_index = [](const std::vector<int64_t>& v) { return std::vector<DmaIndex>(v.begin(), v.end()); };
  const int64_t bytes = Product(size) * isa::LayoutMap(dst.shape).element_bits() / 8;
  if (!SplitOverEngines(c_.options, bytes) || size.empty()) {
    Dma(src, to_index(src_start), dst, to_index(dst_start), size, NextEngine());
    return;
  }
  const isa::LayoutMap map(dst.shape);
  const std::vector<int64_t>& order = map.physical_order();
  std::size_t p = 0;
  while (p < order.size() && size[order[p]] <= 1) ++p;
  if (p == order.size()) {
    Dma(src, to_index(src_start), dst, to_index(dst_start), size, NextEngine());
    return;
  }
  const int64_t d = order[p];
  // Pieces whole tiles along d where the first tile covers d.
  int64_t align = 1;
  const auto rank = static_cast<int64_t>(order.size());
  if (!dst.shape.layout->tiles.empty()) {
    const std::vector<int64_t>& tile = dst.shape.layout->tiles.front().dims;
    const int64_t first_tiled = rank - static_cast<int64_t>(tile.size());
    const auto position = static_cast<int64_t>(p);
    if (position >= first_tiled && tile[position - first_tiled] != isa::kCombineDimension) {
      align = tile[position - first_tiled];
    }
  }
  int64_t per = (size[d] + engines_ - 1) / engines_;
  per = std::max<int64_t>(align, (per + align - 1) / align * align);
  for (int64_t i = 0; i < size[d]; i += per) {
    std::vector<int64_t> s = src_start, t = dst_start, z = size;
    s[d] += i;
    t[d] += i;
    z[d] = std::min(per, size[d] - i);
    Dma(src, to_index(s), dst, to_index(t), z, NextEngine());
  }
}

void DmaEmitter::WaitDmas() {
  if (pending_ == 0) return;
  c_.out.Emit(isa::OPCODE_SEM_WAIT, {Sem(kDmaSem), pending_});
  pending_ = 0;
}

void DmaEmitter::WaitVpu() {
  c_.out.Emit(isa::OPCODE_VPU_SIGNAL, {Sem(kVpuSem), 1});
  c_.out.Emit(isa::OPCODE_SEM_WAIT, {Sem(kVpuSem), 1});
}

void DmaEmitter::VpuFillWords(uint64_t vmem, uint64_t bytes, int reg) {
  c_.out.Emit(isa::OPCODE_VBCAST, {V(0), S(reg)});
  const int address = AllocSreg();
  const int counter = AllocSreg();
  const int64_t stores = static_cast<int64_t>(bytes / 4096);
  if (stores == 0) return;
  c_.out.Emit(isa::OPCODE_MOV, {S(address), vmem});
  c_.out.Emit(isa::OPCODE_MOV, {S(counter), stores});
  const std::string label = c_.out.NewLabel(c_.instruction.name() + ".fill");
  c_.out.Bind(label);
  c_.out.Emit(isa::OPCODE_VST, {V(0), Vmem(S(address))});
  c_.out.Emit(isa::OPCODE_ADD, {S(address), S(address), 0x1000});
  c_.out.Emit(isa::OPCODE_LOOP, {S(counter), Label(label)});
}

void DmaEmitter::VpuFillWordsImmediate(uint64_t vmem, uint64_t bytes, uint32_t word) {
  const int reg = AllocSreg();
  c_.out.Emit(isa::OPCODE_MOV, {S(reg), word});
  VpuFillWords(vmem, bytes, reg);
}

void DmaEmitter::LoadScalarsToSmem(const std::vector<std::pair<const DeviceBuffer*, uint64_t>>& scalars) {
  for (const auto& [buffer, smem] : scalars) {
    EmitFlatDma(c_.out, buffer->memory_space(), buffer->address, isa::MEMORY_SPACE_SMEM, smem, buffer->size_bytes, kDmaSem, NextEngine());
    ++pending_;
  }
  WaitDmas();
}

void DmaEmitter::ZeroLayoutPadding(const DmaArray& dst) {
  if (!HasLayoutPadding(dst.shape)) return;
  const isa::LayoutMap map(dst.shape);
  const isa::Layout& layout = *dst.shape.layout;
  const auto byte_size = static_cast<int64_t>(map.byte_size());
  // The image as flat words: [M, T_0 .. T_{k-1}, W] (M slabs of the major dims, T_j tiles along
  // the j-th tiled dim, W words per tile); the tiles at the last index of a dim whose size is not a
  // multiple of its tile size hold the padding.
  std::vector<int64_t> flat_dims;
  std::vector<Box> boxes;
  bool targeted = !layout.tiles.empty() && layout.padded_dimensions.empty() &&
                  layout.tail_padding_alignment_in_elements == 1;
  const std::vector<int64_t>& physical = map.physical_dims();
  const auto rank = static_cast<int64_t>(physical.size());
  isa::ElementType word_type = isa::ElementType::kU32;
  if (targeted) {
    const std::vector<int64_t>& tile = layout.tiles.front().dims;
    const auto k = static_cast<int64_t>(tile.size());
    targeted = k <= rank && std::none_of(tile.begin(), tile.end(), [](int64_t t) { return t == isa::kCombineDimension; });
    if (targeted) {
      int64_t slabs = 1;
      for (int64_t d = 0; d < rank - k; ++d) slabs *= physical[d];
      flat_dims.push_back(slabs);
      int64_t tiles = slabs;
      for (int64_t j = 0; j < k; ++j) {
        flat_dims.push_back((physical[rank - k + j] + tile[j] - 1) / tile[j]);
        tiles *= flat_dims.back();
      }
      targeted = tiles > 0 && byte_size % tiles == 0;
      if (targeted) {
        const int64_t tile_bytes = byte_size / tiles;
        word_type = FlatWordType(tile_bytes);
        flat_dims.push_back(tile_bytes / isa::ElementByteWidth(word_type));
        for (int64_t j = 0; j < k; ++j) {
          if (physical[rank - k + j] % tile[j] == 0) continue;
          Box box{std::vector<int64_t>(flat_dims.size(), 0), flat_dims};
          box.start[1 + j] = flat_dims[1 + j] - 1;
          box.size[1 + j] = 1;
          boxes.push_back(box);
        }
        targeted = !boxes.empty();
      }
    }
  }
  if (!targeted) {
    word_type = FlatWordType(byte_size);
    flat_dims = {byte_size / isa::ElementByteWidth(word_type)};
    boxes = {Box{{0}, flat_dims}};
  }
  const int64_t word_bytes = isa::ElementByteWidth(word_type);
  const DmaArray flat{dst.space, dst.address, RowMajorUntiled(word_type, flat_dims)};
  int64_t largest = 0;
  for (const Box& box : boxes) largest = std::max(largest, Product(box.size) * word_bytes);
  if (zero_vmem_bytes_ == 0) {
    zero_vmem_bytes_ = AlignUp(std::min<uint64_t>(static_cast<uint64_t>(largest), kZeroBlockBytes), 4096);
    zero_vmem_ = AllocVmem(zero_vmem_bytes_, "a zeroed block");
    VpuFillWordsImmediate(zero_vmem_, zero_vmem_bytes_, 0);
    WaitVpu();
  }
  std::vector<int64_t> order(flat_dims.size());
  std::iota(order.begin(), order.end(), 0);
  for (const Box& box : boxes) {
    for (const Box& piece : CutBox(box, order, static_cast<int64_t>(zero_vmem_bytes_) / word_bytes)) {
      const DmaArray zeros{isa::MEMORY_SPACE_VMEM, zero_vmem_, RowMajorUntiled(word_type, piece.size)};
      Dma(zeros, Zeros(piece.size.size()), flat, std::vector<DmaIndex>(piece.start.begin(), piece.start.end()),
          piece.size, NextEngine());
    }
  }
  WaitDmas();
}

}  // namespace tpusim::compiler
