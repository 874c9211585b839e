// DMA data path: bytes land exactly where the two layouts say, for plain copies, re-tiling and
// transposes, whole arrays and sub-regions; and the plan's bursts cover exactly those bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "isa/element_type.h"
#include "isa/layout_index.h"
#include "isa/materialize.h"
#include "isa/shape.h"
#include "models/dma_engine.h"
#include "models/dma_plan.h"
#include "models/hbm.h"
#include "models/region_walk.h"
#include "models/time_units.h"
#include "models/vmem.h"

namespace {

using namespace tpusim::models;
using tpusim::isa::ElementByteWidth;
using tpusim::isa::LayoutMap;
using tpusim::isa::Materialize;
using tpusim::isa::ParseShape;
using tpusim::isa::Shape;

HbmParams TestHbm() { return {uint64_t{1} << 30, 4, 512, 32, 300}; }
VmemParams TestVmem() { return {16 << 20, 4, 128, 2048, 1024, 4, 1000}; }
DmaParams TestDma() { return {1, 64, 512, 16, 8, 1000}; }

// Logical bytes 0, 1, 2, ... wrapping, never 0 (so a missed element shows as a zero).
std::vector<uint8_t> Pattern(std::size_t bytes, int seed = 0) {
  std::vector<uint8_t> pattern(bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    pattern[i] = static_cast<uint8_t>((i * 13 + seed) % 255 + 1);
  }
  return pattern;
}

std::vector<uint8_t> LogicalBytes(const Shape& shape, int seed = 0) {
  return Pattern(tpusim::isa::ElementCount(shape) * ElementByteWidth(shape.element_type), seed);
}

// Runs one transfer to completion on a fresh engine.
void RunDma(const DmaTransfer& transfer, bool move_data = true) {
  DmaEngine engine("dma", TestDma());
  engine.Begin(transfer, sc_core::SC_ZERO_TIME, move_data);
  DmaEngine* engines[] = {&engine};
  RunToCompletion(engines);
  engine.Finish();
}

// The DMA's definition, one element at a time: element k of the region is read at the source's
// ByteOffset(source_start + k) and written at the destination's ByteOffset(destination_start + k).
void ReferenceCopy(const Shape& source, std::span<const uint8_t> source_image,
                   const std::vector<int64_t>& source_start, const Shape& destination,
                   std::span<uint8_t> destination_image,
                   const std::vector<int64_t>& destination_start,
                   const std::vector<int64_t>& sizes) {
  const LayoutMap from(source), to(destination);
  const int64_t bytes = from.element_bits() / 8;
  for (int64_t size : sizes) {
    if (size == 0) return;
  }
  std::vector<int64_t> k(sizes.size(), 0), a(sizes.size()), b(sizes.size());
  while (true) {
    for (std::size_t d = 0; d < sizes.size(); ++d) {
      a[d] = source_start[d] + k[d];
      b[d] = destination_start[d] + k[d];
    }
    std::copy_n(source_image.begin() + from.ByteOffset(a), bytes,
                destination_image.begin() + to.ByteOffset(b));
    std::size_t d = sizes.size();
    while (d > 0 && ++k[d - 1] == sizes[d - 1]) k[--d] = 0;
    if (d == 0) return;
  }
}

// The same requests, needs and payload.
bool SameRequests(const DmaPlan& a, const DmaPlan& b) {
  if (a.reads.size() != b.reads.size() || a.writes.size() != b.writes.size()) return false;
  for (std::size_t i = 0; i < a.reads.size(); ++i) {
    if (a.reads[i].address != b.reads[i].address || a.reads[i].bytes != b.reads[i].bytes) return false;
  }
  for (std::size_t i = 0; i < a.writes.size(); ++i) {
    if (a.writes[i].address != b.writes[i].address || a.writes[i].bytes != b.writes[i].bytes) return false;
  }
  return a.write_needs == b.write_needs && a.payload_bytes == b.payload_bytes;
}

}  // namespace

