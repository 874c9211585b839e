// Iotas computed in their readers' kernels (compiler/passes/elementwise_fusion.h, ExprNode::kIota
// in compiler/lower/elementwise_kernel.cc): along the lanes, the rows and a major dim, in s32, f32
// and bf16, over partial rows and lanes and both TensorCores, in a reduce's producer, each run with
// `--check`; where the kernel cannot compute one, the iota is a kernel of its own, still checked.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "tests/sim/exec_support.h"

using namespace tpusim::exec_test;

TEST_CASE("iotas: along the lanes, an s32 iota is computed in its reader's kernel, never written", "[iota_fusion]") {
  // 256 rows of 512: 32 strips of 4 tiles over both cores; tile t of a strip adds 128 t.
  const CheckedRun run = RunCheckedWithReport("iota_lanes", R"(HloModule m
ENTRY e {
  x = s32[256,512] parameter(0)
  i = s32[256,512] iota(), iota_dimension=1
  ROOT r = s32[256,512] add(x, i)
}
)");
  CHECK_THAT(run.output, Catch::Contains("check passed"));
  CHECK_THAT(run.output, Catch::Contains("every element equal"));
  CHECK(run.ops == std::vector<std::string>{"r"});
}

TEST_CASE("iotas: a causal mask from row and column iotas over partial rows and lanes is one kernel", "[iota_fusion]") {
  // 1000 rows (125 strips, blocks looped) of 200 columns (the second tile's last 56 lanes are
  // padding): y = row >= column ? x : -1e9, as attention's causal mask.
  const CheckedRun run = RunCheckedWithReport("iota_causal", R"(HloModule m
ENTRY e {
  x = f32[1000,200] parameter(0)
  row = s32[1000,200] iota(), iota_dimension=0
  column = s32[1000,200] iota(), iota_dimension=1
  keep = pred[1000,200] compare(row, column), direction=GE
  low = f32[] constant(-1e9)
  lows = f32[1000,200] broadcast(low), dimensions={}
  ROOT r = f32[1000,200] select(keep, x, lows)
}
)");
  CHECK_THAT(run.output, Catch::Contains("check passed"));
  CHECK_THAT(run.output, Catch::Contains("every element equal"));
  CHECK(run.ops == std::vector<std::string>{"r"});
}

TEST_CASE("iotas: f32 iotas along every dim of a rank-3 array, and a bf16 one rounded", "[iota_fusion]") {
  // f32[3,40,256]: the major dim's index comes from the strip's by division (5 strips a matrix,
  // the last partial); 10000 i + 300 j + k is exact in f32.
  const CheckedRun f32 = RunCheckedWithReport("iota_rank3", R"(HloModule m
ENTRY e {
  x = f32[3,40,256] parameter(0)
  i = f32[3,40,256] iota(), iota_dimension=0
  j = f32[3,40,256] iota(), iota_dimension=1
  k = f32[3,40,256] iota(), iota_dimension=2
  a = f32[] constant(10000)
  ab = f32[3,40,256] broadcast(a), dimensions={}
  b = f32[] constant(300)
  bb = f32[3,40,256] broadcast(b), dimensions={}
  ia = f32[3,40,256] multiply(i, ab)
  jb = f32[3,40,256] multiply(j, bb)
  s = f32[3,40,256] add(ia, jb)
  t = f32[3,40,256] add(s, k)
  ROOT r = f32[3,40,256] add(t, x)
}
)");
  CHECK_THAT(f32.output, Catch::Contains("every element equal"));
  CHECK(f32.ops == std::vector<std::string>{"r"});
  // Columns up to 1023 in bf16: above 256 they round to 8 significant bits, as XLA's iota does.
  const CheckedRun bf16 = RunCheckedWithReport("iota_bf16", R"(HloModule m
ENTRY e {
  x = bf16[16,1024] parameter(0)
  i = bf16[16,1024] iota(), iota_dimension=1
  ROOT r = bf16[16,1024] multiply(x, i)
}
)");
  CHECK_THAT(bf16.output, Catch::Contains("every element equal"));
  CHECK(bf16.ops == std::vector<std::string>{"r"});
}

TEST_CASE("iotas: a broadcast rank-1 iota is computed as the iota of the broadcast's shape", "[iota_fusion]") {
  // JAX's arange(512)[None, :] and arange(40)[:, None] over [3,40,512]: no iota kernel, no
  // broadcast; the values go along the dims the iotas' dims go to.
  const CheckedRun run = RunCheckedWithReport("iota_broadcast", R"(HloModule m
ENTRY e {
  x = s32[3,40,512] parameter(0)
  c = s32[512] iota(), iota_dimension=0
  cb = s32[3,40,512] broadcast(c), dimensions={2}
  r = s32[40] iota(), iota_dimension=0
  rb = s32[3,40,512] broadcast(r), dimensions={1}
  k = s32[] constant(1000)
  kb = s32[3,40,512] broadcast(k), dimensions={}
  rk = s32[3,40,512] multiply(rb, kb)
  s = s32[3,40,512] add(rk, cb)
  ROOT o = s32[3,40,512] add(x, s)
}
)");
  CHECK_THAT(run.output, Catch::Contains("every element equal"));
  CHECK(run.ops == std::vector<std::string>{"o"});
}

