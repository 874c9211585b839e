#include "sim/chip/chip.h"

#include <algorithm>
#include <bit>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "isa/disassembler.h"
#include "isa/element_type.h"
#include "isa/error.h"
#include "isa/instruction_set.h"
#include "isa/layout_index.h"
#include "isa/materialize.h"
#include "isa/program_check.h"
#include "isa/shape.h"
#include "sim/config/derived.h"

namespace tpusim::sim {
namespace {

uint64_t BusyCycles(const sc_core::sc_time& busy, double clock_mhz) {
  const models::ClockDomain clock(clock_mhz);
  uint64_t cycles = clock.ToCycles(busy);
  if (clock.ToTime(cycles) < busy) ++cycles;
  return cycles;
}

std::string Where(const isa::Program& program, std::string_view what, const std::string& name) {
  return "program '" + program.name() + "': " + std::string(what) + " '" + name + "'";
}

}  // namespace

ChipParams ChipParamsFromConfig(const ArchConfig& config) {
  const TensorCoreConfig& core = config.tensor_core();
  const double clock_mhz = core.clock_mhz();
  ChipParams p;
  p.hbm.capacity_bytes = MibToBytes(config.hbm().capacity_mib());
  p.hbm.channel_count = config.hbm().channel_count();
  p.hbm.interleave_bytes = config.hbm().interleave_bytes();
  p.hbm.fold_channel_stripes = config.hbm().fold_channel_stripes();
  p.hbm.channel_bandwidth_gbps = config.hbm().channel_bandwidth_gbps();
  p.hbm.access_latency_ns = config.hbm().access_latency_ns();

  p.vmem.capacity_bytes = MibToBytes(core.vmem().capacity_mib());
  p.vmem.bank_count = core.vmem().bank_count();
  // Not in the ArchConfig: one vreg row (4 x lanes bytes) spread over the banks (docs/timing.md).
  const uint64_t interleave = uint64_t{4} * core.vpu().lane_count() / std::max(1u, core.vmem().bank_count());
  p.vmem.bank_interleave_bytes = interleave == 0 ? 1 : std::bit_floor(interleave);
  p.vmem.read_bandwidth_gbps = core.vmem().read_bandwidth_gbps();
  p.vmem.write_bandwidth_gbps = core.vmem().write_bandwidth_gbps();
  p.vmem.access_latency_cycles = core.vmem().access_latency_cycles();
  p.vmem.clock_mhz = clock_mhz;

  p.smem.capacity_bytes = KibToBytes(core.scalar_core().smem_capacity_kib());
  // Not in the ArchConfig: one 32-bit word per scalar issue slot per cycle (docs/timing.md).
  p.smem.bandwidth_bytes_per_cycle = 4.0 * core.scalar_core().issue_instructions_per_cycle();
  p.smem.access_latency_cycles = core.scalar_core().smem_latency_cycles();
  p.smem.clock_mhz = clock_mhz;

  p.has_cmem = config.has_cmem();
  if (p.has_cmem) {
    p.cmem.capacity_bytes = MibToBytes(config.cmem().capacity_mib());
    p.cmem.read_bandwidth_gbps = config.cmem().read_bandwidth_gbps();
    p.cmem.write_bandwidth_gbps = config.cmem().write_bandwidth_gbps();
    p.cmem.access_latency_ns = config.cmem().access_latency_ns();
  }
  p.host.capacity_bytes = MibToBytes(config.host().capacity_mib());
  p.host.access_latency_ns = config.host().access_latency_ns();
  p.pcie.bandwidth_gbps = config.pcie().bandwidth_gbps();
  p.pcie.latency_ns = config.pcie().latency_ns();
  p.ici.link_bandwidth_gbps = config.ici().link_bandwidth_gbps();
  p.ici.ring_link_count = config.ici().ring_link_count();
  p.ici.latency_ns = config.ici().latency_ns();

  p.dma.engine_count = core.dma().engine_count();
  p.dma.max_outstanding_requests = core.dma().max_outstanding_requests();
  p.dma.burst_bytes = core.dma().burst_bytes();
  p.dma.issue_latency_cycles = core.dma().issue_latency_cycles();
  p.dma.queue_depth_entries = core.scalar_core().dma_queue_depth_entries();
  p.dma.clock_mhz = clock_mhz;

  p.scalar_core.issue_instructions_per_cycle = core.scalar_core().issue_instructions_per_cycle();
  p.scalar_core.branch_cost_cycles = core.scalar_core().branch_cost_cycles();
  p.scalar_core.smem_latency_cycles = core.scalar_core().smem_latency_cycles();
  p.scalar_core.clock_mhz = clock_mhz;
  p.semaphore_count = core.scalar_core().semaphore_count();

  const VpuConfig& vpu = core.vpu();
  p.vpu.sublanes = vpu.sublane_count();
  p.vpu.lanes = vpu.lane_count();
  p.vpu.issue_instructions_per_cycle = vpu.issue_instructions_per_cycle();
  p.vpu.elementwise = {vpu.elementwise().latency_cycles(), vpu.elementwise().throughput_vregs_per_cycle()};
  p.vpu.transcendental = {vpu.transcendental().latency_cycles(),
                          vpu.transcendental().throughput_vregs_per_cycle()};
  p.vpu.cross_lane = {vpu.cross_lane().latency_cycles(), vpu.cross_lane().throughput_vregs_per_cycle()};
  p.vector_register_count = vpu.vector_register_count();
  const MxuConfig& mxu = core.mxu();
  p.mxu_count = mxu.count();
  p.mxu.rows = mxu.row_count();
  p.mxu.columns = mxu.column_count();
  p.mxu.sublanes = vpu.sublane_count();
  p.mxu.lanes = vpu.lane_count();
  p.mxu.pipeline_fill_cycles = mxu.pipeline_fill_cycles();
  p.mxu.pipeline_drain_cycles = mxu.pipeline_drain_cycles();
  p.mxu.weight_load_cycles = mxu.weight_load_cycles();
  p.mxu.weight_buffer_count = mxu.weight_buffer_count();
  p.mxu.bf16_passes = mxu.bf16_passes();
  p.mxu.f32_passes = mxu.f32_passes();
  p.mxu.f16_passes = mxu.f16_passes();
  p.mxu.s8_passes = mxu.s8_passes();
  p.mxu.f8_passes = mxu.f8_passes();
  p.mxu.accumulator_rows = mxu.accumulator_rows();
  p.vpu_queue_depth_entries = core.scalar_core().vpu_queue_depth_entries();
  p.mxu_queue_depth_entries = core.scalar_core().mxu_queue_depth_entries();
  p.tensor_core_count = config.tensor_core_count();
  p.core_sync_cycles = core.scalar_core().core_sync_cycles();
  return p;
}

isa::Target MachineTarget(const ArchConfig& config) {
  const TensorCoreConfig& core = config.tensor_core();
  isa::Target target;
  target.set_sublanes(core.vpu().sublane_count());
  target.set_lanes(core.vpu().lane_count());
  target.set_vector_registers(core.vpu().vector_register_count());
  target.set_mxu_count(core.mxu().count());
  target.set_mxu_rows(core.mxu().row_count());
  target.set_mxu_columns(core.mxu().column_count());
  target.set_dma_engines(core.dma().engine_count());
  target.set_semaphores(core.scalar_core().semaphore_count());
  target.set_has_cmem(config.has_cmem());
  target.set_mxu_accumulator_rows(core.mxu().accumulator_rows());
  target.set_tensor_cores(config.tensor_core_count());
  return target;
}

Chip::Chip(const ArchConfig& config, uint64_t max_instructions)
    : config_(config), params_(ChipParamsFromConfig(config)) {
  params_.scalar_core.max_instructions = max_instructions;
  hbm_ = std::make_unique<models::Hbm>("hbm", params_.hbm);
  if (params_.has_cmem) cmem_ = std::make_unique<models::Cmem>("cmem", params_.cmem);
  host_ = std::make_unique<models::HostMemory>("host", params_.host, params_.pcie);
  // The ICI window: a collective sends and receives pieces of HBM arrays, so HBM's size is enough.
  ici_ = std::make_unique<models::IciLink>("ici", params_.ici, params_.hbm.capacity_bytes);
  cores_.resize(std::max(params_.tensor_core_count, 1u));
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    Core& core = cores_[c];
    // Core 0 keeps the single-core names; SystemC names take no dots.
    const std::string prefix = c == 0 ? "" : "core" + std::to_string(c) + "_";
    core.vmem = std::make_unique<models::Vmem>(prefix + "vmem", params_.vmem);
    core.smem = std::make_unique<models::Smem>(prefix + "smem", params_.smem);
    core.memories[isa::MEMORY_SPACE_HBM] = hbm_.get();
    core.memories[isa::MEMORY_SPACE_VMEM] = core.vmem.get();
    core.memories[isa::MEMORY_SPACE_SMEM] = core.smem.get();
    core.memories[isa::MEMORY_SPACE_CMEM] = cmem_.get();
    core.memories[isa::MEMORY_SPACE_HOST] = host_.get();
    core.memories[isa::MEMORY_SPACE_ICI] = ici_.get();
    std::vector<models::Semaphore*> semaphores;
    for (uint32_t i = 0; i < params_.semaphore_count; ++i) {
      core.semaphores.push_back(std::make_unique<models::Semaphore>(prefix + "sem" + std::to_string(i)));
      semaphores.push_back(core.semaphores.back().get());
    }
    core.dma = std::make_unique<models::DmaUnit>(prefix + "dma", params_.dma);
    core.scalar_core = std::make_unique<models::ScalarCore>(prefix + "scalar_core", params_.scalar_core,
                                                            core.memories, std::move(semaphores), core.dma.get());
    ResetUnits(core, false);  // validates the VPU and MXU parameters
  }
}

