// Buffer assignment (compiler/passes/buffer_assignment.h): lives from the schedule, reuse of dead
// buffers' space (first fit or greedy by size, whichever peaks lower), aliases that write nothing,
// while loops reusing their init, donated parameters, and the HBM capacity error.
#include <catch2/catch.hpp>

#include <limits>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/error.h"

namespace {

using tpusim::compiler::AssignBuffers;
using tpusim::compiler::AssignLayouts;
using tpusim::compiler::BufferAssignment;
using tpusim::compiler::DeviceBuffer;
using tpusim::compiler::Donations;
using tpusim::compiler::ParseInputOutputAlias;
using tpusim::compiler::PlaceBuffers;
using tpusim::compiler::Schedule;

// f32[1024] is one T(1024) tile: 4096 bytes, exactly one alignment unit. Reverses: each result
// needs a buffer of its own (an element-wise op could write over its operand).
constexpr char kChain[] = R"(HloModule chain
ENTRY e {
  p = f32[1024] parameter(0)
  a = f32[1024] reverse(p), dimensions={0}
  b = f32[1024] reverse(a), dimensions={0}
  c = f32[1024] reverse(b), dimensions={0}
  ROOT d = f32[1024] reverse(c), dimensions={0}
}
)";

uint64_t AddressOf(const BufferAssignment& buffers, const tpusim::hlo::Module& module, const char* name) {
  return buffers.leaves.at(module.entry()->FindInstruction(name)).at(0)->address;
}

}  // namespace

TEST_CASE("buffer assignment reuses the space of buffers no later instruction reads", "[compiler][buffers]") {
  auto module = tpusim::hlo::ParseModule(kChain, "chain");
  AssignLayouts(*module);
  const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20);
  // p lives for the whole program (it is dumped after the run); a is last read by b, so c (written
  // after b) takes a's place, and d takes b's once c is its only reader.
  CHECK(AddressOf(buffers, *module, "p") == 0);
  CHECK(AddressOf(buffers, *module, "a") == 4096);
  CHECK(AddressOf(buffers, *module, "b") == 8192);
  CHECK(AddressOf(buffers, *module, "c") == 4096);
  CHECK(AddressOf(buffers, *module, "d") == 8192);
  CHECK(buffers.peak_bytes == 12288);
  for (const auto& buffer : buffers.buffers) CHECK(buffer->size_bytes == 4096);
}

TEST_CASE("buffer assignment: an element-wise op writes over an operand nothing reads afterwards", "[compiler][buffers]") {
  // p lives for the whole program, so a = negate(p) needs a buffer of its own; b, c, d and f each
  // take over their operand's (the same shape and layout, read last there; p, the other operand
  // of d and f, is never written).
  auto module = tpusim::hlo::ParseModule(R"(HloModule inplace
ENTRY e {
  p = f32[1024] parameter(0)
  a = f32[1024] negate(p)
  b = f32[1024] negate(a)
  c = f32[1024] exponential(b)
  d = f32[1024] add(c, p)
  ROOT f = f32[1024] multiply(d, p)
}
)", "inplace");
  AssignLayouts(*module);
  const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20);
  CHECK(AddressOf(buffers, *module, "p") == 0);
  for (const char* name : {"a", "b", "c", "d", "f"}) {
    INFO(name);
    CHECK(AddressOf(buffers, *module, name) == 4096);
  }
  CHECK(buffers.peak_bytes == 8192);
}

TEST_CASE("buffer assignment: an element-wise op does not write over bytes it also reads otherwise", "[compiler][buffers]") {
  // v is a's bytes seen transposed (a bitcast with the other layout): writing c over a would
  // overwrite elements v has yet to read, so c gets a buffer of its own. f32[128,128] is 64 KiB.
  auto module = tpusim::hlo::ParseModule(R"(HloModule views
ENTRY e {
  p = f32[128,128] parameter(0)
  a = f32[128,128] negate(p)
  v = f32[128,128]{0,1} bitcast(a)
  ROOT c = f32[128,128] add(v, a)
}
)", "views");
  AssignLayouts(*module);
  const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20);
  CHECK(AddressOf(buffers, *module, "a") == 65536);
  CHECK(AddressOf(buffers, *module, "v") == 65536);
  CHECK(AddressOf(buffers, *module, "c") == 131072);
}