TEST_CASE("iotas: in a reduce's producer, an iota is computed there too", "[iota_fusion]") {
  // A weighted row sum: the reduce kernel's producer computes the column index (s19 is the
  // producer's strip index, which the reduce leaves alone).
  const CheckedRun reduce = RunCheckedWithReport("iota_reduce", R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,256] parameter(0)
  i = f32[64,256] iota(), iota_dimension=1
  w = f32[64,256] multiply(x, i)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(w, z), dimensions={1}, to_apply=add
}
)");
  CHECK_THAT(reduce.output, Catch::Contains("check passed"));
  CHECK(reduce.ops == std::vector<std::string>{"r"});
}

TEST_CASE("iotas: over rows longer than a body, each body's first column from the tile loop", "[iota_fusion]") {
  // Rows of 65 tiles (until 2026-11-28 an iota kernel of its own), of 40 (more than a body's
  // tiles, which the emitter refused after fusion had let the iota in: "its rows of 40 tiles are
  // too long"), a broadcast rank-1 iota over rows of 65, a column iota over such rows, and rows
  // that do not fit VMEM twice (f32 [8,700000], 22 MB a row of tiles: pieces of a row, each
  // piece's first column its place in the row; 700000 is not a multiple of 128: the last tile
  // partial). Llama's one-hot iota `s32[1,8192,128256]` (rows of 1002 tiles) was a 4.2 GB array
  // of its own.
  for (const auto& [name, hlo] : std::vector<std::pair<std::string, std::string>>{
           {"iota_long", "x = s32[8,8320] parameter(0)\n  i = s32[8,8320] iota(), iota_dimension=1\n"
                         "  ROOT r = s32[8,8320] add(x, i)"},
           {"iota_40_tiles", "x = s32[16,5000] parameter(0)\n  i = s32[16,5000] iota(), iota_dimension=1\n"
                             "  ROOT r = s32[16,5000] add(x, i)"},
           {"iota_broadcast_long", "x = s32[8,8320] parameter(0)\n  i = s32[8320] iota(), iota_dimension=0\n"
                                   "  ib = s32[8,8320] broadcast(i), dimensions={1}\n  ROOT r = s32[8,8320] add(x, ib)"},
           {"iota_rows_long", "x = s32[3,8,9000] parameter(0)\n  i = s32[3,8,9000] iota(), iota_dimension=0\n"
                              "  j = s32[3,8,9000] iota(), iota_dimension=1\n  k = s32[3,8,9000] add(i, j)\n"
                              "  ROOT r = s32[3,8,9000] add(x, k)"},
           {"iota_pieces", "x = f32[8,700000] parameter(0)\n  i = f32[8,700000] iota(), iota_dimension=1\n"
                           "  ROOT r = f32[8,700000] add(x, i)"},
       }) {
    INFO(name);
    const CheckedRun run = RunCheckedWithReport(name, "HloModule m\nENTRY e {\n  " + hlo + "\n}\n");
    CHECK_THAT(run.output, Catch::Contains("every element equal"));
    CHECK(run.ops == std::vector<std::string>{"r"});
  }
}

TEST_CASE("iotas: where the kernel cannot compute one, the iota is a kernel of its own", "[iota_fusion]") {
  // A column-major layout's rows are not the iota's.
  const CheckedRun column_major = RunCheckedWithReport("iota_column_major", R"(HloModule m
ENTRY e {
  x = s32[256,512]{0,1} parameter(0)
  i = s32[256,512]{0,1} iota(), iota_dimension=1
  ROOT r = s32[256,512]{0,1} add(x, i)
}
)");
  CHECK_THAT(column_major.output, Catch::Contains("every element equal"));
  CHECK(column_major.ops == std::vector<std::string>{"i", "r"});
}

TEST_CASE("iotas: a kernel that cannot compute an iota reads it, the others still compute it", "[iota_fusion]") {
  // c writes pred, 8-bit rows its body cannot compute an iota over: it reads i from HBM, written
  // by a kernel of its own. a computes i in registers all the same: it moves x (256 KiB) and its
  // result (256 KiB), not i's 256 KiB too (until 2026-11-28 one such reader took the iota out of
  // every kernel: Llama's 4.2 GB one-hot iota, read by a reduce that could not hold it, was
  // written whole for all its readers).
  const CheckedRun run = RunCheckedWithReport("iota_per_kernel", R"(HloModule m
ENTRY e {
  x = s32[64,1024] parameter(0)
  i = s32[64,1024] iota(), iota_dimension=1
  a = s32[64,1024] add(x, i)
  c = pred[64,1024] compare(x, i), direction=GE
  ROOT t = (s32[64,1024], pred[64,1024]) tuple(a, c)
}
)");
  CHECK_THAT(run.output, Catch::Contains("check passed: 2 output(s)"));
  CHECK(run.ops == std::vector<std::string>{"i", "c", "a"});
  // Each op's bytes, from its entry in the report (found by its name).
  const std::string report = ReadText(TempDir("iota_per_kernel") / "r.json");
  const auto bytes = [&](const std::string& name) {
    const std::size_t at = report.find("\"name\": \"" + name + "\"");
    REQUIRE(at != std::string::npos);
    return JsonNumber(report, "bytes_accessed", at);
  };
  CHECK(bytes("a") == 2 * 64 * 1024 * 4);
  CHECK(bytes("c") == 2 * 64 * 1024 * 4 + 64 * 1024);
}