TEST_CASE("a bf16 T(8,128)(2,1) array survives HBM to VMEM to HBM byte for byte", "[models]") {
  // 20 x 300 is not a multiple of the tile: the image has padding, which must stay zero.
  const Shape shape = ParseShape("bf16[20,300]{1,0:T(8,128)(2,1)}");
  const std::vector<uint8_t> logical = LogicalBytes(shape);
  const std::vector<uint8_t> image = Materialize(shape, logical);
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  hbm.Write(4096, image);
  RunDma(DmaTransfer::WholeArray(hbm, 4096, shape, vmem, 8192, shape));
  CHECK(vmem.Read(8192, image.size()) == image);
  RunDma(DmaTransfer::WholeArray(vmem, 8192, shape, hbm, 1 << 20, shape));
  CHECK(hbm.Read(1 << 20, image.size()) == image);
  CHECK(tpusim::isa::Dematerialize(shape, hbm.Read(1 << 20, image.size())) == logical);
  // Nothing outside the image was written.
  CHECK(vmem.Read(8192 + image.size(), 64) == std::vector<uint8_t>(64, 0));
  CHECK(vmem.Read(8192 - 64, 64) == std::vector<uint8_t>(64, 0));
}

TEST_CASE("a DMA from {1,0} to {0,1} transposes the image", "[models]") {
  const Shape row_major = ParseShape("bf16[64,200]{1,0}");
  const Shape column_major = ParseShape("bf16[64,200]{0,1}");
  const std::vector<uint8_t> logical = LogicalBytes(row_major);
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  hbm.Write(0, Materialize(row_major, logical));
  RunDma(DmaTransfer::WholeArray(hbm, 0, row_major, vmem, 0, column_major));
  const std::vector<uint8_t> result = vmem.Read(0, 64 * 200 * 2);
  CHECK(result == Materialize(column_major, logical));
  // ... which is the row-major image of the transposed array.
  std::vector<uint8_t> transposed(logical.size());
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 200; ++j) {
      std::copy_n(logical.begin() + (i * 200 + j) * 2, 2, transposed.begin() + (j * 64 + i) * 2);
    }
  }
  CHECK(result == Materialize(ParseShape("bf16[200,64]{1,0}"), transposed));
}

TEST_CASE("re-tiling DMAs produce the destination layout's image", "[models]") {
  struct Case {
    const char* source;
    const char* destination;
  };
  for (const Case& c : {Case{"f32[24,260]{1,0:T(8,128)}", "f32[24,260]{1,0}"},
                        Case{"bf16[24,260]{1,0}", "bf16[24,260]{1,0:T(8,128)(2,1)}"},
                        Case{"bf16[24,260]{1,0:T(8,128)(2,1)}", "bf16[24,260]{0,1:T(8,128)(2,1)}"},
                        Case{"u8[40,130]{1,0:T(8,128)(4,1)}", "u8[40,130]{1,0:T(32,128)}"},
                        Case{"f32[3,5,70]{2,1,0:T(8,128)}", "f32[3,5,70]{0,2,1}"}}) {
    INFO(c.source << " -> " << c.destination);
    const Shape source = ParseShape(c.source);
    const Shape destination = ParseShape(c.destination);
    const std::vector<uint8_t> logical = LogicalBytes(source);
    Hbm hbm("hbm", TestHbm());
    Vmem vmem("vmem", TestVmem());
    hbm.Write(512, Materialize(source, logical));
    RunDma(DmaTransfer::WholeArray(hbm, 512, source, vmem, 1024, destination));
    const std::vector<uint8_t> expected = Materialize(destination, logical);
    CHECK(vmem.Read(1024, expected.size()) == expected);
  }
}

TEST_CASE("a DMA of a tile-aligned region moves whole tiles", "[models]") {
  // A 256 x 512 block of a bf16[1024,2048] HBM array into a bf16[256,512] VMEM buffer, both
  // T(8,128)(2,1): each 8 x 128 tile is 2 KiB contiguous on both sides.
  const Shape big = ParseShape("bf16[1024,2048]{1,0:T(8,128)(2,1)}");
  const Shape small = ParseShape("bf16[256,512]{1,0:T(8,128)(2,1)}");
  const std::vector<uint8_t> image = Materialize(big, LogicalBytes(big));
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  hbm.Write(0, image);
  DmaTransfer transfer;
  transfer.source = {&hbm, 0, big, {512, 1024}};
  transfer.destination = {&vmem, 0, small, {0, 0}};
  transfer.sizes = {256, 512};
  std::vector<uint8_t> expected(LayoutMap(small).byte_size());
  ReferenceCopy(big, image, {512, 1024}, small, expected, {0, 0}, {256, 512});
  RunDma(transfer);
  CHECK(vmem.Read(0, expected.size()) == expected);
  const DmaPlan plan = PlanDma(transfer, 512, false);
  // 256 x 512 bf16 = 256 KiB: 512 bursts of 512 bytes each side, nothing partial.
  CHECK(plan.payload_bytes == 256 * 512 * 2);
  CHECK(plan.reads.size() == 512);
  CHECK(plan.writes.size() == 512);
  CHECK(std::all_of(plan.reads.begin(), plan.reads.end(),
                    [](const DmaRequest& r) { return r.bytes == 512; }));
}

