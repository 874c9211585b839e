// Array views read inside their consumers' element-wise kernels (compiler/lower/array_view.h):
// slices, transposes and reshapes that add or drop size-1 dims are never kernels of their own; the kernel's
// box DMAs read the view's source. Each module runs with `--check` (bit-exact: element-wise only,
// or the reduce's stated order), and its report names the kernels that ran.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/sim/exec_support.h"

using namespace tpusim::exec_test;

TEST_CASE("array views: the gate and up halves of one dot are read by the MLP's kernel", "[array_view]") {
  // Gemma's MLP: one dot computes both halves ([.., 2, 6912]); each half is a slice of the size-2
  // dim and a reshape dropping it, as JAX writes `jnp.split`. The dot's layout makes the size-2 dim
  // a tiled one, so each half's rows are every other row of the dot's tiles: a re-tiling box.
  const CheckedRun run = RunCheckedWithReport("array_view_mlp", R"(HloModule m
ENTRY e {
  x = bf16[1,11,1152] parameter(0)
  w = bf16[2,6912,1152] parameter(1)
  d = bf16[1,11,2,6912] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={2}
  g = bf16[1,11,1,6912] slice(d), slice={[0:1], [0:11], [0:1], [0:6912]}
  gr = bf16[1,11,6912] reshape(g)
  u = bf16[1,11,1,6912] slice(d), slice={[0:1], [0:11], [1:2], [0:6912]}
  ur = bf16[1,11,6912] reshape(u)
  t = bf16[1,11,6912] tanh(gr)
  ROOT m = bf16[1,11,6912] multiply(t, ur)
}
)");
  CHECK_THAT(run.output, Catch::Contains("check passed"));
  CHECK(run.ops == std::vector<std::string>{"d", "m"});
}

TEST_CASE("array views: a producer's two lane halves are read by two kernels, the producer written once", "[array_view]") {
  // A rotary embedding's halves: [0:128] and [128:256] of the lanes, each converted to f32.
  const CheckedRun run = RunCheckedWithReport("array_view_halves", R"(HloModule m
ENTRY e {
  a = bf16[1,11,4,256] parameter(0)
  b = bf16[1,11,4,256] parameter(1)
  m = bf16[1,11,4,256] multiply(a, b)
  lo = bf16[1,11,4,128] slice(m), slice={[0:1], [0:11], [0:4], [0:128]}
  hi = bf16[1,11,4,128] slice(m), slice={[0:1], [0:11], [0:4], [128:256]}
  lf = f32[1,11,4,128] convert(lo)
  hf = f32[1,11,4,128] convert(hi)
  ROOT r = (f32[1,11,4,128], f32[1,11,4,128]) tuple(lf, hf)
}
)");
  CHECK_THAT(run.output, Catch::Contains("check passed"));
  CHECK_THAT(run.output, Catch::Contains("every element equal"));
  CHECK(run.ops == std::vector<std::string>{"m", "lf", "hf"});
}

TEST_CASE("array views: a box off the tiles' grid, over partial rows and lanes, on both cores", "[array_view]") {
  // Columns 3..502 of 700: every tile of the view straddles two of the source's; 300 rows are 37.5
  // strips, split over both TensorCores.
  const CheckedRun run = RunCheckedWithReport("array_view_unaligned", R"(HloModule m
ENTRY e {
  a = f32[300,700] parameter(0)
  b = f32[300,500] parameter(1)
  s = f32[300,500] slice(a), slice={[0:300], [3:503]}
  ROOT r = f32[300,500] add(s, b)
}
)");
  CHECK_THAT(run.output, Catch::Contains("check passed"));
  CHECK_THAT(run.output, Catch::Contains("every element equal"));
  CHECK(run.ops == std::vector<std::string>{"r"});
}

