// The Perfetto writer, read back with the self-check: exact ns times, nesting at equal times,
// annotations, flows, counters, gzip, and the ordering contract.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iterator>

#include "isa/error.h"
#include "tests/traces/sample_trace.h"
#include "traces/perfetto_writer.h"
#include "traces/trace_check.h"
#include "traces/trace_file.h"

namespace tpusim::traces_test {
namespace {

using traces::Annotation;
using traces::CounterUnit;
using traces::ParsedTrace;
using traces::PerfettoTraceWriter;
using traces::Slice;

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ParsedTrace WriteAndRead(const std::string& name, bool gzip) {
  const std::string path = TempTracePath(name);
  PerfettoTraceWriter writer(path, gzip);
  WriteSampleTrace(writer);
  writer.Finish();
  return traces::ReadAndCheckPerfettoTrace(path);
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST_CASE("Perfetto writer: the sample trace reads back with no problems and exact values",
          "[traces]") {
  const ParsedTrace trace = WriteAndRead("sample.perfetto-trace", false);
  INFO(Join(trace.problems));
  REQUIRE(trace.problems.empty());

  // 5 descriptors, 5 slices x (BEGIN + END), 3 counter samples.
  CHECK(trace.packets == 5 + 10 + 3);
  REQUIRE(trace.tracks.size() == 5);
  const traces::ParsedTrack* process = trace.FindTrack("TPU 0", 0);
  REQUIRE(process != nullptr);
  CHECK(process->is_process);
  const traces::ParsedTrack* group = trace.FindTrack("TensorCore 0", process->uuid);
  REQUIRE(group != nullptr);
  const traces::ParsedTrack* ops = trace.FindTrack("XLA Ops", group->uuid);
  REQUIRE(ops != nullptr);
  CHECK(ops->order == 1);
  CHECK_FALSE(ops->is_counter);
  const traces::ParsedTrack* hbm = trace.FindTrack("HBM read", group->uuid);
  REQUIRE(hbm != nullptr);
  CHECK(hbm->is_counter);
  CHECK(hbm->order == 3);

  // Ordered by (begin, file position); ns = ps / 1000 rounded to nearest.
  struct Want {
    const char* name;
    uint64_t begin_ns, end_ns;
    uint32_t depth;
  };
  const Want want[] = {{"copy", 0, 1, 0},   {"fusion.1", 1, 10, 0},  {"inner", 2, 10, 1},
                       {"marker", 10, 10, 2}, {"fusion.2", 10, 12, 0}};
  REQUIRE(trace.slices.size() == std::size(want));
  for (std::size_t i = 0; i < std::size(want); ++i) {
    INFO("slice " << i);
    CHECK(trace.slices[i].name == want[i].name);
    CHECK(trace.slices[i].begin_ns == want[i].begin_ns);
    CHECK(trace.slices[i].end_ns == want[i].end_ns);
    CHECK(trace.slices[i].depth == want[i].depth);
  }
  CHECK(trace.slices[0].flow_out == std::vector<uint64_t>{42});
  CHECK(trace.slices[1].flow_in == std::vector<uint64_t>{42});

  const std::vector<Annotation>& a = trace.slices[1].annotations;
  REQUIRE(a.size() == 5);
  CHECK(a[0].name == "hlo_op");
  CHECK(std::get<std::string>(a[0].value) == "fusion.1");
  CHECK(std::get<uint64_t>(a[1].value) == 1024);
  CHECK(std::get<int64_t>(a[2].value) == -3);
  CHECK(std::get<double>(a[3].value) == 0.5);
  CHECK(std::get<bool>(a[4].value) == true);

  REQUIRE(trace.counters.size() == 3);
  CHECK(trace.counters[1].time_ns == 1);
  CHECK(trace.counters[1].value == 12.5);
  CHECK(trace.counters[2].time_ns == 13);
  CHECK(trace.counters[2].track == hbm->uuid);
}

TEST_CASE("Perfetto writer: the file is a Trace whose first byte is 0x0A", "[traces]") {
  const std::string path = TempTracePath("first_byte.pftrace");
  PerfettoTraceWriter writer(path, false);
  WriteSampleTrace(writer);
  writer.Finish();
  const std::string bytes = FileBytes(path);
  REQUIRE_FALSE(bytes.empty());
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x0A);
}

TEST_CASE("Perfetto writer: gzip output starts with 1f 8b and reads back identically",
          "[traces]") {
  const ParsedTrace plain = WriteAndRead("same.perfetto-trace", false);
  const ParsedTrace gz = WriteAndRead("same.perfetto-trace.gz", true);
  const std::string bytes = FileBytes(TempTracePath("same.perfetto-trace.gz"));
  REQUIRE(bytes.size() > 2);
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(bytes[1]) == 0x8b);
  CHECK(gz.problems.empty());
  CHECK(gz.packets == plain.packets);
  REQUIRE(gz.slices.size() == plain.slices.size());
  for (std::size_t i = 0; i < gz.slices.size(); ++i) {
    CHECK(gz.slices[i].name == plain.slices[i].name);
    CHECK(gz.slices[i].begin_ns == plain.slices[i].begin_ns);
    CHECK(gz.slices[i].end_ns == plain.slices[i].end_ns);
  }
  CHECK(gz.counters.size() == plain.counters.size());
  CHECK(gz.tracks.size() == plain.tracks.size());
}

TEST_CASE("Perfetto writer: a slice beginning where its predecessor ends is its sibling",
          "[traces]") {
  const std::string path = TempTracePath("siblings.perfetto-trace");
  PerfettoTraceWriter writer(path, false);
  const auto p = writer.AddProcess("p", 1, 0);
  const auto t = writer.AddSliceTrack(p, "t", 0);
  writer.WriteSlice(Slice{t, "a", 0, 5000, "", {}, {}, {}});
  writer.WriteSlice(Slice{t, "b", 5000, 8000, "", {}, {}, {}});
  writer.WriteSlice(Slice{t, "z", 8000, 8000, "", {}, {}, {}});  // zero length inside b's end
  writer.WriteSlice(Slice{t, "c", 8400, 9000, "", {}, {}, {}});  // rounds to begin at 8 ns too
  writer.Finish();
  const ParsedTrace trace = traces::ReadAndCheckPerfettoTrace(path);
  REQUIRE(trace.problems.empty());
  REQUIRE(trace.slices.size() == 4);
  CHECK(trace.slices[1].name == "b");
  CHECK(trace.slices[1].depth == 0);
  CHECK(trace.slices[2].name == "z");
  CHECK(trace.slices[2].depth == 1);
  CHECK(trace.slices[3].name == "c");
  CHECK(trace.slices[3].begin_ns == 8);
  CHECK(trace.slices[3].depth == 0);
}

TEST_CASE("Perfetto writer: contract violations throw tpusim::Error", "[traces]") {
  const std::string path = TempTracePath("contract.perfetto-trace");
  PerfettoTraceWriter writer(path, false);
  const auto p = writer.AddProcess("p", 1, 0);
  const auto t = writer.AddSliceTrack(p, "t", 0);
  const auto c = writer.AddCounterTrack(p, "c", CounterUnit::kCount, "", 1);
  writer.WriteSlice(Slice{t, "parent", 1000, 9000, "", {}, {5}, {}});
  writer.WriteCounter(c, 2000, 1);

  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(writer.AddSliceTrack(99, "x", 0), Contains("undeclared parent track 99"));
  CHECK_THROWS_WITH(writer.AddSliceTrack(c, "x", 0), Contains("cannot have children"));
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{77, "s", 1000, 2000, "", {}, {}, {}}),
                    Contains("track 77 was not declared"));
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{c, "s", 1000, 2000, "", {}, {}, {}}),
                    Contains("this is a counter track"));
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{p, "s", 1000, 2000, "", {}, {}, {}}),
                    Contains("this is a process track"));
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{t, "s", 3000, 2000, "", {}, {}, {}}),
                    Contains("ends before it begins"));
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{t, "s", 500, 600, "", {}, {}, {}}),
                    Contains("slices on a track must come in order of begin time"));
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{t, "s", 8000, 9500, "", {}, {}, {}}),
                    Contains("overlaps slice 'parent'"));
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{t, "s", 2000, 3000, "", {}, {5}, {}}),
                    Contains("starts flow 5, which another slice started"));
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{t, "s", 2000, 3000, "", {}, {}, {6}}),
                    Contains("ends flow 6, which no earlier written slice started"));
  CHECK_THROWS_WITH(writer.WriteCounter(t, 3000, 1), Contains("not a counter track"));
  CHECK_THROWS_WITH(writer.WriteCounter(c, 1000, 1), Contains("earlier than the previous sample"));
  CHECK_THROWS_WITH(writer.WriteCounter(c, 3000, std::nan("")), Contains("not finite"));
  CHECK_THROWS_AS(writer.WriteCounter(99, 3000, 1), tpusim::Error);

  // A child written before its parent (same begin) is an overlap of the parent with the child.
  const auto u = writer.AddSliceTrack(p, "u", 1);
  writer.WriteSlice(Slice{u, "child", 1000, 2000, "", {}, {}, {}});
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{u, "late parent", 1000, 5000, "", {}, {}, {}}),
                    Contains("a parent must be written before its children"));
  // A flow may not end at a slice that begins before the flow's start.
  const auto v = writer.AddSliceTrack(p, "v", 2);
  CHECK_THROWS_WITH(writer.WriteSlice(Slice{v, "early", 500, 600, "", {}, {}, {5}}),
                    Contains("which starts later (1000 ps)"));
  writer.Finish();
  // What was accepted still makes a clean trace.
  CHECK(traces::ReadAndCheckPerfettoTrace(path).problems.empty());
}

