// DMA timing from first principles: the expected times below are computed from the parameters
// in each test (docs/timing.md has the equations). Engines are driven without SystemC
// (RunToCompletion); dma_unit_test.cc checks that the SystemC wrapper gives the same times.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "isa/error.h"
#include "isa/shape.h"
#include "models/dma_engine.h"
#include "models/hbm.h"
#include "models/host_memory.h"
#include "models/time_units.h"
#include "models/vmem.h"

namespace {

using namespace tpusim::models;
using sc_core::sc_time;
using tpusim::isa::ElementType;
using tpusim::isa::Shape;

int64_t Ps(const sc_time& time) { return static_cast<int64_t>(time.value()); }

// A machine with round numbers: at 1000 MHz a cycle is 1 ns.
//   HBM: 4 channels x 32 GB/s (512 bytes in 16 ns), 512-byte interleave, 300 ns latency.
//   VMEM: write 1024 GB/s (512 bytes in 0.5 ns), read 2048 GB/s, 4 cycles = 4 ns, one bank.
//   DMA: 512-byte bursts, 16 cycles of issue latency, 256 requests in flight.
//   Host: 100 ns DRAM behind PCIe at 16 GB/s (512 bytes in 32 ns), 500 ns one way.
constexpr int64_t kBurst = 512;
constexpr int64_t kHbmBurstPs = 16'000;
constexpr int64_t kHbmLatencyPs = 300'000;
constexpr int64_t kVmemWriteBurstPs = 500;
constexpr int64_t kVmemLatencyPs = 4'000;
constexpr int64_t kIssuePs = 16'000;
constexpr int64_t kPcieBurstPs = 32'000;
constexpr int64_t kPcieLatencyPs = 500'000;
constexpr int64_t kHostLatencyPs = 100'000;

HbmParams TestHbm(uint32_t channels = 4, uint64_t interleave = 512) {
  return {uint64_t{1} << 30, channels, interleave, 32, 300};
}
VmemParams TestVmem() { return {16 << 20, 1, 512, 2048, 1024, 4, 1000}; }
DmaParams TestDma(uint32_t outstanding = 256) { return {4, outstanding, kBurst, 16, 8, 1000}; }

Shape Bytes(int64_t count) { return Shape::Array(ElementType::kU8, {count}); }

DmaTransfer Copy(Memory& from, uint64_t from_address, Memory& to, uint64_t to_address,
                 int64_t bytes) {
  return DmaTransfer::WholeArray(from, from_address, Bytes(bytes), to, to_address, Bytes(bytes));
}

// Runs `transfers` on engines 0, 1, ... all begun at t0; returns each one's time from t0.
std::vector<int64_t> Run(const std::vector<DmaTransfer>& transfers, const DmaParams& params,
                         bool move_data = true) {
  const sc_time t0 = Nanoseconds(1000);
  std::vector<std::unique_ptr<DmaEngine>> engines;
  std::vector<DmaEngine*> pointers;
  for (const DmaTransfer& transfer : transfers) {
    engines.push_back(std::make_unique<DmaEngine>("dma", params));
    engines.back()->Begin(transfer, t0, move_data);
    pointers.push_back(engines.back().get());
  }
  RunToCompletion(pointers);
  std::vector<int64_t> times;
  for (DmaEngine* engine : pointers) {
    times.push_back(Ps(engine->Finish().completed) - Ps(t0));
  }
  return times;
}

}  // namespace

TEST_CASE("a DMA of N bytes from HBM to VMEM takes latency plus N over the HBM bandwidth",
          "[models]") {
  // All reads leave at once; the 4 channels deliver 4 bursts every 16 ns; each read's write
  // follows it into VMEM. With R = N / (4 x 512) rounds, the last round's reads complete at
  // issue + R x 16 ns + 300 ns and their 4 writes queue on the VMEM write port (4 x 0.5 ns)
  // before its 4 ns latency:
  //   T(N) = 16 + 300 + N / 128 GB/s + 4 x 0.5 + 4 ns.
  for (const int64_t n : {2048, 4096, 65536, 1 << 20}) {
    INFO("N = " << n);
    Hbm hbm("hbm", TestHbm());
    Vmem vmem("vmem", TestVmem());
    const int64_t rounds = n / (4 * kBurst);
    const int64_t expected =
        kIssuePs + kHbmLatencyPs + rounds * kHbmBurstPs + 4 * kVmemWriteBurstPs + kVmemLatencyPs;
    CHECK(Run({Copy(hbm, 0, vmem, 0, n)}, TestDma()) == std::vector<int64_t>{expected});
    // Stated as the issue asks: latency + N / bandwidth, within one round of VMEM writes.
    const int64_t bandwidth_bound = kIssuePs + kHbmLatencyPs + n * 1000 / 128;
    CHECK(expected - bandwidth_bound == 4 * kVmemWriteBurstPs + kVmemLatencyPs);
    CHECK(Ps(hbm.stats().resources[0].busy) == rounds * kHbmBurstPs);
  }
}