TEST_CASE("array views: transposes of major dims and of the tiled dims, sliced, in their readers' kernels", "[array_view]") {
  // Heads to the front ([S,H,D] -> [H,S,D], the lanes kept) and a matrix transposed (the lanes
  // walk the source's rows: element by element), each sliced and added to another array.
  const CheckedRun heads = RunCheckedWithReport("array_view_heads", R"(HloModule m
ENTRY e {
  x = bf16[40,6,256] parameter(0)
  t = bf16[6,40,256] transpose(x), dimensions={1,0,2}
  s = bf16[4,40,256] slice(t), slice={[1:5], [0:40], [0:256]}
  y = bf16[4,40,256] parameter(1)
  ROOT o = bf16[4,40,256] add(s, y)
}
)");
  CHECK_THAT(heads.output, Catch::Contains("check passed"));
  CHECK_THAT(heads.output, Catch::Contains("every element equal"));
  CHECK(heads.ops == std::vector<std::string>{"o"});
  const CheckedRun matrix = RunCheckedWithReport("array_view_matrix", R"(HloModule m
ENTRY e {
  x = f32[300,130] parameter(0)
  t = f32[130,300] transpose(x), dimensions={1,0}
  y = f32[130,300] parameter(1)
  ROOT o = f32[130,300] multiply(t, y)
}
)");
  CHECK_THAT(matrix.output, Catch::Contains("check passed"));
  CHECK(matrix.ops == std::vector<std::string>{"o"});
}

TEST_CASE("array views: many blocks, and rows split into pieces where a strip does not fit twice", "[array_view]") {
  // 24 MiB of bf16 per array: many blocks of whole matrices along the major dim.
  const CheckedRun blocks = RunCheckedWithReport("array_view_blocks", R"(HloModule m
ENTRY e {
  a = bf16[64,2,3000,128] parameter(0)
  s = bf16[64,1,3000,128] slice(a), slice={[0:64], [1:2], [0:3000], [0:128]}
  r = bf16[64,3000,128] reshape(s)
  b = bf16[64,3000,128] parameter(1)
  ROOT m = bf16[64,3000,128] multiply(r, b)
}
)");
  CHECK_THAT(blocks.output, Catch::Contains("check passed"));
  CHECK(blocks.ops == std::vector<std::string>{"m"});
  // Rows of 40000 f32 columns (313 tiles a strip): blocks are pieces of one strip.
  const CheckedRun pieces = RunCheckedWithReport("array_view_pieces", R"(HloModule m
ENTRY e {
  a = f32[8,2,40000] parameter(0)
  s = f32[8,1,40000] slice(a), slice={[0:8], [1:2], [0:40000]}
  r = f32[8,40000] reshape(s)
  b = f32[8,40000] parameter(1)
  ROOT m = f32[8,40000] subtract(r, b)
}
)");
  CHECK_THAT(pieces.output, Catch::Contains("check passed"));
  CHECK(pieces.ops == std::vector<std::string>{"m"});
}

TEST_CASE("array views: a rank-1 array reshaped to rows, and a slice in a reduce's input fusion", "[array_view]") {
  // A norm's scale: bf16[1152] (tiles of 1024) read as the row of a [1,1,1152] kernel.
  const CheckedRun scale = RunCheckedWithReport("array_view_scale", R"(HloModule m
ENTRY e {
  s = bf16[1152] parameter(0)
  r = bf16[1,1,1152] reshape(s)
  one = bf16[] constant(1)
  ob = bf16[1,1,1152] broadcast(one), dimensions={}
  ROOT a = bf16[1,1,1152] add(r, ob)
}
)");
  CHECK_THAT(scale.output, Catch::Contains("check passed"));
  CHECK_THAT(scale.output, Catch::Contains("every element equal"));
  CHECK(scale.ops == std::vector<std::string>{"a"});
  const CheckedRun reduce = RunCheckedWithReport("array_view_reduce", R"(HloModule m
add { x = f32[] parameter(0)  y = f32[] parameter(1)  ROOT s = f32[] add(x, y) }
ENTRY e {
  a = f32[4,256,512] parameter(0)
  s = f32[2,256,512] slice(a), slice={[1:3], [0:256], [0:512]}
  e = f32[2,256,512] exponential(s)
  z = f32[] constant(0)
  ROOT r = f32[2,256] reduce(e, z), dimensions={2}, to_apply=add
}
)");
  CHECK_THAT(reduce.output, Catch::Contains("check passed"));
  CHECK(reduce.ops == std::vector<std::string>{"r"});
}

