// Tests of ArchConfig loading: the presets and their published peaks, parse errors with their
// positions, --set overrides, validation rules, and the `tpusim config` command.
#include <catch2/catch.hpp>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/util/message_differencer.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "isa/error.h"
#include "sim/config/derived.h"
#include "sim/config/field_sources.h"
#include "sim/config/load.h"
#include "sim/config/override.h"
#include "sim/config/presets.h"
#include "sim/config/validate.h"
#include "sim/config_command.h"

namespace {

using tpusim::Error;
using tpusim::ArchConfig;
using tpusim::sim::LoadArchConfig;
using tpusim::sim::ParseArchConfig;

const std::string kConfigsDir = std::string(TPUSIM_SOURCE_DIR) + "/configs";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), {}};
}

const std::string& TinyText() {
  static const std::string text = ReadText(kConfigsDir + "/tiny.pbtxt");
  return text;
}

// `text` with the first occurrence of `from` replaced by `to` (which must exist).
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// "line:col" (1-based) of the first occurrence of `needle` in `text`, `skip` bytes into it.
std::string PositionOf(const std::string& text, const std::string& needle, std::size_t skip = 0) {
  std::size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  at += skip;
  const std::size_t line_start = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
  return std::to_string(line) + ":" + std::to_string(at - line_start + 1);
}

// The message of the Error that `load` throws (fails the test if it throws none).
std::string ErrorOf(const std::function<void()>& load) {
  try {
    load();
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("expected a tpusim::Error");
  return "";
}

// A scratch directory for this process, removed when the tests exit.
const std::filesystem::path& TempDir() {
  struct Dir {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("tpusim_config_test_" + std::to_string(getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}

std::string TempPath(const std::string& name) { return (TempDir() / name).string(); }

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Runs `body` with file descriptor `fd` (1 or 2) redirected to a file; returns what was written.
std::string Capture(int fd, const std::function<void()>& body) {
  std::fflush(nullptr);
  FILE* sink = std::tmpfile();
  REQUIRE(sink != nullptr);
  const int saved = dup(fd);
  dup2(fileno(sink), fd);
  try {
    body();
  } catch (...) {
    std::fflush(nullptr);
    dup2(saved, fd);
    close(saved);
    std::fclose(sink);
    throw;
  }
  std::fflush(nullptr);
  dup2(saved, fd);
  close(saved);
  std::rewind(sink);
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, sink)) out.append(buffer, n);
  std::fclose(sink);
  return out;
}

// Every leaf (non-message) field of `descriptor`, as dotted paths with their descriptors.
void LeafFields(const google::protobuf::Descriptor& descriptor, const std::string& prefix,
                std::vector<std::pair<std::string, const google::protobuf::FieldDescriptor*>>& out) {
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const auto* field = descriptor.field(i);
    const std::string path = prefix.empty() ? field->name() : prefix + "." + field->name();
    if (field->message_type() != nullptr) {
      LeafFields(*field->message_type(), path, out);
    } else {
      out.emplace_back(path, field);
    }
  }
}

}  // namespace

