// The project's Perfetto schema (traces/perfetto/*.proto) against the field numbers and types of
// upstream's protos as ../shared/REFERENCE.md section 3 lists them: a file we write must decode
// with the full upstream perfetto_trace.proto, so every field we own must have upstream's number
// and wire type (a wrong number would decode as an unknown or a different field there).
#include <catch2/catch.hpp>

#include <google/protobuf/descriptor.h>

#include <string>

#include "traces/perfetto/trace.pb.h"

namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;

struct Expected {
  const char* message;  // full name
  const char* field;
  int number;
  FieldDescriptor::Type type;
  bool repeated;
};

constexpr auto kU64 = FieldDescriptor::TYPE_UINT64;
constexpr auto kU32 = FieldDescriptor::TYPE_UINT32;
constexpr auto kI32 = FieldDescriptor::TYPE_INT32;
constexpr auto kI64 = FieldDescriptor::TYPE_INT64;
constexpr auto kStr = FieldDescriptor::TYPE_STRING;
constexpr auto kMsg = FieldDescriptor::TYPE_MESSAGE;
constexpr auto kEnum = FieldDescriptor::TYPE_ENUM;
constexpr auto kBool = FieldDescriptor::TYPE_BOOL;
constexpr auto kF64 = FieldDescriptor::TYPE_DOUBLE;
constexpr auto kFixed64 = FieldDescriptor::TYPE_FIXED64;

