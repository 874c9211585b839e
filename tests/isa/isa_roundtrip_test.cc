// Assembly round trips: text -> Program -> canonical text -> the same Program, for the example
// programs in tests/asm/ and for one generated instance of every instruction in the table.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <google/protobuf/util/message_differencer.h>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/error.h"
#include "isa/instruction_set.h"
#include "tests/isa/sample_target.h"

using namespace tpusim::isa;
using google::protobuf::util::MessageDifferencer;

namespace {

const std::string kAsmDir = std::string(TPUSIM_SOURCE_DIR) + "/tests/asm";

// Checks both directions on a program: disassemble -> assemble gives it back, and the canonical
// text is a fixed point.
void CheckRoundTrip(const Program& program) {
  const std::string text = Disassemble(program);
  INFO(text);
  const Program again = Assemble(text, "(disassembly)");
  std::string difference;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&difference);
  CHECK(differencer.Compare(program, again));
  INFO(difference);
  CHECK(Disassemble(again) == text);
}

using tpusim::isa_test::SampleTarget;

// A valid value for operand `index` of `info`; `variant` 1 picks the other spelling (immediate
// instead of register, no base register) and leaves optional operands out.
Operand SampleOperand(const InstructionInfo& info, std::size_t index, int variant) {
  const OperandSpec& spec = info.operands[index];
  Operand operand;
  if (spec.optional && variant == 1) return operand;
  const auto n = static_cast<uint32_t>(index + 1);
  switch (spec.kind) {
    case OperandKind::kSReg: operand.set_sreg(n); break;
    case OperandKind::kSRegOrImm:
      if (variant == 0) {
        operand.set_sreg(30);
      } else {
        operand.set_imm(spec.min < 0 ? -5 : 7);
      }
      break;
    case OperandKind::kImm: operand.set_imm(-2); break;
    case OperandKind::kBits: operand.set_bits(0x0F); break;
    case OperandKind::kVReg: operand.set_vreg(n + 20); break;
    case OperandKind::kMReg: operand.set_mreg(n); break;
    case OperandKind::kLabel: operand.set_label(variant == 0 ? "start" : "end"); break;
    case OperandKind::kAddress: {
      Address* address = operand.mutable_address();
      MemorySpace space = MEMORY_SPACE_VMEM;
      if ((spec.spaces & SpaceBit(space)) == 0 || (info.arrow && index == 0)) {
        space = (spec.spaces & SpaceBit(MEMORY_SPACE_SMEM)) && !info.arrow ? MEMORY_SPACE_SMEM
                : variant == 0                                            ? MEMORY_SPACE_HBM
                                                                          : MEMORY_SPACE_CMEM;
      }
      address->set_space(space);
      if (variant == 0) {
        address->set_reg(4);
        address->set_offset(0x100);
      } else {
        address->set_offset(-16);
      }
      break;
    }
    case OperandKind::kSemaphore:
      if (variant == 0) operand.mutable_semaphore()->set_reg(5);
      operand.mutable_semaphore()->set_offset(variant == 0 ? -1 : 7);
      break;
    case OperandKind::kMxu: operand.set_mxu(1); break;
    case OperandKind::kDmaEngine: operand.set_imm(1); break;
    case OperandKind::kShape:
      operand.set_shape(spec.name == "src" ? "bf16[16,256]{1,0:T(8,128)(2,1)}" : "bf16[16,256]{0,1:T(8,128)(2,1)}");
      break;
    case OperandKind::kIndex: {
      RegOffset* first = operand.mutable_index()->add_items();
      if (variant == 0) first->set_reg(6);
      first->set_offset(8);
      operand.mutable_index()->add_items()->set_offset(128);
      break;
    }
    case OperandKind::kSizes:
      operand.mutable_sizes()->add_items(8);
      operand.mutable_sizes()->add_items(128);
      break;
  }
  return operand;
}

Program SampleProgram(const InstructionInfo& info, int variant) {
  Program program;
  *program.mutable_target() = SampleTarget();
  Label* start = program.add_labels();
  start->set_name("start");
  Instruction* inst = program.add_instructions();
  inst->set_opcode(info.opcode);
  for (std::size_t i = 0; i < info.operands.size(); ++i) *inst->add_operands() = SampleOperand(info, i, variant);
  Label* end = program.add_labels();
  end->set_name("end");
  end->set_instruction(1);
  return program;
}

}  // namespace

