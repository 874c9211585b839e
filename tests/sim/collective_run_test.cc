// End-to-end runs of cross-device ops for the one simulated device (docs/compiler.md,
// "Collectives"): groups of one device pass --check bit for bit; partition-id and replica-id give
// --device-id's ids; a ring all-reduce and all-gather over 8 devices take the time of the ring
// formula on the configured ICI (bounds below); multi-device collectives with data, groups that
// are no ring and devices outside the module are refused with messages that say what to do.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "isa/npy.h"
#include "tests/sim/exec_support.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;

const char* const kSum =
    "add.clone {\n  x = bf16[] parameter(0)\n  y = bf16[] parameter(1)\n  ROOT s = bf16[] add(x, y)\n}\n"
    "fsum {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n";

fs::path WriteModule(const std::string& name, const std::string& text) {
  const fs::path path = TempDir("collective_" + name) / "module.hlo";
  WriteText(path, text);
  return path;
}

// The arguments of `tpusim run MODULE ARGS`.
std::string RunCommand(const fs::path& module, const std::string& args) { return "run " + module.string() + " " + args; }

uint32_t OutputU32(const fs::path& dir, int index) {
  const auto array = ReadOutput(dir / ("output_" + std::to_string(index) + ".npy"), ElementType::kU32);
  REQUIRE(array.data.size() == 4);
  uint32_t value = 0;
  std::memcpy(&value, array.data.data(), 4);
  return value;
}

// The device time of a module whose only kernel is the collective, on tpu_v4 in timing-only mode.
double TimingOnlyUs(const fs::path& module) {
  const fs::path report = module.parent_path() / "report.json";
  RunOk(RunCommand(module, "--timing-only --config tpu_v4 --report " + report.string()));
  return ReportNumber(report, "device_time_us");
}

}  // namespace

TEST_CASE("collectives over a group of one device are copies and pass --check", "[sim][collectives]") {
  // One device: all-reduce with no replica_groups, an f32 scalar (JAX's loss all-reduce), and an
  // all-gather; then two partitions each in its own group, run as device 1.
  const std::string one = std::string("HloModule one\n") + kSum +
                          "ENTRY e {\n  a = bf16[64,256]{1,0} parameter(0)\n  l = f32[] parameter(1)\n"
                          "  g = f32[40,130]{1,0} parameter(2)\n"
                          "  r = bf16[64,256]{1,0} all-reduce(a), to_apply=add.clone\n"
                          "  s = f32[] all-reduce(l), to_apply=fsum\n"
                          "  t = f32[40,130]{1,0} all-gather(g), dimensions={0}\n"
                          "  u = f32[40,130]{1,0} reduce-scatter(g), dimensions={1}, to_apply=fsum\n"
                          "  ROOT o = (bf16[64,256]{1,0}, f32[], f32[40,130]{1,0}, f32[40,130]{1,0}) tuple(r, s, t, u)\n}\n";
  const std::string first = RunOk(RunCommand(WriteModule("one", one), "--check --config tpu_v4"));
  CHECK_THAT(first, Catch::Contains("check passed: 4 output(s)") && Catch::Contains("every element equal"));

  const std::string split = std::string("HloModule split, num_partitions=2\n") + kSum +
                            "ENTRY e {\n  a = bf16[16,384]{1,0} parameter(0)\n"
                            "  r = bf16[16,384]{1,0} all-reduce(a), channel_id=1, replica_groups={{0},{1}}, "
                            "use_global_device_ids=true, to_apply=add.clone\n"
                            "  g = bf16[16,384]{0,1} all-gather(a), channel_id=2, replica_groups={{0},{1}}, dimensions={1}, "
                            "use_global_device_ids=true\n"
                            "  ROOT o = (bf16[16,384]{1,0}, bf16[16,384]{0,1}) tuple(r, g)\n}\n";
  const std::string second = RunOk(RunCommand(WriteModule("split", split), "--check --config tiny --device-id 1"));
  CHECK_THAT(second, Catch::Contains("check passed: 2 output(s)") && Catch::Contains("every element equal"));
}

