// The vector and mask registers of one TensorCore, with the scoreboard that interlocks them.
// docs/isa.md: "Vector and mask registers behave as if every instruction ran in program order";
// the models keep that promise by timing, not by reordering values: an instruction's value is
// computed when it is executed (in program order), and the scoreboard makes it issue no earlier
// than the registers allow. Shared by the VPU and the MXUs (an mxu.pop writes a vreg that a vadd
// reads), so it is its own object that each unit is given.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/vreg.h"

namespace tpusim::models {

enum class RegisterKind : uint8_t { kVreg, kMask };

struct RegisterRef {
  RegisterKind kind = RegisterKind::kVreg;
  uint32_t index = 0;
  bool operator==(const RegisterRef&) const = default;
};

// "v3", "m1".
std::string RegisterName(RegisterRef ref);

// Scoreboard entry of one register, in cycles of the TensorCore clock.
struct RegisterTimes {
  uint64_t ready = 0;      // the last write's value is usable from this cycle on
  uint64_t last_read = 0;  // the cycle of the latest read by an instruction issued so far
};

class VectorRegisterFile {
 public:
  // vreg_count vregs of sublanes x lanes words, isa::kMaskRegisterCount masks, all zero, all
  // ready at cycle 0. Throws tpusim::Error if a count or dimension is 0.
  VectorRegisterFile(uint32_t vreg_count, uint32_t sublanes, uint32_t lanes);

  uint32_t vreg_count() const { return static_cast<uint32_t>(vregs_.size()); }
  uint32_t mask_count() const { return static_cast<uint32_t>(masks_.size()); }
  uint32_t sublanes() const { return sublanes_; }
  uint32_t lanes() const { return lanes_; }

  // Throws tpusim::Error ("v40 does not exist: the machine has 32 vector registers") unless the
  // register exists.
  void Check(RegisterRef ref) const;

  // Element access; each checks the index as Check does.
  Vreg& vreg(uint32_t index);
  const Vreg& vreg(uint32_t index) const;
  Mask& mask(uint32_t index);
  const Mask& mask(uint32_t index) const;
  RegisterTimes& times(RegisterRef ref);
  const RegisterTimes& times(RegisterRef ref) const;

 private:
  uint32_t sublanes_;
  uint32_t lanes_;
  std::vector<Vreg> vregs_;
  std::vector<Mask> masks_;
  std::vector<RegisterTimes> vreg_times_;
  std::vector<RegisterTimes> mask_times_;
};

}  // namespace tpusim::models
