// Collectives for the one simulated device (compiler/lower/collective_group.h,
// collective_kernel.h): which ring a device joins in each of XLA's group modes, the refusals
// (functional multi-device collectives, groups that are no ring, devices outside the module), and
// the shape of the emitted ring (its step count and ICI transfers).
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/lower/collective_group.h"
#include "compiler/lower/compile.h"
#include "tests/compiler/compile_test_support.h"

namespace {

using namespace tpusim;
using tpusim::compiler_test::CompileErrorOf;
using tpusim::compiler_test::SmallTargetOptions;

std::string AllReduceModule(const std::string& header, const std::string& attributes, const std::string& shape = "f32[256,128]") {
  return "HloModule m" + header +
         "\nsum {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
         "ENTRY e {\n  a = " + shape + " parameter(0)\n  ROOT r = " + shape + " all-reduce(a), " + attributes +
         ", to_apply=sum\n}\n";
}

compiler::CollectiveRing RingFor(const std::string& text, int64_t device) {
  auto module = hlo::ParseModule(text, "test.hlo");
  return compiler::RingOf(*module->entry()->root(), compiler::DevicesOf(*module), device);
}

}  // namespace

TEST_CASE("a collective's ring is its device's group in XLA's three group modes", "[compiler][collectives]") {
  // Global device ids, iota form [2,4]<=[4,2]T(1,0): ids 0..7 as [4,2], transposed to [2,4] =
  // {0,2,4,6},{1,3,5,7}. Device 5 is third of the second group; stride 2.
  const auto global = RingFor(AllReduceModule(", num_partitions=8",
                                              "channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true"),
                              5);
  CHECK(global.devices == std::vector<int64_t>{1, 3, 5, 7});
  CHECK(global.position == 2);
  CHECK(global.stride == 2);
  // A channel_id alone: replica ids, each with all its partitions. With 3 replicas of 2
  // partitions, {{0,1},{2}}: device 5 (replica 2) is with device 4; device 1 with 0, 2, 3.
  const std::string cross = AllReduceModule(", replica_count=3, num_partitions=2",
                                            "channel_id=1, replica_groups={{0,1},{2}}");
  CHECK(RingFor(cross, 5).devices == std::vector<int64_t>{4, 5});
  const auto both = RingFor(cross, 1);
  CHECK(both.devices == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(both.position == 1);
  // Replica ids (no channel_id) at the device's partition: device 6 is replica 1 at partition 2;
  // no groups = every replica: devices 2 and 6, stride 4.
  const auto replicas = RingFor(AllReduceModule(", replica_count=2, num_partitions=4", "replica_groups={}"), 6);
  CHECK(replicas.devices == std::vector<int64_t>{2, 6});
  CHECK(replicas.position == 1);
  CHECK(replicas.stride == 4);
}

TEST_CASE("groups that form no ring, and devices in no group, are refused by name", "[compiler][collectives]") {
  const std::string uneven = AllReduceModule(
      ", num_partitions=8", "channel_id=1, replica_groups={{0,1,3,6},{2,4,5,7}}, use_global_device_ids=true");
  CHECK_THROWS_WITH(RingFor(uneven, 3), Catch::Contains("instruction 'r': all-reduce: the group of device 3 is devices "
                                                        "{0,1,3,6}, which are not evenly spaced"));
  const std::string partial = AllReduceModule(", num_partitions=4",
                                              "channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true");
  CHECK_THROWS_WITH(RingFor(partial, 2), Catch::Contains("device 2 (replica 0, partition 2) is in none of its replica groups"));
  const std::string outside = AllReduceModule(", num_partitions=2",
                                              "channel_id=1, replica_groups={{0,2}}, use_global_device_ids=true");
  CHECK_THROWS_WITH(RingFor(outside, 0), Catch::Contains("replica group {0,2} names id 2, but the module has 2 devices"));
  // The uneven group above, read by the compiler's driver: the same message.
  compiler::CompileOptions options = SmallTargetOptions();
  options.timing_only = true;
  CHECK_THAT(CompileErrorOf(uneven, options), Catch::Contains("which are not evenly spaced"));
}

TEST_CASE("multi-device collectives are refused unless the run is timing-only", "[compiler][collectives]") {
  const std::string text = AllReduceModule(", num_partitions=8",
                                           "channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true");
  compiler::CompileOptions options = SmallTargetOptions();
  CHECK_THAT(CompileErrorOf(text, options),
             Catch::Contains("instruction 'r': all-reduce over a group of 8 devices needs the other devices' data") &&
                 Catch::Contains("tpusim run --timing-only"));
  options.timing_only = true;
  CHECK(CompileErrorOf(text, options).empty());
  options.device_id = 8;
  CHECK_THAT(CompileErrorOf(text, options), Catch::Contains("the simulated device 8 is not one of the module's 8 devices"));
}

TEST_CASE("a ring all-reduce is 2(n-1) steps of one chunk to and from the ICI", "[compiler][collectives]") {
  // f32[256,128] = 128 KiB over 4 devices: chunks of 32 KiB; 3 reduce-scatter steps (each one send
  // and one receive of 32 KiB) and 3 all-gather steps (the same).
  const std::string text = AllReduceModule(", num_partitions=4",
                                           "channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true");
  compiler::CompileOptions options = SmallTargetOptions();
  options.timing_only = true;
  options.device_id = 1;
  auto module = hlo::ParseModule(text, "test.hlo");
  const compiler::CompiledModule compiled = compiler::Compile(*module, options);
  const std::string text_out = tpusim::compiler::ProgramText(compiled);
  const auto count = [&](const std::string& pattern) {
    const std::regex re(pattern);
    return std::distance(std::sregex_iterator(text_out.begin(), text_out.end(), re), std::sregex_iterator());
  };
  CHECK(count("// reduce-scatter step") == 3);
  CHECK(count("// all-gather step") == 3);
  CHECK(count(R"(dma hbm\[0x[0-9a-f]+\] -> ici\[0x[0-9a-f]+\], src=u32\[8192\])") == 6);  // 32 KiB sends
  CHECK(count(R"(dma ici\[0x[0-9a-f]+\] -> (vmem|hbm)\[0x[0-9a-f]+\], src=u32\[8192\])") == 6);
  // Device 1 first sends its own chunk (bytes 32K..64K of the operand) and receives chunk 0.
  CHECK(count(R"(dma hbm\[0x[0-9a-f]+\] -> ici\[0x8000\])") == 2);  // reduce-scatter step 1, all-gather step 2
  CHECK(compiled.kernels.at(0).category == "collective");
}
