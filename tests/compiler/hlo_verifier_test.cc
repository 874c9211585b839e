// The verifier: every real workload verifies (quickly); for each op family a module whose written
// shape is right verifies and one whose written shape is wrong fails with the exact message at
// the instruction's `file:line:col`; structural problems are reported.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "isa/error.h"

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

// Verify's message for `text` parsed as "test.hlo", or "" when it verifies.
std::string VerifyError(const std::string& text) {
  const auto module = ParseModule(text, "test.hlo");
  try {
    Verify(*module);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// `text` with "$S" replaced by `shape`.
std::string With(const std::string& text, const std::string& shape) {
  std::string out = text;
  const std::size_t at = out.find("$S");
  REQUIRE(at != std::string::npos);
  out.replace(at, 2, shape);
  return out;
}

// "test.hlo:line:col: instruction 'name'" for the instruction on the line holding "$S", worked out
// from the text (the name starts after the indentation and an optional "ROOT ").
std::string Where(const std::string& text) {
  const std::size_t at = text.find("$S");
  const std::size_t line_start = text.rfind('\n', at) + 1;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(line_start), '\n');
  std::size_t name = text.find_first_not_of(' ', line_start);
  if (text.compare(name, 5, "ROOT ") == 0) name += 5;
  const std::size_t name_end = text.find(' ', name);
  return "test.hlo:" + std::to_string(line) + ":" + std::to_string(name - line_start + 1) + ": instruction '" +
         text.substr(name, name_end - name) + "'";
}

// One instruction under test, in a module (paired with it in RunCases) that writes "$S" for its
// shape.
struct Case {
  const char* family;
  const char* good;     // the shape XLA gives it
  const char* bad;      // a wrong one
  const char* message;  // what Verify says about the wrong one, after "file:line:col: instruction 'x': "
};

const char* const kAdd = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
})";

// "HloModule m", the computations, and an entry computation with the lines `entry`.
std::string Text(const char* computations, const char* entry) {
  return std::string("HloModule m") + computations + "\n\nENTRY e {\n" + entry + "\n}\n";
}

void RunCases(const std::vector<std::pair<Case, std::string>>& cases) {
  for (const auto& [c, text] : cases) {
    INFO(c.family << " with " << c.good);
    CHECK(VerifyError(With(text, c.good)) == "");
    INFO(c.family << " with " << c.bad);
    CHECK(VerifyError(With(text, c.bad)) == Where(text) + ": " + c.message);
  }
}

}  // namespace

// Every shared workload verifies. (Its speed, a few ms for Gemma 3's 9738 instructions, is not
// asserted here: a test on wall-clock time fails on a loaded machine; issue 21.)
TEST_CASE("every workload verifies", "[verifier]") {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kWorkloads)) {
    if (entry.path().extension() == ".hlo") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 18);
  for (const std::string& file : files) {
    INFO(file);
    const auto module = ParseModule(ReadFile(kWorkloads + file), file);
    REQUIRE_NOTHROW(Verify(*module));
  }
}

