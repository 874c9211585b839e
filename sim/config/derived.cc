#include "sim/config/derived.h"

namespace tpusim::sim {

double PeakFlopsPerSecond(const ArchConfig& config) {
  const MxuConfig& mxu = config.tensor_core().mxu();
  const double macs_per_cycle = static_cast<double>(config.tensor_core_count()) * mxu.count() *
                                mxu.row_count() * mxu.column_count();
  return 2 * macs_per_cycle * config.tensor_core().clock_mhz() * 1e6;
}

double HbmBytesPerSecond(const ArchConfig& config) {
  return config.hbm().channel_count() * config.hbm().channel_bandwidth_gbps() * 1e9;
}

double VmemReadBytesPerSecondPerTensorCore(const ArchConfig& config) {
  return config.tensor_core().vmem().read_bandwidth_gbps() * 1e9;
}

double VmemWriteBytesPerSecondPerTensorCore(const ArchConfig& config) {
  return config.tensor_core().vmem().write_bandwidth_gbps() * 1e9;
}

double CmemReadBytesPerSecond(const ArchConfig& config) {
  return config.has_cmem() ? config.cmem().read_bandwidth_gbps() * 1e9 : 0;
}

double CmemWriteBytesPerSecond(const ArchConfig& config) {
  return config.has_cmem() ? config.cmem().write_bandwidth_gbps() * 1e9 : 0;
}

double PcieBytesPerSecond(const ArchConfig& config) { return config.pcie().bandwidth_gbps() * 1e9; }

uint64_t VregBytes(const ArchConfig& config) {
  const VpuConfig& vpu = config.tensor_core().vpu();
  return uint64_t{vpu.sublane_count()} * vpu.lane_count() * 4;
}

double BytesPerCycle(double gbps, double clock_mhz) { return gbps * 1000 / clock_mhz; }

}  // namespace tpusim::sim
