// Shape inference values from XLA's operation semantics. Each module writes a placeholder shape
// (`f32[]`) for the instruction under test, so the inferred shape cannot come from the text.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/shape_inference.h"
#include "isa/error.h"

using namespace tpusim;
using namespace tpusim::hlo;

namespace {

// The inferred shape of instruction `name` of the entry computation of `text`.
std::string Inferred(const std::string& text, std::string_view name) {
  const auto module = ParseModule(text, "test.hlo");
  const Instruction* instruction = module->entry()->FindInstruction(name);
  REQUIRE(instruction != nullptr);
  return ShapeToStringWithoutLayout(InferShape(*instruction));
}

// The message InferShape throws for instruction `name`, or "" if it throws none.
std::string InferenceError(const std::string& text, std::string_view name) {
  const auto module = ParseModule(text, "test.hlo");
  const Instruction* instruction = module->entry()->FindInstruction(name);
  REQUIRE(instruction != nullptr);
  try {
    InferShape(*instruction);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string ReadWorkload(const std::string& name) {
  std::ifstream file(std::string(TPUSIM_SHARED_DIR "/workloads/xla/") + name, std::ios::binary);
  REQUIRE(file.good());
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

}  // namespace

TEST_CASE("dot: batch dims, then lhs free dims, then rhs free dims", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[2,4,5] parameter(1)
  d = f32[] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  c = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  v = f32[4] parameter(2)
  m = f32[] dot(v, b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
})";
  CHECK(Inferred(module, "d") == "f32[2,3,5]");
  CHECK(Inferred(module, "c") == "f32[3,4,4,5]");  // contracting the batch dims: everything else is free
  CHECK(Inferred(module, "m") == "f32[2,5]");
}

TEST_CASE("dot: preferred element types and mixed operands", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  a = bf16[8,16] parameter(0)
  b = bf16[16,4] parameter(1)
  f = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  i = s8[8,16] parameter(2)
  j = s8[16,4] parameter(3)
  s = s32[8,4] dot(i, j), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  x = f8e5m2[8,16] parameter(4)
  y = f8e4m3fn[16,4] parameter(5)
  z = bf16[8,4] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  k = s32[8,16] parameter(6)
  l = s32[16,4] parameter(7)
  n = s8[8,4] dot(k, l), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  CHECK(Inferred(module, "f") == "f32[8,4]");  // bf16 x bf16 accumulating in f32
  CHECK(Inferred(module, "s") == "s32[8,4]");
  CHECK(Inferred(module, "z") == "bf16[8,4]");
  // An integer dot may not narrow: the inferred type stays s32, and the written s8 mismatches.
  CHECK(Inferred(module, "n") == "s32[8,4]");
}

TEST_CASE("dot: contracting sizes must agree", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[4,5] parameter(1)
  d = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  CHECK(InferenceError(module, "d") ==
        "test.hlo:5:3: instruction 'd': contracting dimension 1 of lhs f32[2,3] has size 3 but dimension 0 of rhs "
        "f32[4,5] has size 4");
}

TEST_CASE("convolution: isolated_convolution.hlo and the depthwise workload", "[verifier]") {
  CHECK(Inferred(ReadWorkload("isolated_convolution.hlo"), "convolution.167") == "f32[16,28,28,128]");
  CHECK(Inferred(ReadWorkload("depthwise_conv_3x3_1x256x56x56_bf16.hlo"), "conv_general_dilated.1") ==
        "bf16[1,256,56,56]");
}

TEST_CASE("convolution: stride, dilation, padding, groups", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  x = f32[1,5,5,1] parameter(0)
  k = f32[3,3,1,2] parameter(1)
  strided = f32[] convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=b01f_01io->b01f
  dilated = f32[] convolution(x, k), window={size=3x3 rhs_dilate=2x2}, dim_labels=b01f_01io->b01f
  based = f32[] convolution(x, k), window={size=3x3 lhs_dilate=2x2 pad=0_1x2_2}, dim_labels=b01f_01io->b01f
  moved = f32[] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->fb01
  y = f32[4,3,3,2] parameter(2)
  g = f32[1,1,2,4] parameter(3)
  batch_groups = f32[] convolution(y, g), window={size=1x1}, dim_labels=b01f_01io->b01f, batch_group_count=2
  h = f32[1,1,1,4] parameter(4)
  feature_groups = f32[] convolution(y, h), window={size=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=2
})";
  CHECK(Inferred(module, "strided") == "f32[1,2,2,2]");   // (5 - 3) / 2 + 1
  CHECK(Inferred(module, "dilated") == "f32[1,1,1,2]");   // the window spans 5
  CHECK(Inferred(module, "based") == "f32[1,8,11,2]");    // base 9, padded to 10 and 13
  CHECK(Inferred(module, "moved") == "f32[2,1,3,3]");     // output labels put the features first
  CHECK(Inferred(module, "batch_groups") == "f32[2,3,3,4]");
  CHECK(Inferred(module, "feature_groups") == "f32[4,3,3,4]");
}

TEST_CASE("pad: low, high, interior, negative", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  zero = f32[] constant(0)
  interior = f32[] pad(x, zero), padding=1_2_1x0_0_2
  negative = f32[] pad(x, zero), padding=-1_0x0_-2
  both = f32[] pad(x, zero), padding=-1_-1_3x-2_1_1
  bad = f32[] pad(x, zero), padding=-2_-1x0_0
})";
  CHECK(Inferred(module, "interior") == "f32[6,7]");  // 1 + 2 + 1*1 + 2 ; 3 + 2*2
  CHECK(Inferred(module, "negative") == "f32[1,1]");
  CHECK(Inferred(module, "both") == "f32[3,4]");      // -1 + 2 + 3 - 1 ; -2 + 3 + 2 + 1
  CHECK(InferenceError(module, "bad") ==
        "test.hlo:8:3: instruction 'bad': padding=-2_-1x0_0 makes dimension 0 of f32[2,3] negative (-1)");
}

