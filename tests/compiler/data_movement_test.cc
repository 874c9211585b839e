// Unit tests of the data-movement lowering's pieces: views that re-describe bytes (checked element
// by element against isa::LayoutMap), the "same row-major image" rule that makes reshapes
// aliases (checked against a brute-force comparison of every element's byte offset), box cutting,
// buffer assignment of aliasing reshapes, and the compiled programs' shape (DMA counts, refusals).
#include <catch2/catch.hpp>

#include <numeric>
#include <regex>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "compiler/lower/dma_region.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/error.h"
#include "isa/layout_index.h"
#include "sim/compile_options.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"

namespace tpusim::compiler {
namespace {

using isa::ParseShape;

// Calls f(index) for every index of `dims` in row-major order.
template <typename F>
void ForEachIndex(const std::vector<int64_t>& dims, F f) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  std::vector<int64_t> index(dims.size(), 0);
  while (true) {
    f(index);
    int64_t k = static_cast<int64_t>(dims.size()) - 1;
    while (k >= 0 && ++index[k] == dims[k]) index[k--] = 0;
    if (k < 0) return;
  }
}

// Whether every element, in row-major order, has the same byte offset in both shapes.
bool SameImageBruteForce(const isa::Shape& a, const isa::Shape& b) {
  const isa::LayoutMap ma(a), mb(b);
  if (ma.byte_size() != mb.byte_size() || ma.element_count() != mb.element_count()) return false;
  std::vector<int64_t> offsets;
  ForEachIndex(a.dims, [&](const std::vector<int64_t>& i) { offsets.push_back(ma.ByteOffset(i)); });
  std::size_t k = 0;
  bool same = true;
  ForEachIndex(b.dims, [&](const std::vector<int64_t>& i) { same &= offsets[k++] == mb.ByteOffset(i); });
  return same;
}

CompileOptions V4Options() {
  return sim::CompileOptionsFor(sim::LoadArchConfig(sim::ResolveConfigPath("tpu_v4")));
}

CompiledModule CompileText(const std::string& body) {
  auto module = hlo::ParseModule("HloModule m\n\nENTRY main {\n" + body + "\n}\n", "<test>");
  return Compile(*module, V4Options());
}

int CountDmasBetween(const CompiledModule& compiled, const std::string& kernel) {
  const std::string text = tpusim::compiler::ProgramText(compiled);
  const std::size_t begin = text.find(kernel + ".begin:");
  const std::size_t end = text.find(kernel + ".end:");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const std::string body = text.substr(begin, end - begin);
  int count = 0;
  for (std::size_t at = body.find("  dma "); at != std::string::npos; at = body.find("  dma ", at + 1)) ++count;
  return count;
}

TEST_CASE("PermutedView describes the operand's bytes in the transpose's index space", "[dma]") {
  for (const char* text : {"f32[20,130]{1,0:T(8,128)}", "bf16[3,5,7]{2,1,0:T(8,128)(2,1)}", "s32[4,6,10]{0,2,1}"}) {
    INFO(text);
    const isa::Shape shape = ParseShape(text);
    std::vector<int64_t> perm(shape.rank());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      const isa::Shape view = PermutedView(shape, perm);
      const isa::LayoutMap original(shape), seen(view);
      CHECK(seen.byte_size() == original.byte_size());
      // View index i is operand index j with j[perm[k]] = i[k].
      ForEachIndex(view.dims, [&](const std::vector<int64_t>& i) {
        std::vector<int64_t> j(i.size());
        for (std::size_t k = 0; k < i.size(); ++k) j[perm[k]] = i[k];
        REQUIRE(seen.ByteOffset(i) == original.ByteOffset(j));
      });
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST_CASE("ExpandedView keeps the bytes with size-1 dims added for a broadcast", "[dma]") {
  const struct {
    const char* shape;
    int64_t rank;
    std::vector<int64_t> map;
  } cases[] = {
      {"f32[130]{0:T(1024)}", 2, {1}},
      {"f32[20]{0:T(1024)}", 2, {0}},
      {"bf16[130]{0:T(1024)(128)(2,1)}", 3, {1}},
      {"f32[3,7]{1,0:T(8,128)}", 3, {0, 2}},
      {"f32[7,3]{1,0:T(8,128)}", 3, {2, 0}},
      {"s32[]{}", 3, {}},
  };
  for (const auto& c : cases) {
    INFO(c.shape);
    const isa::Shape shape = ParseShape(c.shape);
    const isa::Shape view = ExpandedView(shape, c.rank, c.map);
    const isa::LayoutMap original(shape), seen(view);
    CHECK(seen.byte_size() == original.byte_size());
    ForEachIndex(view.dims, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> j;
      for (int64_t d : c.map) j.push_back(i[d]);
      REQUIRE(seen.ByteOffset(i) == original.ByteOffset(j));
    });
  }
}

TEST_CASE("SameRowMajorImage agrees with a comparison of every element's offset", "[dma]") {
  const std::vector<std::vector<int64_t>> dims = {
      {16, 130}, {2, 8, 130}, {1, 16, 130}, {16, 1, 130}, {20, 130}, {1, 20, 130}, {4, 5, 130}, {2600},
      {105}, {3, 5, 7}, {15, 7}, {1, 105}, {8, 128}, {1024}, {1, 1024}, {2, 4, 128}, {2048}, {2, 1024}};
  int aliases = 0;
  for (const char* type : {"f32", "bf16"}) {
    for (const auto& a : dims) {
      for (const auto& b : dims) {
        const auto make = [&](const std::vector<int64_t>& d, bool untiled) {
          isa::Shape s = ParseShape(std::string(type) + "[1]");
          s.dims = d;
          s.layout = isa::DefaultTpuLayout(s.element_type, static_cast<int64_t>(d.size()));
          if (untiled) s.layout->tiles.clear();
          return s;
        };
        if (std::accumulate(a.begin(), a.end(), int64_t{1}, std::multiplies<>()) !=
            std::accumulate(b.begin(), b.end(), int64_t{1}, std::multiplies<>())) {
          continue;
        }
        for (bool untiled : {false, true}) {
          const isa::Shape sa = make(a, untiled), sb = make(b, untiled);
          INFO(isa::ToString(sa) << " vs " << isa::ToString(sb));
          const bool fast = SameRowMajorImage(sa, sb);
          // The rule may say "no" where the images happen to agree, never "yes" where they differ.
          if (fast) CHECK(SameImageBruteForce(sa, sb));
          aliases += fast;
        }
      }
    }
  }
  // The rule finds the common cases: [16,130] = [2,8,130] = [1,16,130]; [20,130] = [1,20,130].
  CHECK(SameRowMajorImage(ParseShape("f32[16,130]{1,0:T(8,128)}"), ParseShape("f32[2,8,130]{2,1,0:T(8,128)}")));
  CHECK(SameRowMajorImage(ParseShape("f32[20,130]{1,0:T(8,128)}"), ParseShape("f32[1,20,130]{2,1,0:T(8,128)}")));
  CHECK(SameRowMajorImage(ParseShape("f32[2,1024]{1,0:T(1024)}"), ParseShape("f32[2048]{0:T(1024)}")));
  CHECK_FALSE(SameRowMajorImage(ParseShape("f32[16,130]{1,0:T(8,128)}"), ParseShape("f32[16,1,130]{2,1,0:T(8,128)}")));
  CHECK_FALSE(SameRowMajorImage(ParseShape("f32[20,130]{1,0:T(8,128)}"), ParseShape("f32[4,5,130]{2,1,0:T(8,128)}")));
  CHECK_FALSE(SameRowMajorImage(ParseShape("f32[20,130]{0,1:T(8,128)}"), ParseShape("f32[1,20,130]{2,1,0:T(8,128)}")));
  CHECK(aliases > 20);
}

TEST_CASE("SameRowMajorImage sees through size-1 dims that layout assignment moved major", "[dma]") {
  // Layout assignment puts size-1 dims at the major end (layout_assignment.h): [16,1,130] lies in
  // memory as [1,16,130], so it is [16,130]'s image, and a reshape between them moves nothing.
  const isa::Shape plain = ParseShape("f32[16,130]{1,0:T(8,128)}");
  const isa::Shape ones = WithDefaultLayouts(isa::Shape::Array(isa::ElementType::kF32, {16, 1, 130}));
  const isa::Shape trailing = WithDefaultLayouts(isa::Shape::Array(isa::ElementType::kBF16, {16, 130, 1}));
  CHECK(SameRowMajorImage(plain, ones));
  CHECK(SameImageBruteForce(plain, ones));
  CHECK(SameRowMajorImage(ParseShape("bf16[16,130]{1,0:T(8,128)(2,1)}"), trailing));
  CHECK(SameImageBruteForce(ParseShape("bf16[16,130]{1,0:T(8,128)(2,1)}"), trailing));
  // A size-1 dim left among the tiled ones pads to a whole tile: not the same image.
  CHECK_FALSE(SameRowMajorImage(plain, ParseShape("f32[16,130,1]{2,1,0:T(8,128)}")));
  // Non-size-1 dims out of row-major order are never aliased.
  CHECK_FALSE(SameRowMajorImage(ParseShape("f32[16,130]{0,1:T(8,128)}"), ones));
}

TEST_CASE("CutBox covers a box exactly once in pieces of at most the limit", "[dma]") {
  const Box box{{1, 2, 3}, {5, 7, 11}};
  for (int64_t limit : {1, 10, 11, 60, 77, 100, 385, 1000}) {
    INFO(limit);
    std::vector<int> seen(5 * 7 * 11, 0);
    for (const Box& piece : CutBox(box, {0, 1, 2}, limit)) {
      CHECK(piece.size[0] * piece.size[1] * piece.size[2] <= limit);
      ForEachIndex(piece.size, [&](const std::vector<int64_t>& i) {
        const int64_t a = piece.start[0] + i[0] - 1, b = piece.start[1] + i[1] - 2, c = piece.start[2] + i[2] - 3;
        REQUIRE(a >= 0);
        REQUIRE(a < 5);
        REQUIRE(b >= 0);
        REQUIRE(b < 7);
        REQUIRE(c >= 0);
        REQUIRE(c < 11);
        ++seen[(a * 7 + b) * 11 + c];
      });
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}

TEST_CASE("buffer assignment: a reshape with the operand's image shares its buffer", "[dma]") {
  auto module = hlo::ParseModule(
      "HloModule m\n\nENTRY main {\n  p = f32[16,130] parameter(0)\n  n = f32[16,130] negate(p)\n"
      "  r = f32[2,8,130] reshape(n)\n  m = f32[2080] reshape(n)\n  ROOT t = (f32[2,8,130], f32[2080]) tuple(r, m)\n}\n",
      "<test>");
  AssignLayouts(*module);
  const auto schedule = Schedule(*module->entry());
  const BufferAssignment buffers = AssignBuffers(schedule, uint64_t{1} << 30);
  const auto find = [&](const std::string& name) {
    for (const auto* instruction : schedule) {
      if (instruction->name() == name) return instruction;
    }
    FAIL("no " << name);
    return schedule.front();
  };
  const DeviceBuffer* n = buffers.leaves.at(find("n")).at(0);
  const DeviceBuffer* r = buffers.leaves.at(find("r")).at(0);
  const DeviceBuffer* m = buffers.leaves.at(find("m")).at(0);
  CHECK(IsAliasingInstruction(*find("r")));
  CHECK_FALSE(IsAliasingInstruction(*find("m")));  // [16,130] T(8,128) -> [2080] T(1024) moves data
  CHECK(r->address == n->address);
  CHECK(r->shape == ParseShape("f32[2,8,130]{2,1,0:T(8,128)}"));
  CHECK(m->address != n->address);
  // n is read through r until the end (r is an output), so m must not overlap it.
  CHECK((m->address >= n->address + n->size_bytes || m->address + m->size_bytes <= n->address));
}

TEST_CASE("compiled data movement: DMA counts of copies, broadcasts and aliases", "[dma]") {
  // A big copy is cut over the 4 engines of tpu_v4: 4 DMAs.
  const CompiledModule copy = CompileText("  p = f32[4096,4096] parameter(0)\n  ROOT c = f32[4096,4096]{0,1} copy(p)");
  CHECK(CountDmasBetween(copy, "c") == 4);
  // A small one is one DMA; [20,130] has padding in both tiled dims: 2 more DMAs zero its edge tiles.
  const CompiledModule small = CompileText("  p = f32[20,130] parameter(0)\n  ROOT c = f32[130,20] transpose(p), dimensions={1,0}");
  CHECK(CountDmasBetween(small, "c") == 3);
  // Broadcast of a [7] row into [1000,7]: 1 DMA, then copies of 1, 2, 4, ..., 256 rows and the
  // last 488: 10 copies; and the padded lanes (7 of 128; 1000 rows are whole tiles) zeroed: the
  // 125 edge tiles (500 KiB) in 2 DMAs from the 256 KiB zeroed block.
  const CompiledModule bcast = CompileText("  p = f32[7] parameter(0)\n  ROOT b = f32[1000,7] broadcast(p), dimensions={1}");
  CHECK(CountDmasBetween(bcast, "b") == 2 + 1 + 10);
  // An aliasing reshape has no kernel at all.
  const CompiledModule alias = CompileText("  p = f32[16,130] parameter(0)\n  ROOT r = f32[2,8,130] reshape(p)");
  CHECK(alias.kernels.empty());
}

TEST_CASE("compiled data movement: refusals name the op, its shape and why", "[dma]") {
  const auto refused = [](const std::string& body, const std::string& why) {
    INFO(body);
    try {
      CompileText(body);
      FAIL("compiled");
    } catch (const Error& error) {
      const std::string message = error.what();
      CHECK_THAT(message, Catch::Contains("<test>:"));
      CHECK_THAT(message, Catch::Contains(why));
    }
  };
  refused("  ROOT i = s8[20,130] iota(), iota_dimension=1", "cannot lower iota s8[20,130]");
  refused("  ROOT i = s8[20,130] iota(), iota_dimension=1", "s32, u32, f32 and bf16 only");
  refused("  p = f64[20,130] parameter(0)\n  v = f64[] parameter(1)\n  ROOT r = f64[23,137] pad(p, v), padding=1_2x3_4",
          "filling 64-bit elements is not lowered yet");
  refused("  p = f32[20,130] parameter(0)\n  i = s8[] parameter(1)\n  j = s8[] parameter(2)\n"
          "  ROOT s = f32[9,7] dynamic-slice(p, i, j), dynamic_slice_sizes={9,7}",
          "start indices are lowered for s32, u32 and s64 only");
}

}  // namespace
}  // namespace tpusim::compiler
