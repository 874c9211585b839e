// The SystemC side of the DMA: engine threads, queues, semaphores, completions. Tests that run
// the kernel do it in a forked child: SystemC elaborates once per process, and a test that called
// sc_start here would stop every later test in this process from building modules.
// sc_spawn needs this before the first SystemC include.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/error.h"
#include "isa/shape.h"
#include "models/dma_unit.h"
#include "models/hbm.h"
#include "models/semaphore.h"
#include "models/time_units.h"
#include "models/vmem.h"

namespace {

using namespace tpusim::models;
using sc_core::sc_time;
using tpusim::isa::ElementType;
using tpusim::isa::Shape;

int64_t Ps(const sc_time& time) { return static_cast<int64_t>(time.value()); }

// Runs `body` in a child process and returns the numbers it returns. Throws std::runtime_error
// with the child's message if it threw, or if it died.
std::vector<int64_t> InChild(const std::function<std::vector<int64_t>()>& body) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(pipe_fds[0]);
    std::string out;
    try {
      out = "ok";
      for (int64_t value : body()) out += " " + std::to_string(value);
    } catch (const std::exception& error) {
      out = std::string("error ") + error.what();
    }
    for (std::size_t done = 0; done < out.size();) {
      const ssize_t n = write(pipe_fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    _exit(0);  // no destructors, no Catch reporting in the child
  }
  close(pipe_fds[1]);
  std::string in;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) in.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) {
    throw std::runtime_error("the child died: status " + std::to_string(status));
  }
  if (in.rfind("ok", 0) != 0) throw std::runtime_error("the child failed: " + in);
  std::istringstream values(in.substr(2));
  std::vector<int64_t> result;
  for (int64_t value; values >> value;) result.push_back(value);
  return result;
}

HbmParams TestHbm() { return {uint64_t{1} << 30, 2, 4096, 32, 300}; }
VmemParams TestVmem() { return {16 << 20, 1, 512, 2048, 1024, 4, 1000}; }
DmaParams TestDma(uint32_t engines, uint32_t queue_depth) {
  return {engines, 8, 512, 16, queue_depth, 1000};
}

Shape Bytes(int64_t count) { return Shape::Array(ElementType::kU8, {count}); }
DmaTransfer Copy(Memory& from, uint64_t from_address, Memory& to, uint64_t to_address,
                 int64_t bytes) {
  return DmaTransfer::WholeArray(from, from_address, Bytes(bytes), to, to_address, Bytes(bytes));
}

// Three transfers: A and C on engine 0 (channel 0 of HBM, into vmem0), B on engine 1 (channel 1,
// into vmem1), so the engines never meet and each one's times follow from its own transfers.
struct Machine {
  Hbm hbm{"hbm", TestHbm()};
  Vmem vmem0{"vmem0", TestVmem()};
  Vmem vmem1{"vmem1", TestVmem()};
  DmaTransfer a() { return Copy(hbm, 0, vmem0, 0, 4096); }
  DmaTransfer b() { return Copy(hbm, 4096, vmem1, 0, 2048); }
  DmaTransfer c() { return Copy(hbm, 8192, vmem0, 8192, 1024); }
};

}  // namespace