// Published figures are rounded to their last digit (139.8, 614.4, 197, 819, 918, 1638), so a
// preset matches when its derived peak is within half a unit of that digit (tpu_v4's chip, twice
// the profiler's per-core figures: a unit).
TEST_CASE("every preset loads, validates, and has its published peaks", "[config]") {
  const std::vector<std::string> presets = tpusim::sim::PresetNames();
  // A new preset fails this until its published peaks are checked below too.
  CHECK(presets == std::vector<std::string>{"tiny", "tpu_v4", "tpu_v5e", "tpu_v6e"});
  for (const std::string& preset : presets) {
    INFO(preset);
    const ArchConfig config = LoadArchConfig(kConfigsDir + "/" + preset + ".pbtxt");
    CHECK(config.name() == preset);
  }

  using namespace tpusim::sim;
  const ArchConfig v4 = LoadArchConfig(kConfigsDir + "/tpu_v4.pbtxt");
  // The whole chip: 2 TensorCores of the profiler's per-core peaks.
  CHECK(v4.tensor_core_count() == 2);
  CHECK(PeakFlopsPerSecond(v4) / 1e12 == Approx(2 * 139.8).margin(0.1));
  CHECK(HbmBytesPerSecond(v4) / 1e9 == Approx(2 * 614.4).margin(0.1));
  CHECK(VmemReadBytesPerSecondPerTensorCore(v4) / 1e9 == Approx(1074.8).margin(0.05));
  CHECK(VmemWriteBytesPerSecondPerTensorCore(v4) / 1e9 == Approx(2150.7).margin(0.05));
  CHECK(CmemReadBytesPerSecond(v4) / 1e9 == Approx(2 * 2150.7).margin(0.1));
  CHECK(CmemWriteBytesPerSecond(v4) / 1e9 == Approx(2 * 1074.8).margin(0.1));
  CHECK(v4.tensor_core().mxu().count() == 4);
  CHECK(v4.tensor_core().mxu().row_count() == 128);

  const ArchConfig v5e = LoadArchConfig(kConfigsDir + "/tpu_v5e.pbtxt");
  CHECK(PeakFlopsPerSecond(v5e) / 1e12 == Approx(197).margin(0.5));
  CHECK(HbmBytesPerSecond(v5e) / 1e9 == Approx(819).margin(0.5));
  CHECK(MibToBytes(v5e.tensor_core().vmem().capacity_mib()) == 128ull << 20);
  CHECK(MibToBytes(v5e.hbm().capacity_mib()) == 16ull << 30);
  CHECK_FALSE(v5e.has_cmem());
  CHECK(CmemReadBytesPerSecond(v5e) == 0);

  const ArchConfig v6e = LoadArchConfig(kConfigsDir + "/tpu_v6e.pbtxt");
  CHECK(PeakFlopsPerSecond(v6e) / 1e12 == Approx(918).margin(0.5));
  CHECK(HbmBytesPerSecond(v6e) / 1e9 == Approx(1638).margin(0.5));
  CHECK(v6e.tensor_core().mxu().row_count() == 256);
  CHECK(MibToBytes(v6e.hbm().capacity_mib()) == 32ull << 30);

  // The tiny chip is built on round numbers: 2 x 16 x 16 MACs at 1 GHz, 4 x 8 GB/s.
  const ArchConfig tiny = LoadArchConfig(kConfigsDir + "/tiny.pbtxt");
  CHECK(PeakFlopsPerSecond(tiny) == 512e9);
  CHECK(HbmBytesPerSecond(tiny) == 32e9);
  CHECK(VregBytes(tiny) == 4096);
  CHECK(BytesPerCycle(tiny.tensor_core().vmem().read_bandwidth_gbps(), tiny.tensor_core().clock_mhz()) == 256);

  // Every PCIe link is in the 16-32 GB/s per chip of shared/REFERENCE.md (tiny aside).
  for (const ArchConfig* config : {&v4, &v5e, &v6e}) {
    CHECK(PcieBytesPerSecond(*config) >= 15.7e9);
    CHECK(PcieBytesPerSecond(*config) <= 32e9);
  }
}

TEST_CASE("the default config and bare preset names resolve", "[config]") {
  using tpusim::sim::ResolveConfigPath;
  CHECK(tpusim::sim::ConfigsDirectory() == kConfigsDir);
  CHECK(ResolveConfigPath(tpusim::sim::kDefaultPreset) == kConfigsDir + "/tpu_v4.pbtxt");
  CHECK(ResolveConfigPath("tpu_v5e") == kConfigsDir + "/tpu_v5e.pbtxt");
  const std::string path = WriteTemp("mine.pbtxt", TinyText());
  CHECK(ResolveConfigPath(path) == path);
  CHECK(ErrorOf([] { ResolveConfigPath("tpu_v9"); }) ==
        "tpu_v9: no such file, and no preset of that name in " + kConfigsDir +
            " (presets: tiny, tpu_v4, tpu_v5e, tpu_v6e)");
  CHECK(ErrorOf([] { ResolveConfigPath("/nonexistent/x.pbtxt"); }) == "/nonexistent/x.pbtxt: no such file");
  CHECK(ErrorOf([] { LoadArchConfig("/nonexistent/x.pbtxt"); }) ==
        "/nonexistent/x.pbtxt: cannot open for reading");
}

