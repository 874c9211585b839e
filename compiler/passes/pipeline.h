// tpusim's HLO pass pipeline, as XLA's HloPassPipeline: the passes Compile runs on a module before
// lowering it, in order, each by the name `tpusim opt --passes` and `--dump-after` use
// (docs/compiler.md, "The pipeline"). The fusion pass is not among them: it groups instructions
// into kernels while lowering, without rewriting the module.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lower/compile.h"

namespace tpusim::compiler {

struct HloPass {
  std::string_view name;
  std::function<void(hlo::Module&, const CompileOptions&)> run;
};

// Every pass, in pipeline order.
const std::vector<HloPass>& HloPasses();

// Runs the passes on `module` in pipeline order: all of them, or only those named in `only`
// (an unknown name is an error listing the passes). `after`, if given, is called after each.
void RunHloPasses(hlo::Module& module, const CompileOptions& options, const std::vector<std::string>& only = {},
                  const std::function<void(const HloPass&)>& after = nullptr);

}  // namespace tpusim::compiler
