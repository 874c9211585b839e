// Protobuf wire encoding by hand, for the packets a trace writes millions of times (slice BEGIN
// and END, counter samples): appending to a reused buffer costs no allocation, where building a
// message object costs several. Field numbers come from the generated code of the schema, and
// the self-check reads every packet back with that schema.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tpusim::traces::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

inline void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

inline void AppendTag(std::string& out, int field, WireType type) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | type);
}

inline void AppendVarintField(std::string& out, int field, uint64_t value) {
  AppendTag(out, field, kVarint);
  AppendVarint(out, value);
}

inline void AppendFixed64Field(std::string& out, int field, uint64_t bits) {
  AppendTag(out, field, kFixed64);
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(bits >> (8 * i));  // little-endian
  out.append(bytes, 8);
}

inline void AppendDoubleField(std::string& out, int field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  AppendFixed64Field(out, field, bits);
}

inline void AppendBytesField(std::string& out, int field, std::string_view bytes) {
  AppendTag(out, field, kLengthDelimited);
  AppendVarint(out, bytes.size());
  out.append(bytes);
}

}  // namespace tpusim::traces::wire
