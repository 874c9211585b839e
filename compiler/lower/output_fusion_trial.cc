#include "compiler/lower/output_fusion_trial.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/lower/program_builder.h"
#include "compiler/lower/cost.h"
#include "compiler/lower/kernel.h"
#include "compiler/lower/kernel_dispatch.h"
#include "compiler/lower/kernel_tuner.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/dot_output_fusion.h"
#include "isa/layout_index.h"
#include "isa/program_check.h"

namespace tpusim::compiler {
namespace {

// Contractions whose MXU time at the chip's peak exceeds this fuse without a trial: as for the
// dot kernel's plans (dot_kernel.cc, kMostTunedNs), a candidate's run costs wall time in
// proportion to its simulated time.
constexpr double kMostTriedNs = 64e3;

// The contraction's FLOPs at every MXU of every core, one pass a row.
double PeakNs(const hlo::Instruction& contraction, const CompileOptions& options) {
  const isa::Target& t = options.target;
  const double macs_per_cycle = static_cast<double>(isa::TensorCores(t) * t.mxu_count() * t.mxu_rows() * t.mxu_columns());
  if (macs_per_cycle <= 0) return 0;
  return options.mxu_rates.Ns(CostOf(contraction).flops / 2 / macs_per_cycle);
}

// Stand-in buffers at distinct HBM addresses, one per instruction, as a compile would place them.
class StandIns {
 public:
  const DeviceBuffer* Of(const hlo::Instruction* x) {
    auto& buffer = buffers_[x];
    if (!buffer) {
      buffer = std::make_unique<DeviceBuffer>();
      buffer->shape = x->shape();
      buffer->size_bytes = isa::LayoutMap(x->shape()).byte_size();
      buffer->address = next_;
      next_ = AlignUp(next_ + std::max<uint64_t>(buffer->size_bytes, 1), kBufferAlignmentBytes);
    }
    return buffer.get();
  }
  uint64_t end() const { return next_; }

 private:
  std::map<const hlo::Instruction*, std::unique_ptr<DeviceBuffer>> buffers_;
  uint64_t next_ = 0;
};

// Emits `group`'s kernel on its cores into `out`, its operands and result from `buffers`.
void EmitGroup(ProgramBuilder& out, const CompileOptions& options, const KernelGroup& group, StandIns& buffers,
               uint64_t scratch) {
  KernelContext context{out, options, *group.root, group, {}, {buffers.Of(group.root)}, scratch,
                        options.hbm_capacity_bytes > scratch ? options.hbm_capacity_bytes - scratch : 0, {}};
  for (const hlo::Instruction* operand : group.operands) context.operands.push_back({buffers.Of(operand)});
  EmitKernelOnCores(context);
}

// What the tuner remembers the choice under: the groups' shapes and operations.
std::string TrialKey(const KernelGroup& merged, const CompileOptions& options) {
  std::string key = "output fusion";
  for (const hlo::Instruction* operand : merged.operands) key += " " + isa::ToString(operand->shape());
  key += " ->";
  for (const hlo::Instruction* member : merged.members) {
    key += " " + std::string(hlo::OpcodeName(member->opcode())) + " " + isa::ToString(member->shape());
  }
  return key + " on " + std::to_string(isa::TensorCores(options.target)) + " cores";
}

}  // namespace

bool OutputFusionFits(const KernelGroup& group, const CompileOptions& options) {
  if (FusedContraction(group) == nullptr) return false;
  // The whole kernel emitted on stand-ins, its candidates not tried (no tuner), with HBM scratch
  // for the general dot's copies (at compile time, what is free around it).
  CompileOptions planning = options;
  planning.kernel_tuner = nullptr;
  return GroupPlans(group, planning, [&](KernelContext& context) {
    context.hbm_scratch_bytes = planning.hbm_capacity_bytes;
    EmitKernelOnCores(context);
  });
}

bool OutputFusionPays(const KernelGroup& merged, const KernelGroup& consumers, const CompileOptions& options) {
  const hlo::Instruction* contraction = FusedContraction(merged);
  if (!options.kernel_tuner || contraction == nullptr || options.mxu_rates.clock_mhz <= 0 ||
      PeakNs(*contraction, options) > kMostTriedNs) {
    return true;
  }
  // Each program's dot kernel plans as the compile will (its own plans tried too, remembered for
  // the compile under the same keys).
  KernelGroup alone;
  alone.root = contraction;
  alone.members = {contraction};
  alone.operands = {contraction->operand(0), contraction->operand(1)};
  const std::size_t chosen = options.kernel_tuner->Choose(TrialKey(merged, options), [&] {
    std::vector<isa::Program> programs;
    for (int split = 0; split < 2; ++split) {
      StandIns buffers;
      for (const hlo::Instruction* operand : merged.operands) buffers.Of(operand);
      buffers.Of(contraction);
      buffers.Of(merged.root);
      ProgramBuilder trial("output_fusion_candidate", options.target);
      if (split == 0) {
        EmitGroup(trial, options, merged, buffers, buffers.end());
      } else {
        EmitGroup(trial, options, alone, buffers, buffers.end());
        EmitGroup(trial, options, consumers, buffers, buffers.end());
      }
      trial.Emit(isa::OPCODE_HALT);
      programs.push_back(trial.Finish());
    }
    return programs;
  });
  return chosen == 0;
}

}  // namespace tpusim::compiler
