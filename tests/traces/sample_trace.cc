#include "tests/traces/sample_trace.h"

#include <unistd.h>

#include <filesystem>

namespace tpusim::traces_test {

using traces::Annotation;
using traces::CounterUnit;
using traces::Slice;

SampleTracks WriteSampleTrace(traces::TraceSink& sink) {
  SampleTracks t{};
  t.process = sink.AddProcess("TPU 0", 7, 0);
  t.group = sink.AddSliceTrack(t.process, "TensorCore 0", 0);
  t.ops = sink.AddSliceTrack(t.group, "XLA Ops", 1);
  t.dma = sink.AddSliceTrack(t.group, "DMA 0", 2);
  t.hbm = sink.AddCounterTrack(t.group, "HBM read", CounterUnit::kRate, "GB/s", 3);

  Slice dma{t.dma, "copy", 0, 1000, "dma", {}, {42}, {}};
  sink.WriteSlice(dma);
  Slice op{t.ops, "fusion.1", 1000, 10000, "xla_op", {}, {}, {42}};
  op.annotations = {Annotation{"hlo_op", std::string("fusion.1")},
                    Annotation{"flops", uint64_t{1024}}, Annotation{"delta", int64_t{-3}},
                    Annotation{"ratio", 0.5}, Annotation{"fused", true}};
  sink.WriteSlice(op);
  sink.WriteSlice(Slice{t.ops, "inner", 2000, 10000, "", {}, {}, {}});   // same end as fusion.1
  sink.WriteSlice(Slice{t.ops, "marker", 10000, 10000, "", {}, {}, {}});  // zero length, at the end
  sink.WriteSlice(Slice{t.ops, "fusion.2", 10000, 12499, "xla_op", {}, {}, {}});  // 12.499 ns -> 12

  sink.WriteCounter(t.hbm, 0, 0.0);
  sink.WriteCounter(t.hbm, 1000, 12.5);
  sink.WriteCounter(t.hbm, 12500, 0.0);  // 12.5 ns -> 13 (half rounds up)
  return t;
}

namespace {

// A per-process directory, removed when the test binary exits.
struct TempRoot {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("tpusim_traces_test_" + std::to_string(getpid()));
  TempRoot() { std::filesystem::create_directories(path); }
  ~TempRoot() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

std::string TempTracePath(const std::string& name) {
  static const TempRoot root;
  return (root.path / name).string();
}

}  // namespace tpusim::traces_test