TEST_CASE("the example programs round trip through the disassembler", "[isa]") {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kAsmDir)) {
    if (entry.path().extension() == ".tpuasm") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 4);
  for (const std::string& file : files) {
    INFO(file);
    const Program program = AssembleFile(file);
    CHECK(program.instructions_size() > 5);
    CheckRoundTrip(program);
  }
}

TEST_CASE("the examples assemble to the programs they describe", "[isa]") {
  const Program copy = AssembleFile(kAsmDir + "/copy_double_buffered.tpuasm");
  CHECK(copy.name() == "copy_double_buffered");
  CHECK(copy.target().dma_engines() == 2);
  REQUIRE(copy.buffers_size() == 4);
  CHECK(copy.buffers(0).role() == BUFFER_ROLE_PARAMETER);
  CHECK(copy.buffers(1).role() == BUFFER_ROLE_OUTPUT);
  CHECK(copy.buffers(3).address() == 0x4000);
  CHECK(copy.labels_size() == 3);
  // The double-buffered load: region start from a register, semaphore chosen by a register.
  const Instruction& fetch = copy.instructions(copy.labels(1).instruction());
  REQUIRE(fetch.opcode() == OPCODE_DMA);
  const InstructionInfo& dma = *FindInstruction(OPCODE_DMA);
  CHECK(fetch.operands(OperandIndex(dma, "to")).address().reg() == 7);
  CHECK(fetch.operands(OperandIndex(dma, "src_start")).index().items(0).reg() == 8);
  CHECK_FALSE(fetch.operands(OperandIndex(dma, "dst_start")).has_index());
  CHECK(fetch.operands(OperandIndex(dma, "sem")).semaphore().reg() == 5);
  CHECK(fetch.operands(OperandIndex(dma, "src")).shape() == "bf16[256,256]{1,0:T(8,128)(2,1)}");

  const Program matmul = AssembleFile(kAsmDir + "/matmul_128.tpuasm");
  int pushes = 0, weight_pushes = 0, pops = 0;
  for (const Instruction& inst : matmul.instructions()) {
    pushes += inst.opcode() == OPCODE_MXU_PUSH_BF16;
    weight_pushes += inst.opcode() == OPCODE_MXU_WPUSH_BF16;
    pops += inst.opcode() == OPCODE_MXU_POP;
  }
  CHECK(weight_pushes == 8);  // 128 rows of bf16 weights, 16 per vreg
  CHECK(pushes == 1);         // in a loop of 8
  CHECK(pops == 2);
}

TEST_CASE("assembly is read leniently and written canonically", "[isa]") {
  const std::string text =
      "// comment line\n"
      "   .target  lanes=128,sublanes=8 , vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, "
      "dma_engines=1, semaphores=4, cmem=false   // trailing comment\r\n"
      "top: again:   vld v1,vmem[s5+512], sublanes=255 ,stride=0\n"
      "\tadd s1, s2, 0x10\n"
      "  vst v1, vmem[s5 - 0x20], mask=m2\n"
      "  sem.wait sem[ s3 + 0x1 ], s4\n"
      "  bne s1, -1, top\n"
      "end:\n";
  const Program program = Assemble(text, "(test)");
  CHECK(Disassemble(program) ==
        ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=1, "
        "semaphores=4, cmem=false\n"
        "\n"
        "top:\n"
        "again:\n"
        "  vld v1, vmem[s5 + 0x200], stride=0, sublanes=0xff\n"
        "  add s1, s2, 16\n"
        "  vst v1, vmem[s5 - 0x20], mask=m2\n"
        "  sem.wait sem[s3 + 1], s4\n"
        "  bne s1, -1, top\n"
        "end:\n");
  const Instruction& vld = program.instructions(0);
  CHECK(vld.opcode() == OPCODE_VLD);
  CHECK(vld.operands(1).address().space() == MEMORY_SPACE_VMEM);
  CHECK(vld.operands(1).address().offset() == 512);
  CHECK(vld.operands(2).imm() == 0);
  CHECK(vld.operands(3).bits() == 0xFF);
  CHECK(program.labels(2).instruction() == 5);
  CheckRoundTrip(program);
}

