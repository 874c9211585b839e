// The assembler on broken input: every truncation and thousands of random mutations of the
// example programs either assemble or throw tpusim::Error, never crash; whatever assembles
// round-trips through the disassembler.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/util/message_differencer.h>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/error.h"

using namespace tpusim::isa;

namespace {

std::vector<std::string> ExampleTexts() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TPUSIM_SOURCE_DIR) + "/tests/asm")) {
    if (entry.path().extension() == ".tpuasm") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> texts;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream contents;
    contents << in.rdbuf();
    texts.push_back(contents.str());
  }
  return texts;
}

struct Outcome {
  int assembled = 0;
  int rejected = 0;
};

// Assembles `text`; an error must be a tpusim::Error (ParseError: with an offset inside the
// text), and a success must round-trip.
void Try(const std::string& text, Outcome& outcome) {
  Program program;
  try {
    program = Assemble(text);
  } catch (const tpusim::ParseError& e) {
    ++outcome.rejected;
    if (e.offset() > text.size()) FAIL("error offset " << e.offset() << " past the end of " << text.size() << " bytes");
    if (std::string(e.what()).empty()) FAIL("empty error message for:\n" << text);
    return;
  }
  ++outcome.assembled;
  const std::string canonical = Disassemble(program);
  const Program again = Assemble(canonical);
  if (!google::protobuf::util::MessageDifferencer::Equals(program, again)) FAIL("no round trip for:\n" << text);
}

}  // namespace

TEST_CASE("every truncation of the examples assembles or fails cleanly", "[isa]") {
  for (const std::string& text : ExampleTexts()) {
    Outcome outcome;
    for (std::size_t length = 0; length <= text.size(); ++length) Try(text.substr(0, length), outcome);
    CHECK(outcome.rejected > 0);
    CHECK(outcome.assembled > 0);  // cuts at line ends after the .target line
  }
}

TEST_CASE("random mutations of the examples assemble or fail cleanly", "[isa]") {
  static const std::string kAlphabet = "svmx0123456789abcdef[](){}<>,.:;=+-*/ \t\n\r_#'\"\\\x00\x7f\xff";
  std::mt19937 rng(20240601);
  Outcome outcome;
  for (const std::string& original : ExampleTexts()) {
    for (int round = 0; round < 1500; ++round) {
      std::string text = original;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        const std::size_t at = rng() % text.size();
        switch (rng() % 6) {
          case 0: text.erase(at, 1 + rng() % 6); break;
          case 1: text.insert(at, 1, kAlphabet[rng() % kAlphabet.size()]); break;
          case 2: text[at] = kAlphabet[rng() % kAlphabet.size()]; break;
          case 3: text[at] = static_cast<char>(rng() & 0xFF); break;
          case 4: {  // duplicate a slice somewhere else
            const std::string slice = text.substr(at, 1 + rng() % 40);
            text.insert(rng() % text.size(), slice);
            break;
          }
          case 5: {  // change a digit run: the numbers, registers and sizes
            const std::size_t digit = text.find_first_of("0123456789", at);
            if (digit != std::string::npos) text[digit] = static_cast<char>('0' + rng() % 10);
            break;
          }
        }
      }
      Try(text, outcome);
    }
  }
  INFO("assembled " << outcome.assembled << ", rejected " << outcome.rejected);
  CHECK(outcome.assembled > 100);  // the mutations also reach deep into valid programs
  CHECK(outcome.rejected > 1000);
}

TEST_CASE("random bytes and pathological lines fail cleanly", "[isa]") {
  std::mt19937 rng(7);
  Outcome outcome;
  for (int round = 0; round < 2000; ++round) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = static_cast<char>(rng() & 0xFF);
    Try(text, outcome);
  }
  const std::string target =
      ".target sublanes=8, lanes=128, vregs=32, mxus=1, mxu_rows=128, mxu_cols=128, dma_engines=1, semaphores=1, "
      "cmem=false\n";
  const std::string nested(100000, '(');
  const std::string lines[] = {
      "  dma hbm[0x0] -> vmem[0x0], src=" + nested,
      "  dma hbm[0x0] -> vmem[0x0], src=f32[" + std::string(50000, '9') + "]",
      "  dma hbm[0x0] -> vmem[0x0], src=f32[99999999999,99999999999]{1,0:T(8,128)}, dst=f32[1,1]{1,0}, size=[1, 1], "
      "sem=sem[0], engine=0",
      "  vld v1, vmem[s1 + 0x" + std::string(40, 'f') + "]",
      "  mov s1, " + std::string(30000, '-'),
      std::string(100000, 'a') + ":",
      "  br " + std::string(100000, 'b'),
      "  " + std::string(5000, '['),
      "  vld v1, vmem[0x0], sublanes=-1",
      ".data d, host[0xffffffffffffffff], bytes=0000",
      ".buffer b, hbm[0x1], size=0xffffffffffffffff, shape=f32[1]{0}, role=temporary",
      "  sem.wait sem[-1], 1",
      "  dma hbm[0x0] -> vmem[0x0], src=f32[4]{0}, dst=f32[4]{0}, src_start=[-9223372036854775808], size=[9223372036854775807], sem=sem[0], engine=0",
  };
  for (const std::string& line : lines) Try(target + line + "\n", outcome);
  CHECK(outcome.assembled == 0);
}
