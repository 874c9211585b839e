// Test support: the first difference between two hlo::Modules, comparing everything the text
// determines (names, opcodes, shapes with layouts, operands, attribute values, constants) and
// nothing it does not (source locations, the text constants were written as). Used to check that
// parse(print(m)) is m, by the fuzzer and the robustness tests.
#pragma once

#include <cstring>
#include <string>
#include <type_traits>
#include <variant>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/printer.h"

namespace tpusim::hlo::testing {

inline bool SameValue(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, double>) {
          return std::memcmp(&x, &y, sizeof(double)) == 0;
        } else if constexpr (std::is_same_v<T, Computation*>) {
          return x->name() == y->name();
        } else if constexpr (std::is_same_v<T, std::vector<Computation*>> ||
                             std::is_same_v<T, std::vector<Instruction*>>) {
          if (x.size() != y.size()) return false;
          for (std::size_t i = 0; i < x.size(); ++i) {
            if (x[i]->name() != y[i]->name()) return false;
          }
          return true;
        } else {
          return x == y;
        }
      },
      a);
}

inline std::string DiffAttributes(const std::vector<Attribute>& a, const std::vector<Attribute>& b,
                                  const std::string& where) {
  if (a.size() != b.size()) return where + ": attribute counts differ";
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name) return where + ": attribute " + a[i].name + " vs " + b[i].name;
    if (!SameValue(a[i].value, b[i].value)) {
      return where + ": attribute " + a[i].name + ": " + ToString(a[i].value) + " vs " + ToString(b[i].value);
    }
  }
  return "";
}

inline std::string DiffInstructions(const Instruction& a, const Instruction& b) {
  const std::string where = "instruction " + a.name();
  if (a.name() != b.name()) return where + ": name " + b.name();
  if (a.opcode() != b.opcode() || a.async_wrapped_opcode() != b.async_wrapped_opcode()) return where + ": opcode";
  if (!(a.shape() == b.shape())) return where + ": shape";
  if (a.operand_count() != b.operand_count()) return where + ": operand count";
  for (std::size_t i = 0; i < a.operand_count(); ++i) {
    if (a.operand(i)->name() != b.operand(i)->name()) return where + ": operand " + std::to_string(i);
  }
  if (a.parameter_number() != b.parameter_number()) return where + ": parameter number";
  if (a.opcode() == Opcode::kConstant) {
    if (a.constant_form() != b.constant_form()) return where + ": constant form";
    if ((a.literal() == nullptr) != (b.literal() == nullptr)) return where + ": literal presence";
    if (a.literal() && !(*a.literal() == *b.literal())) return where + ": literal value";
    if (!a.literal() && a.literal_text() != b.literal_text()) return where + ": literal text";
  }
  if (a.is_root() != b.is_root()) return where + ": root";
  return DiffAttributes(a.attributes(), b.attributes(), where);
}

// "" if `a` and `b` hold the same module.
inline std::string DiffModules(const Module& a, const Module& b) {
  if (a.name() != b.name()) return "module name " + a.name() + " vs " + b.name();
  if (std::string d = DiffAttributes(a.attributes(), b.attributes(), "module"); !d.empty()) return d;
  if (a.computations().size() != b.computations().size()) return "computation counts differ";
  for (std::size_t c = 0; c < a.computations().size(); ++c) {
    const Computation& x = *a.computations()[c];
    const Computation& y = *b.computations()[c];
    const std::string where = "computation " + x.name();
    if (x.name() != y.name()) return where + ": name " + y.name();
    if (x.is_entry() != y.is_entry()) return where + ": entry";
    if (x.execution_thread() != y.execution_thread()) return where + ": execution thread";
    if (x.instruction_count() != y.instruction_count()) return where + ": instruction count";
    if (x.parameters().size() != y.parameters().size()) return where + ": parameter count";
    for (std::size_t i = 0; i < x.instruction_count(); ++i) {
      if (std::string d = DiffInstructions(*x.instructions()[i], *y.instructions()[i]); !d.empty()) {
        return where + ": " + d;
      }
    }
  }
  return "";
}

}  // namespace tpusim::hlo::testing