TEST_CASE("reduce-window: stride, padding, base dilation", "[verifier]") {
  const std::string module = R"(HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[4,6] parameter(0)
  init = f32[] constant(-inf)
  strided = f32[] reduce-window(x, init), window={size=2x3 stride=2x2 pad=0_1x1_1}, to_apply=max
  valid = f32[] reduce-window(x, init), window={size=2x2}, to_apply=max
  dilated = f32[] reduce-window(x, init), window={size=2x1 lhs_dilate=2x1 rhs_dilate=2x1}, to_apply=max
  large = f32[] reduce-window(x, init), window={size=5x1}, to_apply=max
})";
  CHECK(Inferred(module, "strided") == "f32[2,3]");  // (4+1-2)/2+1 ; (6+2-3)/2+1
  CHECK(Inferred(module, "valid") == "f32[3,5]");
  CHECK(Inferred(module, "dilated") == "f32[5,6]");  // base 7, window 3
  CHECK(Inferred(module, "large") == "f32[0,6]");    // a window larger than the base fits nowhere
}

TEST_CASE("gather: XLA's examples", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  rows = s32[3,3] parameter(0)
  picks = s32[2] parameter(1)
  take_rows = f32[] gather(rows, picks), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
  take_cols = f32[] gather(rows, picks), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={3,1}
  operand = f32[16,11] parameter(2)
  starts = s32[5,7,2] parameter(3)
  windows = f32[] gather(operand, starts), offset_dims={2,3}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=2, slice_sizes={8,6}
  interleaved = f32[] gather(operand, starts), offset_dims={0,3}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=2, slice_sizes={8,6}
  collapsed = f32[] gather(operand, starts), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=2, slice_sizes={1,6}
  first = s32[2,5,7] parameter(4)
  leading = f32[] gather(operand, first), offset_dims={2,3}, collapsed_slice_dims={}, start_index_map={1,0}, index_vector_dim=0, slice_sizes={8,6}
})";
  CHECK(Inferred(module, "take_rows") == "s32[2,3]");
  CHECK(Inferred(module, "take_cols") == "s32[3,2]");
  CHECK(Inferred(module, "windows") == "f32[5,7,8,6]");
  CHECK(Inferred(module, "interleaved") == "f32[8,5,7,6]");
  CHECK(Inferred(module, "collapsed") == "f32[5,7,6]");
  CHECK(Inferred(module, "leading") == "f32[5,7,8,6]");
}

