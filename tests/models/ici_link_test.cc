// The ICI endpoint's timing (models/ici_link.h): sends (writes) and receives (reads) each have a
// direction of link_bandwidth x ring_link_count, and a request that finds its direction idle pays
// one hop latency first while requests that queue behind busy bytes stream without it.
#include <catch2/catch.hpp>

#include <cstdint>

#include "isa/error.h"
#include "models/ici_link.h"
#include "models/time_units.h"

namespace {

using namespace tpusim::models;

int64_t Ps(const sc_core::sc_time& time) { return static_cast<int64_t>(time.value()); }

IciParams TestIci() {
  IciParams params;
  params.link_bandwidth_gbps = 25.6;  // x 2 links = 51.2 GB/s: 512 bytes in 10 ns
  params.ring_link_count = 2;
  params.latency_ns = 1000;
  return params;
}

}  // namespace

TEST_CASE("ICI messages pay the hop latency once and stream at the ring's bandwidth", "[models][ici]") {
  IciLink ici("ici", TestIci(), 1 << 20);
  CHECK(ici.ring_bytes_per_second() == 51.2e9);
  const sc_core::sc_time t0 = Nanoseconds(0);
  // A send starts a message: the hop, then 512 bytes at 51.2 GB/s.
  CHECK(Ps(ici.Access(AccessKind::kWrite, 0, 512, t0)) == 1'000'000 + 10'000);
  // The next burst, issued while the first is still on the link, streams behind it.
  CHECK(Ps(ici.Access(AccessKind::kWrite, 512, 512, Nanoseconds(5))) == 1'000'000 + 20'000);
  // Receives use the other direction: their own message, in parallel with the sends.
  CHECK(Ps(ici.Access(AccessKind::kRead, 0, 1024, t0)) == 1'000'000 + 20'000);
  // After the link fell idle (busy until 1020 ns), a new send is a new message.
  CHECK(Ps(ici.Access(AccessKind::kWrite, 0, 512, Nanoseconds(2000))) == 2'000'000 + 1'000'000 + 10'000);
  const MemoryStats stats = ici.stats();
  REQUIRE(stats.resources.size() == 2);
  CHECK(stats.resources[0].name == "ici send");
  CHECK(stats.resources[0].bytes == 1536);
  CHECK(stats.resources[1].name == "ici receive");
  CHECK(stats.resources[1].bytes == 1024);
}

TEST_CASE("ICI parameters are validated by name", "[models][ici]") {
  IciParams params = TestIci();
  params.ring_link_count = 0;
  CHECK_THROWS_WITH(IciLink("ici", params, 1024), Catch::Contains("IciParams.ring_link_count"));
  params = TestIci();
  params.link_bandwidth_gbps = 0;
  CHECK_THROWS_WITH(IciLink("ici", params, 1024), Catch::Contains("IciParams.link_bandwidth_gbps"));
}
