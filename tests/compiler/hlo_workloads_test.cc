// Acceptance: every XLA module in shared/workloads/xla parses, prints as a fixed point, and has
// the structure its text says (counts and values read off the files).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "isa/error.h"
#include "tests/fuzz/hlo_module_diff.h"

using namespace tpusim;
using namespace tpusim::hlo;

namespace {

const std::string kWorkloads = TPUSIM_SHARED_DIR "/workloads/xla/";

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  REQUIRE(file.good());
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

std::unique_ptr<Module> Load(const std::string& name) {
  return ParseModule(ReadFile(kWorkloads + name), name);
}

std::size_t InstructionCount(const Module& module) {
  std::size_t count = 0;
  for (const auto& computation : module.computations()) count += computation->instruction_count();
  return count;
}

const Instruction& Find(const Module& module, std::string_view computation, std::string_view name) {
  const Computation* c = module.FindComputation(computation);
  REQUIRE(c != nullptr);
  const Instruction* instruction = c->FindInstruction(name);
  REQUIRE(instruction != nullptr);
  return *instruction;
}

std::size_t IndexOf(const Computation& computation, const Instruction* instruction) {
  const auto& all = computation.instructions();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].get() == instruction) return i;
  }
  return all.size();
}

}  // namespace

TEST_CASE("every workload parses and prints as a fixed point", "[hlo]") {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kWorkloads)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 18);
  for (const std::string& file : files) {
    INFO(file);
    std::unique_ptr<Module> module;
    REQUIRE_NOTHROW(module = Load(file));
    const std::string printed = ToString(*module);
    std::unique_ptr<Module> reparsed;
    REQUIRE_NOTHROW(reparsed = ParseModule(printed, file + " (printed)"));
    CHECK(ToString(*reparsed) == printed);
    CHECK(testing::DiffModules(*module, *reparsed) == "");  // the print holds all the module
    CHECK(reparsed->computations().size() == module->computations().size());
    CHECK(InstructionCount(*reparsed) == InstructionCount(*module));
  }
}

TEST_CASE("workload structure: counts, entries, roots", "[hlo]") {
  struct Expected {
    const char* file;
    const char* module_name;
    std::size_t computations;
    std::size_t instructions;
    const char* entry;
    std::size_t entry_parameters;
    const char* root;
  };
  // Counted in the files: computations are the lines that open a body, instructions the lines
  // `name = ...`, parameters the entry's `parameter(` lines.
  const Expected kExpected[] = {
      {"argsort_axis_1024x512_bf16.hlo", "jit_argsort_axis", 5, 50, "main.5", 1, "jit_take_along_axis_.1"},
      {"depthwise_conv_3x3_1x256x56x56_bf16.hlo", "jit_depthwise_conv_3x3", 1, 4, "main.1", 1, "conv_general_dilated.1"},
      {"dot_bf16_0.hlo", "module", 1, 4, "computation1", 2, "out"},
      {"dot_bf16_1.hlo", "module2", 1, 4, "computation1", 2, "out"},
      {"dynamic_slice_loop_1x2048x768_bf16.hlo", "jit_dynamic_slice_loop", 1, 453, "main.1", 2, "stack.129"},
      {"fp8_gemm_loop.hlo", "test", 4, 31, "main", 3, "red"},
      {"fully_connected_reference_model.hlo", "tfcompile.48", 1, 32, "tfcompile.48", 2, "tuple.47"},
      {"gemma3_1b_flax_call.hlo", "jit___call__", 403, 9738, "main.10141", 367, "tuple.10140"},
      {"isolated_convolution.hlo", "convolution.167", 1, 3, "convolution.167", 2, "convolution.167"},
      {"layer_norm_1x4096x768_bf16.hlo", "jit_layer_norm", 3, 37, "main.3", 1, "div.11"},
      {"llama3_8b_bf16_activation_offloading_1x8.hlo", "jit_train_step", 125, 1729, "main.75_spmd", 44, "tuple.19"},
      {"maxtext_train_step_before_optimization.hlo", "jit_train_step", 87, 1947, "main.2034", 38, "tuple.2033"},
      {"mean_axis_1x4096x1024_bf16.hlo", "jit_mean_axis", 2, 11, "main.2", 1, "convert_element_type.3"},
      {"mha_block_1x12x128x64_bf16.hlo", "jit_f", 3, 41, "main.3", 3, "broadcast_in_dim.7"},
      {"sort_full_1024x4096_bf16.hlo", "jit_sort_full", 3, 17, "main.3", 1, "jit_sort_.1"},
      {"sum_axis_1x4096x1024_bf16.hlo", "jit_sum_axis", 2, 8, "main.2", 1, "convert_element_type.3"},
      {"topk_logits_k10_1x50000_bf16.hlo", "jit_topk_k10", 1, 4, "main.1", 1, "top_k.4"},
      {"while.hlo", "foo", 3, 6, "foo", 1, "while.2"},
  };
  for (const Expected& e : kExpected) {
    INFO(e.file);
    const auto module = Load(e.file);
    CHECK(module->name() == e.module_name);
    CHECK(module->computations().size() == e.computations);
    CHECK(InstructionCount(*module) == e.instructions);
    REQUIRE(module->entry() != nullptr);
    CHECK(module->entry()->name() == e.entry);
    CHECK(module->entry()->is_entry());
    CHECK(module->entry()->parameters().size() == e.entry_parameters);
    CHECK(module->entry()->root()->name() == e.root);
    for (std::size_t i = 0; i < module->entry()->parameters().size(); ++i) {
      CHECK(module->entry()->parameters()[i]->parameter_number() == static_cast<int64_t>(i));
    }
  }
}

