// The DMAs that fill a block of an element-wise kernel's VMEM tiles with a broadcast
// (compiler/lower/broadcast_block_dmas.h), for blocks that are part of one strip: the emitted
// program is assembled and its DMAs applied, in order, to a byte image of HBM holding the
// broadcast's operand and a byte image of VMEM holding 0xAB bytes; the tiles must then hold the
// broadcast's values at the places the 8 x 128 tiled layout gives them (written out here), and
// everything else must still be 0xAB (the fill writes elements only; the kernel masks padding).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/program_builder.h"
#include "compiler/lower/broadcast_block_dmas.h"
#include "compiler/lower/dma_region.h"
#include "isa/assembler.h"
#include "isa/error.h"
#include "isa/layout_index.h"
#include "isa/shape.h"

namespace {

using tpusim::compiler::BroadcastBlock;
using tpusim::isa::Shape;

constexpr uint8_t kUntouched = 0xAB;

tpusim::isa::Target TestTarget() {
  tpusim::isa::Target target;
  target.set_sublanes(8);
  target.set_lanes(128);
  target.set_vector_registers(32);
  target.set_mxu_count(1);
  target.set_mxu_rows(128);
  target.set_mxu_columns(128);
  target.set_dma_engines(4);
  target.set_semaphores(64);
  return target;
}

std::vector<int64_t> Items(const tpusim::isa::Operand& operand) {
  std::vector<int64_t> items;
  if (operand.has_index()) {
    for (const auto& item : operand.index().items()) items.push_back(item.offset());
  } else {
    for (int64_t item : operand.sizes().items()) items.push_back(item);
  }
  return items;
}

// Calls `visit` with every index of the box `sizes`.
void ForEachIndex(const std::vector<int64_t>& sizes, const std::function<void(const std::vector<int64_t>&)>& visit) {
  for (int64_t s : sizes) {
    if (s <= 0) return;
  }
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    visit(index);
    std::size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
  }
}

struct Filled {
  std::vector<uint8_t> vmem;
  int dmas = 0;
};

// The operand `source` (logical shape with its HBM layout) holds `value(index)` at each index; the
// fill of `block` (its source and addresses are set here) runs on `vmem_bytes` of VMEM.
Filled RunFill(BroadcastBlock block, const Shape& source, const std::vector<int64_t>& dims,
               const std::function<uint32_t(const std::vector<int64_t>&)>& value, std::size_t vmem_bytes) {
  const tpusim::isa::LayoutMap source_map(source);
  std::vector<uint8_t> hbm(static_cast<std::size_t>(source_map.byte_size()), 0);
  const int64_t bytes = source_map.element_bits() / 8;
  ForEachIndex(source.dims, [&](const std::vector<int64_t>& index) {
    const uint32_t v = value(index);
    std::memcpy(hbm.data() + source_map.ByteOffset(index), &v, static_cast<std::size_t>(bytes));
  });
  block.source_address = 0;
  block.source = tpusim::compiler::ExpandedView(source, static_cast<int64_t>(block.tiles.rank()), dims);
  block.vmem = 0;
  tpusim::compiler::ProgramBuilder out("fill", TestTarget());
  uint32_t engine = 0;
  Filled filled;
  filled.dmas = tpusim::compiler::EmitBroadcastBlockDmas(out, block, 3, engine);
  filled.vmem.assign(vmem_bytes, kUntouched);
  const tpusim::isa::Program program = out.Finish();
  int dmas = 0;
  for (const auto& instruction : program.instructions()) {
    REQUIRE(instruction.opcode() == tpusim::isa::OPCODE_DMA);
    ++dmas;
    const auto& ops = instruction.operands();
    const bool from_hbm = ops[0].address().space() == tpusim::isa::MEMORY_SPACE_HBM;
    REQUIRE(ops[1].address().space() == tpusim::isa::MEMORY_SPACE_VMEM);
    const tpusim::isa::LayoutMap src(tpusim::isa::ParseShape(ops[2].shape()));
    const tpusim::isa::LayoutMap dst(tpusim::isa::ParseShape(ops[3].shape()));
    const std::vector<int64_t> src_start = Items(ops[4]), dst_start = Items(ops[5]), sizes = Items(ops[6]);
    const std::vector<uint8_t>& from = from_hbm ? hbm : filled.vmem;
    const uint64_t from_base = static_cast<uint64_t>(ops[0].address().offset());
    const uint64_t to_base = static_cast<uint64_t>(ops[1].address().offset());
    ForEachIndex(sizes, [&](const std::vector<int64_t>& k) {
      std::vector<int64_t> a = src_start, b = dst_start;
      for (std::size_t d = 0; d < k.size(); ++d) {
        a[d] += k[d];
        b[d] += k[d];
      }
      std::memcpy(filled.vmem.data() + to_base + dst.ByteOffset(b), from.data() + from_base + src.ByteOffset(a),
                  static_cast<std::size_t>(bytes));
    });
  }
  CHECK(dmas == filled.dmas);
  return filled;
}

