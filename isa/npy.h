// Reading and writing NumPy .npy files: how tpusim takes input arrays and hands back outputs.
// The format is NumPy's (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html);
// the types NumPy has no name for (bf16, f8) travel as raw bit patterns. See docs/npy.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "isa/element_type.h"

namespace tpusim::isa {

struct NpyArray {
  ElementType type;
  std::vector<int64_t> dims;   // C order (row-major) logical dims; empty = scalar
  std::vector<uint8_t> data;   // little-endian element bytes, row-major, dims-product * byte width
};

// Parses the bytes of a .npy file (versions 1.0, 2.0 and 3.0). `expected` is the element type the
// caller needs (e.g. from an HLO parameter): it is what lets raw bit patterns be read ('<V2' or
// '<u2' as bf16, '|V1' or '|u1' as f8e4m3fn / f8e5m2); any other difference between the file's
// type and `expected` is an error. Big-endian files are byte-swapped to little-endian.
// Throws tpusim::Error, with a message that starts with `where` (the path), on anything malformed
// or unsupported; it never reads out of bounds, whatever the bytes.
NpyArray ParseNpy(std::span<const uint8_t> bytes, std::optional<ElementType> expected,
                  const std::string& where);

// Reads the file at `path` and parses it as ParseNpy does.
NpyArray ReadNpy(const std::string& path, std::optional<ElementType> expected = std::nullopt);

// The bytes of a .npy file as current NumPy writes it: version 1.0 unless the header needs more
// than 65535 bytes (then 2.0), data starting at a multiple of 64 bytes. bf16 is written as '<V2'
// and f8e4m3fn / f8e5m2 as '|V1' (raw bits; load with .view(ml_dtypes.bfloat16) and so on).
// `data` is little-endian, row-major, product(dims) * byte width bytes. Throws tpusim::Error for
// an unsupported type, a negative dim or a data size that does not match the dims.
std::vector<uint8_t> SerializeNpy(ElementType type, std::span<const int64_t> dims,
                                  std::span<const uint8_t> data);

// Writes SerializeNpy's bytes to `path`; throws tpusim::Error (starting with the path) on failure.
void WriteNpy(const std::string& path, ElementType type, std::span<const int64_t> dims,
              std::span<const uint8_t> data);

}  // namespace tpusim::isa