TEST_CASE("isolated_convolution: window, dim_labels, operand shapes", "[hlo]") {
  const auto module = Load("isolated_convolution.hlo");
  const Instruction& conv = Find(*module, "convolution.167", "convolution.167");
  CHECK(conv.opcode() == Opcode::kConvolution);
  CHECK(conv.is_root());
  CHECK(isa::ToString(conv.shape()) == "f32[16,28,28,128]{3,0,2,1}");
  REQUIRE(conv.operand_count() == 2);
  CHECK(conv.operand(0)->name() == "parameter.0");
  CHECK(conv.operand(1)->name() == "parameter.1");
  const Window& window = conv.GetWindow();
  REQUIRE(window.dimensions.size() == 2);
  for (const WindowDimension& d : window.dimensions) {
    CHECK(d.size == 3);
    CHECK(d.stride == 1);
    CHECK(d.padding_low == 1);
    CHECK(d.padding_high == 1);
    CHECK(d.lhs_dilation == 1);
    CHECK(d.rhs_dilation == 1);
    CHECK_FALSE(d.reversal);
  }
  CHECK(ToString(window) == "{size=3x3 pad=1_1x1_1}");
  const ConvolutionDimensionNumbers& dnums = conv.GetConvolutionDimensionNumbers();  // b01f_01oi->b01f
  CHECK(dnums.input_batch_dimension == 0);
  CHECK(dnums.input_feature_dimension == 3);
  CHECK(dnums.input_spatial_dimensions == std::vector<int64_t>{1, 2});
  CHECK(dnums.kernel_spatial_dimensions == std::vector<int64_t>{0, 1});
  CHECK(dnums.kernel_output_feature_dimension == 2);
  CHECK(dnums.kernel_input_feature_dimension == 3);
  CHECK(dnums.output_batch_dimension == 0);
  CHECK(dnums.output_feature_dimension == 3);
  CHECK(dnums.output_spatial_dimensions == std::vector<int64_t>{1, 2});
  CHECK(ToString(dnums) == "b01f_01oi->b01f");
  // The location points at the name (its '%'), after `ROOT `.
  CHECK(conv.location().line == 6);
  CHECK(conv.location().column == 8);
  // Operands were written with their shapes; the printer leaves them out.
  const std::string printed = ToString(*module);
  CHECK(printed.find("convolution(parameter.0, parameter.1), window={size=3x3 pad=1_1x1_1}, "
                     "dim_labels=b01f_01oi->b01f") != std::string::npos);
}

TEST_CASE("depthwise convolution: feature groups, bf01 labels", "[hlo]") {
  const auto module = Load("depthwise_conv_3x3_1x256x56x56_bf16.hlo");
  const Instruction& conv = Find(*module, "main.1", "conv_general_dilated.1");
  CHECK(conv.GetInt("feature_group_count") == 256);
  CHECK(conv.GetInt("batch_group_count", 1) == 1);
  CHECK(ToString(conv.GetConvolutionDimensionNumbers()) == "bf01_oi01->bf01");
  const Instruction& constant = Find(*module, "main.1", "constant.1");
  REQUIRE(constant.literal() != nullptr);
  CHECK(constant.literal()->GetDouble(0) == Approx(0.01001).epsilon(0.01));
}