uint32_t F32Word(const std::vector<uint8_t>& image, std::size_t at) {
  uint32_t word = 0;
  std::memcpy(&word, image.data() + at, 4);
  return word;
}

// f32 tiles of 8 x 128: element (row r, lane l) of tile t is word (t * 8 + r) * 128 + l. Counts
// the words that differ from `want(t, r, l)`, or from 0xABABABAB where that is nullopt.
int64_t F32Mismatches(const std::vector<uint8_t>& vmem, int64_t tiles,
                      const std::function<std::optional<uint32_t>(int64_t, int64_t, int64_t)>& want) {
  int64_t mismatches = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    for (int64_t r = 0; r < 8; ++r) {
      for (int64_t l = 0; l < 128; ++l) {
        const std::optional<uint32_t> w = want(t, r, l);
        mismatches += F32Word(vmem, static_cast<std::size_t>(((t * 8 + r) * 128 + l) * 4)) != w.value_or(0xABABABAB);
      }
    }
  }
  return mismatches;
}

BroadcastBlock PieceOf(const std::string& tiles, int64_t strip, int64_t strips_per_matrix, int64_t first_column,
                       int64_t columns, int64_t tile_bytes) {
  BroadcastBlock block;
  block.tiles = tpusim::isa::ParseShape(tiles);
  block.first_strip = strip;
  block.strips = 1;
  block.strips_per_matrix = strips_per_matrix;
  block.first_column = first_column;
  block.columns = columns;
  block.strip_bytes = 3 * tile_bytes;  // 300 columns: 3 tiles a strip
  return block;
}

}  // namespace

TEST_CASE("broadcast fill of part of a strip: a row vector and a column vector into f32[10,300]", "[compiler][broadcast_fill]") {
  // The block: strip 1 (rows 8 and 9; rows 10..15 are padding) and columns [128, 384) clipped to
  // the array's 300: tile 0 holds columns 128..255, tile 1 columns 256..299 in lanes 0..43.
  const BroadcastBlock block = PieceOf("f32[10,300]{1,0:T(8,128)}", 1, 2, 128, 256, 4096);
  const Shape v = tpusim::isa::ParseShape("f32[300]{0:T(1024)}");
  const auto valid = [](int64_t t, int64_t r, int64_t l) { return r < 2 && 128 + 128 * t + l < 300; };

  // broadcast(v), dimensions={1}: every row is v. One DMA reads v[128..299] into row 0, one copies
  // row 0 to row 1.
  const Filled row = RunFill(block, v, {1}, [](const std::vector<int64_t>& i) { return uint32_t(1000 + i[0]); }, 8192);
  CHECK(row.dmas == 2);
  CHECK(F32Mismatches(row.vmem, 2, [&](int64_t t, int64_t r, int64_t l) -> std::optional<uint32_t> {
          if (!valid(t, r, l)) return std::nullopt;
          return uint32_t(1000 + 128 + 128 * t + l);
        }) == 0);

  // broadcast(c), dimensions={0} of c = f32[10]: row r is c[8 + r] in every lane. One DMA reads
  // c[8..9] into lane 0, then doublings fill 172 lanes: 1 -> 2 -> 4 ... -> 128 -> 172, 8 DMAs.
  const Shape c = tpusim::isa::ParseShape("f32[10]{0:T(1024)}");
  const Filled column = RunFill(block, c, {0}, [](const std::vector<int64_t>& i) { return uint32_t(7 + i[0]); }, 8192);
  CHECK(column.dmas == 9);
  CHECK(F32Mismatches(column.vmem, 2, [&](int64_t t, int64_t r, int64_t l) -> std::optional<uint32_t> {
          if (!valid(t, r, l)) return std::nullopt;
          return uint32_t(7 + 8 + r);
        }) == 0);
}

