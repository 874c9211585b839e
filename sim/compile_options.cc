#include "sim/compile_options.h"

#include <fmt/format.h>

#include <memory>

#include "isa/error.h"
#include "isa/shape.h"
#include "sim/chip/chip.h"
#include "sim/config/derived.h"

namespace tpusim::sim {

compiler::CompileOptions CompileOptionsFor(const ArchConfig& config) {
  // The compiler lays HLO arrays out in XLA's TPU tiles (isa::DefaultTpuLayout: a 32-bit array's
  // tile is one vreg of tpu_v4's geometry) and its kernels move whole tiles through vregs, so the
  // vregs must be that tile: other geometries run programs (tpusim exec) but compile no HLO.
  const std::vector<int64_t> tile = isa::DefaultTpuLayout(isa::ElementType::kF32, 2).tiles.at(0).dims;
  const VpuConfig& vpu_config = config.tensor_core().vpu();
  if (static_cast<int64_t>(vpu_config.sublane_count()) != tile.at(0) ||
      static_cast<int64_t>(vpu_config.lane_count()) != tile.at(1)) {
    throw Error(fmt::format(
        "tensor_core.vpu.sublane_count x lane_count = {} x {}: HLO modules compile for {} x {} vregs only, the "
        "tile of XLA's TPU layouts for 32-bit arrays (T({},{}), docs/layouts.md) that the kernels move a vreg at a "
        "time; tpusim exec runs programs for other geometries",
        vpu_config.sublane_count(), vpu_config.lane_count(), tile[0], tile[1], tile[0], tile[1]));
  }
  const ChipParams params = ChipParamsFromConfig(config);
  compiler::CompileOptions options;
  options.target = MachineTarget(config);
  options.limit_names = {"tensor_core.scalar_core.semaphore_count", "tensor_core.vpu.vector_register_count",
                         "tensor_core.mxu.row_count x column_count", "tensor_core.mxu.accumulator_rows"};
  options.hbm_capacity_bytes = params.hbm.capacity_bytes;
  options.capacity_names = {"hbm.capacity_mib", "host.capacity_mib"};
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
  vpu.vmem_read_bytes_per_cycle = read_bytes_per_cycle;
  vpu.vmem_latency_cycles = params.vmem.access_latency_cycles;
  compiler::MxuRates& mxu = options.mxu_rates;
  mxu.clock_mhz = params.scalar_core.clock_mhz;
  mxu.weight_load_cycles = params.mxu.weight_load_cycles;
  mxu.pipeline_cycles = params.mxu.pipeline_fill_cycles + params.mxu.pipeline_drain_cycles;
  mxu.weight_buffers = static_cast<int>(params.mxu.weight_buffer_count);
  mxu.bf16_passes = params.mxu.bf16_passes;
  mxu.f16_passes = params.mxu.f16_passes;
  mxu.f32_passes = params.mxu.f32_passes;
  // Kernel candidates run on a chip of this config (compiler/lower/kernel_tuner.h), each on a chip
  // of its own: every trial starts from the same idle machine, whatever ran before it.
  options.kernel_tuner = std::make_shared<compiler::KernelTuner>([config](const isa::Program& program) {
    Chip fresh(config);
    return fresh.Run(program, {}, true).cycles;
  });
  return options;
}

}  // namespace tpusim::sim
