// Assembler errors: each kind, with its exact `file:line:col: message`, the line and the caret.
#include <catch2/catch.hpp>

#include <string>

#include "isa/assembler.h"
#include "isa/error.h"

using namespace tpusim::isa;

namespace {

const std::string kTarget =
    ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=2, "
    "semaphores=4, cmem=false\n";

// The formatted error of assembling `body` after the target line (line 2 on), or "" if it assembles.
std::string ErrorOf(const std::string& body, bool with_target = true) {
  try {
    Assemble((with_target ? kTarget : "") + body, "k.tpuasm");
  } catch (const tpusim::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("unknown mnemonics and directives", "[isa]") {
  CHECK(ErrorOf("  vadd v1, v2, v3\n") ==
        "k.tpuasm:2:3: unknown mnemonic 'vadd'\n"
        "    vadd v1, v2, v3\n"
        "    ^");
  CHECK(ErrorOf("loop: vadd.f33 v1, v2, v3\n") ==
        "k.tpuasm:2:7: unknown mnemonic 'vadd.f33'\n"
        "  loop: vadd.f33 v1, v2, v3\n"
        "        ^");
  CHECK(ErrorOf(".buffr x, hbm[0x0]\n") ==
        "k.tpuasm:2:1: unknown directive '.buffr' (expected .program, .target, .buffer, .data or .loop)\n"
        "  .buffr x, hbm[0x0]\n"
        "  ^");
  CHECK(ErrorOf("  3 + 4\n") ==
        "k.tpuasm:2:3: expected an instruction, a label or a directive, found '3'\n"
        "    3 + 4\n"
        "    ^");
}

TEST_CASE("wrong operand kinds", "[isa]") {
  CHECK(ErrorOf("  vadd.f32 v1, s2, v3\n") ==
        "k.tpuasm:2:16: operand va of vadd.f32 must be a vector register, found 's2'\n"
        "    vadd.f32 v1, s2, v3\n"
        "                 ^");
  CHECK(ErrorOf("  add s1, 4, s2\n") ==
        "k.tpuasm:2:11: operand sa of add must be a scalar register, found '4'\n"
        "    add s1, 4, s2\n"
        "            ^");
  CHECK(ErrorOf("  vld v1, hbm[s5]\n") ==
        "k.tpuasm:2:11: vld cannot address hbm\n"
        "    vld v1, hbm[s5]\n"
        "            ^");
  CHECK(ErrorOf("  ld.s32 s1, sem[2]\n") ==
        "k.tpuasm:2:14: operand addr of ld.s32 must be an address, found 'sem[2]'\n"
        "    ld.s32 s1, sem[2]\n"
        "               ^");
  CHECK(ErrorOf("  vld v1, vmem[v2 + 4]\n") ==
        "k.tpuasm:2:16: a base or index register is a scalar register (s0..s31)\n"
        "    vld v1, vmem[v2 + 4]\n"
        "                 ^");
  CHECK(ErrorOf("  dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[s1, 128], "
                "sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:78: sizes are constants, not registers\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[s1, 128], sem=sem[0], engine=0\n"
        "                                                                               ^");
}

TEST_CASE("operand counts and separators", "[isa]") {
  CHECK(ErrorOf("  vadd.f32 v1, v2\n") ==
        "k.tpuasm:2:18: too few operands: 3 expected, found 2 (vadd.f32 vd, va, vb)\n"
        "    vadd.f32 v1, v2\n"
        "                   ^");
  CHECK(ErrorOf("  halt s1   // stop\n") ==
        "k.tpuasm:2:8: too many operands: 0 expected (halt)\n"
        "    halt s1   // stop\n"
        "         ^");
  CHECK(ErrorOf("  vmov v1, v2, v3\n") ==
        "k.tpuasm:2:16: too many operands: 2 expected (vmov vd, va)\n"
        "    vmov v1, v2, v3\n"
        "                 ^");
  CHECK(ErrorOf("  vmov v1 v2\n") ==
        "k.tpuasm:2:11: expected ',' between operands, found 'v2'\n"
        "    vmov v1 v2\n"
        "            ^");
  CHECK(ErrorOf("  vmov v1,\n") ==
        "k.tpuasm:2:11: expected an operand after the separator, found end of line\n"
        "    vmov v1,\n"
        "            ^");
  CHECK(ErrorOf("  dma hbm[0x0], vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:15: expected '->' after the source address, found ','\n"
        "    dma hbm[0x0], vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n"
        "                ^");
  CHECK(ErrorOf("  dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:92: dma needs size= (dma from -> to, src=, dst=, [src_start=], [dst_start=], size=, sem=, engine=)\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, sem=sem[0], engine=0\n"
        "                                                                                             ^");
  CHECK(ErrorOf("  vld v1, vmem[0x0], strde=2\n") ==
        "k.tpuasm:2:22: vld has no keyword operand 'strde' (vld vd, addr, [stride=], [sublanes=])\n"
        "    vld v1, vmem[0x0], strde=2\n"
        "                       ^");
  CHECK(ErrorOf("  vld v1, vmem[0x0], stride=2, stride=3\n") ==
        "k.tpuasm:2:32: 'stride' is given twice\n"
        "    vld v1, vmem[0x0], stride=2, stride=3\n"
        "                                 ^");
  CHECK(ErrorOf("  vld v1, stride=2, vmem[0x0]\n") ==
        "k.tpuasm:2:21: positional operands come before keyword operands\n"
        "    vld v1, stride=2, vmem[0x0]\n"
        "                      ^");
}

TEST_CASE("labels", "[isa]") {
  CHECK(ErrorOf("  br nowhere\n") ==
        "k.tpuasm:2:6: label 'nowhere' is not defined\n"
        "    br nowhere\n"
        "       ^");
  CHECK(ErrorOf("a:\n  nop\na: halt\n") ==
        "k.tpuasm:4:1: label 'a' is already defined (line 2)\n"
        "  a: halt\n"
        "  ^");
  CHECK(ErrorOf("v1: nop\n") ==
        "k.tpuasm:2:1: label 'v1' is spelled like a register\n"
        "  v1: nop\n"
        "  ^");
  CHECK(ErrorOf("x: .data d, hbm[0x0], bytes=00\n") ==
        "k.tpuasm:2:4: a label names an instruction, not a directive\n"
        "  x: .data d, hbm[0x0], bytes=00\n"
        "     ^");
}

TEST_CASE("registers", "[isa]") {
  CHECK(ErrorOf("  add s32, s1, s2\n") ==
        "k.tpuasm:2:7: scalar register s32 does not exist: there are s0..s31\n"
        "    add s32, s1, s2\n"
        "        ^");
  CHECK(ErrorOf("  vmov v1, v32\n") ==
        "k.tpuasm:2:12: vector register v32 does not exist: there are v0..v31\n"
        "    vmov v1, v32\n"
        "             ^");
  CHECK(ErrorOf("  vsel v1, m8, v2, v3\n") ==
        "k.tpuasm:2:12: mask register m8 does not exist: there are m0..m7\n"
        "    vsel v1, m8, v2, v3\n"
        "             ^");
  CHECK(ErrorOf("  mxu.latch mxu1\n") ==
        "k.tpuasm:2:13: mxu1 does not exist: the target has 1 MXUs\n"
        "    mxu.latch mxu1\n"
        "              ^");
  CHECK(ErrorOf("  vmov v1, v99999999999\n") ==
        "k.tpuasm:2:12: register number 'v99999999999' is too large\n"
        "    vmov v1, v99999999999\n"
        "             ^");
}

TEST_CASE("immediates", "[isa]") {
  CHECK(ErrorOf("  sem.signal sem[1], -1\n") ==
        "k.tpuasm:2:22: immediate -1 is out of range for n: [0, 4294967295]\n"
        "    sem.signal sem[1], -1\n"
        "                       ^");
  CHECK(ErrorOf("  vld v1, vmem[0x0], stride=0x80000000\n") ==
        "k.tpuasm:2:29: immediate 2147483648 is out of range for stride: [-2147483648, 2147483647]\n"
        "    vld v1, vmem[0x0], stride=0x80000000\n"
        "                              ^");
  CHECK(ErrorOf("  mov s1, 0x10000000000000000\n") ==
        "k.tpuasm:2:11: number '0x10000000000000000' does not fit in 64 bits\n"
        "    mov s1, 0x10000000000000000\n"
        "            ^");
  CHECK(ErrorOf("  mov s1, 9223372036854775808\n") ==
        "k.tpuasm:2:11: number '9223372036854775808' does not fit in a signed 64-bit immediate\n"
        "    mov s1, 9223372036854775808\n"
        "            ^");
  CHECK(ErrorOf("  mov s1, 12ab\n") ==
        "k.tpuasm:2:11: malformed number '12ab'\n"
        "    mov s1, 12ab\n"
        "            ^");
  CHECK(ErrorOf("  vld v1, vmem[0x0], sublanes=0x100\n") ==
        "k.tpuasm:2:31: sublane mask 0x100 selects sublanes beyond the target's 8\n"
        "    vld v1, vmem[0x0], sublanes=0x100\n"
        "                                ^");
  CHECK(ErrorOf("  sem.wait sem[4], 1\n") ==
        "k.tpuasm:2:12: semaphore 4 does not exist: the target has 4\n"
        "    sem.wait sem[4], 1\n"
        "             ^");
  CHECK(ErrorOf("  dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], "
                "sem=sem[0], engine=2\n") ==
        "k.tpuasm:2:106: DMA engine 2 does not exist: the target has 2\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=2\n"
        "                                                                                                           ^");
}

TEST_CASE("DMA regions and shapes", "[isa]") {
  const std::string dma = "  dma hbm[0x0] -> vmem[0x0], ";
  CHECK(ErrorOf(dma + "src=f32[8,128]{1,0}, dst=bf16[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:55: a DMA copies bytes: the element types differ (f32 -> bf16)\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=bf16[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n"
        "                                                        ^");
  CHECK(ErrorOf(dma + "src=f32[16,128]{1,0}, dst=f32[8,128]{1,0}, src_start=[9, 0], size=[8, 128], sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:83: the region [9, +8) of dim 0 is outside f32[16,128]{1,0}\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[16,128]{1,0}, dst=f32[8,128]{1,0}, src_start=[9, 0], size=[8, 128], sem=sem[0], engine=0\n"
        "                                                                                    ^");
  CHECK(ErrorOf(dma + "src=f32[8,128], dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:34: shape f32[8,128] has no layout: write it, e.g. {1,0:T(8,128)}\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[8,128], dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n"
        "                                   ^");
  CHECK(ErrorOf(dma + "src=f32[8,128]{1,0:S(1)}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:34: shape f32[8,128]{1,0:S(1)} says S(1) but it is in hbm\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0:S(1)}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n"
        "                                   ^");
  CHECK(ErrorOf(dma + "src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8], sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:77: size has 1 dims; the shapes have 2\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8], sem=sem[0], engine=0\n"
        "                                                                              ^");
  // Errors inside a shape come from the shape parser, at their place in the line.
  CHECK(ErrorOf(dma + "src=f32[8,128]{1,0:T(8,128}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:56: expected ')' to close the tile, found '}, dst=f32[8'\n"
        "    dma hbm[0x0] -> vmem[0x0], src=f32[8,128]{1,0:T(8,128}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n"
        "                                                         ^");
  CHECK(ErrorOf("  dma hbm[0x0] -> cmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n") ==
        "k.tpuasm:2:19: the target has no CMEM (.target cmem=false)\n"
        "    dma hbm[0x0] -> cmem[0x0], src=f32[8,128]{1,0}, dst=f32[8,128]{1,0}, size=[8, 128], sem=sem[0], engine=0\n"
        "                    ^");
}

TEST_CASE("directives", "[isa]") {
  CHECK(ErrorOf("  halt\n", false) ==
        "k.tpuasm:1:1: missing .target directive: a program states the machine shape it was built for\n"
        "    halt\n"
        "  ^");
  CHECK(ErrorOf(kTarget) ==
        "k.tpuasm:2:1: .target is given twice (first on line 1)\n"
        "  .target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=2, semaphores=4, cmem=false\n"
        "  ^");
  CHECK(ErrorOf(".target sublanes=8, lanes=128\n", false) ==
        "k.tpuasm:1:30: .target needs cmem=\n"
        "  .target sublanes=8, lanes=128\n"
        "                               ^");
  CHECK(ErrorOf(".target sublanes=0, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=2, "
                "semaphores=4, cmem=false\n",
                false) ==
        "k.tpuasm:1:18: target sublanes is 0; it must be in [1, 1024]\n"
        "  .target sublanes=0, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=2, semaphores=4, cmem=false\n"
        "                   ^");
  CHECK(ErrorOf(".buffer x, hbm[0x0], size=0x10, shape=f32[8,128]{1,0}, role=parameter(0)\n") ==
        "k.tpuasm:2:27: size 0x10 is smaller than the 4096 bytes of f32[8,128]{1,0}\n"
        "  .buffer x, hbm[0x0], size=0x10, shape=f32[8,128]{1,0}, role=parameter(0)\n"
        "                            ^");
  CHECK(ErrorOf(".buffer x, hbm[0x0], size=0x1000, shape=f32[8,128]{1,0}, role=input(0)\n") ==
        "k.tpuasm:2:63: expected a role: parameter(N), output(N) or temporary, found 'input(0)'\n"
        "  .buffer x, hbm[0x0], size=0x1000, shape=f32[8,128]{1,0}, role=input(0)\n"
        "                                                                ^");
  CHECK(ErrorOf(".buffer x, hbm[0x0], size=0x1000, shape=f32[8,128]{1,0}, role=output(0)\n"
                ".buffer x, hbm[0x1000], size=0x1000, shape=f32[8,128]{1,0}, role=output(0)\n") ==
        "k.tpuasm:3:9: the name 'x' is already used\n"
        "  .buffer x, hbm[0x1000], size=0x1000, shape=f32[8,128]{1,0}, role=output(0)\n"
        "          ^");
  CHECK(ErrorOf(".buffer x, hbm[0x0], size=0x1000, shape=f32[8,128]{1,0}, role=output(0)\n"
                ".buffer y, hbm[0x1000], size=0x1000, shape=f32[8,128]{1,0}, role=output(0)\n") ==
        "k.tpuasm:3:66: output 0 has another buffer already\n"
        "  .buffer y, hbm[0x1000], size=0x1000, shape=f32[8,128]{1,0}, role=output(0)\n"
        "                                                                   ^");
  CHECK(ErrorOf(".buffer x, hbm[s1], size=0x1000, shape=f32[8,128]{1,0}, role=temporary\n") ==
        "k.tpuasm:2:16: the address of .buffer is a constant >= 0\n"
        "  .buffer x, hbm[s1], size=0x1000, shape=f32[8,128]{1,0}, role=temporary\n"
        "                 ^");
  CHECK(ErrorOf(".data d, vmem[0x0], bytes=0f0\n") ==
        "k.tpuasm:2:27: an odd number of hex digits: each byte is two\n"
        "  .data d, vmem[0x0], bytes=0f0\n"
        "                            ^");
  CHECK(ErrorOf(".data d, vmem[0x0], size=4\n") ==
        "k.tpuasm:2:21: .data has no key 'size' (keys: bytes)\n"
        "  .data d, vmem[0x0], size=4\n"
        "                      ^");
  CHECK(ErrorOf(".program 9lives\n") ==
        "k.tpuasm:2:10: expected a program name, found '9lives'\n"
        "  .program 9lives\n"
        "           ^");
}

TEST_CASE("target-dependent instruction rules", "[isa]") {
  const std::string odd =
      ".target sublanes=6, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=2, semaphores=4, "
      "cmem=false\n";
  CHECK(ErrorOf(odd + "  vxpose v1, v2\n", false) ==
        "k.tpuasm:2:3: vxpose needs lanes (128) to be a multiple of sublanes (6)\n"
        "    vxpose v1, v2\n"
        "    ^");
}

TEST_CASE("assembler error offsets without a file name", "[isa]") {
  try {
    Assemble(kTarget + "  nop\n  bogus\n");
    FAIL("assembled");
  } catch (const tpusim::ParseError& e) {
    CHECK(e.offset() == kTarget.size() + 8);
    CHECK(std::string(e.what()) == "unknown mnemonic 'bogus'");
  }
  CHECK_THROWS_WITH(AssembleFile("/nonexistent/x.tpuasm"), "/nonexistent/x.tpuasm: cannot open for reading");
}

TEST_CASE("loops: a label that names nothing, an empty or bad region", "[isa]") {
  // Issue 21, item 5: `.loop LABEL[, SPACE[ADDRESS], size=N]` (docs/isa.md).
  CHECK(ErrorOf(".loop top, hbm[0x100], size=0x4\n  nop\n") ==
        "k.tpuasm:2:7: label 'top' is not defined\n"
        "  .loop top, hbm[0x100], size=0x4\n"
        "        ^");
  CHECK(ErrorOf(".loop top, hbm[0x100], size=0x0\ntop:\n  nop\n") ==
        "k.tpuasm:2:29: a loop's state region holds at least one byte\n"
        "  .loop top, hbm[0x100], size=0x0\n"
        "                              ^");
  CHECK(ErrorOf(".loop top, hbm[s1], size=0x4\ntop:\n  nop\n") ==
        "k.tpuasm:2:16: the address of .loop is a constant >= 0\n"
        "  .loop top, hbm[s1], size=0x4\n"
        "                 ^");
  CHECK(ErrorOf(".loop top, cmem[0x0], size=0x4\ntop:\n  nop\n") ==
        "k.tpuasm:2:12: the target has no CMEM (.target cmem=false)\n"
        "  .loop top, cmem[0x0], size=0x4\n"
        "             ^");
  CHECK(ErrorOf(".loop top, hbm[0x0]\ntop:\n  nop\n") ==
        "k.tpuasm:2:20: expected ',', found end of line\n"
        "  .loop top, hbm[0x0]\n"
        "                     ^");
  CHECK(ErrorOf(".loop\n") ==
        "k.tpuasm:2:6: expected a label after .loop, found end of line\n"
        "  .loop\n"
        "       ^");
}

TEST_CASE("loops: a counter's type, comparison and bound", "[isa]") {
  // `.loop LABEL, counter=SPACE[ADDRESS], type=T, step=N, while=COMPARE, bound=N` (docs/isa.md).
  CHECK(ErrorOf(".loop top, counter=hbm[0x0], type=f32, step=1, while=LT, bound=3\ntop:\n  nop\n") ==
        "k.tpuasm:2:35: a loop counter's type is an integer type of whole bytes (s8 .. s64, u8 .. u64)\n"
        "  .loop top, counter=hbm[0x0], type=f32, step=1, while=LT, bound=3\n"
        "                                    ^");
  CHECK(ErrorOf(".loop top, counter=hbm[0x0], type=s32, step=1, while=LESS, bound=3\ntop:\n  nop\n") ==
        "k.tpuasm:2:54: `while` is one of EQ, NE, LT, LE, GT, GE\n"
        "  .loop top, counter=hbm[0x0], type=s32, step=1, while=LESS, bound=3\n"
        "                                                       ^");
  CHECK(ErrorOf(".loop top, counter=hbm[0x0], type=u8, step=1, while=LT, bound=256\ntop:\n  nop\n") ==
        "k.tpuasm:2:7: the loop counter's bound 256 is not a value of its type\n"
        "  .loop top, counter=hbm[0x0], type=u8, step=1, while=LT, bound=256\n"
        "        ^");
  CHECK(ErrorOf(".loop top, counter=hbm[0x0], type=s32, step=1, while=LT\ntop:\n  nop\n").find("bound") !=
        std::string::npos);
  CHECK(ErrorOf(".loop top, counter=hbm[0x0], type=s8, step=1, while=LT, bound=3\n"
                ".loop top, counter=hbm[0x4], type=s8, step=1, while=LT, bound=3\ntop:\n  nop\n") ==
        "k.tpuasm:3:1: the loop at 'top' has a counter already\n"
        "  .loop top, counter=hbm[0x4], type=s8, step=1, while=LT, bound=3\n"
        "  ^");
}
