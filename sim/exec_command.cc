#include "sim/exec_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "isa/error.h"
#include "isa/npy.h"
#include "isa/shape.h"
#include "sim/chip/chip.h"
#include "sim/chip/report_json.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"
#include "sim/trace/trace_session.h"

namespace tpusim::sim {
namespace {

struct ExecOptions {
  std::string program_path;
  std::string config = kDefaultPreset;
  std::vector<std::string> overrides;
  std::vector<std::string> inputs;
  std::string out_dir;
  bool timing_only = false;
  uint64_t max_instructions = models::kDefaultMaxInstructions;
  bool no_reuse = false;
  std::string report_path;
  TraceOptions trace;
};

std::map<std::string, isa::NpyArray> ReadInputs(const isa::Program& program,
                                                const std::vector<std::string>& assignments) {
  std::map<std::string, isa::NpyArray> inputs;
  for (const std::string& assignment : assignments) {
    const std::size_t eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error("--input " + assignment + ": expected NAME=FILE.npy (NAME: a parameter buffer)");
    }
    const std::string name = assignment.substr(0, eq);
    const std::string path = assignment.substr(eq + 1);
    const isa::Buffer* buffer = nullptr;
    for (const isa::Buffer& b : program.buffers()) {
      if (b.name() == name && b.role() == isa::BUFFER_ROLE_PARAMETER) buffer = &b;
    }
    if (buffer == nullptr) throw Error("--input " + assignment + ": the program has no parameter buffer '" + name + "'");
    inputs[name] = isa::ReadNpy(path, isa::ParseShape(buffer->shape()).element_type);
  }
  for (const isa::Buffer& b : program.buffers()) {
    if (b.role() == isa::BUFFER_ROLE_PARAMETER && !inputs.contains(b.name())) {
      spdlog::warn("parameter buffer '{}' has no --input: it starts as zeros", b.name());
    }
  }
  return inputs;
}

void RunExec(const ExecOptions& options) {
  CheckTraceOptions(options.trace);
  const isa::Program program = isa::AssembleFile(options.program_path);
  const std::string config_path = ResolveConfigPath(options.config);
  const ArchConfig config = LoadArchConfig(config_path, options.overrides);
  const std::map<std::string, isa::NpyArray> inputs = ReadInputs(program, options.inputs);
  if (options.max_instructions == 0) throw Error("--max-instructions must be at least 1");
  Chip chip(config, options.max_instructions);
  chip.set_reuse(!options.no_reuse);
  std::unique_ptr<TraceSession> trace;
  if (!options.trace.path.empty()) trace = std::make_unique<TraceSession>(options.trace, chip, program);
  const RunReport report = chip.Run(program, inputs, options.timing_only);
  // A program has no HLO: XLA Modules holds the whole run, named by the program; XLA Ops is empty.
  if (trace) trace->Finish(report, {XlaSlice{program.name(), 0, report.cycles, {}}}, {});
  fmt::print("{}", RunSummary(report, config));
  if (!options.out_dir.empty() && !options.timing_only) {
    std::filesystem::create_directories(options.out_dir);
    for (const OutputArray& output : report.outputs) {
      const std::string path = (std::filesystem::path(options.out_dir) / (output.name + ".npy")).string();
      isa::WriteNpy(path, output.array.type, output.array.dims, output.array.data);
      fmt::print("output {} ({}): {}\n", output.index, output.name, path);
    }
  }
  if (!options.report_path.empty()) {
    std::ofstream out(options.report_path, std::ios::binary);
    out << RunReportJson(report, config, options.timing_only);
    if (!out) throw Error(options.report_path + ": cannot write the report");
  }
}

}  // namespace

void AddConfigOptions(CLI::App* command, std::string& config, std::vector<std::string>& overrides) {
  command->add_option("--config", config,
                      "Config file, or the name of a preset in configs/ (tiny, tpu_v4, tpu_v5e, tpu_v6e)")
      ->capture_default_str();
  command->add_option("--set", overrides, "Override a config field: PATH=VALUE; repeatable")->allow_extra_args(false);
}

void AddNoReuseFlag(CLI::App* command, bool& no_reuse) {
  command->add_flag("--no-reuse", no_reuse,
                    "Simulate every segment between core.syncs, even one that starts as an earlier one did (a "
                    "timing-only run otherwise replays it: same cycles and statistics)");
}

void AddMaxInstructionsOption(CLI::App* command, uint64_t& max_instructions) {
  command->add_option("--max-instructions", max_instructions,
                      "Fault a run whose scalar core executes more instructions than this (a loop that never ends)")
      ->capture_default_str();
}

Command AddExecCommand(CLI::App& app) {
  auto options = std::make_shared<ExecOptions>();
  CLI::App* command = app.add_subcommand(
      "exec",
      "Assemble a .tpuasm program and run it on the simulated chip; print a summary and write "
      "each output buffer as DIR/<buffer name>.npy.");
  command->add_option("PROGRAM", options->program_path, "Assembly file (.tpuasm)")->required();
  AddConfigOptions(command, options->config, options->overrides);
  command->add_option("--input", options->inputs,
                      "NAME=FILE.npy: the row-major array of parameter buffer NAME; repeatable. "
                      "A parameter without one starts as zeros.")
      ->allow_extra_args(false);
  command->add_option("--out", options->out_dir, "Directory for the outputs, <buffer name>.npy");
  command->add_flag("--timing-only", options->timing_only,
                    "Move no DMA data (same cycles, no outputs written)");
  AddMaxInstructionsOption(command, options->max_instructions);
  AddNoReuseFlag(command, options->no_reuse);
  command->add_option("--report", options->report_path, "Write a JSON report of the run here");
  AddTraceOptions(command, options->trace);
  return Command{command, [options] { RunExec(*options); }};
}

}  // namespace tpusim::sim