TEST_CASE("parse errors name file:line:col and print nothing on stderr", "[config]") {
  const auto error_of_file = [](const std::string& text) {
    const std::string path = WriteTemp("bad.pbtxt", text);
    std::string message;
    const std::string stderr_text = Capture(2, [&] { message = ErrorOf([&] { LoadArchConfig(path); }); });
    CHECK(stderr_text.empty());  // protobuf's errors went to the collector, not its log
    const std::string prefix = path + ":";
    REQUIRE(message.substr(0, prefix.size()) == prefix);
    return message.substr(prefix.size());
  };
  // The first line of a parse error; the next two quote the line and put a caret under the column.
  const auto first_line = [&](const std::string& text) {
    const std::string message = error_of_file(text);
    return message.substr(0, message.find('\n'));
  };

  SECTION("unknown field, pointing at its name") {
    CHECK(error_of_file(Replace(TinyText(), "  clock_mhz: 1000", "  clokc_mhz: 1000")) ==
          PositionOf(TinyText(), "clock_mhz") +
              ": Message type \"tpusim.TensorCoreConfig\" has no field named \"clokc_mhz\".\n"
              "    clokc_mhz: 1000  # 1 cycle = 1 ns\n"
              "    ^");
    CHECK(first_line("name: \"x\"\nfoo: 1\n") ==
          "2:1: Message type \"tpusim.ArchConfig\" has no field named \"foo\".");
  }
  SECTION("wrong types") {
    CHECK(error_of_file("tensor_core_count: \"two\"\n") ==
          "1:20: Expected integer, got: \"two\"\n  tensor_core_count: \"two\"\n                     ^");
    CHECK(first_line("tensor_core_count: -1\n") == "1:20: Expected integer, got: -");
    CHECK(first_line("tensor_core_count: 1.5\n") == "1:20: Expected integer, got: 1.5");
    CHECK(first_line("tensor_core_count: 99999999999\n") == "1:20: Integer out of range (99999999999)");
    CHECK(first_line("name: 5\n") == "1:7: Expected string, got: 5");
    CHECK(first_line("cmem: 5\n") == "1:7: Expected \"{\", found \"5\".");
  }
  SECTION("syntax errors") {
    CHECK(first_line("hbm { capacity_mib: 5\n") == "2:1: Expected identifier, got: end of file");
    CHECK(first_line("hbm { capacity_mib: 5 } }\n") == "1:25: Expected identifier, got: }");
    CHECK(first_line("name: \"a\"\nname: \"b\"\n") == "2:1: Non-repeated field \"name\" is specified multiple times.");
  }
  SECTION("columns count bytes, tabs included") {
    CHECK(first_line("\t\tfoo: 1\n") == "1:3: Message type \"tpusim.ArchConfig\" has no field named \"foo\".");
  }
}

TEST_CASE("protobuf tokenizer positions convert to byte offsets", "[config]") {
  using tpusim::sim::TokenizerPositionToOffset;
  CHECK(TokenizerPositionToOffset("ab\ncd", 1, 1) == 4);
  CHECK(TokenizerPositionToOffset("\tx", 0, 8) == 1);      // a tab advances to column 8
  CHECK(TokenizerPositionToOffset("a\tx", 0, 8) == 2);
  CHECK(TokenizerPositionToOffset("ab\n", 5, 0) == 3);     // past the end: the end
}

