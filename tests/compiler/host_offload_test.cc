// Host offload (compiler/passes/host_offload.h): which arrays the pass puts in host memory (S(5)),
// the host heap of buffer assignment (HBM peaks without the host arrays), the PCIe DMAs of the
// moves, and the errors for computing on host arrays or overfilling host memory.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "compiler/passes/host_offload.h"
#include "compiler/passes/layout_assignment.h"
#include "tests/compiler/compile_test_support.h"
#include "tests/compiler/host_offload_modules.h"

namespace {

using tpusim::compiler::AssignHostMemorySpace;
using tpusim::compiler::AssignLayouts;
using tpusim::compiler::Compile;
using tpusim::compiler::InHostMemory;
using tpusim::compiler_test::CompileErrorOf;
using tpusim::compiler_test::SmallTargetOptions;

bool Host(const tpusim::hlo::Module& module, const char* computation, const char* name) {
  const tpusim::isa::Shape& shape = module.FindComputation(computation)->FindInstruction(name)->shape();
  return InHostMemory(shape);
}

bool HostLeaf(const tpusim::hlo::Module& module, const char* computation, const char* name, int element) {
  const tpusim::isa::Shape& shape = module.FindComputation(computation)->FindInstruction(name)->shape();
  return InHostMemory(shape.tuple_shapes.at(element));
}

}  // namespace

TEST_CASE("host offload: the host memory space spreads from MoveToHost through byte moves to MoveToDevice",
          "[compiler][host_offload]") {
  auto module = tpusim::hlo::ParseModule(tpusim::host_offload_test::kScan, "scan.hlo");
  AssignLayouts(*module);
  // Host leaves: fwd_body's h, hr, stack1 and the stack element (index 2) of its parameter and
  // root; the same element of both loops' state, inits, condition parameters, bwd_body's
  // parameter and root; stack0 (the broadcast that starts it); entry's stack, stack_out; bwd_body's
  // stack, s and sr. Counted one per array leaf: fwd_body 6 (p.2, stack, h, hr, stack1, t.2), cond
  // 1 (p.2, its one computation serving both loops), bwd_body 5 (p.2, stack, s, sr, t.2), entry 7
  // (stack0, init.2, w.2, stack, init2.2, w2.2, stack_out).
  CHECK(AssignHostMemorySpace(*module) == 19);
  CHECK(Host(*module, "fwd_body", "h"));
  CHECK(Host(*module, "fwd_body", "hr"));
  CHECK(Host(*module, "fwd_body", "stack1"));
  CHECK_FALSE(Host(*module, "fwd_body", "y"));  // MoveToHost's operand stays in HBM
  CHECK(HostLeaf(*module, "fwd_body", "t", 2));
  CHECK_FALSE(HostLeaf(*module, "fwd_body", "t", 1));
  CHECK(Host(*module, "e", "stack0"));
  CHECK(HostLeaf(*module, "e", "w", 2));
  CHECK_FALSE(HostLeaf(*module, "e", "w", 0));
  CHECK(HostLeaf(*module, "cond", "p", 2));
  CHECK(Host(*module, "bwd_body", "s"));
  CHECK(Host(*module, "bwd_body", "sr"));
  CHECK_FALSE(Host(*module, "bwd_body", "d"));  // MoveToDevice's result is in HBM
  CHECK_FALSE(Host(*module, "e", "acc0"));
  CHECK_FALSE(Host(*module, "e", "stack_dev"));
}

