#include "sim/config/presets.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "isa/error.h"

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;

bool IsDirectory(const fs::path& path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

}  // namespace

std::string ConfigsDirectory() {
#ifdef TPUSIM_CONFIGS_DIR
  if (IsDirectory(TPUSIM_CONFIGS_DIR)) return TPUSIM_CONFIGS_DIR;
#endif
  std::error_code error;
  const fs::path binary = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path beside = binary.parent_path().parent_path() / "configs";
    if (IsDirectory(beside)) return beside.string();
  }
  return "";
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  const std::string directory = ConfigsDirectory();
  if (directory.empty()) return names;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    if (entry.path().extension() == ".pbtxt") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ResolveConfigPath(const std::string& name_or_path) {
  std::error_code error;
  if (fs::exists(name_or_path, error)) return name_or_path;
  const bool bare_name = name_or_path.find_first_of("/.") == std::string::npos && !name_or_path.empty();
  if (!bare_name) throw Error(name_or_path + ": no such file");
  const std::string directory = ConfigsDirectory();
  if (directory.empty()) {
    throw Error(name_or_path + ": no such file, and no configs/ directory to find a preset of that "
                "name in (looked in the source tree and beside the binary)");
  }
  const fs::path preset = fs::path(directory) / (name_or_path + ".pbtxt");
  if (fs::exists(preset, error)) return preset.string();
  std::string names;
  for (const std::string& name : PresetNames()) names += (names.empty() ? "" : ", ") + name;
  throw Error(name_or_path + ": no such file, and no preset of that name in " + directory +
              " (presets: " + names + ")");
}

}  // namespace tpusim::sim
