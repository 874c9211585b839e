// The Chrome JSON writer: exact text of a tiny trace, exact microseconds, escaping, and a
// structural check of a bigger one.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include "tests/traces/sample_trace.h"
#include "traces/json_writer.h"

namespace tpusim::traces_test {
namespace {

using traces::Annotation;
using traces::ChromeJsonTraceWriter;
using traces::CounterUnit;
using traces::Slice;

std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A minimal JSON well-formedness check: brackets balance outside strings, strings end, and only
// the escapes JSON allows appear. (Enough to catch a writer that forgets a quote or an escape.)
bool LooksLikeJson(const std::string& text) {
  std::string stack;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        if (i + 1 >= text.size()) return false;
        const char e = text[++i];
        if (std::string("\"\\/bfnrtu").find(e) == std::string::npos) return false;
      } else if (c == '"') {
        in_string = false;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      stack.push_back(c);
    } else if (c == '}' || c == ']') {
      if (stack.empty() || stack.back() != (c == '}' ? '{' : '[')) return false;
      stack.pop_back();
    }
  }
  return !in_string && stack.empty();
}

TEST_CASE("JSON writer: microseconds are written exactly from whole nanoseconds", "[traces]") {
  auto micros = [](uint64_t ns) {
    std::string out;
    traces::AppendMicros(out, ns);
    return out;
  };
  CHECK(micros(1234567) == "1234.567");
  CHECK(micros(0) == "0.000");
  CHECK(micros(5) == "0.005");
  CHECK(micros(1000) == "1.000");
  CHECK(micros(18446744073709551615ull) == "18446744073709551.615");
}

TEST_CASE("JSON writer: strings are escaped", "[traces]") {
  std::string out;
  traces::AppendJsonString(out, std::string("a\"b\\c\nd\x01", 8) + "\xc3\xa9");
  CHECK(out == "\"a\\\"b\\\\c\\nd\\u0001\xc3\xa9\"");
}

TEST_CASE("JSON writer: the exact text of a tiny trace", "[traces]") {
  const std::string path = TempTracePath("tiny.json");
  ChromeJsonTraceWriter writer(path, false);
  const auto p = writer.AddProcess("P", 1, 0);
  const auto t = writer.AddSliceTrack(p, "T", 0);
  const auto c = writer.AddCounterTrack(p, "C", CounterUnit::kCount, "", 1);
  // 1234567000 ps = 1234.567 us; the end 1234568500 ps rounds to 1234569 ns: dur 2 ns.
  writer.WriteSlice(Slice{t, "a\"b", 1234567000, 1234568500, "", {Annotation{"n", uint64_t{3}}},
                          {}, {}});
  writer.WriteCounter(c, 1000, 2.5);
  writer.Finish();
  CHECK(FileText(path) ==
        "{\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"name\":\"a\\\"b\",\"cat\":\"\",\"pid\":1,\"tid\":2,\"ts\":1234.567,"
        "\"dur\":0.002,\"args\":{\"n\":3}},\n"
        "{\"ph\":\"C\",\"name\":\"C\",\"pid\":1,\"ts\":0.001,\"args\":{\"value\":2.5}},\n"
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"P\"}},\n"
        "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,\"args\":{\"sort_index\":0}},\n"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"T\"}},\n"
        "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":2,\"args\":{\"sort_index\":0}}\n"
        "],\"displayTimeUnit\":\"ns\"}\n");
}

TEST_CASE("JSON writer: the sample trace has flows, nested names and sort indexes", "[traces]") {
  const std::string path = TempTracePath("sample.json");
  ChromeJsonTraceWriter writer(path, false);
  const SampleTracks t = WriteSampleTrace(writer);
  writer.Finish();
  const std::string text = FileText(path);
  CHECK(LooksLikeJson(text));
  // The flow: `s` on the DMA slice's thread at its begin, `f` bound to the consuming op.
  CHECK_THAT(text, Catch::Matchers::Contains(
                       "{\"ph\":\"s\",\"name\":\"flow\",\"cat\":\"flow\",\"id\":42,\"pid\":7,\"tid\":" +
                       std::to_string(t.dma) + ",\"ts\":0.000}"));
  CHECK_THAT(text, Catch::Matchers::Contains(
                       "{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"flow\",\"cat\":\"flow\",\"id\":42,"
                       "\"pid\":7,\"tid\":" + std::to_string(t.ops) + ",\"ts\":0.001}"));
  // Tracks below a group are named by their path; the counter too.
  CHECK_THAT(text, Catch::Matchers::Contains("\"args\":{\"name\":\"TensorCore 0 / XLA Ops\"}"));
  CHECK_THAT(text, Catch::Matchers::Contains("{\"ph\":\"C\",\"name\":\"TensorCore 0 / HBM read\""));
  // Depth first by order: the group (0), then XLA Ops (1), then DMA 0 (2).
  CHECK_THAT(text, Catch::Matchers::Contains("\"tid\":" + std::to_string(t.dma) +
                                             ",\"args\":{\"sort_index\":2}}"));
  CHECK_THAT(text, Catch::Matchers::Contains(
                       "\"args\":{\"hlo_op\":\"fusion.1\",\"flops\":1024,\"delta\":-3,"
                       "\"ratio\":0.5,\"fused\":true}"));
}

TEST_CASE("JSON writer: gzip output starts with 1f 8b", "[traces]") {
  const std::string path = TempTracePath("sample.json.gz");
  ChromeJsonTraceWriter writer(path, true);
  WriteSampleTrace(writer);
  writer.Finish();
  const std::string bytes = FileText(path);
  REQUIRE(bytes.size() > 2);
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(bytes[1]) == 0x8b);
}

}  // namespace
}  // namespace tpusim::traces_test
