// Control flow lowered on the scalar core (compiler/lower/control_flow.h): buffer assignment of
// called computations (parameters naming the caller's buffers, own values above a base), the
// loop's shape in the program, kernel names, staging of a permuted loop state, the scalar-core
// kernel of s64 scalars, and refusals. The values are checked end to end in
// tests/sim/control_flow_run_test.cc.
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/error.h"
#include "tests/compiler/compile_test_support.h"

using namespace tpusim;

namespace {

compiler::CompiledModule CompileText(const std::string& text) {
  auto module = hlo::ParseModule(text, "test.hlo");
  return compiler::Compile(*module, compiler_test::SmallTargetOptions());
}

std::string CompileError(const std::string& text) {
  return compiler_test::CompileErrorOf(text, compiler_test::SmallTargetOptions());
}

bool HasKernel(const compiler::CompiledModule& compiled, const std::string& name) {
  for (const auto& kernel : compiled.kernels) {
    if (kernel.name == name) return true;
  }
  return false;
}

// The assembly lines between a kernel's two labels.
std::string KernelText(const compiler::CompiledModule& compiled, const std::string& name) {
  for (const auto& kernel : compiled.kernels) {
    if (kernel.name != name) continue;
    const std::string text = compiler::ProgramText(compiled);
    const std::size_t begin = text.find(kernel.begin_label + ":");
    const std::size_t end = text.find(kernel.end_label + ":");
    REQUIRE(begin != std::string::npos);
    REQUIRE(end != std::string::npos);
    return text.substr(begin, end - begin);
  }
  FAIL("no kernel " << name);
  return "";
}

int Count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<int>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// A loop of (s32 counter, f32[8,128] a, f32[8,128] b); BODY_ROOT is the body's root tuple.
std::string Loop(const std::string& body_root) {
  return R"(HloModule loop
cond {
  s = (s32[], f32[8,128], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,128], f32[8,128]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f32[8,128] get-tuple-element(s), index=1
  b = f32[8,128] get-tuple-element(s), index=2
  a1 = f32[8,128] add(a, b)
  ROOT t = (s32[], f32[8,128], f32[8,128]) )" +
         body_root + R"(
}
ENTRY e {
  x = f32[8,128] parameter(0)
  y = f32[8,128] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8,128], f32[8,128]) tuple(zero, x, y)
  w = (s32[], f32[8,128], f32[8,128]) while(init), condition=cond, body=body
  ROOT r = f32[8,128] get-tuple-element(w), index=1
}
)";
}

}  // namespace

TEST_CASE("nested buffer assignment: parameters name the caller's buffers, values lie above the base", "[compiler][control_flow]") {
  auto module = hlo::ParseModule(R"(HloModule n
f {
  p = f32[1024] parameter(0)
  a = f32[1024] negate(p)
  ROOT b = f32[1024] reverse(a), dimensions={0}
}
ENTRY e {
  x = f32[1024] parameter(0)
  ROOT c = f32[1024] call(x), to_apply=f
}
)", "n");
  compiler::AssignLayouts(*module);
  const hlo::Computation& f = *module->FindComputation("f");
  compiler::DeviceBuffer given{"given", f.parameters()[0]->shape(), 0x2000, 4096, 0, 0};
  compiler::NestedBinding binding;
  binding.base_address = 0x10000;
  binding.bound[f.parameters()[0]] = {&given};
  const compiler::BufferAssignment buffers =
      compiler::AssignBuffers(compiler::Schedule(f), 1 << 20, {}, binding);
  CHECK(buffers.leaves.at(f.parameters()[0]).at(0) == &given);
  // a and b are both live when b is written (b reads a, reversed: not in place): two 4 KiB
  // buffers from the base.
  CHECK(buffers.leaves.at(f.FindInstruction("a")).at(0)->address == 0x10000);
  CHECK(buffers.leaves.at(f.FindInstruction("b")).at(0)->address == 0x11000);
  CHECK(buffers.peak_bytes == 0x12000);
  CHECK(buffers.buffers.size() == 2);  // the given buffer is not the assignment's
}

