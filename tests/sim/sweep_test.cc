// Issue 20: `tpusim sweep` (sim/sweep/): a sweep file expanded into points (grid, zip, ranges), its
// errors with file:line:col before any point runs, every point a timing-only run whose numbers
// are the ones `tpusim run` reports, results.csv resumable and deterministic, shards merged by
// `tpusim sweep-merge` into the serial run's file, and a failing point reported, not hidden.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "isa/error.h"
#include "sim/sweep/sweep_plan.h"
#include "sim/sweep/sweep_results.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::sim::LoadSweep;
using tpusim::sim::SweepPlan;

// A small element-wise module: each point runs in well under a second.
const std::string kModule = R"(HloModule add
ENTRY e {
  x = f32[256,512] parameter(0)
  y = f32[256,512] parameter(1)
  ROOT a = f32[256,512] add(x, y)
}
)";

// Writes the module and `sweep` into a fresh directory; returns the sweep file.
fs::path WriteSweep(const std::string& name, const std::string& sweep) {
  const fs::path dir = TempDir("sweep_" + name);
  WriteText(dir / "add.hlo", kModule);
  WriteText(dir / "s.pbtxt", sweep);
  return dir / "s.pbtxt";
}

std::string ErrorOf(const fs::path& sweep) {
  try {
    LoadSweep(sweep.string());
  } catch (const tpusim::Error& e) {
    return e.what();
  }
  return "";
}

const std::string kTwoAxes = R"(name: "two"
workloads { hlo: "add.hlo" }
axes { path: "hbm.channel_count" values: ["16", "32"] }
axes { path: "tensor_core.vpu.elementwise.throughput_vregs_per_cycle" range { start: 1 stop: 2 step: 1 } }
)";

}  // namespace

