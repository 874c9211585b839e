// The Program message: serializes and parses back equal, refuses (through the disassembler and
// ValidateProgram) what the assembler could not have produced, and checks targets against machines.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/error.h"
#include "isa/program_check.h"

using namespace tpusim::isa;
using google::protobuf::util::MessageDifferencer;

namespace {

const std::string kAsmDir = std::string(TPUSIM_SOURCE_DIR) + "/tests/asm";
const char* const kExamples[] = {"copy_double_buffered", "matmul_128", "softmax_rows", "retile_transpose"};

Program Example(const std::string& name) { return AssembleFile(kAsmDir + "/" + name + ".tpuasm"); }

// The error Disassemble throws for `program`, or "" if it is valid.
std::string Rejection(const Program& program) {
  try {
    Disassemble(program);
  } catch (const tpusim::Error& e) {
    return e.what();
  }
  return "";
}

Program Small() {
  return Assemble(
      ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=1, "
      "semaphores=2, cmem=false\n"
      ".buffer x, vmem[0x0], size=0x1000, shape=f32[8,128]{1,0:T(8,128)}, role=parameter(0)\n"
      "top:\n"
      "  vld v1, vmem[0x0]\n"
      "  dma vmem[0x0] -> hbm[0x0], src=f32[8,128]{1,0:T(8,128)}, dst=f32[8,128]{1,0:T(8,128)}, size=[8, 128], "
      "sem=sem[0], engine=0\n"
      "  br top\n");
}

}  // namespace

TEST_CASE("programs serialize and parse back equal", "[isa]") {
  for (const char* name : kExamples) {
    INFO(name);
    const Program program = Example(name);
    std::string bytes;
    REQUIRE(program.SerializeToString(&bytes));
    Program parsed;
    REQUIRE(parsed.ParseFromString(bytes));
    CHECK(MessageDifferencer::Equals(program, parsed));
    std::string text;
    REQUIRE(google::protobuf::TextFormat::PrintToString(program, &text));
    Program from_text;
    REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &from_text));
    CHECK(MessageDifferencer::Equals(program, from_text));
    CHECK(Disassemble(parsed) == Disassemble(program));
  }
}

TEST_CASE("the disassembler refuses programs the assembler could not produce", "[isa]") {
  REQUIRE(Rejection(Small()).empty());
  Program p = Small();
  p.mutable_instructions(0)->set_opcode(static_cast<Opcode>(999));
  CHECK(Rejection(p) == "invalid program: instruction 0: opcode 999 does not exist");

  p = Small();
  p.mutable_instructions(0)->add_operands();
  CHECK(Rejection(p) == "invalid program: instruction 0 (vld): vld has 4 operands, not 5");

  p = Small();
  p.mutable_instructions(0)->mutable_operands(0)->set_sreg(1);
  CHECK(Rejection(p) == "invalid program: instruction 0 (vld), operand vd: operand vd of vld must be a vector register, "
                        "found 's1'");

  p = Small();
  p.mutable_instructions(0)->mutable_operands(1)->Clear();
  CHECK(Rejection(p) == "invalid program: instruction 0 (vld), operand addr: operand addr of vld is missing");

  p = Small();
  p.mutable_instructions(1)->mutable_operands(2)->set_shape("f32[8,128]{1,0:T(8, 128)}");
  CHECK(Rejection(p) == "invalid program: instruction 1 (dma), operand src: shape 'f32[8,128]{1,0:T(8, 128)}' is not "
                        "written canonically: 'f32[8,128]{1,0:T(8,128)}'");

  p = Small();
  p.mutable_labels(0)->set_instruction(4);
  CHECK(Rejection(p) == "invalid program: label 0 ('top'): label 'top' names instruction 4 of 3");

  p = Small();
  Label* second = p.add_labels();
  second->set_name("back");
  CHECK(Rejection(p).empty());  // two labels at instruction 0, in text order
  p.mutable_labels(0)->set_instruction(2);
  CHECK(Rejection(p) == "invalid program: label 1 ('back'): labels are not in instruction order");

  p = Small();
  p.mutable_labels(0)->set_name("s3");
  CHECK(Rejection(p) == "invalid program: label 0 ('s3'): label name 's3' is not a valid name ([A-Za-z_][A-Za-z0-9_.]*, "
                        "not a register name)");

  p = Small();
  p.mutable_buffers(0)->set_role(BUFFER_ROLE_TEMPORARY);
  p.mutable_buffers(0)->set_index(3);
  CHECK(Rejection(p) == "invalid program: buffer 0 ('x'), field role: a temporary buffer has index 0");

  p = Small();
  p.mutable_buffers(0)->set_space(static_cast<MemorySpace>(4));
  CHECK(Rejection(p) == "invalid program: buffer 0 ('x'), field address: memory space 4 does not exist");

  p = Small();
  p.mutable_target()->set_lanes(0);
  CHECK(Rejection(p) == "invalid program: target, field lanes: target lanes is 0; it must be in [1, 4096]");

  p = Small();
  p.set_name("has space");
  CHECK(Rejection(p) == "invalid program: program: program name 'has space' is not a valid name "
                        "([A-Za-z_][A-Za-z0-9_.]*, not a register name)");

  p = Small();
  p.add_data()->set_name("empty");
  CHECK(Rejection(p) == "invalid program: data segment 0 ('empty'), field bytes: a data segment holds at least one byte");
}