TEST_CASE("topk: k, largest, and a ROOT that is not the last instruction", "[hlo]") {
  const auto module = Load("topk_logits_k10_1x50000_bf16.hlo");
  const Instruction& topk = Find(*module, "main.1", "top_k.3");
  CHECK(topk.opcode() == Opcode::kTopK);
  CHECK(topk.GetInt("k") == 10);
  CHECK(topk.GetBool("largest"));
  CHECK(topk.GetBool("is_stable"));
  CHECK(isa::ToString(topk.shape()) == "(bf16[1,10]{1,0}, s32[1,10]{1,0})");
  const Computation& entry = *module->entry();
  CHECK(IndexOf(entry, entry.root()) == 2);
  CHECK(entry.instructions().back()->name() == "top_k.5");
  CHECK(Find(*module, "main.1", "top_k.5").GetInt("index") == 1);
}

TEST_CASE("while: condition and body, names scoped per computation", "[hlo]") {
  const auto module = Load("while.hlo");
  const Instruction& loop = Find(*module, "foo", "while.2");
  CHECK(loop.opcode() == Opcode::kWhile);
  CHECK(loop.GetComputation("condition")->name() == "cond");
  CHECK(loop.GetComputation("body")->name() == "loop");
  // Both cond and loop name their parameter arg_1 and their root compare.2.
  CHECK(module->FindComputation("cond")->FindInstruction("arg_1") != nullptr);
  CHECK(module->FindComputation("loop")->FindInstruction("arg_1") != nullptr);
  CHECK(module->FindComputation("loop")->root()->opcode() == Opcode::kAdd);
  CHECK(Find(*module, "cond", "compare.2").GetIdentifier("direction") == "LT");
  CHECK(Find(*module, "cond", "arg_1").GetRawText("metadata") == "{op_name=\"HLO_Args\"}");
  CHECK_FALSE(module->FindComputation("cond")->is_entry());

  const auto fp8 = Load("fp8_gemm_loop.hlo");
  const Instruction& w = Find(*fp8, "main", "while");
  CHECK(w.GetComputation("condition")->name() == "while_cond");
  CHECK(w.GetComputation("body")->name() == "while_body");
  REQUIRE(w.shape().is_tuple);
  CHECK(w.shape().tuple_shapes.size() == 5);
  CHECK(w.shape().tuple_shapes[1].element_type == isa::ElementType::kF8E5M2);
  CHECK(w.shape().tuple_shapes[2].element_type == isa::ElementType::kF8E4M3FN);
  CHECK(fp8->FindComputation("while_body")->root()->name() == "TT");
  CHECK(Find(*fp8, "main", "red").GetComputation("to_apply")->name() == "sum");
}

TEST_CASE("argsort: sort, gather dims, parameters out of order", "[hlo]") {
  const auto module = Load("argsort_axis_1024x512_bf16.hlo");
  const Computation& region = *module->FindComputation("region_0.1");
  REQUIRE(region.parameters().size() == 4);
  CHECK(region.parameters()[0]->name() == "sort.4");
  CHECK(region.parameters()[1]->name() == "sort.5");
  CHECK(region.parameters()[2]->name() == "sort.6");
  CHECK(region.parameters()[3]->name() == "sort.7");
  CHECK(Find(*module, "region_0.1", "lt_to.1").GetIdentifier("type") == "TOTALORDER");
  const Instruction& sort = Find(*module, "argsort.2", "sort.11");
  CHECK(sort.GetIntList("dimensions") == std::vector<int64_t>{1});
  CHECK(sort.GetBool("is_stable"));
  CHECK(sort.GetComputation("to_apply") == &region);
  const Instruction& gather = Find(*module, "take_along_axis.4", "gather.1");
  CHECK(gather.GetIntList("offset_dims").empty());
  CHECK(gather.GetIntList("collapsed_slice_dims") == std::vector<int64_t>{1});
  CHECK(gather.GetIntList("start_index_map") == std::vector<int64_t>{1});
  CHECK(gather.GetIntList("operand_batching_dims") == std::vector<int64_t>{0});
  CHECK(gather.GetIntList("start_indices_batching_dims") == std::vector<int64_t>{0});
  CHECK(gather.GetInt("index_vector_dim") == 2);
  CHECK(gather.GetIntList("slice_sizes") == std::vector<int64_t>{1, 1});
  const Instruction& nan = Find(*module, "region_0.1", "constant.2");
  REQUIRE(nan.literal() != nullptr);
  CHECK(std::isnan(nan.literal()->GetDouble(0)));
  const ProgramShape* layout = module->entry_computation_layout();
  REQUIRE(layout != nullptr);
  REQUIRE(layout->parameters.size() == 1);
  CHECK(isa::ToString(layout->parameters[0]) == "bf16[1024,512]{1,0}");
  CHECK(isa::ToString(layout->result) == "bf16[1024,512]{1,0}");
}

