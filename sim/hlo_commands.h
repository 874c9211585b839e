// `tpusim parse` and `tpusim eval`: the HLO front end and the reference evaluator on the
// command line.
#pragma once

#include "sim/command.h"

namespace tpusim::sim {

Command AddParseCommand(CLI::App& app);
Command AddEvalCommand(CLI::App& app);

}  // namespace tpusim::sim