void Chip::ResetUnits(Core& core, bool timing_only) {
  core.registers = std::make_unique<models::VectorRegisterFile>(params_.vector_register_count, params_.vpu.sublanes,
                                                                params_.vpu.lanes);
  core.vpu = std::make_unique<models::Vpu>(params_.vpu, *core.registers);
  core.vpu->set_timing_only(timing_only);
  core.mxus.clear();
  models::TensorCoreUnits units;
  units.registers = core.registers.get();
  units.vpu = core.vpu.get();
  for (uint32_t i = 0; i < params_.mxu_count; ++i) {
    core.mxus.push_back(std::make_unique<models::Mxu>(params_.mxu));
    core.mxus.back()->set_timing_only(timing_only);
    units.mxus.push_back(core.mxus.back().get());
  }
  units.vpu_queue_depth_entries = params_.vpu_queue_depth_entries;
  units.mxu_queue_depth_entries = params_.mxu_queue_depth_entries;
  core.scalar_core->AttachUnits(units);
  core.scalar_core->set_timing_only(timing_only);
  core.dma->set_timing_only(timing_only);
}

Chip::~Chip() = default;

void Chip::Load(const isa::Program& program, const std::map<std::string, isa::NpyArray>& inputs,
                uint32_t running) {
  isa::ValidateProgram(program);
  try {
    isa::CheckTargetCompatible(program.target(), MachineTarget(config_));
  } catch (const Error& error) {
    throw Error("program '" + program.name() + "' does not fit config '" + config_.name() + "': " + error.what());
  }
  // An MXU input type the config gives no passes is refused before anything runs.
  for (int pc = 0; pc < program.instructions_size(); ++pc) {
    const isa::InstructionInfo* info = isa::FindInstruction(program.instructions(pc).opcode());
    if (info == nullptr || !info->mxu_type) continue;
    if (models::PassesFor(params_.mxu, *info->mxu_type) == 0) {
      throw Error("program '" + program.name() + "' does not fit config '" + config_.name() + "': pc " +
                  std::to_string(pc) + " (`" + isa::DisassembleInstruction(program.instructions(pc)) +
                  "`) gives the MXU " + std::string(isa::ElementTypeName(*info->mxu_type)) +
                  " input, and this MXU takes none (tensor_core.mxu." +
                  std::string(models::PassesFieldFor(*info->mxu_type)) + " is 0)");
    }
  }
  const auto memory_of = [&](isa::MemorySpace space, const std::string& what) -> models::Memory& {
    models::Memory* found = memory(space);
    if (found == nullptr) throw Error(what + ": the machine has no " + std::string(isa::MemorySpaceName(space)));
    return *found;
  };
  // A core's own memory gets its copy in every running core; a shared one once.
  const auto write = [&](isa::MemorySpace space, uint64_t address, std::span<const uint8_t> bytes,
                         const std::string& what) {
    memory_of(space, what);  // refuses a space the machine lacks, naming `what`
    const bool own = space == isa::MEMORY_SPACE_VMEM || space == isa::MEMORY_SPACE_SMEM;
    for (uint32_t c = 0; c < (own ? running : 1); ++c) cores_[c].memories.at(space)->Write(address, bytes);
  };
  for (const isa::Buffer& buffer : program.buffers()) {
    const std::string what = Where(program, "buffer", buffer.name());
    memory_of(buffer.space(), what).CheckRange(what, buffer.address(), buffer.size_bytes());
  }
  for (const isa::DataSegment& segment : program.data()) {
    const std::string what = Where(program, "data segment", segment.name());
    memory_of(segment.space(), what).CheckRange(what, segment.address(), segment.data().size());
    write(segment.space(), segment.address(),
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(segment.data().data()), segment.data().size()), what);
  }
  for (const auto& [name, array] : inputs) {
    const auto it = std::find_if(program.buffers().begin(), program.buffers().end(),
                                 [&](const isa::Buffer& b) { return b.name() == name; });
    if (it == program.buffers().end() || it->role() != isa::BUFFER_ROLE_PARAMETER) {
      throw Error("input '" + name + "': program '" + program.name() + "' has no parameter buffer of that name");
    }
    const isa::Shape shape = isa::ParseShape(it->shape());
    if (array.type != shape.element_type || array.dims != shape.dims) {
      isa::Shape given = isa::Shape::Array(array.type, array.dims);
      throw Error("input '" + name + "': the array is " + isa::ToString(given) + " but the buffer holds " +
                  isa::ToString(shape));
    }
    const std::vector<uint8_t> image = isa::Materialize(shape, array.data);
    write(it->space(), it->address(), image, name);
  }
}

