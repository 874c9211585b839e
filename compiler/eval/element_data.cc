#include "compiler/eval/element_data.h"

#include "compiler/eval/scalar_ops.h"

namespace tpusim::eval {

int IntegerBitWidth(isa::ElementType type) {
  if (type == isa::ElementType::kPred) return 1;
  return isa::ElementBitWidth(type);
}

float RoundToElement(isa::ElementType type, float value) {
  switch (type) {
    case isa::ElementType::kBF16: return isa::Bf16ToF32(isa::F32ToBf16(value));
    case isa::ElementType::kF16: return isa::F16ToF32(isa::F32ToF16(value));
    case isa::ElementType::kF8E4M3FN: return isa::F8E4M3FNToF32(isa::F32ToF8E4M3FN(value));
    case isa::ElementType::kF8E5M2: return isa::F8E5M2ToF32(isa::F32ToF8E5M2(value));
    default: return value;
  }
}

double RoundToElement(isa::ElementType, double value) { return value; }

int64_t RoundToElement(isa::ElementType type, int64_t value) {
  return scalar::SignExtend(static_cast<uint64_t>(value), IntegerBitWidth(type));
}

uint64_t RoundToElement(isa::ElementType type, uint64_t value) {
  if (type == isa::ElementType::kPred) return value != 0 ? 1 : 0;
  return value & scalar::WidthMask(IntegerBitWidth(type));
}

}  // namespace tpusim::eval
