// The contents of a simulated memory: `size` bytes held in 64 KiB pages that are allocated on
// first write, so a 32 GiB HBM costs only what a program touches. Untouched bytes read as zero.
// Callers check ranges (Memory::CheckRange names the memory); here they are only asserted.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

namespace tpusim::models {

class SparseBytes {
 public:
  static constexpr uint64_t kPageBytes = uint64_t{64} << 10;

  explicit SparseBytes(uint64_t size) : size_(size) {}
  SparseBytes(const SparseBytes&) = delete;
  SparseBytes& operator=(const SparseBytes&) = delete;

  uint64_t size() const { return size_; }
  // Bytes of the pages allocated so far.
  uint64_t allocated_bytes() const { return pages_.size() * kPageBytes; }

  void Read(uint64_t address, std::span<uint8_t> out) const;
  void Write(uint64_t address, std::span<const uint8_t> in);
  // Copies `bytes` from `source` at `source_address` to here at `address`, page piece by page
  // piece (memmove within a piece). Copying untouched (zero) source bytes onto untouched bytes
  // here allocates nothing.
  void CopyFrom(const SparseBytes& source, uint64_t source_address, uint64_t address,
                uint64_t bytes);
  // A 64-bit hash of the bytes in [address, address + bytes) that depends on each byte and
  // where it lies, and reads only pages written so far (their untouched bytes are zeros, and a
  // piece of a page that holds only zeros adds nothing, written or not): equal contents give
  // equal hashes for the same range, and different ones differ but for a 2^-64 chance.
  uint64_t ContentHash(uint64_t address, uint64_t bytes) const;

 private:
  const uint8_t* FindPage(uint64_t page) const;  // nullptr if never written
  uint8_t* PageForWrite(uint64_t page);

  uint64_t size_;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
  // The last page found: DMA runs hit the same page many times in a row. Pages never move.
  mutable uint64_t cached_page_ = UINT64_MAX;
  mutable uint8_t* cached_data_ = nullptr;
};

}  // namespace tpusim::models