std::vector<std::string> Chip::dma_engine_names(uint32_t core) const {
  std::vector<std::string> names;
  for (const models::DmaEngineStats& engine : cores_.at(core).dma->stats()) names.push_back(engine.name);
  return names;
}

void Chip::clear_observers() {
  for (uint32_t c = 0; c < cores_.size(); ++c) set_observer(c, nullptr);
}

void Chip::set_observer(uint32_t core_index, models::ActivityObserver* observer) {
  Core& core = cores_.at(core_index);
  core.scalar_core->set_observer(observer);
  observed_.resize(cores_.size(), false);
  observed_[core_index] = observer != nullptr;
  if (observer == nullptr) {
    core.dma->set_completion_callback(nullptr);
    return;
  }
  std::map<std::string, uint32_t> engine_index;  // by engine name
  const std::vector<models::DmaEngineStats> engines = core.dma->stats();
  for (std::size_t i = 0; i < engines.size(); ++i) engine_index[engines[i].name] = static_cast<uint32_t>(i);
  core.dma->set_completion_callback([this, observer, engine_index](const models::DmaCompletion& completion) {
    models::DmaDone done;
    done.engine = engine_index.at(completion.engine);
    done.started_ps = static_cast<uint64_t>((completion.started - run_start_).value());
    done.completed_ps = static_cast<uint64_t>((completion.completed - run_start_).value());
    done.payload_bytes = completion.payload_bytes;
    observer->OnDmaCompleted(done);
  });
}

