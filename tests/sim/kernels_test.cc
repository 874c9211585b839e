// The MXU kernels on every preset: the 128-cube matmul on one MXU, the 512-cube matmul over all
// MXUs with double-buffered DMA, and a long stream that must reach the configured MXU peak.
// The presets' MXUs differ in shape (16 x 16, 128 x 128, 256 x 256), so the kernels are written
// for each machine by tests/sim/kernel_gen.cc; the hand-written tests/asm/matmul_128.tpuasm and
// matmul_512.tpuasm (exec_test.cc) and mxu_peak_stream.tpuasm (here) are the readable 128 x 128
// instances. Outputs are compared bit for bit with values computed here in the order the kernels
// add (kernel_gen.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "isa/npy.h"
#include "tests/sim/exec_support.h"
#include "tests/sim/kernel_gen.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::isa::ElementType;
namespace kg = tpusim::test_kernels;

int64_t RoundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// C = A x B as the MXU kernels sum it (kernel_gen.h): K in blocks of `depth` (the MXU's R; zeros
// past K), each block's partial sum formed as docs/isa.md's MXU forms it (exact bf16 products,
// added in f32 in increasing k from the first), then the blocks' partial sums added in f32 in
// increasing block order. f32 bytes, row-major.
std::vector<uint8_t> MxuOrderMatmul(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int m, int k,
                                    int n, int depth) {
  const std::vector<float> af = Bf16Values(a);
  std::vector<float> bt(static_cast<std::size_t>(k) * n);  // B transposed: the inner loop walks memory
  {
    const std::vector<float> bf = Bf16Values(b);
    for (int kk = 0; kk < k; ++kk)
      for (int j = 0; j < n; ++j) bt[static_cast<std::size_t>(j) * k + kk] = bf[static_cast<std::size_t>(kk) * n + j];
  }
  const int blocks = (k + depth - 1) / depth;
  std::vector<uint8_t> c(static_cast<std::size_t>(m) * n * 4);
  for (int i = 0; i < m; ++i) {
    const float* a_row = &af[static_cast<std::size_t>(i) * k];
    for (int j = 0; j < n; ++j) {
      const float* b_column = &bt[static_cast<std::size_t>(j) * k];
      float sum = 0;
      for (int kb = 0; kb < blocks; ++kb) {
        float partial = 0;
        for (int t = 0; t < depth; ++t) {
          const int kk = kb * depth + t;
          // Past K both operands are +0 (a zero vreg and unpushed weights): a +0 product. In K,
          // the product is exact in double and in float; the cast keeps the compiler from fusing
          // it into the addition.
          const float product =
              kk < k ? static_cast<float>(static_cast<double>(a_row[kk]) * static_cast<double>(b_column[kk])) : 0.0f;
          partial = t == 0 ? product : partial + product;
        }
        sum = kb == 0 ? partial : sum + partial;
      }
      std::memcpy(c.data() + 4 * (static_cast<std::size_t>(i) * n + j), &sum, 4);
    }
  }
  return c;
}

// "mxuK  x% utilized, ROWS rows, MACS MACs" from a run's summary; -1 if absent.
double SummaryMacs(const std::string& output, int mxu) {
  std::smatch match;
  const std::regex line("mxu" + std::to_string(mxu) + R"( +[0-9.]+% utilized, [0-9]+ rows, ([0-9]+) MACs)");
  return std::regex_search(output, match, line) ? std::stod(match[1]) : -1;
}

int CountDmaInstructions(const std::string& text) {
  int count = 0;
  for (std::size_t at = text.find("\n  dma "); at != std::string::npos; at = text.find("\n  dma ", at + 1)) ++count;
  return count;
}

