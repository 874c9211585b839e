#include "isa/element_type.h"

#include <array>

#include "isa/error.h"

namespace tpusim::isa {
namespace {

struct TypeInfo {
  ElementType type;
  std::string_view name;
  int bits;
  bool supported;
};

// One row per XLA primitive type, in enum order.
constexpr std::array kTypes = {
    TypeInfo{ElementType::kPred, "pred", 8, true},
    TypeInfo{ElementType::kS1, "s1", 1, false},
    TypeInfo{ElementType::kS2, "s2", 2, false},
    TypeInfo{ElementType::kS4, "s4", 4, false},
    TypeInfo{ElementType::kS8, "s8", 8, true},
    TypeInfo{ElementType::kS16, "s16", 16, true},
    TypeInfo{ElementType::kS32, "s32", 32, true},
    TypeInfo{ElementType::kS64, "s64", 64, true},
    TypeInfo{ElementType::kU1, "u1", 1, false},
    TypeInfo{ElementType::kU2, "u2", 2, false},
    TypeInfo{ElementType::kU4, "u4", 4, false},
    TypeInfo{ElementType::kU8, "u8", 8, true},
    TypeInfo{ElementType::kU16, "u16", 16, true},
    TypeInfo{ElementType::kU32, "u32", 32, true},
    TypeInfo{ElementType::kU64, "u64", 64, true},
    TypeInfo{ElementType::kF16, "f16", 16, true},
    TypeInfo{ElementType::kBF16, "bf16", 16, true},
    TypeInfo{ElementType::kF32, "f32", 32, true},
    TypeInfo{ElementType::kF64, "f64", 64, true},
    TypeInfo{ElementType::kF8E5M2, "f8e5m2", 8, true},
    TypeInfo{ElementType::kF8E4M3, "f8e4m3", 8, false},
    TypeInfo{ElementType::kF8E4M3FN, "f8e4m3fn", 8, true},
    TypeInfo{ElementType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 8, false},
    TypeInfo{ElementType::kF8E3M4, "f8e3m4", 8, false},
    TypeInfo{ElementType::kF8E5M2FNUZ, "f8e5m2fnuz", 8, false},
    TypeInfo{ElementType::kF8E4M3FNUZ, "f8e4m3fnuz", 8, false},
    TypeInfo{ElementType::kF8E8M0FNU, "f8e8m0fnu", 8, false},
    TypeInfo{ElementType::kF4E2M1FN, "f4e2m1fn", 4, false},
    TypeInfo{ElementType::kF6E3M2FN, "f6e3m2fn", 6, false},
    TypeInfo{ElementType::kF6E2M3FN, "f6e2m3fn", 6, false},
    TypeInfo{ElementType::kC64, "c64", 64, false},
    TypeInfo{ElementType::kC128, "c128", 128, false},
    TypeInfo{ElementType::kToken, "token", 0, false},
    TypeInfo{ElementType::kOpaque, "opaque", 0, false},
};

constexpr bool TableMatchesEnum() {
  for (std::size_t i = 0; i < kTypes.size(); ++i) {
    if (static_cast<std::size_t>(kTypes[i].type) != i) return false;
  }
  return true;
}
static_assert(TableMatchesEnum(), "kTypes must list ElementType in enum order");

const TypeInfo& Info(ElementType type) { return kTypes[static_cast<std::size_t>(type)]; }

}  // namespace

std::string_view ElementTypeName(ElementType type) { return Info(type).name; }

std::optional<ElementType> ParseElementType(std::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

int ElementBitWidth(ElementType type) { return Info(type).bits; }

int ElementByteWidth(ElementType type) { return (Info(type).bits + 7) / 8; }

bool IsSupported(ElementType type) { return Info(type).supported; }

void RequireSupported(ElementType type, std::string_view context) {
  if (IsSupported(type)) return;
  std::string message = "element type ";
  message += ElementTypeName(type);
  message += " is not supported by tpusim";
  if (!context.empty()) {
    message += " for ";
    message += context;
  }
  message += " (supported: pred, s8, s16, s32, s64, u8, u16, u32, u64, f16, bf16, f32, f64, "
             "f8e4m3fn, f8e5m2)";
  throw Error(message);
}

bool IsFloat(ElementType type) {
  return type >= ElementType::kF16 && type <= ElementType::kF6E2M3FN;
}

bool IsSignedInt(ElementType type) {
  return type >= ElementType::kS1 && type <= ElementType::kS64;
}

bool IsUnsignedInt(ElementType type) {
  return type >= ElementType::kU1 && type <= ElementType::kU64;
}

bool IsComplex(ElementType type) {
  return type == ElementType::kC64 || type == ElementType::kC128;
}

}  // namespace tpusim::isa
