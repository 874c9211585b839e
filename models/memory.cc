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
  stats.read_requests += replayed_.read_requests;
  stats.write_requests += replayed_.write_requests;
  stats.bytes_read += replayed_.bytes_read;
  stats.bytes_written += replayed_.bytes_written;
  for (std::size_t i = 0; i < replayed_.resources.size(); ++i) AddCounts(stats.resources[i], replayed_.resources[i]);
  return stats;
}

void Memory::AddReplayedCounts(const MemoryStats& delta) {
  replayed_.read_requests += delta.read_requests;
  replayed_.write_requests += delta.write_requests;
  replayed_.bytes_read += delta.bytes_read;
  replayed_.bytes_written += delta.bytes_written;
  replayed_.resources.resize(delta.resources.size());
  for (std::size_t i = 0; i < delta.resources.size(); ++i) AddCounts(replayed_.resources[i], delta.resources[i]);
}

MemoryStats CountsSince(const MemoryStats& now, const MemoryStats& before) {
  MemoryStats delta;
  delta.name = now.name;
  delta.read_requests = now.read_requests - before.read_requests;
  delta.write_requests = now.write_requests - before.write_requests;
  delta.bytes_read = now.bytes_read - before.bytes_read;
  delta.bytes_written = now.bytes_written - before.bytes_written;
  for (std::size_t i = 0; i < now.resources.size(); ++i) {
    delta.resources.push_back(CountsSince(now.resources[i], before.resources[i]));
  }
  return delta;
}

}  // namespace tpusim::models