TEST_CASE("fully connected model: array constants, comments, % names", "[hlo]") {
  const auto module = Load("fully_connected_reference_model.hlo");
  const Instruction& weights = Find(*module, "tfcompile.48", "constant.35");
  REQUIRE(weights.constant_form() == ConstantForm::kLiteral);
  const Literal& literal = *weights.literal();
  CHECK(literal.dims() == std::vector<int64_t>{3, 5});
  CHECK(literal.GetDouble(0) == static_cast<double>(-0.106023f));
  CHECK(literal.GetDouble(8) == static_cast<double>(0.00378925f));
  CHECK(literal.GetDouble(14) == static_cast<double>(-0.428437f));
  const Instruction& zeros = Find(*module, "tfcompile.48", "constant.37");
  CHECK(ToString(zeros) == "constant.37 = f32[5]{0} constant({0, 0, 0, 0, 0})");
  CHECK(ToString(weights) ==
        "constant.35 = f32[3,5] constant({ {-0.106023, 0.121505, 0.800239, -0.768885, 0.0966113}, "
        "{0.689014, -0.407056, -0.797853, 0.00378925, -0.208881}, "
        "{-0.608529, 0.0276617, 0.268557, 0.577401, -0.428437} })");
  // No header attributes, no signatures: the printer adds the signature.
  CHECK(ToString(*module->entry()).starts_with(
      "ENTRY tfcompile.48 (arg0.1: f32[1,300], arg1.2: f32[1,300,3,1]) -> (f32[300,1,5]) {\n"));
}

TEST_CASE("dot and dynamic-slice workloads", "[hlo]") {
  const auto dot = Load("dot_bf16_0.hlo");
  const Instruction& out = Find(*dot, "computation1", "out");
  CHECK(out.GetIntList("lhs_contracting_dims") == std::vector<int64_t>{0});
  CHECK(out.GetIntList("rhs_contracting_dims") == std::vector<int64_t>{1});
  CHECK_FALSE(out.HasAttribute("lhs_batch_dims"));
  CHECK(isa::ToString(Find(*dot, "computation1", "a").shape()) == "s8[1536,6144]");

  const auto loop = Load("dynamic_slice_loop_1x2048x768_bf16.hlo");
  const Instruction& slice = Find(*loop, "main.1", "slice.64");
  REQUIRE(slice.GetSlice().size() == 1);
  CHECK(slice.GetSlice()[0] == SliceDimension{0, 1, 1});
  const Instruction& ds = Find(*loop, "main.1", "dynamic_slice.64");
  CHECK(ds.opcode() == Opcode::kDynamicSlice);
  CHECK(ds.operand_count() == 4);
  CHECK(ds.GetIntList("dynamic_slice_sizes") == std::vector<int64_t>{1, 32, 768});
}

TEST_CASE("gemma3: conditionals, reduce-window, metadata", "[hlo]") {
  const auto module = Load("gemma3_1b_flax_call.hlo");
  CHECK(module->entry()->instruction_count() == 7442);
  const Instruction& cond = Find(*module, "main.10141", "conditional.9958");
  CHECK(cond.opcode() == Opcode::kConditional);
  const auto& branches = cond.GetComputations("branch_computations");
  REQUIRE(branches.size() == 2);
  CHECK(branches[0]->name() == "region_267.9938");
  CHECK(branches[1]->name() == "region_269.9955");
  REQUIRE(cond.operand_count() == 3);
  CHECK(cond.operand(2)->shape() == isa::Shape::Tuple({}));
  CHECK(branches[1]->parameters()[0]->shape() == isa::Shape::Tuple({}));
  CHECK(cond.GetRawText("metadata").starts_with("{op_name=\"jit(__call__)/jit(main)/Gemma3_1B/layer_25/attn/cond\""));
  CHECK(cond.location().line == 3526);
  CHECK(cond.location().column == 3);

  std::size_t reduce_windows = 0;
  for (const auto& computation : module->computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kReduceWindow) continue;
      ++reduce_windows;
      const Window& window = instruction->GetWindow();
      REQUIRE(window.dimensions.size() == 2);
      CHECK(window.dimensions[0].size == 1);
      CHECK(window.dimensions[1].size == 11);
      CHECK(window.dimensions[1].padding_low == 10);
      CHECK(window.dimensions[1].padding_high == 0);
      CHECK(ToString(window) == "{size=1x11 pad=0_0x10_0}");
    }
  }
  CHECK(reduce_windows == 1);
}