TEST_CASE("host offload: MoveToHost and MoveToDevice are DMAs between HBM and host memory",
          "[compiler][host_offload]") {
  auto module = tpusim::hlo::ParseModule(tpusim::host_offload_test::kRoundTrip, "round_trip.hlo");
  const auto compiled = Compile(*module, SmallTargetOptions());
  // Host memory: x's host buffer at 0, the output's at 0x10000 (64 KiB each), then the host heap:
  // h at 0x20000. HBM: x at 0, d at 0x10000, and r = add(d, x) writes over d (read last there).
  // Each move is one flat DMA of the 64 KiB image (below the 256 KiB at which copies are split
  // over the engines).
  CHECK_THAT(tpusim::compiler::ProgramText(compiled),
             Catch::Contains("h.begin:\n  dma hbm[0x0] -> host[0x20000], src=u32[16384]{0}, dst=u32[16384]{0}"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled),
             Catch::Contains("d.begin:\n  dma host[0x20000] -> hbm[0x10000], src=u32[16384]{0}, dst=u32[16384]{0}"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer host.h, host[0x20000], size=0x10000"));
  CHECK(compiled.hbm_peak_bytes == 2 * 65536);   // x, d (and r over d)
  CHECK(compiled.host_peak_bytes == 3 * 65536);  // x's and r's host buffers, h
}

TEST_CASE("host offload: the HBM peak leaves out host arrays, which have a heap of their own",
          "[compiler][host_offload]") {
  // big (1 MiB) is offloaded while a is computed and comes back as hd. Schedule: p, big, h, a, hd,
  // s, sr (a view of s), r; a is fused into r's kernel (its one reader), so it has no buffer. HBM
  // buffers (f32 T(8,128), no padding): p 64 KiB (whole program), big 1 MiB [1,2], hd 1 MiB [4,5],
  // s 64 KiB [5,7], r 64 KiB [7,end]. The most live at once is at s: p + hd + s = 1152 KiB, and
  // first fit reaches it (hd takes big's place, r takes hd's); had h stayed in HBM (1 MiB over
  // [2,4]) position 4 would hold p + h + hd = 2112 KiB.
  // Host memory: p's and r's host buffers (64 KiB each), then h (1 MiB).
  const char* text = R"(HloModule offload_peak
ENTRY e {
  p = f32[64,256] parameter(0)
  big = f32[16,64,256] broadcast(p), dimensions={1,2}
  h = f32[16,64,256] custom-call(big), custom_call_target="MoveToHost"
  a = f32[64,256] negate(p)
  hd = f32[16,64,256] custom-call(h), custom_call_target="MoveToDevice"
  s = f32[1,64,256] slice(hd), slice={[15:16], [0:64], [0:256]}
  sr = f32[64,256] reshape(s)
  ROOT r = f32[64,256] add(sr, a)
}
)";
  auto module = tpusim::hlo::ParseModule(text, "peak.hlo");
  const auto compiled = Compile(*module, SmallTargetOptions());
  CHECK(compiled.hbm_peak_bytes == 1152 * 1024);
  CHECK(compiled.host_peak_bytes == (64 + 64 + 1024) * 1024);
}

TEST_CASE("host offload: a loop body updates its host state in place", "[compiler][host_offload]") {
  auto module = tpusim::hlo::ParseModule(tpusim::host_offload_test::kScan, "scan.hlo");
  const auto compiled = Compile(*module, SmallTargetOptions());
  // Host memory: x (4 KiB) at 0, output 0 (4 KiB) at 0x1000, output 1 (16 KiB) at 0x2000; the
  // heap from 0x6000: the stack (stack0, taken over by both loops' state) 16 KiB, then the loop
  // bodies' region from 0xa000: h (4 KiB). fwd_body's dynamic-update-slice writes h into the state
  // itself (nothing reads the old stack after it), so stack1 is no second 16 KiB array and the
  // body's result needs no copy back: the peak is 0xb000 = 45056 bytes (0xf000 otherwise).
  CHECK(compiled.host_peak_bytes == 45056);
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer host.w.2, host[0x6000], size=0x4000"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer host.w_fwd_body_stack1, host[0x6000], size=0x4000"));
  // The update alone: one DMA of h (host 0xa000) into the stack at the loop index.
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains("dma host[0xa000] -> host[0x6000], src=f32[1,8,128]{2,1,0:T(8,128)}, "
                                                "dst=f32[4,8,128]{2,1,0:T(8,128)}, src_start=[0, 0, 0], "
                                                "dst_start=[s1, s2, s3], size=[1, 8, 128]"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), !Catch::Contains("-> host[0x6000], src=u32[4096]{0}"));  // no whole-stack copy into it
}