TEST_CASE("DisassembleInstruction prints one instruction", "[isa]") {
  const Program p = Small();
  CHECK(DisassembleInstruction(p.instructions(0)) == "vld v1, vmem[0x0]");
  CHECK(DisassembleInstruction(p.instructions(2)) == "br top");
  Instruction bad;
  bad.set_opcode(OPCODE_HALT);
  bad.add_operands();
  CHECK_THROWS_WITH(DisassembleInstruction(bad), "halt has 0 operands, not 1");
}

TEST_CASE("mutated serialized programs are rejected or round trip", "[isa]") {
  std::mt19937 rng(99);
  int parsed = 0, valid = 0;
  const google::protobuf::LogSilencer silence;  // protobuf logs the invalid UTF-8 it refuses
  for (const char* name : kExamples) {
    std::string original;
    REQUIRE(Example(name).SerializeToString(&original));
    for (int round = 0; round < 400; ++round) {
      std::string bytes = original;
      for (int e = 0; e < 1 + static_cast<int>(rng() % 3); ++e) bytes[rng() % bytes.size()] = static_cast<char>(rng());
      Program program;
      if (!program.ParseFromString(bytes)) continue;
      ++parsed;
      if (FindProgramDefect(program)) {
        CHECK_THROWS_AS(Disassemble(program), tpusim::Error);
        continue;
      }
      ++valid;
      const Program again = Assemble(Disassemble(program));
      // Unknown fields a mutation may create do not survive the text form; compare the rest.
      program.DiscardUnknownFields();
      CHECK(MessageDifferencer::Equals(program, again));
    }
  }
  CHECK(parsed > 0);
  CHECK(valid > 0);
}

TEST_CASE("targets are checked against the machine", "[isa]") {
  const Target program = Example("retile_transpose").target();
  Target machine = program;
  CHECK_NOTHROW(CheckTargetCompatible(program, machine));
  machine.set_vector_registers(64);
  machine.set_semaphores(1024);
  CHECK_NOTHROW(CheckTargetCompatible(program, machine));  // more than the program needs is fine

  machine.set_lanes(256);
  machine.set_mxu_count(2);
  machine.set_has_cmem(false);
  machine.set_mxu_columns(256);
  CHECK_THROWS_WITH(CheckTargetCompatible(program, machine),
                    "the program was built for lanes=128; the machine has 256\n"
                    "the program uses mxus=4; the machine has only 2\n"
                    "the program was built for mxu_cols=128; the machine has 256\n"
                    "the program uses CMEM; the machine has none");
}
