// Quantities that follow from an ArchConfig: peaks for reports and the presets' tests, and unit
// conversions the models share. SI units (FLOP/s, bytes/s); per chip unless the name says
// TensorCore. The config is assumed valid (ValidateArchConfig).
#pragma once

#include <cstdint>

#include "sim/config/arch_config.pb.h"

namespace tpusim::sim {

// Peak bf16 MXU FLOP/s of the chip: 2 FLOP per MAC x tensor_core_count x mxu.count x row_count x
// column_count MACs per cycle x clock.
double PeakFlopsPerSecond(const ArchConfig& config);
// Peak HBM bytes/s of the chip: hbm.channel_count x hbm.channel_bandwidth_gbps.
double HbmBytesPerSecond(const ArchConfig& config);
// Peak VMEM read and write bytes/s of one TensorCore.
double VmemReadBytesPerSecondPerTensorCore(const ArchConfig& config);
double VmemWriteBytesPerSecondPerTensorCore(const ArchConfig& config);
// Peak CMEM read and write bytes/s of the chip; 0 without CMEM.
double CmemReadBytesPerSecond(const ArchConfig& config);
double CmemWriteBytesPerSecond(const ArchConfig& config);
// PCIe bytes/s in each direction.
double PcieBytesPerSecond(const ArchConfig& config);

// Bytes in one vreg: sublane_count x lane_count 32-bit words.
uint64_t VregBytes(const ArchConfig& config);
// Bytes per cycle of a clock_mhz clock that a bandwidth of gbps GB/s moves: gbps * 1000 / clock_mhz.
double BytesPerCycle(double gbps, double clock_mhz);
constexpr uint64_t MibToBytes(uint64_t mib) { return mib << 20; }
constexpr uint64_t KibToBytes(uint64_t kib) { return kib << 10; }

}  // namespace tpusim::sim