TEST_CASE("broadcast fill of part of a strip: rank 3 from the major dims and from the minor dim", "[compiler][broadcast_fill]") {
  // f32[2,10,300]: 2 strips a matrix; strip 3 is matrix 1's rows 8 and 9. Columns [256, 384)
  // clipped to 300: one tile, lanes 0..43.
  const BroadcastBlock block = PieceOf("f32[2,10,300]{2,1,0:T(8,128)}", 3, 2, 256, 128, 4096);
  const auto valid = [](int64_t r, int64_t l) { return r < 2 && l < 44; };

  // broadcast(a[2,10]), dimensions={0,1}: element (1, 8 + r, j) is a[1][8 + r]. 1 + 6 doublings
  // (1 -> 2 -> 4 -> 8 -> 16 -> 32 -> 44 lanes).
  const Shape a = tpusim::isa::ParseShape("f32[2,10]{1,0:T(8,128)}");
  const Filled lanes = RunFill(block, a, {0, 1}, [](const std::vector<int64_t>& i) { return uint32_t(100 * i[0] + i[1]); }, 4096);
  CHECK(lanes.dmas == 7);
  CHECK(F32Mismatches(lanes.vmem, 1, [&](int64_t, int64_t r, int64_t l) -> std::optional<uint32_t> {
          if (!valid(r, l)) return std::nullopt;
          return uint32_t(100 + 8 + r);
        }) == 0);

  // broadcast(v[300]), dimensions={2}: element (1, 8 + r, 256 + l) is v[256 + l]. 1 + 1 (rows).
  const Shape v = tpusim::isa::ParseShape("f32[300]{0:T(1024)}");
  const Filled rows = RunFill(block, v, {2}, [](const std::vector<int64_t>& i) { return uint32_t(5000 + i[0]); }, 4096);
  CHECK(rows.dmas == 2);
  CHECK(F32Mismatches(rows.vmem, 1, [&](int64_t, int64_t r, int64_t l) -> std::optional<uint32_t> {
          if (!valid(r, l)) return std::nullopt;
          return uint32_t(5000 + 256 + l);
        }) == 0);
}

TEST_CASE("broadcast fill of part of a strip: bf16 rows packed two to a word", "[compiler][broadcast_fill]") {
  // bf16[10,300]{1,0:T(8,128)(2,1)}: in a 2048-byte tile, element (r, l) is halfword
  // ((r / 2) * 128 + l) * 2 + r % 2, so rows 8 and 9 of strip 1 share the words of the tile's
  // first 512 bytes. Columns [0, 128): tile 0 of the strip.
  const BroadcastBlock block = PieceOf("bf16[10,300]{1,0:T(8,128)(2,1)}", 1, 2, 0, 128, 2048);
  const Shape v = tpusim::isa::ParseShape("bf16[300]{0:T(1024)(128)(2,1)}");
  const Filled filled = RunFill(block, v, {1}, [](const std::vector<int64_t>& i) { return uint32_t(0x4000 + i[0]); }, 2048);
  CHECK(filled.dmas == 2);
  int64_t mismatches = 0;
  for (int64_t r = 0; r < 8; ++r) {
    for (int64_t l = 0; l < 128; ++l) {
      uint16_t half = 0;
      std::memcpy(&half, filled.vmem.data() + (((r / 2) * 128 + l) * 2 + r % 2) * 2, 2);
      mismatches += half != (r < 2 ? 0x4000 + l : 0xABAB);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("broadcast fill of part of a strip needs one strip and a first column inside the array", "[compiler][broadcast_fill]") {
  BroadcastBlock block = PieceOf("f32[10,300]{1,0:T(8,128)}", 0, 2, 128, 128, 4096);
  block.strips = 2;
  const Shape v = tpusim::isa::ParseShape("f32[300]{0:T(1024)}");
  const auto one = [](const std::vector<int64_t>&) { return uint32_t(1); };
  CHECK_THROWS_WITH(RunFill(block, v, {1}, one, 8192), Catch::Contains("needs one strip") && Catch::Contains("2 strips from column 128 of 300"));
  block.strips = 1;
  block.first_column = 384;
  CHECK_THROWS_WITH(RunFill(block, v, {1}, one, 8192), Catch::Contains("1 strips from column 384 of 300"));
}
