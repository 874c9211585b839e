#include "compiler/hlo/sort_key_pattern.h"

#include <cmath>
#include <string_view>

namespace tpusim::hlo {
namespace {

bool IsScalarConstant(const Instruction& x, bool (*test)(double)) {
  const Literal* value = x.opcode() == Opcode::kConstant ? x.literal() : nullptr;
  return value && !value->is_tuple() && value->element_count() == 1 && test(value->GetDouble(0));
}

bool IsCompare(const Instruction& x, std::string_view direction) {
  return x.opcode() == Opcode::kCompare && x.GetIdentifier("direction") == direction;
}

}  // namespace

const Instruction* CanonicalizedSortKey(const Instruction& node) {
  if (node.opcode() != Opcode::kSelect) return nullptr;
  const Instruction& is_nan = *node.operand(0);
  const Instruction& inner = *node.operand(2);
  if (!IsCompare(is_nan, "NE") || is_nan.operand(0) != is_nan.operand(1)) return nullptr;
  const Instruction* x = is_nan.operand(0);
  auto positive_nan = [](double v) { return std::isnan(v) && !std::signbit(v); };
  auto positive_zero = [](double v) { return v == 0 && !std::signbit(v); };
  if (!IsScalarConstant(*node.operand(1), positive_nan)) return nullptr;
  if (inner.opcode() != Opcode::kSelect || inner.operand(2) != x) return nullptr;
  const Instruction& is_zero = *inner.operand(0);
  if (!IsCompare(is_zero, "EQ") || is_zero.operand(0) != x || !IsScalarConstant(*is_zero.operand(1), positive_zero) ||
      !IsScalarConstant(*inner.operand(1), positive_zero)) {
    return nullptr;
  }
  return x;
}

}  // namespace tpusim::hlo
