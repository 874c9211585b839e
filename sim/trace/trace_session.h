// The command line's tracing (--trace, --trace-format, --trace-level), shared by `tpusim run`
// and `tpusim exec`: opens the file, attaches a TraceRecorder to the chip for one run, and
// finishes the trace afterwards.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "isa/program.pb.h"
#include "sim/chip/chip.h"
#include "sim/trace/trace_recorder.h"
#include "traces/trace_sink.h"

namespace tpusim::sim {

struct TraceOptions {
  std::string path;     // empty: no trace
  std::string format;   // "", "perfetto" or "json"
  std::string level = "units";
};

void AddTraceOptions(CLI::App* command, TraceOptions& options);
// Throws tpusim::Error for an unknown format or level or a file name whose format is unknown,
// before any work is done.
void CheckTraceOptions(const TraceOptions& options);

class TraceSession {
 public:
  // Opens options.path and attaches a recorder to each TensorCore of `chip` for the run of `program`.
  TraceSession(const TraceOptions& options, Chip& chip, const isa::Program& program);
  ~TraceSession();  // detaches the recorder
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  // After the run: writes the XLA lines and closes the file.
  void Finish(const RunReport& run, const std::vector<XlaSlice>& modules, const std::vector<XlaSlice>& ops);

 private:
  Chip& chip_;
  std::unique_ptr<traces::TraceSink> sink_;
  std::vector<std::unique_ptr<TraceRecorder>> recorders_;  // per TensorCore
};

}  // namespace tpusim::sim