TEST_CASE("DMAs of random regions between random layouts match the element-wise definition",
          "[models]") {
  // Layouts per rank, {} = row-major untiled; `*` layouts take the element-wise path.
  const std::vector<std::string> layouts2 = {"{1,0}", "{0,1}", "{1,0:T(8,128)}", "{0,1:T(8,128)}",
                                             "{1,0:T(2,2)}", "{1,0:T(4,3)}", "{1,0:T(8,128)(2,1)}",
                                             "{0,1:T(4,128)(2,1)}"};
  const std::vector<std::string> layouts3 = {"{2,1,0}", "{0,2,1}", "{1,0,2:T(4,8)}",
                                             "{2,1,0:T(8,128)(2,1)}", "{2,1,0:T(*,2,8)}",
                                             "{2,0,1:T(2,*,4)}"};
  std::mt19937 random(20240611);
  auto uniform = [&](int64_t low, int64_t high) {  // [low, high]
    return std::uniform_int_distribution<int64_t>(low, high)(random);
  };
  for (int iteration = 0; iteration < 300; ++iteration) {
    const int rank = static_cast<int>(uniform(1, 3));
    const std::string type = std::vector<std::string>{"bf16", "f32", "u8", "s64"}[uniform(0, 3)];
    auto random_shape = [&]() {
      std::vector<int64_t> dims;
      const int64_t max_dim = rank == 1 ? 3000 : rank == 2 ? 150 : 20;
      for (int d = 0; d < rank; ++d) dims.push_back(uniform(1, max_dim));
      std::string text = type + "[";
      for (int d = 0; d < rank; ++d) text += (d ? "," : "") + std::to_string(dims[d]);
      text += "]";
      if (rank == 1) text += uniform(0, 1) ? "{0}" : "{0:T(256)}";
      if (rank == 2) text += layouts2[uniform(0, layouts2.size() - 1)];
      if (rank == 3) text += layouts3[uniform(0, layouts3.size() - 1)];
      return ParseShape(text);
    };
    const Shape source = random_shape();
    Shape destination = random_shape();
    std::vector<int64_t> sizes(rank), source_start(rank), destination_start(rank);
    for (int d = 0; d < rank; ++d) {
      const int64_t limit = std::min(source.dims[d], destination.dims[d]);
      sizes[d] = uniform(0, 9) == 0 ? 0 : uniform(1, limit);
      source_start[d] = uniform(0, source.dims[d] - sizes[d]);
      destination_start[d] = uniform(0, destination.dims[d] - sizes[d]);
    }
    INFO(tpusim::isa::ToString(source) << " " << tpusim::isa::ToString(destination));
    const std::vector<uint8_t> source_image = Pattern(LayoutMap(source).byte_size(), iteration);
    std::vector<uint8_t> expected = Pattern(LayoutMap(destination).byte_size(), iteration + 1);
    Hbm hbm("hbm", TestHbm());
    Vmem vmem("vmem", TestVmem());
    const uint64_t source_base = uniform(0, 3) * 64 + uniform(0, 1) * 7;
    const uint64_t destination_base = uniform(0, 5000);
    hbm.Write(source_base, source_image);
    vmem.Write(destination_base, expected);
    DmaTransfer transfer;
    transfer.source = {&hbm, source_base, source, source_start};
    transfer.destination = {&vmem, destination_base, destination, destination_start};
    transfer.sizes = sizes;
    ReferenceCopy(source, source_image, source_start, destination, expected, destination_start,
                  sizes);
    RunDma(transfer);
    REQUIRE(vmem.Read(destination_base, expected.size()) == expected);

    // The plan: bursts in address order, each inside one aligned window, covering every byte the
    // reference moves; each write's need covers the reads feeding it.
    const uint64_t burst = uint64_t{64} << uniform(0, 3);
    const DmaPlan plan = PlanDma(transfer, burst, false);
    // Timing-only plans replay boxes they have seen (WindowMemo); walking every run gives the same.
    REQUIRE(SameRequests(plan, PlanDma(transfer, burst, true)));
    int64_t elements = 1;
    for (int64_t size : sizes) elements *= size;
    CHECK(plan.payload_bytes ==
          static_cast<uint64_t>(elements * LayoutMap(source).element_bits() / 8));
    auto check_requests = [&](const std::vector<DmaRequest>& requests) {
      for (std::size_t i = 0; i < requests.size(); ++i) {
        REQUIRE(requests[i].bytes > 0);
        const uint64_t last = requests[i].address + requests[i].bytes - 1;
        REQUIRE(requests[i].address / burst == last / burst);
        if (i > 0) REQUIRE(requests[i - 1].address / burst < requests[i].address / burst);
      }
    };
    check_requests(plan.reads);
    check_requests(plan.writes);
    REQUIRE(plan.write_needs.size() == plan.writes.size());
    auto find = [&](const std::vector<DmaRequest>& requests, uint64_t address) {
      const auto it = std::lower_bound(
          requests.begin(), requests.end(), address / burst,
          [&](const DmaRequest& r, uint64_t window) { return r.address / burst < window; });
      REQUIRE(it != requests.end());
      REQUIRE(it->address <= address);
      REQUIRE(address < it->address + it->bytes);
      return static_cast<uint64_t>(it - requests.begin());
    };
    if (elements > 0) {
      const LayoutMap from(source), to(destination);
      const int64_t bytes = from.element_bits() / 8;
      std::vector<int64_t> k(rank, 0), a(rank), b(rank);
      for (int64_t e = 0; e < elements; ++e) {
        for (int d = 0; d < rank; ++d) {
          a[d] = source_start[d] + k[d];
          b[d] = destination_start[d] + k[d];
        }
        // An element's first and last bytes (it may straddle a window at an odd base).
        for (const int64_t byte : {int64_t{0}, bytes - 1}) {
          const uint64_t read = find(plan.reads, source_base + from.ByteOffset(a) + byte);
          const uint64_t write = find(plan.writes, destination_base + to.ByteOffset(b) + byte);
          REQUIRE(plan.write_needs[write] >= read);
        }
        for (int d = rank; d-- > 0;) {
          if (++k[d] < sizes[d]) break;
          k[d] = 0;
        }
      }
    }
  }
}

