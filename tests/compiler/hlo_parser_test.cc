// The HLO grammar, one feature at a time, on small hand-written modules: what each parses to and
// how it prints back.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "compiler/hlo/literal_text.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "isa/error.h"

using namespace tpusim;
using namespace tpusim::hlo;

namespace {

std::unique_ptr<Module> Parse(std::string_view text) { return ParseModule(text, "test.hlo"); }

// Parses, prints, and checks that the print parses back to the same print.
std::string RoundTrip(std::string_view text) {
  const std::string printed = ToString(*Parse(text));
  INFO(printed);
  CHECK(ToString(*Parse(printed)) == printed);
  return printed;
}

const Instruction& Get(const Module& module, std::string_view name) {
  for (const auto& computation : module.computations()) {
    if (const Instruction* instruction = computation->FindInstruction(name)) return *instruction;
  }
  FAIL("no instruction " << name);
  throw;
}

// A one-computation module around `body` lines.
std::string Wrap(std::string_view body) { return "HloModule m\n\nENTRY e {\n" + std::string(body) + "\n}\n"; }

}  // namespace

TEST_CASE("module header attributes: typed and raw, in order", "[hlo]") {
  const char* kText =
      "HloModule m, is_scheduled=true, replica_count=2, num_partitions=4, "
      "entry_computation_layout={(f32[2]{0}, /*index=1*/s32[])->f32[2]{0}}, "
      "input_output_alias={ {0}: (0, {}, may-alias) }, buffer_donor={ (1, {}) }, "
      "frontend_attributes={attr=\"x\"}, allow_spmd_sharding_propagation_to_output={true}\n"
      "ENTRY e {\n  a = f32[2]{0} parameter(0)\n  b = s32[] parameter(1)\n  ROOT c = f32[2]{0} copy(a)\n}\n";
  const auto module = Parse(kText);
  CHECK(module->name() == "m");
  CHECK(module->is_scheduled());
  CHECK(module->replica_count() == 2);
  CHECK(module->num_partitions() == 4);
  const ProgramShape* layout = module->entry_computation_layout();
  REQUIRE(layout != nullptr);
  REQUIRE(layout->parameters.size() == 2);
  CHECK(isa::ToString(layout->parameters[1]) == "s32[]");
  CHECK(isa::ToString(layout->result) == "f32[2]{0}");
  REQUIRE(module->attributes().size() == 8);
  CHECK(module->attributes()[4].name == "input_output_alias");
  CHECK(std::get<RawText>(module->attributes()[4].value).text == "{ {0}: (0, {}, may-alias) }");
  CHECK(std::get<RawText>(module->attributes()[5].value).text == "{ (1, {}) }");
  CHECK(std::get<RawText>(module->attributes()[7].value).text == "{true}");
  CHECK(module->attributes()[3].location.line == 1);
  CHECK(module->attributes()[3].location.column == 68);
  CHECK(RoundTrip(kText) ==
        "HloModule m, is_scheduled=true, replica_count=2, num_partitions=4, "
        "entry_computation_layout={(f32[2]{0}, s32[])->f32[2]{0}}, "
        "input_output_alias={ {0}: (0, {}, may-alias) }, buffer_donor={ (1, {}) }, "
        "frontend_attributes={attr=\"x\"}, allow_spmd_sharding_propagation_to_output={true}\n\n"
        "ENTRY e (a: f32[2], b: s32[]) -> f32[2] {\n  a = f32[2]{0} parameter(0)\n  b = s32[] parameter(1)\n"
        "  ROOT c = f32[2]{0} copy(a)\n}\n");
}

TEST_CASE("module name with a trailing colon, defaults when attributes are absent", "[hlo]") {
  const auto module = Parse("HloModule convolution.167:\n\nENTRY %c {\n  ROOT %p = f32[] parameter(0)\n}\n");
  CHECK(module->name() == "convolution.167");
  CHECK(module->replica_count() == 1);
  CHECK(module->num_partitions() == 1);
  CHECK_FALSE(module->is_scheduled());
  CHECK(module->entry_computation_layout() == nullptr);
  CHECK(module->attributes().empty());
}

TEST_CASE("no header, no ENTRY, no ROOT: the defaults", "[hlo]") {
  const char* kText =
      "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  sum = f32[] add(x, y)\n}\n"
      "main {\n  a = f32[4] parameter(0)\n  zero = f32[] constant(0)\n"
      "  r = f32[] reduce(a, zero), dimensions={0}, to_apply=add\n  last = f32[] negate(r)\n}\n";
  const auto module = Parse(kText);
  CHECK(module->name() == "main");  // a module without a header is named after its entry
  CHECK(module->entry()->name() == "main");
  CHECK(module->entry()->root()->name() == "last");
  CHECK(module->FindComputation("add")->root()->name() == "sum");
  CHECK_FALSE(module->FindComputation("add")->is_entry());
  CHECK(RoundTrip(kText) ==
        "HloModule main\n\n"
        "add (x: f32[], y: f32[]) -> f32[] {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
        "  ROOT sum = f32[] add(x, y)\n}\n\n"
        "ENTRY main (a: f32[4]) -> f32[] {\n  a = f32[4] parameter(0)\n  zero = f32[] constant(0)\n"
        "  r = f32[] reduce(a, zero), dimensions={0}, to_apply=add\n  ROOT last = f32[] negate(r)\n}\n");
}