TEST_CASE("element-wise operations", "[verifier]") {
  const char* xy = "  x = f32[2,3] parameter(0)\n  y = f32[2,3] parameter(1)\n";
  const auto entry = [&](const char* rest) { return Text("", (std::string(xy) + rest).c_str()); };
  RunCases({
      {{"add", "f32[2,3]", "f32[3,2]",
        "expected shape f32[2,3] (inferred from add(f32[2,3], f32[2,3])), written f32[3,2]"},
       entry("  ROOT a = $S add(x, y)")},
      {{"exponential", "f32[2,3]", "f16[2,3]",
        "expected shape f32[2,3] (inferred from exponential(f32[2,3])), written f16[2,3]"},
       entry("  e = $S exponential(x)")},
      {{"compare", "pred[2,3]", "f32[2,3]",
        "expected shape pred[2,3] (inferred from compare(f32[2,3], f32[2,3])), written f32[2,3]"},
       entry("  c = $S compare(x, y), direction=LT")},
      {{"select", "f32[2,3]", "f32[2]",
        "expected shape f32[2,3] (inferred from select(pred[2,3], f32[2,3], f32[2,3])), written f32[2]"},
       entry("  p = pred[2,3] parameter(2)\n  s = $S select(p, x, y)")},
      {{"clamp", "f32[2,3]", "f32[]",
        "expected shape f32[2,3] (inferred from clamp(f32[], f32[2,3], f32[])), written f32[]"},
       entry("  lo = f32[] parameter(2)\n  hi = f32[] parameter(3)\n  c = $S clamp(lo, x, hi)")},
      {{"convert", "bf16[2,3]", "bf16[3,2]",
        "expected shape bf16[2,3] (inferred from convert(f32[2,3])), written bf16[3,2]"},
       entry("  c = $S convert(x)")},
      {{"bitcast-convert", "u16[2,3,2]", "u16[2,6]",
        "expected shape u16[2,3,2] (inferred from bitcast-convert(f32[2,3])), written u16[2,6]"},
       entry("  b = $S bitcast-convert(x)")},
      {{"reduce-precision", "f32[2,3]", "f32[6]",
        "expected shape f32[2,3] (inferred from reduce-precision(f32[2,3])), written f32[6]"},
       entry("  r = $S reduce-precision(x), exponent_bits=5, mantissa_bits=10")},
      {{"map", "f32[2,3]", "s32[2,3]",
        "expected shape f32[2,3] (inferred from map(f32[2,3], f32[2,3])), written s32[2,3]"},
       Text(kAdd, (std::string(xy) + "  m = $S map(x, y), dimensions={0,1}, to_apply=add").c_str())},
  });
}

TEST_CASE("data movement", "[verifier]") {
  const char* x = "  x = f32[2,3] parameter(0)\n";
  const auto entry = [&](const char* rest) { return Text("", (std::string(x) + rest).c_str()); };
  RunCases({
      {{"broadcast", "f32[2,3,5]", "f32[2,4,5]",
        "expected shape f32[2,3,5] (inferred from broadcast(f32[2,3])), written f32[2,4,5]"},
       entry("  b = $S broadcast(x), dimensions={0,1}")},
      {{"reshape", "f32[3,1,2]", "f32[7]",
        "reshape of f32[2,3] (6 elements) to f32[7] (7 elements) changes the element count"},
       entry("  r = $S reshape(x)")},
      {{"transpose", "f32[3,2]", "f32[2,3]",
        "expected shape f32[3,2] (inferred from transpose(f32[2,3])), written f32[2,3]"},
       entry("  t = $S transpose(x), dimensions={1,0}")},
      {{"slice", "f32[2,1]", "f32[2,2]",
        "expected shape f32[2,1] (inferred from slice(f32[2,3])), written f32[2,2]"},
       entry("  s = $S slice(x), slice={[0:2], [1:3:2]}")},
      {{"dynamic-slice", "f32[1,3]", "f32[3,1]",
        "expected shape f32[1,3] (inferred from dynamic-slice(f32[2,3], s32[], s32[])), written f32[3,1]"},
       entry("  i = s32[] parameter(1)\n  d = $S dynamic-slice(x, i, i), dynamic_slice_sizes={1,3}")},
      {{"dynamic-update-slice", "f32[2,3]", "f32[1,3]",
        "expected shape f32[2,3] (inferred from dynamic-update-slice(f32[2,3], f32[1,3], s32[], s32[])), "
        "written f32[1,3]"},
       entry("  u = f32[1,3] parameter(1)\n  i = s32[] parameter(2)\n  d = $S dynamic-update-slice(x, u, i, i)")},
      {{"concatenate", "f32[4,3]", "f32[2,6]",
        "expected shape f32[4,3] (inferred from concatenate(f32[2,3], f32[2,3])), written f32[2,6]"},
       entry("  c = $S concatenate(x, x), dimensions={0}")},
      {{"pad", "f32[2,5]", "f32[3,5]",
        "expected shape f32[2,5] (inferred from pad(f32[2,3], f32[])), written f32[3,5]"},
       entry("  z = f32[] constant(0)\n  p = $S pad(x, z), padding=1_-1x0_0_1")},
      {{"reverse", "f32[2,3]", "f32[3,2]",
        "expected shape f32[2,3] (inferred from reverse(f32[2,3])), written f32[3,2]"},
       entry("  r = $S reverse(x), dimensions={0}")},
      {{"iota", "s32[2,3]", "s32[4]", "iota_dimension names dimension 1, out of range for rank 1"},
       entry("  i = $S iota(), iota_dimension=1")},
      {{"gather", "f32[3,3]", "f32[3,2]",
        "expected shape f32[3,3] (inferred from gather(f32[2,3], s32[3,1])), written f32[3,2]"},
       entry("  i = s32[3,1] parameter(1)\n  g = $S gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
             "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}")},
      {{"scatter", "f32[2,3]", "f32[4,3]",
        "expected shape f32[2,3] (inferred from scatter(f32[2,3], s32[4,1], f32[4,3])), written f32[4,3]"},
       Text(kAdd, "  x = f32[2,3] parameter(0)\n  i = s32[4,1] parameter(1)\n  u = f32[4,3] parameter(2)\n"
                    "  s = $S scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, "
                    "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add")},
  });
}

