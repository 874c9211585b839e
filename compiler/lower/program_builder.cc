#include "compiler/lower/program_builder.h"

#include <cctype>

#include "isa/disassembler.h"
#include "isa/error.h"
#include "isa/program_check.h"

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

ProgramBuilder::ProgramBuilder(std::string program_name, const isa::Target& target) {
  program_.set_name(Sanitize(program_name));
  *program_.mutable_target() = target;
}

ProgramBuilder ProgramBuilder::Scratch(const isa::Target& target) {
  ProgramBuilder builder("scratch", target);
  builder.scratch_ = true;
  return builder;
}

std::string ProgramBuilder::UniqueName(std::string_view hint, Names& names) {
  const std::string base = Sanitize(hint);
  int& next = names.next_suffix[base];
  std::string name = next == 0 ? base : base + "." + std::to_string(next);
  // "x.1" may already be taken as a hint of its own.
  while (names.used.contains(name)) name = base + "." + std::to_string(++next);
  ++next;
  names.used.insert(name);
  return name;
}

std::string ProgramBuilder::NewLabel(std::string_view hint) { return UniqueName(hint, labels_); }

void ProgramBuilder::Bind(const std::string& label) {
  if (scratch_) return;
  isa::Label* bound = program_.add_labels();
  bound->set_name(label);
  bound->set_instruction(static_cast<uint32_t>(program_.instructions_size()));
}

void ProgramBuilder::Comment(std::string_view text) {
  if (scratch_) return;
  comments_.push_back({static_cast<uint32_t>(program_.instructions_size()), std::string(text)});
}

std::string ProgramBuilder::AddBuffer(std::string_view name, isa::MemorySpace space, uint64_t address,
                                      uint64_t size_bytes, const isa::Shape& shape, isa::BufferRole role,
                                      uint32_t index) {
  isa::Buffer* buffer = program_.add_buffers();
  buffer->set_name(UniqueName(name, symbols_));
  buffer->set_shape(isa::ToString(shape));
  buffer->set_space(space);
  buffer->set_address(address);
  buffer->set_size_bytes(size_bytes);
  buffer->set_role(role);
  buffer->set_index(index);
  return buffer->name();
}

void ProgramBuilder::AddData(std::string_view name, isa::MemorySpace space, uint64_t address,
                             const std::vector<uint8_t>& bytes) {
  isa::DataSegment* data = program_.add_data();
  data->set_name(UniqueName(name, symbols_));
  data->set_space(space);
  data->set_address(address);
  data->set_data(std::string(bytes.begin(), bytes.end()));
}

void ProgramBuilder::AddLoop(std::string_view label, const std::vector<Region>& state,
                             const std::optional<Counter>& counter) {
  auto [it, added] = loop_numbers_.try_emplace(std::string(label), program_.loops_size());
  if (added) program_.add_loops()->set_label(std::string(label));
  isa::Loop& loop = *program_.mutable_loops(it->second);
  for (const Region& r : state) {
    isa::Region* region = loop.add_state();
    region->set_space(r.space);
    region->set_address(r.address);
    region->set_size_bytes(r.size_bytes);
  }
  if (counter) {
    isa::LoopCounter& c = *loop.mutable_counter();
    c.mutable_place()->set_space(counter->place.space);
    c.mutable_place()->set_address(counter->place.address);
    c.mutable_place()->set_size_bytes(static_cast<uint64_t>(isa::ElementByteWidth(counter->type)));
    c.set_is_signed(isa::IsSignedInt(counter->type));
    c.set_step(counter->step);
    c.set_compare(counter->compare);
    c.set_bound(counter->bound);
  }
}

isa::Program ProgramBuilder::Finish() {
  if (scratch_) throw Error("internal: a scratch program builder has no program to finish");
  if (const std::optional<isa::ProgramDefect> defect = isa::FindProgramDefect(program_)) {
    std::string what = isa::DescribeLocation(program_, defect->where);
    if (defect->where.part == isa::ProgramLocation::Part::kInstruction) {
      what += " '" + isa::DisassembleInstruction(program_.instructions(defect->where.index)) + "'";
    }
    throw Error("internal: the compiled program " + program_.name() + " is not valid: " + what + ": " + defect->message);
  }
  return std::move(program_);
}

}  // namespace tpusim::compiler
