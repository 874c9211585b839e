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
  const auto slot = [](const models::VpuUnitParams& unit) {
    return compiler::VpuSlotTiming{static_cast<double>(unit.latency_cycles), 1 / unit.throughput_vregs_per_cycle};
  };
  compiler::VpuTiming& vpu = options.vpu_timing;
  vpu.issue_per_cycle = params.vpu.issue_instructions_per_cycle;
  vpu.slots[static_cast<int>(compiler::VpuSlot::kElementwise)] = slot(params.vpu.elementwise);
  vpu.slots[static_cast<int>(compiler::VpuSlot::kTranscendental)] = slot(params.vpu.transcendental);
  vpu.slots[static_cast<int>(compiler::VpuSlot::kCrossLane)] = slot(params.vpu.cross_lane);
  // A vector load's value is in its register after VMEM's access latency and a whole vreg's
  // bytes at VMEM's read bandwidth (as models/vmem.h serves it).
  const double vreg_bytes = 4.0 * params.vpu.sublanes * params.vpu.lanes;
  const double read_bytes_per_cycle = params.vmem.read_bandwidth_gbps * 1e3 / params.vmem.clock_mhz;
  vpu.slots[static_cast<int>(compiler::VpuSlot::kLoadStore)] = {
      params.vmem.access_latency_cycles + vreg_bytes / read_bytes_per_cycle, 1};
  compiler::MxuRates& mxu = options.mxu_rates;
  mxu.clock_mhz = params.scalar_core.clock_mhz;
  mxu.weight_load_cycles = params.mxu.weight_load_cycles;
  mxu.pipeline_cycles = params.mxu.pipeline_fill_cycles + params.mxu.pipeline_drain_cycles;
  mxu.weight_buffers = static_cast<int>(params.mxu.weight_buffer_count);
  mxu.bf16_passes = params.mxu.bf16_passes;
  mxu.f16_passes = params.mxu.f16_passes;
  mxu.f32_passes = params.mxu.f32_passes;
  return options;
}

}  // namespace tpusim::sim