TEST_CASE("buffer assignment: tuples and get-tuple-element name their operands' buffers", "[compiler][buffers]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  p = f32[8,128] parameter(0)
  q = bf16[16,128] parameter(1)
  t = (f32[8,128], bf16[16,128]) tuple(p, q)
  g = bf16[16,128] get-tuple-element(t), index=1
  ROOT r = bf16[16,128] negate(g)
}
)", "t");
  AssignLayouts(*module);
  const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20);
  const auto& entry = *module->entry();
  CHECK(buffers.leaves.at(entry.FindInstruction("t")).size() == 2);
  CHECK(buffers.leaves.at(entry.FindInstruction("t"))[1] == buffers.leaves.at(entry.FindInstruction("q"))[0]);
  CHECK(buffers.leaves.at(entry.FindInstruction("g"))[0] == buffers.leaves.at(entry.FindInstruction("q"))[0]);
  // Two parameters (4 KiB each: f32 8x128 is one tile, bf16 16x128 two 2 KiB tiles) and r.
  CHECK(buffers.peak_bytes == 3 * 4096);
}

TEST_CASE("buffer assignment refuses a module larger than HBM, naming the peak and the capacity", "[compiler][buffers]") {
  auto module = tpusim::hlo::ParseModule(kChain, "chain.hlo");
  AssignLayouts(*module);
  try {
    AssignBuffers(Schedule(*module->entry()), 8192);
    FAIL("expected an error");
  } catch (const tpusim::Error& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Catch::Contains("chain.hlo:5:"));  // where b is written: the third buffer
    CHECK_THAT(message, Catch::Contains("needs 12288 bytes of HBM at its peak"));
    CHECK_THAT(message, Catch::Contains("more than the chip's 8192"));
    // What fills it: p (whole program), a (read by b) and b itself, largest first.
    CHECK_THAT(message, Catch::Contains("the largest buffers live here: p (4096 bytes), a (4096 bytes), b (4096 bytes); "
                                        "3 buffers of 12288 bytes live in all"));
  }
}

TEST_CASE("layout assignment tiles arrays as a TPU does and keeps explicit tiles", "[compiler][layouts]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule l
ENTRY e {
  p = bf16[40,300] parameter(0)
  q = f32[3,5]{0,1} parameter(1)
  r = f32[256]{0:T(256)} parameter(2)
  ROOT t = (bf16[40,300], f32[3,5]{0,1}, f32[256]{0:T(256)}) tuple(p, q, r)
}
)", "l");
  AssignLayouts(*module);
  const auto& entry = *module->entry();
  using tpusim::isa::ToString;
  CHECK(ToString(entry.FindInstruction("p")->shape()) == "bf16[40,300]{1,0:T(8,128)(2,1)}");
  // A layout without tiles keeps its dimension order and gets the TPU tiles.
  CHECK(ToString(entry.FindInstruction("q")->shape()) == "f32[3,5]{0,1:T(8,128)}");
  CHECK(ToString(entry.FindInstruction("r")->shape()) == "f32[256]{0:T(256)}");
  CHECK(ToString(entry.FindInstruction("t")->shape()) ==
        "(bf16[40,300]{1,0:T(8,128)(2,1)}, f32[3,5]{0,1:T(8,128)}, f32[256]{0:T(256)})");
}

TEST_CASE("buffer assignment places big buffers first when that peaks lower than first fit", "[compiler][buffers]") {
  // Lives (schedule positions 0..4): p whole program, x [1,2], y [2,end], z (8 KiB) [3,end].
  // First fit: p 0, x 4K, y 8K, z cannot use x's 4 KiB hole -> 12K: peak 20 KiB. Greedy by size:
  // z 0, p 8K (it overlaps z), x 0 (dead before z is written), y 12K: peak 16 KiB.
  auto module = tpusim::hlo::ParseModule(R"(HloModule frag
ENTRY e {
  p = f32[1024] parameter(0)
  x = f32[1024] negate(p)
  y = f32[1024] reverse(x), dimensions={0}
  z = f32[2048] concatenate(p, p), dimensions={0}
  ROOT t = (f32[1024], f32[2048]) tuple(y, z)
}
)", "frag");
  AssignLayouts(*module);
  const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20);
  CHECK(buffers.peak_bytes == 16384);
  CHECK(AddressOf(buffers, *module, "z") == 0);
  CHECK(AddressOf(buffers, *module, "p") == 8192);
  CHECK(AddressOf(buffers, *module, "x") == 0);
  CHECK(AddressOf(buffers, *module, "y") == 12288);
  CHECK(buffers.LiveTopAt(1) == 12288);  // p and x
  CHECK(buffers.LiveTopAt(3) == 16384);  // z, p, y
  // Free while x is written (position 1): above p (12 KiB up) and the hole [4K, 8K) between x
  // and p, which z takes only later. The range above wins where it is as large; the hole where it
  // is larger.
  using Range = std::pair<uint64_t, uint64_t>;
  CHECK(buffers.LargestFreeAt(1, 12288, 1 << 20) == Range{12288, (1 << 20) - 12288});
  CHECK(buffers.LargestFreeAt(1, 12288, 16384) == Range{12288, 4096});
  CHECK(buffers.LargestFreeAt(1, 12288, 12288) == Range{4096, 4096});
  // Where callers' buffers lie above this assignment's own space (`top` above its peak), its
  // holes up to its peak count: at position 0 only p is live, [0, 8K) and [12K, 16K) are free.
  CHECK(buffers.LargestFreeAt(0, 20480, 20480) == Range{0, 8192});
  CHECK(buffers.LargestFreeAt(1, 20480, 20480) == Range{4096, 4096});
}