TEST_CASE("gather: batching dims (argsort's take_along_axis)", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  x = bf16[1024,512] parameter(0)
  i = s32[1024,512,1] parameter(1)
  g = f32[] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1}
  bad = f32[] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={2,1}
})";
  CHECK(Inferred(module, "g") == "bf16[1024,512]");
  CHECK(InferenceError(module, "bad") ==
        "test.hlo:6:3: instruction 'bad': slice_sizes={2,1}: dimension 0 is collapsed or batching, so its slice "
        "size must be 0 or 1");
}

TEST_CASE("slice: ceil((limit - start) / stride) per dimension", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  x = f32[10,7] parameter(0)
  a = f32[] slice(x), slice={[1:8:3], [0:7]}
  b = f32[] slice(x), slice={[0:10:4], [6:7:5]}
  c = f32[] slice(x), slice={[2:2], [0:7:7]}
  bad = f32[] slice(x), slice={[0:11], [0:7]}
})";
  CHECK(Inferred(module, "a") == "f32[3,7]");
  CHECK(Inferred(module, "b") == "f32[3,1]");
  CHECK(Inferred(module, "c") == "f32[0,1]");
  CHECK(InferenceError(module, "bad") ==
        "test.hlo:7:3: instruction 'bad': slice range [0:11:1] of dimension 0 is not within [0:10] of f32[10,7]");
}

TEST_CASE("bitcast-convert: equal, wider and narrower element types", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  f = f32[2,3] parameter(0)
  same = s32[] bitcast-convert(f)
  split = u8[] bitcast-convert(f)
  b = u8[2,4] parameter(1)
  merged = f32[] bitcast-convert(b)
  bad = u16[2,3] parameter(2)
  unmerged = f32[] bitcast-convert(bad)
})";
  CHECK(Inferred(module, "same") == "s32[2,3]");
  CHECK(Inferred(module, "split") == "u8[2,3,4]");
  CHECK(Inferred(module, "merged") == "f32[2]");
  CHECK(InferenceError(module, "unmerged") ==
        "test.hlo:9:3: instruction 'unmerged': bitcast-convert from u16[2,3] to f32 needs a minor dimension of 2 "
        "to merge");
}

TEST_CASE("element types: compare, is-finite, abs of complex, real, complex", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  lt = f32[] compare(x, y), direction=LT
  finite = f32[] is-finite(x)
  z = c64[4] parameter(2)
  magnitude = f32[] abs(z)
  re = f32[] real(z)
  made = f32[] complex(x, y)
  i = s32[4] parameter(3)
  mixed = f32[] add(x, i)
})";
  CHECK(Inferred(module, "lt") == "pred[4]");
  CHECK(Inferred(module, "finite") == "pred[4]");
  CHECK(Inferred(module, "magnitude") == "f32[4]");
  CHECK(Inferred(module, "re") == "f32[4]");
  CHECK(Inferred(module, "made") == "c64[4]");
  CHECK(InferenceError(module, "mixed") ==
        "test.hlo:12:3: instruction 'mixed': operand 0 f32[4] and operand 1 s32[4] of add have different element "
        "types");
}

TEST_CASE("reduce: variadic, dims removed, types of the init values", "[verifier]") {
  const std::string module = R"(HloModule m
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  v = f32[] select(gt, v0, v1)
  i = s32[] select(gt, i0, i1)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[3,4,5] parameter(0)
  n = s32[3,4,5] iota(), iota_dimension=1
  lowest = f32[] constant(-inf)
  zero = s32[] constant(0)
  r = f32[] reduce(x, n, lowest, zero), dimensions={1}, to_apply=argmax
})";
  CHECK(Inferred(module, "r") == "(f32[3,5], s32[3,5])");
}