TEST_CASE("sweep plan: a grid varies the last axis fastest, zip pairs values, ranges step or multiply", "[sweep]") {
  const SweepPlan grid = LoadSweep(WriteSweep("grid", kTwoAxes).string());
  REQUIRE(grid.points.size() == 4);
  CHECK(grid.axis_paths == std::vector<std::string>{"hbm.channel_count",
                                                     "tensor_core.vpu.elementwise.throughput_vregs_per_cycle"});
  CHECK(grid.points[1].axis_values == std::vector<std::string>{"16", "2"});
  CHECK(grid.points[2].axis_values == std::vector<std::string>{"32", "1"});
  CHECK(grid.points[3].overrides.back() == "tensor_core.vpu.elementwise.throughput_vregs_per_cycle=2");
  CHECK(grid.points[0].workload == "add");
  CHECK(grid.points[0].config == "tpu_v4");
  // Ids: the index, then a hash of what the point runs: distinct, and the same when loaded again.
  CHECK(grid.points[0].id.starts_with("0000-"));
  CHECK(grid.points[3].id.starts_with("0003-"));
  CHECK(grid.points[0].id != grid.points[1].id);
  CHECK(LoadSweep(grid.source).points[3].id == grid.points[3].id);

  const SweepPlan zip = LoadSweep(WriteSweep("zip", R"(workloads { name: "sum" hlo: "add.hlo" }
mode: AXIS_MODE_ZIP
axes { path: "hbm.channel_count" range { start: 4 stop: 16 factor: 2 } }
axes { path: "hbm.channel_bandwidth_gbps" values: ["10", "20", "40"] }
)").string());
  REQUIRE(zip.points.size() == 3);
  CHECK(zip.points[0].workload == "sum");
  CHECK(zip.points[2].axis_values == std::vector<std::string>{"16", "40"});
}

TEST_CASE("sweep plan: bad files and unknown --set paths are refused with their place, before any point runs",
          "[sweep]") {
  auto error = [](const std::string& name, const std::string& text) { return ErrorOf(WriteSweep(name, text)); };
  CHECK_THAT(error("unknown", "workloads { hlo: \"add.hlo\" }\naxis { path: \"x\" }\n"),
             Catch::Contains("s.pbtxt:2:1: Message type \"tpusim.Sweep\" has no field named \"axis\""));
  CHECK_THAT(error("nohlo", "workloads { name: \"w\" }\n"),
             Catch::Contains("s.pbtxt:1:1: a workload needs `hlo`: its HLO file"));
  CHECK_THAT(error("nofile", "workloads { hlo: \"missing.hlo\" }\n"), Catch::Contains("s.pbtxt:1:1: no such HLO file: "));
  CHECK_THAT(error("none", "name: \"empty\"\n"), Catch::Contains("a sweep names at least one workload"));
  CHECK_THAT(error("both", "workloads { hlo: \"add.hlo\" }\naxes { path: \"hbm.channel_count\" values: \"8\" "
                           "range { start: 1 stop: 2 step: 1 } }\n"),
             Catch::Contains("s.pbtxt:2:1: axis 'hbm.channel_count' needs either `values` or a `range`, not both"));
  CHECK_THAT(error("range", "workloads { hlo: \"add.hlo\" }\naxes { path: \"hbm.channel_count\"\n  range { start: 4 stop: 2 "
                            "step: 1 } }\n"),
             Catch::Contains("s.pbtxt:3:3: a range's `stop` is below its `start`"));
  CHECK_THAT(error("zip", "workloads { hlo: \"add.hlo\" }\nmode: AXIS_MODE_ZIP\naxes { path: \"hbm.channel_count\" "
                          "values: [\"8\", \"16\"] }\naxes { path: \"hbm.channel_bandwidth_gbps\" values: \"10\" }\n"),
             Catch::Contains("s.pbtxt:4:1: zipped axes have one length: 'hbm.channel_bandwidth_gbps' has 1 values, "
                             "'hbm.channel_count' 2"));
  // An axis whose path the configuration does not have: named at the axis.
  CHECK_THAT(error("path", "workloads { hlo: \"add.hlo\" }\naxes { path: \"hbm.channels\" values: \"8\" }\n"),
             Catch::Contains("s.pbtxt:2:1: axis 'hbm.channels': --set hbm.channels=8: "));
  // A value the configuration refuses: named with its point.
  CHECK_THAT(error("value", "workloads { hlo: \"add.hlo\" }\naxes { path: \"hbm.channel_count\" values: [\"8\", \"0\"] }\n"),
             Catch::Contains("point 0001-") && Catch::Contains("hbm.channel_count=0"));
}

TEST_CASE("tpusim sweep: each point's numbers are its run's, results.csv is deterministic and the sweep resumable",
          "[sweep][run]") {
  const fs::path sweep = WriteSweep("run", kTwoAxes);
  const fs::path dir = sweep.parent_path();
  const std::string first = RunOk("sweep " + sweep.string() + " -o " + (dir / "out").string() + " --jobs 2");
  CHECK_THAT(first, Catch::Contains("4 points, 4 to run (0 done before), 2 at a time"));
  CHECK_THAT(first, Catch::Contains("results.csv: 4 points, 0 failed"));
  const std::string csv = ReadText(dir / "out" / "results.csv");
  const tpusim::sim::CsvTable table = tpusim::sim::ParseCsv(csv, "results.csv");
  REQUIRE(table.rows.size() == 4);
  CHECK(table.header[3] == "hbm.channel_count");
  CHECK(table.header[5] == "status");
  CHECK(table.header.back() == "error");
  // Point 2 (32 channels, 1 vreg a cycle) is the run of the same settings by hand.
  RunOk("run " + (dir / "add.hlo").string() + " --timing-only --set hbm.channel_count=32 "
        "--set tensor_core.vpu.elementwise.throughput_vregs_per_cycle=1 --report " + (dir / "by_hand.json").string());
  CHECK(table.rows[2][5] == "ok");
  CHECK(std::stod(table.rows[2][6]) == ReportNumber(dir / "by_hand.json", "device_time_us"));
  CHECK(ReadText(dir / "out" / "points" / (table.rows[2][0] + ".json")) == ReadText(dir / "by_hand.json"));
  // Again: nothing to run, the same file; and a fresh directory gets the same bytes.
  CHECK_THAT(RunOk("sweep " + sweep.string() + " -o " + (dir / "out").string()),
             Catch::Contains("4 points, 0 to run (4 done before)"));
  CHECK(ReadText(dir / "out" / "results.csv") == csv);
  RunOk("sweep " + sweep.string() + " -o " + (dir / "again").string() + " --quiet");
  CHECK(ReadText(dir / "again" / "results.csv") == csv);

  // Two shards merged are the serial file; a shard twice, or one missing, is refused by id.
  RunOk("sweep " + sweep.string() + " -o " + (dir / "s0").string() + " --shard 0/2 --quiet");
  RunOk("sweep " + sweep.string() + " -o " + (dir / "s1").string() + " --shard 1/2 --quiet");
  CHECK(tpusim::sim::ParseCsv(ReadText(dir / "s1" / "results.csv"), "s1").rows.size() == 2);
  RunOk("sweep-merge " + (dir / "s1").string() + " " + (dir / "s0").string() + " -o " + (dir / "merged").string());
  CHECK(ReadText(dir / "merged" / "results.csv") == csv);
  CHECK_THAT(RunExpectingError("sweep-merge " + (dir / "s0").string() + " " + (dir / "s0").string() + " -o " +
                               (dir / "m2").string()),
             Catch::Contains("points in two shards: " + table.rows[0][0] + ", " + table.rows[2][0]));
  CHECK_THAT(RunExpectingError("sweep-merge " + (dir / "s0").string() + " -o " + (dir / "m3").string()),
             Catch::Contains("points in no shard (2 of 4): " + table.rows[1][0] + ", " + table.rows[3][0]));
}

TEST_CASE("tpusim sweep: a point that fails is in results.csv with its error, and the sweep exits non-zero", "[sweep][run]") {
  // The sort of 8-bit integers is not lowered: compiling it fails in the point's run.
  const fs::path sweep = WriteSweep("fail", "workloads { hlo: \"add.hlo\" }\nworkloads { hlo: \"bad.hlo\" }\n");
  WriteText(sweep.parent_path() / "bad.hlo", R"(HloModule bad
cmp {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = s8[128,256] parameter(0)
  ROOT s = s8[128,256] sort(x), dimensions={1}, to_apply=cmp
}
)");
  const std::string out = RunExpectingError("sweep " + sweep.string() + " -o " + (sweep.parent_path() / "out").string());
  CHECK_THAT(out, Catch::Contains("1 of 2 points failed; results.csv has their errors"));
  const tpusim::sim::CsvTable table =
      tpusim::sim::ParseCsv(ReadText(sweep.parent_path() / "out" / "results.csv"), "results.csv");
  REQUIRE(table.rows.size() == 2);
  CHECK(table.rows[0][3] == "ok");
  CHECK(table.rows[1][3] == "failed");
  CHECK_THAT(table.rows[1].back(), Catch::Contains("bad.hlo:9:8: instruction 's': cannot lower sort"));
}

TEST_CASE("tpusim sweep: the example sweep of the repository runs its 6 points", "[sweep][run]") {
  const fs::path dir = TempDir("sweep_example");
  const std::string out =
      RunOk("sweep " + std::string(TPUSIM_SOURCE_DIR) + "/configs/sweeps/example.pbtxt -o " + dir.string() + " --quiet");
  CHECK_THAT(out, Catch::Contains("6 points, 0 failed"));
}
