#include "sim/inputs.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <random>

#include "isa/error.h"
#include "isa/npy.h"

namespace tpusim::sim {
namespace {

using hlo::Literal;
using isa::ElementType;

const hlo::Instruction* FindParameter(const hlo::Computation& entry, const std::string& key) {
  const bool is_number = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  if (is_number) {
    const std::size_t number = std::stoull(key);
    return number < entry.parameters().size() ? entry.parameters()[number] : nullptr;
  }
  const std::string name = !key.empty() && key[0] == '%' ? key.substr(1) : key;
  for (const hlo::Instruction* parameter : entry.parameters()) {
    if (parameter->name() == name) return parameter;
  }
  return nullptr;
}

Literal ReadInput(const hlo::Instruction& parameter, const std::string& path) {
  const isa::Shape& shape = parameter.shape();
  if (shape.is_tuple) {
    throw Error(path + ": parameter '" + parameter.name() + "' is a tuple; .npy inputs are arrays");
  }
  isa::NpyArray array = isa::ReadNpy(path, shape.element_type);
  if (array.dims != shape.dims) {
    std::string dims;
    for (std::size_t i = 0; i < array.dims.size(); ++i) dims += (i ? "," : "") + std::to_string(array.dims[i]);
    throw Error(path + ": array of dims [" + dims + "] does not match parameter '" +
                parameter.name() + "' of shape " + isa::ToString(shape));
  }
  return Literal::FromBytes(shape, std::move(array.data));
}

}  // namespace

Literal RandomLiteral(const isa::Shape& shape, uint64_t seed) {
  if (shape.is_tuple) {
    std::vector<Literal> elements;
    for (std::size_t i = 0; i < shape.tuple_shapes.size(); ++i) {
      elements.push_back(RandomLiteral(shape.tuple_shapes[i], seed * 31 + i + 1));
    }
    return Literal::Tuple(std::move(elements));
  }
  Literal literal(shape);
  if (shape.element_type == ElementType::kToken) return literal;
  std::mt19937_64 engine(seed);
  // Values from the top 53 bits of each word, so the mapping is the same on every platform.
  auto unit = [&engine] { return static_cast<double>(engine() >> 11) * 0x1.0p-53; };
  const ElementType type = shape.element_type;
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    if (type == ElementType::kPred) {
      literal.SetInt(i, static_cast<int64_t>(engine() >> 63));
    } else if (isa::IsFloat(type)) {
      literal.SetDouble(i, 2 * unit() - 1);
    } else if (isa::IsSignedInt(type)) {
      literal.SetInt(i, static_cast<int64_t>(engine() >> 57) - 64);
    } else {
      literal.SetInt(i, static_cast<int64_t>(engine() >> 57));
    }
  }
  return literal;
}

namespace {

// The parameters `inputs` name, read from their files (nullopt for the others).
std::vector<std::optional<Literal>> GivenArguments(const hlo::Computation& entry, const std::vector<std::string>& inputs) {
  std::vector<std::optional<Literal>> given(entry.parameters().size());
  for (const std::string& input : inputs) {
    const std::size_t equals = input.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == input.size()) {
      throw Error("--input " + input + ": expected N=FILE.npy or NAME=FILE.npy");
    }
    const std::string key = input.substr(0, equals);
    const hlo::Instruction* parameter = FindParameter(entry, key);
    if (!parameter) {
      throw Error("--input " + input + ": the entry computation '" + entry.name() +
                  "' has no parameter " + key + " (it has " +
                  std::to_string(entry.parameters().size()) + ")");
    }
    auto& slot = given[parameter->parameter_number()];
    if (slot) throw Error("--input " + input + ": parameter " + key + " is given twice");
    slot = ReadInput(*parameter, input.substr(equals + 1));
  }
  return given;
}

// The bytes of the smallest array in `shape` (its elements' storage, no layout).
uint64_t SmallestArrayBytes(const isa::Shape& shape) {
  if (!shape.is_tuple) {
    return static_cast<uint64_t>(isa::ElementCount(shape)) * static_cast<uint64_t>(isa::ElementByteWidth(shape.element_type));
  }
  uint64_t smallest = UINT64_MAX;
  for (const isa::Shape& element : shape.tuple_shapes) smallest = std::min(smallest, SmallestArrayBytes(element));
  return smallest;
}

}  // namespace

std::vector<Literal> PrepareArguments(const hlo::Computation& entry,
                                      const std::vector<std::string>& inputs, uint64_t seed) {
  std::vector<std::optional<Literal>> given = GivenArguments(entry, inputs);
  std::vector<Literal> arguments;
  for (std::size_t p = 0; p < given.size(); ++p) {
    arguments.push_back(given[p] ? std::move(*given[p])
                                 : RandomLiteral(entry.parameters()[p]->shape(), seed * 1'000'003 + p));
  }
  return arguments;
}

std::vector<std::optional<Literal>> PrepareTimingArguments(const hlo::Computation& entry,
                                                           const std::vector<std::string>& inputs, uint64_t seed,
                                                           uint64_t max_random_bytes) {
  std::vector<std::optional<Literal>> arguments = GivenArguments(entry, inputs);
  for (std::size_t p = 0; p < arguments.size(); ++p) {
    const isa::Shape& shape = entry.parameters()[p]->shape();
    if (!arguments[p] && SmallestArrayBytes(shape) <= max_random_bytes) {
      arguments[p] = RandomLiteral(shape, seed * 1'000'003 + p);
    }
  }
  return arguments;
}

std::size_t ArrayLeafCount(const isa::Shape& shape) {
  if (!shape.is_tuple) return shape.element_type == isa::ElementType::kToken ? 0 : 1;
  std::size_t count = 0;
  for (const isa::Shape& element : shape.tuple_shapes) count += ArrayLeafCount(element);
  return count;
}

std::vector<const Literal*> FlattenLeaves(const Literal& value) {
  if (!value.is_tuple()) return {&value};
  std::vector<const Literal*> leaves;
  for (const Literal& element : value.elements()) {
    for (const Literal* leaf : FlattenLeaves(element)) leaves.push_back(leaf);
  }
  return leaves;
}

}  // namespace tpusim::sim