TEST_CASE("overrides (--set) apply in order and name themselves in errors", "[config]") {
  const std::string path = kConfigsDir + "/tiny.pbtxt";
  const ArchConfig config = LoadArchConfig(
      path, {"tensor_core.mxu.count=2", "tensor_core.mxu.count=3", "hbm.channel_bandwidth_gbps=12.5",
             "name=my chip", "tensor_core.clock_mhz=1e3"});
  CHECK(config.tensor_core().mxu().count() == 3);  // the last one wins
  CHECK(config.hbm().channel_bandwidth_gbps() == 12.5);
  CHECK(config.name() == "my chip");  // strings verbatim, no quotes needed
  CHECK(config.tensor_core().clock_mhz() == 1000);

  const auto error_of = [&](const std::vector<std::string>& overrides) {
    std::string message;
    const std::string stderr_text = Capture(2, [&] { message = ErrorOf([&] { LoadArchConfig(path, overrides); }); });
    CHECK(stderr_text.empty());
    return message;
  };
  CHECK(error_of({"hbm.bandwith_gbps=1"}) ==
        "--set hbm.bandwith_gbps=1: hbm has no field \"bandwith_gbps\" (its fields: capacity_mib, "
        "channel_count, interleave_bytes, channel_bandwidth_gbps, access_latency_ns, fold_channel_stripes)");
  CHECK(error_of({"hmb.capacity_mib=1"}).substr(0, 59) ==
        "--set hmb.capacity_mib=1: ArchConfig has no field \"hmb\" (it");
  CHECK(error_of({"hbm.channel_bandwidth_gbps=abc"}) ==
        "--set hbm.channel_bandwidth_gbps=abc: \"abc\" is not a number (hbm.channel_bandwidth_gbps is a double)");
  CHECK(error_of({"hbm.channel_count=1.5"}) ==
        "--set hbm.channel_count=1.5: \"1.5\" is not a non-negative integer (hbm.channel_count is a uint32)");
  CHECK(error_of({"hbm.channel_count=-4"}) ==
        "--set hbm.channel_count=-4: \"-4\" is not a non-negative integer (hbm.channel_count is a uint32)");
  CHECK(error_of({"hbm.channel_count=4294967296"}) ==
        "--set hbm.channel_count=4294967296: \"4294967296\" is out of range for hbm.channel_count "
        "(hbm.channel_count is a uint32)");
  CHECK(error_of({"hbm.channel_count="}) ==
        "--set hbm.channel_count=: \"\" is not a non-negative integer (hbm.channel_count is a uint32)");
  CHECK(error_of({"hbm=4"}) ==
        "--set hbm=4: hbm is a message: set one of its fields (hbm.FIELD=VALUE; its fields: capacity_mib, "
        "channel_count, interleave_bytes, channel_bandwidth_gbps, access_latency_ns, fold_channel_stripes) or remove it with hbm=none");
  CHECK(error_of({"hbm.capacity_mib.x=4"}) == "--set hbm.capacity_mib.x=4: hbm.capacity_mib is a uint64, not a message");
  CHECK(error_of({"hbm.capacity_mib"}) == "--set hbm.capacity_mib: expected PATH=VALUE, e.g. --set hbm.channel_count=8");
  CHECK(error_of({"hbm..capacity_mib=1"}) == "--set hbm..capacity_mib=1: empty field name in \"hbm..capacity_mib\"");
  // The first bad override stops the load; earlier good ones do not hide it.
  CHECK(error_of({"tensor_core.mxu.count=2", "x=1"}).substr(0, 11) == "--set x=1: ");

  // A valid override to an invalid value: validation names the override.
  CHECK(error_of({"tensor_core.mxu.count=9"}) ==
        "--set tensor_core.mxu.count=9: tensor_core.mxu.count must be in [1, 8], got 9");
  CHECK(error_of({"tensor_core.clock_mhz=nan"}) ==
        "--set tensor_core.clock_mhz=nan: tensor_core.clock_mhz must be in [1, 1000000], got nan");
  // A later override of a field that an earlier one made invalid repairs it.
  CHECK(LoadArchConfig(path, {"tensor_core.mxu.count=9", "tensor_core.mxu.count=8"}).tensor_core().mxu().count() == 8);
}

TEST_CASE("overrides (--set) remove and create optional blocks", "[config]") {
  const ArchConfig without = LoadArchConfig(kConfigsDir + "/tpu_v4.pbtxt", {"cmem=none"});
  CHECK_FALSE(without.has_cmem());
  // Creating CMEM on v5e with one field: the others are missing, blamed on the override.
  const std::string message = ErrorOf([] { LoadArchConfig(kConfigsDir + "/tpu_v5e.pbtxt", {"cmem.capacity_mib=64"}); });
  CHECK(message ==
        "--set cmem.capacity_mib=64: cmem.read_bandwidth_gbps is missing\n"
        "--set cmem.capacity_mib=64: cmem.write_bandwidth_gbps is missing\n"
        "--set cmem.capacity_mib=64: cmem.access_latency_ns is missing");
  const ArchConfig with = LoadArchConfig(
      kConfigsDir + "/tpu_v5e.pbtxt", {"cmem.capacity_mib=64", "cmem.read_bandwidth_gbps=100",
                                       "cmem.write_bandwidth_gbps=50", "cmem.access_latency_ns=0"});
  CHECK(tpusim::sim::CmemWriteBytesPerSecond(with) == 50e9);
  // Removing a required block is a validation error at the override.
  CHECK(ErrorOf([] { LoadArchConfig(kConfigsDir + "/tiny.pbtxt", {"pcie=none"}); }) == "--set pcie=none: pcie is missing");
}

