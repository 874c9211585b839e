#include "sim/hlo_commands.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/eval/evaluator.h"
#include "compiler/hlo/printer.h"
#include "isa/error.h"
#include "isa/npy.h"
#include "sim/inputs.h"
#include "sim/logging.h"
#include "sim/module_loading.h"

namespace tpusim::sim {
namespace {

struct ParseOptions {
  std::string module_path;
  bool print = false;
  bool no_verify = false;
  DeviceCountFlags devices;
};

struct EvalOptions {
  std::string module_path;
  std::vector<std::string> inputs;
  uint64_t seed = 0;
  std::string out_dir;
  bool no_verify = false;
  DeviceCountFlags devices;
};


void RunParse(const ParseOptions& options) {
  const auto module = LoadModule(options.module_path, !options.no_verify, options.devices);
  if (options.print) {
    fmt::print("{}", hlo::ToString(*module));
    return;
  }
  std::size_t instructions = 0;
  for (const auto& computation : module->computations()) instructions += computation->instruction_count();
  const hlo::Computation& entry = *module->entry();
  fmt::print("module {}: {} computations, {} instructions{}\n", module->name(),
             module->computations().size(), instructions, options.no_verify ? "" : ", verified");
  fmt::print("entry {}: {} parameters -> {}\n", entry.name(), entry.parameters().size(),
             isa::ToString(entry.root()->shape()));
}

void RunEval(const EvalOptions& options) {
  const auto module = LoadModule(options.module_path, !options.no_verify, options.devices);
  const hlo::Computation& entry = *module->entry();
  const std::vector<hlo::Literal> arguments = PrepareArguments(entry, options.inputs, options.seed);
  eval::EvaluatorOptions evaluator_options;
  evaluator_options.seed = options.seed;
  const auto start = std::chrono::steady_clock::now();
  eval::EvaluationResult result = eval::EvaluateModule(*module, arguments, std::move(evaluator_options));
  spdlog::info("evaluated {} in {:.3f} s on {} device(s)", options.module_path, SecondsSince(start),
               result.device_results.size());
  if (result.device_results.size() > 1) {
    spdlog::info("writing device 0's outputs (replica 0, partition 0)");
  }
  std::filesystem::create_directories(options.out_dir);
  const std::vector<const hlo::Literal*> leaves = FlattenLeaves(result.device_results.at(0));
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    const hlo::Literal& leaf = *leaves[i];
    if (leaf.element_type() == isa::ElementType::kToken) {
      fmt::print("output {}: token (no data, not written)\n", i);
      continue;
    }
    const std::string path = (std::filesystem::path(options.out_dir) / fmt::format("output_{}.npy", i)).string();
    isa::WriteNpy(path, leaf.element_type(), leaf.dims(), leaf.bytes());
    fmt::print("output {}: {} -> {}\n", i, isa::ToString(leaf.shape()), path);
  }
}

}  // namespace

Command AddParseCommand(CLI::App& app) {
  auto options = std::make_shared<ParseOptions>();
  CLI::App* command = app.add_subcommand(
      "parse", "Parse and verify an HLO text module; print a summary, or the canonical text with --print.");
  command->add_option("MODULE", options->module_path, "HLO text file (.hlo)")->required();
  command->add_flag("--print", options->print, "Write the module as canonical HLO text to stdout");
  command->add_flag("--no-verify", options->no_verify, "Skip the verifier (shape inference)");
  AddDeviceCountOptions(command, options->devices);
  return Command{command, [options] { RunParse(*options); }};
}

Command AddEvalCommand(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* command = app.add_subcommand(
      "eval",
      "Run an HLO module on the reference evaluator and write its outputs as .npy: one "
      "output_<i>.npy per leaf of the root (output_0.npy for a non-tuple root).");
  command->add_option("MODULE", options->module_path, "HLO text file (.hlo)")->required();
  command->add_option("--input", options->inputs,
                      "N=FILE.npy or NAME=FILE.npy: parameter N (or named NAME) of the entry "
                      "computation; repeatable. Parameters without one get random values from --seed.");
  command->add_option("--seed", options->seed, "Seed of the random inputs and of rng ops")
      ->capture_default_str();
  command->add_option("--out", options->out_dir, "Directory for output_<i>.npy")->required();
  command->add_flag("--no-verify", options->no_verify, "Skip the verifier (shape inference)");
  AddDeviceCountOptions(command, options->devices);
  return Command{command, [options] { RunEval(*options); }};
}

}  // namespace tpusim::sim
