// libFuzzer target for the ArchConfig loader (sim/config/load.h): text proto, --set overrides,
// validation. The input is the config text, then optionally a NUL byte and the overrides, one
// "PATH=VALUE" per line, as --set takes them. Any input must either load or throw tpusim::Error
// (never crash, hang or trip a sanitizer), and a config that loads must have finite, positive
// peaks (sim/config/derived.h) and print as text that loads back to the same config.
// docs/testing.md says how to build and run it.
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "isa/error.h"
#include "sim/config/derived.h"
#include "sim/config/load.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "config fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  std::vector<std::string> overrides;
  if (nul != std::string_view::npos) {
    std::string_view rest = input.substr(nul + 1);
    while (!rest.empty()) {
      const std::size_t end = rest.find('\n');
      overrides.emplace_back(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
  }
  tpusim::ArchConfig config;
  try {
    config = tpusim::sim::ParseArchConfig(text, "fuzz.pbtxt", overrides);
  } catch (const tpusim::Error&) {
    return 0;
  }
  for (const double peak : {tpusim::sim::PeakFlopsPerSecond(config), tpusim::sim::HbmBytesPerSecond(config),
                            tpusim::sim::VmemReadBytesPerSecondPerTensorCore(config),
                            tpusim::sim::VmemWriteBytesPerSecondPerTensorCore(config),
                            tpusim::sim::PcieBytesPerSecond(config)}) {
    if (!std::isfinite(peak) || peak <= 0) Fail("a valid config has a peak that is not finite and positive", config.DebugString());
  }
  std::string printed;
  google::protobuf::TextFormat::PrintToString(config, &printed);
  tpusim::ArchConfig again;
  try {
    again = tpusim::sim::ParseArchConfig(printed, "printed.pbtxt");
  } catch (const tpusim::Error& e) {
    Fail("the print of a valid config does not load", std::string(e.what()) + "\n--- print:\n" + printed);
  }
  if (!google::protobuf::util::MessageDifferencer::Equals(config, again)) {
    Fail("the print of a valid config loads as another config", printed);
  }
  return 0;
}
