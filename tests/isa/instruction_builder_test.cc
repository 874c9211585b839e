// Typed instruction building (isa/instruction_builder.h): every instruction of the table made from
// typed operands is the instruction the assembler reads from its text, a program of them
// disassembles and reassembles to itself, and operands that do not fit the table's row are refused
// with the call site and what is wrong.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <google/protobuf/util/message_differencer.h>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/error.h"
#include "isa/instruction_builder.h"
#include "isa/instruction_set.h"
#include "tests/isa/sample_target.h"
#include "isa/shape.h"

using namespace tpusim::isa;
using namespace tpusim::isa::ops;
using google::protobuf::util::MessageDifferencer;

namespace {

using tpusim::isa_test::SampleTarget;

// A typed value for operand `index` of `info`: registers and constants differ per operand, so a
// swapped operand would show.
Arg SampleArg(const InstructionInfo& info, std::size_t index) {
  const OperandSpec& spec = info.operands[index];
  const auto n = static_cast<uint32_t>(index + 1);
  switch (spec.kind) {
    case OperandKind::kSReg: return S(n);
    case OperandKind::kSRegOrImm: return index % 2 == 0 ? Arg(S(30)) : Arg(spec.min < 0 ? -5 : 7);
    case OperandKind::kImm: return std::max<int64_t>(spec.min, std::min<int64_t>(spec.max, -2));
    case OperandKind::kBits: return Bits(0x0F);
    case OperandKind::kVReg: return V(n + 20);
    case OperandKind::kMReg: return M(n);
    case OperandKind::kLabel: return ops::Label("start");
    case OperandKind::kAddress: {
      MemorySpace space = MEMORY_SPACE_VMEM;
      if ((spec.spaces & SpaceBit(space)) == 0 || (info.arrow && index == 0)) {
        space = (spec.spaces & SpaceBit(MEMORY_SPACE_SMEM)) && !info.arrow ? MEMORY_SPACE_SMEM : MEMORY_SPACE_HBM;
      }
      return ops::Address(space, RegPlus(S(4), 0x100));
    }
    case OperandKind::kSemaphore: return Sem(S(5), -1);
    case OperandKind::kMxu: return Mxu(1);
    case OperandKind::kDmaEngine: return 1;
    case OperandKind::kShape:
      return ShapeArg(ParseShape(spec.name == "src" ? "bf16[16,256]{1,0:T(8,128)(2,1)}" : "bf16[16,256]{0,1:T(8,128)(2,1)}"));
    case OperandKind::kIndex: return Index({RegPlus(S(6), 8), 128});
    case OperandKind::kSizes: return Sizes({8, 128});
  }
  FAIL("no sample for operand " << spec.name);
  return 0;
}

// `info`'s instruction with every operand given, made typed: positional ones in order, keywords
// in reverse order (their order is free).
Instruction SampleInstruction(const InstructionInfo& info) {
  std::vector<Arg> positional;
  std::vector<KeywordArg> keywords;
  for (std::size_t i = 0; i < info.operands.size(); ++i) {
    if (info.operands[i].keyword) {
      keywords.insert(keywords.begin(), KeywordArg{info.operands[i].name, SampleArg(info, i)});
    } else {
      positional.push_back(SampleArg(info, i));
    }
  }
  return MakeInstruction(info.opcode, positional, keywords);
}

std::string ErrorOf(const std::function<void()>& make) {
  try {
    make();
  } catch (const tpusim::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("every instruction made from typed operands is the one its text assembles to", "[isa][builder]") {
  Program program;
  *program.mutable_target() = SampleTarget();
  tpusim::isa::Label* start = program.add_labels();
  start->set_name("start");
  for (const InstructionInfo& info : InstructionTable()) {
    INFO(info.mnemonic);
    const Instruction made = SampleInstruction(info);
    const std::string text = DisassembleInstruction(made);
    INFO(text);
    CHECK(MessageDifferencer::Equals(AssembleInstruction(text), made));
    *program.add_instructions() = made;
  }
  REQUIRE(program.instructions_size() == static_cast<int>(InstructionTable().size()));
  // The whole program disassembles and reassembles to itself.
  const Program again = Assemble(Disassemble(program), "(typed)");
  CHECK(MessageDifferencer::Equals(again, program));
}

TEST_CASE("typed operands: the exact operands of a few instructions", "[isa][builder]") {
  const Instruction vld = MakeInstruction(OPCODE_VLD, {V(3), Vmem(S(5), 0x80)}, {{"sublanes", Bits(0xf)}});
  CHECK(DisassembleInstruction(vld) == "vld v3, vmem[s5 + 0x80], sublanes=0xf");
  CHECK(DisassembleInstruction(MakeInstruction(OPCODE_SEM_WAIT, {Sem(2), 3})) == "sem.wait sem[2], 3");
  CHECK(DisassembleInstruction(MakeInstruction(OPCODE_LOOP, {S(7), ops::Label("top")})) == "loop s7, top");
  CHECK(DisassembleInstruction(MakeInstruction(OPCODE_ADD, {S(1), S(1), uint64_t{0x1000}})) == "add s1, s1, 4096");
  const Shape words = ParseShape("u32[64]{0}");
  CHECK(DisassembleInstruction(MakeInstruction(
            OPCODE_DMA, {Hbm(0x2000), Vmem(RegPlus(S(3), 16))},
            {{"src", ShapeArg(words)}, {"dst", ShapeArg(words)}, {"size", Sizes({64})}, {"sem", Sem(0)}, {"engine", 1}})) ==
        "dma hbm[0x2000] -> vmem[s3 + 0x10], src=u32[64]{0}, dst=u32[64]{0}, size=[64], sem=sem[0], engine=1");
  // A bit pattern may be given as a non-negative number, as the assembly writes it.
  CHECK(MessageDifferencer::Equals(MakeInstruction(OPCODE_VLD, {V(3), Vmem(S(5), 0x80)}, {{"sublanes", 0xf}}), vld));
}

TEST_CASE("typed operands that do not fit the table's row are refused with the call site", "[isa][builder]") {
  const std::string file = __FILE__;
  const auto refused = [&](const std::function<void()>& make, const std::string& what) {
    const std::string error = ErrorOf(make);
    INFO(error);
    CHECK(error.starts_with("internal: " + file + ":"));
    CHECK(error.ends_with(what));
  };
  refused([] { MakeInstruction(OPCODE_VLD, {S(3), Vmem(S(5), 0)}); }, ": vld: operand vd must be a vector register, not a scalar register");
  refused([] { MakeInstruction(OPCODE_ADD, {S(1), S(2)}); }, ": add: operand sb is missing");
  refused([] { MakeInstruction(OPCODE_HALT, {S(1)}); }, ": halt: too many operands");
  refused([] { MakeInstruction(OPCODE_VLD, {V(1), Vmem(0)}, {{"lanes", 3}}); }, ": vld: no keyword operand 'lanes'");
  refused([] { MakeInstruction(OPCODE_VLD, {V(1), Vmem(0)}, {{"sublanes", 3}, {"sublanes", 3}}); },
          ": vld: 'sublanes' is given twice");
  refused([] { MakeInstruction(OPCODE_VLD, {V(1), Hbm(0)}); }, ": vld: operand addr may not address hbm");
  refused([] { MakeInstruction(OPCODE_ADD, {S(1), S(1), uint64_t{1} << 63}); },
          ": add: operand sb does not fit in a signed 64-bit immediate");
  refused([] { MakeInstruction(OPCODE_VBCAST, {V(1), int64_t{1} << 40}); },
          ": vbcast: operand sa = 1099511627776 is outside [-2147483648, 4294967295]");
  refused([] { MakeInstruction(static_cast<Opcode>(9999), {}); }, ": instruction: opcode 9999 is not in the instruction table");
}