TEST_CASE("dot and convolution", "[verifier]") {
  RunCases({
      {{"dot", "f32[2,3,5]", "f32[2,5,3]",
        "expected shape f32[2,3,5] (inferred from dot(f32[2,3,4], f32[2,4,5])), written f32[2,5,3]"},
       Text("", "  a = f32[2,3,4] parameter(0)\n  b = f32[2,4,5] parameter(1)\n"
                  "  ROOT d = $S dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                  "rhs_contracting_dims={1}")},
      {{"convolution", "f32[1,3,3,2]", "f32[1,2,2,2]",
        "expected shape f32[1,3,3,2] (inferred from convolution(f32[1,5,5,1], f32[3,3,1,2])), written f32[1,2,2,2]"},
       Text("", "  x = f32[1,5,5,1] parameter(0)\n  k = f32[3,3,1,2] parameter(1)\n"
                  "  c = $S convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f")},
  });
}

TEST_CASE("reductions, sort, topk, batch norm", "[verifier]") {
  const char* x = "  x = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n";
  const auto with_add = [&](const char* rest) { return Text(kAdd, (std::string(x) + rest).c_str()); };
  const char* select_and_add = R"(
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
})";
  const char* less = R"(
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
})";
  const char* norm = "  x = f32[2,3] parameter(0)\n  s = f32[3] parameter(1)\n  o = f32[3] parameter(2)\n";
  RunCases({
      {{"reduce", "f32[2]", "f32[3]", "expected shape f32[2] (inferred from reduce(f32[2,3], f32[])), written f32[3]"},
       with_add("  r = $S reduce(x, z), dimensions={1}, to_apply=add")},
      {{"reduce-window", "f32[2,2]", "f32[2,1]",
        "expected shape f32[2,2] (inferred from reduce-window(f32[2,3], f32[])), written f32[2,1]"},
       with_add("  r = $S reduce-window(x, z), window={size=1x2 stride=1x2 pad=0_0x0_1}, to_apply=add")},
      {{"select-and-scatter", "f32[4,6]", "f32[2,3]",
        "expected shape f32[4,6] (inferred from select-and-scatter(f32[4,6], f32[2,3], f32[])), written f32[2,3]"},
       Text(select_and_add, "  x = f32[4,6] parameter(0)\n  src = f32[2,3] parameter(1)\n  z = f32[] constant(0)\n"
                              "  s = $S select-and-scatter(x, src, z), window={size=2x2 stride=2x2}, select=ge, "
                              "scatter=add")},
      {{"sort", "(f32[2,3], s32[2,3])", "f32[2,3]",
        "expected shape (f32[2,3], s32[2,3]) (inferred from sort(f32[2,3], s32[2,3])), written f32[2,3]"},
       Text(less, "  x = f32[2,3] parameter(0)\n  n = s32[2,3] parameter(1)\n"
                    "  s = $S sort(x, n), dimensions={1}, is_stable=true, to_apply=less")},
      {{"topk", "(f32[2,2], s32[2,2])", "(f32[2,2], s64[2,2])",
        "expected shape (f32[2,2], s32[2,2]) (inferred from topk(f32[2,3])), written (f32[2,2], s64[2,2])"},
       Text("", "  x = f32[2,3] parameter(0)\n  t = $S topk(x), k=2, largest=true")},
      {{"batch-norm-training", "(f32[2,3], f32[3], f32[3])", "(f32[2,3], f32[2], f32[2])",
        "expected shape (f32[2,3], f32[3], f32[3]) (inferred from batch-norm-training(f32[2,3], f32[3], f32[3])), "
        "written (f32[2,3], f32[2], f32[2])"},
       Text("", (std::string(norm) + "  b = $S batch-norm-training(x, s, o), epsilon=0.001, feature_index=1").c_str())},
      {{"batch-norm-inference", "f32[2,3]", "f32[3]",
        "expected shape f32[2,3] (inferred from batch-norm-inference(f32[2,3], f32[3], f32[3], f32[3], ... 1 more)), "
        "written f32[3]"},
       Text("", (std::string(norm) + "  b = $S batch-norm-inference(x, s, o, s, o), epsilon=0.001, feature_index=1")
                      .c_str())},
      {{"batch-norm-grad", "(f32[2,3], f32[3], f32[3])", "f32[2,3]",
        "expected shape (f32[2,3], f32[3], f32[3]) (inferred from batch-norm-grad(f32[2,3], f32[3], f32[3], f32[3], "
        "... 1 more)), written f32[2,3]"},
       Text("", (std::string(norm) + "  b = $S batch-norm-grad(x, s, o, s, x), epsilon=0.001, feature_index=1")
                      .c_str())},
  });
}

