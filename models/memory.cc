#include "models/memory.h"

#include <cstdio>
#include <utility>

#include "isa/error.h"

namespace tpusim::models {
namespace {

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

std::string_view ToString(AccessKind kind) {
  return kind == AccessKind::kRead ? "read" : "write";
}

Memory::Memory(std::string name, uint64_t capacity_bytes)
    : name_(std::move(name)), contents_(capacity_bytes) {}

void Memory::CheckRange(std::string_view what, uint64_t address, uint64_t bytes) const {
  const uint64_t capacity = capacity_bytes();
  if (address <= capacity && bytes <= capacity - address) return;
  throw Error(name_ + ": " + std::string(what) + " of " + std::to_string(bytes) +
              " bytes at address " + Hex(address) + " runs past the end of its capacity of " +
              std::to_string(capacity) + " bytes (" + Hex(capacity) + ")");
}

sc_core::sc_time Memory::Access(AccessKind kind, uint64_t address, uint64_t bytes,
                                const sc_core::sc_time& issue) {
  CheckRange(ToString(kind), address, bytes);
  CountRequest(kind, bytes);
  if (bytes == 0) return issue;
  return Serve(kind, address, bytes, issue);
}

void Memory::CountRequest(AccessKind kind, uint64_t bytes) {
  if (kind == AccessKind::kRead) {
    ++counters_.read_requests;
    counters_.bytes_read += bytes;
  } else {
    ++counters_.write_requests;
    counters_.bytes_written += bytes;
  }
}

void Memory::Read(uint64_t address, std::span<uint8_t> out) const {
  CheckRange("read", address, out.size());
  contents_.Read(address, out);
}

std::vector<uint8_t> Memory::Read(uint64_t address, uint64_t bytes) const {
  CheckRange("read", address, bytes);
  std::vector<uint8_t> out(bytes);
  contents_.Read(address, out);
  return out;
}

void Memory::Write(uint64_t address, std::span<const uint8_t> in) {
  CheckRange("write", address, in.size());
  contents_.Write(address, in);
}

MemoryStats Memory::stats() const {
  MemoryStats stats = counters_;
  stats.name = name_;
  AppendResourceStats(stats.resources);
  return stats;
}

}  // namespace tpusim::models
