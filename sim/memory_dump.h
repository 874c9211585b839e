// `tpusim run --dump-memory DIR`: the raw device bytes of every entry parameter and output as
// they lie in simulated HBM after the run (their device layouts, padding included), one file each,
// and DIR/index.json listing {name, role, shape, memory_space, address, size_bytes, file}.
#pragma once

#include <string>

#include "compiler/lower/compile.h"
#include "sim/chip/chip.h"

namespace tpusim::sim {

void DumpMemory(const compiler::CompiledModule& compiled, const Chip& chip, const std::string& dir);

}  // namespace tpusim::sim