TEST_CASE("a DMA engine's kept layout tables give the same plans and bytes", "[models]") {
  // DimTableCache keeps each layout's linear indices along a dim between transfers. Against
  // LinearIndex directly, slices in any order (overlapping, repeated, disjoint) of a few shapes:
  const std::vector<Shape> shapes = {ParseShape("bf16[512,512]{1,0:T(8,128)(2,1)}"),
                                     ParseShape("bf16[256,512]{1,0:T(16,128)(2,1)}"),
                                     ParseShape("bf16[96,300]{0,1:T(8,128)(2,1)}"),
                                     ParseShape("bf16[7,9,130]{2,0,1:T(4,8)}")};
  std::mt19937 random(7);
  auto uniform = [&](int64_t low, int64_t high) {  // [low, high]
    return std::uniform_int_distribution<int64_t>(low, high)(random);
  };
  DimTableCache cache;
  for (int i = 0; i < 400; ++i) {
    const Shape& shape = shapes[uniform(0, shapes.size() - 1)];
    const LayoutMap map(shape);
    const std::size_t d = uniform(0, shape.rank() - 1);
    const int64_t size = uniform(1, shape.dims[d]);
    const int64_t start = uniform(0, shape.dims[d] - size);
    std::vector<int64_t> got(size);
    cache.Slice(map, d, start, got);
    std::vector<int64_t> index(shape.rank(), 0);
    for (int64_t k = 0; k < size; ++k) {
      index[d] = start + k;
      REQUIRE(got[k] == map.LinearIndex(index));
    }
  }
  // A dim too long to keep is computed each time, with the same values.
  const Shape long_dim = ParseShape("u8[65537]{0:T(256)}");
  REQUIRE(long_dim.dims[0] > DimTableCache::kMaxCachedDim);
  const LayoutMap long_map(long_dim);
  std::vector<int64_t> tail(5);
  cache.Slice(long_map, 0, 65532, tail);
  CHECK(tail == std::vector<int64_t>{65532, 65533, 65534, 65535, 65536});

  // Plans and bytes with one cache over many transfers equal those of fresh, uncached plans.
  Hbm hbm("hbm", TestHbm());
  Vmem cached_vmem("vmem", TestVmem());
  Vmem fresh_vmem("vmem", TestVmem());
  hbm.Write(0, Pattern(LayoutMap(shapes[0]).byte_size()));
  DimTableCache plans;
  for (int i = 0; i < 60; ++i) {
    const Shape& source = shapes[uniform(0, 1)];
    const Shape& destination = shapes[uniform(0, 2)];
    std::vector<int64_t> sizes(2), source_start(2), destination_start(2);
    for (int d = 0; d < 2; ++d) {
      sizes[d] = uniform(1, std::min(source.dims[d], destination.dims[d]));
      source_start[d] = uniform(0, source.dims[d] - sizes[d]);
      destination_start[d] = uniform(0, destination.dims[d] - sizes[d]);
    }
    DmaTransfer transfer;
    transfer.source = {&hbm, 0, source, source_start};
    transfer.destination = {&cached_vmem, 4096, destination, destination_start};
    transfer.sizes = sizes;
    const DmaPlan cached = PlanDma(transfer, 512, true, &plans);
    transfer.destination.memory = &fresh_vmem;
    const DmaPlan fresh = PlanDma(transfer, 512, true);
    REQUIRE(cached.payload_bytes == fresh.payload_bytes);
    REQUIRE(cached.write_needs == fresh.write_needs);
    REQUIRE(cached.reads.size() == fresh.reads.size());
    REQUIRE(cached.writes.size() == fresh.writes.size());
    for (std::size_t r = 0; r < cached.reads.size(); ++r) {
      REQUIRE(cached.reads[r].address == fresh.reads[r].address);
      REQUIRE(cached.reads[r].bytes == fresh.reads[r].bytes);
    }
    for (std::size_t w = 0; w < cached.writes.size(); ++w) {
      REQUIRE(cached.writes[w].address == fresh.writes[w].address);
      REQUIRE(cached.writes[w].bytes == fresh.writes[w].bytes);
    }
  }
  CHECK(cached_vmem.Read(0, 1 << 20) == fresh_vmem.Read(0, 1 << 20));
}

