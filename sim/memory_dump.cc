#include "sim/memory_dump.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "isa/error.h"
#include "sim/chip/report_json.h"

namespace tpusim::sim {

void DumpMemory(const compiler::CompiledModule& compiled, const Chip& chip, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::string index = "[";
  bool first = true;
  const auto dump = [&](const compiler::ModuleArray& array, const std::string& role) {
    const std::string file = fmt::format("{}_{}.bin", role, array.index);
    // The device copy: in HBM, or in host memory for a host array (host offload, S(5)).
    const models::Memory* memory = chip.memory(array.space == "host" ? isa::MEMORY_SPACE_HOST : isa::MEMORY_SPACE_HBM);
    const std::vector<uint8_t> bytes = memory->Read(array.address, array.size_bytes);
    std::ofstream out(std::filesystem::path(dir) / file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw Error(dir + "/" + file + ": cannot write");
    index += fmt::format("{}\n  {{\"name\": {}, \"role\": \"{}\", \"shape\": {}, \"memory_space\": {}, "
                         "\"address\": {}, \"size_bytes\": {}, \"file\": {}}}",
                         first ? "" : ",", JsonString(array.name), role, JsonString(isa::ToString(array.shape)), JsonString(array.space), array.address,
                         array.size_bytes, JsonString(file));
    first = false;
  };
  for (const compiler::ModuleArray& array : compiled.parameters) dump(array, "parameter");
  for (const compiler::ModuleArray& array : compiled.outputs) dump(array, "output");
  index += "\n]\n";
  std::ofstream out(std::filesystem::path(dir) / "index.json", std::ios::binary);
  out << index;
  if (!out) throw Error(dir + "/index.json: cannot write");
}

}  // namespace tpusim::sim