TEST_CASE("host offload: a broadcast shared by host loop-state elements is cloned for each", "[compiler][host_offload]") {
  auto module = tpusim::hlo::ParseModule(tpusim::host_offload_test::kSharedZeros, "shared.hlo");
  const auto compiled = Compile(*module, SmallTargetOptions());
  // Host memory: x (4 KiB), three 8 KiB outputs: the heap from 0x7000. Each state element takes
  // its clone's buffer over (no copy of 8 KiB of zeros into it), the original is an HBM output;
  // the body's h (4 KiB) lies above them: peak 0x7000 + 2 x 0x2000 + 0x1000 = 49152.
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer host.zeros.host1, host[0x7000], size=0x2000"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer host.zeros.host2, host[0x9000], size=0x2000"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer host.w.1, host[0x7000], size=0x2000"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer host.w.2, host[0x9000], size=0x2000"));
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer hbm.zeros, hbm["));
  CHECK(compiled.host_peak_bytes == 49152);
}

TEST_CASE("host offload: moves to where the array already is move nothing", "[compiler][host_offload]") {
  // MoveToDevice of an HBM array (the Llama module has 39 of them, e.g. on optimizer state) and
  // MoveToHost of a host array are aliases: no kernel, no buffer.
  const char* text = R"(HloModule redundant_moves
ENTRY e {
  x = f32[8,128] parameter(0)
  d = f32[8,128] custom-call(x), custom_call_target="MoveToDevice"
  h = f32[8,128] custom-call(d), custom_call_target="MoveToHost"
  h2 = f32[8,128] custom-call(h), custom_call_target="MoveToHost"
  back = f32[8,128] custom-call(h2), custom_call_target="MoveToDevice"
  ROOT r = f32[8,128] add(back, d)
}
)";
  auto module = tpusim::hlo::ParseModule(text, "moves.hlo");
  const auto compiled = Compile(*module, SmallTargetOptions());
  std::string names;
  for (const auto& kernel : compiled.kernels) names += kernel.name + " ";
  CHECK(names == "h back r ");
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer hbm.d, hbm[0x0]"));  // x's bytes, seen as d
  CHECK_THAT(tpusim::compiler::ProgramText(compiled), Catch::Contains(".buffer host.h2, host[0x2000]"));  // h's bytes, seen as h2
}

TEST_CASE("host offload: computing on a host array is an error naming the operation and the array",
          "[compiler][host_offload]") {
  const char* text = R"(HloModule compute_on_host
ENTRY e {
  x = f32[8,128] parameter(0)
  h = f32[8,128] custom-call(x), custom_call_target="MoveToHost"
  ROOT n = f32[8,128] negate(h)
}
)";
  const std::string error = CompileErrorOf(text, SmallTargetOptions());
  CHECK_THAT(error, Catch::Contains("test.hlo:5:8: instruction 'n': cannot lower negate"));
  CHECK_THAT(error, Catch::Contains("it computes on 'h' (operand 0), an array in host memory (S(5))"));
  CHECK_THAT(error, Catch::Contains("MoveToDevice it first"));
}

TEST_CASE("host offload: a layout that puts a computed result in host memory is an error", "[compiler][host_offload]") {
  const char* text = R"(HloModule result_on_host
ENTRY e {
  x = f32[8,128] parameter(0)
  ROOT a = f32[8,128]{1,0:S(5)} add(x, x)
}
)";
  const std::string error = CompileErrorOf(text, SmallTargetOptions());
  CHECK_THAT(error, Catch::Contains("instruction 'a': cannot lower add"));
  CHECK_THAT(error, Catch::Contains("its result is in host memory (S(5)) but it computes it"));
}

TEST_CASE("host offload: host arrays beyond the host memory's capacity are an error", "[compiler][host_offload]") {
  // x's and r's host buffers take 2 x 64 KiB; h needs 64 KiB more, over a capacity of 160 KiB.
  auto options = SmallTargetOptions();
  options.host_capacity_bytes = 160 * 1024;
  const std::string error = CompileErrorOf(tpusim::host_offload_test::kRoundTrip, options);
  CHECK_THAT(error, Catch::Contains("the module needs 196608 bytes of host memory for host arrays (S(5)) at its peak, "
                                    "more than the host's 163840; the largest buffers live here: h (65536 bytes)"));
}