TEST_CASE("overrides (--set) handle enums, bools and lists on any message", "[config]") {
  // ArchConfig has no enum or repeated field; the override code is generic, so it is checked on
  // protobuf's own descriptor messages, which have them.
  using tpusim::sim::ApplyOverride;
  google::protobuf::FieldDescriptorProto field;
  CHECK(ApplyOverride(field, "type=TYPE_INT32") == "type");
  CHECK(field.type() == google::protobuf::FieldDescriptorProto::TYPE_INT32);
  CHECK(ApplyOverride(field, "options.packed=true") == "options.packed");
  CHECK(field.options().packed());
  CHECK(ApplyOverride(field, "number=-3") == "number");  // signed integers take a sign
  CHECK(field.number() == -3);
  CHECK(ErrorOf([&] { ApplyOverride(field, "type=INT32"); }).substr(0, 91) ==
        "--set type=INT32: \"INT32\" is not a value of google.protobuf.FieldDescriptorProto.Type (type");
  CHECK(ErrorOf([&] { ApplyOverride(field, "options.packed=yes"); }) ==
        "--set options.packed=yes: \"yes\" is not a bool (options.packed takes true or false)");

  google::protobuf::FileDescriptorProto file;
  file.add_dependency("old.proto");
  ApplyOverride(file, "dependency=a.proto,b.proto");
  CHECK(std::vector<std::string>(file.dependency().begin(), file.dependency().end()) ==
        std::vector<std::string>{"a.proto", "b.proto"});
  ApplyOverride(file, "public_dependency=1,0");
  CHECK(file.public_dependency_size() == 2);
  CHECK(file.public_dependency(0) == 1);
  ApplyOverride(file, "dependency=");
  CHECK(file.dependency_size() == 0);
  CHECK(ErrorOf([&] { ApplyOverride(file, "public_dependency=1,x"); }).find("\"x\" is not an integer") != std::string::npos);
  CHECK(ErrorOf([&] { ApplyOverride(file, "message_type=none"); }) ==
        "--set message_type=none: message_type is a list of messages; --set cannot change it (edit the file)");
  CHECK(ErrorOf([&] { ApplyOverride(file, "message_type.name=x"); }) ==
        "--set message_type.name=x: message_type is a list of messages; --set cannot reach into it (edit the file)");
}

