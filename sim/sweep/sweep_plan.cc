#include "sim/sweep/sweep_plan.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "isa/error.h"
#include "sim/config/load.h"
#include "sim/config/presets.h"
#include "sim/config/sweep.pb.h"
#include "sim/config/text_proto.h"

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;
using google::protobuf::TextFormat;

// The most points one axis may have: a range that large is a typo.
constexpr std::size_t kMaxAxisValues = 10000;

// Errors at a field of the sweep file, with its line and column.
struct Where {
  std::string_view text;
  const std::string& source;
  TextFormat::ParseInfoTree* tree;

  Error At(const google::protobuf::Message& message, std::string_view field, int index, const std::string& what) const {
    return Error(ErrorAtField(text, source, *tree, message, field, index, what));
  }
  // The tree of a nested message written at `field`[index].
  Where In(const google::protobuf::Message& message, std::string_view field, int index) const {
    const auto* descriptor = message.GetDescriptor()->FindFieldByName(std::string(field));
    return {text, source, tree->GetTreeForNested(descriptor, descriptor->is_repeated() ? index : -1)};
  }
};

std::string Resolve(const fs::path& base, const std::string& path) {
  const fs::path p(path);
  return p.is_absolute() ? p.string() : (base / p).lexically_normal().string();
}

std::string Number(double value) { return fmt::format("{}", value); }

std::vector<std::string> AxisValues(const SweepAxis& axis, const Where& where, const Sweep& sweep, int index) {
  const bool has_range = axis.has_range();
  if (axis.path().empty()) throw where.At(sweep, "axes", index, "an axis needs a `path` (a --set path)");
  if (axis.values().empty() == !has_range) {
    throw where.At(sweep, "axes", index, "axis '" + axis.path() + "' needs either `values` or a `range`, not " +
                                             (has_range ? "both" : "neither"));
  }
  if (!has_range) return {axis.values().begin(), axis.values().end()};
  const SweepRange& r = axis.range();
  const Where at = where.In(sweep, "axes", index);
  if ((r.step() > 0) == (r.factor() > 0)) {
    throw at.At(axis, "range", 0, "a range has a `step` > 0 or a `factor` > 1, one of them");
  }
  if (r.factor() > 0 && (r.factor() <= 1 || r.start() <= 0)) {
    throw at.At(axis, "range", 0, "a range with a `factor` needs factor > 1 and start > 0");
  }
  if (r.stop() < r.start()) throw at.At(axis, "range", 0, "a range's `stop` is below its `start`");
  std::vector<std::string> values;
  const double slack = r.step() > 0 ? r.step() * 1e-6 : r.start() * 1e-6;
  for (int i = 0;; ++i) {
    const double value = r.step() > 0 ? r.start() + i * r.step() : r.start() * std::pow(r.factor(), i);
    if (value > r.stop() + slack) break;
    if (values.size() == kMaxAxisValues) {
      throw at.At(axis, "range", 0, "a range of more than " + std::to_string(kMaxAxisValues) + " values");
    }
    values.push_back(Number(value));
  }
  return values;
}

// FNV-1a over the point's inputs: its id's second half.
std::string Hash(const std::vector<std::string>& parts) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const std::string& part : parts) {
    for (unsigned char c : part) h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL;  // separator: ("ab", "c") differs from ("a", "bc")
  }
  return fmt::format("{:08x}", static_cast<uint32_t>(h ^ (h >> 32)));
}

}  // namespace

