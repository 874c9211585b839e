// The values a TensorCore's vector and mask registers hold: a Vreg is S x L 32-bit words
// (sublanes x lanes, 8 x 128 on every TPU so far; nothing here assumes it), a Mask is S x L bits.
// Word (s, l) is sublane s, lane l; an instruction reads a word as f32, s32 or u32 as its type
// says (docs/isa.md, "Machine state"). Plain values: the register file, the VPU and the MXUs pass
// them around and compare them with ==.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace tpusim::models {

class Vreg {
 public:
  Vreg() = default;  // 0 x 0: a placeholder to assign to
  Vreg(uint32_t sublanes, uint32_t lanes)
      : sublanes_(sublanes), lanes_(lanes), words_(size_t{sublanes} * lanes, 0) {}

  uint32_t sublanes() const { return sublanes_; }
  uint32_t lanes() const { return lanes_; }
  bool SameShape(const Vreg& other) const {
    return sublanes_ == other.sublanes_ && lanes_ == other.lanes_;
  }

  // Raw words, sublane-major: word (s, l) is words()[s * lanes() + l]. No bounds checks here:
  // callers index within sublanes() x lanes().
  uint32_t word(uint32_t s, uint32_t l) const { return words_[size_t{s} * lanes_ + l]; }
  void set_word(uint32_t s, uint32_t l, uint32_t value) { words_[size_t{s} * lanes_ + l] = value; }
  float f32(uint32_t s, uint32_t l) const { return std::bit_cast<float>(word(s, l)); }
  void set_f32(uint32_t s, uint32_t l, float value) {
    set_word(s, l, std::bit_cast<uint32_t>(value));
  }
  int32_t s32(uint32_t s, uint32_t l) const { return static_cast<int32_t>(word(s, l)); }
  void set_s32(uint32_t s, uint32_t l, int32_t value) {
    set_word(s, l, static_cast<uint32_t>(value));
  }

  std::span<const uint32_t> words() const { return words_; }
  std::span<uint32_t> words() { return words_; }

  bool operator==(const Vreg&) const = default;

 private:
  uint32_t sublanes_ = 0;
  uint32_t lanes_ = 0;
  std::vector<uint32_t> words_;
};

class Mask {
 public:
  Mask() = default;
  Mask(uint32_t sublanes, uint32_t lanes)
      : sublanes_(sublanes), lanes_(lanes), bits_(size_t{sublanes} * lanes, 0) {}

  uint32_t sublanes() const { return sublanes_; }
  uint32_t lanes() const { return lanes_; }

  bool get(uint32_t s, uint32_t l) const { return bits_[size_t{s} * lanes_ + l] != 0; }
  void set(uint32_t s, uint32_t l, bool value) { bits_[size_t{s} * lanes_ + l] = value ? 1 : 0; }
  // One byte (0 or 1) per bit, sublane-major like Vreg::words().
  std::span<const uint8_t> bits() const { return bits_; }
  std::span<uint8_t> bits() { return bits_; }

  bool operator==(const Mask&) const = default;

 private:
  uint32_t sublanes_ = 0;
  uint32_t lanes_ = 0;
  std::vector<uint8_t> bits_;
};

}  // namespace tpusim::models
