// The parser never crashes or hangs: every truncation of some workloads and random mutations of
// them either parse (and then print as a fixed point) or throw tpusim::Error. Also the inputs the
// fuzzer (tests/fuzz) found, kept as regression cases.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "isa/error.h"
#include "tests/fuzz/hlo_module_diff.h"

using namespace tpusim;
using namespace tpusim::hlo;

namespace {

std::string ReadWorkload(const std::string& name) {
  std::ifstream file(TPUSIM_SHARED_DIR "/workloads/xla/" + name, std::ios::binary);
  REQUIRE(file.good());
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

enum class Outcome { kParsed, kError };

// Parses `text`; if it parses, its print must be a fixed point. Anything but tpusim::Error
// escaping is a failure (and a crash ends the test run, which is what the test is for).
Outcome Check(const std::string& text) {
  std::unique_ptr<Module> module;
  try {
    module = ParseModule(text, "mutant.hlo");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK(message.starts_with("mutant.hlo:"));
    return Outcome::kError;
  }
  const std::string printed = ToString(*module);
  std::unique_ptr<Module> reparsed;
  try {
    reparsed = ParseModule(printed, "printed.hlo");
  } catch (const Error& e) {
    FAIL("the print of a parsed module does not parse: " << e.what() << "\ninput:\n" << text);
  }
  const std::string difference = testing::DiffModules(*module, *reparsed);
  if (!difference.empty()) FAIL("the print parses to another module (" << difference << ") for input:\n" << text);
  if (ToString(*reparsed) != printed) FAIL("print is not a fixed point for input:\n" << text);
  return Outcome::kParsed;
}

}  // namespace

TEST_CASE("every truncation of small workloads parses or fails cleanly", "[hlo]") {
  const char* kFiles[] = {"while.hlo", "isolated_convolution.hlo", "topk_logits_k10_1x50000_bf16.hlo",
                          "argsort_axis_1024x512_bf16.hlo", "fully_connected_reference_model.hlo",
                          "fp8_gemm_loop.hlo", "mha_block_1x12x128x64_bf16.hlo"};
  for (const char* file : kFiles) {
    INFO(file);
    const std::string text = ReadWorkload(file);
    std::size_t errors = 0;
    for (std::size_t length = 0; length <= text.size(); ++length) {
      if (Check(text.substr(0, length)) == Outcome::kError) ++errors;
    }
    // Only prefixes ending after a complete computation can parse.
    CHECK(errors > text.size() * 9 / 10);
  }
}

TEST_CASE("truncations of the large workloads fail cleanly", "[hlo]") {
  for (const char* file : {"llama3_8b_bf16_activation_offloading_1x8.hlo", "maxtext_train_step_before_optimization.hlo"}) {
    INFO(file);
    const std::string text = ReadWorkload(file);
    for (std::size_t i = 1; i < 150; ++i) Check(text.substr(0, text.size() * i / 150 + i));
  }
}

TEST_CASE("random mutations parse or fail cleanly", "[hlo]") {
  const char* kFiles[] = {"while.hlo", "isolated_convolution.hlo", "argsort_axis_1024x512_bf16.hlo",
                          "fully_connected_reference_model.hlo", "fp8_gemm_loop.hlo",
                          "depthwise_conv_3x3_1x256x56x56_bf16.hlo"};
  // Bytes that matter to the grammar, and some that do not.
  const std::string kBytes = "{}()[],=%:\"/*\\\n \t0123456789-_.xTS<>abfio?ROOTENTRY\x01\xff";
  std::mt19937 random(20240611);
  std::size_t parsed = 0;
  std::size_t failed = 0;
  for (const char* file : kFiles) {
    const std::string original = ReadWorkload(file);
    for (int round = 0; round < 1500; ++round) {
      std::string text = original;
      const int edits = 1 + static_cast<int>(random() % 3);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        const std::size_t at = random() % text.size();
        switch (random() % 4) {
          case 0: text[at] = kBytes[random() % kBytes.size()]; break;
          case 1: text.erase(at, 1 + random() % 8); break;
          case 2: text.insert(at, 1, kBytes[random() % kBytes.size()]); break;
          default: {  // copy a piece of the text elsewhere
            const std::size_t from = random() % text.size();
            text.insert(at, text.substr(from, 1 + random() % 24));
          }
        }
      }
      (Check(text) == Outcome::kParsed ? parsed : failed) += 1;
    }
  }
  CHECK(parsed > 100);  // some mutations are harmless (in metadata, in names)
  CHECK(failed > 1000);
}

TEST_CASE("hostile inputs: deep nesting, huge numbers, huge shapes", "[hlo]") {
  const auto wrap = [](const std::string& body) { return "HloModule m\nENTRY e {\n" + body + "\n}\n"; };
  // Nesting far beyond any real module must be refused, not recursed into.
  CHECK(Check(wrap("  a = " + std::string(100000, '(') + " parameter(0)")) == Outcome::kError);
  CHECK(Check(wrap("  a = f32[1] constant(" + std::string(100000, '{') + ")")) == Outcome::kError);
  CHECK(Check(wrap("  a = (f32[]) constant(" + std::string(100000, '(') + ")")) == Outcome::kError);
  CHECK(Check(wrap("  a = f32[] parameter(0), metadata=" + std::string(100000, '{'))) == Outcome::kError);
  std::string deep_shape = "f32[]";
  for (int i = 0; i < 60; ++i) deep_shape = "(" + deep_shape + ")";
  CHECK(Check(wrap("  a = " + deep_shape + " parameter(0)")) == Outcome::kParsed);
  std::string rank_100 = "f32[";
  for (int i = 0; i < 100; ++i) rank_100 += i ? ",1" : "1";
  CHECK(Check(wrap("  a = " + rank_100 + "] constant({...})")) == Outcome::kParsed);
  CHECK(Check(wrap("  a = " + rank_100 + "] constant(" + std::string(100, '{') + "1" + std::string(100, '}') + ")")) ==
        Outcome::kError);
  // Sizes that would not fit in memory are never allocated.
  CHECK(Check(wrap("  a = f32[9223372036854775807,2] constant({1})")) == Outcome::kError);
  CHECK(Check(wrap("  a = f32[4294967296,4294967296] constant({...})")) == Outcome::kParsed);
  CHECK(Check(wrap("  p = f32[1] parameter(0)\n  a = f32[1] all-reduce(p), replica_groups=[4294967296,4294967296]<=[1]")) ==
        Outcome::kError);
  CHECK(Check(wrap("  a = f32[99999999999999999999] parameter(0)")) == Outcome::kError);
  CHECK(Check(std::string(200000, '/')) == Outcome::kError);
  CHECK(Check(std::string("HloModule m\0\0\0", 15)) == Outcome::kError);
}
