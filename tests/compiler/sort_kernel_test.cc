// The sort kernel's comparator matching and its refusals (the runs are in
// tests/sim/sort_run_test.cc).
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "compiler/lower/sort_kernel.h"
#include "isa/error.h"
#include "tests/compiler/compile_test_support.h"

namespace tpusim {
namespace {

// A module sorting x (TYPE[DIMS]) along DIM with the comparator body BODY over parameters a, b.
std::string SortModule(const std::string& type, const std::string& body, const std::string& dims = "4,8",
                       int dim = 1) {
  return "HloModule m\ncmp {\n  a = " + type + "[] parameter(0)\n  b = " + type + "[] parameter(1)\n" + body +
         "\n}\nENTRY main {\n  x = " + type + "[" + dims + "] parameter(0)\n  ROOT s = " + type + "[" + dims +
         "] sort(x), dimensions={" + std::to_string(dim) + "}, to_apply=cmp\n}\n";
}

std::optional<compiler::SortKeySpec> Match(const std::string& text) {
  auto module = hlo::ParseModule(text, "test.hlo");
  return compiler::MatchSortComparator(*module->FindComputation("cmp"));
}

std::string CompileError(const std::string& text, uint64_t vmem = 16ull << 20) {
  return compiler_test::CompileErrorOf(text, compiler_test::SmallTargetOptions(vmem, 16 << 10));
}

TEST_CASE("sort comparator: LT and GT on operand 0, either parameter order") {
  auto lt = Match(SortModule("f32", "  ROOT c = pred[] compare(a, b), direction=LT"));
  REQUIRE(lt);
  CHECK_FALSE(lt->descending);
  CHECK_FALSE(lt->total_order);
  auto gt = Match(SortModule("f32", "  ROOT c = pred[] compare(a, b), direction=GT, type=TOTALORDER"));
  REQUIRE(gt);
  CHECK(gt->descending);
  CHECK(gt->total_order);
  // b < a means a goes first when it is larger: descending.
  auto swapped = Match(SortModule("s32", "  ROOT c = pred[] compare(b, a), direction=LT"));
  REQUIRE(swapped);
  CHECK(swapped->descending);
  auto unsigned_cmp = Match(SortModule("u32", "  ROOT c = pred[] compare(a, b), direction=LT"));
  REQUIRE(unsigned_cmp);
  CHECK(unsigned_cmp->is_unsigned);
}

TEST_CASE("sort comparator: JAX's canonicalizing form is recognised") {
  const std::string body =
      "  n = pred[] compare(a, a), direction=NE\n  nan = f32[] constant(nan)\n  z = f32[] constant(0)\n"
      "  e = pred[] compare(a, z), direction=EQ\n  s1 = f32[] select(e, z, a)\n  ca = f32[] select(n, nan, s1)\n"
      "  m = pred[] compare(b, b), direction=NE\n  f = pred[] compare(b, z), direction=EQ\n"
      "  s2 = f32[] select(f, z, b)\n  cb = f32[] select(m, nan, s2)\n"
      "  ROOT c = pred[] compare(ca, cb), direction=LT, type=TOTALORDER";
  auto spec = Match(SortModule("f32", body));
  REQUIRE(spec);
  CHECK(spec->canonical);
  CHECK(spec->total_order);
  CHECK_FALSE(spec->descending);
}

TEST_CASE("sort comparator: LE, GE and compares of other values are not matched") {
  CHECK_FALSE(Match(SortModule("f32", "  ROOT c = pred[] compare(a, b), direction=LE")));
  CHECK_FALSE(Match(SortModule("f32", "  ROOT c = pred[] compare(a, b), direction=GE")));
  CHECK_FALSE(Match(SortModule("f32", "  n = f32[] negate(a)\n  ROOT c = pred[] compare(n, b), direction=LT")));
  CHECK_FALSE(Match(SortModule("f32", "  ROOT c = pred[] compare(a, a), direction=LT")));
}

TEST_CASE("sort refusals are CannotLower errors naming the op") {
  const std::string le = CompileError(SortModule("f32", "  ROOT c = pred[] compare(a, b), direction=LE"));
  CHECK(le.find("cannot lower sort") != std::string::npos);
  CHECK(le.find("comparators") != std::string::npos);
  // 65536 f32 positions: three work arrays x 65536 x 512 B = 96 MiB per 128 rows > 16 MiB.
  const std::string big =
      CompileError(SortModule("f32", "  ROOT c = pred[] compare(a, b), direction=LT", "65536", 0));
  CHECK(big.find("cannot lower sort") != std::string::npos);
  CHECK(big.find("VMEM") != std::string::npos);
  const std::string s8 = CompileError(SortModule("s8", "  ROOT c = pred[] compare(a, b), direction=LT"));
  CHECK(s8.find("16- or 32-bit") != std::string::npos);
}

TEST_CASE("sort of [4096] f32 compiles to a bounded program") {
  auto module = hlo::ParseModule(SortModule("f32", "  ROOT c = pred[] compare(a, b), direction=LT", "8,4096", 1),
                                 "test.hlo");
  const compiler::CompiledModule compiled = compiler::Compile(*module, compiler_test::SmallTargetOptions(16ull << 20, 16 << 10));
  // 78 stages, each a pair of loops of a few dozen lines: the network is looped, not unrolled.
  CHECK(compiled.program.instructions_size() < 20000);
}

}  // namespace
}  // namespace tpusim