TEST_CASE("array views: 40 seeded random boxes of every element type, each one kernel and checked", "[array_view]") {
  // A box of a random array of rank 2..4 (odd and tile-sized dims), a third of them transposed,
  // its size-1 dims dropped or a size-1 dim added by a reshape, read by an element-wise op with a second array: the view is
  // in the op's kernel, and every element equals the evaluator's.
  std::mt19937 random(7);
  const auto pick = [&](const std::vector<int64_t>& values) { return values[random() % values.size()]; };
  const std::vector<std::string> types = {"f32", "bf16", "s32", "f16", "s8", "u8", "pred"};
  const auto shape = [](const std::string& type, const std::vector<int64_t>& dims) {
    std::string text = type + "[";
    for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
    return text + "]";
  };
  for (int module = 0; module < 40; ++module) {
    const std::string type = types[random() % types.size()];
    std::vector<int64_t> dims(2 + random() % 3);
    for (int64_t& d : dims) d = pick({1, 1, 2, 3, 5, 8, 11, 16, 33, 130, 257});
    dims.back() = pick({1, 7, 128, 129, 200, 300, 513});
    std::vector<int64_t> sizes;
    std::string box;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      const int64_t start = static_cast<int64_t>(random() % dims[i]);
      const int64_t limit = start + 1 + static_cast<int64_t>(random() % (dims[i] - start));
      sizes.push_back(limit - start);
      box += (i ? ", [" : "[") + std::to_string(start) + ":" + std::to_string(limit) + "]";
    }
    std::string hlo = "HloModule m\nENTRY e {\n  a = " + shape(type, dims) + " parameter(0)\n  s = " + shape(type, sizes) +
                      " slice(a), slice={" + box + "}\n";
    std::string top = "s";
    std::vector<int64_t> top_dims = sizes;
    if (random() % 3 == 0) {  // a transpose of the box
      std::vector<int64_t> permutation(sizes.size());
      std::iota(permutation.begin(), permutation.end(), int64_t{0});
      std::shuffle(permutation.begin(), permutation.end(), random);
      std::string list;
      for (std::size_t i = 0; i < permutation.size(); ++i) {
        top_dims[i] = sizes[permutation[i]];
        list += (i ? "," : "") + std::to_string(permutation[i]);
      }
      hlo += "  p = " + shape(type, top_dims) + " transpose(s), dimensions={" + list + "}\n";
      top = "p";
    }
    switch (random() % 3) {
      case 0: {  // the size-1 dims dropped (at least rank 2 kept)
        std::vector<int64_t> kept;
        for (int64_t d : top_dims) {
          if (d != 1) kept.push_back(d);
        }
        while (kept.size() < 2) kept.insert(kept.begin(), 1);
        if (kept != top_dims) {
          hlo += "  r = " + shape(type, kept) + " reshape(" + top + ")\n";
          top = "r";
          top_dims = kept;
        }
        break;
      }
      case 1:  // a leading size-1 dim added
        top_dims.insert(top_dims.begin(), 1);
        hlo += "  r = " + shape(type, top_dims) + " reshape(" + top + ")\n";
        top = "r";
        break;
      default:
        break;
    }
    const std::string op = type == "pred" ? "and" : std::vector<std::string>{"add", "maximum", "multiply", "subtract"}[random() % 4];
    hlo += "  b = " + shape(type, top_dims) + " parameter(1)\n  ROOT o = " + shape(type, top_dims) + " " + op + "(" + top +
           ", b)\n}\n";
    INFO(hlo);
    const CheckedRun run = RunCheckedWithReport("array_view_random_" + std::to_string(module), hlo);
    CHECK_THAT(run.output, Catch::Contains("check passed"));
    CHECK(run.ops == std::vector<std::string>{"o"});
  }
}
