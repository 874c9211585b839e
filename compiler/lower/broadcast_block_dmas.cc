#include "compiler/lower/broadcast_block_dmas.h"

#include <algorithm>
#include <string>
#include <vector>

#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using namespace isa::ops;

// Constant start indices as a DMA's index list.
IndexValue List(const std::vector<int64_t>& items) {
  IndexValue index;
  for (int64_t item : items) index.items.push_back(item);
  return index;
}

void EmitDma(ProgramBuilder& out, isa::MemorySpace from_space, uint64_t from, const isa::Shape& src,
             const std::vector<int64_t>& src_start, uint64_t to, const isa::Shape& dst,
             const std::vector<int64_t>& dst_start, const std::vector<int64_t>& size, uint32_t semaphore,
             uint32_t engine) {
  out.Emit(isa::OPCODE_DMA, {Address(from_space, static_cast<int64_t>(from)), Vmem(static_cast<int64_t>(to))},
           {{"src", ShapeArg(src)},
            {"dst", ShapeArg(dst)},
            {"src_start", List(src_start)},
            {"dst_start", List(dst_start)},
            {"size", Sizes(size)},
            {"sem", Sem(semaphore)},
            {"engine", engine}});
}

}  // namespace

int EmitBroadcastBlockDmas(ProgramBuilder& out, const BroadcastBlock& block, uint32_t semaphore, uint32_t& next_engine) {
  const std::vector<int64_t>& minor_to_major = block.tiles.layout->minor_to_major;
  const std::size_t rank = minor_to_major.size();
  const int64_t column = minor_to_major.at(0);
  const int64_t row = minor_to_major.at(1);
  const std::vector<int64_t>& dims = block.tiles.dims;
  const uint32_t engines = std::max<uint32_t>(1, out.target().dma_engines());
  // The columns every piece holds: the whole minor dim, or the block's part of its one strip.
  const bool part_of_strip = block.columns > 0;
  if (part_of_strip && (block.strips != 1 || block.first_column < 0 || block.first_column >= dims[column])) {
    throw Error("a broadcast fill of part of a strip needs one strip and a first column inside the array (" +
                std::to_string(block.strips) + " strips from column " + std::to_string(block.first_column) +
                " of " + std::to_string(dims[column]) + ")");
  }
  const int64_t first_column = part_of_strip ? block.first_column : 0;
  const int64_t columns = part_of_strip ? std::min(block.columns, dims[column] - first_column) : dims[column];
  int count = 0;
  const int64_t end = block.first_strip + block.strips;
  // The most minor major dim: whole matrices along it form one box (rank 2 has none).
  const int64_t outer = rank > 2 ? minor_to_major[2] : -1;
  for (int64_t s = block.first_strip; s < end;) {
    const int64_t matrix = s / block.strips_per_matrix;
    const int64_t row_strip = s % block.strips_per_matrix;
    // A piece: `run` whole matrices along `outer` (within one index of the other major dims), or
    // the strips of one matrix that the block holds.
    int64_t run = 1;
    if (outer >= 0 && row_strip == 0) {
      const int64_t whole = (end - s) / block.strips_per_matrix;
      run = std::max<int64_t>(1, std::min(whole, dims[outer] - matrix % dims[outer]));
    }
    const int64_t piece_end = run > 1 ? s + run * block.strips_per_matrix
                                      : std::min(end, (matrix + 1) * block.strips_per_matrix);
    const int64_t first_row = row_strip * block.sublanes;
    const int64_t rows = run > 1 ? dims[row]
                                 : std::min(dims[row], (row_strip + piece_end - s) * block.sublanes) - first_row;
    // The piece's tiles as an array of their own: the major dims 1 (`run` along `outer`), `rows` rows.
    isa::Shape dst = block.tiles;
    std::vector<int64_t> src_start(rank, 0);
    std::vector<int64_t> size(rank, 1);
    int64_t rest = matrix;
    for (std::size_t k = 2; k < rank; ++k) {
      const int64_t d = minor_to_major[k];
      const int64_t index = rest % dims[d];
      rest /= dims[d];
      dst.dims[d] = d == outer ? run : 1;
      if (block.source.dims[d] != 1) {
        src_start[d] = index;
        if (d == outer) size[d] = run;
      }
    }
    dst.dims[row] = rows;
    dst.dims[column] = columns;
    if (block.source.dims[row] != 1) {
      src_start[row] = first_row;
      size[row] = rows;
    }
    if (block.source.dims[column] != 1) {
      src_start[column] = first_column;
      size[column] = columns;
    }
    for (std::size_t d = 0; d < block.source_start.size(); ++d) src_start[d] += block.source_start[d];
    const uint64_t to = block.vmem + static_cast<uint64_t>((s - block.first_strip) * block.strip_bytes);
    const uint32_t engine = next_engine++ % engines;
    const std::vector<int64_t> zeros(rank, 0);
    EmitDma(out, isa::MEMORY_SPACE_HBM, block.source_address, block.source, src_start, to, dst, zeros, size, semaphore, engine);
    ++count;
    if (block.lanes_in_registers && size[column] == 1 && dst.dims[column] > 1) {
      // Lane 0 of the further tile columns the kernel reads: it replicates the lanes.
      const int64_t stride = block.lane_tile_stride * block.tiles.layout->tiles.at(0).dims.back();
      for (int64_t at_column = stride; stride > 0 && at_column < dst.dims[column]; at_column += stride) {
        std::vector<int64_t> at(rank, 0);
        at[column] = at_column;
        EmitDma(out, isa::MEMORY_SPACE_HBM, block.source_address, block.source, src_start, to, dst, at, size, semaphore, engine);
        ++count;
      }
      size[column] = dst.dims[column];
    }
    // Doubling along the replicated dims: [0, filled) -> [filled, 2 filled).
    std::vector<int64_t> replicated = {column, row};
    if (outer >= 0) replicated.push_back(outer);
    for (const int64_t d : replicated) {
      if (size[d] != 1 || dst.dims[d] == 1) continue;
      for (int64_t filled = 1; filled < dst.dims[d];) {
        const int64_t n = std::min(filled, dst.dims[d] - filled);
        std::vector<int64_t> box = size;
        box[d] = n;
        std::vector<int64_t> at(rank, 0);
        at[d] = filled;
        EmitDma(out, isa::MEMORY_SPACE_VMEM, to, dst, zeros, to, dst, at, box, semaphore, engine);
        ++count;
        filled += n;
      }
      size[d] = dst.dims[d];
    }
    s = piece_end;
  }
  return count;
}

}  // namespace tpusim::compiler