// Runs a generated matmul on `preset` functionally and timing-only; returns the run's summary.
std::string RunMatmul(const std::string& preset, const kg::MatmulSpec& spec, const std::vector<uint8_t>& a,
                      const std::vector<uint8_t>& b, const std::vector<uint8_t>& expected) {
  const tpusim::ArchConfig config = LoadPreset(preset);
  const fs::path dir = TempDir(spec.name + "_" + preset);
  const std::string text = kg::MatmulKernel(config, spec);
  WriteText(dir / (spec.name + ".tpuasm"), text);
  INFO("kernel " << (dir / (spec.name + ".tpuasm")).string());
  tpusim::isa::WriteNpy((dir / "a.npy").string(), ElementType::kBF16, std::vector<int64_t>{spec.m, spec.k}, a);
  tpusim::isa::WriteNpy((dir / "b.npy").string(), ElementType::kBF16, std::vector<int64_t>{spec.k, spec.n}, b);
  const std::string common = (dir / (spec.name + ".tpuasm")).string() + " --config " + preset + " --input a=" +
                             (dir / "a.npy").string() + " --input b=" + (dir / "b.npy").string();
  const std::string run = RunOk("exec " + common + " --out " + (dir / "out").string() + " --report " + (dir / "f.json").string());
  const tpusim::isa::NpyArray c = ReadOutput(dir / "out" / "c.npy", ElementType::kF32);
  CHECK(c.dims == std::vector<int64_t>{spec.m, spec.n});
  const WordDiff diff = CompareWords(c.data, expected);
  INFO("first differing element " << diff.first);
  CHECK(diff.count == 0);
  // Every DMA of the kernel ran once (none is in a loop): its A row blocks, B panels and C stages.
  CHECK(ReportSum(dir / "f.json", "transfers") == CountDmaInstructions(text));
  // The MXUs did m x K x N MACs, K and N rounded up to the MXU's R and C (a 128-deep K on a
  // 256-deep MXU still passes every row through all 256 rows of the array).
  const auto& mxu = config.tensor_core().mxu();
  CHECK(ReportSum(dir / "f.json", "macs") ==
        static_cast<double>(spec.m) * RoundUp(spec.k, mxu.row_count()) * RoundUp(spec.n, mxu.column_count()));
  RunOk("exec " + common + " --timing-only --report " + (dir / "t.json").string());
  CHECK(ReportCycles(dir / "t.json") == ReportCycles(dir / "f.json"));
  return run;
}

}  // namespace

TEST_CASE("tpusim exec runs a generated 128-cube bf16 matmul on one MXU bit for bit on every preset", "[exec][kernels]") {
  // The same data as matmul_128.tpuasm's test (exec_test.cc). On tiny K is 8 blocks of 16 summed
  // by pop.acc; on tpu_v6e K is one block of 256 whose last 128 products are +0.
  const std::vector<uint8_t> a = RandomBf16(128 * 128, 11);
  const std::vector<uint8_t> b = RandomBf16(128 * 128, 12);
  for (const char* preset : kPresets) {
    INFO("preset " << preset);
    const tpusim::ArchConfig config = LoadPreset(preset);
    const kg::MatmulSpec spec{"matmul_128", 128, 128, 128, 1};
    REQUIRE(kg::MatmulMxusUsed(config, spec) == 1);
    const std::vector<uint8_t> expected =
        MxuOrderMatmul(a, b, 128, 128, 128, static_cast<int>(config.tensor_core().mxu().row_count()));
    const std::string output = RunMatmul(preset, spec, a, b, expected);
    CHECK(SummaryMacs(output, 0) > 0);
    for (uint32_t k = 1; k < config.tensor_core().mxu().count(); ++k) CHECK(SummaryMacs(output, k) == 0);
  }
}

TEST_CASE("tpusim exec runs a generated 512-cube bf16 matmul over all MXUs bit for bit on every preset", "[exec][kernels]") {
  // Every MXU does an equal share; on tpu_v4 and tpu_v5e the four MXUs take K's four blocks (as
  // matmul_512.tpuasm does), on tpu_v6e a 2 x 2 grid takes both K blocks of both 256-column
  // blocks, on tiny the one MXU takes 32 x 32 tiles in turn, K blocks summed by pop.acc.
  constexpr int n = 512;
  const std::vector<uint8_t> a = RandomBf16(n * n, 31);
  const std::vector<uint8_t> b = RandomBf16(n * n, 32);
  for (const char* preset : kPresets) {
    INFO("preset " << preset);
    const tpusim::ArchConfig config = LoadPreset(preset);
    const kg::MatmulSpec spec{"matmul_512", n, n, n, 0};
    const uint32_t used = kg::MatmulMxusUsed(config, spec);
    CHECK(used == config.tensor_core().mxu().count());
    const std::vector<uint8_t> expected =
        MxuOrderMatmul(a, b, n, n, n, static_cast<int>(config.tensor_core().mxu().row_count()));
    const std::string output = RunMatmul(preset, spec, a, b, expected);
    for (uint32_t k = 0; k < used; ++k) CHECK(SummaryMacs(output, static_cast<int>(k)) == double{n} * n * n / used);
  }
}

