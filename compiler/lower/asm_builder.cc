#include "compiler/lower/asm_builder.h"

#include <cctype>

#include "isa/disassembler.h"

namespace tpusim::compiler {
namespace {

std::string Sanitize(std::string_view hint) {
  std::string name;
  for (char c : hint) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    name.push_back(ok ? c : '_');
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '.') name.insert(0, "_");
  // Names spelled like registers (s3, v12, m0, mxu1) are refused by the assembler.
  const auto is_register = [&] {
    std::size_t digits = name.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
    if (digits == name.size()) return false;
    const std::string prefix = name.substr(0, digits);
    return prefix == "s" || prefix == "v" || prefix == "m" || prefix == "mxu";
  };
  if (is_register()) name.insert(0, "_");
  return name;
}

}  // namespace

AsmBuilder::AsmBuilder(std::string program_name, const isa::Target& target)
    : name_(Sanitize(program_name)), target_(target) {}

std::string AsmBuilder::UniqueName(std::string_view hint, Names& names) {
  const std::string base = Sanitize(hint);
  int& next = names.next_suffix[base];
  std::string name = next == 0 ? base : base + "." + std::to_string(next);
  // "x.1" may already be taken as a hint of its own.
  while (names.used.contains(name)) name = base + "." + std::to_string(++next);
  ++next;
  names.used.insert(name);
  return name;
}

std::string AsmBuilder::NewLabel(std::string_view hint) { return UniqueName(hint, labels_); }

void AsmBuilder::Bind(const std::string& label) { code_.push_back(label + ":"); }

void AsmBuilder::Comment(std::string_view text) { code_.push_back("  // " + std::string(text)); }

std::string AsmBuilder::AddBuffer(std::string_view name, std::string_view space, uint64_t address,
                                  uint64_t size_bytes, std::string_view shape, std::string_view role) {
  const std::string unique = UniqueName(name, symbols_);
  directives_.push_back(fmt::format(".buffer {}, {}[{:#x}], size={:#x}, shape={}, role={}", unique, space, address,
                                    size_bytes, shape, role));
  return unique;
}

void AsmBuilder::AddData(std::string_view name, std::string_view space, uint64_t address,
                         const std::vector<uint8_t>& bytes) {
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (uint8_t byte : bytes) hex += fmt::format("{:02x}", byte);
  directives_.push_back(fmt::format(".data {}, {}[{:#x}], bytes={}", UniqueName(name, symbols_), space, address, hex));
}

void AsmBuilder::AddLoop(std::string_view label, const std::vector<Region>& state, const std::optional<Counter>& counter) {
  if (state.empty()) directives_.push_back(fmt::format(".loop {}", label));
  for (const Region& r : state) {
    directives_.push_back(fmt::format(".loop {}, {}[{:#x}], size={:#x}", label, r.space, r.address, r.size_bytes));
  }
  if (counter) {
    directives_.push_back(fmt::format(".loop {}, counter={}[{:#x}], type={}, step={}, while={}, bound={}", label,
                                      counter->place.space, counter->place.address, isa::ElementTypeName(counter->type),
                                      counter->step, counter->compare, counter->bound));
  }
}

std::string AsmBuilder::Text() const {
  std::string text = fmt::format(".program {}\n", name_);
  text += isa::TargetLine(target_) + "\n";
  for (const std::string& line : directives_) text += line + "\n";
  text += "\n";
  for (const std::string& line : code_) text += line + "\n";
  return text;
}

std::string AsmBuilder::TakeText() {
  std::string text = Text();
  std::vector<std::string>().swap(code_);  // a big module's lines take more memory than its text
  return text;
}

}  // namespace tpusim::compiler