TEST_CASE("the SystemC DMA unit times transfers as the plain engines do and signals semaphores",
          "[models]") {
  // Expected, without SystemC: engine 0 runs A then C, C beginning when A's last read has issued
  // (its reads then take the slots A's reads free while A's writes wait), engine 1 runs B. The
  // requests go in time order over both engines (engine 0 first on a tie), as the unit's threads.
  std::vector<int64_t> expected;
  int64_t c_begins = 0;
  {
    Machine machine;
    DmaEngine engine0("e0", TestDma(2, 4)), engine1("e1", TestDma(2, 4));
    const sc_time t0 = sc_core::SC_ZERO_TIME;
    engine0.Begin(machine.a(), t0, true);
    engine1.Begin(machine.b(), t0, true);
    bool c_begun = false;
    while (engine0.has_request() || engine1.has_request()) {
      DmaEngine* next = !engine1.has_request() ? &engine0
                        : !engine0.has_request() ? &engine1
                        : engine1.next_issue_time() < engine0.next_issue_time() ? &engine1 : &engine0;
      const sc_time at = next->next_issue_time();
      next->IssueNext();
      if (next == &engine0 && !c_begun && engine0.can_begin()) {
        engine0.Begin(machine.c(), at, true);
        c_begun = true;
        c_begins = Ps(at);
      }
    }
    const sc_time a_done = engine0.Finish().completed;
    const sc_time c_done = engine0.Finish().completed;
    expected = {Ps(a_done), Ps(engine1.Finish().completed), Ps(c_done)};
  }
  // From first principles: A is 8 bursts on one channel, 16 ns each, then 300 ns, then its last
  // write (0.5 + 4 ns), after 16 ns of issue latency; B is 4 bursts. All 8 of A's reads leave at
  // once (8 outstanding), so C begins at 16 ns. Its 2 reads wait for slots: A's read i completes
  // at 332 + 16i ns and its write (ready then, and a ready write goes first) takes that slot until
  // 4.5 ns later, so C's reads take the slots of A's writes 0 and 1, at 336.5 and 352.5 ns. C
  // completes at 352.5 + 16 + 300 + 4.5 ns, where beginning after A's completion it would have
  // completed at 448.5 + 16 + 2 x 16 + 300 + 4.5 = 801 ns.
  CHECK(expected[0] == 16'000 + 8 * 16'000 + 300'000 + 4'500);
  CHECK(expected[1] == 16'000 + 4 * 16'000 + 300'000 + 4'500);
  CHECK(c_begins == 16'000);
  CHECK(expected[2] == 352'500 + 16'000 + 300'000 + 4'500);

  for (const bool timing_only : {false, true}) {
    INFO("timing only: " << timing_only);
    const std::vector<int64_t> got = InChild([timing_only] {
      Machine machine;
      std::vector<uint8_t> pattern(16384);
      for (std::size_t i = 0; i < pattern.size(); ++i) {
        pattern[i] = static_cast<uint8_t>(i % 251 + 1);
      }
      machine.hbm.Write(0, pattern);
      DmaUnit dma("dma", TestDma(2, 4));
      dma.set_timing_only(timing_only);
      Semaphore engine0_done("engine0"), engine1_done("engine1");
      std::vector<int64_t> out;
      std::vector<DmaCompletion> completions;
      dma.set_completion_callback([&](const DmaCompletion& c) { completions.push_back(c); });
      const sc_time t0 = sc_core::sc_time_stamp();
      DmaTransfer a = machine.a(), b = machine.b(), c = machine.c();
      a.semaphore = c.semaphore = &engine0_done;
      b.semaphore = &engine1_done;
      c.semaphore_increment = 2;
      a.id = 1, b.id = 2, c.id = 3;
      dma.Submit(0, a);
      dma.Submit(1, b);
      dma.Submit(0, c);
      out.push_back(static_cast<int64_t>(dma.queued(0)));
      // The scalar core's part: wait on the semaphores and note when each wait returns.
      sc_core::sc_spawn([&] {
        engine1_done.Wait(1);
        out.push_back(Ps(sc_core::sc_time_stamp() - t0));
        engine0_done.Wait(1);
        out.push_back(Ps(sc_core::sc_time_stamp() - t0));
        engine0_done.Wait(2);
        out.push_back(Ps(sc_core::sc_time_stamp() - t0));
      });
      sc_core::sc_start();
      if (!dma.idle() || completions.size() != 3) throw std::runtime_error("not all done");
      // Completion records in time order: B, A, C; C was queued at t0 and began when A's last
      // read issued.
      for (const DmaCompletion& c : completions) {
        out.push_back(static_cast<int64_t>(c.id));
        out.push_back(Ps(c.completed - t0));
      }
      out.push_back(Ps(completions[2].submitted - t0));
      out.push_back(Ps(completions[2].started - t0));
      out.push_back(Ps(completions[2].first_issue - completions[2].started));
      // Data moved unless timing-only.
      out.push_back(machine.vmem0.Read(8192, 1024) == std::vector<uint8_t>(pattern.begin() + 8192,
                                                                          pattern.begin() + 9216));
      out.push_back(static_cast<int64_t>(dma.stats()[0].transfers));
      out.push_back(static_cast<int64_t>(dma.stats()[0].payload_bytes));
      return out;
    });
    const std::vector<int64_t> want = {
        2,  // before sc_start, A and C both wait in engine 0's queue
        expected[1], expected[0], expected[2],  // semaphore waits return at completion
        2, expected[1], 1, expected[0], 3, expected[2],
        0, c_begins, 16'000,
        timing_only ? 0 : 1,
        2, 4096 + 1024};
    CHECK(got == want);
  }
}

TEST_CASE("a full DMA queue refuses TrySubmit and holds Submit until it has room", "[models]") {
  const std::vector<int64_t> got = InChild([] {
    Hbm hbm("hbm", TestHbm());
    Vmem vmem("vmem", TestVmem());
    DmaUnit dma("dma", TestDma(1, 1));
    std::vector<int64_t> out;
    const sc_time t0 = sc_core::sc_time_stamp();
    out.push_back(dma.TrySubmit(0, Copy(hbm, 0, vmem, 0, 512)));
    out.push_back(dma.TrySubmit(0, Copy(hbm, 0, vmem, 0, 512)));  // the queue holds one
    try {
      dma.Submit(0, Copy(hbm, 0, vmem, 0, 512));
      out.push_back(0);
    } catch (const tpusim::Error& error) {
      const std::string message = error.what();
      out.push_back(message.find("outside a SystemC thread") != std::string::npos);
    }
    std::vector<int64_t> completions;
    dma.set_completion_callback(
        [&](const DmaCompletion& c) { completions.push_back(Ps(c.completed - t0)); });
    sc_core::sc_spawn([&] {
      for (int i = 0; i < 3; ++i) {
        dma.Submit(0, Copy(hbm, 0, vmem, 0, 512));
        out.push_back(Ps(sc_core::sc_time_stamp() - t0));  // when Submit returned
      }
    });
    sc_core::sc_start();
    out.insert(out.end(), completions.begin(), completions.end());
    return out;
  });
  // One 512-byte transfer: 16 ns issue latency + 16 ns on the channel + 300 ns + 0.5 + 4 ns.
  const int64_t one = 336'500;
  // The first Submit from the thread finds the queue full until the engine takes the queued
  // transfer at t0; each later one waits for the engine to take the previous one, which it does
  // when the transfer before that has issued its read: 16 ns (the issue latency) after that one
  // began. So the transfers stream 16 ns apart and complete 16 ns apart.
  CHECK(got == std::vector<int64_t>{1, 0, 1, 0, 16'000, 32'000, one, one + 16'000, one + 32'000, one + 48'000});
}

TEST_CASE("a DMA unit destroyed with work in flight abandons it safely", "[models]") {
  const std::vector<int64_t> got = InChild([] {
    const sc_time t0 = sc_core::sc_time_stamp();
    {
      auto hbm = std::make_unique<Hbm>("hbm", TestHbm());
      auto vmem = std::make_unique<Vmem>("vmem", TestVmem());
      auto dma = std::make_unique<DmaUnit>("dma", TestDma(1, 4));
      dma->Submit(0, Copy(*hbm, 0, *vmem, 0, 1 << 20));
      dma->Submit(0, Copy(*hbm, 0, *vmem, 0, 1 << 20));
      sc_core::sc_start(Nanoseconds(1000));
      if (dma->idle()) throw std::runtime_error("finished too soon");
      dma.reset();  // the engine thread is asleep inside a transfer
    }
    sc_core::sc_start();  // it wakes, finds the unit gone, and ends
    return std::vector<int64_t>{Ps(sc_core::sc_time_stamp() - t0)};
  });
  // The second sc_start ran: the abandoned thread woke after 1000 ns and ended quietly.
  REQUIRE(got.size() == 1);
  CHECK(got[0] > 1'000'000);
}

TEST_CASE("semaphores count and reject misuse", "[models]") {
  Semaphore semaphore("flag");
  semaphore.Signal(3);
  semaphore.Signal();
  CHECK(semaphore.value() == 4);
  CHECK(semaphore.signal_count() == 2);
  CHECK_THROWS_WITH(semaphore.Signal(-1), Catch::Contains("semaphore flag: signal of a negative"));
  CHECK_THROWS_WITH(semaphore.Wait(1), Catch::Contains("must be called from a SystemC thread"));
  DmaUnit dma("dma", TestDma(2, 4));
  Hbm hbm("hbm", TestHbm());
  Vmem vmem("vmem", TestVmem());
  CHECK_THROWS_WITH(dma.TrySubmit(2, Copy(hbm, 0, vmem, 0, 16)),
                    Catch::Equals("dma: no DMA engine 2 (it has 2)"));
  DmaTransfer bad = Copy(hbm, 0, vmem, 0, 16);
  bad.sizes = {17};
  CHECK_THROWS_WITH(dma.TrySubmit(0, bad), Catch::Contains("is outside u8[16]"));
  CHECK(dma.idle());
}
