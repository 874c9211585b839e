#include "sim/run_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/eval/evaluator.h"
#include "compiler/lower/compile.h"
#include "compiler/passes/f16_normalization.h"
#include "compiler/passes/fused_attention_expansion.h"
#include "isa/error.h"
#include "isa/npy.h"
#include "models/dma_unit.h"
#include "sim/chip/chip.h"
#include "sim/compile_options.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"
#include "sim/inputs.h"
#include "sim/logging.h"
#include "sim/memory_dump.h"
#include "sim/module_loading.h"
#include "sim/module_report.h"
#include "sim/output_check.h"
#include "sim/progress_line.h"
#include "sim/trace/trace_session.h"
#include "sim/trace/xla_lines.h"

namespace tpusim::sim {
namespace {

struct RunOptions {
  std::string module_path;
  std::string config = kDefaultPreset;
  std::vector<std::string> overrides;
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  std::string out_dir;
  bool check = false;
  bool timing_only = false;
  bool no_tuning = false;
  bool no_reuse = false;
  uint64_t max_instructions = models::kDefaultMaxInstructions;
  int64_t device_id = 0;
  std::string report_path;
  std::string dump_dir;
  TraceOptions trace;
  bool quiet = false;
  double progress_after = ProgressLine::kDelaySeconds;
  DeviceCountFlags devices;
};

struct CompileCommandOptions {
  std::string module_path;
  std::string config = kDefaultPreset;
  std::vector<std::string> overrides;
  std::string output_path;
  DeviceCountFlags devices;
  bool no_tuning = false;
};

// --no-tuning: kernel plans by their cost estimates alone (compiler/lower/kernel_tuner.h).
void AddNoTuningFlag(CLI::App* command, bool& no_tuning) {
  command->add_flag("--no-tuning", no_tuning,
                    "Choose kernel plans by their cost estimates alone, without running candidates in simulation "
                    "(a faster compile; XLA's autotuner off)");
}

compiler::CompileOptions CompileOptionsWithTuning(const ArchConfig& config, bool no_tuning) {
  compiler::CompileOptions options = CompileOptionsFor(config);
  if (no_tuning) options.kernel_tuner = nullptr;
  return options;
}


// The host-side arrays of the compiled program's parameter buffers, from the entry's arguments;
// a parameter without a value (a timing-only run's big ones) gets none, and its buffer stays zero.
std::map<std::string, isa::NpyArray> HostInputs(const compiler::CompiledModule& compiled, const hlo::Computation& entry,
                                                const std::vector<std::optional<hlo::Literal>>& arguments) {
  std::map<std::string, isa::NpyArray> inputs;
  std::size_t next = 0;  // the parameter leaf (program parameter buffer) of the next array
  for (std::size_t p = 0; p < arguments.size(); ++p) {
    const std::size_t count = ArrayLeafCount(entry.parameters()[p]->shape());
    if (next + count > compiled.parameters.size()) break;
    if (arguments[p]) {
      std::size_t k = next;
      for (const hlo::Literal* leaf : FlattenLeaves(*arguments[p])) {
        if (leaf->element_type() == isa::ElementType::kToken) continue;
        inputs[compiled.parameters[k++].host_buffer] = isa::NpyArray{
            leaf->element_type(), leaf->dims(), std::vector<uint8_t>(leaf->bytes().begin(), leaf->bytes().end())};
      }
    }
    next += count;
  }
  if (next != compiled.parameters.size()) {
    throw Error(fmt::format("the module's parameters have {} arrays but the program takes {}", next,
                            compiled.parameters.size()));
  }
  return inputs;
}

// The entry's arguments: all of them for a run with data, only those a timing-only run reads
// (PrepareTimingArguments) otherwise.
std::vector<std::optional<hlo::Literal>> RunArguments(const hlo::Computation& entry, const RunOptions& options) {
  if (options.timing_only) {
    return PrepareTimingArguments(entry, options.inputs, options.seed, models::kTimingOnlyMovedBytes);
  }
  std::vector<std::optional<hlo::Literal>> arguments;
  for (hlo::Literal& argument : PrepareArguments(entry, options.inputs, options.seed)) {
    arguments.emplace_back(std::move(argument));
  }
  return arguments;
}

// The compiler's view of the machine, and of the device this run simulates: --device-id must be
// one of the module's replica_count x num_partitions devices.
compiler::CompileOptions RunCompileOptions(const ArchConfig& config, const hlo::Module& module,
                                           const RunOptions& options) {
  const int64_t devices = module.replica_count() * module.num_partitions();
  if (options.device_id < 0 || options.device_id >= devices) {
    throw Error(fmt::format("--device-id {}: module '{}' runs on {} device(s) (replica_count={} x num_partitions={}), "
                            "numbered 0 to {}",
                            options.device_id, module.name(), devices, module.replica_count(), module.num_partitions(),
                            devices - 1));
  }
  compiler::CompileOptions compile_options = CompileOptionsWithTuning(config, options.no_tuning);
  compile_options.device_id = options.device_id;
  compile_options.timing_only = options.timing_only;
  return compile_options;
}

// XLA's dumps print large constants as `{...}`: a timing-only run takes zeros for them (as the
// evaluator does; XLA's parser fills arbitrary values), which decides no timing but where a value
// is read as an index or a loop bound. Says so once.
void WarnOfElidedConstants(const hlo::Module& module) {
  std::size_t count = 0;
  const hlo::Instruction* first = nullptr;
  for (const auto& computation : module.computations()) {
    for (const auto& x : computation->instructions()) {
      if (x->opcode() != hlo::Opcode::kConstant || x->constant_form() != hlo::ConstantForm::kElided) continue;
      if (first == nullptr) first = x.get();
      ++count;
    }
  }
  if (first == nullptr) return;
  spdlog::warn("{}{}: its value is elided (`{{...}}`): --timing-only runs {} as zeros", first->Describe(),
               count > 1 ? fmt::format(" and {} other constants", count - 1) : "", count > 1 ? "them" : "it");
}

void RunRun(const RunOptions& options) {
  CheckTraceOptions(options.trace);
  if (options.check && options.timing_only) {
    throw Error("--check needs the data: it cannot be combined with --timing-only");
  }
  const ArchConfig config = LoadArchConfig(ResolveConfigPath(options.config), options.overrides);
  std::unique_ptr<hlo::Module> module = LoadModule(options.module_path, true, options.devices);
  std::vector<std::optional<hlo::Literal>> arguments = RunArguments(*module->entry(), options);
  if (options.timing_only) WarnOfElidedConstants(*module);

  // The reference result comes from the module as written (Compile leaves it so), with the two
  // rewrites below.
  std::unique_ptr<hlo::Module> reference = options.check ? module->Clone() : nullptr;
  // The evaluator has no TransformerEngine attention: it runs the same plain-HLO expansion that
  // the compiler lowers (tests/compiler/fused_attention_expansion_test.cc checks that expansion
  // against an independent unblocked attention).
  if (reference) compiler::ExpandFusedAttention(*reference);
  // f16 arithmetic runs in f32 with XLA's excess precision (compiler/passes/f16_normalization.h):
  // the reference computes the same values.
  if (reference) compiler::NormalizeF16(*reference);

  auto start = std::chrono::steady_clock::now();
  const compiler::CompileOptions compile_options = RunCompileOptions(config, *module, options);
  compiler::CompiledModule compiled = compiler::Compile(*module, compile_options);
  spdlog::info("compiled {} in {:.3f} s: {} kernels, {} instructions, {} bytes of HBM at the peak, {} kernel "
               "candidates run",
               options.module_path, SecondsSince(start), compiled.kernels.size(), compiled.program.instructions_size(),
               compiled.hbm_peak_bytes, compile_options.kernel_tuner ? compile_options.kernel_tuner->trials() : 0);

  if (options.max_instructions == 0) throw Error("--max-instructions must be at least 1");
  Chip chip(config, options.max_instructions);
  chip.set_marked_labels(MarkedLabels(compiled));
  chip.set_reuse(!options.no_reuse);
  std::unique_ptr<TraceSession> trace;
  if (!options.trace.path.empty()) trace = std::make_unique<TraceSession>(options.trace, chip, compiled.program);
  start = std::chrono::steady_clock::now();
  std::optional<ProgressLine> progress;
  if (!options.quiet && isatty(fileno(stderr))) {
    progress.emplace(compiled.kernels.size(), stderr, options.progress_after);
    chip.set_progress([&progress](const Chip::Progress& now) { progress->Update(now); });
  }
  const RunReport run =
      chip.Run(compiled.program, HostInputs(compiled, *module->entry(), arguments), options.timing_only);
  progress.reset();  // erases the line before the summary
  spdlog::info("simulated {} in {:.3f} s: {} of {} core.sync rounds quiet, {} segments recorded, {} replayed "
               "({:.1f}% of the run's cycles)",
               options.module_path, SecondsSince(start), run.reuse.quiet, run.reuse.rounds, run.reuse.recorded,
               run.reuse.replayed, run.cycles == 0 ? 0.0 : 100.0 * static_cast<double>(run.reuse.replayed_cycles) /
                                                               static_cast<double>(run.cycles));
  spdlog::info("simulating segments took {:.1f} s while recording them, {:.1f} s for segments not recorded (from "
               "rounds that were not quiet, or keys with every variant kept)",
               run.reuse.recording_seconds, run.reuse.unrecorded_seconds);
  const ModuleReport report = MakeModuleReport(compiled, run, config);
  if (trace) trace->Finish(run, XlaModuleSlices(module->name(), run), XlaOpSlices(report, run));
  fmt::print("{}", ModuleSummary(module->name(), report, run, config));

  if (!options.out_dir.empty() && !options.timing_only) {
    std::filesystem::create_directories(options.out_dir);
    for (const OutputArray& output : run.outputs) {
      const std::string path =
          (std::filesystem::path(options.out_dir) / fmt::format("output_{}.npy", output.index)).string();
      isa::WriteNpy(path, output.array.type, output.array.dims, output.array.data);
    }
  }
  if (!options.dump_dir.empty()) DumpMemory(compiled, chip, options.dump_dir);
  if (!options.report_path.empty()) WriteFile(options.report_path, ModuleReportJson(report, run, config, options.timing_only));

  if (options.check) {
    eval::EvaluatorOptions evaluator_options;
    evaluator_options.seed = options.seed;
    std::vector<hlo::Literal> values;  // every argument is present in a run with data
    for (std::optional<hlo::Literal>& argument : arguments) values.push_back(std::move(*argument));
    const eval::EvaluationResult expected = eval::EvaluateModule(*reference, values, std::move(evaluator_options));
    std::vector<const hlo::Literal*> want;
    for (const hlo::Literal* leaf : FlattenLeaves(expected.device_results.at(static_cast<std::size_t>(options.device_id)))) {
      if (leaf->element_type() != isa::ElementType::kToken) want.push_back(leaf);
    }
    std::vector<isa::NpyArray> got;
    for (const OutputArray& output : run.outputs) got.push_back(output.array);
    const std::vector<CheckBound> bounds = BoundsFor(compiled.output_accumulations);
    const CheckResult result = CompareOutputs(want, got, bounds);
    const std::string worst = result.worst.empty() ? "every element equal" : "worst: " + result.worst;
    // The loosest output's bound, in the outputs' own types (bf16 allows fewer of its coarser
    // ulps), and every reason.
    uint64_t ulps = 0;
    for (std::size_t i = 0; i < got.size() && i < bounds.size(); ++i) {
      if (isa::IsFloat(got[i].type)) ulps = std::max(ulps, UlpsFor(bounds[i], got[i].type));
    }
    const CheckBound bound = Loosest(bounds);
    if (!result.ok) {
      throw Error(fmt::format("--check failed: {} elements differ beyond the bound ({} ulp: {}); {}", result.mismatches,
                              ulps, bound.reason, worst));
    }
    fmt::print("check passed: {} output(s) within {} ulp of the reference evaluator ({}); {}\n", got.size(), ulps,
               bound.reason, worst);
  }
}

void RunCompile(const CompileCommandOptions& options) {
  const ArchConfig config = LoadArchConfig(ResolveConfigPath(options.config), options.overrides);
  std::unique_ptr<hlo::Module> module = LoadModule(options.module_path, true, options.devices);
  const compiler::CompiledModule compiled = compiler::Compile(*module, CompileOptionsWithTuning(config, options.no_tuning));
  WriteFile(options.output_path, compiler::ProgramText(compiled));
  fmt::print("{}: {} kernels, {} instructions, {} bytes of HBM at the peak, {} bytes of host memory at the peak\n",
             options.output_path, compiled.kernels.size(), compiled.program.instructions_size(),
             compiled.hbm_peak_bytes, compiled.host_peak_bytes);
}

}  // namespace

Command AddRunCommand(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand(
      "run",
      "Compile an HLO module for the configured chip, run it on the simulated machine with real data, "
      "and print what happened: time, the top ops and the roofline.");
  command->add_option("MODULE", options->module_path, "HLO text file (.hlo)")->required();
  AddConfigOptions(command, options->config, options->overrides);
  AddDeviceCountOptions(command, options->devices);
  command->add_option("--input", options->inputs,
                      "N=FILE.npy or NAME=FILE.npy: parameter N (or named NAME); repeatable. Parameters "
                      "without one get random values from --seed.")
      ->allow_extra_args(false);
  command->add_option("--seed", options->seed, "Seed of the random inputs")->capture_default_str();
  command->add_option("--out", options->out_dir, "Directory for output_<i>.npy");
  command->add_flag("--check", options->check,
                    "Also run the reference evaluator and compare; exit non-zero on a mismatch");
  command->add_flag("--timing-only", options->timing_only,
                    "Move no data and compute nothing (same timing); collectives over several devices then charge "
                    "their ICI time");
  AddMaxInstructionsOption(command, options->max_instructions);
  AddNoTuningFlag(command, options->no_tuning);
  AddNoReuseFlag(command, options->no_reuse);
  command->add_option("--device-id", options->device_id,
                      "The device of an SPMD module that the run simulates (replica x num_partitions + partition): "
                      "what partition-id and replica-id return and which groups its collectives join")
      ->capture_default_str();
  command->add_option("--report", options->report_path, "Write a JSON report (ops, times, unit statistics) here");
  command->add_option("--dump-memory", options->dump_dir,
                      "Write the device bytes of every parameter and output after the run, and index.json");
  AddTraceOptions(command, options->trace);
  command->add_flag("--quiet", options->quiet,
                    "No progress line on stderr (shown while a simulation runs longer than --progress-after, when "
                    "stderr is a terminal)");
  command->add_option("--progress-after", options->progress_after,
                      "Seconds of simulation before the progress line shows")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  return Command{command, [options] { RunRun(*options); }};
}

Command AddCompileCommand(CLI::App& app) {
  auto options = std::make_shared<CompileCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "compile", "Compile an HLO module for the configured chip and write the program as .tpuasm (tpusim exec runs it).");
  command->add_option("MODULE", options->module_path, "HLO text file (.hlo)")->required();
  AddConfigOptions(command, options->config, options->overrides);
  AddDeviceCountOptions(command, options->devices);
  command->add_option("-o,--output", options->output_path, "The .tpuasm file to write")->required();
  AddNoTuningFlag(command, options->no_tuning);
  return Command{command, [options] { RunCompile(*options); }};
}

}  // namespace tpusim::sim
