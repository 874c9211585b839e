// The program builder (compiler/lower/program_builder.h): kernels build the isa::Program directly
// from typed instructions; its text is only an output. A compiled module's program disassembles
// (with its comments) and reassembles to the same program; labels and buffer names are made
// unique; comments land before the instruction that follows them; an invalid program is a
// compiler bug that names the instruction.
#include <catch2/catch.hpp>

#include <string>

#include <google/protobuf/util/message_differencer.h>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "compiler/lower/program_builder.h"
#include "isa/assembler.h"
#include "isa/error.h"
#include "tests/compiler/compile_test_support.h"

using google::protobuf::util::MessageDifferencer;
using tpusim::compiler::ProgramBuilder;
using namespace tpusim::isa::ops;

TEST_CASE("a compiled module's program reassembles from its text to the same program", "[compiler][builder]") {
  // A dot, a reduce with an element-wise producer, and a while loop: kernels of four emitters.
  const std::string text = R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  p = (s32[], f32[64,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[64,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[64,128] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[64,128] multiply(x, x)
  ROOT t = (s32[], f32[64,128]) tuple(j, y)
}
ENTRY e {
  a = f32[64,256] parameter(0)
  w = f32[256,128] parameter(1)
  d = f32[64,128] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = s32[] constant(0)
  init = (s32[], f32[64,128]) tuple(zero, d)
  loop = (s32[], f32[64,128]) while(init), condition=cond, body=body
  z = f32[64,128] get-tuple-element(loop), index=1
  e = f32[64,128] exponential(z)
  c = f32[] constant(0)
  ROOT r = f32[64] reduce(e, c), dimensions={1}, to_apply=add
}
)";
  auto module = tpusim::hlo::ParseModule(text, "test.hlo");
  tpusim::compiler::CompileOptions options = tpusim::compiler_test::SmallTargetOptions();
  options.target.set_mxu_accumulator_rows(2048);  // the dot kernel's result buffers
  const tpusim::compiler::CompiledModule compiled = tpusim::compiler::Compile(*module, options);
  const std::string program_text = tpusim::compiler::ProgramText(compiled);
  REQUIRE(compiled.program.instructions_size() > 100);
  CHECK_FALSE(compiled.comments.empty());
  CHECK_THAT(program_text, Catch::Contains("  // parameters: host -> HBM over PCIe\n"));
  const tpusim::isa::Program again = tpusim::isa::Assemble(program_text, "(compiled)");
  CHECK(MessageDifferencer::Equals(again, compiled.program));
}

TEST_CASE("the program builder: unique names, comments before their instruction, typed instructions",
          "[compiler][builder]") {
  ProgramBuilder out("my kernel", tpusim::compiler_test::SmallTargetOptions().target);
  const std::string top = out.NewLabel("loop top");
  CHECK(top == "loop_top");
  CHECK(out.NewLabel("loop top") == "loop_top.1");
  CHECK(out.NewLabel("s3") == "_s3");  // spelled like a register
  const tpusim::isa::Shape shape = tpusim::isa::ParseShape("f32[8,128]{1,0:T(8,128)}");
  CHECK(out.AddBuffer("x", tpusim::isa::MEMORY_SPACE_HBM, 0, 4096, shape, tpusim::isa::BUFFER_ROLE_PARAMETER, 0) == "x");
  CHECK(out.AddBuffer("x", tpusim::isa::MEMORY_SPACE_HBM, 4096, 4096, shape, tpusim::isa::BUFFER_ROLE_OUTPUT, 0) == "x.1");
  out.Emit(tpusim::isa::OPCODE_MOV, {S(1), 4});
  out.Comment("the loop");
  out.Bind(top);
  out.Emit(tpusim::isa::OPCODE_LOOP, {S(1), Label(top)});
  out.Emit(tpusim::isa::OPCODE_HALT);
  CHECK(out.instruction_count() == 3);
  const std::vector<tpusim::isa::Comment> comments = out.TakeComments();
  const tpusim::isa::Program program = out.Finish();
  CHECK(program.name() == "my_kernel");
  CHECK(tpusim::isa::Disassemble(program, comments).ends_with("\n  mov s1, 4\n  // the loop\nloop_top:\n  loop s1, loop_top\n  halt\n"));
}

TEST_CASE("the program builder refuses an invalid program as a compiler bug naming the instruction", "[compiler][builder]") {
  ProgramBuilder out("p", tpusim::compiler_test::SmallTargetOptions().target);
  out.Emit(tpusim::isa::OPCODE_MOV, {S(1), 4});
  out.Emit(tpusim::isa::OPCODE_BR, {Label("nowhere")});
  std::string error;
  try {
    out.Finish();
  } catch (const tpusim::Error& e) {
    error = e.what();
  }
  CHECK(error == "internal: the compiled program p is not valid: instruction 1 (br), operand target 'br nowhere': "
                 "label 'nowhere' is not defined");
}