TEST_CASE("validation names the line of each bad value", "[config]") {
  const std::string path = TempPath("invalid.pbtxt");
  // Loads tiny.pbtxt with `from` replaced by `to`; returns the error without the path prefix.
  const auto error_with = [&](const std::string& from, const std::string& to) {
    const std::string text = Replace(TinyText(), from, to);
    std::ofstream(path, std::ios::binary) << text;
    const std::string message = ErrorOf([&] { LoadArchConfig(path); });
    REQUIRE(message.substr(0, path.size()) == path);
    return message.substr(path.size());
  };
  const auto at = [](const std::string& needle) { return ":" + PositionOf(TinyText(), needle) + ": "; };
  CHECK(at("clock_mhz") == ":13:3: ");  // the helper itself, on a position read off the file

  CHECK(error_with("clock_mhz: 1000", "clock_mhz: 0") ==
        at("clock_mhz") + "tensor_core.clock_mhz must be in [1, 1000000], got 0");
  CHECK(error_with("clock_mhz: 1000", "clock_mhz: -5") ==
        at("clock_mhz") + "tensor_core.clock_mhz must be in [1, 1000000], got -5");
  CHECK(error_with("clock_mhz: 1000", "clock_mhz: inf") ==
        at("clock_mhz") + "tensor_core.clock_mhz must be in [1, 1000000], got inf");
  // ("\n    count:" is the MXU count, not tensor_core_count.)
  CHECK(error_with("\n    count: 1", "\n    count: 9") ==
        ":" + PositionOf(TinyText(), "\n    count: 1", 5) + ": tensor_core.mxu.count must be in [1, 8], got 9");
  CHECK(error_with("\n    count: 1", "\n    count: 0") ==
        ":" + PositionOf(TinyText(), "\n    count: 1", 5) + ": tensor_core.mxu.count must be in [1, 8], got 0");
  CHECK(error_with("row_count: 16", "row_count: 0") == at("row_count") + "tensor_core.mxu.row_count must be in [1, 4096], got 0");
  CHECK(error_with("column_count: 16", "column_count: 0") ==
        at("column_count") + "tensor_core.mxu.column_count must be in [1, 4096], got 0");
  CHECK(error_with("capacity_mib: 1\n", "capacity_mib: 0\n") ==
        at("capacity_mib: 1\n") + "tensor_core.vmem.capacity_mib must be in [1, 1048576], got 0");
  CHECK(error_with("capacity_mib: 64", "capacity_mib: 0") == at("capacity_mib: 64") + "hbm.capacity_mib must be in [1, 16777216], got 0");
  CHECK(error_with("channel_bandwidth_gbps: 8", "channel_bandwidth_gbps: 0") ==
        at("channel_bandwidth_gbps") + "hbm.channel_bandwidth_gbps must be in [0.001, 100000], got 0");
  CHECK(error_with("bandwidth_gbps: 8\n  latency_ns", "bandwidth_gbps: -1\n  latency_ns") ==
        at("bandwidth_gbps: 8\n") + "pcie.bandwidth_gbps must be in [0.001, 10000], got -1");
  CHECK(error_with("burst_bytes: 64", "burst_bytes: 48") ==
        at("burst_bytes") + "tensor_core.dma.burst_bytes must be a power of two in [1, 1048576], got 48");
  CHECK(error_with("interleave_bytes: 256", "interleave_bytes: 16") ==
        at("interleave_bytes") + "hbm.interleave_bytes must be a power of two in [32, 1048576], got 16");
  CHECK(error_with("bf16_passes: 1", "bf16_passes: 0") ==
        at("bf16_passes") + "tensor_core.mxu.bf16_passes must be in [0.0625, 64], got 0");
  CHECK(error_with("f32_passes: 6", "f32_passes: 0.01") ==
        at("f32_passes") + "tensor_core.mxu.f32_passes must be 0 or in [0.0625, 64], got 0.01");
  CHECK(error_with("latency_cycles: 1 ", "latency_cycles: 0 ") ==
        at("latency_cycles: 1 ") + "tensor_core.vpu.elementwise.latency_cycles must be in [1, 10000], got 0");
  CHECK(error_with("name: \"tiny\"", "name: \"\"") == at("name:") + "name must not be empty");

  // A missing field is reported at its enclosing block; a missing block at the file.
  CHECK(error_with("    bank_count: 4\n", "") == at("vmem {") + "tensor_core.vmem.bank_count is missing");
  CHECK(error_with("tensor_core_count: 1\n", "") == ": tensor_core_count is missing");
  CHECK(error_with("pcie {\n  bandwidth_gbps: 8\n  latency_ns: 100\n}\n", "") == ": pcie is missing");

  // Every problem is reported, one per line.
  CHECK(error_with("row_count: 16\n    column_count: 16", "row_count: 0\n    column_count: 0") ==
        at("row_count") + "tensor_core.mxu.row_count must be in [1, 4096], got 0\n" + path + at("column_count") +
            "tensor_core.mxu.column_count must be in [1, 4096], got 0");

  // An override replaces the file as the place to blame.
  CHECK(ErrorOf([] { LoadArchConfig(kConfigsDir + "/tiny.pbtxt", {"tensor_core.clock_mhz=-1"}); }) ==
        "--set tensor_core.clock_mhz=-1: tensor_core.clock_mhz must be in [1, 1000000], got -1");
  CHECK(ErrorOf([] { LoadArchConfig(kConfigsDir + "/tiny.pbtxt", {"ici.ring_link_count=0"}); }) ==
        "--set ici.ring_link_count=0: ici.ring_link_count must be in [1, 16], got 0");
}