TEST_CASE("Perfetto writer: memory stays flat over 2 million slices", "[traces]") {
  // /dev/null takes the bytes; what must not grow is the writer's own state: its output buffer
  // (fixed at ByteSink::kBufferBytes) and the open-slice stacks (one slice open at a time here).
  PerfettoTraceWriter writer("/dev/null", false);
  const auto p = writer.AddProcess("p", 1, 0);
  const auto t = writer.AddSliceTrack(p, "t", 0);
  const std::size_t capacity = writer.buffer_capacity();
  CHECK(capacity >= traces::ByteSink::kBufferBytes);
  std::size_t max_buffered = 0;
  for (uint64_t i = 0; i < 2'000'000; ++i) {
    writer.WriteSlice(Slice{t, "op", i * 2000, i * 2000 + 1500, "xla_op",
                            {Annotation{"cycles", i}}, {}, {}});
    max_buffered = std::max(max_buffered, writer.bytes_buffered());
    if (i % 100'000 == 0) {
      REQUIRE(writer.buffer_capacity() == capacity);
      REQUIRE(writer.registry().open_slices() == 1);
    }
  }
  CHECK(max_buffered < traces::ByteSink::kBufferBytes);
  CHECK(writer.registry().open_flows() == 0);
  writer.Finish();
}