TEST_CASE("ENTRY need not be last, signatures, execution threads", "[hlo]") {
  const char* kText =
      "HloModule m\n"
      "ENTRY %main (p: (f32[], s32[2])) -> f32[] {\n  %p = (f32[], s32[2]{0}) parameter(0)\n"
      "  ROOT %g = f32[] get-tuple-element(%p), index=0\n}\n"
      "%side () -> f32[] {\n  ROOT %c = f32[] constant(1)\n}, execution_thread=\"host\"\n";
  const auto module = Parse(kText);
  CHECK(module->entry()->name() == "main");
  CHECK(module->computations().front()->is_entry());
  const Computation& side = *module->FindComputation("side");
  REQUIRE(side.execution_thread().has_value());
  CHECK(*side.execution_thread() == "host");
  CHECK(side.parameters().empty());
  CHECK(!module->entry()->execution_thread().has_value());
  CHECK(RoundTrip(kText) ==
        "HloModule m\n\n"
        "ENTRY main (p: (f32[], s32[2])) -> f32[] {\n  p = (f32[], s32[2]{0}) parameter(0)\n"
        "  ROOT g = f32[] get-tuple-element(p), index=0\n}\n\n"
        "side () -> f32[] {\n  ROOT c = f32[] constant(1)\n}, execution_thread=\"host\"\n");
}

TEST_CASE("names with and without %, operand shapes, comments", "[hlo]") {
  const char* kText =
      "// a leading comment\n"
      "HloModule m /* block */\n"
      "ENTRY %e {\n"
      "  %a.1 = f32[2,3]{1,0} parameter(0) // trailing\n"
      "  b-2 = f32[2,3]{1,0} parameter(1)\n"
      "  %t = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, "
      "/*index=5*/f32[2,3]{1,0}) tuple(f32[2,3]{1,0} %a.1, b-2, %a.1, /* x */ %a.1, a.1, /*index=5*/b-2)\n"
      "  ROOT %r = f32[2,3] add(f32[2,3] %a.1, f32[2,3]{0,1} b-2)\n"
      "}\n";
  const auto module = Parse(kText);
  const Instruction& t = Get(*module, "t");
  REQUIRE(t.operand_count() == 6);
  CHECK(t.operand(5)->name() == "b-2");
  CHECK(t.shape().tuple_shapes.size() == 6);
  CHECK(Get(*module, "r").operand(1)->name() == "b-2");
  const std::string printed = RoundTrip(kText);
  CHECK(printed.find("  t = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, "
                     "f32[2,3]{1,0}) tuple(a.1, b-2, a.1, a.1, a.1, b-2)\n") != std::string::npos);
  CHECK(printed.find("  ROOT r = f32[2,3] add(a.1, b-2)\n") != std::string::npos);
}

TEST_CASE("names that need % to read back keep it", "[hlo]") {
  const char* kText = "HloModule m\nENTRY %ENTRY {\n  %ROOT = f32[] parameter(0)\n  %1x = f32[] negate(%ROOT)\n}\n";
  const auto module = Parse(kText);
  CHECK(module->entry()->name() == "ENTRY");
  CHECK(module->entry()->root()->name() == "1x");
  CHECK(RoundTrip(kText) ==
        "HloModule m\n\nENTRY %ENTRY (%ROOT: f32[]) -> f32[] {\n  %ROOT = f32[] parameter(0)\n"
        "  ROOT %1x = f32[] negate(%ROOT)\n}\n");
}

TEST_CASE("windows: every part, defaults, negative padding", "[hlo]") {
  const auto module = Parse(Wrap(
      "  a = f32[1,8,8,1] parameter(0)\n  init = f32[] constant(0)\n"
      "  r = f32[1,4,4,1] reduce-window(a, init), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x-1_2x0_0 "
      "lhs_dilate=1x1x2x1 rhs_dilate=1x2x1x1 rhs_reversal=0x1x0x0}, to_apply=add\n"
      "  s = f32[1,8,8,1] reduce-window(a, init), window={size=1x2x2x1}, to_apply=add\n"
      "  t = f32[] reduce-window(init, init), window={}, to_apply=add") +
      "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n");
  const Window& w = Get(*module, "r").GetWindow();
  REQUIRE(w.dimensions.size() == 4);
  CHECK(w.dimensions[1] == WindowDimension{3, 2, 1, 1, 1, 2, true});
  CHECK(w.dimensions[2] == WindowDimension{3, 2, -1, 2, 2, 1, false});
  CHECK(w.dimensions[3] == WindowDimension{1, 1, 0, 0, 1, 1, false});
  CHECK(ToString(w) == "{size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x-1_2x0_0 lhs_dilate=1x1x2x1 rhs_dilate=1x2x1x1 "
                       "rhs_reversal=0x1x0x0}");
  CHECK(ToString(Get(*module, "s").GetWindow()) == "{size=1x2x2x1}");
  CHECK(Get(*module, "t").GetWindow().dimensions.empty());
  CHECK(ToString(Get(*module, "t").GetWindow()) == "{}");
  RoundTrip(ToString(*module));
}

