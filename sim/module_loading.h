// Reading an HLO module from a file for the commands that take one (parse, eval, opt, compile, run),
// and writing what they make of it.
#pragma once

#include <memory>
#include <string>

#include "compiler/hlo/ir.h"

namespace tpusim::sim {

// Parses (and, with `verify`, verifies) the module at `path`. Throws tpusim::Error with
// `path:line:col` for a bad module, or `PATH: cannot open for reading`.
std::unique_ptr<hlo::Module> LoadModule(const std::string& path, bool verify);

// Writes `text` to `path`; throws tpusim::Error `PATH: cannot write`.
void WriteFile(const std::string& path, const std::string& text);

}  // namespace tpusim::sim