TEST_CASE("tuples and control flow", "[verifier]") {
  const char* loop = R"(
cond {
  p = s32[] parameter(0)
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(p, ten), direction=LT
}
body {
  p = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT next = s32[] add(p, one)
})";
  const char* branches = R"(
on_true {
  p = f32[2,3] parameter(0)
  s = f32[1,3] slice(p), slice={[0:1], [0:3]}
  ROOT r = f32[3] reshape(s)
}
on_false {
  p = f32[2,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[3] reduce(p, z), dimensions={0}, to_apply=add
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
})";
  const char* fused = R"(
fused {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT m = f32[2,3] multiply(a, b)
})";
  RunCases({
      {{"tuple", "(f32[2,3], s32[])", "(s32[], f32[2,3])",
        "expected shape (f32[2,3], s32[]) (inferred from tuple(f32[2,3], s32[])), written (s32[], f32[2,3])"},
       Text("", "  x = f32[2,3] parameter(0)\n  i = s32[] parameter(1)\n  t = $S tuple(x, i)")},
      {{"get-tuple-element", "s32[]", "f32[2,3]",
        "expected shape s32[] (inferred from element 1 of (f32[2,3], s32[])), written f32[2,3]"},
       Text("", "  t = (f32[2,3], s32[]) parameter(0)\n  g = $S get-tuple-element(t), index=1")},
      {{"while", "s32[]", "s64[]", "expected shape s32[] (inferred from while(s32[])), written s64[]"},
       Text(loop, "  i = s32[] parameter(0)\n  ROOT w = $S while(i), condition=cond, body=body")},
      {{"conditional", "f32[3]", "f32[2]",
        "expected shape f32[3] (inferred from the root of branch 0 'on_true'), written f32[2]"},
       Text(branches, "  p = pred[] parameter(0)\n  x = f32[2,3] parameter(1)\n"
                        "  c = $S conditional(p, x, x), true_computation=on_true, false_computation=on_false")},
      {{"conditional (indexed)", "f32[3]", "f32[2,3]",
        "expected shape f32[3] (inferred from the root of branch 0 'on_true'), written f32[2,3]"},
       Text(branches, "  i = s32[] parameter(0)\n  x = f32[2,3] parameter(1)\n"
                        "  c = $S conditional(i, x, x), branch_computations={on_true, on_false}")},
      {{"call", "f32[2,3]", "f32[3,2]", "expected shape f32[2,3] (inferred from the root of 'fused'), written f32[3,2]"},
       Text(fused, "  x = f32[2,3] parameter(0)\n  c = $S call(x, x), to_apply=fused")},
      {{"fusion", "f32[2,3]", "bf16[2,3]",
        "expected shape f32[2,3] (inferred from the root of 'fused'), written bf16[2,3]"},
       Text(fused, "  x = f32[2,3] parameter(0)\n  f = $S fusion(x, x), kind=kLoop, calls=fused")},
      {{"async-start", "((f32[2,3], f32[2,3]), f32[2,3], s32[])", "((f32[2,3]), f32[2,3], s32[])",
        "expected shape ((f32[2,3], f32[2,3]), f32[2,3], s32[]) (inferred from async-start(f32[2,3], f32[2,3])), "
        "written ((f32[2,3]), f32[2,3], s32[])"},
       Text(fused, "  x = f32[2,3] parameter(0)\n  s = $S async-start(x, x), calls=fused")},
      {{"async-done", "f32[2,3]", "s32[]",
        "expected shape f32[2,3] (inferred from async-done(((f32[2,3], f32[2,3]), f32[2,3], s32[]))), written s32[]"},
       Text(fused, "  x = f32[2,3] parameter(0)\n"
                     "  s = ((f32[2,3], f32[2,3]), f32[2,3], s32[]) fusion-start(x, x), kind=kLoop, calls=fused\n"
                     "  d = $S fusion-done(s)")},
      {{"opt-barrier", "(f32[2,3], s32[])", "(f32[2,3], s32[], s32[])",
        "expected shape (f32[2,3], s32[]) (inferred from opt-barrier((f32[2,3], s32[]))), written (f32[2,3], s32[], s32[])"},
       Text("", "  t = (f32[2,3], s32[]) parameter(0)\n  o = $S opt-barrier(t)")},
  });
}