namespace {

constexpr int64_t kStreamGroups = 4096;  // what tests/asm/mxu_peak_stream.tpuasm streams

struct StreamRun {
  uint64_t cycles = 0;
  double achieved_flops = 0;  // 2 x MACs / device time
  double peak_flops = 0;      // one TensorCore's: the report's peak_flops_per_s over the cores
};

StreamRun RunStreamTimingOnly(const std::string& preset, const fs::path& program, const fs::path& dir) {
  RunOk("exec " + program.string() + " --config " + preset + " --timing-only --report " +
        (dir / "t.json").string());
  StreamRun result;
  result.cycles = ReportCycles(dir / "t.json");
  const double seconds = static_cast<double>(result.cycles) / (ReportNumber(dir / "t.json", "clock_mhz") * 1e6);
  result.achieved_flops = 2 * ReportSum(dir / "t.json", "macs") / seconds;
  // printed to 7 digits; the program runs on one TensorCore: its share of the chip's peak
  result.peak_flops = ReportNumber(dir / "t.json", "peak_flops_per_s") / LoadPreset(preset).tensor_core_count();
  return result;
}

}  // namespace

TEST_CASE("tpusim exec: a long matmul stream reaches the configured MXU peak within 3 percent on every preset", "[exec][kernels]") {
  // MxuPeakStreamKernel: weights latched once on every MXU, then 4096 groups of 16 bf16 rows per
  // MXU, each group's pops (mxu.pop.acc into registers) 8 or 16 groups behind its push (at least
  // pipeline_drain_cycles / 16), so that no pop waits for its rows and holds the in-order queue.
  // The LHS and the results stay in registers: nothing but the MXUs limits the stream.
  // docs/timing.md (MXU): such a stream takes F + G x 16 x passes + D cycles after the latch,
  // G = 4096 groups, so the run is that plus the weight load, one latch cycle, and a few cycles of
  // scalar start-up, last pops and stores. Against the 65536 cycles of passes, those are under
  // 1.3% on every preset (at most 256 + 1 + 256 + 256 + about 40 on tpu_v6e), so the achieved FLOP
  // rate 2 x MACs / time is within 3% of peak_flops_per_s = 2 x count x R x C x clock / passes,
  // and never above it.
  for (const char* preset : kPresets) {
    INFO("preset " << preset);
    const tpusim::ArchConfig config = LoadPreset(preset);
    const auto& mxu = config.tensor_core().mxu();
    const fs::path dir = TempDir(std::string("stream_") + preset);
    WriteText(dir / "stream.tpuasm", kg::MxuPeakStreamKernel(config, kStreamGroups));
    const StreamRun run = RunStreamTimingOnly(preset, dir / "stream.tpuasm", dir);
    const double peak = 2.0 * mxu.count() * mxu.row_count() * mxu.column_count() *
                        config.tensor_core().clock_mhz() * 1e6 / mxu.bf16_passes();
    CHECK(run.peak_flops == Approx(peak).epsilon(1e-6));
    INFO("cycles " << run.cycles << ", " << 100 * run.achieved_flops / peak << "% of peak");
    CHECK(run.achieved_flops >= 0.97 * peak);
    CHECK(run.achieved_flops <= peak);
    const double passes = kStreamGroups * 16 * mxu.bf16_passes();
    const double overhead = mxu.weight_load_cycles() + 1 + mxu.pipeline_fill_cycles() + mxu.pipeline_drain_cycles();
    CHECK(run.cycles >= passes + overhead);
    CHECK(run.cycles <= passes + overhead + 64);
  }
}

