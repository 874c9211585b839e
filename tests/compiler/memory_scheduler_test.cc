// The memory-aware schedule (compiler/passes/memory_scheduler.h) and its choice in Compile.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/layout_assignment.h"
#include "compiler/passes/memory_scheduler.h"
#include "tests/compiler/compile_test_support.h"
#include "tests/compiler/memory_planning_modules.h"

namespace {

using namespace tpusim;

// Three 4 MiB temporaries, each reduced to 4 KiB. The text makes all three before reducing any:
// with p, 16 MiB live at once. Kernels that are not element-wise (reverses) do not fuse into the
// reduces.
constexpr char kThreeTemporaries[] = R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[1024,1024] parameter(0)
  a = f32[1024,1024] reverse(p), dimensions={0,1}
  b = f32[1024,1024] reverse(p), dimensions={0}
  c = f32[1024,1024] reverse(p), dimensions={1}
  z = f32[] constant(0)
  ra = f32[1024] reduce(a, z), dimensions={1}, to_apply=add
  rb = f32[1024] reduce(b, z), dimensions={1}, to_apply=add
  rc = f32[1024] reduce(c, z), dimensions={1}, to_apply=add
  ROOT t = (f32[1024], f32[1024], f32[1024]) tuple(ra, rb, rc)
}
)";

// A 4 MiB temporary `big` read by two reduces, each 4 KiB, and between them in the text another
// 4 MiB temporary with its reduce. Neither of big's readers frees it alone.
constexpr char kTwoReaders[] = R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[1024,1024] parameter(0)
  big = f32[1024,1024] reverse(p), dimensions={0}
  t = f32[1024,1024] reverse(p), dimensions={1}
  z = f32[] constant(0)
  rt = f32[1024] reduce(t, z), dimensions={1}, to_apply=add
  ra = f32[1024] reduce(big, z), dimensions={1}, to_apply=add
  rb = f32[1024] reduce(big, z), dimensions={0}, to_apply=add
  ROOT r = (f32[1024], f32[1024], f32[1024]) tuple(rt, ra, rb)
}
)";

std::string Names(const std::vector<const hlo::Instruction*>& order) {
  std::string names;
  for (const hlo::Instruction* x : order) names += (names.empty() ? "" : " ") + x->name();
  return names;
}

// The text's order of `module`'s entry (laid out), and the list scheduler's order of it.
struct Orders {
  std::string text;
  std::string listed;
};
Orders ScheduleOf(hlo::Module& module) {
  compiler::AssignLayouts(module);
  const std::vector<const hlo::Instruction*> text = compiler::Schedule(*module.entry());
  const std::vector<compiler::KernelGroup> groups = compiler::FuseElementwise(text);
  return {Names(text), Names(compiler::ListSchedule(text, groups, [](const hlo::Instruction&) { return uint64_t{0}; }))};
}

}  // namespace

TEST_CASE("memory scheduler: a kernel that frees more than it defines runs as soon as it can",
          "[memory_scheduler]") {
  auto module = hlo::ParseModule(kThreeTemporaries, "test.hlo");
  const Orders orders = ScheduleOf(*module);
  CHECK(orders.text == "p a b c z ra rb rc t");
  // The constant defines nothing: it goes first. Each reduce frees 4 MiB for 4 KiB: it follows
  // its temporary, before the next one is made.
  CHECK(orders.listed == "p z a ra b rb c rc t");
}

TEST_CASE("memory scheduler: the readers of a buffer that free it together run together", "[memory_scheduler]") {
  auto module = hlo::ParseModule(kTwoReaders, "test.hlo");
  const Orders orders = ScheduleOf(*module);
  CHECK(orders.text == "p big t z rt ra rb r");
  // Alone, ra and rb each define 4 KiB and free nothing (big has another reader), as t frees
  // nothing: the text's order would make t while big is live (p, big and t: 12 MiB). Together
  // they free big's 4 MiB for 8 KiB: they run before t is made.
  CHECK(orders.listed == "p z big ra rb t rt r");
  const compiler::CompiledModule compiled = compiler::Compile(*module, compiler_test::SmallTargetOptions());
  CHECK(compiled.hbm_peak_bytes <= (8u << 20) + (64u << 10));
}

TEST_CASE("memory scheduler: Compile keeps the schedule that peaks lower", "[memory_scheduler]") {
  auto module = hlo::ParseModule(kThreeTemporaries, "test.hlo");
  const compiler::CompiledModule compiled = compiler::Compile(*module, compiler_test::SmallTargetOptions());
  // p and one temporary (4 MiB each) with the reduces' 4 KiB results and the constant's page:
  // at most 8 MiB + 64 KiB; in the text's order a, b and c were live together (16 MiB with p).
  CHECK(compiled.hbm_peak_bytes <= (8u << 20) + (64u << 10));
  CHECK(compiled.hbm_peak_bytes >= (8u << 20));
}


TEST_CASE("memory planning: a loop body's region goes between the caller's buffers", "[memory_scheduler]") {
  auto module = hlo::ParseModule(memory_planning_test::kLoopInAHole, "test.hlo");
  const compiler::CompiledModule compiled = compiler::Compile(*module, compiler_test::SmallTargetOptions());
  // q and a 12 MiB each, b 4 MiB: 28 MiB live at once before a's reduce. At the loop a is dead
  // and the body's 8 MiB go where it was; above b they made 36 MiB.
  CHECK(compiled.hbm_peak_bytes >= (28u << 20));
  CHECK(compiled.hbm_peak_bytes <= (28u << 20) + (64u << 10));
}