TEST_CASE("every instruction in the table round trips", "[isa]") {
  for (const InstructionInfo& info : InstructionTable()) {
    for (int variant : {0, 1}) {
      INFO(info.mnemonic << " variant " << variant);
      const Program program = SampleProgram(info, variant);
      CheckRoundTrip(program);
    }
  }
  // What two of them look like.
  CHECK(DisassembleInstruction(SampleProgram(*FindInstruction(OPCODE_DMA), 0).instructions(0)) ==
        "dma hbm[s4 + 0x100] -> vmem[s4 + 0x100], src=bf16[16,256]{1,0:T(8,128)(2,1)}, "
        "dst=bf16[16,256]{0,1:T(8,128)(2,1)}, src_start=[s6 + 8, 128], dst_start=[s6 + 8, 128], size=[8, 128], "
        "sem=sem[s5 - 1], engine=1");
  CHECK(DisassembleInstruction(SampleProgram(*FindInstruction(OPCODE_VST), 1).instructions(0)) ==
        "vst v21, vmem[-0x10]");
}

TEST_CASE("extreme values round trip", "[isa]") {
  const std::string text =
      ".target sublanes=64, lanes=4096, vregs=1024, mxus=8, mxu_rows=4096, mxu_cols=4096, dma_engines=64, "
      "semaphores=65536, cmem=true\n"
      ".data d, host[0xffffffffffffff00], bytes=00ff7f80\n"
      "  mov s31, -9223372036854775808\n"
      "  mov s0, 9223372036854775807\n"
      "  ld.s64 s1, smem[s2 - 0x8000000000000000]\n"
      "  vld v1023, vmem[0x7fffffffffffffff], sublanes=0xffffffffffffffff\n"
      "  sem.set sem[65535], 4294967295\n"
      "  vbcast v0, -2147483648\n"
      "  mxu.pop.acc mxu7, v5\n";
  const Program program = Assemble(text, "(test)");
  CHECK(program.instructions(0).operands(1).imm() == INT64_MIN);
  CHECK(program.instructions(2).operands(1).address().offset() == INT64_MIN);
  CHECK(program.instructions(3).operands(3).bits() == UINT64_MAX);
  CHECK(program.data(0).data() == std::string("\x00\xff\x7f\x80", 4));
  CheckRoundTrip(program);
}

TEST_CASE("loops round trip: a bare line, one line per region of one label, and a counter", "[isa]") {
  // Issue 21, item 5: lines of one label make one loop, in the order given; the disassembler
  // writes them after the data segments.
  const std::string text =
      ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=1, semaphores=2, cmem=false\n"
      ".loop inner\n"
      ".loop outer, hbm[0x100], size=0x4\n"
      ".loop outer, host[0x40], size=0x1000\n"
      ".loop outer, counter=hbm[0x100], type=u16, step=-3, while=LE, bound=65535\n"
      "\n"
      "outer:\n"
      "  nop\n"
      "inner:\n"
      "  br inner\n";
  const Program program = Assemble(text);
  REQUIRE(program.loops_size() == 2);
  CHECK(program.loops(0).label() == "inner");
  CHECK(program.loops(0).state_size() == 0);
  REQUIRE(program.loops(1).state_size() == 2);
  CHECK(program.loops(1).state(1).space() == MEMORY_SPACE_HOST);
  CHECK(program.loops(1).state(1).address() == 0x40);
  CHECK(program.loops(1).state(1).size_bytes() == 0x1000);
  // The counter: a u16 at hbm[0x100] (2 bytes), stepping by -3, going on while <= 65535.
  CHECK_FALSE(program.loops(0).has_counter());
  REQUIRE(program.loops(1).has_counter());
  CHECK(program.loops(1).counter().place().size_bytes() == 2);
  CHECK_FALSE(program.loops(1).counter().is_signed());
  CHECK(program.loops(1).counter().step() == -3);
  CHECK(program.loops(1).counter().compare() == "LE");
  CHECK(program.loops(1).counter().bound() == 65535);
  CHECK(Disassemble(program) == text);
}
