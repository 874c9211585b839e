// tpusim_calibrate: simulates every row of the TPU v4 calibration set (docs/validation.md) and
// compares the simulated kernel time with the measured one. One Chip runs every row's program
// (SystemC elaborates once per process), in timing-only mode.
//
//   tpusim_calibrate [--data DIR] [--config tpu_v4] [--set k=v ...] [--csv ROWS.csv]
//                    [--summary SUMMARY.md] [--every N] [--class small|medium|large|elementwise]

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <systemc>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/lower/compile.h"
#include "isa/error.h"
#include "sim/chip/chip.h"
#include "sim/compile_options.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"
#include "sim/module_report.h"
#include "tests/validation/calibration.h"

namespace tpusim::validation {
namespace {

struct Options {
  std::string data_dir = std::string(TPUSIM_SHARED_DIR) + "/validation/tpu_v4";
  std::string config = "tpu_v4";
  std::vector<std::string> overrides;
  std::string csv_path;
  std::string summary_path;
  int every = 1;
  std::string only_class;
};

// The simulated time of the row's one kernel (an f16 element-wise op is a loop fusion of the op
// in f32 and its converts: compiler/passes/f16_normalization.h).
double SimulateRow(sim::Chip& chip, const ArchConfig& config, const Row& row) {
  std::unique_ptr<hlo::Module> module = hlo::ParseModule(ModuleText(row), row.Label());
  hlo::Verify(*module);
  const compiler::CompiledModule compiled = compiler::Compile(*module, sim::CompileOptionsFor(config));
  chip.set_marked_labels(sim::MarkedLabels(compiled));
  const sim::RunReport run = chip.Run(compiled.program, {}, /*timing_only=*/true);
  const sim::ModuleReport report = sim::MakeModuleReport(compiled, run, config);
  if (report.ops.size() != 1) throw Error(fmt::format("{}: expected one kernel, the program has {}", row.Label(), report.ops.size()));
  return report.ops.front().time_us;
}

bool Selected(const Row& row, const std::string& only) {
  if (only.empty()) return true;
  if (only == "small") return row.row_class == RowClass::kSmallGemm;
  if (only == "medium") return row.row_class == RowClass::kMediumGemm;
  if (only == "large") return row.row_class == RowClass::kLargeGemm;
  if (only == "elementwise") return row.row_class == RowClass::kElementwise;
  throw Error("--class must be small, medium, large or elementwise, not '" + only + "'");
}

std::string SummaryLine(const std::string& name, const Stats& s) {
  if (s.rows == 0) return fmt::format("| {} | 0 | - | - | - |\n", name);
  return fmt::format("| {} | {} | {:.1f}% | {:+.1f}% | {:+.1f}% ({}) |\n", name, s.rows, s.mape_percent,
                     s.mean_error_percent, s.worst_percent, s.worst_label);
}

int Main(const Options& options) {
  spdlog::set_level(spdlog::level::warn);
  const ArchConfig config = sim::LoadArchConfig(sim::ResolveConfigPath(options.config), options.overrides);
  if (options.every < 1) throw Error("--every must be at least 1");
  std::vector<Row> all = ReadGemmRows(options.data_dir + "/gemm.csv");
  for (Row& row : ReadGemmRows(options.data_dir + "/gemm_medium.csv")) {
    row.row_class = RowClass::kMediumGemm;  // its 1024^3 row too, which gemm.csv also measured
    all.push_back(std::move(row));
  }
  for (Row& row : ReadElementwiseRows(options.data_dir + "/elementwise.csv")) all.push_back(std::move(row));
  std::vector<Row> rows;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i % options.every == 0 && Selected(all[i], options.only_class)) rows.push_back(all[i]);
  }

  sim::Chip chip(config);
  std::vector<double> simulated;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    simulated.push_back(SimulateRow(chip, config, rows[i]));
    if ((i + 1) % 50 == 0) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print(stderr, "{} of {} rows, {:.0f} s\n", i + 1, rows.size(), seconds);
    }
  }

  if (!options.csv_path.empty()) {
    std::ofstream csv(options.csv_path);
    csv << "class,op,dims,measured_us,simulated_us,error_percent\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::string dims;
      for (std::size_t d = 0; d < rows[i].dims.size(); ++d) dims += (d ? "x" : "") + std::to_string(rows[i].dims[d]);
      csv << fmt::format("{},{},{},{:.4f},{:.4f},{:.2f}\n", ClassName(rows[i].row_class), rows[i].op, dims,
                         rows[i].measured_us, simulated[i], ErrorPercent(simulated[i], rows[i].measured_us));
    }
    if (!csv) throw Error(options.csv_path + ": cannot write");
  }

  auto where = [&](auto predicate) {
    std::vector<bool> include;
    for (const Row& row : rows) include.push_back(predicate(row));
    return Summarize(rows, simulated, include);
  };
  std::string summary = fmt::format("config {}{}, {} rows\n\n", options.config,
                                    options.overrides.empty() ? "" : " (with --set overrides)", rows.size());
  summary += "| rows | count | MAPE | mean error | worst |\n|---|---|---|---|---|\n";
  summary += SummaryLine("gemm.csv", where([](const Row& r) { return r.op == "dot" && r.row_class != RowClass::kMediumGemm; }));
  summary += SummaryLine("small gemm (32..128)", where([](const Row& r) { return r.row_class == RowClass::kSmallGemm; }));
  summary += SummaryLine("gemm_medium.csv (128..1024)", where([](const Row& r) { return r.row_class == RowClass::kMediumGemm; }));
  summary += SummaryLine("large gemm (1024..4096)", where([](const Row& r) { return r.row_class == RowClass::kLargeGemm; }));
  summary += SummaryLine("elementwise.csv", where([](const Row& r) { return r.row_class == RowClass::kElementwise; }));
  summary += SummaryLine("all rows", where([](const Row&) { return true; }));
  summary += SummaryLine("all but large gemm", where([](const Row& r) { return r.row_class != RowClass::kLargeGemm; }));
  fmt::print("{}", summary);
  if (!options.summary_path.empty()) {
    std::ofstream out(options.summary_path);
    out << summary;
    if (!out) throw Error(options.summary_path + ": cannot write");
  }
  return 0;
}

}  // namespace
}  // namespace tpusim::validation

// SystemC's entry point (called by sc_elab_and_sim from main below).
int sc_main(int argc, char** argv) {
  tpusim::validation::Options options;
  CLI::App app{"Simulates the TPU v4 calibration set and reports the error against the measured kernel times."};
  app.add_option("--data", options.data_dir, "Directory with gemm.csv, gemm_medium.csv and elementwise.csv")->capture_default_str();
  app.add_option("--config", options.config, "Preset name or .pbtxt path")->capture_default_str();
  app.add_option("--set", options.overrides, "path.to.field=value; repeatable");
  app.add_option("--csv", options.csv_path, "Write one line per row here");
  app.add_option("--summary", options.summary_path, "Write the summary table here");
  app.add_option("--every", options.every, "Simulate every N-th row only")->capture_default_str();
  app.add_option("--class", options.only_class, "Only small, medium, large or elementwise rows");
  CLI11_PARSE(app, argc, argv);
  try {
    return tpusim::validation::Main(options);
  } catch (const tpusim::Error& error) {
    fmt::print(stderr, "error: {}\n", error.what());
    return 1;
  }
}

int main(int argc, char** argv) {
  // Before SystemC starts: libsystemc's own main would print its banner first.
  setenv("SC_COPYRIGHT_MESSAGE", "DISABLE", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