TEST_CASE("a DMA smaller than a burst and one not a multiple of it", "[models]") {
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  // 100 bytes: one read of 100 bytes (3.125 ns), one write (100 / 1024 GB/s = 97.65625 ns
  // rounded to 97.656 ns... in ps: 97.65625 -> 98).
  CHECK(Run({Copy(hbm, 0, vmem, 0, 100)}, TestDma()) ==
        std::vector<int64_t>{kIssuePs + 3'125 + kHbmLatencyPs + 98 + kVmemLatencyPs});
  // 1000 bytes from 0: reads of 512 (channel 0, 16 ns) and 488 bytes (channel 1, 15.25 ns); the
  // second retires with the first at 16 ns, and the writes queue: 0.5 ns + 0.4765625 ns.
  Hbm hbm2("hbm", TestHbm());
  Vmem vmem2("vmem", TestVmem());
  CHECK(Run({Copy(hbm2, 0, vmem2, 0, 1000)}, TestDma()) ==
        std::vector<int64_t>{kIssuePs + kHbmBurstPs + kHbmLatencyPs + 500 + 477 + kVmemLatencyPs});
}

TEST_CASE("few outstanding requests limit a DMA to outstanding bursts per round trip",
          "[models]") {
  // One request in flight: each 512-byte burst is read (16 + 300 ns), then written (0.5 + 4 ns)
  // before the next read leaves: 320.5 ns per burst.
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  const int64_t bursts = 16;
  const int64_t per_burst = kHbmBurstPs + kHbmLatencyPs + kVmemWriteBurstPs + kVmemLatencyPs;
  CHECK(Run({Copy(hbm, 0, vmem, 0, bursts * kBurst)}, TestDma(1)) ==
        std::vector<int64_t>{kIssuePs + bursts * per_burst});
  CHECK(hbm.stats().read_requests == bursts);
  CHECK(vmem.stats().write_requests == bursts);
}

TEST_CASE("two concurrent DMAs on one HBM channel take twice as long as one", "[models]") {
  // 2 channels of 4096-byte stripes: [0, 4096) and [8192, 12288) are channel 0, [4096, 8192) is
  // channel 1. Each DMA moves 4096 bytes: 8 bursts = 128 ns of its channel.
  const int64_t n = 4096;
  const int64_t data = 8 * kHbmBurstPs;
  // One request per burst round trip: read (16 + 300 ns), then write (0.5 + 4 ns).
  const int64_t round_trip = kHbmBurstPs + kHbmLatencyPs + kVmemWriteBurstPs + kVmemLatencyPs;
  for (const uint32_t outstanding : {256u, 1u}) {
    INFO("outstanding " << outstanding);
    const DmaParams dma = TestDma(outstanding);
    Hbm alone_hbm("hbm", TestHbm(2, 4096));
    Vmem alone_vmem("vmem", TestVmem());
    const int64_t alone = Run({Copy(alone_hbm, 0, alone_vmem, 0, n)}, dma)[0];

    Hbm same_hbm("hbm", TestHbm(2, 4096));
    Vmem same_vmem("vmem", TestVmem());
    const std::vector<int64_t> same = Run(
        {Copy(same_hbm, 0, same_vmem, 0, n), Copy(same_hbm, 8192, same_vmem, 65536, n)}, dma);
    const int64_t both_done = std::max(same[0], same[1]);
    CHECK(Ps(same_hbm.stats().resources[0].busy) == 2 * data);
    if (outstanding == 256) {
      // Bandwidth-bound: all 16 reads queue on the channel at once; reads complete one per
      // 16 ns, so VMEM never queues and each write adds 4.5 ns.
      CHECK(alone == kIssuePs + data + round_trip - kHbmBurstPs);
      CHECK(both_done == kIssuePs + 2 * data + round_trip - kHbmBurstPs);
      CHECK(both_done - alone == data);  // the data time doubles
    } else {
      // Latency-bound: each engine sends one burst per 320.5 ns round trip, the channel is idle
      // most of the time, and the second engine only ever waits for the first one's burst.
      CHECK(alone == kIssuePs + 8 * round_trip);
      CHECK(both_done == alone + kHbmBurstPs);
    }

    Hbm apart_hbm("hbm", TestHbm(2, 4096));
    Vmem apart_vmem("vmem", TestVmem());
    const std::vector<int64_t> apart = Run(
        {Copy(apart_hbm, 0, apart_vmem, 0, n), Copy(apart_hbm, 4096, apart_vmem, 65536, n)}, dma);
    // Different channels: as long as one, but for the VMEM write port, which serializes the two
    // writes that land together (0.5 ns).
    CHECK(apart == std::vector<int64_t>{alone, alone + kVmemWriteBurstPs});
  }
}

TEST_CASE("concurrent DMAs share a saturated channel fairly in issue order", "[models]") {
  // 64 KiB each on one channel (16 stripes of 4096 on 1 channel): 128 bursts, 2048 ns of data.
  // With 32 requests in flight each engine's window is far deeper than the channel needs, so the
  // channel stays saturated: the two together finish when 4096 ns of data have passed.
  Hbm hbm("hbm", TestHbm(1, 4096));
  Vmem vmem("vmem", TestVmem());
  const int64_t n = 65536;
  const std::vector<int64_t> times =
      Run({Copy(hbm, 0, vmem, 0, n), Copy(hbm, 1 << 20, vmem, 1 << 20, n)}, TestDma(32));
  const int64_t data = 128 * kHbmBurstPs;
  const int64_t fixed = kIssuePs + kHbmLatencyPs + kVmemWriteBurstPs + kVmemLatencyPs;
  CHECK(std::max(times[0], times[1]) == fixed + 2 * data);
  // Interleaved, not one after the other: both end within a window of bursts of each other.
  CHECK(std::abs(times[0] - times[1]) <= 32 * kHbmBurstPs);
}

TEST_CASE("a host to HBM transfer is bounded by the PCIe link", "[models]") {
  HostMemory host("host", {1 << 30, 100}, {16, 500});
  Hbm hbm("hbm", TestHbm());
  // 64 KiB = 128 bursts: they cross host-to-device one per 32 ns (the HBM takes 512 bytes per
  // 16 ns per channel, far faster); the last arrives at issue + 128 x 32 ns + 500 + 100 + 500 ns
  // and its HBM write takes 16 + 300 ns.
  const int64_t n = 65536;
  const int64_t link = 128 * kPcieBurstPs;
  const int64_t expected = kIssuePs + link + 2 * kPcieLatencyPs + kHostLatencyPs + kHbmBurstPs +
                           kHbmLatencyPs;
  CHECK(Run({Copy(host, 0, hbm, 0, n)}, TestDma()) == std::vector<int64_t>{expected});
  CHECK(Ps(host.stats().resources[0].busy) == link);  // host to device, saturated
  CHECK(Ps(host.stats().resources[1].busy) == 0);
  // The other way uses the other direction: issue + HBM read, then the link, one way + DRAM.
  HostMemory host2("host", {1 << 30, 100}, {16, 500});
  Hbm hbm2("hbm", TestHbm());
  const int64_t back = Run({Copy(hbm2, 0, host2, 0, n)}, TestDma())[0];
  CHECK(back == kIssuePs + kHbmBurstPs + kHbmLatencyPs + link + kPcieLatencyPs + kHostLatencyPs);
  CHECK(Ps(host2.stats().resources[1].busy) == link);
}

TEST_CASE("timing-only DMAs give the same times and move no bytes", "[models]") {
  const Shape source = tpusim::isa::ParseShape("bf16[40,300]{1,0:T(8,128)(2,1)}");
  const Shape transposed = tpusim::isa::ParseShape("bf16[40,300]{0,1}");
  std::vector<int64_t> times[2];
  for (const bool move_data : {true, false}) {
    Hbm hbm("hbm", TestHbm());
    Vmem vmem("vmem", TestVmem());
    std::vector<uint8_t> pattern(65536);
    for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 7 + 1);
    hbm.Write(0, pattern);
    const std::vector<DmaTransfer> transfers = {
        Copy(hbm, 0, vmem, 0, 65536),
        DmaTransfer::WholeArray(hbm, 0, source, vmem, 1 << 20, transposed),
        DmaTransfer::WholeArray(hbm, 0, source, hbm, 1 << 20, source),
    };
    times[move_data] = Run(transfers, TestDma(8), move_data);
    if (move_data) {
      CHECK(vmem.Read(0, 16) == std::vector<uint8_t>(pattern.begin(), pattern.begin() + 16));
    } else {
      CHECK(vmem.contents().allocated_bytes() == 0);
      CHECK(hbm.Read(1 << 20, 16) == std::vector<uint8_t>(16, 0));
    }
  }
  CHECK(times[0] == times[1]);
}

TEST_CASE("invalid DMA parameters and transfers are clear errors", "[models]") {
  DmaParams params = TestDma();
  params.burst_bytes = 500;
  CHECK_THROWS_WITH(DmaEngine("dma", params),
                    Catch::Equals("DmaParams.burst_bytes must be a power of two, got 500"));
  params = TestDma();
  params.max_outstanding_requests = 0;
  CHECK_THROWS_WITH(Validate(params), Catch::Contains("DmaParams.max_outstanding_requests"));

  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  DmaEngine engine("dma", TestDma());
  const sc_time t0 = sc_core::SC_ZERO_TIME;
  // The destination image does not fit: 16 MiB of VMEM, 1 KiB from its last byte.
  CHECK_THROWS_WITH(engine.Begin(Copy(hbm, 0, vmem, (16 << 20) - 1, 1024), t0, true),
                    Catch::Equals("vmem: DMA destination image (u8[1024]) of 1024 bytes at "
                                  "address 0xffffff runs past the end of its capacity of 16777216 "
                                  "bytes (0x1000000)"));
  CHECK_FALSE(engine.busy());

  DmaTransfer transfer = Copy(hbm, 0, vmem, 0, 1024);
  transfer.sizes = {2048};
  CHECK_THROWS_WITH(engine.Begin(transfer, t0, true),
                    Catch::Contains("DMA source: region start {0} sizes {2048} is outside "
                                    "u8[1024]"));
  transfer = Copy(hbm, 0, vmem, 0, 1024);
  transfer.destination.start = {0, 0};
  CHECK_THROWS_WITH(engine.Begin(transfer, t0, true),
                    Catch::Contains("must have one entry per dim"));
  transfer = Copy(hbm, 0, vmem, 0, 1024);
  transfer.destination.shape.element_type = ElementType::kS8;
  CHECK_THROWS_WITH(engine.Begin(transfer, t0, true), Catch::Contains("element types differ"));
  transfer = Copy(hbm, 0, vmem, 0, 1024);
  transfer.source.memory = nullptr;
  CHECK_THROWS_WITH(engine.Begin(transfer, t0, true), Catch::Equals("DMA source: no memory given"));
  transfer = DmaTransfer::WholeArray(hbm, 0, tpusim::isa::ParseShape("s4[64]{0:E(4)}"), vmem, 0,
                                     tpusim::isa::ParseShape("s4[64]{0:E(4)}"));
  CHECK_THROWS_WITH(engine.Begin(transfer, t0, true), Catch::Contains("whole-byte elements"));

  engine.Begin(Copy(hbm, 0, vmem, 0, 1024), t0, true);
  CHECK_FALSE(engine.can_begin());  // its reads are still to issue
  CHECK_THROWS_WITH(engine.Begin(Copy(hbm, 0, vmem, 0, 1024), t0, true),
                    Catch::Contains("in progress"));
  CHECK_THROWS_WITH(engine.Finish(), Catch::Contains("before its last request"));
  // Once both reads have issued the next transfer may begin, while the first's writes wait.
  engine.IssueNext();
  engine.IssueNext();
  REQUIRE(engine.can_begin());
  REQUIRE(engine.has_request());
  engine.Begin(Copy(hbm, 1024, vmem, 1024, 512), engine.next_issue_time(), true);
  CHECK_FALSE(engine.oldest_issued());
  while (engine.has_request()) engine.IssueNext();
  const DmaCompletion first = engine.Finish();
  const DmaCompletion second = engine.Finish();
  CHECK(first.payload_bytes == 1024);
  CHECK(second.payload_bytes == 512);
  CHECK_FALSE(engine.busy());
}
