#include "compiler/hlo/printer.h"

#include <type_traits>

#include "compiler/hlo/literal_text.h"
#include "compiler/hlo/value_parser.h"

namespace tpusim::hlo {
namespace {

// Names print without '%' unless that would read back differently: a keyword where the parser
// looks for one, or a name that does not start like an identifier.
void AppendName(std::string& out, std::string_view name) {
  const char c = name.empty() ? '\0' : name[0];
  const bool plain = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') && name != "ROOT" &&
                     name != "ENTRY" && name != "HloModule";
  if (!plain) out += '%';
  out += name;
}

void AppendNameList(std::string& out, const auto& items) {
  out += '{';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    AppendName(out, items[i] ? std::string_view(items[i]->name()) : std::string_view("<null>"));
  }
  out += '}';
}

void AppendValue(std::string& out, const AttributeValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          out += std::to_string(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          out += FormatDouble(v);
        } else if constexpr (std::is_same_v<T, QuotedString>) {
          out += QuoteString(v.value);
        } else if constexpr (std::is_same_v<T, Identifier>) {
          out += v.text;
        } else if constexpr (std::is_same_v<T, IdentifierList>) {
          out += '{';
          for (std::size_t i = 0; i < v.items.size(); ++i) {
            if (i > 0) out += ',';
            out += v.items[i];
          }
          out += '}';
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          out += IntListToString(v);
        } else if constexpr (std::is_same_v<T, Computation*>) {
          AppendName(out, v ? std::string_view(v->name()) : std::string_view("<null>"));
        } else if constexpr (std::is_same_v<T, std::vector<Computation*>> ||
                             std::is_same_v<T, std::vector<Instruction*>>) {
          AppendNameList(out, v);
        } else if constexpr (std::is_same_v<T, RawText>) {
          out += v.text;
        } else {
          out += ToString(v);  // Window, dim labels, slice, padding, groups, pairs, program shape
        }
      },
      value);
}

void AppendOpcode(std::string& out, const Instruction& instruction) {
  const std::optional<Opcode>& wrapped = instruction.async_wrapped_opcode();
  if (!wrapped) {
    out += OpcodeName(instruction.opcode());
    return;
  }
  out += OpcodeName(*wrapped);
  switch (instruction.opcode()) {
    case Opcode::kAsyncStart: out += "-start"; break;
    case Opcode::kAsyncUpdate: out += "-update"; break;
    default: out += "-done"; break;
  }
}

void AppendInstruction(std::string& out, const Instruction& instruction) {
  if (instruction.is_root()) out += "ROOT ";
  AppendName(out, instruction.name());
  out += " = ";
  out += isa::ToString(instruction.shape());
  out += ' ';
  AppendOpcode(out, instruction);
  out += '(';
  if (instruction.opcode() == Opcode::kParameter) {
    out += std::to_string(instruction.parameter_number());
  } else if (instruction.opcode() == Opcode::kConstant) {
    if (instruction.literal()) {
      out += LiteralToText(*instruction.literal());
    } else {
      out += instruction.literal_text();
      // Text kept as written may end in a `// comment`, which would swallow the ')'.
      if (instruction.literal_text().find("//") != std::string::npos) out += '\n';
    }
  } else {
    for (std::size_t i = 0; i < instruction.operand_count(); ++i) {
      if (i > 0) out += ", ";
      AppendName(out, instruction.operand(i)->name());
    }
  }
  out += ')';
  for (const Attribute& attribute : instruction.attributes()) {
    out += ", ";
    out += attribute.name;
    out += '=';
    AppendValue(out, attribute.value);
  }
}

void AppendComputation(std::string& out, const Computation& computation) {
  if (computation.is_entry()) out += "ENTRY ";
  AppendName(out, computation.name());
  out += " (";
  const auto& parameters = computation.parameters();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (i > 0) out += ", ";
    AppendName(out, parameters[i]->name());
    out += ": ";
    out += isa::ToString(WithoutLayouts(parameters[i]->shape()));
  }
  out += ") -> ";
  if (computation.root()) out += isa::ToString(WithoutLayouts(computation.root()->shape()));
  out += " {\n";
  for (const auto& instruction : computation.instructions()) {
    out += "  ";
    AppendInstruction(out, *instruction);
    out += '\n';
  }
  out += '}';
  if (computation.execution_thread()) {
    out += ", execution_thread=";
    out += QuoteString(*computation.execution_thread());
  }
}

}  // namespace

std::string ToString(const Module& module) {
  std::string out = "HloModule ";
  AppendName(out, module.name());
  for (const Attribute& attribute : module.attributes()) {
    out += ", ";
    out += attribute.name;
    out += '=';
    AppendValue(out, attribute.value);
  }
  out += "\n";
  for (const auto& computation : module.computations()) {
    out += '\n';
    AppendComputation(out, *computation);
    out += '\n';
  }
  return out;
}

std::string ToString(const Computation& computation) {
  std::string out;
  AppendComputation(out, computation);
  return out;
}

std::string ToString(const Instruction& instruction) {
  std::string out;
  AppendInstruction(out, instruction);
  return out;
}

std::string ToString(const AttributeValue& value) {
  std::string out;
  AppendValue(out, value);
  return out;
}

}  // namespace tpusim::hlo