TEST_CASE("broadcast, transpose, concatenate, dynamic-slice, topk, sort", "[verifier]") {
  const std::string module = R"(HloModule m
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[2,3] parameter(0)
  wide = f32[2,7,3] broadcast(x), dimensions={0,2}
  t = f32[] transpose(wide), dimensions={2,0,1}
  cat = f32[] concatenate(x, x, x), dimensions={1}
  i = s32[] parameter(1)
  ds = f32[] dynamic-slice(x, i, i), dynamic_slice_sizes={1,2}
  k = f32[] topk(x), k=2, largest=true
  n = s32[2,3] parameter(2)
  sorted = f32[] sort(x, n), dimensions={1}, to_apply=less
})";
  CHECK(Inferred(module, "wide") == "f32[2,7,3]");
  CHECK(Inferred(module, "t") == "f32[3,2,7]");
  CHECK(Inferred(module, "cat") == "f32[2,9]");
  CHECK(Inferred(module, "ds") == "f32[1,2]");
  CHECK(Inferred(module, "k") == "(f32[2,2], s32[2,2])");
  CHECK(Inferred(module, "sorted") == "(f32[2,3], s32[2,3])");
}

TEST_CASE("collectives: group sizes from replica_groups, replica and partition counts", "[verifier]") {
  const std::string module = R"(HloModule m, replica_count=2, num_partitions=4
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,3] parameter(0)
  replicas = f32[] all-gather(x), dimensions={0}
  grouped = f32[] all-gather(x), dimensions={1}, replica_groups={{0,1}}
  global = f32[] all-gather(x), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true
  both = f32[] all-gather(x), channel_id=2, replica_groups={{0},{1}}, dimensions={0}
  partitions = f32[] all-to-all(x), channel_id=3, dimensions={0}
  scattered = f32[] reduce-scatter(x), channel_id=4, replica_groups=[2,4]<=[8], dimensions={0}, use_global_device_ids=true, to_apply=add
  start = f32[] all-gather-start(x), dimensions={0}
  id = f32[] partition-id()
})";
  CHECK(Inferred(module, "replicas") == "f32[16,3]");  // no channel: all replicas
  CHECK(Inferred(module, "grouped") == "f32[8,6]");
  CHECK(Inferred(module, "global") == "f32[64,3]");
  CHECK(Inferred(module, "both") == "f32[32,3]");     // one replica with each of the 4 partitions
  CHECK(Inferred(module, "partitions") == "f32[8,3]");
  CHECK(Inferred(module, "scattered") == "f32[2,3]");
  CHECK(Inferred(module, "start") == "(f32[8,3], f32[16,3])");
  CHECK(Inferred(module, "id") == "u32[]");
}

TEST_CASE("shape inference: operations accepted as written", "[verifier]") {
  const std::string module = R"(HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  c = (f32[7], s8[2]) custom-call(x), custom_call_target="anything"
  b = s32[3,2] bitcast(x)
})";
  const auto parsed = ParseModule(module, "test.hlo");
  const Instruction& call = *parsed->entry()->FindInstruction("c");
  CHECK_FALSE(InfersShape(call));
  CHECK(ShapeToStringWithoutLayout(InferShape(call)) == "(f32[7], s8[2])");
  CHECK_FALSE(InfersShape(*parsed->entry()->FindInstruction("b")));
  CHECK(InfersShape(*parsed->entry()->FindInstruction("x")));
}

TEST_CASE("SameShapeIgnoringLayout: layouts ignored, bounds compared, ? matches", "[verifier]") {
  CHECK(SameShapeIgnoringLayout(isa::ParseShape("f32[2,3]{0,1}"), isa::ParseShape("f32[2,3]")));
  CHECK(SameShapeIgnoringLayout(isa::ParseShape("f32[<=4]"), isa::ParseShape("f32[4]")));
  CHECK(SameShapeIgnoringLayout(isa::ParseShape("f32[?,3]"), isa::ParseShape("f32[9,3]")));
  CHECK_FALSE(SameShapeIgnoringLayout(isa::ParseShape("f32[2,3]"), isa::ParseShape("bf16[2,3]")));
  CHECK_FALSE(SameShapeIgnoringLayout(isa::ParseShape("(f32[2])"), isa::ParseShape("f32[2]")));
  CHECK(ShapeToStringWithoutLayout(isa::ParseShape("(f32[2,3]{0,1:T(8,128)}, s32[])")) == "(f32[2,3], s32[])");
}