TEST_CASE("collectives", "[verifier]") {
  const std::string header = "HloModule m, replica_count=4\n";
  const auto module = [&](const char* entry) {
    return header + kAdd + "\n\nENTRY e {\n  x = f32[4,3] parameter(0)\n" + entry + "\n}\n";
  };
  RunCases({
      {{"all-reduce", "f32[4,3]", "f32[16,3]",
        "expected shape f32[4,3] (inferred from all-reduce(f32[4,3])), written f32[16,3]"},
       module("  a = $S all-reduce(x), replica_groups={}, to_apply=add")},
      {{"all-gather", "f32[4,6]", "f32[4,3]",
        "expected shape f32[4,6] (inferred from all-gather(f32[4,3])), written f32[4,3]"},
       module("  g = $S all-gather(x), replica_groups={{0,1},{2,3}}, dimensions={1}")},
      {{"reduce-scatter", "f32[1,3]", "f32[4,3]",
        "expected shape f32[1,3] (inferred from reduce-scatter(f32[4,3])), written f32[4,3]"},
       module("  r = $S reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=add")},
      {{"all-to-all", "f32[4,3]", "f32[1,3]",
        "expected shape f32[4,3] (inferred from all-to-all(f32[4,3])), written f32[1,3]"},
       module("  a = $S all-to-all(x), replica_groups={{0,1,2,3}}, dimensions={0}")},
      {{"collective-permute", "f32[4,3]", "f32[3,4]",
        "expected shape f32[4,3] (inferred from collective-permute(f32[4,3])), written f32[3,4]"},
       module("  c = $S collective-permute(x), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}")},
      {{"all-reduce-done", "f32[4,3]", "f32[3]",
        "expected shape f32[4,3] (inferred from all-reduce-done(f32[4,3])), written f32[3]"},
       module("  s = f32[4,3] all-reduce-start(x), to_apply=add\n  d = $S all-reduce-done(s)")},
      {{"all-gather-start", "(f32[4,3], f32[16,3])", "(f32[4,3], f32[4,3])",
        "expected shape (f32[4,3], f32[16,3]) (inferred from all-gather-start(f32[4,3])), written (f32[4,3], f32[4,3])"},
       module("  s = $S all-gather-start(x), dimensions={0}")},
      {{"collective-permute-done", "f32[4,3]", "u32[]",
        "expected shape f32[4,3] (inferred from collective-permute-done((f32[4,3], f32[4,3], u32[], u32[]))), "
        "written u32[]"},
       module("  s = (f32[4,3], f32[4,3], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,1}}\n"
              "  d = $S collective-permute-done(s)")},
      {{"replica-id", "u32[]", "s32[]", "expected shape u32[] (inferred from replica-id()), written s32[]"},
       module("  r = $S replica-id()")},
      {{"partition-id", "u32[]", "u32[1]", "expected shape u32[] (inferred from partition-id()), written u32[1]"},
       module("  p = $S partition-id()")},
  });
}