TEST_CASE("thin slices of large arrays plan one request per touched window, in address order", "[models]") {
  // f32[8192,8192] row-major is 256 MiB, 524288 windows of 512 bytes: a one-column slice touches
  // 8192 of them, few enough that the plan lists touched windows rather than a table of all.
  Hbm hbm("hbm", TestHbm());
  const Shape big = ParseShape("f32[8192,8192]{1,0}");
  const std::vector<int64_t> origin = {0, 0};

  // Column 5 -> f32[8192,1]: element r is read at r * 32768 + 20 (one 4-byte request per row, the
  // walk ascending), and written densely: 32 KiB in 64 windows of 128 elements each, window w
  // needing the read of its last element, 128 * w + 127.
  DmaTransfer column;
  column.source = {&hbm, 0, big, {0, 5}};
  column.destination = {&hbm, 512 << 20, ParseShape("f32[8192,1]{1,0}"), origin};
  column.sizes = {8192, 1};
  const DmaPlan plan = PlanDma(column, 512, false);
  REQUIRE(plan.reads.size() == 8192);
  for (uint64_t r = 0; r < 8192; ++r) {
    REQUIRE(plan.reads[r].address == r * 32768 + 20);
    REQUIRE(plan.reads[r].bytes == 4);
  }
  REQUIRE(plan.writes.size() == 64);
  for (uint64_t w = 0; w < 64; ++w) {
    REQUIRE(plan.writes[w].address == (512u << 20) + w * 512);
    REQUIRE(plan.writes[w].bytes == 512);
    REQUIRE(plan.write_needs[w] == 128 * w + 127);
  }

  // Two columns written into the big array from f32[8192,2]{0,1} (column-major): the walk, in the
  // source's order, writes column 0 top to bottom, then goes back for column 1. Row r's two
  // elements share the window at r * 32768 (one 8-byte request), and its last source byte is
  // column 1's, at 32768 + 4 r: source window 64 + r / 128 (the 128 source windows are read in
  // order, so that is also the read's index).
  DmaTransfer columns;
  columns.source = {&hbm, 0, ParseShape("f32[8192,2]{0,1}"), origin};
  columns.destination = {&hbm, 0, big, origin};
  columns.sizes = {8192, 2};
  const DmaPlan back = PlanDma(columns, 512, false);
  REQUIRE(back.reads.size() == 128);
  REQUIRE(back.writes.size() == 8192);
  for (uint64_t r = 0; r < 8192; ++r) {
    REQUIRE(back.writes[r].address == r * 32768);
    REQUIRE(back.writes[r].bytes == 8);
    REQUIRE(back.write_needs[r] == 64 + r / 128);
  }
}