TEST_CASE("Trace files: formats from names and flags", "[traces]") {
  using traces::TraceFormat;
  CHECK(traces::TraceFormatFromPath("a.perfetto-trace") == TraceFormat::kPerfetto);
  CHECK(traces::TraceFormatFromPath("dir/a.pftrace") == TraceFormat::kPerfetto);
  CHECK(traces::TraceFormatFromPath("a.perfetto-trace.gz") == TraceFormat::kPerfettoGz);
  CHECK(traces::TraceFormatFromPath("a.pftrace.gz") == TraceFormat::kPerfettoGz);
  CHECK(traces::TraceFormatFromPath("a.json") == TraceFormat::kJson);
  CHECK(traces::TraceFormatFromPath("a.json.gz") == TraceFormat::kJsonGz);
  CHECK_THROWS_WITH(traces::TraceFormatFromPath("run.trace"),
                    Catch::Matchers::Contains("run.trace: unknown extension"));
  CHECK_THROWS_AS(traces::TraceFormatFromPath("a.gz"), tpusim::Error);
  CHECK(traces::ParseTraceFormat("perfetto") == TraceFormat::kPerfetto);
  CHECK(traces::ParseTraceFormat("json") == TraceFormat::kJson);
  CHECK_FALSE(traces::ParseTraceFormat("JSON").has_value());
  CHECK(traces::TraceFormatFor("out.bin", TraceFormat::kPerfetto) == TraceFormat::kPerfetto);
  CHECK(traces::TraceFormatFor("out.bin.gz", TraceFormat::kJson) == TraceFormat::kJsonGz);
  CHECK(traces::TraceFormatFor("out.json", std::nullopt) == TraceFormat::kJson);
  CHECK_THROWS_WITH(traces::OpenTraceFile("/nonexistent-dir/t.json", TraceFormat::kJson),
                    Catch::Matchers::Contains("/nonexistent-dir/t.json"));
  auto sink = traces::OpenTraceFile(TempTracePath("opened.pftrace"), TraceFormat::kPerfetto);
  WriteSampleTrace(*sink);
  sink->Finish();
  CHECK(traces::ReadAndCheckPerfettoTrace(TempTracePath("opened.pftrace")).problems.empty());
}

}  // namespace
}  // namespace tpusim::traces_test
