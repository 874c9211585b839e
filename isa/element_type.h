// XLA primitive (element) types: names as XLA prints them, bit widths, and which ones tpusim can
// hold as data. Every name XLA's parser knows is recognised, so a shape of any type parses; the
// ones tpusim cannot compute with are rejected by IsSupported() users with a clear error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tpusim::isa {

enum class ElementType : uint8_t {
  kPred,
  kS1, kS2, kS4, kS8, kS16, kS32, kS64,
  kU1, kU2, kU4, kU8, kU16, kU32, kU64,
  kF16, kBF16, kF32, kF64,
  kF8E5M2, kF8E4M3, kF8E4M3FN, kF8E4M3B11FNUZ, kF8E3M4, kF8E5M2FNUZ, kF8E4M3FNUZ,
  kF8E8M0FNU, kF4E2M1FN, kF6E3M2FN, kF6E2M3FN,
  kC64, kC128,
  kToken, kOpaque,
};

// The name XLA prints ("bf16", "f8e4m3fn", "pred", "token").
std::string_view ElementTypeName(ElementType type);

// Parses an XLA type name; nullopt if `name` is not one.
std::optional<ElementType> ParseElementType(std::string_view name);

// Storage width of one element in bits, as XLA's primitive_util::BitWidth gives it (pred is 8,
// s4 is 4, c64 is 64; token and opaque are 0).
int ElementBitWidth(ElementType type);

// Bytes one element occupies in a dense array: ceil(bits / 8) (sub-byte types are not packed here;
// packing is what a layout's E(n) says).
int ElementByteWidth(ElementType type);

// True for the types tpusim holds as data and converts between: pred, s8..s64, u8..u64, f16,
// bf16, f32, f64, f8e4m3fn, f8e5m2.
bool IsSupported(ElementType type);

// Throws tpusim::Error("element type X is not supported by tpusim (supported: ...)") unless
// IsSupported(type). `context` says what needed it ("materializing", "converting").
void RequireSupported(ElementType type, std::string_view context);

bool IsFloat(ElementType type);           // any floating type, supported or not
bool IsSignedInt(ElementType type);       // s1..s64
bool IsUnsignedInt(ElementType type);     // u1..u64
bool IsComplex(ElementType type);         // c64, c128
inline bool IsInteger(ElementType type) { return IsSignedInt(type) || IsUnsignedInt(type); }

}  // namespace tpusim::isa