std::unique_ptr<SegmentReplay> Chip::MakeSegmentReplay(uint32_t running, bool replay) {
  std::vector<ReplayCore> parts;
  for (uint32_t c = 0; c < running; ++c) {
    Core& core = cores_[c];
    ReplayCore& part = parts.emplace_back();
    part.scalar_core = core.scalar_core.get();
    part.vpu = core.vpu.get();
    for (const auto& mxu : core.mxus) part.mxus.push_back(mxu.get());
    part.dma = core.dma.get();
    for (const auto& semaphore : core.semaphores) part.semaphores.push_back(semaphore.get());
    part.memories = core.memories;
  }
  // Every memory once: the shared ones and core 0's own, then the other cores' own.
  std::vector<models::Memory*> memories;
  for (models::Memory* memory : cores_[0].memories) {
    if (memory != nullptr) memories.push_back(memory);
  }
  for (std::size_t c = 1; c < cores_.size(); ++c) {
    memories.push_back(cores_[c].vmem.get());
    memories.push_back(cores_[c].smem.get());
  }
  return std::make_unique<SegmentReplay>(std::move(parts), std::move(memories), replay);
}

TensorCoreReport Chip::CoreReport(const Core& core) const {
  const double clock_mhz = config_.tensor_core().clock_mhz();
  TensorCoreReport report;
  report.scalar_core = core.scalar_core->stats();
  report.vpu = core.vpu->stats();
  for (const auto& mxu : core.mxus) report.mxus.push_back(mxu->stats());
  for (const models::DmaEngineStats& engine : core.dma->stats()) {
    report.dma_engines.push_back(
        {engine.name, engine.transfers, engine.payload_bytes, BusyCycles(engine.busy, clock_mhz)});
  }
  return report;
}