TEST_CASE("tokens, copies, random numbers, dynamic sizes", "[verifier]") {
  const auto entry = [](const char* rest) {
    return Text("", (std::string("  x = f32[2,3] parameter(0)\n  tok = token[] after-all()\n") + rest).c_str());
  };
  RunCases({
      {{"after-all", "token[]", "(token[])", "expected shape token[] (inferred from after-all(token[])), written (token[])"},
       entry("  a = $S after-all(tok)")},
      {{"add-dependency", "f32[2,3]", "token[]",
        "expected shape f32[2,3] (inferred from add-dependency(f32[2,3], token[])), written token[]"},
       entry("  a = $S add-dependency(x, tok)")},
      {{"infeed", "(f32[4], token[])", "(f32[4], s32[])",
        "expected shape (f32[4], token[]) (inferred from infeed(token[])), written (f32[4], s32[])"},
       entry("  i = $S infeed(tok)")},
      {{"outfeed", "token[]", "f32[2,3]",
        "expected shape token[] (inferred from outfeed(f32[2,3], token[])), written f32[2,3]"},
       entry("  o = $S outfeed(x, tok)")},
      {{"copy-start", "(f32[2,3], f32[2,3], u32[])", "(f32[2,3], f32[2,3])",
        "expected shape (f32[2,3], f32[2,3], u32[]) (inferred from copy-start(f32[2,3])), written (f32[2,3], f32[2,3])"},
       entry("  s = $S copy-start(x)")},
      {{"copy-done", "f32[2,3]", "f32[3,2]",
        "expected shape f32[2,3] (inferred from copy-done((f32[2,3], f32[2,3], u32[]))), written f32[3,2]"},
       entry("  s = (f32[2,3], f32[2,3], u32[]) copy-start(x)\n  d = $S copy-done(s)")},
      {{"rng", "f32[4]", "s32[4]", "expected shape f32[4] (inferred from rng(f32[], f32[])), written s32[4]"},
       entry("  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n  r = $S rng(lo, hi), distribution=rng_uniform")},
      {{"rng-bit-generator", "(u64[2], u32[8])", "(u64[3], u32[8])",
        "expected shape (u64[2], u32[8]) (inferred from rng-bit-generator(u64[2])), written (u64[3], u32[8])"},
       entry("  state = u64[2] parameter(1)\n  r = $S rng-bit-generator(state), algorithm=rng_default")},
      {{"get-dimension-size", "s32[]", "u32[]",
        "expected shape s32[] (inferred from get-dimension-size(f32[2,3])), written u32[]"},
       entry("  g = $S get-dimension-size(x), dimensions={1}")},
      {{"set-dimension-size", "f32[2,<=3]", "f32[2,4]",
        "expected shape f32[2,3] (inferred from set-dimension-size(f32[2,3], s32[])), written f32[2,4]"},
       entry("  n = s32[] parameter(1)\n  s = $S set-dimension-size(x, n), dimensions={1}")},
      {{"cholesky", "f32[3,3]", "f32[3]", "expected shape f32[3,3] (inferred from cholesky(f32[3,3])), written f32[3]"},
       entry("  a = f32[3,3] parameter(1)\n  c = $S cholesky(a), lower=true")},
  });
}

TEST_CASE("parameters and constants", "[verifier]") {
  // The parser already rejects a parameter that disagrees with entry_computation_layout and a
  // literal that disagrees with its shape; the verifier infers them from the same sources.
  CHECK(VerifyError("HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n"
                    "ENTRY e {\n  p = f32[2] parameter(0)\n  c = s32[3] constant({1, 2, 3})\n  ROOT n = f32[2] negate(p)\n}\n") ==
        "");
}

