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
  sink_ = traces::OpenTraceFile(options.path, FormatOf(options));
  for (uint32_t core = 0; core < chip.core_count(); ++core) {
    TraceRecorderSetup setup;
    setup.process_name = chip.core_count() == 1
                             ? "/device:TPU:0 (" + config.name() + ")"
                             : "/device:TPU:0 TensorCore " + std::to_string(core) + " (" + config.name() + ")";
    setup.core = core;
    setup.core_count = chip.core_count();
    setup.clock_mhz = config.tensor_core().clock_mhz();
    setup.mxu_count = chip.params().mxu_count;
    setup.dma_engine_names = chip.dma_engine_names(core);
    setup.level = LevelOf(options);
    recorders_.push_back(std::make_unique<TraceRecorder>(*sink_, setup, program));
    chip_.set_observer(core, recorders_.back().get());
  }
}

TraceSession::~TraceSession() { chip_.clear_observers(); }

void TraceSession::Finish(const RunReport& run, const std::vector<XlaSlice>& modules,
                          const std::vector<XlaSlice>& ops) {
  chip_.clear_observers();
  // Core 0's recorder finishes the sink: the others first.
  for (std::size_t core = recorders_.size(); core-- > 1;) recorders_[core]->Finish(run.cycles, {}, {});
  recorders_[0]->Finish(run.cycles, modules, ops);
}

}  // namespace tpusim::sim