TEST_CASE("collective-permute is exact where no other device's data is needed", "[sim][collectives]") {
  // Device 0 keeps its own operand in b ({0,0}) and receives nothing in c (zeros, XLA's rule) while
  // sending to device 1; device 3 receives nothing in either. Device 2 receives from device 1 in b:
  // refused with data, timing-only runs.
  const fs::path module = WriteModule(
      "permute", "HloModule permute, num_partitions=4\nENTRY e {\n  a = f32[64,256]{1,0} parameter(0)\n"
                 "  b = f32[64,256]{1,0} collective-permute(a), channel_id=1, source_target_pairs={{0,0},{1,2}}\n"
                 "  c = f32[64,256]{1,0} collective-permute(a), channel_id=2, source_target_pairs={{0,1},{1,2}}\n"
                 "  ROOT t = (f32[64,256]{1,0}, f32[64,256]{1,0}) tuple(b, c)\n}\n");
  for (const char* device : {"0", "3"}) {
    const std::string output = RunOk(RunCommand(module, std::string("--check --config tiny --device-id ") + device));
    CHECK_THAT(output, Catch::Contains("check passed: 2 output(s)") && Catch::Contains("every element equal"));
  }
  const std::string refused = RunExpectingError(RunCommand(module, "--config tiny --device-id 2"));
  CHECK_THAT(refused, Catch::Contains("instruction 'b': collective-permute from device 1 needs the other "
                                      "devices' data"));
  RunOk(RunCommand(module, "--timing-only --config tiny --device-id 2"));
}

TEST_CASE("partition-id and replica-id read the simulated device's ids", "[sim][collectives]") {
  // 2 replicas x 4 partitions: device 6 is partition 6 % 4 = 2 of replica 6 / 4 = 1.
  const fs::path module = WriteModule("ids", "HloModule ids, replica_count=2, num_partitions=4\nENTRY e {\n"
                                             "  p = u32[] partition-id()\n  r = u32[] replica-id()\n"
                                             "  ROOT t = (u32[], u32[]) tuple(p, r)\n}\n");
  const fs::path out = module.parent_path() / "out";
  RunOk(RunCommand(module, "--check --config tiny --device-id 6 --out " + out.string()));
  CHECK(OutputU32(out, 0) == 2);
  CHECK(OutputU32(out, 1) == 1);
  RunOk(RunCommand(module, "--config tiny --out " + out.string()));  // device 0 by default
  CHECK(OutputU32(out, 0) == 0);
  CHECK(OutputU32(out, 1) == 0);
  CHECK_THAT(RunExpectingError(RunCommand(module, "--config tiny --device-id 8")),
             Catch::Contains("--device-id 8: module 'ids' runs on 8 device(s) (replica_count=2 x "
                             "num_partitions=4), numbered 0 to 7"));
}

TEST_CASE("an 8-way all-reduce with data is refused and runs in timing-only mode", "[sim][collectives]") {
  const fs::path module = WriteModule(
      "refused", std::string("HloModule llama_like, num_partitions=8\n") + kSum +
                     "ENTRY e {\n  a = bf16[512,1024]{1,0} parameter(0)\n"
                     "  ROOT r = bf16[512,1024]{1,0} all-reduce(a), channel_id=15, replica_groups=[1,8]<=[8], "
                     "use_global_device_ids=true, to_apply=add.clone\n}\n");
  const std::string refused_data = RunExpectingError(RunCommand(module, "--config tpu_v4"));
  CHECK_THAT(refused_data, Catch::Contains("instruction 'r': all-reduce over a group of 8 devices needs the other devices' "
                                         "data, which a simulation of one device does not have; run it with `tpusim run "
                                         "--timing-only`"));
  RunOk(RunCommand(module, "--timing-only --config tpu_v4 --device-id 3"));
  // A group that is no ring along one axis is refused in timing-only mode too.
  const fs::path uneven = WriteModule(
      "uneven", std::string("HloModule uneven, num_partitions=8\n") + kSum +
                    "ENTRY e {\n  a = bf16[512,1024]{1,0} parameter(0)\n"
                    "  ROOT r = bf16[512,1024]{1,0} all-reduce(a), channel_id=15, replica_groups={{0,1,3,6},{2,4,5,7}}, "
                    "use_global_device_ids=true, to_apply=add.clone\n}\n");
  const std::string refused = RunExpectingError(RunCommand(uneven, "--timing-only --config tpu_v4"));
  CHECK_THAT(refused, Catch::Contains("devices {0,1,3,6}, which are not evenly spaced"));
}