TEST_CASE("operations accepted as written verify with any shape", "[verifier]") {
  CHECK(VerifyError(Text("", "  x = f32[2,3] parameter(0)\n"
                               "  c = (f32[7], s8[2]) custom-call(x), custom_call_target=\"anything\"\n"
                               "  b = s32[3,2] bitcast(x)")) == "");
}

TEST_CASE("operand errors name the instruction", "[verifier]") {
  CHECK(VerifyError(Text("", "  x = f32[2,3] parameter(0)\n  a = f32[2,3] add(x)")) ==
        "test.hlo:5:3: instruction 'a': add takes 2 operands, got 1");
  CHECK(VerifyError(Text(kAdd, "  x = f32[2,3] parameter(0)\n  r = f32[2] reduce(x), dimensions={1}, to_apply=add")) ==
        "test.hlo:10:3: instruction 'r': reduce takes an even number of operands (at least 2), got 1");
  CHECK(VerifyError(Text("", "  x = f32[2,3] parameter(0)\n  y = f32[3,2] parameter(1)\n  a = f32[2,3] multiply(x, y)")) ==
        "test.hlo:6:3: instruction 'a': operand 0 f32[2,3] and operand 1 f32[3,2] of multiply have different dims "
        "(HLO does not broadcast implicitly)");
  CHECK(VerifyError(Text("", "  x = f32[2,3] parameter(0)\n  b = f32[2,3] broadcast(x), dimensions={0}")) ==
        "test.hlo:5:3: instruction 'b': broadcast of the rank-2 f32[2,3] needs 2 dimensions, got dimensions={0}");
}

TEST_CASE("collectives name devices that exist, each once", "[verifier]") {
  const auto module = [](const char* header, const char* instruction) {
    return std::string("HloModule m") + header + kAdd + "\n\nENTRY e {\n  x = f32[4,3] parameter(0)\n" + instruction +
           "\n}\n";
  };
  CHECK(VerifyError(module(", replica_count=4", "  a = f32[4,3] all-reduce(x), replica_groups={{0,1},{2,4}}, to_apply=add")) ==
        "test.hlo:10:3: instruction 'a': replica_groups names replica 4, but there are 4 (ids 0..3)");
  CHECK(VerifyError(module(", replica_count=4", "  g = f32[8,3] all-gather(x), replica_groups={{0,1},{1,2}}, dimensions={0}")) ==
        "test.hlo:10:3: instruction 'g': replica_groups names replica 1 twice");
  CHECK(VerifyError(module(", replica_count=4", "  g = f32[8,3] all-gather(x), replica_groups={{0,1},{2}}, dimensions={0}")) ==
        "test.hlo:10:3: instruction 'g': the replica groups {{0,1},{2}} are not all of one size");
  // With a channel and global ids the groups list devices: replicas x partitions of them.
  CHECK(VerifyError(module(", replica_count=2, num_partitions=4",
                           "  g = f32[32,3] all-gather(x), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, "
                           "use_global_device_ids=true")) == "");
  CHECK(VerifyError(module(", num_partitions=2",
                           "  c = f32[4,3] collective-permute(x), channel_id=1, source_target_pairs={{0,1},{1,0},{0,0}}")) ==
        "test.hlo:10:3: instruction 'c': source_target_pairs (as a source) names partition 0 twice");
  CHECK(VerifyError(module("", "  c = f32[4,3] collective-permute(x), source_target_pairs={{0,1}}")) ==
        "test.hlo:10:3: instruction 'c': source_target_pairs (as a target) names replica 1, but there are 1 (ids 0..0)");
}

TEST_CASE("select needs a predicate per element", "[verifier]") {
  CHECK(VerifyError(Text("", "  p = pred[] parameter(0)\n  x = f32[2] parameter(1)\n  s = f32[2] select(p, x, x)")) ==
        "test.hlo:6:3: instruction 's': the predicate pred[] and on_true f32[2] of select have different dims (HLO "
        "does not broadcast implicitly)");
}