TEST_CASE("while: init copy, condition, predicate read, body in place, loop back", "[compiler][control_flow]") {
  const compiler::CompiledModule compiled = CompileText(Loop("tuple(i1, a1, b)"));
  for (const char* name : {"w/init", "w/cond/lt", "w/predicate", "w/body/i1", "w/body/a1"}) {
    INFO(name);
    CHECK(HasKernel(compiled, name));
  }
  // i1 = add(i, 1) and a1 = add(a, b) write over i and a, which nothing reads after them, and b
  // is passed through: the body's result is the state itself, and nothing is copied back.
  CHECK_FALSE(HasKernel(compiled, "w/next_state"));
  // init: three leaves copied into the state (x and y are parameters: the state cannot take
  // them over). Its bytes accessed: each read and written.
  CHECK(Count(KernelText(compiled, "w/init"), "\\bdma ") == 3);
  for (const compiler::KernelInfo& kernel : compiled.kernels) {
    if (kernel.name == "w/init") CHECK(kernel.bytes_accessed == 2 * (4 + 4096 + 4096));
  }
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains("beq s0, 0, w.exit"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains("br w.condition"));
  // The pred comes back through SMEM: one DMA, a load of its byte.
  const std::string predicate = KernelText(compiled, "w/predicate");
  CHECK_THAT(predicate, Catch::Contains("-> smem[0x0]"));
  CHECK_THAT(predicate, Catch::Contains("ld.u32 s0, smem[0x0]"));
}

TEST_CASE("while: a body that swaps two state elements stages them through temporaries", "[compiler][control_flow]") {
  const compiler::CompiledModule compiled = CompileText(Loop("tuple(i1, b, a)"));
  // a -> temp, b -> temp (both sources are other state buffers), then a and b copied in; the
  // counter is updated in place.
  CHECK(Count(KernelText(compiled, "w/next_state"), "\\bdma ") == 4);
  // Its bytes accessed count what moves, a and b (f32[8,128], 4096 bytes each) read and written;
  // not the counter, which stays in place.
  for (const compiler::KernelInfo& kernel : compiled.kernels) {
    if (kernel.name == "w/next_state") CHECK(kernel.bytes_accessed == 2 * (4096 + 4096));
  }
}

TEST_CASE("calls are inlined: a computation called at two places becomes two copies named after each call", "[compiler][control_flow]") {
  const compiler::CompiledModule compiled = CompileText(R"(HloModule calls
f {
  p = f32[8,128] parameter(0)
  ROOT n = f32[8,128] negate(p)
}
ENTRY e {
  x = f32[8,128] parameter(0)
  c1 = f32[8,128] call(x), to_apply=f
  ROOT c2 = f32[8,128] call(c1), to_apply=f
}
)");
  // As XLA's CallInliner: the copies "<call>/<instruction>" fuse into one element-wise kernel
  // (rooted at the second copy), and no call result is copied out of a callee's buffers.
  CHECK(HasKernel(compiled, "c2.n"));
  CHECK_FALSE(HasKernel(compiled, "c1.n"));
  CHECK_FALSE(HasKernel(compiled, "c1.result"));
  CHECK(compiled.kernels.size() == 1);
}

TEST_CASE("s64 scalar arithmetic runs on the scalar core", "[compiler][control_flow]") {
  const compiler::CompiledModule compiled = CompileText(R"(HloModule s64
ENTRY e {
  a = s64[] parameter(0)
  b = s64[] parameter(1)
  s = s64[] add(a, b)
  ROOT c = pred[] compare(s, a), direction=GT
}
)");
  const std::string add = KernelText(compiled, "s");
  CHECK(Count(add, "ld\\.s64") == 2);
  CHECK_THAT(add, Catch::Contains("add s3, s1, s2"));
  CHECK_THAT(add, Catch::Contains("st.s64 s3"));
  CHECK(Count(add, "\\bvld\\b") == 0);
  const std::string compare = KernelText(compiled, "c");
  CHECK_THAT(compare, Catch::Contains("bgt s1, s2"));
  CHECK_THAT(compare, Catch::Contains("st.s32 s3"));
}

TEST_CASE("control flow refusals name the instruction", "[compiler][control_flow]") {
  // The body returns its array in another layout than the loop state's: a flat copy would
  // scramble it, so it is refused rather than copied wrong.
  const std::string layouts = CompileError(R"(HloModule l
cond {
  s = f32[8,128]{1,0} parameter(0)
  ROOT f = pred[] constant(false)
}
body {
  s = f32[8,128]{1,0} parameter(0)
  ROOT t = f32[8,128]{0,1} copy(s)
}
ENTRY e {
  x = f32[8,128]{1,0} parameter(0)
  ROOT w = f32[8,128]{1,0} while(x), condition=cond, body=body
}
)");
  CHECK_THAT(layouts, Catch::Contains("test.hlo:"));
  CHECK_THAT(layouts, Catch::Contains("cannot lower while"));
  CHECK_THAT(layouts, Catch::Contains("layouts must agree"));
}
