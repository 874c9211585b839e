// The compiler's view of a chip (compiler::CompileOptions) from its ArchConfig.
#pragma once

#include "compiler/lower/compile.h"
#include "sim/config/arch_config.pb.h"

namespace tpusim::sim {

compiler::CompileOptions CompileOptionsFor(const ArchConfig& config);

}  // namespace tpusim::sim
