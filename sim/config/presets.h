// Finding configs: the presets directory, and what `--config NAME_OR_PATH` refers to.
#pragma once

#include <string>
#include <vector>

namespace tpusim::sim {

// The preset `--config` defaults to.
inline constexpr const char* kDefaultPreset = "tpu_v4";

// The directory of the presets (configs/*.pbtxt): the source tree's configs/, whose path is
// compiled in (TPUSIM_CONFIGS_DIR), if it still exists; otherwise `configs` beside the directory
// of the running binary (BINARY_DIR/../configs, for a build directory inside the checkout or an
// installed copy). Empty if neither exists.
std::string ConfigsDirectory();

// The names of the presets in ConfigsDirectory() (file names without .pbtxt), sorted.
std::vector<std::string> PresetNames();

// The config file `name_or_path` refers to: the path itself if it exists; else, for a bare name
// without '/' or '.', the preset ConfigsDirectory()/NAME.pbtxt (so `--config tpu_v5e` works).
// Throws tpusim::Error naming what was tried if neither exists.
std::string ResolveConfigPath(const std::string& name_or_path);

}  // namespace tpusim::sim
