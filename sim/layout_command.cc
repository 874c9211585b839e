#include "sim/layout_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "isa/error.h"
#include "isa/layout_index.h"
#include "isa/materialize.h"
#include "isa/npy.h"
#include "isa/shape.h"

namespace tpusim::sim {
namespace {

using isa::LayoutMap;
using isa::Shape;

struct LayoutOptions {
  std::string shape_text;
  std::string index_text;
  std::string materialize_path;
  std::string dematerialize_path;
  std::string output_path;
};

std::string MemorySpaceName(int64_t space) {
  switch (space) {
    case isa::kMemorySpaceHbm: return "HBM";
    case isa::kMemorySpaceVmem: return "VMEM";
    case isa::kMemorySpaceSmem: return "SMEM";
    case isa::kMemorySpaceCmem: return "CMEM";
    case isa::kMemorySpaceHost: return "host";
    default: return "device-specific";
  }
}

Shape ParseShapeArgument(const std::string& text) {
  try {
    return isa::ParseShape(text);
  } catch (const ParseError& error) {
    throw Error(FormatParseError("SHAPE", text, error));
  }
}

std::vector<int64_t> ParseIndex(const std::string& text) {
  std::vector<int64_t> index;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    std::size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size()) {
      throw Error("--index " + text + ": '" + item + "' is not an integer (expected i,j,...)");
    }
    index.push_back(value);
    pos = comma + 1;
  }
  return index;
}

void PrintLayout(const LayoutMap& map, bool defaulted) {
  const Shape& shape = map.shape();
  const isa::Layout& layout = map.layout();
  fmt::print("{:<16}{}\n", "shape", isa::ToString(shape));
  if (defaulted) fmt::print("{:<16}{} (the TPU default)\n", "layout", isa::ToString(layout));
  fmt::print("{:<16}{} ({} bits)\n", "element type", isa::ElementTypeName(shape.element_type),
             map.element_bits());
  fmt::print("{:<16}S({}) {}\n", "memory space", layout.memory_space,
             MemorySpaceName(layout.memory_space));
  fmt::print("{:<16}[{}]  dims {{{}}} major to minor\n", "physical shape",
             fmt::join(map.physical_dims(), ","), fmt::join(map.physical_order(), ","));
  const auto tiled = map.tiled_dims();
  for (std::size_t i = 0; i < tiled.size(); ++i) {
    fmt::print("{:<16}[{}]\n", "after T" + isa::ToString(layout.tiles[i]), fmt::join(tiled[i], ","));
  }
  const int64_t padding = map.physical_element_count() - map.element_count();
  fmt::print("{:<16}{} ({} laid out, {} padding)\n", "elements", map.element_count(),
             map.physical_element_count(), padding);
  fmt::print("{:<16}{}\n", "byte size", map.byte_size());
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error(path + ": cannot write");
}

void MaterializeFile(const LayoutMap& map, const std::string& in, const std::string& out) {
  const Shape& shape = map.shape();
  const isa::NpyArray array = isa::ReadNpy(in, shape.element_type);
  if (array.dims != shape.dims) {
    throw Error(fmt::format("{}: array shape [{}] does not match {}", in,
                            fmt::join(array.dims, ","), isa::ToString(shape)));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint8_t> image(map.byte_size());
  isa::MaterializeInto(map, array.data, image);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  spdlog::info("materialized {} bytes in {:.3f} s", image.size(), took.count());
  WriteBytes(out, image);
  fmt::print("wrote the {}-byte device image to {}\n", image.size(), out);
}

void DematerializeFile(const LayoutMap& map, const std::string& in, const std::string& out) {
  const Shape& shape = map.shape();
  const std::vector<uint8_t> image = ReadBytes(in);
  if (static_cast<int64_t>(image.size()) != map.byte_size()) {
    throw Error(fmt::format("{}: holds {} bytes but the image of {} is {} bytes", in, image.size(),
                            isa::ToString(shape), map.byte_size()));
  }
  std::vector<uint8_t> logical(map.element_count() * isa::ElementByteWidth(shape.element_type));
  isa::DematerializeInto(map, image, logical);
  isa::WriteNpy(out, shape.element_type, shape.dims, logical);
  fmt::print("wrote the [{}] {} array to {}\n", fmt::join(shape.dims, ","),
             isa::ElementTypeName(shape.element_type), out);
}

void RunLayout(const LayoutOptions& options) {
  Shape shape = ParseShapeArgument(options.shape_text);
  if (shape.is_tuple) throw Error("SHAPE " + options.shape_text + " is a tuple; give one array shape");
  const bool defaulted = !shape.layout;
  if (defaulted) shape.layout = isa::DefaultTpuLayout(shape.element_type, shape.rank());
  const LayoutMap map(shape);
  PrintLayout(map, defaulted);
  if (!options.index_text.empty()) {
    const std::vector<int64_t> index = ParseIndex(options.index_text);
    const int64_t linear = map.LinearIndex(index);
    fmt::print("{:<16}{{{}}} -> linear index {}, byte offset {}\n", "index", fmt::join(index, ","),
               linear, map.ByteOffset(index));
  }
  if (!options.materialize_path.empty() || !options.dematerialize_path.empty()) {
    if (options.output_path.empty()) throw Error("--materialize and --dematerialize need -o OUT");
  }
  if (!options.materialize_path.empty()) {
    MaterializeFile(map, options.materialize_path, options.output_path);
  }
  if (!options.dematerialize_path.empty()) {
    DematerializeFile(map, options.dematerialize_path, options.output_path);
  }
}

}  // namespace

Command AddLayoutCommand(CLI::App& app) {
  auto options = std::make_shared<LayoutOptions>();
  CLI::App* command = app.add_subcommand(
      "layout",
      "Show how XLA lays out an array: its physical shape, the shape after each tile, its byte "
      "size, and where one element lives; materialize a .npy array into its device byte image or "
      "read an image back. A SHAPE without a layout gets the TPU default layout.");
  command->add_option("SHAPE", options->shape_text,
                      "An XLA array shape, e.g. 'bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}'")
      ->required();
  command->add_option("--index", options->index_text,
                      "Print the linear index and byte offset of the element i,j,... (logical index)");
  auto* materialize = command->add_option(
      "--materialize", options->materialize_path,
      "Read a row-major .npy array of SHAPE's dims and element type and write its device byte image to -o");
  command->add_option("--dematerialize", options->dematerialize_path,
                      "Read a device byte image of SHAPE and write the array as .npy to -o")
      ->excludes(materialize);
  command->add_option("-o,--output", options->output_path, "Output file for --materialize/--dematerialize");
  return Command{command, [options] { RunLayout(*options); }};
}

}  // namespace tpusim::sim