TEST_CASE("tpusim exec: the MXU stream's results are exact on every preset", "[exec][kernels]") {
  // The stream's LHS rows are 1.0 (even rows) and 2.0 (odd rows) in every K column, its weights
  // 1.0: every result row r is R x (1 or 2) in its C columns (0 in the lanes past C), and each
  // accumulator (one per MXU, half group and column block) adds G of them: G x R x (1 or 2),
  // exact in f32 (at most 64 x 256 x 2). Accumulator a is stored at rows 8a..8a+7 of `out`.
  // The same whether the LHS is one register or loaded from VMEM (`lhs`, given those rows).
  constexpr int64_t groups = 64;
  for (const char* preset : kPresets) {
    for (const bool from_vmem : {false, true}) {
      INFO("preset " << preset << (from_vmem ? ", LHS from VMEM" : ", LHS in a register"));
      const tpusim::ArchConfig config = LoadPreset(preset);
      const auto& mxu = config.tensor_core().mxu();
      const fs::path dir = TempDir(std::string("stream_values_") + preset + (from_vmem ? "_vmem" : ""));
      const std::string text = kg::MxuPeakStreamKernel(config, groups, from_vmem);
      WriteText(dir / "stream.tpuasm", text);
      std::string inputs;
      if (from_vmem) {
        std::smatch match;
        REQUIRE(std::regex_search(text, match, std::regex(R"(\.buffer lhs, [^\n]*shape=bf16\[(\d+),128\])")));
        const int64_t rows = std::stoll(match[1]);
        std::vector<uint8_t> lhs(rows * 128 * 2);
        for (int64_t r = 0; r < rows; ++r) {
          const uint16_t bits = r % 2 == 0 ? 0x3F80 : 0x4000;  // bf16 1.0, 2.0
          for (int64_t c = 0; c < 128; ++c) {
            lhs[2 * (r * 128 + c)] = static_cast<uint8_t>(bits);
            lhs[2 * (r * 128 + c) + 1] = static_cast<uint8_t>(bits >> 8);
          }
        }
        tpusim::isa::WriteNpy((dir / "lhs.npy").string(), ElementType::kBF16, std::vector<int64_t>{rows, 128}, lhs);
        inputs = " --input lhs=" + (dir / "lhs.npy").string();
      }
      RunOk("exec " + (dir / "stream.tpuasm").string() + " --config " + preset + inputs +
            " --out " + (dir / "out").string());
      const tpusim::isa::NpyArray out = ReadOutput(dir / "out" / "out.npy", ElementType::kF32);
      const int64_t column_blocks = (mxu.column_count() + 127) / 128;
      const int64_t accumulators = mxu.count() * 2 * column_blocks;
      REQUIRE(out.dims == std::vector<int64_t>{accumulators * 8, 128});
      int mismatches = 0;
      for (int64_t acc = 0; acc < accumulators; ++acc) {
        const int64_t q = acc % column_blocks;
        for (int64_t s = 0; s < 8; ++s) {
          for (int64_t l = 0; l < 128; ++l) {
            const bool in_c = q * 128 + l < mxu.column_count();
            const float want = in_c ? static_cast<float>(groups * mxu.row_count() * (s % 2 == 0 ? 1 : 2)) : 0.0f;
            float got;
            std::memcpy(&got, out.data.data() + 4 * ((acc * 8 + s) * 128 + l), 4);
            if (got != want) ++mismatches;
          }
        }
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("tpusim exec: a long matmul stream fed from VMEM is within 3 percent of its bound on every preset", "[exec][kernels]") {
  // The stream of the peak test with every pushed vreg loaded from VMEM a few groups ahead
  // (MxuPeakStreamKernel with lhs_from_vmem), as a real kernel feeds the MXUs. Three rates bound
  // it, each from the config:
  //   - the MXUs' peak (1 row per pass per MXU);
  //   - VMEM's read port: a group's loads are count x ceil(R / 128) vregs of 4 KiB per 16 x
  //     passes cycles, against read_bandwidth_gbps x 1000 / clock_mhz bytes per cycle (tpu_v4:
  //     1007.7 against 1024, 98.4% of peak; the others exactly 100%);
  //   - the scalar core, which spends an issue slot on every dispatch (docs/timing.md): per
  //     8-group iteration 8 x (loads + pushes + pops) + 1 instructions at issue_instructions_per_cycle,
  //     plus branch_cost_cycles for the loop (tpu_v6e: 8 x (8 + 8 + 16) + 1 = 257 slots, 131.5
  //     cycles per 128: 97.3% of peak).
  // The fill, drain and weight load cost about 1% as in the peak test; the loads' latency is
  // hidden by loading ahead. So the run reaches 97% of the lowest bound.
  for (const char* preset : kPresets) {
    INFO("preset " << preset);
    const tpusim::ArchConfig config = LoadPreset(preset);
    const auto& core = config.tensor_core();
    const auto& mxu = core.mxu();
    const fs::path dir = TempDir(std::string("stream_vmem_") + preset);
    WriteText(dir / "stream.tpuasm", kg::MxuPeakStreamKernel(config, kStreamGroups, true));
    const StreamRun run = RunStreamTimingOnly(preset, dir / "stream.tpuasm", dir);
    const double group_cycles = 16 * mxu.bf16_passes();
    const int64_t nk = (mxu.row_count() + 127) / 128, nc = (mxu.column_count() + 127) / 128;
    const double load_bytes = mxu.count() * nk * 4096.0;
    const double read_bytes_per_cycle = core.vmem().read_bandwidth_gbps() * 1000 / core.clock_mhz();
    const double vmem_bound = read_bytes_per_cycle / (load_bytes / group_cycles);
    const double instructions = 8.0 * mxu.count() * (nk + nk + 2 * nc) + 1;
    const double dispatch_cycles =
        instructions / core.scalar_core().issue_instructions_per_cycle() + core.scalar_core().branch_cost_cycles();
    const double dispatch_bound = 8 * group_cycles / dispatch_cycles;
    const double bound = std::min({1.0, vmem_bound, dispatch_bound});
    INFO("VMEM bound " << vmem_bound << ", dispatch bound " << dispatch_bound << ", achieved "
                       << run.achieved_flops / run.peak_flops);
    CHECK(run.achieved_flops >= 0.97 * bound * run.peak_flops);
    CHECK(run.achieved_flops <= bound * run.peak_flops * (1 + 1e-6));
  }
}

TEST_CASE("tests/asm/mxu_peak_stream.tpuasm is the generated stream for tpu_v4 and reaches the peak as written", "[exec][kernels]") {
  // The hand-commented file and MxuPeakStreamKernel(tpu_v4, 4096) assemble to the same
  // instructions, target and buffers, so the other presets run the same kernel, scaled.
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/tests/asm/mxu_peak_stream.tpuasm";
  const tpusim::isa::Program file = tpusim::isa::AssembleFile(path);
  const tpusim::isa::Program generated =
      tpusim::isa::Assemble(kg::MxuPeakStreamKernel(LoadPreset("tpu_v4"), kStreamGroups));
  CHECK(file.target().SerializeAsString() == generated.target().SerializeAsString());
  REQUIRE(file.instructions_size() == generated.instructions_size());
  for (int i = 0; i < file.instructions_size(); ++i) {
    INFO("instruction " << i);
    CHECK(file.instructions(i).SerializeAsString() == generated.instructions(i).SerializeAsString());
  }
  REQUIRE(file.buffers_size() == generated.buffers_size());
  for (int i = 0; i < file.buffers_size(); ++i) {
    CHECK(file.buffers(i).SerializeAsString() == generated.buffers(i).SerializeAsString());
  }
  for (const char* preset : {"tpu_v4", "tpu_v5e"}) {
    INFO("preset " << preset);
    const StreamRun run = RunStreamTimingOnly(preset, path, TempDir(std::string("stream_file_") + preset));
    CHECK(run.achieved_flops >= 0.97 * run.peak_flops);
    CHECK(run.achieved_flops <= run.peak_flops * (1 + 1e-6));
  }
}
