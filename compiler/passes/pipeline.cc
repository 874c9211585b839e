#include "compiler/passes/pipeline.h"

#include <algorithm>

#include "compiler/passes/algebraic_simplifier.h"
#include "compiler/passes/async_collectives.h"
#include "compiler/passes/batch_norm_expansion.h"
#include "compiler/passes/call_inliner.h"
#include "compiler/passes/contraction_split.h"
#include "compiler/passes/common_subexpressions.h"
#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/degenerate_dims.h"
#include "compiler/passes/dot_convolution.h"
#include "compiler/passes/dot_dimension_sorter.h"
#include "compiler/passes/dot_transpose_folding.h"
#include "compiler/passes/f16_normalization.h"
#include "compiler/passes/f8_conversion.h"
#include "compiler/passes/fused_attention_expansion.h"
#include "compiler/passes/host_offload.h"
#include "compiler/passes/lane_broadcast_sinking.h"
#include "compiler/passes/layout_assignment.h"
#include "compiler/passes/layout_copies.h"
#include "compiler/passes/memory_spaces.h"
#include "compiler/passes/reduce_split.h"
#include "compiler/passes/strided_convolution.h"
#include "compiler/passes/unit_reduces.h"
#include "isa/error.h"

namespace tpusim::compiler {

const std::vector<HloPass>& HloPasses() {
  using hlo::Module;
  using Options = CompileOptions;
  static const std::vector<HloPass> passes = {
      // An optimized module's forms first: its VMEM/CMEM placements and prefetch copies, its
      // asynchronous collectives.
      {"memory-spaces", [](Module& m, const Options&) { PlaceInHbm(m); }},
      {"async-collectives", [](Module& m, const Options&) { SynchronizeAsyncCollectives(m); }},
      // Before the batch-norm expansion: the compiled module's accumulations are read between the
      // two (Compile), with the attention's dots and reduces and the batch norms as written.
      {"fused-attention-expansion", [](Module& m, const Options&) { ExpandFusedAttention(m); }},
      {"batch-norm-expansion", [](Module& m, const Options&) { ExpandBatchNorms(m); }},
      {"strided-convolutions", [](Module& m, const Options&) { RewriteStridedConvolutions(m); }},
      {"dot-convolutions", [](Module& m, const Options&) { RewriteDotConvolutions(m); }},
      // After the attention expansion, which writes calls.
      {"call-inlining", [](Module& m, const Options&) { InlineCalls(m); }},
      // After inlining, which leaves a call's unread results behind; before everything that
      // would otherwise rewrite or lower values nothing reads.
      {"dce", [](Module& m, const Options&) { EliminateDeadCode(m); }},
      {"cse", [](Module& m, const Options&) { EliminateCommonSubexpressions(m); }},
      {"algebraic-simplifier", [](Module& m, const Options&) { SimplifyAlgebraically(m); }},
      {"lane-broadcast-sinking", [](Module& m, const Options&) { SinkLaneBroadcasts(m); }},
      // Before layouts: the ops they add get the default ones.
      {"f8-conversion", [](Module& m, const Options&) { RewriteF8Conversions(m); }},
      {"f16-normalization", [](Module& m, const Options&) { NormalizeF16(m); }},
      {"layout-assignment", [](Module& m, const Options&) { AssignLayouts(m); }},
      {"degenerate-reduce-dims", [](Module& m, const Options&) { RemoveDegenerateReduceDims(m); }},
      {"unit-reduces", [](Module& m, const Options&) { ExpandUnitReduces(m); }},
      {"layout-copies", [](Module& m, const Options&) { InsertLayoutCopies(m); }},
      {"dot-transpose-folding", [](Module& m, const Options&) { FoldTransposesIntoDots(m); }},
      // After the folding, which renames contracting dims, and the layouts it sorts by.
      {"dot-dimension-sorter", [](Module& m, const Options&) { SortDotDimensions(m); }},
      {"contraction-split",
       [](Module& m, const Options& o) { SplitLongContractions(m, o.target, o.vmem_capacity_bytes); }},
      {"reduce-split",
       [](Module& m, const Options& o) {
         SplitLargeReduces(m, o.target.sublanes(), o.target.lanes(), o.vmem_capacity_bytes);
       }},
      // After layouts: it writes S(5) into them.
      {"host-offload", [](Module& m, const Options&) { AssignHostMemorySpace(m); }},
  };
  return passes;
}

void RunHloPasses(hlo::Module& module, const CompileOptions& options, const std::vector<std::string>& only,
                  const std::function<void(const HloPass&)>& after) {
  const std::vector<HloPass>& passes = HloPasses();
  for (const std::string& name : only) {
    const bool known = std::any_of(passes.begin(), passes.end(), [&](const HloPass& p) { return p.name == name; });
    if (!known) {
      std::string names;
      for (const HloPass& p : passes) names += (names.empty() ? "" : ", ") + std::string(p.name);
      throw Error("unknown pass '" + name + "'; the passes are: " + names);
    }
  }
  for (const HloPass& pass : passes) {
    if (!only.empty() && std::find(only.begin(), only.end(), std::string(pass.name)) == only.end()) continue;
    pass.run(module, options);
    if (after) after(pass);
  }
}

}  // namespace tpusim::compiler
