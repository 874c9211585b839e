#include "models/sparse_bytes.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace tpusim::models {

const uint8_t* SparseBytes::FindPage(uint64_t page) const {
  if (page == cached_page_) return cached_data_;
  const auto it = pages_.find(page);
  if (it == pages_.end()) return nullptr;
  cached_page_ = page;
  cached_data_ = it->second.get();
  return cached_data_;
}

uint8_t* SparseBytes::PageForWrite(uint64_t page) {
  if (page == cached_page_) return cached_data_;
  auto& slot = pages_[page];
  if (!slot) slot = std::make_unique<uint8_t[]>(kPageBytes);  // value-initialized: zeros
  cached_page_ = page;
  cached_data_ = slot.get();
  return cached_data_;
}

void SparseBytes::Read(uint64_t address, std::span<uint8_t> out) const {
  assert(address <= size_ && out.size() <= size_ - address);
  uint64_t done = 0;
  while (done < out.size()) {
    const uint64_t at = address + done;
    const uint64_t offset = at % kPageBytes;
    const uint64_t piece = std::min<uint64_t>(out.size() - done, kPageBytes - offset);
    const uint8_t* page = FindPage(at / kPageBytes);
    if (page) {
      std::memcpy(out.data() + done, page + offset, piece);
    } else {
      std::memset(out.data() + done, 0, piece);
    }
    done += piece;
  }
}

void SparseBytes::Write(uint64_t address, std::span<const uint8_t> in) {
  assert(address <= size_ && in.size() <= size_ - address);
  uint64_t done = 0;
  while (done < in.size()) {
    const uint64_t at = address + done;
    const uint64_t offset = at % kPageBytes;
    const uint64_t piece = std::min<uint64_t>(in.size() - done, kPageBytes - offset);
    std::memcpy(PageForWrite(at / kPageBytes) + offset, in.data() + done, piece);
    done += piece;
  }
}

void SparseBytes::CopyFrom(const SparseBytes& source, uint64_t source_address, uint64_t address,
                           uint64_t bytes) {
  assert(source_address <= source.size_ && bytes <= source.size_ - source_address);
  assert(address <= size_ && bytes <= size_ - address);
  uint64_t done = 0;
  while (done < bytes) {
    const uint64_t from = source_address + done;
    const uint64_t to = address + done;
    const uint64_t from_offset = from % kPageBytes;
    const uint64_t to_offset = to % kPageBytes;
    const uint64_t piece =
        std::min({bytes - done, kPageBytes - from_offset, kPageBytes - to_offset});
    const uint8_t* from_page = source.FindPage(from / kPageBytes);
    if (from_page) {
      // Look the destination up after the source: with source == this, the cache then holds
      // the destination page, and both pointers stay valid (pages never move).
      std::memmove(PageForWrite(to / kPageBytes) + to_offset, from_page + from_offset, piece);
    } else if (FindPage(to / kPageBytes)) {
      std::memset(PageForWrite(to / kPageBytes) + to_offset, 0, piece);
    }
    done += piece;
  }
}

namespace {

// A piece's hash from its first byte's address and its 8-byte words (the last one padded with
// zeros), mixed as in splitmix64; 0 for a piece of zeros, so untouched pages need not be read.
uint64_t PieceHash(uint64_t address, const uint8_t* data, uint64_t bytes) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(address + 0x9e3779b97f4a7c15ULL);
  uint64_t any = 0;
  uint64_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, 8);
    any |= word;
    h = mix(h ^ word);
  }
  if (i < bytes) {
    uint64_t word = 0;
    std::memcpy(&word, data + i, bytes - i);
    any |= word;
    h = mix(h ^ word);
  }
  return any == 0 ? 0 : h;
}

}  // namespace

uint64_t SparseBytes::ContentHash(uint64_t address, uint64_t bytes) const {
  assert(address <= size_ && bytes <= size_ - address);
  uint64_t hash = 0;
  uint64_t done = 0;
  while (done < bytes) {
    const uint64_t at = address + done;
    const uint64_t offset = at % kPageBytes;
    const uint64_t piece = std::min<uint64_t>(bytes - done, kPageBytes - offset);
    if (const uint8_t* page = FindPage(at / kPageBytes)) hash += PieceHash(at, page + offset, piece);
    done += piece;
  }
  return hash;
}

}  // namespace tpusim::models
