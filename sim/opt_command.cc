#include "sim/opt_command.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/pipeline.h"
#include "isa/error.h"
#include "sim/compile_options.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"
#include "sim/module_loading.h"

namespace tpusim::sim {
namespace {

struct OptOptions {
  std::string module_path;
  std::string config = "tpu_v4";
  std::vector<std::string> overrides;
  std::vector<std::string> passes;
  std::string dump_after;
  std::string output_path;
  DeviceCountFlags devices;
};

void RunOpt(const OptOptions& options) {
  const ArchConfig config = LoadArchConfig(ResolveConfigPath(options.config), options.overrides);
  std::unique_ptr<hlo::Module> module = LoadModule(options.module_path, true, options.devices);
  std::string text;
  bool dumped = false;
  compiler::RunHloPasses(*module, CompileOptionsFor(config), options.passes, [&](const compiler::HloPass& pass) {
    // Every pass leaves a module the verifier accepts: a pass that does not is named here.
    try {
      hlo::Verify(*module);
    } catch (const Error& e) {
      throw Error(fmt::format("after pass '{}': {}", pass.name, e.what()));
    }
    if (options.dump_after == "all" || options.dump_after == pass.name) {
      text += fmt::format("// after pass {}\n{}", pass.name, hlo::ToString(*module));
      dumped = true;
    }
  });
  if (!options.dump_after.empty() && !dumped) {
    throw Error("--dump-after " + options.dump_after + ": no such pass ran (`all`, or one of --passes, or of the pipeline)");
  }
  if (options.dump_after.empty()) text = hlo::ToString(*module);
  if (options.output_path.empty()) {
    fmt::print("{}", text);
  } else {
    WriteFile(options.output_path, text);
  }
}

}  // namespace

Command AddOptCommand(CLI::App& app) {
  auto options = std::make_shared<OptOptions>();
  CLI::App* command = app.add_subcommand(
      "opt",
      "Run tpusim's HLO passes on a module (all of them, in order, or those of --passes) and print the module they "
      "leave, the one the kernels are lowered from; the verifier checks it after every pass.");
  command->add_option("MODULE", options->module_path, "HLO text file (.hlo)")->required();
  AddConfigOptions(command, options->config, options->overrides);
  AddDeviceCountOptions(command, options->devices);
  command->add_option("--passes", options->passes, "Only these passes (comma-separated names), in pipeline order")
      ->delimiter(',');
  command->add_option("--dump-after", options->dump_after,
                      "Print the module after this pass (or after every pass: all), not only at the end");
  command->add_option("-o,--output", options->output_path, "Write the text here instead of stdout");
  return Command{command, [options] { RunOpt(*options); }};
}

}  // namespace tpusim::sim
