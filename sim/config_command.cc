#include "sim/config_command.h"

#include <fmt/format.h>
#include <google/protobuf/text_format.h>

#include <memory>
#include <string>
#include <vector>

#include "isa/error.h"
#include "sim/config/derived.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"

namespace tpusim::sim {
namespace {

struct ConfigOptions {
  std::string config = kDefaultPreset;
  std::vector<std::string> overrides;
};

// The derived peaks, as text-proto comments so that the whole output loads back as a config.
std::string DerivedPeaks(const ArchConfig& config) {
  const TensorCoreConfig& core = config.tensor_core();
  const double clock = core.clock_mhz();
  std::string out = "# Derived peaks (per chip unless said):\n";
  out += fmt::format("#   MXU bf16          {:.2f} TFLOP/s = 2 x {} TensorCore(s) x {} MXU(s) x {} x {} x {} MHz\n",
                     PeakFlopsPerSecond(config) / 1e12, config.tensor_core_count(), core.mxu().count(),
                     core.mxu().row_count(), core.mxu().column_count(), clock);
  out += fmt::format("#   HBM               {:.2f} GB/s = {} channels x {} GB/s\n",
                     HbmBytesPerSecond(config) / 1e9, config.hbm().channel_count(),
                     config.hbm().channel_bandwidth_gbps());
  out += fmt::format("#   VMEM read/write   {:.2f} / {:.2f} GB/s per TensorCore = {:.1f} / {:.1f} bytes/cycle\n",
                     VmemReadBytesPerSecondPerTensorCore(config) / 1e9,
                     VmemWriteBytesPerSecondPerTensorCore(config) / 1e9,
                     BytesPerCycle(core.vmem().read_bandwidth_gbps(), clock),
                     BytesPerCycle(core.vmem().write_bandwidth_gbps(), clock));
  if (config.has_cmem()) {
    out += fmt::format("#   CMEM read/write   {:.2f} / {:.2f} GB/s\n", CmemReadBytesPerSecond(config) / 1e9,
                       CmemWriteBytesPerSecond(config) / 1e9);
  } else {
    out += "#   CMEM              none\n";
  }
  out += fmt::format("#   PCIe              {:.2f} GB/s each way\n", PcieBytesPerSecond(config) / 1e9);
  out += fmt::format("#   ICI ring          {:.2f} GB/s each way = {} link(s) x {:.1f} GB/s, {:.0f} ns per hop\n",
                     config.ici().link_bandwidth_gbps() * config.ici().ring_link_count(), config.ici().ring_link_count(),
                     config.ici().link_bandwidth_gbps(), config.ici().latency_ns());
  return out;
}

void RunConfig(const ConfigOptions& options) {
  const std::string path = ResolveConfigPath(options.config);
  const ArchConfig config = LoadArchConfig(path, options.overrides);
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(config, &text)) {
    throw Error("internal: cannot print the configuration as text");
  }
  std::string out = "# tpusim config: " + path + "\n";
  for (const std::string& assignment : options.overrides) out += "#   --set " + assignment + "\n";
  fmt::print("{}{}{}", out, text, DerivedPeaks(config));
}

}  // namespace

Command AddConfigCommand(CLI::App& app) {
  auto options = std::make_shared<ConfigOptions>();
  CLI::App* command = app.add_subcommand(
      "config",
      "Print the effective architecture configuration (a preset or file with the --set overrides "
      "applied, validated) as a text proto that loads back, followed by the peaks it implies.");
  command->add_option("--config", options->config,
                      "Config file, or the name of a preset in configs/ (tiny, tpu_v4, tpu_v5e, tpu_v6e)")
      ->capture_default_str();
  command->add_option("--set", options->overrides,
                      "Override a field: PATH=VALUE, e.g. tensor_core.mxu.count=8; repeatable, "
                      "applied in order (docs/configs.md)")
      ->allow_extra_args(false);
  return Command{command, [options] { RunConfig(*options); }};
}

}  // namespace tpusim::sim
