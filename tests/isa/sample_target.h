// The target the isa/ tests build their programs for: 8 x 128 vregs, 32 of them, two 128 x 128
// MXUs, 2 DMA engines, 8 semaphores and CMEM.
#pragma once

#include "isa/program.pb.h"

namespace tpusim::isa_test {

inline isa::Target SampleTarget() {
  isa::Target target;
  target.set_sublanes(8);
  target.set_lanes(128);
  target.set_vector_registers(32);
  target.set_mxu_count(2);
  target.set_mxu_rows(128);
  target.set_mxu_columns(128);
  target.set_dma_engines(2);
  target.set_semaphores(8);
  target.set_has_cmem(true);
  return target;
}

}  // namespace tpusim::isa_test