TEST_CASE("validation checks the rules between fields", "[config]") {
  const std::string tiny = kConfigsDir + "/tiny.pbtxt";
  // VMEM (1 MiB) smaller than a 1024 x 512-word vreg (2 MiB).
  CHECK(ErrorOf([&] {
          LoadArchConfig(tiny, {"tensor_core.vpu.sublane_count=1024", "tensor_core.vpu.lane_count=512"});
        }) == tiny + ":" + PositionOf(TinyText(), "capacity_mib: 1\n") +
                  ": tensor_core.vmem.capacity_mib (1 MiB) is smaller than one vreg: 1024 sublanes x 512 "
                  "lanes x 4 bytes = 2097152 bytes (tensor_core.vpu set at --set tensor_core.vpu.lane_count=512)");
  // A burst larger than the HBM interleave stripe.
  CHECK(ErrorOf([&] { LoadArchConfig(tiny, {"tensor_core.dma.burst_bytes=512"}); }) ==
        "--set tensor_core.dma.burst_bytes=512: tensor_core.dma.burst_bytes (512) must not exceed "
        "hbm.interleave_bytes (256, set at " + tiny + ":" + PositionOf(TinyText(), "interleave_bytes") +
            ") so that a burst lies in one HBM channel");
  // HBM too small to give each channel one stripe.
  CHECK(ErrorOf([&] { LoadArchConfig(tiny, {"hbm.channel_count=1024", "hbm.interleave_bytes=1048576"}); }) ==
        tiny + ":" + PositionOf(TinyText(), "capacity_mib: 64") +
            ": hbm.capacity_mib (64 MiB) is less than one interleave stripe per channel: 1024 channels x "
            "1048576 bytes = 1073741824 bytes");
  // Cross-field rules wait for the single-field ones, so one mistake gives one message.
  CHECK(ErrorOf([&] { LoadArchConfig(tiny, {"hbm.interleave_bytes=48"}); }) ==
        "--set hbm.interleave_bytes=48: hbm.interleave_bytes must be a power of two in [32, 1048576], got 48");
}

TEST_CASE("every number in the schema has a range, and docs/configs.md lists it", "[config]") {
  std::vector<std::pair<std::string, const google::protobuf::FieldDescriptor*>> leaves;
  LeafFields(*ArchConfig::descriptor(), "", leaves);
  const std::string docs = ReadText(std::string(TPUSIM_SOURCE_DIR) + "/docs/configs.md");
  for (const auto& [path, field] : leaves) {
    INFO(path);
    // The docs have one table row per field: | `path` | type | range | meaning |
    const std::size_t row = docs.find("| `" + path + "` |");
    REQUIRE(row != std::string::npos);
    const std::string line = docs.substr(row, docs.find('\n', row) - row);
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) continue;
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL) {
      CHECK_THAT(line, Catch::Contains("| bool | true or false |"));  // not a number: no range
      continue;
    }
    CHECK_THAT(line, Catch::Contains(tpusim::sim::DescribeValidRange(*field)));
  }
  CHECK(leaves.size() > 50);  // the walk found the schema
}

TEST_CASE("field sources describe where each field was set", "[config]") {
  using tpusim::sim::FieldSources;
  FieldSources sources("f.pbtxt");
  sources.RecordOverride("hbm.capacity_mib", "hbm.capacity_mib=3");
  CHECK(sources.Describe("hbm.capacity_mib") == "--set hbm.capacity_mib=3");
  CHECK(sources.Describe("hbm.channel_count") == "--set hbm.capacity_mib=3");  // created hbm
  CHECK(sources.Describe("pcie.latency_ns") == "f.pbtxt");
  sources.RecordOverride("hbm", "hbm=none");
  CHECK(sources.Describe("hbm.capacity_mib") == "--set hbm=none");  // the older record is gone
}

