#include "compiler/eval/fold.h"

namespace tpusim::eval {

std::optional<BinaryOp> NativeFoldOp(const Reducer& reducer, isa::ElementType type) {
  if (!reducer.known || !isa::IsSupported(type)) return std::nullopt;
  switch (*reducer.known) {
    case BinaryOp::kAdd:
    case BinaryOp::kMultiply:
    case BinaryOp::kMaximum:
    case BinaryOp::kMinimum: return reducer.known;
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
      if (isa::IsFloat(type)) return std::nullopt;
      return reducer.known;
    default: return std::nullopt;
  }
}

}  // namespace tpusim::eval
