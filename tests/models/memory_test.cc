// Memory blocks: sparse contents, request timing from first principles, statistics, errors.
#include <catch2/catch.hpp>

#include <set>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "isa/error.h"
#include "models/cmem.h"
#include "models/hbm.h"
#include "models/host_memory.h"
#include "models/smem.h"
#include "models/sram.h"
#include "models/time_units.h"
#include "models/vmem.h"

namespace {

using namespace tpusim::models;
using sc_core::sc_time;

// Times compared in picoseconds, SystemC's resolution: every model time rounds to it once per
// request, so the tolerances below are a picosecond per request.
int64_t Ps(const sc_time& time) { return static_cast<int64_t>(time.value()); }

HbmParams TestHbm() {
  HbmParams params;
  params.capacity_bytes = uint64_t{1} << 30;
  params.channel_count = 4;
  params.interleave_bytes = 512;
  params.channel_bandwidth_gbps = 32;  // 512 bytes in 16 ns
  params.access_latency_ns = 300;
  return params;
}

VmemParams TestVmem() {
  VmemParams params;
  params.capacity_bytes = 16 << 20;
  params.bank_count = 4;
  params.bank_interleave_bytes = 128;
  params.read_bandwidth_gbps = 512;    // 512 bytes in 1 ns
  params.write_bandwidth_gbps = 1024;  // 512 bytes in 0.5 ns
  params.access_latency_cycles = 4;
  params.clock_mhz = 1000;             // 4 ns
  return params;
}

}  // namespace

TEST_CASE("untouched memory reads as zero and allocates nothing", "[models]") {
  HbmParams params = TestHbm();
  params.capacity_bytes = uint64_t{32} << 30;  // 32 GiB, as on a TPU v4 chip
  Hbm hbm("hbm", params);
  CHECK(hbm.contents().allocated_bytes() == 0);
  CHECK(hbm.Read((uint64_t{32} << 30) - 16, 16) == std::vector<uint8_t>(16, 0));

  const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5};
  // Straddles a page boundary: two pages, the rest still untouched.
  const uint64_t address = (uint64_t{20} << 30) + SparseBytes::kPageBytes - 2;
  hbm.Write(address, bytes);
  CHECK(hbm.contents().allocated_bytes() == 2 * SparseBytes::kPageBytes);
  CHECK(hbm.Read(address, 5) == bytes);
  CHECK(hbm.Read(address - 1, 7) == std::vector<uint8_t>{0, 1, 2, 3, 4, 5, 0});

  // Copying untouched bytes onto untouched bytes allocates nothing; onto written ones, zeroes them.
  hbm.contents().CopyFrom(hbm.contents(), 0, uint64_t{8} << 30, 1 << 20);
  CHECK(hbm.contents().allocated_bytes() == 2 * SparseBytes::kPageBytes);
  hbm.contents().CopyFrom(hbm.contents(), 0, address + 1, 2);
  CHECK(hbm.Read(address, 5) == std::vector<uint8_t>{1, 0, 0, 4, 5});
}