TEST_CASE("called computations must fit their callers", "[verifier]") {
  const char* add3 = R"(
add3 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  ROOT s = f32[] add(a, b)
})";
  CHECK(VerifyError(Text(add3, "  x = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n"
                                 "  r = f32[2] reduce(x, z), dimensions={1}, to_apply=add3")) ==
        "test.hlo:12:3: instruction 'r': to_apply computation 'add3' takes 3 parameters, reduce passes it 2");
  const char* wide_body = R"(
cond {
  p = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  p = s32[] parameter(0)
  ROOT c = s64[] convert(p)
})";
  CHECK(VerifyError(Text(wide_body, "  i = s32[] parameter(0)\n  ROOT w = s32[] while(i), condition=cond, body=body")) ==
        "test.hlo:13:8: instruction 'w': body computation 'body' returns s64[], while needs s32[]");
  const char* f32_call = R"(
f {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p)
})";
  CHECK(VerifyError(Text(f32_call, "  x = f32[3] parameter(0)\n  c = f32[2] call(x), to_apply=f")) ==
        "test.hlo:9:3: instruction 'c': to_apply computation 'f' takes parameter 0 as f32[2], call passes f32[3]");
  const char* compare_f32 = R"(
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
})";
  CHECK(VerifyError(Text(compare_f32, "  x = f32[4] parameter(0)\n  s = f32[4] sort(x), dimensions={0}, to_apply=lt")) ==
        "test.hlo:10:3: instruction 's': to_apply computation 'lt' returns f32[], sort needs pred[]");
}

TEST_CASE("structure of modules built by code", "[verifier]") {
  {
    Module module("empty", "built.hlo");
    CHECK_THROWS_WITH(Verify(module), "built.hlo: module 'empty' has no entry computation");
  }
  {
    Module module("m", "built.hlo");
    Computation* computation = module.AddComputation(std::make_unique<Computation>("c"));
    module.set_entry(computation);
    auto parameter = std::make_unique<Instruction>("p", Opcode::kParameter, isa::Shape::Array(isa::ElementType::kF32, {2}));
    parameter->set_parameter_number(0);
    Instruction* p = computation->AddInstruction(std::move(parameter));
    computation->set_parameters({p});
    CHECK_THROWS_WITH(Verify(module), "built.hlo: computation 'c' has no root");
  }
  {
    // An operand defined after its user.
    Module module("m", "built.hlo");
    Computation* computation = module.AddComputation(std::make_unique<Computation>("c"));
    module.set_entry(computation);
    const isa::Shape shape = isa::Shape::Array(isa::ElementType::kF32, {2});
    Instruction* negate = computation->AddInstruction(std::make_unique<Instruction>("n", Opcode::kNegate, shape));
    auto parameter = std::make_unique<Instruction>("p", Opcode::kParameter, shape);
    parameter->set_parameter_number(0);
    Instruction* p = computation->AddInstruction(std::move(parameter));
    negate->AddOperand(p);
    computation->set_parameters({p});
    computation->set_root(negate);
    CHECK_THROWS_WITH(Verify(module), "built.hlo: instruction 'n': operand 'p' is used before its definition");
  }
  {
    // Parameters numbered 0 and 2.
    Module module("m", "built.hlo");
    Computation* computation = module.AddComputation(std::make_unique<Computation>("c"));
    module.set_entry(computation);
    const isa::Shape shape = isa::Shape::Array(isa::ElementType::kF32, {2});
    std::vector<Instruction*> parameters;
    for (int64_t number : {0, 2}) {
      auto parameter = std::make_unique<Instruction>("p" + std::to_string(number), Opcode::kParameter, shape);
      parameter->set_parameter_number(number);
      parameters.push_back(computation->AddInstruction(std::move(parameter)));
    }
    computation->set_parameters(parameters);
    computation->set_root(parameters[0]);
    CHECK_THROWS_WITH(Verify(module),
                      "built.hlo: computation 'c': its parameters are not numbered 0..1 (parameter(1) is missing or "
                      "repeated)");
  }
}
