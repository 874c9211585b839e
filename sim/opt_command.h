// `tpusim opt`: tpusim's HLO pass pipeline on the command line, as XLA's hlo-opt: the module as
// the compiler's passes leave it, before lowering (compiler/passes/pipeline.h).
#pragma once

#include "sim/command.h"

namespace tpusim::sim {

Command AddOptCommand(CLI::App& app);

}  // namespace tpusim::sim
