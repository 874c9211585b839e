// Issue 19, item 1: an SPMD module's device counts from --num-replicas and --num-partitions (XLA's
// runner flags), or, where the HloModule line gives none, from what its collectives' groups name
// (with a warning); parse, eval, opt, compile and run all take them.
#include <catch2/catch.hpp>

#include <string>

#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;

// An all-gather over 8 devices by global id, and no counts on the HloModule line (as XLA writes a
// module whose runner takes them from flags).
const std::string kAllGather = R"(HloModule ag
ENTRY e {
  x = bf16[512,128] parameter(0)
  ROOT g = bf16[4096,128] all-gather(x), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, use_global_device_ids=true
}
)";

fs::path Write(const std::string& name, const std::string& text) {
  const fs::path path = TempDir("device_counts") / name;
  WriteText(path, text);
  return path;
}

}  // namespace

TEST_CASE("device counts: a module without counts is verified with the partitions its groups name, and says so",
          "[run][devices]") {
  const fs::path module = Write("ag.hlo", kAllGather);
  const std::string parsed = RunOk("parse " + module.string() + " --print");
  CHECK_THAT(parsed, Catch::Contains("warning: " + module.string() +
                                     ": its collectives' groups name 8 partitions and its HloModule line gives no "
                                     "num_partitions: taking num_partitions=8 (--num-partitions sets it)"));
  CHECK_THAT(parsed, Catch::Contains("HloModule ag, num_partitions=8"));
  // With the flag, the same counts and no warning; run simulates device 0 of 8.
  CHECK_THAT(RunOk("parse " + module.string() + " --num-partitions 8"), !Catch::Contains("warning"));
  CHECK_THAT(RunOk("run " + module.string() + " --num-partitions 8 --timing-only"), Catch::Contains("module ag on tpu_v4"));
  // compile verifies it with 8 too, and then says why a program with data cannot hold it.
  CHECK_THAT(RunExpectingError("compile " + module.string() + " --num-partitions 8 -o " +
                               (module.parent_path() / "ag.s").string()),
             Catch::Contains("all-gather over a group of 8 devices needs the other devices' data"));
  // 4 partitions: the global ids 0..7 then need 2 replicas.
  CHECK_THAT(RunOk("opt " + module.string() + " --num-partitions 4"),
             Catch::Contains("name 2 replicas and its HloModule line gives no replica_count: taking replica_count=2"));
}

TEST_CASE("device counts: a flag that contradicts the HloModule line, or below 1, is refused, and stated counts are checked",
          "[run][devices]") {
  const fs::path stated = Write("cp.hlo", R"(HloModule cp, num_partitions=2
ENTRY e {
  x = f32[8,128] parameter(0)
  ROOT r = f32[8,128] collective-permute(x), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
}
)");
  CHECK_THAT(RunExpectingError("parse " + stated.string() + " --num-partitions 4"),
             Catch::Contains(stated.string() + ": --num-partitions 4, but its HloModule line says num_partitions=2"));
  // The line's count holds: partition 2 does not exist, with the place of the instruction.
  CHECK_THAT(RunExpectingError("parse " + stated.string()),
             Catch::Contains(stated.string() + ":4:8: instruction 'r': source_target_pairs (as a source) names "
                                               "partition 2, but there are 2 (ids 0..1)"));
  CHECK_THAT(RunExpectingError("eval " + Write("ag.hlo", kAllGather).string() + " --num-replicas -1 --out " +
                               stated.parent_path().string()),
             Catch::Contains("--num-replicas must be at least 1, not -1"));
}
