// A timing-model regression guard (docs/validation.md): a fixed sample of rows of the TPU v4
// calibration set (../shared/validation/tpu_v4/) is simulated with `tpusim run --timing-only` on
// the tpu_v4 preset, and each kernel's simulated time must stay within a stated bound of its
// measured time. The bounds come from the calibration's measured error (docs/validation.md), with
// room for small model changes but not for a broken mechanism (a lost pass, a lost fixed cost, a
// halved bandwidth).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "tests/sim/exec_support.h"
#include "tests/validation/calibration.h"

namespace {

using namespace tpusim::exec_test;
using tpusim::validation::Row;

const std::string kDataDir = std::string(TPUSIM_SHARED_DIR) + "/validation/tpu_v4";

// The simulated time of the row's kernel: the op's time_us in the report (the one op there).
double SimulatedUs(const Row& row, const std::string& name) {
  const fs::path dir = TempDir("validation_" + name);
  WriteText(dir / "m.hlo", tpusim::validation::ModuleText(row));
  RunOk("run " + (dir / "m.hlo").string() + " --config tpu_v4 --timing-only --report " +
        (dir / "r.json").string());
  const std::string report = ReadText(dir / "r.json");
  // One kernel computes the row's op (an f16 element-wise op is a loop fusion of the op in f32
  // and its converts, compiler/passes/f16_normalization.h).
  const std::size_t first_op = report.find("\"opcode\": ");
  REQUIRE(first_op != std::string::npos);
  REQUIRE(report.find("\"opcode\": ", first_op + 1) == std::string::npos);
  return ReportNumber(dir / "r.json", "time_us");
}

const Row& FindRow(const std::vector<Row>& rows, const std::string& op, const std::vector<int64_t>& dims) {
  for (const Row& row : rows) {
    if (row.op == op && row.dims == dims) return row;
  }
  FAIL("no row " << op << " in the calibration set");
  throw;
}

}  // namespace

TEST_CASE("validation: a sample of the TPU v4 calibration set stays within the calibrated error", "[validation]") {
  std::vector<Row> rows = tpusim::validation::ReadGemmRows(kDataDir + "/gemm.csv");
  for (Row& row : tpusim::validation::ReadGemmRows(kDataDir + "/gemm_medium.csv")) {
    if (row.dims != std::vector<int64_t>{1024, 1024, 1024}) rows.push_back(std::move(row));  // gemm.csv has it too
  }
  for (Row& row : tpusim::validation::ReadElementwiseRows(kDataDir + "/elementwise.csv")) rows.push_back(std::move(row));
  REQUIRE(rows.size() == 686 + 255 + 256);  // the set's README

  struct Sample {
    const char* name;
    std::string op;
    std::vector<int64_t> dims;
    // Bounds on simulated / measured, from docs/validation.md: the class's range of that ratio over
    // the whole set (small gemm 0.93..1.30, medium 0.50..1.22, large 0.52..1.26, element-wise
    // 0.68..1.10), widened by 0.1 on each side so that small model changes pass and a lost
    // mechanism does not.
    double low, high;
  };
  const Sample samples[] = {
      // Small gemms: the dot kernel's fixed structure (one job's DMA-in, MXU passes, read-out and
      // DMA-out in sequence) is longer than XLA's. One TensorCore: too few rows to split.
      {"gemm_128", "dot", {128, 128, 128}, 0.83, 1.40},
      {"gemm_32x48x32", "dot", {32, 48, 32}, 0.83, 1.40},
      // A medium gemm (gemm_medium.csv): its rows split over both TensorCores, one job each, its
      // panels and output overlapping its passes and read-out.
      {"gemm_512", "dot", {512, 512, 512}, 0.40, 1.32},
      // A large gemm: XLA's kernel for 1024^3 is slower than its neighbours (1024x1024x1536 takes
      // 45.6 us, 1024^3 43.8 us); the model is below it.
      {"gemm_1024", "dot", {1024, 1024, 1024}, 0.42, 1.36},
      // Element-wise: f16 emulated on the VPU, the 2-D rows split over both TensorCores; the 1-D
      // rows sit on the fixed per-kernel floor, on one core.
      {"multiply_1024x1024", "multiply", {1024, 1024}, 0.58, 1.20},
      {"subtract_128x128", "subtract", {128, 128}, 0.58, 1.20},
      {"multiply_256", "multiply", {256}, 0.58, 1.20},
  };
  for (const Sample& sample : samples) {
    const Row& row = FindRow(rows, sample.op, sample.dims);
    const double simulated = SimulatedUs(row, sample.name);
    INFO(row.Label() << ": simulated " << simulated << " us, measured " << row.measured_us << " us");
    CHECK(simulated >= sample.low * row.measured_us);
    CHECK(simulated <= sample.high * row.measured_us);
  }
}