TEST_CASE("an HBM request takes latency plus bytes over the channel bandwidth", "[models]") {
  Hbm hbm("hbm", TestHbm());
  const sc_time t0 = Nanoseconds(1000);
  // 512 bytes at 32 GB/s = 16 ns on channel 0, then 300 ns of latency.
  CHECK(Ps(hbm.Access(AccessKind::kRead, 0, 512, t0)) == Ps(t0) + 16'000 + 300'000);
  // A second request to the same channel waits for the first to leave it: 16 ns later.
  CHECK(Ps(hbm.Access(AccessKind::kWrite, 4 * 512, 512, t0)) == Ps(t0) + 32'000 + 300'000);
  // Channel 1 is idle.
  CHECK(hbm.ChannelOf(512) == 1);
  CHECK(Ps(hbm.Access(AccessKind::kRead, 512, 512, t0)) == Ps(t0) + 16'000 + 300'000);
  // A request issued after the channel went idle starts at once.
  const sc_time later = Nanoseconds(5000);
  CHECK(Ps(hbm.Access(AccessKind::kRead, 0, 100, later)) == Ps(later) + 3'125 + 300'000);

  const MemoryStats stats = hbm.stats();
  CHECK(stats.name == "hbm");
  CHECK(stats.read_requests == 3);
  CHECK(stats.write_requests == 1);
  CHECK(stats.bytes_read == 512 + 512 + 100);
  CHECK(stats.bytes_written == 512);
  REQUIRE(stats.resources.size() == 4);
  CHECK(stats.resources[0].name == "channel 0");
  CHECK(stats.resources[0].bytes == 1124);
  CHECK(Ps(stats.resources[0].busy) == 16'000 + 16'000 + 3'125);
  CHECK(Ps(stats.resources[1].busy) == 16'000);
  CHECK(stats.resources[2].requests == 0);
}

TEST_CASE("an HBM request split across channels uses them in parallel", "[models]") {
  const sc_time t0 = Nanoseconds(10);
  Hbm four("hbm", TestHbm());
  // 2048 bytes from address 256: pieces of 256, 512, 512, 512, 256 bytes on channels 0, 1, 2, 3,
  // 0. Channel 0 carries 512 bytes in all: it finishes last, at 16 ns.
  CHECK(Ps(four.Access(AccessKind::kRead, 256, 2048, t0)) == Ps(t0) + 16'000 + 300'000);

  HbmParams one_channel = TestHbm();
  one_channel.channel_count = 1;
  Hbm one("hbm", one_channel);
  CHECK(Ps(one.Access(AccessKind::kRead, 256, 2048, t0)) == Ps(t0) + 64'000 + 300'000);
}

TEST_CASE("HBM channels: stripes in turn, or folded so that a stride of whole rounds spreads", "[models]") {
  HbmParams plain = TestHbm();  // 4 channels of 512-byte stripes
  HbmParams folded = plain;
  folded.fold_channel_stripes = true;
  Hbm a("plain", plain);
  Hbm b("folded", folded);
  // Stripe s: s % 4, or the xor of its base-4 digits. Stripes 0..3 are 0..3 either way; stripe
  // 6 = 12 in base 4 is channel 1 ^ 2 = 3 folded; 16 = 100 is 1; 17 = 101 is 0; 63 = 333 is 3;
  // 39 = 213 is 0.
  for (uint64_t s : {0, 1, 2, 3}) CHECK(b.ChannelOf(s * 512) == s);
  CHECK(a.ChannelOf(6 * 512) == 2);
  CHECK(b.ChannelOf(6 * 512) == 3);
  CHECK(b.ChannelOf(16 * 512) == 1);
  CHECK(b.ChannelOf(17 * 512) == 0);
  CHECK(b.ChannelOf(63 * 512) == 3);
  CHECK(b.ChannelOf(39 * 512) == 0);
  // One channel, folded: every stripe is channel 0 (the fold's base-1 digits looped forever; a
  // random-config run with hbm.channel_count=1 hung in its first DMA).
  HbmParams one = folded;
  one.channel_count = 1;
  Hbm c("one", one);
  for (uint64_t s : {0, 1, 7, 4096}) CHECK(c.ChannelOf(s * 512) == 0);
  // Every aligned group of 4 stripes still takes each channel once.
  for (uint64_t group = 0; group < 64; ++group) {
    std::set<uint32_t> channels;
    for (uint64_t s = 4 * group; s < 4 * group + 4; ++s) channels.insert(b.ChannelOf(s * 512));
    CHECK(channels.size() == 4);
  }
  // A stride of 4 stripes (one stripe per round, as a column panel of a tiled array reads) is
  // channel 0 every time in turn; folded it takes all four channels.
  std::set<uint32_t> plain_channels, folded_channels;
  for (uint64_t k = 0; k < 16; ++k) {
    plain_channels.insert(a.ChannelOf(k * 4 * 512));
    folded_channels.insert(b.ChannelOf(k * 4 * 512));
  }
  CHECK(plain_channels.size() == 1);
  CHECK(folded_channels.size() == 4);
}

TEST_CASE("VMEM has separate read and write ports and serializes within a bank", "[models]") {
  Vmem vmem("vmem", TestVmem());
  const sc_time t0 = Nanoseconds(100);
  // 512 bytes spread over the 4 banks (128 each): the read port's 1 ns is the limit; + 4 ns.
  CHECK(Ps(vmem.Access(AccessKind::kRead, 0, 512, t0)) == Ps(t0) + 1'000 + 4'000);
  // A write at the same time uses the write port: 0.5 ns. Its banks are busy with the read until
  // t0 + 1 ns (each served 128 bytes at 512/4 GB/s = 1 ns), so they serve the write after that:
  // 128 bytes at 1024/4 GB/s = 0.5 ns.
  CHECK(Ps(vmem.Access(AccessKind::kWrite, 4096, 512, t0)) == Ps(t0) + 1'500 + 4'000);

  Vmem banks("vmem", TestVmem());
  // 128 bytes in bank 0 take 1 ns of the bank (512/4 GB/s); another 128 in bank 0 wait for it,
  // while 128 bytes in bank 1 do not.
  CHECK(Ps(banks.Access(AccessKind::kRead, 0, 128, t0)) == Ps(t0) + 1'000 + 4'000);
  CHECK(Ps(banks.Access(AccessKind::kRead, 512, 128, t0)) == Ps(t0) + 2'000 + 4'000);
  CHECK(Ps(banks.Access(AccessKind::kRead, 128, 128, t0)) == Ps(t0) + 1'000 + 4'000);
  const MemoryStats stats = banks.stats();
  // The DMA side's read port, write port and 4 banks, then the vector side's, unused here.
  REQUIRE(stats.resources.size() == 12);
  CHECK(stats.resources[0].name == "read port");
  CHECK(Ps(stats.resources[0].busy) == 750);
  CHECK(stats.resources[2].name == "bank 0");
  CHECK(Ps(stats.resources[2].busy) == 2'000);
  CHECK(stats.resources[2].bytes == 256);
  CHECK(stats.resources[6].name == "vector read port");
  CHECK(stats.resources[8].name == "vector bank 0");
  CHECK(stats.resources[8].requests == 0);
}

TEST_CASE("VMEM serves the vector unit and the DMA engines on separate ports and banks", "[models]") {
  Vmem vmem("vmem", TestVmem());
  const sc_time t0 = Nanoseconds(100);
  // A vector load timed ahead (the scalar core runs ahead of SystemC time) keeps the vector
  // side's banks busy until t0 + 50 ns + 1 ns...
  CHECK(Ps(vmem.VectorAccess(AccessKind::kRead, 0, 512, t0 + Nanoseconds(50))) == Ps(t0) + 51'000 + 4'000);
  // ...and a DMA burst to the same bytes at t0 does not wait for it: 1 ns on the DMA side's port.
  CHECK(Ps(vmem.Access(AccessKind::kRead, 0, 512, t0)) == Ps(t0) + 1'000 + 4'000);
  // Two vector requests still contend with each other: the second waits for the banks.
  CHECK(Ps(vmem.VectorAccess(AccessKind::kRead, 0, 512, t0 + Nanoseconds(50))) == Ps(t0) + 52'000 + 4'000);
  // Both count in the memory's traffic.
  const MemoryStats stats = vmem.stats();
  CHECK(stats.read_requests == 3);
  CHECK(stats.bytes_read == 1536);
}

TEST_CASE("a request's bytes per SRAM bank, in closed form", "[models]") {
  // 4 banks interleaved every 128 bytes: bank of address a is (a / 128) mod 4.
  std::vector<uint64_t> shares(4);
  const auto of = [&](uint64_t address, uint64_t bytes) {
    BankShares(address, bytes, 128, shares);
    return shares;
  };
  using V = std::vector<uint64_t>;
  // Inside one unit: all of it in that unit's bank.
  CHECK(of(0, 1) == V{1, 0, 0, 0});
  CHECK(of(130, 100) == V{0, 100, 0, 0});
  CHECK(of(3 * 128 + 127, 1) == V{0, 0, 0, 1});
  CHECK(of(4 * 128 + 5, 10) == V{10, 0, 0, 0});  // unit 4 wraps to bank 0
  // Two partial units: 28 bytes in unit 0 (bank 0), 72 in unit 1 (bank 1).
  CHECK(of(100, 100) == V{28, 72, 0, 0});
  // One aligned round of 4 units: 128 each; 4096 bytes = 32 units = 8 rounds: 1024 each.
  CHECK(of(0, 512) == V{128, 128, 128, 128});
  CHECK(of(4096, 4096) == V{1024, 1024, 1024, 1024});
  // From 200 to 200 + 1000 = 1200: unit 1 holds 56 bytes (200..255, bank 1), units 2..8 are
  // whole (7 units: banks 2, 3, 0, 1, 2, 3, 0), unit 9 holds 1200 - 1152 = 48 (bank 1).
  // Bank 0: 2 x 128; bank 1: 56 + 128 + 48; bank 2: 2 x 128; bank 3: 2 x 128.
  CHECK(of(200, 1000) == V{256, 232, 256, 256});
  // Whole rounds plus extra units starting at bank 3: units 3..9 (7 whole units from address
  // 384 to 1280): banks 3, 0, 1, 2, 3, 0, 1.
  CHECK(of(384, 896) == V{256, 256, 128, 256});
  // One bank: everything in it.
  std::vector<uint64_t> one(1);
  BankShares(77, 9999, 32, one);
  CHECK(one[0] == 9999);

  // Against the definition (cut at every multiple of the interleave), for many requests on the
  // TPU v4 shape (16 banks of 32 bytes) and an odd one (3 banks of 8 bytes).
  for (const auto& [banks, interleave] : {std::pair<uint64_t, uint64_t>{16, 32}, {3, 8}}) {
    std::vector<uint64_t> got(banks);
    for (uint64_t address = 0; address < 3 * banks * interleave; address += 5) {
      for (uint64_t bytes = 1; bytes < 5 * banks * interleave; bytes += 7) {
        std::vector<uint64_t> expected(banks, 0);
        for (uint64_t at = address; at < address + bytes;) {
          const uint64_t end = std::min(address + bytes, (at / interleave + 1) * interleave);
          expected[(at / interleave) % banks] += end - at;
          at = end;
        }
        BankShares(address, bytes, interleave, got);
        INFO("address " << address << " bytes " << bytes);
        REQUIRE(got == expected);
      }
    }
  }
}

TEST_CASE("VMEM's banks time every request as the piece-by-piece definition does", "[models]") {
  // The definition (docs/timing.md), written plainly: the request cut at every multiple of the
  // interleave, a BandwidthResource per bank, each bank's share timed at the port's rate / K.
  // Sram keeps the banks in a compact form (whole-vreg requests touch all banks at once); times
  // and statistics must be identical to the picosecond, whatever the order of issue times.
  VmemParams params;
  params.capacity_bytes = 16 << 20;
  params.bank_count = 16;
  params.bank_interleave_bytes = 32;
  params.read_bandwidth_gbps = 1074.8;  // TPU v4's: not a whole number of ps per byte
  params.write_bandwidth_gbps = 2150.6;
  params.access_latency_cycles = 3;
  params.clock_mhz = 1066.5894;
  Vmem vmem("vmem", params);
  const sc_time latency = vmem.timing().latency;
  const double banks = params.bank_count;
  BandwidthResource read_port("read port", params.read_bandwidth_gbps * 1e9);
  BandwidthResource write_port("write port", params.write_bandwidth_gbps * 1e9);
  std::vector<BandwidthResource> bank;
  for (uint32_t b = 0; b < params.bank_count; ++b) {
    bank.emplace_back("bank " + std::to_string(b), params.read_bandwidth_gbps * 1e9 / banks);
  }
  const auto reference = [&](AccessKind kind, uint64_t address, uint64_t bytes, sc_time t) {
    BandwidthResource& port = kind == AccessKind::kRead ? read_port : write_port;
    sc_time done = port.Reserve(t, bytes);
    std::vector<uint64_t> shares(params.bank_count, 0);
    for (uint64_t at = address; at < address + bytes;) {
      const uint64_t end = std::min(address + bytes, (at / 32 + 1) * 32);
      shares[(at / 32) % params.bank_count] += end - at;
      at = end;
    }
    for (uint32_t b = 0; b < params.bank_count; ++b) {
      if (shares[b] == 0) continue;
      const sc_time duration =
          Picoseconds(static_cast<double>(shares[b]) * (1e12 * banks / port.bytes_per_second()));
      done = std::max(done, bank[b].ReserveFor(t, shares[b], duration));
    }
    return done + latency;
  };

  uint64_t state = 12345;
  const auto next = [&](uint64_t n) {  // a fixed pseudo-random sequence in [0, n)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  int64_t now_ps = 1'000'000;
  for (int i = 0; i < 20'000; ++i) {
    // Mostly forward in time, sometimes back (the scalar core runs ahead of the DMA engines).
    now_ps = std::max<int64_t>(0, now_ps + static_cast<int64_t>(next(4000)) - 1000);
    const sc_time t = Picoseconds(static_cast<double>(now_ps));
    const AccessKind kind = next(3) == 0 ? AccessKind::kWrite : AccessKind::kRead;
    uint64_t address = 0;
    uint64_t bytes = 0;
    switch (next(4)) {
      case 0:
      case 1:  // a whole vreg: 8 rows of 512 bytes, every bank 256 bytes
        address = next(1024) * 4096;
        bytes = 4096;
        break;
      case 2:  // one 512-byte row (a strided or masked vld)
        address = next(8192) * 512;
        bytes = 512;
        break;
      default:  // anything: a DMA burst's touched span
        address = next(params.capacity_bytes - 8192);
        bytes = 1 + next(5000);
        break;
    }
    INFO("request " << i << ": " << bytes << " bytes at " << address);
    REQUIRE(Ps(vmem.Access(kind, address, bytes, t)) == Ps(reference(kind, address, bytes, t)));
  }
  const MemoryStats stats = vmem.stats();
  REQUIRE(stats.resources.size() == 2 * (2 + params.bank_count));  // the DMA side, then the vector side
  std::vector<ResourceStats> expected = {read_port.stats(), write_port.stats()};
  for (const BandwidthResource& b : bank) expected.push_back(b.stats());
  for (std::size_t r = 0; r < expected.size(); ++r) {
    INFO(expected[r].name);
    CHECK(stats.resources[r].name == expected[r].name);
    CHECK(stats.resources[r].requests == expected[r].requests);
    CHECK(stats.resources[r].bytes == expected[r].bytes);
    CHECK(Ps(stats.resources[r].busy) == Ps(expected[r].busy));
  }
}

TEST_CASE("CMEM and SMEM timing follows their parameters", "[models]") {
  CmemParams cmem_params;
  cmem_params.capacity_bytes = 64 << 20;
  cmem_params.read_bandwidth_gbps = 2048;
  cmem_params.write_bandwidth_gbps = 1024;
  cmem_params.access_latency_ns = 50;
  Cmem cmem("cmem", cmem_params);
  const sc_time t0 = Nanoseconds(7);
  CHECK(Ps(cmem.Access(AccessKind::kRead, 0, 4096, t0)) == Ps(t0) + 2'000 + 50'000);
  CHECK(Ps(cmem.Access(AccessKind::kWrite, 0, 4096, t0)) == Ps(t0) + 4'000 + 50'000);

  SmemParams smem_params;
  smem_params.capacity_bytes = 16 << 10;
  smem_params.bandwidth_bytes_per_cycle = 8;
  smem_params.access_latency_cycles = 2;
  smem_params.clock_mhz = 500;  // 2 ns cycles: 4 bytes per ns
  Smem smem("smem", smem_params);
  CHECK(Ps(smem.Access(AccessKind::kRead, 0, 64, t0)) == Ps(t0) + 16'000 + 4'000);
  // One port: the write waits for the read.
  CHECK(Ps(smem.Access(AccessKind::kWrite, 64, 64, t0)) == Ps(t0) + 32'000 + 4'000);
  CHECK(smem.stats().resources.size() == 1);
}

TEST_CASE("host memory is reached across the PCIe link in both directions", "[models]") {
  HostMemoryParams host_params;
  host_params.capacity_bytes = 1 << 30;
  host_params.access_latency_ns = 100;
  PcieParams pcie;
  pcie.bandwidth_gbps = 16;  // 512 bytes in 32 ns each way
  pcie.latency_ns = 500;
  HostMemory host("host", host_params, pcie);
  const sc_time t0 = Nanoseconds(0);
  // A read: data back over host-to-device, request out and data back across the link, DRAM.
  CHECK(Ps(host.Access(AccessKind::kRead, 0, 512, t0)) == 32'000 + 500'000 + 100'000 + 500'000);
  // A second read shares host-to-device; a write uses device-to-host and does not wait.
  CHECK(Ps(host.Access(AccessKind::kRead, 512, 512, t0)) == 64'000 + 1'100'000);
  CHECK(Ps(host.Access(AccessKind::kWrite, 1024, 512, t0)) == 32'000 + 500'000 + 100'000);
  const MemoryStats stats = host.stats();
  REQUIRE(stats.resources.size() == 2);
  CHECK(stats.resources[0].name == "host pcie host to device");
  CHECK(Ps(stats.resources[0].busy) == 64'000);
  CHECK(Ps(stats.resources[1].busy) == 32'000);
}

TEST_CASE("requests outside a memory are errors naming it, the address and the size", "[models]") {
  Hbm hbm("hbm", TestHbm());
  const uint64_t end = uint64_t{1} << 30;
  CHECK_NOTHROW(hbm.Access(AccessKind::kRead, end - 512, 512, sc_core::SC_ZERO_TIME));
  CHECK_THROWS_WITH(hbm.Access(AccessKind::kRead, end - 512, 513, sc_core::SC_ZERO_TIME),
                    Catch::Equals("hbm: read of 513 bytes at address 0x3ffffe00 runs past the end "
                                  "of its capacity of 1073741824 bytes (0x40000000)"));
  CHECK_THROWS_WITH(hbm.Write(end, std::vector<uint8_t>(1)),
                    Catch::Contains("hbm: write of 1 bytes at address 0x40000000"));
  CHECK_THROWS_AS(hbm.Read(UINT64_MAX, 2), tpusim::Error);  // no wrap-around
  Vmem vmem("vmem0", TestVmem());
  CHECK_THROWS_WITH(vmem.Access(AccessKind::kWrite, 16 << 20, 1, sc_core::SC_ZERO_TIME),
                    Catch::StartsWith("vmem0: write of 1 bytes at address 0x1000000"));
}

TEST_CASE("invalid memory parameters are errors naming the field", "[models]") {
  HbmParams hbm = TestHbm();
  hbm.channel_count = 0;
  CHECK_THROWS_WITH(Hbm("hbm", hbm),
                    Catch::Equals("HbmParams.channel_count must be at least 1, got 0"));
  hbm = TestHbm();
  hbm.interleave_bytes = 384;
  CHECK_THROWS_WITH(Validate(hbm),
                    Catch::Equals("HbmParams.interleave_bytes must be a power of two, got 384"));
  hbm = TestHbm();
  hbm.channel_bandwidth_gbps = 0;
  CHECK_THROWS_WITH(Validate(hbm), Catch::Contains("channel_bandwidth_gbps must be positive"));
  hbm = TestHbm();
  hbm.access_latency_ns = -1;
  CHECK_THROWS_WITH(Validate(hbm), Catch::Contains("access_latency_ns must be >= 0"));
  hbm = TestHbm();
  hbm.capacity_bytes = 1024;
  CHECK_THROWS_WITH(Validate(hbm), Catch::Contains("one interleave stripe per channel"));

  VmemParams vmem = TestVmem();
  vmem.bank_interleave_bytes = 0;
  CHECK_THROWS_WITH(Vmem("vmem", vmem), Catch::Contains("VmemParams.bank_interleave_bytes"));
  vmem = TestVmem();
  vmem.clock_mhz = 0;
  CHECK_THROWS_WITH(Validate(vmem), Catch::Contains("VmemParams.clock_mhz"));

  CmemParams cmem;  // all zero
  CHECK_THROWS_WITH(Validate(cmem), Catch::Contains("CmemParams.capacity_bytes"));
  SmemParams smem;
  smem.capacity_bytes = 1;
  CHECK_THROWS_WITH(Validate(smem), Catch::Contains("SmemParams.bandwidth_bytes_per_cycle"));
  HostMemoryParams host{1 << 20, 100};
  PcieParams pcie{0, 500};
  CHECK_THROWS_WITH(HostMemory("host", host, pcie),
                    Catch::Equals("PcieParams.bandwidth_gbps must be positive and finite, got 0"));
}