TEST_CASE("timing-only plans are kept by transfer and equal fresh ones", "[models]") {
  // A transposing copy walks one run per element; a kernel's loop repeats the same transfer, and
  // a model's layers the same shapes at other addresses.
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  const Shape source = ParseShape("bf16[256,512]{1,0:T(8,128)(2,1)}");
  const Shape destination = ParseShape("bf16[256,512]{0,1:T(8,128)(2,1)}");
  DmaTransfer transfer;
  transfer.source = {&hbm, 4096, source, {0, 0}};
  transfer.destination = {&vmem, 0, destination, {0, 0}};
  transfer.sizes = {256, 512};
  DimTableCache tables;
  DmaPlanCache cache;
  // A kept plan placed at its transfer's addresses: the requests of a fresh plan.
  const auto placed_requests = [](const PlacedDmaPlan& placed) {
    DmaPlan plan = *placed.plan;
    for (DmaRequest& read : plan.reads) read.address += placed.read_offset;
    for (DmaRequest& write : plan.writes) write.address += placed.write_offset;
    return plan;
  };
  const PlacedDmaPlan first = cache.Plan(transfer, 512, &tables);
  const PlacedDmaPlan again = cache.Plan(transfer, 512, &tables);
  CHECK(again.plan == first.plan);  // the same plan object: nothing walked again
  CHECK(SameRequests(placed_requests(first), PlanDma(transfer, 512, false)));
  // A base address moved by whole burst windows: the same plan, placed there.
  DmaTransfer moved = transfer;
  moved.source.base_address = 8192;
  const PlacedDmaPlan at_8192 = cache.Plan(moved, 512, &tables);
  CHECK(at_8192.plan == first.plan);
  CHECK(at_8192.read_offset == 8192);
  CHECK(SameRequests(placed_requests(at_8192), PlanDma(moved, 512, false)));
  CHECK(placed_requests(at_8192).reads.front().address == 8192);
  // Anything else a plan depends on makes another entry: a base's place within a window, a
  // start, the burst size.
  DmaTransfer shifted = transfer;
  shifted.source.base_address = 4096 + 64;
  const PlacedDmaPlan at_4160 = cache.Plan(shifted, 512, &tables);
  CHECK(at_4160.plan != first.plan);
  CHECK(SameRequests(placed_requests(at_4160), PlanDma(shifted, 512, false)));
  DmaTransfer slice = transfer;
  slice.sizes = {128, 512};
  slice.destination.start = {128, 0};
  CHECK(SameRequests(placed_requests(cache.Plan(slice, 512, &tables)), PlanDma(slice, 512, false)));
  CHECK(cache.Plan(transfer, 256, &tables).plan != first.plan);
  CHECK(SameRequests(placed_requests(cache.Plan(transfer, 256, &tables)), PlanDma(transfer, 256, false)));
  // Starts moved by whole tiles (8 rows or 128 columns of T(8,128)) move every byte of the region
  // by as much: the plan of the same region at the first start, placed further on. The source's
  // rows [16:144] against [0:128]: 2 rows of tiles down, each 4 tiles of 2 KiB (16 KiB on). The
  // destination, column-major (tiles of 8 columns x 128 rows), columns [256:384] against
  // [128:256]: 16 rows of tiles over, each 2 tiles of 2 KiB (64 KiB on).
  DmaTransfer rows = transfer;
  rows.sizes = {128, 128};
  rows.destination.start = {0, 128};
  const PlacedDmaPlan top = cache.Plan(rows, 512, &tables);
  DmaTransfer lower = rows;
  lower.source.start = {16, 0};
  lower.destination.start = {0, 256};
  const PlacedDmaPlan folded = cache.Plan(lower, 512, &tables);
  CHECK(folded.plan == top.plan);
  CHECK(folded.read_offset == top.read_offset + 2 * 4 * 2048);
  CHECK(folded.write_offset == top.write_offset + 16 * 2 * 2048);
  CHECK(SameRequests(placed_requests(folded), PlanDma(lower, 512, false)));
  // Not by whole tiles (4 rows of 8): another plan, still the transfer's requests.
  DmaTransfer half = rows;
  half.source.start = {4, 0};
  const PlacedDmaPlan off_tile = cache.Plan(half, 512, &tables);
  CHECK(off_tile.plan != top.plan);
  CHECK(SameRequests(placed_requests(off_tile), PlanDma(half, 512, false)));
}

