#include "sim/trace/trace_session.h"

#include "isa/error.h"
#include "traces/trace_file.h"

namespace tpusim::sim {
namespace {

traces::TraceFormat FormatOf(const TraceOptions& options) {
  std::optional<traces::TraceFormat> format;
  if (!options.format.empty()) {
    format = traces::ParseTraceFormat(options.format);
    if (!format) throw Error("--trace-format " + options.format + ": expected perfetto or json");
  }
  return traces::TraceFormatFor(options.path, format);
}

TraceLevel LevelOf(const TraceOptions& options) {
  const std::optional<TraceLevel> level = ParseTraceLevel(options.level);
  if (!level) throw Error("--trace-level " + options.level + ": expected ops, units or all");
  return *level;
}

}  // namespace

void AddTraceOptions(CLI::App* command, TraceOptions& options) {
  command->add_option("--trace", options.path,
                      "Write a trace of the run here (.perfetto-trace, .pftrace or .json; .gz compresses)");
  command->add_option("--trace-format", options.format, "perfetto or json (default: from the --trace file name)");
  command->add_option("--trace-level", options.level,
                      "ops: XLA lines and counters; units: plus unit slices merged per kernel; all: every "
                      "instruction and transfer")
      ->capture_default_str();
}

void CheckTraceOptions(const TraceOptions& options) {
  LevelOf(options);
  if (options.path.empty()) {
    if (!options.format.empty()) throw Error("--trace-format needs --trace FILE");
    return;
  }
  FormatOf(options);
}

TraceSession::TraceSession(const TraceOptions& options, Chip& chip, const isa::Program& program) : chip_(chip) {
  const ArchConfig& config = chip.config();
  TraceRecorderSetup setup;
  setup.process_name = "/device:TPU:0 (" + config.name() + ")";
  setup.clock_mhz = config.tensor_core().clock_mhz();
  setup.mxu_count = chip.params().mxu_count;
  setup.dma_engine_names = chip.dma_engine_names();
  setup.level = LevelOf(options);
  sink_ = traces::OpenTraceFile(options.path, FormatOf(options));
  recorder_ = std::make_unique<TraceRecorder>(*sink_, setup, program);
  chip_.set_observer(recorder_.get());
}

TraceSession::~TraceSession() { chip_.set_observer(nullptr); }

void TraceSession::Finish(const RunReport& run, const std::vector<XlaSlice>& modules,
                          const std::vector<XlaSlice>& ops) {
  chip_.set_observer(nullptr);
  recorder_->Finish(run.cycles, modules, ops);
}

}  // namespace tpusim::sim