TEST_CASE("tpusim config prints the effective config, which loads back, and the peaks", "[config]") {
  const auto run = [](const std::string& command_line) {
    CLI::App app;
    const tpusim::sim::Command command = tpusim::sim::AddConfigCommand(app);
    app.parse(command_line, false);
    REQUIRE(command.parser->parsed());
    return Capture(1, command.run);
  };

  const std::string v4 = run("config");
  CHECK_THAT(v4, Catch::StartsWith("# tpusim config: " + kConfigsDir + "/tpu_v4.pbtxt\nname: \"tpu_v4\"\n"));
  CHECK_THAT(v4, Catch::Contains("#   MXU bf16          279.60 TFLOP/s = 2 x 2 TensorCore(s) x 4 MXU(s) x 128 x 128 x 1066.5894 MHz\n"));
  CHECK_THAT(v4, Catch::Contains("#   HBM               1228.80 GB/s = 32 channels x 38.4 GB/s\n"));
  CHECK_THAT(v4, Catch::Contains("#   VMEM read/write   1074.80 / 2150.70 GB/s per TensorCore = 1007.7 / 2016.4 bytes/cycle\n"));
  CHECK_THAT(v4, Catch::Contains("#   CMEM read/write   4301.40 / 2149.60 GB/s\n"));
  CHECK_THAT(v4, Catch::Contains("#   PCIe              15.75 GB/s each way\n"));
  CHECK_THAT(v4, Catch::Contains("#   ICI ring          100.00 GB/s each way = 2 link(s) x 50.0 GB/s, 1000 ns per hop\n"));
  // The output is a config: it loads back to the same message.
  google::protobuf::util::MessageDifferencer differ;
  CHECK(differ.Equals(ParseArchConfig(v4, "(output)"), LoadArchConfig(kConfigsDir + "/tpu_v4.pbtxt")));

  const std::string changed = run("config --config tpu_v5e --set tensor_core.mxu.count=8 --set cmem=none");
  CHECK_THAT(changed, Catch::Contains("#   --set tensor_core.mxu.count=8\n#   --set cmem=none\n"));
  CHECK_THAT(changed, Catch::Contains("    count: 8\n"));
  CHECK_THAT(changed, Catch::Contains("#   MXU bf16          394.00 TFLOP/s"));
  CHECK_THAT(changed, Catch::Contains("#   CMEM              none\n"));
  CHECK(ParseArchConfig(changed, "(output)").tensor_core().mxu().count() == 8);

  // Errors propagate as tpusim::Error for main() to print.
  CHECK(ErrorOf([&] { run("config --config tiny --set tensor_core.mxu.count=0"); }) ==
        "--set tensor_core.mxu.count=0: tensor_core.mxu.count must be in [1, 8], got 0");
}

TEST_CASE("values a run could not survive are refused: bandwidths, clocks and throughputs near 0, accumulators past memory",
          "[config]") {
  // Issue 21, item 4: each of these was valid and hung (simulated time past SystemC's 2^64 ps),
  // counted cycles past 64 bits, or failed to allocate mid-run (16 GiB of accumulators per MXU).
  const std::string path = kConfigsDir + "/tpu_v4.pbtxt";
  const auto error_of = [&](const std::vector<std::string>& overrides) {
    return ErrorOf([&] { LoadArchConfig(path, overrides); });
  };
  CHECK(error_of({"tensor_core.vmem.read_bandwidth_gbps=1e-300"}) ==
        "--set tensor_core.vmem.read_bandwidth_gbps=1e-300: tensor_core.vmem.read_bandwidth_gbps must be in "
        "[0.001, 1000000], got 1e-300");
  CHECK(error_of({"tensor_core.vpu.elementwise.throughput_vregs_per_cycle=1e-15"}) ==
        "--set tensor_core.vpu.elementwise.throughput_vregs_per_cycle=1e-15: "
        "tensor_core.vpu.elementwise.throughput_vregs_per_cycle must be in [0.001, 64], got 1e-15");
  CHECK(error_of({"tensor_core.mxu.accumulator_rows=1048576", "tensor_core.mxu.column_count=4096"}) ==
        "--set tensor_core.mxu.accumulator_rows=1048576: tensor_core.mxu.accumulator_rows (1048576) x column_count "
        "(4096, set at --set tensor_core.mxu.column_count=4096) x 4 bytes = 17179869184 bytes of accumulators per "
        "MXU, more than tpusim holds (1073741824 bytes per MXU)");
  // The smallest values now allowed still run (the attention block, timing-only, elsewhere).
  CHECK_NOTHROW(LoadArchConfig(path, {"hbm.channel_bandwidth_gbps=0.001", "tensor_core.clock_mhz=1",
                                      "tensor_core.vpu.transcendental.throughput_vregs_per_cycle=0.001"}));
}