TEST_CASE("dim_labels: 2-D, 3-D, 1-D, 0-D and unlabelled dimensions", "[hlo]") {
  const auto module = Parse(Wrap(
      "  a = f32[1,2,3,4,5] parameter(0)\n  k = f32[1,2,3,4,5] parameter(1)\n"
      "  c3 = f32[1,2,3,4,5] convolution(a, k), window={size=1x1x1}, dim_labels=b012f_012io->b012f\n"
      "  c1 = f32[1,2,3,4,5] convolution(a, k), window={size=1}, dim_labels=bf0_oi0->0bf\n"
      "  c0 = f32[1,2,3,4,5] convolution(a, k), dim_labels=fb_io->bf\n"
      "  cq = f32[1,2,3,4,5] convolution(a, k), window={size=1x1}, dim_labels=b0?f_01io->b?1f"));
  const ConvolutionDimensionNumbers& three = Get(*module, "c3").GetConvolutionDimensionNumbers();
  CHECK(three.input_spatial_dimensions == std::vector<int64_t>{1, 2, 3});
  CHECK(three.input_feature_dimension == 4);
  CHECK(three.kernel_input_feature_dimension == 3);
  CHECK(three.kernel_output_feature_dimension == 4);
  const ConvolutionDimensionNumbers& one = Get(*module, "c1").GetConvolutionDimensionNumbers();
  CHECK(one.input_batch_dimension == 0);
  CHECK(one.input_spatial_dimensions == std::vector<int64_t>{2});
  CHECK(one.kernel_output_feature_dimension == 0);
  CHECK(one.output_spatial_dimensions == std::vector<int64_t>{0});
  CHECK(one.output_batch_dimension == 1);
  const ConvolutionDimensionNumbers& zero = Get(*module, "c0").GetConvolutionDimensionNumbers();
  CHECK(zero.input_batch_dimension == 1);
  CHECK(zero.input_feature_dimension == 0);
  CHECK(zero.input_spatial_dimensions.empty());
  const ConvolutionDimensionNumbers& unknown = Get(*module, "cq").GetConvolutionDimensionNumbers();
  CHECK(unknown.input_spatial_dimensions == std::vector<int64_t>{1, -1});
  CHECK(unknown.output_spatial_dimensions == std::vector<int64_t>{-1, 2});
  CHECK(ToString(three) == "b012f_012io->b012f");
  CHECK(ToString(one) == "bf0_oi0->0bf");
  CHECK(ToString(zero) == "fb_io->bf");
  CHECK(ToString(unknown) == "b0?f_01io->b?1f");
  RoundTrip(ToString(*module));
}

TEST_CASE("slice, padding, dynamic slice sizes", "[hlo]") {
  const auto module = Parse(Wrap(
      "  a = f32[8,128] parameter(0)\n  z = f32[] constant(0)\n"
      "  s = f32[8,64] slice(a), slice={[0:8], [0:128:2]}\n"
      "  p = f32[9,133] pad(a, z), padding=0_1x-1_2_2\n"
      "  i = s32[] constant(0)\n"
      "  d = f32[4,128] dynamic-slice(a, i, i), dynamic_slice_sizes={4,128}"));
  const auto& slice = Get(*module, "s").GetSlice();
  REQUIRE(slice.size() == 2);
  CHECK(slice[1] == SliceDimension{0, 128, 2});
  CHECK(ToString(slice) == "{[0:8], [0:128:2]}");
  const PaddingConfig& padding = Get(*module, "p").GetPaddingConfig();
  REQUIRE(padding.dimensions.size() == 2);
  CHECK(padding.dimensions[0] == PaddingDimension{0, 1, 0});
  CHECK(padding.dimensions[1] == PaddingDimension{-1, 2, 2});
  CHECK(ToString(padding) == "0_1x-1_2_2");
  CHECK(Get(*module, "d").GetIntList("dynamic_slice_sizes") == std::vector<int64_t>{4, 128});
  RoundTrip(ToString(*module));
}