TEST_CASE("placement tries randomized orders only where both greedy orders exceed the budget", "[compiler][buffers]") {
  // Sizes in 4 KiB pages and lives (first, last): a 3 (6,6), b 3 (6,6), c 4 (3,7), d 5 (2,4),
  // e 2 (4,6). At most 12 pages are live at once (at 6: a, b, c, e). First fit (d 0, c 5, e 9,
  // a 0, b 11) and greedy by size (d 0, c 5, a 0, b 9, e 12) both need 14: the holes d leaves
  // below c are too small for e's life. 12 is reachable (a 0, b 3, d 0, c 6, e 10: c sits one
  // page above d so that a and b fit under it), and the randomized orders find it.
  const auto make = [] {
    std::vector<std::unique_ptr<DeviceBuffer>> made;
    for (const auto& [pages, first, last] : std::vector<std::tuple<uint64_t, std::size_t, std::size_t>>{
             {3, 6, 6}, {3, 6, 6}, {4, 3, 7}, {5, 2, 4}, {2, 4, 6}}) {
      auto buffer = std::make_unique<DeviceBuffer>();
      buffer->size_bytes = pages * 4096;
      buffer->first = first;
      buffer->last = last;
      made.push_back(std::move(buffer));
    }
    return made;
  };
  const auto pointers = [](const std::vector<std::unique_ptr<DeviceBuffer>>& made) {
    std::vector<DeviceBuffer*> placed;
    for (const auto& buffer : made) placed.push_back(buffer.get());
    return placed;
  };
  const auto no_overlap = [](const std::vector<std::unique_ptr<DeviceBuffer>>& made) {
    for (const auto& x : made) {
      for (const auto& y : made) {
        if (x == y || x->last < y->first || y->last < x->first) continue;
        if (x->address < y->address + y->size_bytes && y->address < x->address + x->size_bytes) return false;
      }
    }
    return true;
  };
  const uint64_t base = 1 << 20;
  auto greedy = make();
  CHECK(PlaceBuffers(pointers(greedy), base, std::numeric_limits<uint64_t>::max()) == base + 14 * 4096);
  CHECK(no_overlap(greedy));
  CHECK(greedy[3]->address == base);  // d, the largest, first at the base
  auto searched = make();
  CHECK(PlaceBuffers(pointers(searched), base, base + 12 * 4096) == base + 12 * 4096);
  CHECK(no_overlap(searched));
  // Seeded: the same buffers get the same addresses again.
  auto again = make();
  PlaceBuffers(pointers(again), base, base + 12 * 4096);
  for (std::size_t i = 0; i < again.size(); ++i) CHECK(again[i]->address == searched[i]->address);
  // Where no order fits the budget (11 pages, under the live bytes), the lowest peak found is kept.
  auto over = make();
  CHECK(PlaceBuffers(pointers(over), base, base + 11 * 4096) == base + 12 * 4096);
}

