// Donated parameters (compiler/passes/input_output_alias.h and buffer_assignment.h's Donations):
// the HloModule line's input_output_alias read and checked, and an output written into its
// parameter's buffer only when nothing reads the parameter afterwards.
#include <catch2/catch.hpp>

#include "compiler/hlo/parser.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/input_output_alias.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/error.h"

namespace {

using tpusim::compiler::AssignBuffers;
using tpusim::compiler::AssignLayouts;
using tpusim::compiler::BufferAssignment;
using tpusim::compiler::Donations;
using tpusim::compiler::ParseInputOutputAlias;
using tpusim::compiler::Schedule;

// a is written (position 2) before p's last read (b, position 3); b reads p and writes output 1.
constexpr char kUpdate[] = R"(HloModule update, input_output_alias={ {0}: (0, {}, may-alias), {1}: (0, {}, may-alias) }
ENTRY e {
  p = f32[1024] parameter(0)
  q = f32[1024] parameter(1)
  a = f32[1024] negate(q)
  b = f32[1024] add(p, a)
  ROOT t = (f32[1024], f32[1024]) tuple(a, b)
}
)";

const tpusim::compiler::DeviceBuffer* Leaf(const BufferAssignment& buffers, const tpusim::hlo::Module& module,
                                           const char* name) {
  return buffers.leaves.at(module.entry()->FindInstruction(name)).at(0);
}

}  // namespace

TEST_CASE("input_output_alias is read into donated parameter leaves", "[compiler][buffers]") {
  auto module = tpusim::hlo::ParseModule(kUpdate, "update.hlo");
  const auto aliases = ParseInputOutputAlias(*module);
  REQUIRE(aliases.size() == 2);
  CHECK(aliases[0].output_leaf == 0);
  CHECK(aliases[1].output_leaf == 1);
  CHECK(aliases[0].parameter == module->entry()->FindInstruction("p"));
  CHECK(aliases[0].parameter_leaf == 0);
  CHECK_FALSE(aliases[0].must_alias);
}

TEST_CASE("a donated parameter holds the output whose kernel may overwrite it, and only that one",
          "[compiler][buffers]") {
  auto module = tpusim::hlo::ParseModule(kUpdate, "update.hlo");
  AssignLayouts(*module);
  Donations donations;
  donations.aliases = ParseInputOutputAlias(*module);
  SECTION("b may write over p while reading it") {
    donations.may_overwrite = [](const auto&, const auto&) { return true; };
    const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20, {}, {}, donations);
    // Output 0 (a) is written before b reads p: it cannot take p's buffer, so output 1 (b) does.
    CHECK(Leaf(buffers, *module, "a")->address != Leaf(buffers, *module, "p")->address);
    CHECK(Leaf(buffers, *module, "b")->address == Leaf(buffers, *module, "p")->address);
  }
  SECTION("b may not") {
    donations.may_overwrite = [](const auto&, const auto&) { return false; };
    const BufferAssignment buffers = AssignBuffers(Schedule(*module->entry()), 1 << 20, {}, {}, donations);
    CHECK(Leaf(buffers, *module, "b")->address != Leaf(buffers, *module, "p")->address);
    CHECK(Leaf(buffers, *module, "a")->address != Leaf(buffers, *module, "p")->address);
  }
}

TEST_CASE("input_output_alias errors name the attribute's place and what is wrong", "[compiler][buffers]") {
  const auto error_of = [](const std::string& alias) {
    auto module = tpusim::hlo::ParseModule("HloModule m, input_output_alias=" + alias + R"(
ENTRY e {
  p = f32[1024] parameter(0)
  ROOT r = f32[1024] negate(p)
}
)", "m.hlo");
    try {
      ParseInputOutputAlias(*module);
    } catch (const tpusim::Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of("{ {}: (3, {}, may-alias) }"), Catch::StartsWith("m.hlo:1:14: input_output_alias: the entry has no parameter 3"));
  CHECK_THAT(error_of("{ {0}: (0, {}, may-alias) }"), Catch::Contains("output {0} is not an array of the result f32[1024]"));
  CHECK_THAT(error_of("{ {}: (0, {}, sometimes) }"), Catch::Contains("unknown alias kind 'sometimes'"));
  CHECK_THAT(error_of("{ {}: (0 {}) }"), Catch::Contains("expected ','"));
  CHECK(error_of("{ {}: (0, {}, must-alias) }") == "no error");
}
