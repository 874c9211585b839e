#include "sim/sweep/sweep_command.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "isa/error.h"
#include "sim/config/text_proto.h"
#include "sim/module_loading.h"
#include "sim/sweep/sweep_plan.h"
#include "sim/sweep/sweep_results.h"

extern char** environ;

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  std::string sweep_path;
  std::string out_dir;
  std::string shard = "0/1";
  int jobs = 1;
  bool quiet = false;
};

struct Shard {
  std::size_t index = 0;
  std::size_t count = 1;
};

Shard ParseShard(const std::string& text) {
  const std::size_t slash = text.find('/');
  Shard shard;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no '/'");
    std::size_t used = 0;
    shard.index = std::stoul(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    shard.count = std::stoul(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw std::invalid_argument("count");
  } catch (const std::exception&) {
    throw Error("--shard " + text + ": expected I/N, shard I of N (0 <= I < N)");
  }
  if (shard.count == 0 || shard.index >= shard.count) throw Error("--shard " + text + ": expected 0 <= I < N");
  return shard;
}

std::string SelfPath() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) throw Error("sweep: cannot find the tpusim binary (/proc/self/exe): " + error.message());
  return self.string();
}

// `tpusim run` of one point: its arguments.
std::vector<std::string> RunArguments(const std::string& self, const SweepPoint& point, const fs::path& report) {
  std::vector<std::string> args = {self, "run", point.hlo_path, "--timing-only", "--quiet", "--config",
                                   point.config_path, "--report", report.string()};
  for (const std::string& assignment : point.overrides) {
    args.push_back("--set");
    args.push_back(assignment);
  }
  if (point.devices.replicas != 0) args.insert(args.end(), {"--num-replicas", std::to_string(point.devices.replicas)});
  if (point.devices.partitions != 0) {
    args.insert(args.end(), {"--num-partitions", std::to_string(point.devices.partitions)});
  }
  if (point.device_id != 0) args.insert(args.end(), {"--device-id", std::to_string(point.device_id)});
  return args;
}

// Starts `args` with stdout and stderr into `log`; returns its pid.
pid_t Spawn(const std::vector<std::string>& args, const fs::path& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int failed = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (failed != 0) throw Error(fmt::format("sweep: cannot start {}: {}", args[0], std::strerror(failed)));
  return pid;
}

// Why a point's run failed: the last `tpusim: error:` line of its log, or how it ended.
std::string FailureOf(const fs::path& log, int status) {
  std::string last;
  std::error_code error;
  if (fs::exists(log, error)) {
    const std::string text = ReadTextFile(log.string());
    for (std::size_t at = text.find("tpusim: error: "); at != std::string::npos;
         at = text.find("tpusim: error: ", at + 1)) {
      const std::size_t end = text.find('\n', at);
      last = text.substr(at + 15, end == std::string::npos ? std::string::npos : end - at - 15);
    }
  }
  if (!last.empty()) return last;
  if (WIFSIGNALED(status)) return fmt::format("tpusim run ended by signal {} (log: {})", WTERMSIG(status), log.string());
  return fmt::format("tpusim run exited with status {} (log: {})", WEXITSTATUS(status), log.string());
}

void WriteText(const fs::path& path, const std::string& text) {
  const fs::path partial = path.string() + ".partial";
  WriteFile(partial.string(), text);
  fs::rename(partial, path);
}