TEST_CASE("replica groups: explicit, empty, iota, transposed iota, source-target pairs", "[hlo]") {
  const auto module = Parse(Wrap(
      "  a = f32[8] parameter(0)\n"
      "  g1 = f32[8] all-reduce(a), replica_groups={{0,1},{2,3}}, to_apply=add\n"
      "  g2 = f32[8] all-reduce(a), replica_groups={}, to_apply=add\n"
      "  g3 = f32[16] all-gather(a), replica_groups=[2,2]<=[4], dimensions={0}\n"
      "  g4 = f32[16] all-gather(a), replica_groups=[2,2]<=[2,2]T(1,0), dimensions={0}\n"
      "  g5 = f32[8] all-to-all(a), replica_groups=[2,4]<=[2,2,2]T(2,0,1), dimensions={0}\n"
      "  cp = f32[8] collective-permute(a), source_target_pairs={{0,1},{1,2},{2,0}}, channel_id=3") +
      "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n");
  using Groups = std::vector<std::vector<int64_t>>;
  CHECK(Get(*module, "g1").GetReplicaGroups().groups == Groups{{0, 1}, {2, 3}});
  CHECK_FALSE(Get(*module, "g1").GetReplicaGroups().iota.has_value());
  CHECK(Get(*module, "g2").GetReplicaGroups().groups.empty());
  CHECK(Get(*module, "g3").GetReplicaGroups().groups == Groups{{0, 1}, {2, 3}});
  CHECK(Get(*module, "g4").GetReplicaGroups().groups == Groups{{0, 2}, {1, 3}});
  // iota(8) as [2,2,2], transposed (2,0,1): element (i,j,k) = 4j + 2k + i.
  CHECK(Get(*module, "g5").GetReplicaGroups().groups == Groups{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(ToString(Get(*module, "g1").GetReplicaGroups()) == "{{0,1},{2,3}}");
  CHECK(ToString(Get(*module, "g2").GetReplicaGroups()) == "{}");
  CHECK(ToString(Get(*module, "g4").GetReplicaGroups()) == "[2,2]<=[2,2]T(1,0)");
  const auto& pairs = Get(*module, "cp").GetSourceTargetPairs();
  REQUIRE(pairs.size() == 3);
  CHECK(pairs[2] == SourceTargetPair{2, 0});
  CHECK(ToString(pairs) == "{{0,1},{1,2},{2,0}}");
  CHECK(Get(*module, "cp").GetInt("channel_id") == 3);
  RoundTrip(ToString(*module));
}

TEST_CASE("compare, dot precision, custom-call, backend_config forms, raw attributes", "[hlo]") {
  const std::string text = Wrap(
      "  a = f32[2,2] parameter(0)\n"
      "  c = pred[2,2] compare(a, a), direction=LT, type=TOTALORDER\n"
      "  d = f32[2,2] dot(a, a), lhs_batch_dims={}, lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
      "operand_precision={default,highest}\n"
      "  cc = f32[2,2] custom-call(a), custom_call_target=\"my\\\"target\", api_version=API_VERSION_STATUS_RETURNING, "
      "backend_config=\"{\\\"k\\\": 1}\", output_to_operand_aliasing={{}: (0, {})}, "
      "custom_call_has_side_effect=true\n"
      "  cj = f32[2,2] custom-call(a), custom_call_target=\"json\", backend_config={\"k\": {\"n\": [1, 2]}}, "
      "metadata={op_type=\"Foo\" op_name=\"a/b{c}\" source_file=\"x.py\" source_line=12}, "
      "frontend_attributes={_xla_compute_type=\"host\"}, sharding={devices=[2,1]0,1}\n"
      "  r = f32[2,2] copy(a), sharding={replicated}, some_future_attribute=[1,2]<=[2]T(0)\n"
      "  ROOT t = (f32[2,2], f32[2,2]) tuple(r, cj), sharding={{replicated}, {maximal device=0}}, "
      "control-predecessors={cc, d}");
  const auto module = Parse(text);
  CHECK(Get(*module, "c").GetIdentifier("direction") == "LT");
  CHECK(Get(*module, "c").GetIdentifier("type") == "TOTALORDER");
  const Instruction& d = Get(*module, "d");
  CHECK(d.Find<IdentifierList>("operand_precision")->items == std::vector<std::string>{"default", "highest"});
  CHECK(d.GetIntList("lhs_batch_dims").empty());
  const Instruction& cc = Get(*module, "cc");
  CHECK(cc.GetString("custom_call_target") == "my\"target");
  CHECK(cc.GetIdentifier("api_version") == "API_VERSION_STATUS_RETURNING");
  CHECK(cc.GetString("backend_config") == "{\"k\": 1}");
  CHECK(cc.GetRawText("output_to_operand_aliasing") == "{{}: (0, {})}");
  CHECK(cc.GetBool("custom_call_has_side_effect"));
  const Instruction& cj = Get(*module, "cj");
  CHECK(cj.GetRawText("backend_config") == "{\"k\": {\"n\": [1, 2]}}");
  CHECK(cj.GetRawText("metadata") == "{op_type=\"Foo\" op_name=\"a/b{c}\" source_file=\"x.py\" source_line=12}");
  CHECK(cj.GetRawText("frontend_attributes") == "{_xla_compute_type=\"host\"}");
  CHECK(cj.GetRawText("sharding") == "{devices=[2,1]0,1}");
  CHECK(Get(*module, "r").GetRawText("some_future_attribute") == "[1,2]<=[2]T(0)");
  const Instruction& t = Get(*module, "t");
  CHECK(t.GetRawText("sharding") == "{{replicated}, {maximal device=0}}");
  const auto predecessors = t.control_predecessors();
  REQUIRE(predecessors.size() == 2);
  CHECK(predecessors[0] == &cc);
  CHECK(predecessors[1] == &d);
  // Attributes keep their order and locations.
  REQUIRE(cj.attributes().size() == 5);
  CHECK(cj.attributes()[2].name == "metadata");
  CHECK(cj.attributes()[2].location.line == 8);
  const std::string printed = RoundTrip(text);
  CHECK(printed.find("custom_call_target=\"my\\\"target\"") != std::string::npos);
  CHECK(printed.find("control-predecessors={cc, d}") != std::string::npos);
  CHECK(printed.find("operand_precision={default,highest}") != std::string::npos);
}

TEST_CASE("computation references: every attribute form, forward references", "[hlo]") {
  const char* kText =
      "HloModule m\n"
      "ENTRY main {\n"
      "  p = f32[4] parameter(0)\n  i = s32[] parameter(1)\n  b = pred[] parameter(2)\n"
      "  f = f32[4] fusion(p), kind=kLoop, calls=fused\n"
      "  c = f32[4] call(p), to_apply=fused\n"
      "  w = f32[4] while(p), condition=%cond, body=%fused\n"
      "  k1 = f32[4] conditional(b, p, p), true_computation=fused, false_computation=fused\n"
      "  k2 = f32[4] conditional(i, p, p), branch_computations={fused, %fused}\n"
      "  z = f32[] constant(0)\n"
      "  s = f32[4] select-and-scatter(p, p, z), window={size=1}, select=ge, scatter=add\n"
      "  m = f32[4] map(p, p), dimensions={0}, to_apply=add\n"
      "  ROOT cc = f32[4] custom-call(p), custom_call_target=\"x\", called_computations={fused}\n"
      "}\n"
      "fused {\n  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n"
      "cond {\n  x = f32[4] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n"
      "ge {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT g = pred[] compare(x, y), direction=GE\n}\n"
      "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n";
  const auto module = Parse(kText);
  const Computation* fused = module->FindComputation("fused");
  CHECK(module->entry()->name() == "main");
  CHECK(Get(*module, "f").GetComputation("calls") == fused);
  CHECK(Get(*module, "f").GetIdentifier("kind") == "kLoop");
  CHECK(Get(*module, "c").GetComputation("to_apply") == fused);
  CHECK(Get(*module, "w").GetComputation("condition") == module->FindComputation("cond"));
  CHECK(Get(*module, "k1").GetComputation("true_computation") == fused);
  CHECK(Get(*module, "k2").GetComputations("branch_computations") == std::vector<Computation*>{
                                                                        const_cast<Computation*>(fused),
                                                                        const_cast<Computation*>(fused)});
  CHECK(Get(*module, "s").GetComputation("select")->name() == "ge");
  CHECK(Get(*module, "s").GetComputation("scatter")->name() == "add");
  CHECK(Get(*module, "cc").GetComputations("called_computations").size() == 1);
  CHECK(module->entry()->CalledComputations().size() == 4);
  RoundTrip(kText);
}

TEST_CASE("async operations: named starts and dones, async-start with calls, shorthand", "[hlo]") {
  const char* kText =
      "HloModule m\n"
      "wrapped {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x)\n}\n"
      "ENTRY e {\n"
      "  p = f32[4] parameter(0)\n"
      "  ags = (f32[4], f32[8]) all-gather-start(p), replica_groups={{0,1}}, dimensions={0}\n"
      "  agd = f32[8] all-gather-done(ags)\n"
      "  cs = (f32[4], f32[4], u32[]) copy-start(p), cross_program_prefetch_index=0\n"
      "  cd = f32[4] copy-done(cs)\n"
      "  as = ((f32[4]), f32[4], s32[]) async-start(p), calls=wrapped, async_execution_thread=\"main\"\n"
      "  au = ((f32[4]), f32[4], s32[]) async-update(as)\n"
      "  ad = f32[4] async-done(au)\n"
      "  fs = ((f32[4]), f32[4], s32[]) fusion-start(p), kind=kLoop, calls=wrapped\n"
      "  fd = f32[4] fusion-done(fs)\n"
      "  rs = ((f32[4]), f32[2], s32[]) reduce-scatter-start(p), replica_groups={{0,1}}, dimensions={0}, to_apply=wrapped\n"
      "  ROOT t = (f32[8], f32[4], f32[4], f32[4]) tuple(agd, cd, ad, fd)\n"
      "}\n";
  const auto module = Parse(kText);
  CHECK(Get(*module, "ags").opcode() == Opcode::kAllGatherStart);
  CHECK(Get(*module, "agd").opcode() == Opcode::kAllGatherDone);
  CHECK(Get(*module, "cs").opcode() == Opcode::kCopyStart);
  CHECK(Get(*module, "cs").GetInt("cross_program_prefetch_index") == 0);
  CHECK(Get(*module, "cd").opcode() == Opcode::kCopyDone);
  CHECK(Get(*module, "as").opcode() == Opcode::kAsyncStart);
  CHECK_FALSE(Get(*module, "as").async_wrapped_opcode().has_value());
  CHECK(Get(*module, "as").GetComputation("calls")->name() == "wrapped");
  CHECK(Get(*module, "as").GetString("async_execution_thread") == "main");
  CHECK(Get(*module, "au").opcode() == Opcode::kAsyncUpdate);
  CHECK(Get(*module, "ad").opcode() == Opcode::kAsyncDone);
  CHECK(Get(*module, "fs").opcode() == Opcode::kAsyncStart);
  CHECK(Get(*module, "fs").async_wrapped_opcode() == Opcode::kFusion);
  CHECK(Get(*module, "fd").opcode() == Opcode::kAsyncDone);
  CHECK(Get(*module, "fd").async_wrapped_opcode() == Opcode::kFusion);
  CHECK(Get(*module, "rs").async_wrapped_opcode() == Opcode::kReduceScatter);
  const std::string printed = RoundTrip(kText);
  CHECK(printed.find(" fusion-start(p), kind=kLoop, calls=wrapped\n") != std::string::npos);
  CHECK(printed.find(" reduce-scatter-start(p)") != std::string::npos);
  CHECK(printed.find(" all-gather-done(ags)\n") != std::string::npos);
}

TEST_CASE("the remaining typed attributes", "[hlo]") {
  const auto module = Parse(Wrap(
      "  a = f32[2,3] parameter(0)\n"
      "  io = s32[2,3] iota(), iota_dimension=1\n"
      "  rp = f32[2,3] reduce-precision(a), exponent_bits=5, mantissa_bits=10\n"
      "  bn = (f32[2,3], f32[3], f32[3]) batch-norm-training(a, a, a), epsilon=0.001, feature_index=1\n"
      "  rg = f32[2,3] rng(a, a), distribution=rng_uniform\n"
      "  ts = f32[2,3] triangular-solve(a, a), left_side=true, lower=false, unit_diagonal=true, transpose_a=NO_TRANSPOSE\n"
      "  ff = c64[2,3] fft(a), fft_type=FFT, fft_length={3}\n"
      "  sr = f32[2,3] sort(a), dimensions={1}, is_stable=false, to_apply=lt\n"
      "  ga = f32[2,3] gather(a, io), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
      "index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=true\n"
      "  sc = f32[2,3] scatter(a, io, a), update_window_dims={1}, inserted_window_dims={0}, "
      "scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=lt\n"
      "  ar = f32[2,3] all-reduce(a), replica_groups={}, constrain_layout=true, to_apply=lt") +
      "lt {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT c = pred[] compare(x, y), direction=LT\n}\n");
  CHECK(Get(*module, "io").GetInt("iota_dimension") == 1);
  CHECK(Get(*module, "rp").GetInt("mantissa_bits") == 10);
  CHECK(Get(*module, "bn").GetDouble("epsilon") == 0.001);
  CHECK(Get(*module, "bn").GetInt("feature_index") == 1);
  CHECK(Get(*module, "rg").GetIdentifier("distribution") == "rng_uniform");
  CHECK(Get(*module, "ts").GetBool("left_side"));
  CHECK_FALSE(Get(*module, "ts").GetBool("lower"));
  CHECK(Get(*module, "ts").GetIdentifier("transpose_a") == "NO_TRANSPOSE");
  CHECK(Get(*module, "ff").GetIntList("fft_length") == std::vector<int64_t>{3});
  CHECK_FALSE(Get(*module, "sr").GetBool("is_stable"));
  CHECK(Get(*module, "sr").GetBool("missing", true));
  CHECK(Get(*module, "ga").GetBool("indices_are_sorted"));
  CHECK(Get(*module, "sc").GetIntList("update_window_dims") == std::vector<int64_t>{1});
  CHECK(Get(*module, "sc").GetBool("unique_indices"));
  CHECK(Get(*module, "ar").GetBool("constrain_layout"));
  const std::string printed = RoundTrip(ToString(*module));
  CHECK(printed.find("epsilon=0.001, feature_index=1") != std::string::npos);
}

TEST_CASE("typed accessors report what is missing or mistyped, and where", "[hlo]") {
  const auto module = ParseModule(Wrap("  a = f32[2] parameter(0)\n  ROOT g = f32[2] copy(a), index=3"), "acc.hlo");
  const Instruction& g = Get(*module, "g");
  CHECK(g.GetInt("index") == 3);
  CHECK(g.GetInt("missing", 7) == 7);
  CHECK(g.Find<bool>("index") == nullptr);
  CHECK_THROWS_WITH(g.GetInt("k"), "acc.hlo:5:8: instruction 'g' has no attribute 'k'");
  CHECK_THROWS_WITH(g.GetBool("index"), "acc.hlo:5:8: instruction 'g': attribute 'index' is not a boolean");
  CHECK_THROWS_WITH(g.GetComputation("index"), "acc.hlo:5:8: instruction 'g': attribute 'index' is not a computation");
  CHECK(g.Describe() == "acc.hlo:5:8: instruction 'g'");
}

TEST_CASE("constants: scalars, arrays, specials, tuples, elided, text-only types", "[hlo]") {
  const char* kText =
      "HloModule m\nENTRY e {\n"
      "  f = f32[] constant(0.125)\n"
      "  ni = bf16[] constant(-inf)\n"
      "  pi = f16[] constant(inf)\n"
      "  na = f32[] constant(nan)\n"
      "  nn = f32[] constant(-nan)\n"
      "  t = pred[] constant(true)\n"
      "  fa = pred[2] constant({false, true})\n"
      "  v = s32[3] constant({1, -2, 3})\n"
      "  m = f32[2,2]{1,0} constant({ { 1, 2 }, { 3.5, -4e-3 } })\n"
      "  e = f32[0] constant({})\n"
      "  e2 = f32[2,0] constant({ {}, {} })\n"
      "  u = u64[] constant(18446744073709551615)\n"
      "  s = s8[2] constant({-128, 127})\n"
      "  big = s64[] constant(-9223372036854775808)\n"
      "  tu = (f32[2], s32[]) constant(({1, 2}, 3))\n"
      "  ts = (f32[2], s32[]) constant((f32[2] {1, 2}, s32[] 3))\n"
      "  el = f32[1000,1000] constant({...})\n"
      "  cx = c64[2] constant({(1, 2), (3, 4)})\n"
      "  s4 = s4[3] constant({1, -1, 7})\n"
      "  f8 = f8e4m3fn[2] constant({0.5, 448})\n"
      "  ROOT r = f32[] constant(1e+30)\n"
      "}\n";
  const auto module = Parse(kText);
  CHECK(Get(*module, "f").literal()->GetDouble(0) == 0.125);
  CHECK(Get(*module, "ni").literal()->GetDouble(0) == -INFINITY);
  CHECK(Get(*module, "pi").literal()->GetDouble(0) == INFINITY);
  CHECK(std::isnan(Get(*module, "na").literal()->GetDouble(0)));
  CHECK(std::signbit(Get(*module, "nn").literal()->GetDouble(0)));
  CHECK(Get(*module, "t").literal()->GetInt(0) == 1);
  CHECK(Get(*module, "fa").literal()->GetInt(1) == 1);
  CHECK(Get(*module, "v").literal()->GetInt(1) == -2);
  CHECK(Get(*module, "m").literal()->GetDouble(3) == static_cast<double>(-4e-3f));
  CHECK(Get(*module, "e").literal()->element_count() == 0);
  CHECK(Get(*module, "u").literal()->bytes()[7] == 0xff);
  CHECK(Get(*module, "s").literal()->GetInt(0) == -128);
  CHECK(Get(*module, "big").literal()->GetInt(0) == INT64_MIN);
  const Literal& tuple = *Get(*module, "tu").literal();
  REQUIRE(tuple.is_tuple());
  CHECK(tuple.elements()[1].GetInt(0) == 3);
  CHECK(*Get(*module, "ts").literal() == tuple);
  CHECK(Get(*module, "el").constant_form() == ConstantForm::kElided);
  CHECK(Get(*module, "el").literal() == nullptr);
  CHECK(Get(*module, "cx").constant_form() == ConstantForm::kText);
  CHECK(Get(*module, "cx").literal_text() == "{(1, 2), (3, 4)}");
  CHECK(Get(*module, "s4").constant_form() == ConstantForm::kText);
  CHECK(Get(*module, "f8").literal()->GetDouble(1) == 448);
  CHECK(Get(*module, "r").literal()->GetDouble(0) == static_cast<double>(1e30f));
  CHECK(RoundTrip(kText) ==
        "HloModule m\n\nENTRY e () -> f32[] {\n"
        "  f = f32[] constant(0.125)\n"
        "  ni = bf16[] constant(-inf)\n"
        "  pi = f16[] constant(inf)\n"
        "  na = f32[] constant(nan)\n"
        "  nn = f32[] constant(-nan)\n"
        "  t = pred[] constant(true)\n"
        "  fa = pred[2] constant({false, true})\n"
        "  v = s32[3] constant({1, -2, 3})\n"
        "  m = f32[2,2]{1,0} constant({ {1, 2}, {3.5, -0.004} })\n"
        "  e = f32[0] constant({})\n"
        "  e2 = f32[2,0] constant({ {}, {} })\n"
        "  u = u64[] constant(18446744073709551615)\n"
        "  s = s8[2] constant({-128, 127})\n"
        "  big = s64[] constant(-9223372036854775808)\n"
        "  tu = (f32[2], s32[]) constant(({1, 2}, 3))\n"
        "  ts = (f32[2], s32[]) constant(({1, 2}, 3))\n"
        "  el = f32[1000,1000] constant({...})\n"
        "  cx = c64[2] constant({(1, 2), (3, 4)})\n"
        "  s4 = s4[3] constant({1, -1, 7})\n"
        "  f8 = f8e4m3fn[2] constant({0.5, 448})\n"
        "  ROOT r = f32[] constant(1e+30)\n"
        "}\n");
}

TEST_CASE("float constants print with the fewest digits that read back", "[hlo]") {
  struct Case {
    isa::ElementType type;
    const char* text;
    const char* printed;
  };
  const Case kCases[] = {
      {isa::ElementType::kBF16, "0.01001", "0.01"},  // the same bf16 as 0.01
      {isa::ElementType::kBF16, "3.14159274", "3.14"},
      {isa::ElementType::kBF16, "-2.38197633e+38", "-2.38e+38"},
      {isa::ElementType::kF32, "3.14159274", "3.1415927"},
      {isa::ElementType::kF32, "0.1", "0.1"},
      {isa::ElementType::kF32, "10000", "10000"},
      {isa::ElementType::kF32, "-0", "-0"},
      {isa::ElementType::kF32, "1e-45", "1e-45"},
      {isa::ElementType::kF16, "65504", "65504"},
      {isa::ElementType::kF64, "0.1", "0.1"},
      {isa::ElementType::kF64, "1e-300", "1e-300"},
  };
  for (const Case& c : kCases) {
    INFO(c.text);
    const Literal literal = ParseLiteralText(c.text, isa::Shape::Array(c.type, {}));
    const std::string printed = LiteralToText(literal);
    CHECK(printed == c.printed);
    CHECK(ParseLiteralText(printed, isa::Shape::Array(c.type, {})) == literal);
  }
}

TEST_CASE("every opcode name reads back", "[hlo]") {
  for (int i = 0; i < kOpcodeCount; ++i) {
    const auto opcode = static_cast<Opcode>(i);
    INFO(OpcodeName(opcode));
    CHECK(ParseOpcode(OpcodeName(opcode)) == opcode);
  }
  CHECK(OpcodeName(Opcode::kGetTupleElement) == "get-tuple-element");
  CHECK(OpcodeName(Opcode::kOptimizationBarrier) == "opt-barrier");
  CHECK_FALSE(ParseOpcode("no-such-op").has_value());
  CHECK_FALSE(ParseAsyncOpcode("all-gather-start").has_value());  // an opcode of its own
  CHECK(ParseAsyncOpcode("custom-call-update")->async == Opcode::kAsyncUpdate);
  CHECK_FALSE(ParseAsyncOpcode("async-start-done").has_value());
  CHECK_FALSE(ParseAsyncOpcode("-start").has_value());
}

TEST_CASE("a broadcast of a scalar may leave out its dimensions, as XLA's parser infers {}", "[hlo]") {
  // XLA's parser makes `dimensions` optional when the operand is a scalar; for an array operand it
  // stays required (the error names the instruction and its place).
  const auto module = Parse(Wrap("  c = f32[] constant(2)\n  ROOT b = f32[4,8] broadcast(c)"));
  CHECK(Get(*module, "b").GetIntList("dimensions").empty());
  CHECK_THAT(RoundTrip(Wrap("  c = f32[] constant(2)\n  ROOT b = f32[4,8] broadcast(c)")),
             Catch::Contains("ROOT b = f32[4,8] broadcast(c), dimensions={}"));
  const auto array = Parse(Wrap("  p = f32[2] parameter(0)\n  ROOT b = f32[4,2] broadcast(p)"));
  CHECK_THROWS_WITH(Get(*array, "b").GetIntList("dimensions"), "test.hlo:5:8: instruction 'b' has no attribute 'dimensions'");
}