TEST_CASE("ring all-reduce and all-gather times follow the ring formula on tpu_v4", "[sim][collectives]") {
  const tpusim::ArchConfig v4 = LoadPreset("tpu_v4");
  const double rate = v4.ici().link_bandwidth_gbps() * 1e9 * v4.ici().ring_link_count();  // bytes/s each way
  const double hop_us = v4.ici().latency_ns() / 1e3;
  const int n = 8;
  // All-reduce of B = bf16[4096,2048] = 16 MiB: 2(n-1) steps of B/n bytes each way, one hop each.
  const double bytes = 4096.0 * 2048 * 2;
  const double ring_us = 2.0 * (n - 1) / n * bytes / rate * 1e6 + 2 * (n - 1) * hop_us;  // 307.6 us
  const double all_reduce_us = TimingOnlyUs(WriteModule(
      "ring", std::string("HloModule ring, num_partitions=8\n") + kSum +
                  "ENTRY e {\n  a = bf16[4096,2048]{1,0} parameter(0)\n"
                  "  ROOT r = bf16[4096,2048]{1,0} all-reduce(a), channel_id=15, replica_groups=[1,8]<=[8], "
                  "use_global_device_ids=true, to_apply=add.clone\n}\n"));
  // Lower bound: every step receives B/n bytes over the incoming direction and starts idle (the
  // step waits for the previous one), so it cannot beat the formula. Upper bound: beyond the link
  // time, each reduce-scatter step adds the last of its 8 blocks' load, add and store (a block is
  // B/64 bytes at HBM speed, six times the link's) and each step a few DMA issues and HBM
  // latencies: 20% covers it (measured 12%).
  CHECK(all_reduce_us >= ring_us);
  CHECK(all_reduce_us <= 1.2 * ring_us);
  // All-gather of 8 shards bf16[512,2048] (2 MiB) into 16 MiB: n-1 steps of one shard, one hop each.
  const double shard = 512.0 * 2048 * 2;
  const double gather_us = (n - 1) * (shard / rate * 1e6 + hop_us);  // 153.8 us
  const double all_gather_us = TimingOnlyUs(WriteModule(
      "gather", "HloModule gather, num_partitions=8\nENTRY e {\n  a = bf16[512,2048]{1,0} parameter(0)\n"
                "  ROOT g = bf16[4096,2048]{1,0} all-gather(a), channel_id=1, replica_groups=[1,8]<=[8], "
                "dimensions={0}, use_global_device_ids=true\n}\n"));
  CHECK(all_gather_us >= gather_us);
  // Beyond the link time: the local shard's copy (overlapping the first step) and each step's DMA
  // issue: 10%.
  CHECK(all_gather_us <= 1.1 * gather_us);
  // Reduce-scatter of the same 16 MiB into bf16[512,2048]: the first half of the all-reduce, n-1
  // steps of B/n. Its fixed costs per step are the all-reduce's reduce-scatter steps' (the last
  // block's load, add and store): 30% of this shorter time (measured 23%).
  const double scatter_us = (n - 1) * (bytes / n / rate * 1e6 + hop_us);  // 153.8 us
  const double reduce_scatter_us = TimingOnlyUs(WriteModule(
      "scatter", std::string("HloModule scatter, num_partitions=8\n") + kSum +
                     "ENTRY e {\n  a = bf16[4096,2048]{1,0} parameter(0)\n"
                     "  ROOT r = bf16[512,2048]{1,0} reduce-scatter(a), channel_id=1, replica_groups=[1,8]<=[8], "
                     "dimensions={0}, use_global_device_ids=true, to_apply=add.clone\n}\n"));
  CHECK(reduce_scatter_us >= scatter_us);
  CHECK(reduce_scatter_us <= 1.3 * scatter_us);
}
