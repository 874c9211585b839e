// Issue 19, item 1: how collectives name devices (compiler/hlo/device_counts.h), as XLA's
// CollectiveOpGroupMode reads replica_groups and source_target_pairs.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/device_counts.h"
#include "compiler/hlo/parser.h"

using namespace tpusim;

namespace {

hlo::NamedDevices Named(const std::string& entry_body) {
  const std::string text = "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
                           "ENTRY e {\n  x = f32[8,128] parameter(0)\n" + entry_body + "}\n";
  return hlo::DevicesNamedByCollectives(*hlo::ParseModule(text, "m.hlo"));
}

}  // namespace

TEST_CASE("device counts: replicas without a channel, global ids with one and use_global_device_ids, partitions for the rest",
          "[hlo][devices]") {
  // all-reduce without channel_id: replica ids 0..3.
  hlo::NamedDevices named = Named("  ROOT r = f32[8,128] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=add\n");
  CHECK(named.replicas == 4);
  CHECK(named.partitions == 0);
  CHECK(named.devices == 0);
  // all-gather with a channel and global ids, as an iota list [1,8]<=[8]: devices 0..7.
  named = Named("  ROOT g = f32[64,128] all-gather(x), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}, "
                "use_global_device_ids=true\n");
  CHECK(named.devices == 8);
  CHECK(named.replicas == 0);
  // all-reduce with a channel alone names replicas (each with all partitions); all-to-all and
  // collective-permute with a channel name partitions.
  named = Named("  a = f32[8,128] all-reduce(x), channel_id=1, replica_groups={{0,1}}, to_apply=add\n"
                "  t = f32[8,128] all-to-all(x), channel_id=2, replica_groups={{0,1,2,3,4,5}}, dimensions={0}\n"
                "  ROOT p = f32[8,128] collective-permute(t), channel_id=3, source_target_pairs={{0,6},{6,0}}\n");
  CHECK(named.replicas == 2);
  CHECK(named.partitions == 7);
  // Empty groups (all devices) name none.
  CHECK(Named("  ROOT r = f32[8,128] all-reduce(x), replica_groups={}, to_apply=add\n").replicas == 0);
}
