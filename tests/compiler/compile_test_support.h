// Shared by compiler tests that compile HLO text without a preset: a small TensorCore target
// (8x128 vregs, one 128x128 MXU, 2 DMA engines) with generous memories, and the error a module
// gives.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/hlo/parser.h"
#include "compiler/lower/compile.h"
#include "isa/error.h"

namespace tpusim::compiler_test {

inline compiler::CompileOptions SmallTargetOptions(uint64_t vmem_bytes = 16ull << 20,
                                                   uint64_t smem_bytes = 1ull << 20) {
  compiler::CompileOptions options;
  isa::Target& t = options.target;
  t.set_sublanes(8);
  t.set_lanes(128);
  t.set_vector_registers(32);
  t.set_mxu_count(1);
  t.set_mxu_rows(128);
  t.set_mxu_columns(128);
  t.set_dma_engines(2);
  t.set_semaphores(8);
  options.hbm_capacity_bytes = 1ull << 32;
  options.vmem_capacity_bytes = vmem_bytes;
  options.smem_capacity_bytes = smem_bytes;
  options.host_capacity_bytes = 1ull << 32;
  return options;
}

// The message of the tpusim::Error that compiling `text` (parsed as "test.hlo") throws; "" if it
// compiles.
inline std::string CompileErrorOf(const std::string& text, const compiler::CompileOptions& options) {
  auto module = hlo::ParseModule(text, "test.hlo");
  try {
    compiler::Compile(*module, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace tpusim::compiler_test