// REFERENCE.md section 3, row by row.
const Expected kReference[] = {
    {"perfetto.protos.Trace", "packet", 1, kMsg, true},
    {"perfetto.protos.TracePacket", "timestamp", 8, kU64, false},
    {"perfetto.protos.TracePacket", "timestamp_clock_id", 58, kU32, false},
    {"perfetto.protos.TracePacket", "clock_snapshot", 6, kMsg, false},
    {"perfetto.protos.TracePacket", "track_event", 11, kMsg, false},
    {"perfetto.protos.TracePacket", "track_descriptor", 60, kMsg, false},
    {"perfetto.protos.TracePacket", "trusted_packet_sequence_id", 10, kU32, false},
    {"perfetto.protos.TracePacket", "interned_data", 12, kMsg, false},
    {"perfetto.protos.TracePacket", "sequence_flags", 13, kU32, false},
    {"perfetto.protos.TracePacket", "trace_packet_defaults", 59, kMsg, false},
    {"perfetto.protos.TracePacket", "first_packet_on_sequence", 87, kBool, false},
    {"perfetto.protos.TracePacketDefaults", "timestamp_clock_id", 58, kU32, false},
    {"perfetto.protos.TracePacketDefaults", "track_event_defaults", 11, kMsg, false},
    {"perfetto.protos.TrackEventDefaults", "track_uuid", 11, kU64, false},
    {"perfetto.protos.TrackDescriptor", "uuid", 1, kU64, false},
    {"perfetto.protos.TrackDescriptor", "parent_uuid", 5, kU64, false},
    {"perfetto.protos.TrackDescriptor", "name", 2, kStr, false},
    {"perfetto.protos.TrackDescriptor", "static_name", 10, kStr, false},
    {"perfetto.protos.TrackDescriptor", "description", 14, kStr, false},
    {"perfetto.protos.TrackDescriptor", "process", 3, kMsg, false},
    {"perfetto.protos.TrackDescriptor", "thread", 4, kMsg, false},
    {"perfetto.protos.TrackDescriptor", "counter", 8, kMsg, false},
    {"perfetto.protos.TrackDescriptor", "child_ordering", 11, kEnum, false},
    {"perfetto.protos.TrackDescriptor", "sibling_order_rank", 12, kI32, false},
    {"perfetto.protos.TrackDescriptor", "sibling_merge_behavior", 15, kEnum, false},
    {"perfetto.protos.ProcessDescriptor", "pid", 1, kI32, false},
    {"perfetto.protos.ProcessDescriptor", "process_name", 6, kStr, false},
    {"perfetto.protos.ThreadDescriptor", "pid", 1, kI32, false},
    {"perfetto.protos.ThreadDescriptor", "tid", 2, kI64, false},
    {"perfetto.protos.ThreadDescriptor", "thread_name", 5, kStr, false},
    {"perfetto.protos.CounterDescriptor", "unit", 3, kEnum, false},
    {"perfetto.protos.CounterDescriptor", "unit_multiplier", 4, kI64, false},
    {"perfetto.protos.CounterDescriptor", "is_incremental", 5, kBool, false},
    {"perfetto.protos.CounterDescriptor", "unit_name", 6, kStr, false},
    {"perfetto.protos.CounterDescriptor", "y_axis_share_key", 7, kStr, false},
    {"perfetto.protos.TrackEvent", "category_iids", 3, kU64, true},
    {"perfetto.protos.TrackEvent", "categories", 22, kStr, true},
    {"perfetto.protos.TrackEvent", "name_iid", 10, kU64, false},
    {"perfetto.protos.TrackEvent", "name", 23, kStr, false},
    {"perfetto.protos.TrackEvent", "type", 9, kEnum, false},
    {"perfetto.protos.TrackEvent", "track_uuid", 11, kU64, false},
    {"perfetto.protos.TrackEvent", "counter_value", 30, kI64, false},
    {"perfetto.protos.TrackEvent", "double_counter_value", 44, kF64, false},
    {"perfetto.protos.TrackEvent", "flow_ids", 47, kFixed64, true},
    {"perfetto.protos.TrackEvent", "terminating_flow_ids", 48, kFixed64, true},
    {"perfetto.protos.TrackEvent", "debug_annotations", 4, kMsg, true},
    {"perfetto.protos.DebugAnnotation", "name_iid", 1, kU64, false},
    {"perfetto.protos.DebugAnnotation", "name", 10, kStr, false},
    {"perfetto.protos.DebugAnnotation", "bool_value", 2, kBool, false},
    {"perfetto.protos.DebugAnnotation", "uint_value", 3, kU64, false},
    {"perfetto.protos.DebugAnnotation", "int_value", 4, kI64, false},
    {"perfetto.protos.DebugAnnotation", "double_value", 5, kF64, false},
    {"perfetto.protos.DebugAnnotation", "string_value", 6, kStr, false},
    {"perfetto.protos.DebugAnnotation", "pointer_value", 7, kU64, false},
    {"perfetto.protos.DebugAnnotation", "dict_entries", 11, kMsg, true},
    {"perfetto.protos.DebugAnnotation", "array_values", 12, kMsg, true},
    {"perfetto.protos.InternedData", "event_categories", 1, kMsg, true},
    {"perfetto.protos.InternedData", "event_names", 2, kMsg, true},
    {"perfetto.protos.InternedData", "debug_annotation_names", 3, kMsg, true},
    {"perfetto.protos.ClockSnapshot", "clocks", 1, kMsg, true},
    {"perfetto.protos.ClockSnapshot", "primary_trace_clock", 2, kU32, false},
};

}  // namespace

TEST_CASE("the project's Perfetto schema has upstream's field numbers and types", "[traces]") {
  // Linking trace.pb.cc registers the whole schema (its imports included) in the generated pool.
  REQUIRE(perfetto::protos::Trace::descriptor() != nullptr);
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  for (const Expected& expected : kReference) {
    INFO(expected.message << "." << expected.field);
    const auto* message = pool->FindMessageTypeByName(expected.message);
    REQUIRE(message != nullptr);
    const FieldDescriptor* field = message->FindFieldByName(expected.field);
    REQUIRE(field != nullptr);
    CHECK(field->number() == expected.number);
    CHECK(field->type() == expected.type);
    CHECK(field->is_repeated() == expected.repeated);
  }
}
