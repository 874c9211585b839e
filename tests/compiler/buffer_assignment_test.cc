// Buffer assignment (compiler/passes/buffer_assignment.h): lives from the schedule, first-fit
// reuse of dead buffers' space, aliases that write nothing, and the HBM capacity error.
#include <catch2/catch.hpp>

#include "compiler/hlo/parser.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/error.h"

namespace {

using tpusim::compiler::AssignBuffers;
using tpusim::compiler::AssignLayouts;
using tpusim::compiler::BufferAssignment;
using tpusim::compiler::Schedule;

// f32[1024] is one T(1024) tile: 4096 bytes, exactly one alignment unit.
constexpr char kChain[] = R"(HloModule chain
ENTRY e {
  p = f32[1024] parameter(0)
  a = f32[1024] negate(p)
  b = f32[1024] negate(a)
  c = f32[1024] negate(b)
  ROOT d = f32[1024] negate(c)
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
    CHECK_THAT(message, Catch::Contains("at least 12288 bytes of HBM"));
    CHECK_THAT(message, Catch::Contains("more than the chip's 8192"));
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