TEST_CASE("llama3 SPMD: collectives, custom-calls, shardings, header", "[hlo]") {
  const auto module = Load("llama3_8b_bf16_activation_offloading_1x8.hlo");
  CHECK(module->num_partitions() == 8);
  CHECK(module->replica_count() == 1);
  const Attribute* alias = module->FindAttribute("input_output_alias");
  REQUIRE(alias != nullptr);
  CHECK(std::get<RawText>(alias->value).text.starts_with("{ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias)"));
  const ProgramShape* layout = module->entry_computation_layout();
  REQUIRE(layout != nullptr);
  CHECK(layout->parameters.size() == 44);
  REQUIRE(layout->result.is_tuple);
  CHECK(layout->result.tuple_shapes.size() == 46);
  CHECK(isa::ToString(layout->parameters[5]) == "f32[4096,32]{1,0}");  // after /*index=5*/

  const Instruction& gather = Find(*module, "region_3.6_spmd", "all-gather");
  CHECK(gather.opcode() == Opcode::kAllGather);
  CHECK(gather.GetInt("channel_id") == 1);
  CHECK(gather.GetIntList("dimensions") == std::vector<int64_t>{0});
  CHECK(gather.GetBool("use_global_device_ids"));
  const ReplicaGroups& groups = gather.GetReplicaGroups();
  REQUIRE(groups.iota.has_value());
  CHECK(groups.iota->group_dims == std::vector<int64_t>{1, 8});
  CHECK(groups.iota->reshape_dims == std::vector<int64_t>{8});
  CHECK(groups.groups == std::vector<std::vector<int64_t>>{{0, 1, 2, 3, 4, 5, 6, 7}});
  CHECK(ToString(groups) == "[1,8]<=[8]");

  std::size_t with_groups = 0;
  std::size_t all_reduces = 0;
  for (const auto& computation : module->computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->HasAttribute("replica_groups")) ++with_groups;
      if (instruction->opcode() == Opcode::kAllReduce) {
        ++all_reduces;
        CHECK(instruction->GetComputation("to_apply") != nullptr);
      }
    }
  }
  CHECK(with_groups == 66);
  CHECK(all_reduces == 50);

  const Instruction& attention = Find(*module, "region_3.6_spmd", "te_fused_attn_forward_ffi.5");
  CHECK(attention.opcode() == Opcode::kCustomCall);
  CHECK(attention.GetString("custom_call_target") == "te_fused_attn_forward_ffi");
  CHECK(attention.GetIdentifier("api_version") == "API_VERSION_TYPED_FFI");
  CHECK(attention.GetRawText("backend_config").starts_with("{attn_heads = 32 : i64, bias_batch = 0 : i64"));
  CHECK(attention.GetRawText("operand_layout_constraints").starts_with("{bf16[1,8192,32,128]{3,2,1,0}, "));
  CHECK(attention.operand_count() == 13);
  CHECK(attention.shape().tuple_shapes.size() == 4);
  CHECK(Find(*module, "region_3.6_spmd", "partition-id").opcode() == Opcode::kPartitionId);
}

TEST_CASE("maxtext: sharding of tuples, reduce-precision, aliasing", "[hlo]") {
  const auto module = Load("maxtext_train_step_before_optimization.hlo");
  CHECK(module->FindAttribute("input_output_alias") != nullptr);
  const Instruction& root = *module->entry()->root();
  CHECK(root.name() == "tuple.2033");
  CHECK(root.GetRawText("sharding").starts_with("{{replicated}, {replicated}, {replicated}, {replicated}, "
                                                "{replicated}, /*index=5*/{replicated}, "));
  bool found = false;
  for (const auto& computation : module->computations()) {
    if (const Instruction* rp = computation->FindInstruction("reduce-precision.338")) {
      found = true;
      CHECK(rp->GetInt("exponent_bits") == 8);
      CHECK(rp->GetInt("mantissa_bits") == 7);
      CHECK(rp->opcode() == Opcode::kReducePrecision);
    }
  }
  CHECK(found);
}