SweepPlan LoadSweep(const std::string& path) {
  const std::string text = ReadTextFile(path);
  Sweep sweep;
  TextFormat::ParseInfoTree tree;
  ParseTextProto(text, path, sweep, tree);
  const Where where{text, path, &tree};
  const fs::path base = fs::path(path).parent_path();

  SweepPlan plan;
  plan.source = path;
  plan.name = sweep.name();
  if (sweep.workloads().empty()) throw Error(path + ": a sweep names at least one workload (`workloads { hlo: ... }`)");
  std::set<std::string> names;
  for (int i = 0; i < sweep.workloads_size(); ++i) {
    const SweepWorkload& w = sweep.workloads(i);
    if (w.hlo().empty()) throw where.At(sweep, "workloads", i, "a workload needs `hlo`: its HLO file");
    const std::string resolved = Resolve(base, w.hlo());
    if (!fs::is_regular_file(resolved)) throw where.At(sweep, "workloads", i, "no such HLO file: " + resolved);
    const std::string name = w.name().empty() ? fs::path(w.hlo()).stem().string() : w.name();
    if (!names.insert(name).second) throw where.At(sweep, "workloads", i, "a second workload named '" + name + "'");
  }
  std::vector<std::vector<std::string>> axis_values;
  for (int i = 0; i < sweep.axes_size(); ++i) {
    const SweepAxis& axis = sweep.axes(i);
    axis_values.push_back(AxisValues(axis, where, sweep, i));
    for (int j = 0; j < i; ++j) {
      if (sweep.axes(j).path() == axis.path()) throw where.At(sweep, "axes", i, "a second axis of '" + axis.path() + "'");
    }
    if (sweep.mode() == AXIS_MODE_ZIP && axis_values[i].size() != axis_values[0].size()) {
      throw where.At(sweep, "axes", i, fmt::format("zipped axes have one length: '{}' has {} values, '{}' {}", axis.path(),
                                                   axis_values[i].size(), sweep.axes(0).path(), axis_values[0].size()));
    }
    plan.axis_paths.push_back(axis.path());
  }

  // The axes' combinations: a grid (the first axis slowest), or the values zipped.
  std::vector<std::vector<std::string>> combinations;
  if (sweep.mode() == AXIS_MODE_ZIP) {
    const std::size_t n = axis_values.empty() ? 1 : axis_values[0].size();
    for (std::size_t k = 0; k < n; ++k) {
      std::vector<std::string> combination;
      for (const auto& values : axis_values) combination.push_back(values[k]);
      combinations.push_back(combination);
    }
  } else {
    combinations.push_back({});
    for (const auto& values : axis_values) {
      std::vector<std::vector<std::string>> next;
      for (const auto& prefix : combinations) {
        for (const std::string& value : values) {
          next.push_back(prefix);
          next.back().push_back(value);
        }
      }
      combinations = std::move(next);
    }
  }

  std::vector<std::string> configs(sweep.configs().begin(), sweep.configs().end());
  if (configs.empty()) configs.push_back(kDefaultPreset);
  for (int w = 0; w < sweep.workloads_size(); ++w) {
    const SweepWorkload& workload = sweep.workloads(w);
    for (int c = 0; c < static_cast<int>(configs.size()); ++c) {
      const std::string& config = configs[static_cast<std::size_t>(c)];
      const bool preset = config.find('/') == std::string::npos && config.find(".pbtxt") == std::string::npos;
      const std::string config_path = preset ? ResolveConfigPath(config) : Resolve(base, config);
      for (const auto& combination : combinations) {
        SweepPoint point;
        point.index = plan.points.size();
        point.workload = workload.name().empty() ? fs::path(workload.hlo()).stem().string() : workload.name();
        point.hlo_path = Resolve(base, workload.hlo());
        point.config = config;
        point.config_path = config_path;
        point.overrides.assign(sweep.set().begin(), sweep.set().end());
        point.overrides.insert(point.overrides.end(), workload.set().begin(), workload.set().end());
        for (std::size_t a = 0; a < combination.size(); ++a) point.overrides.push_back(plan.axis_paths[a] + "=" + combination[a]);
        point.axis_values = combination;
        point.devices = {workload.num_replicas(), workload.num_partitions()};
        point.device_id = workload.device_id();
        std::vector<std::string> parts = {point.workload, workload.hlo(), config};
        parts.insert(parts.end(), point.overrides.begin(), point.overrides.end());
        parts.push_back(fmt::format("{} {} {}", point.devices.replicas, point.devices.partitions, point.device_id));
        point.id = fmt::format("{:04}-{}", point.index, Hash(parts));
        plan.points.push_back(std::move(point));
      }
    }
  }

  // Every point's configuration loads: a path the config does not have, or a value it refuses,
  // stops the sweep here. An axis's path is tried on its own first, to name the axis.
  for (int i = 0; i < sweep.axes_size(); ++i) {
    try {
      LoadArchConfig(plan.points[0].config_path, {plan.axis_paths[static_cast<std::size_t>(i)] + "=" + axis_values[i][0]});
    } catch (const Error& e) {
      throw where.At(sweep, "axes", i, std::string("axis '") + sweep.axes(i).path() + "': " + e.what());
    }
  }
  for (const SweepPoint& point : plan.points) {
    try {
      LoadArchConfig(point.config_path, point.overrides);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: point {} ({} on {}{}{}): {}", path, point.id, point.workload, point.config,
                              point.axis_values.empty() ? "" : ", ", DescribeAxes(plan, point), e.what()));
    }
  }
  return plan;
}

std::string DescribeAxes(const SweepPlan& plan, const SweepPoint& point) {
  std::string out;
  for (std::size_t a = 0; a < point.axis_values.size(); ++a) {
    out += (a == 0 ? "" : ", ") + plan.axis_paths[a] + "=" + point.axis_values[a];
  }
  return out;
}

}  // namespace tpusim::sim
