// Builds a program as `.tpuasm` text, which the compiler then assembles (isa::Assemble): the
// assembler checks every instruction against the table, and `tpusim compile` can write exactly
// the text the program came from. Labels are made unique here; lines are kept in order.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "isa/element_type.h"
#include "isa/program.pb.h"

namespace tpusim::compiler {

class AsmBuilder {
 public:
  AsmBuilder(std::string program_name, const isa::Target& target);

  const isa::Target& target() const { return target_; }

  // A label name not used before, from `hint` (characters outside [A-Za-z0-9_.] become '_').
  std::string NewLabel(std::string_view hint);
  // Names the next instruction.
  void Bind(const std::string& label);
  void Comment(std::string_view text);
  template <typename... Args>
  void Emit(fmt::format_string<Args...> format, Args&&... args) {
    code_.push_back("  " + fmt::format(format, std::forward<Args>(args)...));
    ++instructions_;
  }

  // `.buffer NAME, SPACE[ADDRESS], size=N, shape=SHAPE, role=ROLE` (ROLE: "temporary",
  // "parameter(N)", "output(N)"). `name` is made a valid, unique assembler name.
  std::string AddBuffer(std::string_view name, std::string_view space, uint64_t address, uint64_t size_bytes,
                        std::string_view shape, std::string_view role);
  void AddData(std::string_view name, std::string_view space, uint64_t address, const std::vector<uint8_t>& bytes);
  // `.loop LABEL[, SPACE[ADDRESS], size=N]`: the loop at `label` and the state its ending depends
  // on (isa::Loop), a line per region, or one bare line where there is none.
  struct Region {
    std::string_view space;
    uint64_t address = 0;
    uint64_t size_bytes = 0;
  };
  // And its counter where it has one (isa::LoopCounter): `.loop LABEL, counter=SPACE[ADDRESS],
  // type=T, step=N, while=COMPARE, bound=N`, `type` an integer type of the region's size.
  struct Counter {
    Region place;
    isa::ElementType type = isa::ElementType::kS32;
    int64_t step = 0;
    std::string compare;
    int64_t bound = 0;
  };
  void AddLoop(std::string_view label, const std::vector<Region>& state, const std::optional<Counter>& counter = std::nullopt);

  std::size_t instruction_count() const { return instructions_; }
  std::string Text() const;
  // The text, the builder's lines released (it is left without code).
  std::string TakeText();

 private:
  // Names handed out, and the next suffix to try for each base.
  struct Names {
    std::unordered_set<std::string> used;
    std::unordered_map<std::string, int> next_suffix;
  };
  std::string UniqueName(std::string_view hint, Names& names);

  std::string name_;
  isa::Target target_;
  std::vector<std::string> directives_;
  std::vector<std::string> code_;
  std::size_t instructions_ = 0;
  Names labels_;
  Names symbols_;
};

}  // namespace tpusim::compiler