TEST_CASE("a slice of the most major dim above the tiles is a range of its operand's bytes", "[compiler][buffers]") {
  // x = bf16[6,16,256]: its tiles T(8,128)(2,1) cover [16,256], 8 KiB a slab of dim 0, 48 KiB in
  // all. s = x[2:5] is slabs 2..4 (offset 16 KiB); the other slices are not one range: a slice of a
  // minor dim, a stride, a partial slice of a tiled dim (y's 128 rows are tiled).
  auto module = tpusim::hlo::ParseModule(R"(HloModule s
ENTRY e {
  x = bf16[6,16,256] parameter(0)
  y = bf16[128,256] parameter(1)
  s = bf16[3,16,256] slice(x), slice={[2:5], [0:16], [0:256]}
  m = bf16[6,16,128] slice(x), slice={[0:6], [0:16], [0:128]}
  t = bf16[3,16,256] slice(x), slice={[0:6:2], [0:16], [0:256]}
  u = bf16[64,256] slice(y), slice={[64:128], [0:256]}
  ROOT r = (bf16[3,16,256], bf16[6,16,128], bf16[3,16,256], bf16[64,256]) tuple(s, m, t, u)
}
)", "s");
  AssignLayouts(*module);
  const auto* entry = module->entry();
  using tpusim::compiler::AliasingSliceOffset;
  CHECK(AliasingSliceOffset(*entry->FindInstruction("s")) == std::optional<uint64_t>(16384));
  CHECK_FALSE(AliasingSliceOffset(*entry->FindInstruction("m")));
  CHECK_FALSE(AliasingSliceOffset(*entry->FindInstruction("t")));
  CHECK_FALSE(AliasingSliceOffset(*entry->FindInstruction("u")));
  const BufferAssignment buffers = AssignBuffers(Schedule(*entry), 1 << 20);
  CHECK(AddressOf(buffers, *module, "s") == AddressOf(buffers, *module, "x") + 16384);
  CHECK(buffers.leaves.at(entry->FindInstruction("s")).at(0)->size_bytes == 3 * 8192);
  // The copies are buffers of their own, apart from x's 48 KiB.
  const uint64_t x = AddressOf(buffers, *module, "x");
  for (const char* copy : {"m", "t", "u"}) {
    INFO(copy);
    const uint64_t at = AddressOf(buffers, *module, copy);
    CHECK((at >= x + 49152 || at + buffers.leaves.at(entry->FindInstruction(copy)).at(0)->size_bytes <= x));
  }
}

TEST_CASE("the schedule puts a broadcast just before its first reader", "[compiler][buffers]") {
  auto module = tpusim::hlo::ParseModule(R"(HloModule late
ENTRY e {
  p = f32[1024] parameter(0)
  c = f32[] constant(2)
  b = f32[1024] broadcast(c), dimensions={}
  x = f32[1024] negate(p)
  y = f32[1024] negate(x)
  ROOT r = f32[1024] multiply(y, b)
}
)", "late");
  std::vector<std::string> names;
  for (const auto* instruction : Schedule(*module->entry())) names.push_back(instruction->name());
  CHECK(names == std::vector<std::string>{"p", "c", "x", "y", "b", "r"});
}

namespace {

constexpr char kLoop[] = R"(HloModule loop
cond {
  s = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[1024] get-tuple-element(s), index=1
  w = f32[1024] negate(v)
  ROOT t = (s32[], f32[1024]) tuple(j, w)
}
ENTRY e {
  p = f32[1024] parameter(0)
  zero = s32[] constant(0)
  a = f32[1024] negate(p)
  init = (s32[], f32[1024]) tuple(zero, a)
  w = (s32[], f32[1024]) while(init), condition=cond, body=body
  TAIL
}
)";

// kLoop with `tail` (what reads the loop's result) in place of TAIL.
BufferAssignment AssignLoop(const std::string& tail, std::unique_ptr<tpusim::hlo::Module>& module) {
  std::string text = kLoop;
  text.replace(text.find("TAIL"), 4, tail);
  module = tpusim::hlo::ParseModule(text, "loop");
  AssignLayouts(*module);
  return AssignBuffers(Schedule(*module->entry()), 1 << 20);
}

}  // namespace

TEST_CASE("a while loop's state takes over its init's buffers when nothing reads them later", "[compiler][buffers]") {
  std::unique_ptr<tpusim::hlo::Module> module;
  const BufferAssignment buffers = AssignLoop("ROOT r = f32[1024] get-tuple-element(w), index=1", module);
  const auto& state = buffers.leaves.at(module->entry()->FindInstruction("w"));
  // a is read last by the while: the state's array is a's buffer. The counter's init is a
  // constant, which lives for the whole program: the state gets a buffer of its own.
  CHECK(state.at(1)->address == AddressOf(buffers, *module, "a"));
  CHECK(state.at(0)->address != AddressOf(buffers, *module, "zero"));
}

