// libFuzzer target for the HLO text parser and printer. Any input must either parse or throw
// tpusim::Error (never crash, hang or trip a sanitizer), and whatever parses must print as text
// that parses back to the same module and prints the same: print(parse(print(parse(x)))) ==
// print(parse(x)). docs/hlo.md says how to build and run it; inputs it finds go into
// tests/compiler/hlo_robustness_test.cc.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "isa/error.h"
#include "tests/fuzz/hlo_module_diff.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<tpusim::hlo::Module> module;
  try {
    module = tpusim::hlo::ParseModule(text, "fuzz.hlo");
  } catch (const tpusim::Error&) {
    return 0;
  }
  const std::string printed = tpusim::hlo::ToString(*module);
  std::unique_ptr<tpusim::hlo::Module> reparsed;
  try {
    reparsed = tpusim::hlo::ParseModule(printed, "printed.hlo");
  } catch (const tpusim::Error& e) {
    std::fprintf(stderr, "the print of a parsed module does not parse:\n%s\n--- print:\n%s\n", e.what(), printed.c_str());
    std::abort();
  }
  const std::string difference = tpusim::hlo::testing::DiffModules(*module, *reparsed);
  if (!difference.empty()) {
    std::fprintf(stderr, "the print parses to another module: %s\n--- print:\n%s\n", difference.c_str(), printed.c_str());
    std::abort();
  }
  const std::string again = tpusim::hlo::ToString(*reparsed);
  if (again != printed) {
    std::fprintf(stderr, "print is not a fixed point:\n--- first:\n%s\n--- second:\n%s\n", printed.c_str(), again.c_str());
    std::abort();
  }
  return 0;
}
