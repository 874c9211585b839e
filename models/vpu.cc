#include "models/vpu.h"

#include <algorithm>
#include <string>

#include "isa/error.h"
#include "models/param_checks.h"
#include "models/vpu_semantics.h"

namespace tpusim::models {

void Validate(const VpuParams& params) {
  constexpr std::string_view kParams = "VpuParams";
  RequireAtLeast(kParams, "sublanes", params.sublanes, 1);
  RequireAtLeast(kParams, "lanes", params.lanes, 1);
  RequireAtLeast(kParams, "issue_instructions_per_cycle", params.issue_instructions_per_cycle, 1);
  const auto check_unit = [&](std::string_view name, const VpuUnitParams& unit) {
    const std::string prefix(name);
    RequireAtLeast(kParams, prefix + ".latency_cycles", unit.latency_cycles, 1);
    RequirePositive(kParams, prefix + ".throughput_vregs_per_cycle",
                    unit.throughput_vregs_per_cycle);
  };
  check_unit("elementwise", params.elementwise);
  check_unit("transcendental", params.transcendental);
  check_unit("cross_lane", params.cross_lane);
}

namespace {

const VpuParams& Validated(const VpuParams& params) {
  Validate(params);
  return params;
}

UnitPipeline PipelineFor(const VpuUnitParams& unit) {
  return UnitPipeline(unit.latency_cycles, unit.throughput_vregs_per_cycle);
}

}  // namespace

Vpu::Vpu(const VpuParams& params, VectorRegisterFile& registers)
    : params_(Validated(params)),
      registers_(registers),
      pipelines_{PipelineFor(params.elementwise), PipelineFor(params.transcendental),
                 PipelineFor(params.cross_lane)} {
  if (registers.sublanes() != params.sublanes || registers.lanes() != params.lanes) {
    throw Error("the VPU works on " + std::to_string(params.sublanes) + " x " +
                std::to_string(params.lanes) + " vregs but was given a register file of " +
                std::to_string(registers.sublanes()) + " x " + std::to_string(registers.lanes()));
  }
}

uint64_t Vpu::EarliestIssue(uint64_t arrival_cycle, const RegisterUse& use) const {
  // In queue order, at most issue_instructions_per_cycle per cycle.
  uint64_t cycle = std::max(arrival_cycle, last_issue_);
  if (cycle == last_issue_ && issued_in_last_ >= params_.issue_instructions_per_cycle) ++cycle;
  // Read after write: the sources are ready. Write after write and write after read: the
  // destination's last write has landed and its reads have happened (a conservative scoreboard:
  // one pending write per register).
  for (uint32_t i = 0; i < use.read_count; ++i) {
    cycle = std::max(cycle, registers_.times(use.reads[i]).ready);
  }
  if (use.writes) {
    const RegisterTimes& times = registers_.times(use.write);
    cycle = std::max({cycle, times.ready, times.last_read});
  }
  return cycle;
}

void Vpu::CommitIssue(uint64_t cycle, const RegisterUse& use, uint64_t complete_cycle) {
  if (cycle < last_issue_) {
    throw Error("VPU issue at cycle " + std::to_string(cycle) + " is out of queue order: an " +
                "earlier instruction issued at " + std::to_string(last_issue_));
  }
  if (cycle == last_issue_ && stats_.instructions > 0) {
    ++issued_in_last_;
  } else {
    last_issue_ = cycle;
    issued_in_last_ = 1;
  }
  for (uint32_t i = 0; i < use.read_count; ++i) {
    RegisterTimes& times = registers_.times(use.reads[i]);
    times.last_read = std::max(times.last_read, cycle);
  }
  if (use.writes) {
    RegisterTimes& times = registers_.times(use.write);
    times.ready = std::max(times.ready, complete_cycle);
  }
  ++stats_.instructions;
  stats_.last_issue = cycle;
  stats_.all_complete = std::max(stats_.all_complete, complete_cycle);
}

VpuTiming Vpu::Execute(const VpuInstr& instr, uint64_t arrival_cycle) {
  CheckVpuOp(instr, registers_);  // faults before anything changes, timing-only or not
  const RegisterUse use = RegistersOf(instr);
  UnitPipeline& pipeline = PipelineOf(GetVpuOpInfo(instr.op).unit);
  // The sub-unit's slot can only push the issue later, which keeps the issue-width count valid.
  const uint64_t issue = pipeline.EarliestIssue(EarliestIssue(arrival_cycle, use));
  const uint64_t ready = pipeline.Issue(issue);
  CommitIssue(issue, use, ready);
  if (!timing_only_) ExecuteVpuOp(instr, registers_);
  return {issue, ready};
}

uint64_t Vpu::Signal(uint64_t arrival_cycle) {
  const RegisterUse none;
  const uint64_t cycle = EarliestIssue(std::max(arrival_cycle, stats_.all_complete), none);
  CommitIssue(cycle, none, cycle);
  return cycle;
}

VpuStats Vpu::stats() const {
  VpuStats stats = stats_;
  for (size_t i = 0; i < pipelines_.size(); ++i) {
    stats.units[i] = {pipelines_[i].operations() + replayed_units_[i].operations,
                      pipelines_[i].busy_cycles() + replayed_units_[i].busy_cycles};
  }
  return stats;
}

void Vpu::AddReplayed(const VpuStats& counts, uint64_t last_issue, uint64_t all_complete) {
  stats_.instructions += counts.instructions;
  for (size_t i = 0; i < replayed_units_.size(); ++i) {
    replayed_units_[i].operations += counts.units[i].operations;
    replayed_units_[i].busy_cycles += counts.units[i].busy_cycles;
  }
  // Later than anything issued so far (the unit was quiescent); in-order issue goes on from it.
  if (last_issue > last_issue_) {
    last_issue_ = last_issue;
    issued_in_last_ = 0;
  }
  stats_.last_issue = std::max(stats_.last_issue, last_issue);
  stats_.all_complete = std::max(stats_.all_complete, all_complete);
}

VpuStats CountsSince(const VpuStats& now, const VpuStats& before) {
  VpuStats delta;
  delta.instructions = now.instructions - before.instructions;
  for (size_t i = 0; i < now.units.size(); ++i) {
    delta.units[i] = {now.units[i].operations - before.units[i].operations,
                      now.units[i].busy_cycles - before.units[i].busy_cycles};
  }
  return delta;
}

}  // namespace tpusim::models
