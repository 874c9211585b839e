// sc_spawn needs this before the first SystemC include.
#define SC_INCLUDE_DYNAMIC_PROCESSES

#include "models/scalar_core.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "isa/disassembler.h"
#include "isa/error.h"
#include "isa/instruction_set.h"
#include "isa/layout_index.h"
#include "models/vmem.h"

namespace tpusim::models {
namespace {

using isa::Opcode;

// A fault in the instruction being executed: Step() adds the pc and the instruction.
struct Fault : Error {
  using Error::Error;
};

// Where vld's and vst's operands are, looked up by name once (OperandIndex compares names).
struct VectorMemoryOperands {
  int vreg = -1;
  int mask = -1;  // vst only
  int stride = -1;
  int sublanes = -1;
  int addr = -1;
};

VectorMemoryOperands FindVectorMemoryOperands(isa::Opcode opcode) {
  const isa::InstructionInfo& info = *isa::FindInstruction(opcode);
  const bool load = opcode == isa::OPCODE_VLD;
  VectorMemoryOperands at;
  at.vreg = isa::OperandIndex(info, load ? "vd" : "va");
  if (!load) at.mask = isa::OperandIndex(info, "mask");
  at.stride = isa::OperandIndex(info, "stride");
  at.sublanes = isa::OperandIndex(info, "sublanes");
  at.addr = isa::OperandIndex(info, "addr");
  return at;
}

}  // namespace

void Validate(const ScalarCoreParams& params) {
  if (params.issue_instructions_per_cycle < 1 || params.issue_instructions_per_cycle > 16) {
    throw Error("scalar core: issue_instructions_per_cycle must be in [1, 16], got " +
                std::to_string(params.issue_instructions_per_cycle));
  }
  if (!(params.clock_mhz > 0)) throw Error("scalar core: clock_mhz must be > 0");
  if (params.max_instructions == 0) throw Error("scalar core: max_instructions must be > 0");
}

ScalarCoreStats CountsSince(const ScalarCoreStats& now, const ScalarCoreStats& before) {
  ScalarCoreStats delta;
  delta.instructions = now.instructions - before.instructions;
  delta.dispatched_dma = now.dispatched_dma - before.dispatched_dma;
  delta.dispatched_vpu = now.dispatched_vpu - before.dispatched_vpu;
  delta.dispatched_mxu = now.dispatched_mxu - before.dispatched_mxu;
  delta.taken_branches = now.taken_branches - before.taken_branches;
  delta.smem_bytes_read = now.smem_bytes_read - before.smem_bytes_read;
  delta.smem_bytes_written = now.smem_bytes_written - before.smem_bytes_written;
  delta.issue_cycles = now.issue_cycles - before.issue_cycles;
  delta.branch_stall_cycles = now.branch_stall_cycles - before.branch_stall_cycles;
  delta.smem_stall_cycles = now.smem_stall_cycles - before.smem_stall_cycles;
  delta.semaphore_stall_cycles = now.semaphore_stall_cycles - before.semaphore_stall_cycles;
  delta.dispatch_stall_cycles = now.dispatch_stall_cycles - before.dispatch_stall_cycles;
  delta.core_sync_stall_cycles = now.core_sync_stall_cycles - before.core_sync_stall_cycles;
  return delta;
}

void AddCounts(ScalarCoreStats& to, const ScalarCoreStats& delta) {
  to.instructions += delta.instructions;
  to.dispatched_dma += delta.dispatched_dma;
  to.dispatched_vpu += delta.dispatched_vpu;
  to.dispatched_mxu += delta.dispatched_mxu;
  to.taken_branches += delta.taken_branches;
  to.smem_bytes_read += delta.smem_bytes_read;
  to.smem_bytes_written += delta.smem_bytes_written;
  to.issue_cycles += delta.issue_cycles;
  to.branch_stall_cycles += delta.branch_stall_cycles;
  to.smem_stall_cycles += delta.smem_stall_cycles;
  to.semaphore_stall_cycles += delta.semaphore_stall_cycles;
  to.dispatch_stall_cycles += delta.dispatch_stall_cycles;
  to.core_sync_stall_cycles += delta.core_sync_stall_cycles;
}

ScalarCore::ScalarCore(std::string name, const ScalarCoreParams& params, const MemoryMap& memories,
                       std::vector<Semaphore*> semaphores, DmaUnit* dma)
    : name_(std::move(name)),
      params_(params),
      clock_(params.clock_mhz),
      memories_(memories),
      semaphores_(std::move(semaphores)),
      dma_(dma),
      // VMEM serves the vector unit on its own ports (models/vmem.h); another memory in the VMEM
      // slot (unit tests) serves it on its only ones.
      vector_vmem_(dynamic_cast<Vmem*>(memories_[isa::MEMORY_SPACE_VMEM])) {
  Validate(params_);
}

void ScalarCore::AttachUnits(const TensorCoreUnits& units) {
  if (state_ == State::kRunning || state_ == State::kWaitingSemaphore || state_ == State::kWaitingCores) {
    throw Error(name_ + ": AttachUnits while a program is running");
  }
  if (units.vpu != nullptr && units.registers == nullptr) {
    throw Error(name_ + ": a VPU needs its vector register file");
  }
  if (units.vpu_queue_depth_entries == 0 || units.mxu_queue_depth_entries == 0) {
    throw Error(name_ + ": VPU and MXU queue depths must be >= 1");
  }
  units_ = units;
}

void ScalarCore::Start(const isa::Program& program) {
  if (state_ == State::kRunning || state_ == State::kWaitingSemaphore || state_ == State::kWaitingCores) {
    throw Error(name_ + ": Start while a program is running");
  }
  program_ = &program;
  std::unordered_map<std::string_view, uint32_t> labels;
  for (const isa::Label& label : program.labels()) labels[label.name()] = label.instruction();
  const int count = program.instructions_size();
  label_targets_.assign(count, 0);
  infos_.assign(count, nullptr);
  dma_shapes_.clear();
  dma_shapes_.resize(count);
  for (int i = 0; i < count; ++i) {
    infos_[i] = isa::FindInstruction(program.instructions(i).opcode());
    for (const isa::Operand& operand : program.instructions(i).operands()) {
      if (operand.value_case() != isa::Operand::kLabel) continue;
      const auto it = labels.find(operand.label());
      if (it == labels.end()) throw Error(name_ + ": undefined label '" + operand.label() + "'");
      label_targets_[i] = it->second;
    }
  }
  marked_.assign(count, false);
  for (uint32_t pc : marked_pcs_) {
    if (pc < marked_.size()) marked_[pc] = true;
  }
  marks_.clear();
  loops_.Start(program, memories_);
  branched_ = false;
  regs_.fill(0);
  reg_ready_slot_.fill(0);
  pc_ = 0;
  slot_ = 0;
  last_busy_cycle_ = UINT64_MAX;
  stats_ = {};
  vpu_starts_.clear();
  mxu_starts_.assign(units_.mxus.size(), {});
  fault_.clear();
  state_ = State::kRunning;
  start_time_ = sc_core::sc_time_stamp();
  anchor_time_ = start_time_;
  anchor_cycle_ = 0;
  sc_core::sc_spawn_options options;
  sc_core::sc_spawn([this] { Run(); }, (name_ + "_thread").c_str(), &options);
}

void ScalarCore::Run() {
  while (true) {
    const uint64_t pc = pc_;
    try {
      if (!Step()) break;
    } catch (const std::exception& error) {
      std::string where = "pc " + std::to_string(pc);
      if (pc < static_cast<uint64_t>(program_->instructions_size())) {
        where += " (`" + isa::DisassembleInstruction(program_->instructions(static_cast<int>(pc))) + "`)";
      }
      fault_ = name_ + ": fault at " + where + ": " + error.what();
      state_ = State::kFaulted;
      return;
    }
  }
  // The core stops with the halt's issue cycle; the run ends when the VPU and the MXUs have also
  // finished everything dispatched to them.
  stats_.end_cycle = RoundUpSlot(slot_) / params_.issue_instructions_per_cycle;
  slot_ = stats_.end_cycle * params_.issue_instructions_per_cycle;
  uint64_t units_done = 0;
  if (units_.vpu != nullptr) units_done = units_.vpu->stats().all_complete;
  for (const Mxu* mxu : units_.mxus) units_done = std::max(units_done, mxu->quiescent_cycle());
  stats_.units_done_cycle = units_done;
  SyncToCycle(std::max(stats_.end_cycle, units_done));
  state_ = State::kHalted;
}

uint64_t ScalarCore::RoundUpSlot(uint64_t slot) const {
  const uint64_t k = params_.issue_instructions_per_cycle;
  return (slot + k - 1) / k * k;
}

void ScalarCore::IssueSlot() {
  const uint64_t cycle = Cycle();
  if (cycle != last_busy_cycle_) {
    ++stats_.issue_cycles;
    last_busy_cycle_ = cycle;
  }
  ++slot_;
  ++stats_.instructions;
  if (stats_.instructions > params_.max_instructions) {
    throw Fault("more than " + std::to_string(params_.max_instructions) +
                " instructions executed (a loop that never ends? --max-instructions raises the limit)");
  }
}

sc_core::sc_time ScalarCore::TimeOfCycle(uint64_t cycle) const {
  return cycle >= anchor_cycle_ ? anchor_time_ + clock_.ToTime(cycle - anchor_cycle_)
                                : anchor_time_ - clock_.ToTime(anchor_cycle_ - cycle);
}

void ScalarCore::Reanchor() {
  // The cycle the core resumes in keeps its time; the cycles after it count from there, so what
  // follows depends on the time since the barrier alone, not on where the run's clock rounds.
  anchor_time_ = TimeOfCycle(Cycle());
  anchor_cycle_ = Cycle();
}

void ScalarCore::SyncToCycle(uint64_t cycle) {
  const sc_core::sc_time target = TimeOfCycle(cycle);
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (target > now) sc_core::wait(target - now);
}

void ScalarCore::CatchUpToSystemCTime(uint64_t* stall_counter) {
  const uint64_t cycle = CycleOfTime(sc_core::sc_time_stamp());  // the first whole cycle at or after now
  const uint64_t slot = cycle * params_.issue_instructions_per_cycle;
  if (slot > slot_) {
    *stall_counter += cycle - Cycle();
    slot_ = slot;
  }
}

void ScalarCore::WaitForRegisters(const isa::Instruction& instruction,
                                  const isa::InstructionInfo* info) {
  uint64_t ready = slot_;
  auto need = [&](uint32_t reg) { ready = std::max(ready, reg_ready_slot_.at(reg)); };
  for (int i = 0; i < instruction.operands_size(); ++i) {
    const isa::Operand& operand = instruction.operands(i);
    switch (operand.value_case()) {
      case isa::Operand::kSreg:
        if (info == nullptr || info->operands.at(i).access != isa::Access::kWrite) need(operand.sreg());
        break;
      case isa::Operand::kAddress:
        if (operand.address().has_reg()) need(operand.address().reg());
        break;
      case isa::Operand::kSemaphore:
        if (operand.semaphore().has_reg()) need(operand.semaphore().reg());
        break;
      case isa::Operand::kIndex:
        for (const isa::RegOffset& item : operand.index().items()) {
          if (item.has_reg()) need(item.reg());
        }
        break;
      default:
        break;
    }
  }
  if (ready > slot_) {
    stats_.smem_stall_cycles += ready / params_.issue_instructions_per_cycle - Cycle();
    slot_ = ready;
  }
}

int64_t ScalarCore::Reg(uint32_t index) const {
  const int64_t value = regs_.at(index);
  if (log_ != nullptr) log_->ReadRegister(index, value);
  return value;
}

void ScalarCore::SetReg(uint32_t index, int64_t value) {
  regs_.at(index) = value;
  if (log_ != nullptr) log_->WroteRegister(index);
}

int64_t ScalarCore::Value(const isa::Operand& operand) const {
  switch (operand.value_case()) {
    case isa::Operand::kSreg: return Reg(operand.sreg());
    case isa::Operand::kImm: return operand.imm();
    default: throw Fault("operand is neither a scalar register nor an immediate");
  }
}

int64_t ScalarCore::Value(const isa::RegOffset& value) const {
  const uint64_t base = value.has_reg() ? static_cast<uint64_t>(Reg(value.reg())) : 0;
  return static_cast<int64_t>(base + static_cast<uint64_t>(value.offset()));
}

uint64_t ScalarCore::AddressOf(const isa::Operand& operand) const {
  const isa::Address& address = operand.address();
  const uint64_t base = address.has_reg() ? static_cast<uint64_t>(Reg(address.reg())) : 0;
  return base + static_cast<uint64_t>(address.offset());
}

Semaphore& ScalarCore::SemaphoreOf(const isa::Operand& operand) {
  const int64_t number = Value(operand.semaphore());
  if (number < 0 || static_cast<uint64_t>(number) >= semaphores_.size()) {
    throw Fault("semaphore " + std::to_string(number) + " out of range (the machine has " +
                std::to_string(semaphores_.size()) + ")");
  }
  return *semaphores_[static_cast<std::size_t>(number)];
}

uint64_t ScalarCore::SmemAddress(const isa::Operand& operand, uint64_t bytes) {
  const uint64_t address = AddressOf(operand);
  if (address % bytes != 0) {
    throw Fault("SMEM address " + std::to_string(address) + " is not " + std::to_string(bytes) +
                "-byte aligned");
  }
  Memory* smem = memories_[isa::MEMORY_SPACE_SMEM];
  if (smem == nullptr) throw Fault("the machine has no SMEM");
  smem->CheckRange("scalar access", address, bytes);
  return address;
}

void ScalarCore::Branch(bool taken, const isa::Operand& /*target*/) {
  if (!taken) {
    ++pc_;
    return;
  }
  ++stats_.taken_branches;
  pc_ = label_targets_.at(pc_);
  branched_ = true;
  if (params_.branch_cost_cycles > 0) {
    slot_ = RoundUpSlot(slot_) + uint64_t{params_.branch_cost_cycles} * params_.issue_instructions_per_cycle;
    stats_.branch_stall_cycles += params_.branch_cost_cycles;
  }
}

bool ScalarCore::Step() {
  if (pc_ >= static_cast<uint64_t>(program_->instructions_size())) {
    throw Fault("ran past the last instruction (" + std::to_string(program_->instructions_size()) +
                " instructions) without halt");
  }
  const isa::Instruction& in = program_->instructions(static_cast<int>(pc_));
  // A segment ends before its core.sync's step: a replay puts the core here and the step (its
  // mark, the loop watch, the barrier) runs as it would have.
  if (hooks_ != nullptr && in.opcode() == isa::OPCODE_CORE_SYNC) hooks_->BeforeSync(core_index_);
  const bool by_branch = branched_;
  branched_ = false;
  // The cores run the same control flow on the same memory: the first one watches the loops.
  if (core_index_ == 0 && loops_.IsTop(pc_)) {
    if (std::string never = loops_.Reached(pc_, by_branch); !never.empty()) throw Fault(never);
    if (log_ != nullptr) log_->Spoil();  // a replay would hide the top from the watch
  }
  if (marked_[pc_]) {
    marks_.push_back({static_cast<uint32_t>(pc_), Cycle()});
    if (observer_ != nullptr) observer_->OnMark(static_cast<uint32_t>(pc_), Cycle());
  }
  const isa::InstructionInfo* info = infos_[pc_];  // isa::FindInstruction(in.opcode()), from Start
  if (info == nullptr) throw Fault("unknown opcode " + std::to_string(in.opcode()));
  const bool vector = info->unit == isa::Unit::kVpu || info->unit == isa::Unit::kVpuTranscendental ||
                      info->unit == isa::Unit::kVpuCrossLane;
  const bool matrix = info->unit == isa::Unit::kMxu;
  if (vector && units_.vpu == nullptr) {
    throw Fault(std::string(isa::UnitName(info->unit)) + " instruction `" + std::string(info->mnemonic) +
                "` needs a VPU, and this core has none attached");
  }
  uint32_t mxu_index = 0;
  if (matrix) {
    mxu_index = in.operands(0).mxu();
    if (mxu_index >= units_.mxus.size()) {
      throw Fault("mxu" + std::to_string(mxu_index) + " does not exist (this core has " +
                  std::to_string(units_.mxus.size()) + " MXUs attached)");
    }
  }
  WaitForRegisters(in, info);
  if (vector) WaitForQueue(vpu_starts_, units_.vpu_queue_depth_entries);
  if (matrix) WaitForQueue(mxu_starts_[mxu_index], units_.mxu_queue_depth_entries);
  const uint64_t issue_cycle = Cycle();
  issue_cycle_ = issue_cycle;
  IssueSlot();
  if (observer_ != nullptr) observer_->OnScalarInstruction(static_cast<uint32_t>(pc_), issue_cycle);
  auto op = [&](int i) -> const isa::Operand& { return in.operands(i); };
  auto set = [&](int64_t value) {
    SetReg(op(0).sreg(), value);
    ++pc_;
  };
  const auto a = [&] { return Value(op(1)); };
  const auto b = [&] { return Value(op(2)); };
  const auto ua = [&] { return static_cast<uint64_t>(Value(op(1))); };
  const auto ub = [&] { return static_cast<uint64_t>(Value(op(2))); };
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if (vector) {
    if (in.opcode() == isa::OPCODE_VLD || in.opcode() == isa::OPCODE_VST) {
      DispatchVectorMemory(in, *info);
    } else {
      DispatchVpu(in, *info);
    }
    ++stats_.dispatched_vpu;
    ++pc_;
    return true;
  }
  if (matrix) {
    DispatchMxu(in, *info);
    ++stats_.dispatched_mxu;
    ++pc_;
    return true;
  }
  switch (in.opcode()) {
    case isa::OPCODE_NOP: ++pc_; return true;
    case isa::OPCODE_HALT: return false;
    case isa::OPCODE_MOV: set(a()); return true;
    case isa::OPCODE_ADD: set(static_cast<int64_t>(ua() + ub())); return true;
    case isa::OPCODE_SUB: set(static_cast<int64_t>(ua() - ub())); return true;
    case isa::OPCODE_MUL: set(static_cast<int64_t>(ua() * ub())); return true;
    case isa::OPCODE_DIV: {
      const int64_t x = a(), y = b();
      set(y == 0 ? -1 : (x == kMin && y == -1) ? kMin : x / y);
      return true;
    }
    case isa::OPCODE_REM: {
      const int64_t x = a(), y = b();
      set(y == 0 ? x : (x == kMin && y == -1) ? 0 : x % y);
      return true;
    }
    case isa::OPCODE_DIVU: set(ub() == 0 ? -1 : static_cast<int64_t>(ua() / ub())); return true;
    case isa::OPCODE_REMU: set(ub() == 0 ? a() : static_cast<int64_t>(ua() % ub())); return true;
    case isa::OPCODE_AND: set(a() & b()); return true;
    case isa::OPCODE_OR: set(a() | b()); return true;
    case isa::OPCODE_XOR: set(a() ^ b()); return true;
    case isa::OPCODE_SHL: set(ub() >= 64 ? 0 : static_cast<int64_t>(ua() << ub())); return true;
    case isa::OPCODE_SHR: set(ub() >= 64 ? 0 : static_cast<int64_t>(ua() >> ub())); return true;
    case isa::OPCODE_SRA: set(ub() >= 64 ? (a() < 0 ? -1 : 0) : a() >> ub()); return true;
    case isa::OPCODE_MIN: set(std::min(a(), b())); return true;
    case isa::OPCODE_MAX: set(std::max(a(), b())); return true;
    case isa::OPCODE_LD_S32:
    case isa::OPCODE_LD_U32:
    case isa::OPCODE_LD_S64: {
      const uint64_t bytes = in.opcode() == isa::OPCODE_LD_S64 ? 8 : 4;
      const uint64_t address = SmemAddress(op(1), bytes);
      uint8_t data[8] = {};
      memories_[isa::MEMORY_SPACE_SMEM]->Read(address, std::span<uint8_t>(data, bytes));
      if (log_ != nullptr) log_->ReadMemory(isa::MEMORY_SPACE_SMEM, *memories_[isa::MEMORY_SPACE_SMEM], address, bytes);
      uint64_t word = 0;
      for (uint64_t i = 0; i < bytes; ++i) word |= uint64_t{data[i]} << (8 * i);
      int64_t value = static_cast<int64_t>(word);
      if (in.opcode() == isa::OPCODE_LD_S32) value = static_cast<int32_t>(static_cast<uint32_t>(word));
      stats_.smem_bytes_read += bytes;
      reg_ready_slot_.at(op(0).sreg()) =
          (issue_cycle + params_.smem_latency_cycles) * params_.issue_instructions_per_cycle;
      set(value);
      return true;
    }
    case isa::OPCODE_ST_S32:
    case isa::OPCODE_ST_S64: {
      const uint64_t bytes = in.opcode() == isa::OPCODE_ST_S64 ? 8 : 4;
      const uint64_t address = SmemAddress(op(1), bytes);
      const uint64_t word = static_cast<uint64_t>(Reg(op(0).sreg()));
      uint8_t data[8];
      for (uint64_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(word >> (8 * i));
      memories_[isa::MEMORY_SPACE_SMEM]->Write(address, std::span<const uint8_t>(data, bytes));
      if (log_ != nullptr) log_->WroteMemory(isa::MEMORY_SPACE_SMEM, address, bytes);
      stats_.smem_bytes_written += bytes;
      ++pc_;
      return true;
    }
    case isa::OPCODE_BR: Branch(true, op(0)); return true;
    case isa::OPCODE_BEQ: Branch(Value(op(0)) == Value(op(1)), op(2)); return true;
    case isa::OPCODE_BNE: Branch(Value(op(0)) != Value(op(1)), op(2)); return true;
    case isa::OPCODE_BLT: Branch(Value(op(0)) < Value(op(1)), op(2)); return true;
    case isa::OPCODE_BLE: Branch(Value(op(0)) <= Value(op(1)), op(2)); return true;
    case isa::OPCODE_BGT: Branch(Value(op(0)) > Value(op(1)), op(2)); return true;
    case isa::OPCODE_BGE: Branch(Value(op(0)) >= Value(op(1)), op(2)); return true;
    case isa::OPCODE_BLTU:
      Branch(static_cast<uint64_t>(Value(op(0))) < static_cast<uint64_t>(Value(op(1))), op(2));
      return true;
    case isa::OPCODE_BLEU:
      Branch(static_cast<uint64_t>(Value(op(0))) <= static_cast<uint64_t>(Value(op(1))), op(2));
      return true;
    case isa::OPCODE_BGTU:
      Branch(static_cast<uint64_t>(Value(op(0))) > static_cast<uint64_t>(Value(op(1))), op(2));
      return true;
    case isa::OPCODE_BGEU:
      Branch(static_cast<uint64_t>(Value(op(0))) >= static_cast<uint64_t>(Value(op(1))), op(2));
      return true;
    case isa::OPCODE_LOOP: {
      const int64_t counter = static_cast<int64_t>(static_cast<uint64_t>(Reg(op(0).sreg())) - 1);
      SetReg(op(0).sreg(), counter);
      Branch(counter > 0, op(1));
      return true;
    }
    case isa::OPCODE_SEM_WAIT: {
      Semaphore& semaphore = SemaphoreOf(op(0));
      const int64_t amount = Value(op(1));
      SyncToCycle(issue_cycle_);
      if (semaphore.value() < amount) {
        state_ = State::kWaitingSemaphore;
        waiting_semaphore_ = static_cast<uint32_t>(Value(op(0).semaphore()));
        waiting_amount_ = amount;
        while (semaphore.value() < amount) sc_core::wait(semaphore.signalled());
        state_ = State::kRunning;
        CatchUpToSystemCTime(&stats_.semaphore_stall_cycles);
      }
      semaphore.Wait(amount);  // takes it at once
      ++pc_;
      return true;
    }
    case isa::OPCODE_SEM_SIGNAL: {
      Semaphore& semaphore = SemaphoreOf(op(0));
      const int64_t amount = Value(op(1));
      if (semaphore.value() > std::numeric_limits<uint32_t>::max() - amount) {
        throw Fault("semaphore count would pass 2^32 - 1");
      }
      SyncToCycle(issue_cycle_);
      semaphore.Signal(amount);
      ++pc_;
      return true;
    }
    case isa::OPCODE_SEM_SET: {
      Semaphore& semaphore = SemaphoreOf(op(0));
      const int64_t amount = Value(op(1));
      SyncToCycle(issue_cycle_);
      if (amount >= semaphore.value()) {
        semaphore.Signal(amount - semaphore.value());
      } else {
        semaphore.Wait(semaphore.value() - amount);  // never blocks: it holds more
      }
      ++pc_;
      return true;
    }
    case isa::OPCODE_CORE_ID: set(core_index_); return true;
    case isa::OPCODE_CORE_SYNC: {
      // Alone, the core meets SystemC time here all the same: a segment (SyncHooks) ends with it.
      SyncToCycle(issue_cycle_);
      if (barrier_ != nullptr && barrier_->cores() > 1) {
        state_ = State::kWaitingCores;
        barrier_->ArriveAndWait();
        state_ = State::kRunning;
        CatchUpToSystemCTime(&stats_.core_sync_stall_cycles);
      }
      Reanchor();
      ++pc_;
      if (hooks_ != nullptr) hooks_->AfterSync(core_index_);
      return true;
    }
    case isa::OPCODE_DMA: DispatchDma(in); ++pc_; return true;
    default:
      throw Fault("`" + std::string(info->mnemonic) + "` is not yet supported by the simulator");
  }
}

void ScalarCore::DispatchDma(const isa::Instruction& in) {
  if (dma_ == nullptr) throw Fault("the machine has no DMA engines");
  const isa::InstructionInfo& info = *isa::FindInstruction(in.opcode());
  const auto operand = [&](std::string_view name) -> const isa::Operand& {
    return in.operands(isa::OperandIndex(info, name));
  };
  auto& shapes = dma_shapes_.at(pc_);
  if (!shapes) {
    shapes = std::make_unique<const std::array<isa::Shape, 2>>(
        std::array<isa::Shape, 2>{isa::ParseShape(operand("src").shape()), isa::ParseShape(operand("dst").shape())});
  }
  const auto endpoint = [&](std::string_view address_name, std::string_view start_name,
                            const isa::Shape& shape) {
    const isa::Operand& address = operand(address_name);
    const int space = static_cast<int>(address.address().space());
    Memory* memory = space >= 0 && space < static_cast<int>(memories_.size()) ? memories_[space] : nullptr;
    if (memory == nullptr) {
      throw Fault("the machine has no " + std::string(isa::MemorySpaceName(address.address().space())) +
                  " memory");
    }
    DmaEndpoint result;
    result.memory = memory;
    result.base_address = AddressOf(address);
    result.shape = shape;
    const isa::Operand& start = operand(start_name);
    if (start.value_case() == isa::Operand::kIndex) {
      for (const isa::RegOffset& item : start.index().items()) result.start.push_back(Value(item));
    } else {
      result.start.assign(shape.dims.size(), 0);
    }
    return result;
  };
  DmaTransfer transfer;
  transfer.source = endpoint("from", "src_start", (*shapes)[0]);
  transfer.destination = endpoint("to", "dst_start", (*shapes)[1]);
  for (int64_t size : operand("size").sizes().items()) transfer.sizes.push_back(size);
  transfer.semaphore = &SemaphoreOf(operand("sem"));
  transfer.semaphore_increment = 1;
  transfer.id = pc_;
  const int64_t engine = operand("engine").imm();
  if (engine < 0 || static_cast<uint64_t>(engine) >= dma_->engine_count()) {
    throw Fault("DMA engine " + std::to_string(engine) + " out of range (the machine has " +
                std::to_string(dma_->engine_count()) + ")");
  }
  ValidateTransfer(transfer);  // faults here, before any time passes
  if (log_ != nullptr) LogDmaData(transfer, operand("from").address().space(), operand("to").address().space());
  SyncToCycle(issue_cycle_);
  dma_->Submit(static_cast<uint32_t>(engine), transfer);  // waits while the queue is full
  if (observer_ != nullptr) {
    DmaIssue issue;
    issue.pc = static_cast<uint32_t>(pc_);
    issue.engine = static_cast<uint32_t>(engine);
    issue.source_space = static_cast<int>(operand("from").address().space());
    issue.destination_space = static_cast<int>(operand("to").address().space());
    issue.source_address = transfer.source.base_address;
    issue.destination_address = transfer.destination.base_address;
    issue.destination_bytes = static_cast<uint64_t>(isa::LayoutMap(transfer.destination.shape).byte_size());
    issue.submit_ps = static_cast<uint64_t>((sc_core::sc_time_stamp() - start_time_).value());
    observer_->OnDmaIssued(issue);
  }
  CatchUpToSystemCTime(&stats_.dispatch_stall_cycles);
  ++stats_.dispatched_dma;
}

void ScalarCore::WaitForQueue(std::deque<uint64_t>& starts, uint32_t depth) {
  uint64_t cycle = Cycle();
  while (!starts.empty() && starts.front() <= cycle) starts.pop_front();
  if (starts.size() < depth) return;
  // Starts are in queue order (non-decreasing): the queue has room once this one has started.
  cycle = starts[starts.size() - depth];
  while (!starts.empty() && starts.front() <= cycle) starts.pop_front();
  stats_.dispatch_stall_cycles += cycle - Cycle();
  slot_ = cycle * params_.issue_instructions_per_cycle;
}

uint64_t ScalarCore::CycleOfTime(const sc_core::sc_time& time) const {
  const sc_core::sc_time elapsed = time > anchor_time_ ? time - anchor_time_ : sc_core::SC_ZERO_TIME;
  uint64_t cycle = clock_.ToCycles(elapsed);
  if (clock_.ToTime(cycle) < elapsed) ++cycle;
  return anchor_cycle_ + cycle;
}

void ScalarCore::LogDmaData(const DmaTransfer& transfer, isa::MemorySpace source_space,
                            isa::MemorySpace destination_space) {
  const isa::ElementType type = transfer.source.shape.element_type;
  uint64_t elements = 1;
  for (int64_t size : transfer.sizes) elements *= static_cast<uint64_t>(size);
  const uint64_t element_bytes = static_cast<uint64_t>(isa::ElementByteWidth(type));
  // Segments are logged in timing-only runs, where larger transfers move no data.
  if (elements * element_bytes > kTimingOnlyMovedBytes) return;
  const isa::LayoutMap source(transfer.source.shape);
  const isa::LayoutMap destination(transfer.destination.shape);
  // Every element of the region, by its index.
  std::vector<int64_t> index(transfer.sizes.size(), 0);
  std::vector<int64_t> at(index.size());
  for (uint64_t e = 0; e < elements; ++e) {
    for (std::size_t d = 0; d < index.size(); ++d) at[d] = transfer.source.start[d] + index[d];
    log_->ReadMemory(source_space, *transfer.source.memory,
                     transfer.source.base_address + static_cast<uint64_t>(source.ByteOffset(at)), element_bytes);
    for (std::size_t d = 0; d < index.size(); ++d) at[d] = transfer.destination.start[d] + index[d];
    log_->WroteMemory(destination_space,
                      transfer.destination.base_address + static_cast<uint64_t>(destination.ByteOffset(at)),
                      element_bytes);
    for (std::size_t d = index.size(); d-- > 0;) {
      if (++index[d] < transfer.sizes[d]) break;
      index[d] = 0;
    }
  }
}

void ScalarCore::DispatchVpu(const isa::Instruction& in, const isa::InstructionInfo& info) {
  Vpu& vpu = *units_.vpu;
  if (in.opcode() == isa::OPCODE_VPU_SIGNAL) {
    Semaphore& semaphore = SemaphoreOf(in.operands(0));
    const int64_t amount = Value(in.operands(1));
    if (semaphore.value() > std::numeric_limits<uint32_t>::max() - amount) {
      throw Fault("semaphore count would pass 2^32 - 1");
    }
    const uint64_t cycle = vpu.Signal(issue_cycle_);
    vpu_starts_.push_back(cycle);
    // The semaphore is incremented at the start of `cycle`, in SystemC time (as a DMA's is).
    Semaphore* target = &semaphore;
    const sc_core::sc_time when = TimeOfCycle(cycle);
    sc_core::sc_spawn_options options;
    sc_core::sc_spawn(
        [target, amount, when] {
          const sc_core::sc_time now = sc_core::sc_time_stamp();
          if (when > now) sc_core::wait(when - now);
          target->Signal(amount);
        },
        nullptr, &options);
    return;
  }
  const VpuOpInfo* op = FindVpuOp(info.mnemonic);
  if (op == nullptr) throw Fault("`" + std::string(info.mnemonic) + "` is not a VPU operation");
  VpuInstr instr;
  instr.op = op->op;
  int next = 0;
  const auto take = [&](VpuOperand kind, auto&& store) {
    if (kind == VpuOperand::kNone) return;
    const isa::Operand& operand = in.operands(next++);
    switch (kind) {
      case VpuOperand::kVreg: store(static_cast<int64_t>(operand.vreg())); break;
      case VpuOperand::kMask: store(static_cast<int64_t>(operand.mreg())); break;
      case VpuOperand::kScalar: store(Value(operand)); break;
      case VpuOperand::kNone: break;
    }
  };
  const auto reg = [](uint32_t& field) { return [&field](int64_t v) { field = static_cast<uint32_t>(v); }; };
  take(op->dst, reg(instr.dst));
  if (op->reads_select_mask) take(VpuOperand::kMask, reg(instr.m));
  const auto a_or_b = [&](VpuOperand kind, uint32_t& field) {
    if (kind == VpuOperand::kScalar) {
      take(kind, [&](int64_t v) { instr.scalar = v; });
    } else {
      take(kind, reg(field));
    }
  };
  a_or_b(op->a, instr.a);
  a_or_b(op->b, instr.b);
  const VpuTiming timing = vpu.Execute(instr, issue_cycle_);
  vpu_starts_.push_back(timing.issue);
  if (observer_ != nullptr) {
    const VpuParams& params = vpu.params();
    const VpuUnitParams& unit = op->unit == VpuSubUnit::kTranscendental ? params.transcendental
                                : op->unit == VpuSubUnit::kCrossLane    ? params.cross_lane
                                                                        : params.elementwise;
    // The same expression as UnitPipeline's interval, so the slots sum to its busy_cycles.
    observer_->OnVpu({static_cast<uint32_t>(pc_), op->unit, timing.issue, timing.ready,
                      1.0 / unit.throughput_vregs_per_cycle});
  }
}

void ScalarCore::DispatchVectorMemory(const isa::Instruction& in,
                                      const isa::InstructionInfo& /*info*/) {
  Vpu& vpu = *units_.vpu;
  VectorRegisterFile& registers = *units_.registers;
  const bool load = in.opcode() == isa::OPCODE_VLD;
  static const VectorMemoryOperands kLoad = FindVectorMemoryOperands(isa::OPCODE_VLD);
  static const VectorMemoryOperands kStore = FindVectorMemoryOperands(isa::OPCODE_VST);
  const VectorMemoryOperands& at = load ? kLoad : kStore;
  const auto operand = [&](int index) -> const isa::Operand& { return in.operands(index); };
  const uint32_t vreg = operand(at.vreg).vreg();
  registers.Check({RegisterKind::kVreg, vreg});
  RegisterUse use;
  if (load) {
    use.write = {RegisterKind::kVreg, vreg};
    use.writes = true;
  } else {
    use.reads[use.read_count++] = {RegisterKind::kVreg, vreg};
  }
  std::optional<uint32_t> mask;
  if (!load && operand(at.mask).value_case() == isa::Operand::kMreg) {
    mask = operand(at.mask).mreg();
    registers.Check({RegisterKind::kMask, *mask});
    use.reads[use.read_count++] = {RegisterKind::kMask, *mask};
  }
  const isa::Operand& stride_operand = operand(at.stride);
  const int64_t stride = stride_operand.value_case() == isa::Operand::kImm ? stride_operand.imm() : 1;
  const isa::Operand& sublanes_operand = operand(at.sublanes);
  const uint32_t sublanes = registers.sublanes();
  const uint32_t lanes = registers.lanes();
  const bool all_sublanes = sublanes_operand.value_case() != isa::Operand::kBits;
  const uint64_t bits = all_sublanes ? 0 : sublanes_operand.bits();
  if (!all_sublanes && sublanes > 64) {
    throw Fault("a sublane mask covers sublanes 0..63; this machine has " + std::to_string(sublanes));
  }
  const auto selected = [&](uint32_t s) { return all_sublanes || ((bits >> s) & 1) != 0; };
  Memory* vmem = memories_[isa::MEMORY_SPACE_VMEM];
  if (vmem == nullptr) throw Fault("the machine has no VMEM");
  const uint64_t address = AddressOf(operand(at.addr));
  if (address % 4 != 0) throw Fault("VMEM address " + std::to_string(address) + " is not 4-byte aligned");
  const uint64_t row_bytes = uint64_t{4} * lanes;
  const auto row_address = [&](uint32_t s) {
    return address + static_cast<uint64_t>(static_cast<int64_t>(s) * stride) * row_bytes;
  };
  // A contiguous block inside VMEM needs no check per row (row by row names the row that fails).
  const bool block = all_sublanes && stride == 1;
  const uint64_t capacity = vmem->capacity_bytes();
  if (!block || address > capacity || row_bytes * sublanes > capacity - address) {
    for (uint32_t s = 0; s < sublanes; ++s) {
      if (selected(s)) vmem->CheckRange(load ? "vld" : "vst", row_address(s), row_bytes);
    }
  }
  // Timing: the VPU's issue slot, then VMEM serves the rows (one request when they are one
  // contiguous block), and the issue commits with VMEM's completion.
  const uint64_t issue = vpu.EarliestIssue(issue_cycle_, use);
  const sc_core::sc_time issue_time = TimeOfCycle(issue);
  const AccessKind kind = load ? AccessKind::kRead : AccessKind::kWrite;
  sc_core::sc_time done = issue_time;
  const auto access = [&](uint64_t at, uint64_t bytes) {
    return vector_vmem_ != nullptr ? vector_vmem_->VectorAccess(kind, at, bytes, issue_time)
                                   : vmem->Access(kind, at, bytes, issue_time);
  };
  if (block) {
    done = access(address, row_bytes * sublanes);
  } else if (load && stride == 0) {
    // A stride-0 load is a sublane broadcast: VMEM serves its one row once, and the row goes to
    // every selected sublane (a store of stride 0 writes each selected sublane's masked words).
    for (uint32_t s = 0; s < sublanes; ++s) {
      if (selected(s)) {
        done = access(row_address(s), row_bytes);
        break;
      }
    }
  } else {
    for (uint32_t s = 0; s < sublanes; ++s) {
      if (selected(s)) done = std::max(done, access(row_address(s), row_bytes));
    }
  }
  const uint64_t complete = std::max(issue, CycleOfTime(done));
  vpu.CommitIssue(issue, use, complete);
  vpu_starts_.push_back(issue);
  if (observer_ != nullptr) {
    uint64_t low = UINT64_MAX, high = 0;
    for (uint32_t s = 0; s < sublanes; ++s) {
      if (!selected(s)) continue;
      low = std::min(low, row_address(s));
      high = std::max(high, row_address(s) + row_bytes);
    }
    if (low > high) low = high = address;
    observer_->OnVectorMemory({static_cast<uint32_t>(pc_), load, low, high - low, issue, complete});
  }
  if (timing_only_) return;
  std::vector<uint8_t> row(row_bytes);
  if (load) {
    Vreg& vd = registers.vreg(vreg);
    for (uint32_t s = 0; s < sublanes; ++s) {
      if (selected(s)) {
        vmem->Read(row_address(s), row);
        for (uint32_t l = 0; l < lanes; ++l) {
          uint32_t word;
          std::memcpy(&word, row.data() + 4 * l, 4);
          vd.set_word(s, l, word);
        }
      } else {
        for (uint32_t l = 0; l < lanes; ++l) vd.set_word(s, l, 0);
      }
    }
    return;
  }
  const Vreg& va = registers.vreg(vreg);
  const Mask* m = mask ? &registers.mask(*mask) : nullptr;
  for (uint32_t s = 0; s < sublanes; ++s) {
    if (!selected(s)) continue;
    if (m != nullptr) vmem->Read(row_address(s), row);
    for (uint32_t l = 0; l < lanes; ++l) {
      if (m != nullptr && !m->get(s, l)) continue;
      const uint32_t word = va.word(s, l);
      std::memcpy(row.data() + 4 * l, &word, 4);
    }
    vmem->Write(row_address(s), row);
  }
}

void ScalarCore::DispatchMxu(const isa::Instruction& in, const isa::InstructionInfo& info) {
  const uint32_t index = in.operands(0).mxu();
  Mxu& mxu = *units_.mxus.at(index);
  VectorRegisterFile& registers = *units_.registers;
  const uint64_t arrival = issue_cycle_;
  const double busy_before = observer_ != nullptr ? mxu.stats().busy_cycles : 0.0;
  MxuTiming timing;
  switch (in.opcode()) {
    case isa::OPCODE_MXU_LATCH:
      timing = mxu.Latch(arrival);
      break;
    case isa::OPCODE_MXU_POP:
    case isa::OPCODE_MXU_POP_ACC: {
      const RegisterRef vd{RegisterKind::kVreg, in.operands(1).vreg()};
      registers.Check(vd);
      RegisterTimes& times = registers.times(vd);
      const uint64_t cycle = std::max({arrival, times.ready, times.last_read});
      const bool accumulate = in.opcode() == isa::OPCODE_MXU_POP_ACC;
      timing = accumulate ? mxu.PopAccumulate(registers.vreg(vd.index), cycle)
                          : mxu.Pop(registers.vreg(vd.index), cycle);
      if (accumulate) times.last_read = std::max(times.last_read, timing.start);
      times.ready = timing.done;
      break;
    }
    case isa::OPCODE_MXU_ACC_READ:
    case isa::OPCODE_MXU_ACC_READ_CLEAR: {
      // Row and column block are read at dispatch, as every scalar operand.
      const RegisterRef vd{RegisterKind::kVreg, in.operands(1).vreg()};
      registers.Check(vd);
      RegisterTimes& times = registers.times(vd);
      const uint64_t cycle = std::max({arrival, times.ready, times.last_read});
      timing = mxu.AccumulatorRead(registers.vreg(vd.index), static_cast<uint64_t>(Value(in.operands(2))),
                                   static_cast<uint64_t>(Value(in.operands(3))),
                                   in.opcode() == isa::OPCODE_MXU_ACC_READ_CLEAR, cycle);
      times.ready = timing.done;
      break;
    }
    default: {
      if (!info.mxu_type) throw Fault("`" + std::string(info.mnemonic) + "` is not an MXU operation");
      if (info.operands.size() == 3) {  // mxu.push.acc.T mxu, va, row
        const RegisterRef va{RegisterKind::kVreg, in.operands(1).vreg()};
        registers.Check(va);
        RegisterTimes& times = registers.times(va);
        const uint64_t cycle = std::max(arrival, times.ready);
        timing = mxu.PushAccumulate(*info.mxu_type, registers.vreg(va.index),
                                    static_cast<uint64_t>(Value(in.operands(2))), cycle);
        times.last_read = std::max(times.last_read, timing.start);
        break;
      }
      const RegisterRef va{RegisterKind::kVreg, in.operands(1).vreg()};
      registers.Check(va);
      RegisterTimes& times = registers.times(va);
      const uint64_t cycle = std::max(arrival, times.ready);
      const bool weights = info.cost == isa::CostClass::kMxuWeightPush;
      timing = weights ? mxu.WeightPush(*info.mxu_type, registers.vreg(va.index), cycle)
                       : mxu.Push(*info.mxu_type, registers.vreg(va.index), cycle);
      times.last_read = std::max(times.last_read, timing.start);
      break;
    }
  }
  mxu_starts_[index].push_back(timing.start);
  if (observer_ != nullptr) {
    observer_->OnMxu({static_cast<uint32_t>(pc_), index, timing.start, timing.done,
                      mxu.stats().busy_cycles - busy_before});
  }
}

std::string ScalarCore::DescribeDeadlock() const {
  if (program_ == nullptr) return {};
  if (state_ == State::kWaitingCores) {
    return name_ + ": deadlock at pc " + std::to_string(pc_) + " (`" +
           isa::DisassembleInstruction(program_->instructions(static_cast<int>(pc_))) + "`): " +
           std::to_string(barrier_->waiting()) + " of " + std::to_string(barrier_->cores()) +
           " TensorCores reached this core.sync, and the others ended or wait elsewhere";
  }
  if (state_ != State::kWaitingSemaphore) return {};
  const Semaphore& semaphore = *semaphores_.at(waiting_semaphore_);
  return name_ + ": deadlock at pc " + std::to_string(pc_) + " (`" +
         isa::DisassembleInstruction(program_->instructions(static_cast<int>(pc_))) +
         "`): semaphore " + std::to_string(waiting_semaphore_) + " holds " +
         std::to_string(semaphore.value()) + " and needs " + std::to_string(waiting_amount_) +
         ", and no unit has work left that could signal it";
}

bool ScalarCore::settled() const {
  for (uint64_t ready : reg_ready_slot_) {
    if (ready > slot_) return false;
  }
  const uint64_t cycle = Cycle();
  for (uint64_t start : vpu_starts_) {
    if (start > cycle) return false;
  }
  for (const std::deque<uint64_t>& starts : mxu_starts_) {
    for (uint64_t start : starts) {
      if (start > cycle) return false;
    }
  }
  return true;
}

ScalarSegmentEnd ScalarCore::SegmentEnd(const ScalarCoreStats& start_stats, std::size_t start_marks) const {
  const uint64_t k = params_.issue_instructions_per_cycle;
  const auto cycle_after = [&](uint64_t cycle) {
    return static_cast<int64_t>(cycle) - static_cast<int64_t>(anchor_cycle_);
  };
  ScalarSegmentEnd end;
  end.pc = pc_;
  end.slot = slot_ - anchor_cycle_ * k;
  end.issue_cycle = cycle_after(issue_cycle_);
  end.last_busy_cycle = last_busy_cycle_ == UINT64_MAX ? INT64_MIN : cycle_after(last_busy_cycle_);
  end.branched = branched_;
  end.written_registers = log_ != nullptr ? log_->written_registers() : 0;
  end.registers = regs_;
  for (std::size_t r = 0; r < regs_.size(); ++r) {
    end.ready_slots[r] = static_cast<int64_t>(reg_ready_slot_[r]) - static_cast<int64_t>(anchor_cycle_ * k);
  }
  for (uint64_t start : vpu_starts_) end.vpu_starts.push_back(cycle_after(start));
  for (const std::deque<uint64_t>& starts : mxu_starts_) {
    end.mxu_starts.emplace_back();
    for (uint64_t start : starts) end.mxu_starts.back().push_back(cycle_after(start));
  }
  end.counts = CountsSince(stats_, start_stats);
  for (std::size_t m = start_marks; m < marks_.size(); ++m) {
    end.marks.push_back({marks_[m].pc, cycle_after(marks_[m].cycle)});
  }
  return end;
}

void ScalarCore::ReplaySegment(const ScalarSegmentEnd& end) {
  const uint64_t k = params_.issue_instructions_per_cycle;
  const int64_t anchor_slot = static_cast<int64_t>(anchor_cycle_ * k);
  // A cycle before the anchor is in the past of everything to come, as the anchor is.
  const auto cycle_at = [&](int64_t after) {
    return after <= 0 ? anchor_cycle_ : anchor_cycle_ + static_cast<uint64_t>(after);
  };
  pc_ = end.pc;
  slot_ = anchor_cycle_ * k + end.slot;
  issue_cycle_ = cycle_at(end.issue_cycle);
  if (end.last_busy_cycle >= 0) last_busy_cycle_ = cycle_at(end.last_busy_cycle);
  branched_ = end.branched;
  for (std::size_t r = 0; r < regs_.size(); ++r) {
    if (((end.written_registers >> r) & 1) != 0) regs_[r] = end.registers[r];
    if (end.ready_slots[r] > 0) reg_ready_slot_[r] = static_cast<uint64_t>(anchor_slot + end.ready_slots[r]);
  }
  vpu_starts_.clear();
  for (int64_t start : end.vpu_starts) vpu_starts_.push_back(cycle_at(start));
  for (std::size_t m = 0; m < mxu_starts_.size() && m < end.mxu_starts.size(); ++m) {
    mxu_starts_[m].clear();
    for (int64_t start : end.mxu_starts[m]) mxu_starts_[m].push_back(cycle_at(start));
  }
  AddCounts(stats_, end.counts);
  if (stats_.instructions > params_.max_instructions) {
    throw Fault("more than " + std::to_string(params_.max_instructions) +
                " instructions executed (a loop that never ends? --max-instructions raises the limit)");
  }
  for (const ScalarSegmentEnd::Mark& mark : end.marks) marks_.push_back({mark.pc, cycle_at(mark.cycle)});
}

}  // namespace tpusim::models