TEST_CASE("timing-only plans of element-granular walks equal plans that walk every run", "[models]") {
  // A timing-only plan walks one box of each kind (pattern and offsets within the bursts) and
  // replays its windows for the others; a plan that moves the data walks every run. Row-major
  // bf16 <-> T(8,128)(2,1) (2-byte runs), a transpose, and an untiled transpose (one box), at
  // aligned and odd bases and starts, for three burst sizes.
  struct Case {
    const char* source;
    const char* destination;
    std::vector<int64_t> source_start, destination_start, sizes;
    uint64_t source_base, destination_base;
  };
  const Case cases[] = {
      {"bf16[256,384]{1,0}", "bf16[256,384]{1,0:T(8,128)(2,1)}", {0, 0}, {0, 0}, {256, 384}, 0, 4096},
      {"bf16[256,384]{1,0:T(8,128)(2,1)}", "bf16[256,384]{1,0}", {0, 0}, {0, 0}, {256, 384}, 4096, 0},
      {"bf16[256,384]{1,0}", "bf16[256,384]{1,0:T(8,128)(2,1)}", {3, 5}, {40, 1}, {200, 300}, 6, 100},
      {"bf16[64,256,512]{2,1,0:T(8,128)(2,1)}", "bf16[64,256,512]{1,2,0:T(8,128)(2,1)}", {0, 0, 0}, {0, 0, 0}, {2, 256, 512}, 0, 0},
      {"bf16[256,512]{1,0:T(8,128)(2,1)}", "bf16[256,512]{0,1:T(8,128)(2,1)}", {5, 9}, {100, 17}, {150, 400}, 64, 2},
      {"f32[96,200]{1,0}", "f32[96,200]{0,1}", {1, 2}, {0, 0}, {90, 190}, 12, 0},
      {"s8[128,512]{1,0}", "s8[128,512]{1,0:T(8,128)(4,1)}", {0, 0}, {0, 0}, {128, 512}, 0, 0},
  };
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  for (const Case& c : cases) {
    DmaTransfer transfer;
    transfer.source = {&hbm, c.source_base, ParseShape(c.source), c.source_start};
    transfer.destination = {&vmem, c.destination_base, ParseShape(c.destination), c.destination_start};
    transfer.sizes = c.sizes;
    for (const uint64_t burst : {64, 256, 512}) {
      INFO(c.source << " -> " << c.destination << ", bursts of " << burst);
      const DmaPlan timing = PlanDma(transfer, burst, false);
      const DmaPlan walked = PlanDma(transfer, burst, true);
      CHECK(SameRequests(timing, walked));
      CHECK(!timing.writes.empty());
    }
  }
}

TEST_CASE("a scalar and an empty region", "[models]") {
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  const Shape scalar = ParseShape("f32[]");
  hbm.Write(100, std::vector<uint8_t>{1, 2, 3, 4});
  RunDma(DmaTransfer::WholeArray(hbm, 100, scalar, vmem, 200, scalar));
  CHECK(vmem.Read(200, 4) == std::vector<uint8_t>{1, 2, 3, 4});

  const Shape empty = ParseShape("f32[0,16]");
  DmaEngine engine("dma", TestDma());
  engine.Begin(DmaTransfer::WholeArray(hbm, 0, empty, vmem, 0, empty), Nanoseconds(5), true);
  CHECK_FALSE(engine.has_request());
  // Nothing to move: it completes when its first request would have left.
  CHECK(engine.Finish().completed == Nanoseconds(5 + 16));
}
