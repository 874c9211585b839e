// The self-check on hand-built traces that break one importer rule each.
#include <catch2/catch.hpp>

#include <fstream>

#include "isa/error.h"
#include "tests/traces/sample_trace.h"
#include "traces/perfetto/trace.pb.h"
#include "traces/trace_check.h"

namespace tpusim::traces_test {
namespace {

using perfetto::protos::Trace;
using perfetto::protos::TracePacket;
using perfetto::protos::TrackEvent;

// A trace with a process (uuid 1), a slice track (2) and a counter track (3).
Trace DeclaredTracks() {
  Trace trace;
  auto* process = trace.add_packet()->mutable_track_descriptor();
  process->set_uuid(1);
  process->mutable_process()->set_pid(1);
  process->mutable_process()->set_process_name("p");
  auto* slices = trace.add_packet()->mutable_track_descriptor();
  slices->set_uuid(2);
  slices->set_parent_uuid(1);
  slices->set_name("slices");
  auto* counter = trace.add_packet()->mutable_track_descriptor();
  counter->set_uuid(3);
  counter->set_parent_uuid(1);
  counter->set_name("counter");
  counter->mutable_counter();
  return trace;
}

TrackEvent& AddEvent(Trace& trace, uint64_t time_ns, uint64_t track, TrackEvent::Type type) {
  TracePacket& packet = *trace.add_packet();
  packet.set_timestamp(time_ns);
  packet.set_trusted_packet_sequence_id(1);
  TrackEvent& event = *packet.mutable_track_event();
  event.set_track_uuid(track);
  event.set_type(type);
  return event;
}

std::vector<std::string> Problems(const Trace& trace, const std::string& name) {
  const std::string path = TempTracePath(name);
  std::ofstream(path, std::ios::binary) << trace.SerializeAsString();
  return traces::ReadAndCheckPerfettoTrace(path).problems;
}

// Exactly one problem, and it says `what` about packet `packet`.
void RequireOneProblem(const std::vector<std::string>& problems, uint64_t packet,
                       const std::string& what) {
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Matchers::StartsWith("packet " + std::to_string(packet) + ": "));
  CHECK_THAT(problems[0], Catch::Matchers::Contains(what));
}

TEST_CASE("Trace check: a well-formed hand-built trace has no problems", "[traces]") {
  Trace trace = DeclaredTracks();
  AddEvent(trace, 5, 2, TrackEvent::TYPE_SLICE_BEGIN).set_name("a");
  AddEvent(trace, 7, 2, TrackEvent::TYPE_SLICE_END);
  AddEvent(trace, 5, 3, TrackEvent::TYPE_COUNTER).set_double_counter_value(2);
  const std::string path = TempTracePath("good.pftrace");
  std::ofstream(path, std::ios::binary) << trace.SerializeAsString();
  const traces::ParsedTrace parsed = traces::ReadAndCheckPerfettoTrace(path);
  CHECK(parsed.problems.empty());
  CHECK(parsed.packets == 6);
  REQUIRE(parsed.slices.size() == 1);
  CHECK(parsed.slices[0].end_ns == 7);
}

TEST_CASE("Trace check: each broken rule is named with its packet", "[traces]") {
  SECTION("a TrackEvent packet without trusted_packet_sequence_id") {
    Trace trace = DeclaredTracks();
    AddEvent(trace, 5, 2, TrackEvent::TYPE_SLICE_BEGIN);
    AddEvent(trace, 6, 2, TrackEvent::TYPE_SLICE_END);
    trace.mutable_packet(3)->clear_trusted_packet_sequence_id();
    const auto problems = Problems(trace, "no_sequence.pftrace");
    // Perfetto drops the BEGIN, so the END then has nothing to close.
    REQUIRE(problems.size() == 2);
    CHECK_THAT(problems[0], Catch::Matchers::Contains(
                                "packet 3: TrackEvent without trusted_packet_sequence_id"));
    CHECK_THAT(problems[1], Catch::Matchers::Contains("packet 4: SLICE_END on track 2"));
  }
  SECTION("an END without a BEGIN") {
    Trace trace = DeclaredTracks();
    AddEvent(trace, 5, 2, TrackEvent::TYPE_SLICE_END);
    RequireOneProblem(Problems(trace, "end.pftrace"), 3, "SLICE_END on track 2 with no open slice");
  }
  SECTION("an END sorted before its BEGIN (earlier timestamp, later in the file)") {
    Trace trace = DeclaredTracks();
    AddEvent(trace, 5, 2, TrackEvent::TYPE_SLICE_BEGIN);
    AddEvent(trace, 4, 2, TrackEvent::TYPE_SLICE_END);
    const auto problems = Problems(trace, "negative.pftrace");
    REQUIRE(problems.size() == 2);
    CHECK_THAT(problems[0], Catch::Matchers::Contains("packet 4: SLICE_END on track 2"));
    CHECK_THAT(problems[1], Catch::Matchers::Contains("packet 3: slice '' on track 2 never ends"));
  }
  SECTION("an event on an undeclared track") {
    Trace trace = DeclaredTracks();
    AddEvent(trace, 5, 9, TrackEvent::TYPE_INSTANT);
    RequireOneProblem(Problems(trace, "undeclared.pftrace"), 3, "event on undeclared track 9");
  }
  SECTION("a counter value on a slice track") {
    Trace trace = DeclaredTracks();
    AddEvent(trace, 5, 2, TrackEvent::TYPE_COUNTER).set_double_counter_value(1);
    RequireOneProblem(Problems(trace, "counter.pftrace"), 3,
                      "counter value on track 2, which is not a counter track");
  }
  SECTION("a slice on a counter track") {
    Trace trace = DeclaredTracks();
    AddEvent(trace, 5, 3, TrackEvent::TYPE_INSTANT).set_name("x");
    RequireOneProblem(Problems(trace, "slice_on_counter.pftrace"), 3,
                      "slice 'x' on counter track 3");
  }
  SECTION("a terminating flow that was never started") {
    Trace trace = DeclaredTracks();
    AddEvent(trace, 5, 2, TrackEvent::TYPE_INSTANT).add_terminating_flow_ids(77);
    RequireOneProblem(Problems(trace, "flow.pftrace"), 3,
                      "terminating flow id 77 was not started by an earlier-or-equal slice");
  }
  SECTION("a terminating flow whose start sorts after it") {
    Trace trace = DeclaredTracks();
    AddEvent(trace, 6, 2, TrackEvent::TYPE_INSTANT).add_flow_ids(8);
    AddEvent(trace, 5, 2, TrackEvent::TYPE_INSTANT).add_terminating_flow_ids(8);
    RequireOneProblem(Problems(trace, "flow_late.pftrace"), 4, "terminating flow id 8");
  }
  SECTION("an unknown field, however deep") {
    Trace trace = DeclaredTracks();
    TrackEvent& event = AddEvent(trace, 5, 2, TrackEvent::TYPE_INSTANT);
    event.add_debug_annotations()->mutable_unknown_fields()->AddVarint(999, 1);
    RequireOneProblem(Problems(trace, "unknown.pftrace"), 3,
                      "TracePacket.track_event.debug_annotations[0]: unknown field 999");
  }
  SECTION("a track whose parent is not declared") {
    Trace trace = DeclaredTracks();
    trace.mutable_packet(2)->mutable_track_descriptor()->set_parent_uuid(50);
    RequireOneProblem(Problems(trace, "parent.pftrace"), 2, "undeclared parent 50");
  }
  SECTION("a first byte other than 0x0A") {
    Trace trace = DeclaredTracks();
    std::string bytes = trace.SerializeAsString();
    bytes.insert(0, std::string("\x10\x01", 2));  // field 2, varint 1
    const std::string path = TempTracePath("first_byte_bad.pftrace");
    std::ofstream(path, std::ios::binary) << bytes;
    const auto problems = traces::ReadAndCheckPerfettoTrace(path).problems;
    REQUIRE(problems.size() == 2);
    CHECK_THAT(problems[0], Catch::Matchers::Contains("first byte is not 0x0A"));
    CHECK_THAT(problems[1], Catch::Matchers::Contains("Trace field 2 is not a packet"));
  }
}

TEST_CASE("Trace check: a file that is not a protobuf trace throws", "[traces]") {
  const std::string path = TempTracePath("text.pftrace");
  std::ofstream(path, std::ios::binary) << "\x0A\x7F" << "short";  // a packet longer than the file
  CHECK_THROWS_WITH(traces::ReadAndCheckPerfettoTrace(path),
                    Catch::Matchers::Contains("truncated packet 0"));
  CHECK_THROWS_WITH(traces::ReadAndCheckPerfettoTrace(TempTracePath("missing.pftrace")),
                    Catch::Matchers::Contains("cannot read trace file"));
}

}  // namespace
}  // namespace tpusim::traces_test
