// The arguments of a module's entry computation, as `tpusim eval` and `tpusim run` take them:
// `--input N=FILE.npy` by parameter number or name, and deterministic random values for the
// parameters no input names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/literal.h"

namespace tpusim::sim {

// One Literal per parameter of `entry`. `inputs` are "N=PATH" or "NAME=PATH" (NAME with or
// without '%'); each .npy must have the parameter's element type and dims. A parameter with no
// input gets values from a generator seeded by (seed, parameter number), so it does not depend on
// which other parameters were given: floats uniform in [-1, 1), signed ints in [-64, 64),
// unsigned ints in [0, 128), pred 0 or 1, each rounded to the type with XLA's convert. Throws
// tpusim::Error naming the input for an unknown parameter, a repeated one, or a file that does not
// match.
std::vector<hlo::Literal> PrepareArguments(const hlo::Computation& entry,
                                           const std::vector<std::string>& inputs, uint64_t seed);

// For --timing-only runs: the same, except that a parameter no input names whose arrays all hold
// more than `max_random_bytes` gets no value (nullopt, so it stays zero). Its values could not
// reach the kernels anyway: a timing-only run moves no DMA of more than
// models::kTimingOnlyMovedBytes, its host-to-HBM copy included, so HBM holds zeros for it either
// way (a kernel reading a few bytes of such an array, e.g. an index, reads zeros in timing-only
// runs, with or without this). Drawing its values (Gemma 3: 1.2 G elements) only costs time. The
// small ones (loop bounds, indices) get the same values as in a run with data: they steer control
// flow.
std::vector<std::optional<hlo::Literal>> PrepareTimingArguments(const hlo::Computation& entry,
                                                                const std::vector<std::string>& inputs,
                                                                uint64_t seed, uint64_t max_random_bytes);

// A value of `shape` (array or tuple) drawn as above from `seed`.
hlo::Literal RandomLiteral(const isa::Shape& shape, uint64_t seed);

// The leaves of `value` in order (a non-tuple value is its own single leaf).
std::vector<const hlo::Literal*> FlattenLeaves(const hlo::Literal& value);

// The array leaves of `shape` (tokens hold no array): a parameter's arguments, an output's arrays.
std::size_t ArrayLeafCount(const isa::Shape& shape);

}  // namespace tpusim::sim
