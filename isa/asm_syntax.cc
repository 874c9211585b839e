#include "isa/asm_syntax.h"

namespace tpusim::isa {

std::optional<RegisterName> ParseRegisterName(std::string_view word) {
  RegisterName name{};
  std::string_view digits;
  if (word.starts_with("mxu")) {
    name.kind = RegisterName::Kind::kMxu;
    digits = word.substr(3);
  } else if (!word.empty() && (word[0] == 's' || word[0] == 'v' || word[0] == 'm')) {
    name.kind = word[0] == 's'   ? RegisterName::Kind::kSReg
                : word[0] == 'v' ? RegisterName::Kind::kVReg
                                 : RegisterName::Kind::kMReg;
    digits = word.substr(1);
  } else {
    return std::nullopt;
  }
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  if (digits.size() > 9) {
    name.number = UINT64_MAX;
    return name;
  }
  name.number = 0;
  for (char c : digits) name.number = name.number * 10 + static_cast<uint64_t>(c - '0');
  return name;
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 256 || !IsNameStart(name[0])) return false;
  for (char c : name) {
    if (!IsNameChar(c)) return false;
  }
  return !ParseRegisterName(name).has_value();
}

std::string FormatHex(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string digits;
  do {
    digits.insert(digits.begin(), kDigits[value & 0xF]);
    value >>= 4;
  } while (value != 0);
  return "0x" + digits;
}

std::string FormatSignedHex(int64_t value) {
  if (value >= 0) return FormatHex(static_cast<uint64_t>(value));
  // Negate in unsigned arithmetic: INT64_MIN has no positive int64.
  return "-" + FormatHex(0 - static_cast<uint64_t>(value));
}

namespace {

// `s4 + <offset>` / `s4 - <offset>` / `s4` / `<offset>`, the offset written by `number`.
template <typename Number>
std::string FormatBasePlusOffset(bool has_reg, uint32_t reg, int64_t offset, Number number) {
  if (!has_reg) return number(offset);
  std::string out = "s" + std::to_string(reg);
  if (offset == 0) return out;
  if (offset > 0) return out + " + " + number(offset);
  // `s4 - 0x10`: the magnitude, computed without overflowing on INT64_MIN.
  const uint64_t magnitude = 0 - static_cast<uint64_t>(offset);
  const std::string text = number(static_cast<int64_t>(magnitude));  // INT64_MIN prints as itself
  return out + " - " + (text[0] == '-' ? text.substr(1) : text);
}

std::string Decimal(int64_t value) { return std::to_string(value); }

std::string FormatIndexList(const RegOffsetList& list) {
  std::string out = "[";
  for (int i = 0; i < list.items_size(); ++i) {
    if (i > 0) out += ", ";
    out += FormatRegOffset(list.items(i));
  }
  return out + "]";
}

}  // namespace

std::string FormatAddress(const Address& address) {
  return std::string(MemorySpaceName(address.space())) + "[" +
         FormatBasePlusOffset(address.has_reg(), address.reg(), address.offset(), FormatSignedHex) + "]";
}

std::string FormatRegOffset(const RegOffset& value) {
  return FormatBasePlusOffset(value.has_reg(), value.reg(), value.offset(), Decimal);
}

std::string FormatOperandValue(const Operand& operand) {
  switch (operand.value_case()) {
    case Operand::kSreg: return "s" + std::to_string(operand.sreg());
    case Operand::kVreg: return "v" + std::to_string(operand.vreg());
    case Operand::kMreg: return "m" + std::to_string(operand.mreg());
    case Operand::kImm: return std::to_string(operand.imm());
    case Operand::kBits: return FormatHex(operand.bits());
    case Operand::kLabel: return operand.label();
    case Operand::kAddress: return FormatAddress(operand.address());
    case Operand::kSemaphore: return "sem[" + FormatRegOffset(operand.semaphore()) + "]";
    case Operand::kMxu: return "mxu" + std::to_string(operand.mxu());
    case Operand::kShape: return operand.shape();
    case Operand::kIndex: return FormatIndexList(operand.index());
    case Operand::kSizes: {
      std::string out = "[";
      for (int i = 0; i < operand.sizes().items_size(); ++i) {
        if (i > 0) out += ", ";
        out += std::to_string(operand.sizes().items(i));
      }
      return out + "]";
    }
    case Operand::VALUE_NOT_SET: return "";
  }
  return "";
}

std::string InstructionSignature(const InstructionInfo& info) {
  std::string out(info.mnemonic);
  bool first = true;
  for (std::size_t i = 0; i < info.operands.size(); ++i) {
    const OperandSpec& spec = info.operands[i];
    out += first ? " " : (info.arrow && i == 1 ? " -> " : ", ");
    first = false;
    if (spec.keyword) {
      out += spec.optional ? "[" + std::string(spec.name) + "=]" : std::string(spec.name) + "=";
    } else {
      out += spec.name;
    }
  }
  return out;
}

}  // namespace tpusim::isa