TEST_CASE("a while loop's first state leaf of an init buffer named twice takes it over", "[compiler][buffers]") {
  // init = (zero, a, a): leaf 1 takes over a's buffer; leaf 2 gets its own (copied from a as the
  // loop starts), and a is not held beside both.
  std::string text = kLoop;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"(s32[], f32[1024])", "(s32[], f32[1024], f32[1024])"},
           {"tuple(zero, a)", "tuple(zero, a, a)"},
           {"tuple(j, w)", "tuple(j, w, v)"}}) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  text.replace(text.find("TAIL"), 4, "ROOT r = f32[1024] get-tuple-element(w), index=2");
  auto module = tpusim::hlo::ParseModule(text, "loop");
  AssignLayouts(*module);
  const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20);
  const auto& state = buffers.leaves.at(module->entry()->FindInstruction("w"));
  CHECK(state.at(1)->address == AddressOf(buffers, *module, "a"));
  CHECK(state.at(2)->address != AddressOf(buffers, *module, "a"));
}

TEST_CASE("a while loop's state does not take over an init buffer read after the loop", "[compiler][buffers]") {
  std::unique_ptr<tpusim::hlo::Module> module;
  const BufferAssignment buffers =
      AssignLoop("g = f32[1024] get-tuple-element(w), index=1\n  ROOT r = (f32[1024], f32[1024]) tuple(g, a)", module);
  const auto& state = buffers.leaves.at(module->entry()->FindInstruction("w"));
  CHECK(state.at(1)->address != AddressOf(buffers, *module, "a"));
}

TEST_CASE("buffer assignment: a dynamic-update-slice writes into its operand when nothing reads it afterwards",
          "[compiler][buffers]") {
  // Every value here is 4 KiB (scalars take a whole alignment unit) except z and r, f32[4,8,128]
  // in T(8,128) tiles: 16 KiB. x, i and the constants live for the whole program; z is last read
  // by the dynamic-update-slice, so r is z's buffer: 4 x 4 KiB + 16 KiB = 32 KiB at the peak
  // (48 KiB with a second 16 KiB array for r).
  const char* text = R"(HloModule dus_in_place
ENTRY e {
  x = f32[1,8,128] parameter(0)
  i = s32[] parameter(1)
  zf = f32[] constant(0)
  zero = s32[] constant(0)
  z = f32[4,8,128] broadcast(zf), dimensions={}
  ROOT r = f32[4,8,128] dynamic-update-slice(z, x, i, zero, zero)
}
)";
  auto module = tpusim::hlo::ParseModule(text, "dus");
  AssignLayouts(*module);
  const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20);
  CHECK(AddressOf(buffers, *module, "r") == AddressOf(buffers, *module, "z"));
  CHECK(buffers.peak_bytes == 32768);

  // z also an output: it is read after the update (at the end), so r gets its own buffer.
  std::string read_later = text;
  read_later.replace(read_later.find("ROOT r"), 6, "r");
  read_later.replace(read_later.rfind("}"), 1,
                     "  ROOT t = (f32[4,8,128], f32[4,8,128]) tuple(r, z)\n}");
  auto module2 = tpusim::hlo::ParseModule(read_later, "dus_read_later");
  AssignLayouts(*module2);
  const BufferAssignment buffers2 = AssignBuffers(Schedule(*module2->entry()), 1 << 20);
  CHECK(AddressOf(buffers2, *module2, "r") != AddressOf(buffers2, *module2, "z"));
  CHECK(buffers2.peak_bytes == 49152);
}

TEST_CASE("a transpose whose layouts keep its operand's bytes as they lie is a bitcast", "[compiler][buffers]") {
  // Gemma 3's key/value projection transposed: [2,1,256,1,11] to [2,1,11,1,256], the size-1 dims
  // laid out major by layout assignment: both are [2][256][11] in memory, tiled over [256, 11].
  auto module = tpusim::hlo::ParseModule(R"(HloModule t
ENTRY e {
  kv = bf16[2,1,256,1,11]{4,3,2,1,0} parameter(0)
  t = bf16[2,1,11,1,256]{2,1,4,3,0} transpose(kv), dimensions={0,3,4,1,2}
  m = f32[64,128] parameter(1)
  ROOT r = f32[128,64] transpose(m), dimensions={1,0}
})", "t");
  AssignLayouts(*module);
  const tpusim::hlo::Computation& entry = *module->entry();
  CHECK(tpusim::compiler::IsAliasingTranspose(*entry.FindInstruction("t")));
  CHECK(tpusim::compiler::IsAliasingInstruction(*entry.FindInstruction("t")));
  // A matrix transposed between row-major layouts moves every element.
  CHECK_FALSE(tpusim::compiler::IsAliasingTranspose(*entry.FindInstruction("r")));
  const BufferAssignment buffers = AssignBuffers(Schedule(entry), uint64_t{1} << 30);
  CHECK(AddressOf(buffers, *module, "t") == AddressOf(buffers, *module, "kv"));
}