void RunSweep(const SweepOptions& options) {
  const SweepPlan plan = LoadSweep(options.sweep_path);
  const Shard shard = ParseShard(options.shard);
  if (options.jobs < 1) throw Error("--jobs must be at least 1");
  const fs::path dir(options.out_dir);
  const fs::path points_dir = dir / "points";
  fs::create_directories(points_dir);
  std::string ids;
  for (const SweepPoint& point : plan.points) ids += point.id + "\n";
  WriteText(dir / "points.txt", ids);

  std::vector<const SweepPoint*> mine;
  for (const SweepPoint& point : plan.points) {
    if (point.index % shard.count == shard.index) mine.push_back(&point);
  }
  // Resumable: a point whose report exists ran before.
  std::vector<const SweepPoint*> pending;
  for (const SweepPoint* point : mine) {
    if (!fs::exists(points_dir / (point->id + ".json"))) pending.push_back(point);
  }
  if (!options.quiet) {
    fmt::print(stderr, "tpusim: sweep {}: {} points{}, {} to run ({} done before), {} at a time\n", plan.source,
               mine.size(),
               shard.count > 1 ? fmt::format(" in shard {}/{} of {}", shard.index, shard.count, plan.points.size()) : "",
               pending.size(), mine.size() - pending.size(), options.jobs);
  }

  const std::string self = SelfPath();
  std::map<std::string, PointResult> ran;  // by id: this run's points, each report read once
  std::size_t failures = 0;
  std::map<pid_t, const SweepPoint*> running;
  std::size_t next = 0, done = 0;
  const auto start = std::chrono::steady_clock::now();
  while (next < pending.size() || !running.empty()) {
    while (next < pending.size() && running.size() < static_cast<std::size_t>(options.jobs)) {
      const SweepPoint* point = pending[next++];
      const fs::path report = points_dir / (point->id + ".json.partial");
      running[Spawn(RunArguments(self, *point, report), points_dir / (point->id + ".log"))] = point;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) throw Error(std::string("sweep: waitpid: ") + std::strerror(errno));
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const SweepPoint& point = *it->second;
    running.erase(it);
    ++done;
    const fs::path partial = points_dir / (point.id + ".json.partial");
    PointResult result;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      fs::rename(partial, points_dir / (point.id + ".json"));
      result = ReadPointReport(point, (points_dir / (point.id + ".json")).string());
    } else {
      std::error_code ignored;
      fs::remove(partial, ignored);
      result.point = &point;
      result.error = FailureOf(points_dir / (point.id + ".log"), status);
      ++failures;
    }
    if (!options.quiet) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::size_t left = pending.size() - done;
      const std::string axes = DescribeAxes(plan, point);
      const std::string outcome =
          result.ok ? fmt::format("{:.3f} us on the device", result.device_time_us) : "failed: " + result.error;
      fmt::print(stderr, "tpusim: sweep: {} of {} run ({} failed): {} {} on {}{}{}: {}{}\n", done, pending.size(),
                 failures, point.id, point.workload, point.config, axes.empty() ? "" : ", ", axes, outcome,
                 left == 0 ? "" : fmt::format("; about {:.0f} s left", seconds / done * left));
    }
    ran.emplace(point.id, std::move(result));
  }

  // Points run before (their reports exist) are read now.
  std::vector<PointResult> results;
  for (const SweepPoint* point : mine) {
    const auto it = ran.find(point->id);
    results.push_back(it != ran.end() ? std::move(it->second)
                                      : ReadPointReport(*point, (points_dir / (point->id + ".json")).string()));
  }
  WriteText(dir / "results.csv", FormatCsv(ResultsTable(plan, results)));
  fmt::print("{}: {} points, {} failed\n", (dir / "results.csv").string(), results.size(), failures);
  if (failures > 0) {
    throw Error(fmt::format("{} of {} points failed; results.csv has their errors", failures, results.size()));
  }
}

struct MergeOptions {
  std::vector<std::string> dirs;
  std::string out_dir;
};

void RunMerge(const MergeOptions& options) {
  std::string ids_text;
  std::vector<CsvTable> shards;
  for (const std::string& dir : options.dirs) {
    const std::string ids = ReadTextFile((fs::path(dir) / "points.txt").string());
    if (ids_text.empty()) ids_text = ids;
    if (ids != ids_text) {
      throw Error(dir + "/points.txt: another sweep's points than " + options.dirs[0] + "/points.txt");
    }
    const std::string csv = (fs::path(dir) / "results.csv").string();
    shards.push_back(ParseCsv(ReadTextFile(csv), csv));
  }
  std::vector<std::string> ids;
  for (std::size_t at = 0; at < ids_text.size();) {
    const std::size_t end = ids_text.find('\n', at);
    ids.push_back(ids_text.substr(at, end - at));
    at = end == std::string::npos ? ids_text.size() : end + 1;
  }
  const CsvTable merged = MergeResults(shards, ids);
  fs::create_directories(options.out_dir);
  WriteText(fs::path(options.out_dir) / "points.txt", ids_text);
  WriteText(fs::path(options.out_dir) / "results.csv", FormatCsv(merged));
  fmt::print("{}: {} points from {} shards\n", (fs::path(options.out_dir) / "results.csv").string(), merged.rows.size(),
             shards.size());
}

}  // namespace

Command AddSweepCommand(CLI::App& app) {
  auto options = std::make_shared<SweepOptions>();
  CLI::App* command = app.add_subcommand(
      "sweep", "Run every point of a sweep (workloads x configs x axes of --set values) as a timing-only run, "
               "and write DIR/results.csv and DIR/points/<id>.json (docs/sweeps.md)");
  command->add_option("SWEEP", options->sweep_path, "Sweep file (.pbtxt, sim/config/sweep.proto)")->required();
  command->add_option("-o,--out", options->out_dir, "Directory for results.csv and the points' reports")->required();
  command->add_option("--shard", options->shard, "I/N: run only the points whose index mod N is I")->capture_default_str();
  command->add_option("--jobs", options->jobs, "Points run at once, each a process")->capture_default_str();
  command->add_flag("--quiet", options->quiet, "No progress lines on stderr");
  return {command, [options] { RunSweep(*options); }};
}

Command AddSweepMergeCommand(CLI::App& app) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* command =
      app.add_subcommand("sweep-merge", "Merge the results of a sweep's shards into one results.csv, refusing "
                                        "points found twice or not at all");
  command->add_option("DIR", options->dirs, "The shards' output directories")->required();
  command->add_option("-o,--out", options->out_dir, "Directory for the merged results.csv")->required();
  return {command, [options] { RunMerge(*options); }};
}

}  // namespace tpusim::sim
