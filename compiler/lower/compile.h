// The compiler's entry point: an HLO module -> an isa::Program for one TensorCore, plus what the
// run command needs to report on it (the kernels, where parameters and outputs live).
//
// The program's shape (docs/compiler.md): the entry computation's parameters arrive in host
// memory (the program's parameter buffers, in their device layouts) and are copied to HBM over
// PCIe; then one kernel per instruction that computes something runs, in schedule order, each
// waiting for its own DMAs and vector work before the next begins; then the outputs are copied
// back to host memory (the program's output buffers). Labels `device_begin` and `device_end`
// bracket the kernels, and each kernel's work lies between its KernelInfo's two labels.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lower/accumulations.h"
#include "compiler/lower/kernel_tuner.h"
#include "compiler/lower/vpu_issue_clock.h"
#include "compiler/passes/buffer_assignment.h"
#include "isa/disassembler.h"
#include "isa/program.pb.h"
#include "isa/shape.h"

namespace tpusim::compiler {

// The MXUs' timing, for cost models that weigh a dot's MXU work against its HBM traffic (the
// megacore split, DotCoreSlice) and for placing weight pushes: the TensorCore's clock, one weight
// tile's load, the weight buffers, and the passes a row of each input type takes
// (tensor_core.clock_mhz and tensor_core.mxu). clock_mhz 0: unknown.
struct MxuRates {
  double clock_mhz = 0;
  double weight_load_cycles = 0;
  double pipeline_cycles = 0;  // a row's way through the array: fill plus drain
  int weight_buffers = 2;
  double bf16_passes = 1;
  double f16_passes = 1;
  double f32_passes = 1;
  // The passes of a dot's input type (bf16 for the types the dot kernel takes at its rate).
  double PassesFor(isa::ElementType type) const {
    return type == isa::ElementType::kF32 ? f32_passes : type == isa::ElementType::kF16 ? f16_passes : bf16_passes;
  }
  // An MXU's cycles for one K block of `rows` rows of `type`: their passes, at least the block's
  // weight tile's load (the next tile loads during them).
  double KBlockCycles(double rows, isa::ElementType type) const {
    return std::max(weight_load_cycles, rows * PassesFor(type));
  }
  // A dot kernel job's, one after another: its K blocks, and where a job's rows drain before the
  // next job's pass (`drains`), their way through the array.
  double JobCycles(double k_blocks, double rows, isa::ElementType type, bool drains) const {
    return k_blocks * KBlockCycles(rows, type) + (drains ? pipeline_cycles : 0);
  }
  double Ns(double cycles) const { return cycles * 1e3 / clock_mhz; }
};

// The target's limits a kernel may need more of than a machine has.
enum class TargetLimit { kSemaphores, kVectorRegisters, kMxuShape, kMxuAccumulatorRows };
inline constexpr int kTargetLimitCount = 4;

// What the compiler needs to know of the machine (sim/ fills it from the ArchConfig).
struct CompileOptions {
  isa::Target target;
  // What the user set each TargetLimit as, for the errors of kernels that need more (sim/: the
  // ArchConfig's field paths); empty: the `.target` directive's names (LimitNote).
  std::array<std::string, kTargetLimitCount> limit_names;
  uint64_t hbm_capacity_bytes = 0;
  // What the user set the HBM and host capacities as (sim/: hbm.capacity_mib, host.capacity_mib),
  // for the errors of modules that need more (CapacityNote); empty: not named.
  CapacityNames capacity_names;
  uint64_t vmem_capacity_bytes = 0;
  uint64_t smem_capacity_bytes = 0;
  uint64_t host_capacity_bytes = 0;
  // HBM's bandwidth (all channels) and access latency, for sizing the blocks kernels stream: the
  // bytes in flight that keep HBM busy are their product (Little's law). 0: unknown, the kernels'
  // largest blocks.
  double hbm_bytes_per_ns = 0;
  double hbm_latency_ns = 0;
  // One DMA engine's bytes in flight: its outstanding requests times their size (DmaConfig's
  // max_outstanding_requests x burst_bytes). A transfer larger than this takes more than one HBM
  // round trip on one engine, where spread over the engines it takes fewer; kernels split such
  // transfers (SplitOverEngines). 0: unknown, transfers stay whole.
  uint64_t dma_engine_bytes_in_flight = 0;
  // When the VPU's instructions issue and their results are ready (tensor_core.vpu and VMEM's
  // latency), for kernels that order their vector code by it (VpuIssueClock). All zero: unknown,
  // kernels keep their own order.
  VpuTiming vpu_timing;
  MxuRates mxu_rates;
  // The simulated device: its global id among the module's replica_count x num_partitions devices
  // (partition d % num_partitions of replica d / num_partitions), which partition-id and replica-id
  // return and which picks its collectives' groups.
  int64_t device_id = 0;
  // The program runs in timing-only mode (no data moves), so what has no data to give may compile:
  // a collective over more than one device needs the other devices' data, which a one-device
  // simulation does not have; when true it charges its ring's ICI time and moves no meaningful
  // data, else it is refused (compiler/lower/collective_kernel.h). A constant whose value the module
  // does not hold (elided `{...}`) is placed with no data, else refused.
  bool timing_only = false;
  // Runs the candidates of kernels whose estimates cannot tell them apart (kernel_tuner.h); shared
  // by every compile with these options. Null: the estimates choose.
  std::shared_ptr<KernelTuner> kernel_tuner;
};

// One HLO instruction (or fusion) that became a kernel.
struct KernelInfo {
  std::string name;       // the instruction's
  std::string opcode;     // "fusion", "add", ...
  std::string category;   // the XLA profiler's hlo_category: "elementwise", "convolution", "data formatting", ...
  std::string long_name;  // the instruction's HLO text
  std::string begin_label;
  std::string end_label;
  double flops = 0;             // as XLA's cost analysis counts them
  uint64_t bytes_accessed = 0;  // operands read plus results written, logical sizes
};

// An entry parameter or output leaf: its device copy (in HBM, or in host memory for a host array,
// S(5)) and its host buffer.
struct ModuleArray {
  std::string name;         // the HLO parameter's name, or "output.N"
  int index = 0;            // parameter number, or output leaf number
  isa::Shape shape;         // with its device layout
  std::string space;        // where the device copy is: "hbm" or "host"
  uint64_t address = 0;     // of the device copy in that memory
  uint64_t size_bytes = 0;
  std::string host_buffer;  // the program buffer holding it in host memory
  isa::MemorySpace memory_space() const { return space == "host" ? isa::MEMORY_SPACE_HOST : isa::MEMORY_SPACE_HBM; }
};

struct CompiledModule {
  isa::Program program;
  std::vector<isa::Comment> comments;  // what each part of the program is for (ProgramText)
  std::vector<KernelInfo> kernels;
  std::vector<ModuleArray> parameters;
  std::vector<ModuleArray> outputs;
  uint64_t hbm_peak_bytes = 0;
  uint64_t host_peak_bytes = 0;  // highest host address in use: parameters, outputs and host arrays
  // The entry's instruction with the most HBM bytes live, and the largest buffers there (a loop's
  // or call's region is one buffer: its computation's values).
  LivePeak hbm_live_peak;
  // Per output leaf, what it is accumulated from in another order than XLA's evaluator (taken
  // after the fused-attention expansion, before the batch-norm expansion and before any pass
  // changes an accumulation's depth: the contraction split sums a dot's K in slices).
  std::vector<std::vector<Accumulation>> output_accumulations;
};

// The program as `.tpuasm` text with its comments (what `tpusim compile` writes).
std::string ProgramText(const CompiledModule& compiled);

// Compiles `module` (parsed and verified), leaving it as it is: the passes rewrite a copy
// (hlo::Module::Clone), whose layouts are assigned here. Throws tpusim::Error for an operation the
// compiler cannot lower, naming the instruction, its shape and its source line, and for a module
// that does not fit the machine.
CompiledModule Compile(const hlo::Module& module, const CompileOptions& options);

}  // namespace tpusim::compiler
