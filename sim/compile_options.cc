#include "sim/compile_options.h"

#include "sim/chip/chip.h"
#include "sim/config/derived.h"

namespace tpusim::sim {

compiler::CompileOptions CompileOptionsFor(const ArchConfig& config) {
  const ChipParams params = ChipParamsFromConfig(config);
  compiler::CompileOptions options;
  options.target = MachineTarget(config);
  options.hbm_capacity_bytes = params.hbm.capacity_bytes;
  options.vmem_capacity_bytes = params.vmem.capacity_bytes;
  options.smem_capacity_bytes = params.smem.capacity_bytes;
  options.host_capacity_bytes = params.host.capacity_bytes;
  options.hbm_bytes_per_ns = HbmBytesPerSecond(config) / 1e9;
  options.hbm_latency_ns = params.hbm.access_latency_ns;
  options.dma_engine_bytes_in_flight = uint64_t{params.dma.max_outstanding_requests} * params.dma.burst_bytes;
  return options;
}

}  // namespace tpusim::sim
