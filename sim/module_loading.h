// Reading an HLO module from a file for the commands that take one (parse, eval, opt, compile, run),
// and writing what they make of it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "compiler/hlo/ir.h"

namespace tpusim::sim {

// The device counts of an SPMD module as XLA's runners take them from flags (--num_replicas,
// --num_partitions); 0: not given.
struct DeviceCountFlags {
  int64_t replicas = 0;
  int64_t partitions = 0;
};

// `--num-replicas N` and `--num-partitions N` of the commands that load a module.
void AddDeviceCountOptions(CLI::App* command, DeviceCountFlags& flags);

// Parses (and, with `verify`, verifies) the module at `path` with its device counts: a flag's,
// which must agree with the HloModule line's where that states one; else the line's; else, where
// the collectives' groups name more replicas or partitions than that (a module whose header
// carries no counts, as XLA writes them when the runner's flags give them), the counts the groups
// imply, with a warning that says so. Throws tpusim::Error with `path:line:col` for a bad module,
// or `PATH: cannot open for reading`.
std::unique_ptr<hlo::Module> LoadModule(const std::string& path, bool verify, const DeviceCountFlags& devices = {});

// Writes `text` to `path`; throws tpusim::Error `PATH: cannot write`.
void WriteFile(const std::string& path, const std::string& text);

}  // namespace tpusim::sim
