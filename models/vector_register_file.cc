#include "models/vector_register_file.h"

#include "isa/error.h"
#include "isa/instruction_set.h"

namespace tpusim::models {

std::string RegisterName(RegisterRef ref) {
  return (ref.kind == RegisterKind::kVreg ? "v" : "m") + std::to_string(ref.index);
}

VectorRegisterFile::VectorRegisterFile(uint32_t vreg_count, uint32_t sublanes, uint32_t lanes)
    : sublanes_(sublanes), lanes_(lanes) {
  if (vreg_count == 0 || sublanes == 0 || lanes == 0) {
    throw Error("a vector register file needs at least one register of at least 1 x 1 words, got " +
                std::to_string(vreg_count) + " registers of " + std::to_string(sublanes) + " x " +
                std::to_string(lanes));
  }
  vregs_.assign(vreg_count, Vreg(sublanes, lanes));
  masks_.assign(isa::kMaskRegisterCount, Mask(sublanes, lanes));
  vreg_times_.assign(vreg_count, RegisterTimes{});
  mask_times_.assign(isa::kMaskRegisterCount, RegisterTimes{});
}

void VectorRegisterFile::Check(RegisterRef ref) const {
  const bool is_vreg = ref.kind == RegisterKind::kVreg;
  const size_t count = is_vreg ? vregs_.size() : masks_.size();
  if (ref.index < count) return;
  throw Error(RegisterName(ref) + " does not exist: the machine has " + std::to_string(count) +
              (is_vreg ? " vector registers" : " mask registers"));
}

Vreg& VectorRegisterFile::vreg(uint32_t index) {
  Check({RegisterKind::kVreg, index});
  return vregs_[index];
}
const Vreg& VectorRegisterFile::vreg(uint32_t index) const {
  Check({RegisterKind::kVreg, index});
  return vregs_[index];
}
Mask& VectorRegisterFile::mask(uint32_t index) {
  Check({RegisterKind::kMask, index});
  return masks_[index];
}
const Mask& VectorRegisterFile::mask(uint32_t index) const {
  Check({RegisterKind::kMask, index});
  return masks_[index];
}

RegisterTimes& VectorRegisterFile::times(RegisterRef ref) {
  Check(ref);
  return ref.kind == RegisterKind::kVreg ? vreg_times_[ref.index] : mask_times_[ref.index];
}
const RegisterTimes& VectorRegisterFile::times(RegisterRef ref) const {
  Check(ref);
  return ref.kind == RegisterKind::kVreg ? vreg_times_[ref.index] : mask_times_[ref.index];
}

}  // namespace tpusim::models
