#include "sim/module_loading.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/hlo/device_counts.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "isa/error.h"
#include "sim/logging.h"

namespace tpusim::sim {
namespace {

// One of the two counts: the HloModule line's attribute, its flag, and what the module runs with.
struct DeviceCount {
  std::string_view attribute;  // replica_count, num_partitions
  std::string_view flag;       // --num-replicas, --num-partitions
  std::string_view what;       // replicas, partitions
  int64_t value = 1;
  bool stated = false;  // by the HloModule line or a flag: never inferred
};

// Sets the module's device counts from `flags`, its HloModule line and its collectives' groups.
void SetDeviceCounts(hlo::Module& module, const DeviceCountFlags& flags, const std::string& path) {
  DeviceCount replicas{"replica_count", "--num-replicas", "replicas", module.replica_count(),
                       module.FindAttribute("replica_count") != nullptr};
  DeviceCount partitions{"num_partitions", "--num-partitions", "partitions", module.num_partitions(),
                         module.FindAttribute("num_partitions") != nullptr};
  for (auto [count, given] : {std::pair{&replicas, flags.replicas}, std::pair{&partitions, flags.partitions}}) {
    if (given == 0) continue;
    if (given < 0) throw Error(fmt::format("{} must be at least 1, not {}", count->flag, given));
    if (count->stated && count->value != given) {
      throw Error(fmt::format("{}: {} {}, but its HloModule line says {}={}", path, count->flag, given, count->attribute,
                              count->value));
    }
    module.SetIntAttribute(count->attribute, given);
    count->value = given;
    count->stated = true;
  }
  // Where nothing states a count: the fewest the groups name (global device ids: partitions first).
  const hlo::NamedDevices named = hlo::DevicesNamedByCollectives(module);
  int64_t need_replicas = named.replicas;
  int64_t need_partitions = named.partitions;
  const int64_t devices = std::max(replicas.value, need_replicas) * std::max(partitions.value, need_partitions);
  if (named.devices > devices) {
    if (!partitions.stated) {
      need_partitions = (named.devices + std::max(replicas.value, need_replicas) - 1) / std::max(replicas.value, need_replicas);
    } else {
      need_replicas = (named.devices + partitions.value - 1) / partitions.value;
    }
  }
  for (auto [count, need] : {std::pair{&replicas, need_replicas}, std::pair{&partitions, need_partitions}}) {
    if (count->stated || need <= count->value) continue;
    module.SetIntAttribute(count->attribute, need);
    spdlog::warn("{}: its collectives' groups name {} {} and its HloModule line gives no {}: taking {}={} ({} sets it)",
                 path, need, count->what, count->attribute, count->attribute, need, count->flag);
  }
}

}  // namespace

void AddDeviceCountOptions(CLI::App* command, DeviceCountFlags& flags) {
  command->add_option("--num-replicas", flags.replicas,
                      "Replicas of an SPMD module whose HloModule line gives no replica_count (XLA's --num_replicas)");
  command->add_option("--num-partitions", flags.partitions,
                      "Partitions of an SPMD module whose HloModule line gives no num_partitions (XLA's "
                      "--num_partitions)");
}

std::unique_ptr<hlo::Module> LoadModule(const std::string& path, bool verify, const DeviceCountFlags& devices) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  std::stringstream text;
  text << in.rdbuf();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<hlo::Module> module = hlo::ParseModule(text.str(), path);
  spdlog::info("parsed {} in {:.3f} s", path, SecondsSince(start));
  SetDeviceCounts(*module, devices, path);
  if (verify) {
    start = std::chrono::steady_clock::now();
    hlo::Verify(*module);
    spdlog::info("verified {} in {:.3f} s", path, SecondsSince(start));
  }
  return module;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error(path + ": cannot write");
}

}  // namespace tpusim::sim