RunReport Chip::Run(const isa::Program& program, const std::map<std::string, isa::NpyArray>& inputs,
                    bool timing_only) {
  // The program's cores (CheckTargetCompatible in Load keeps them within the chip's).
  const uint32_t running = isa::TensorCores(program.target());
  Load(program, inputs, running);
  barrier_ = std::make_unique<models::CoreBarrier>(
      running, models::ClockDomain(config_.tensor_core().clock_mhz()).ToTime(params_.core_sync_cycles));
  for (uint32_t c = 0; c < cores_.size(); ++c) {
    ResetUnits(cores_[c], timing_only);
    cores_[c].scalar_core->set_core(c, barrier_.get());
  }
  const bool observed = std::any_of(observed_.begin(), observed_.end(), [](bool o) { return o; });
  replay_ = MakeSegmentReplay(running, timing_only && reuse_ && !observed);
  for (uint32_t c = 0; c < cores_.size(); ++c) {
    cores_[c].scalar_core->set_sync_hooks(c < running ? replay_.get() : nullptr);
  }
  const sc_core::sc_time start = sc_core::sc_time_stamp();
  run_start_ = start;
  std::map<std::string, uint32_t> label_pcs;
  for (const isa::Label& label : program.labels()) label_pcs[label.name()] = label.instruction();
  std::vector<uint32_t> marked_pcs;
  for (const std::string& label : marked_labels_) {
    const auto it = label_pcs.find(label);
    if (it == label_pcs.end()) throw Error("program '" + program.name() + "' has no label '" + label + "' to mark");
    marked_pcs.push_back(it->second);
  }
  models::ScalarCore& core0 = *cores_[0].scalar_core;
  core0.set_marked_pcs(marked_pcs);
  for (uint32_t c = 0; c < running; ++c) cores_[c].scalar_core->Start(program);
  if (!progress_) {
    sc_core::sc_start();
  } else {
    // At least once: the first sc_start initializes the processes, which schedule the activity.
    const sc_core::sc_time slice(kProgressSliceUs, sc_core::SC_US);
    do {
      sc_core::sc_start(slice, sc_core::SC_EXIT_ON_STARVATION);
      progress_({static_cast<double>((sc_core::sc_time_stamp() - start).value()) / 1e6, core0.marks().size()});
    } while (sc_core::sc_pending_activity());
  }
  replay_->DetachLogs();  // a segment still being recorded ends with the run
  for (uint32_t c = 0; c < running; ++c) {
    const models::ScalarCore& core = *cores_[c].scalar_core;
    if (core.state() == models::ScalarCore::State::kFaulted) throw Error(core.fault());
  }
  for (uint32_t c = 0; c < running; ++c) {
    const models::ScalarCore& core = *cores_[c].scalar_core;
    if (core.state() == models::ScalarCore::State::kWaitingSemaphore ||
        core.state() == models::ScalarCore::State::kWaitingCores) {
      throw Error(core.DescribeDeadlock());
    }
    if (core.state() != models::ScalarCore::State::kHalted || !cores_[c].dma->idle()) {
      throw Error("program '" + program.name() + "': the simulation stopped before the program ended");
    }
  }
  const double clock_mhz = config_.tensor_core().clock_mhz();
  RunReport report;
  report.program = program.name();
  report.reuse = replay_->stats();
  const sc_core::sc_time elapsed = sc_core::sc_time_stamp() - start;
  report.cycles = BusyCycles(elapsed, clock_mhz);
  report.device_time_us = static_cast<double>(elapsed.value()) / 1e6;  // ps -> us
  for (const Core& core : cores_) report.cores.push_back(CoreReport(core));
  // Each label's cycles, from the marks grouped by pc once (a module has a begin and an end label
  // per kernel, and as many marks: looking each label up in every mark was quadratic).
  std::unordered_map<uint32_t, std::vector<uint64_t>> cycles_at;
  for (const models::ScalarCore::Mark& mark : core0.marks()) cycles_at[mark.pc].push_back(mark.cycle);
  for (const std::string& label : marked_labels_) {
    std::vector<uint64_t>& cycles = report.label_cycles[label];
    const auto it = cycles_at.find(label_pcs.at(label));
    if (it != cycles_at.end()) cycles = it->second;
  }
  const auto add_memory = [&](const models::Memory& memory, const models::ScalarCoreStats* scalar) {
    const models::MemoryStats stats = memory.stats();
    MemoryReport entry{stats.name, stats.bytes_read, stats.bytes_written, 0};
    for (const models::ResourceStats& resource : stats.resources) {
      entry.busy_cycles = std::max(entry.busy_cycles, BusyCycles(resource.busy, clock_mhz));
    }
    // Scalar loads and stores do not go through the SMEM timing model; count their bytes.
    if (scalar != nullptr) {
      entry.bytes_read += scalar->smem_bytes_read;
      entry.bytes_written += scalar->smem_bytes_written;
    }
    report.memories.push_back(entry);
  };
  // Core 0's memories in memory-space order (the single-core report), then the other cores' own.
  for (models::Memory* memory : cores_[0].memories) {
    if (memory == nullptr) continue;
    add_memory(*memory, memory == cores_[0].smem.get() ? &report.cores[0].scalar_core : nullptr);
  }
  for (std::size_t c = 1; c < cores_.size(); ++c) {
    add_memory(*cores_[c].vmem, nullptr);
    add_memory(*cores_[c].smem, &report.cores[c].scalar_core);
  }
  if (timing_only) return report;
  for (const isa::Buffer& buffer : program.buffers()) {
    if (buffer.role() != isa::BUFFER_ROLE_OUTPUT) continue;
    const isa::Shape shape = isa::ParseShape(buffer.shape());
    const isa::LayoutMap map(shape);
    const std::vector<uint8_t> image =
        memory(buffer.space())->Read(buffer.address(), static_cast<uint64_t>(map.byte_size()));
    OutputArray output{buffer.name(), buffer.index(), {shape.element_type, shape.dims, {}}};
    output.array.data = isa::Dematerialize(shape, image);
    report.outputs.push_back(std::move(output));
  }
  std::sort(report.outputs.begin(), report.outputs.end(),
            [](const OutputArray& a, const OutputArray& b) { return a.index < b.index; });
  return report;
}

}  // namespace tpusim::sim
