// The SVG timeline: rows and boxes for a tiny trace, merging of sub-pixel slices, and the
// `tpusim trace-svg` command end to end.
#include <catch2/catch.hpp>

#include "isa/error.h"
#include "tests/sim/exec_support.h"
#include "tests/traces/sample_trace.h"
#include "traces/perfetto_writer.h"
#include "traces/trace_check.h"
#include "traces/trace_svg.h"

namespace tpusim::traces_test {
namespace {

using traces::Slice;

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

traces::ParsedTrace SampleParsed(const std::string& name) {
  const std::string path = TempTracePath(name);
  traces::PerfettoTraceWriter writer(path, false);
  WriteSampleTrace(writer);
  writer.Finish();
  return traces::ReadAndCheckPerfettoTrace(path);
}

TEST_CASE("Trace SVG: one labelled row per track and one box per slice", "[traces]") {
  const std::string svg = traces::RenderTraceSvg(SampleParsed("svg_sample.pftrace"));
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1400\"", 0) == 0);
  for (const char* label : {">TPU 0</text>", ">TensorCore 0</text>", ">XLA Ops</text>",
                            ">DMA 0</text>", ">HBM read</text>"}) {
    CHECK(Count(svg, label) == 1);
  }
  // 5 slices -> 5 boxes (the zero-length marker as a 1-pixel box with its own tooltip); the
  // background is the only other rect.
  CHECK(Count(svg, "<rect x=") == 5);
  CHECK(Count(svg, "<title>marker (0.010 us + 0.000 us)</title>") == 1);
  CHECK(Count(svg, "<title>fusion.1 (0.001 us + 0.009 us)\nhlo_op: fusion.1\nflops: 1024") == 1);
  CHECK(Count(svg, "<polyline") == 1);  // the one counter track
  CHECK(Count(svg, "<title>flow 42</title>") == 1);
  // Rows follow the tree: the process header, then the group, then its children by order.
  CHECK(svg.find(">TPU 0<") < svg.find(">TensorCore 0<"));
  CHECK(svg.find(">XLA Ops<") < svg.find(">DMA 0<"));
  CHECK(svg.find(">DMA 0<") < svg.find(">HBM read<"));
}

TEST_CASE("Trace SVG: slices narrower than a pixel are merged per row", "[traces]") {
  const std::string path = TempTracePath("svg_many.pftrace");
  traces::PerfettoTraceWriter writer(path, false);
  const auto p = writer.AddProcess("p", 1, 0);
  const auto narrow = writer.AddSliceTrack(p, "narrow", 0);
  const auto wide = writer.AddSliceTrack(p, "wide", 1);
  // 1000 slices of 1 ns, 2 ns apart, in the first 2 us of a 1 ms window: 1140 px for 1 ms puts
  // them all within ~2.3 px, each 0.001 px wide with gaps far below a pixel.
  for (uint64_t i = 0; i < 1000; ++i) {
    writer.WriteSlice(Slice{narrow, "n", i * 2000, i * 2000 + 1000, "", {}, {}, {}});
  }
  writer.WriteSlice(Slice{wide, "w", 0, 1'000'000'000, "", {}, {}, {}});
  writer.Finish();
  const traces::ParsedTrace trace = traces::ReadAndCheckPerfettoTrace(path);
  REQUIRE(trace.problems.empty());
  const std::string svg = traces::RenderTraceSvg(trace);
  CHECK(Count(svg, "<rect x=") == 2);
  CHECK(Count(svg, "<title>1000 slices</title>") == 1);
}

TEST_CASE("Trace SVG: bad options are errors", "[traces]") {
  const traces::ParsedTrace trace = SampleParsed("svg_options.pftrace");
  CHECK_THROWS_WITH(traces::RenderTraceSvg(trace, traces::SvgOptions{100, {}, {}}),
                    Catch::Matchers::Contains("width 100 px is too small"));
  CHECK_THROWS_WITH(traces::RenderTraceSvg(trace, traces::SvgOptions{800, 5000, 1000}),
                    Catch::Matchers::Contains("empty time window"));
  // A window shows only what lies in it: fusion.2 (10..12 ns) is outside 0..5 ns.
  const std::string svg = traces::RenderTraceSvg(trace, traces::SvgOptions{800, 0, 5});
  CHECK(Count(svg, "fusion.2") == 0);
  CHECK(Count(svg, "<title>fusion.1 (") == 1);
}

TEST_CASE("tpusim trace-svg renders a trace file", "[traces]") {
  const std::string trace = TempTracePath("cli.perfetto-trace.gz");
  {
    traces::PerfettoTraceWriter writer(trace, true);
    WriteSampleTrace(writer);
    writer.Finish();
  }
  const std::string svg = TempTracePath("cli.svg");
  const std::string ok = exec_test::RunOk("trace-svg " + trace + " -o " + svg + " --width 900");
  CHECK_THAT(ok, Catch::Matchers::Contains(
                            "5 tracks, 5 slices, 3 counter samples, 0 problems -> " + svg));
  CHECK(Count(exec_test::ReadText(svg), "<rect x=") == 5);

  CHECK_THAT(exec_test::RunExpectingError("trace-svg " + trace + " -o " + svg + " --from-us 0.005 --to-us 0.001"),
             Catch::Matchers::Contains("empty time window"));
  CHECK_THAT(exec_test::RunExpectingError("trace-svg " + TempTracePath("none.pftrace") + " -o " + svg),
             Catch::Matchers::Contains("cannot read trace file"));
}

}  // namespace
}  // namespace tpusim::traces_test
