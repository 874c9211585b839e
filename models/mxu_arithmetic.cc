#include "models/mxu_arithmetic.h"

#include <algorithm>
#include <string>
#include <vector>

#include "isa/convert.h"
#include "isa/error.h"
#include "models/f32_bits.h"

namespace tpusim::models {
namespace {

using isa::ElementType;

// A raw element of a float input type as f32 (exact: every such value is an f32).
float DecodeFloat(ElementType type, uint32_t bits) {
  switch (type) {
    case ElementType::kF32: return BitsToF32(bits);
    case ElementType::kBF16: return isa::Bf16ToF32(static_cast<uint16_t>(bits));
    case ElementType::kF16: return isa::F16ToF32(static_cast<uint16_t>(bits));
    case ElementType::kF8E4M3FN: return isa::F8E4M3FNToF32(static_cast<uint8_t>(bits));
    case ElementType::kF8E5M2: return isa::F8E5M2ToF32(static_cast<uint8_t>(bits));
    default: break;
  }
  throw Error("the MXU has no float input type " + std::string(isa::ElementTypeName(type)));
}

std::vector<float> DecodeAll(ElementType type, std::span<const uint32_t> bits) {
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) values[i] = DecodeFloat(type, bits[i]);
  return values;
}

void MatmulS8(std::span<const uint32_t> lhs, std::span<const uint32_t> weights, uint32_t rows,
              uint32_t depth, uint32_t columns, std::span<uint32_t> out, bool accumulate) {
  std::vector<int32_t> w(weights.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(weights[i] & 0xFF);
  for (uint32_t i = 0; i < rows; ++i) {
    uint32_t* acc = &out[size_t{i} * columns];
    if (!accumulate) std::fill(acc, acc + columns, 0u);
    for (uint32_t k = 0; k < depth; ++k) {
      const int32_t a = static_cast<int8_t>(lhs[size_t{i} * depth + k] & 0xFF);
      if (a == 0) continue;  // exact integers: skipping zero terms changes nothing
      const int32_t* w_row = &w[size_t{k} * columns];
      for (uint32_t c = 0; c < columns; ++c) acc[c] += static_cast<uint32_t>(a * w_row[c]);
    }
  }
}

// Float inputs. Each step is written so that no fused multiply-add can change it: for narrow
// types the f64 product is exact, so fusing it into the f64 sum changes nothing, and the sum is
// rounded to f32 once (an f32 plus an exact product of at most 22 significant bits either fits
// f64 exactly or differs from it by far less than an f32 half-ulp, so no double rounding); for
// f32 the product is rounded to f32 by a conversion, which nothing fuses across.
void MatmulFloat(ElementType type, std::span<const uint32_t> lhs, std::span<const uint32_t> weights,
                 uint32_t rows, uint32_t depth, uint32_t columns, std::span<uint32_t> out,
                 bool accumulate) {
  const std::vector<float> a_values = DecodeAll(type, lhs);
  const std::vector<float> w_values = DecodeAll(type, weights);
  const bool rounded_products = type == ElementType::kF32;
  std::vector<float> acc(columns);
  for (uint32_t i = 0; i < rows; ++i) {
    if (accumulate) {
      for (uint32_t c = 0; c < columns; ++c) acc[c] = BitsToF32(out[size_t{i} * columns + c]);
    } else {
      std::fill(acc.begin(), acc.end(), -0.0f);
    }
    for (uint32_t k = 0; k < depth; ++k) {
      const double a = a_values[size_t{i} * depth + k];
      const float* w_row = &w_values[size_t{k} * columns];
      if (rounded_products) {
        for (uint32_t c = 0; c < columns; ++c) {
          const float product = static_cast<float>(a * static_cast<double>(w_row[c]));
          acc[c] = acc[c] + product;
        }
      } else {
        for (uint32_t c = 0; c < columns; ++c) {
          acc[c] =
              static_cast<float>(static_cast<double>(acc[c]) + a * static_cast<double>(w_row[c]));
        }
      }
    }
    for (uint32_t c = 0; c < columns; ++c) out[size_t{i} * columns + c] = ResultBits(acc[c]);
  }
}

}  // namespace

namespace {

void Matmul(ElementType type, std::span<const uint32_t> lhs, std::span<const uint32_t> weights,
            uint32_t rows, uint32_t depth, uint32_t columns, std::span<uint32_t> out,
            bool accumulate) {
  const size_t need_lhs = size_t{rows} * depth;
  const size_t need_w = size_t{depth} * columns;
  const size_t need_out = size_t{rows} * columns;
  if (lhs.size() < need_lhs || weights.size() < need_w || out.size() < need_out) {
    throw Error("MatmulRows: spans too small for " + std::to_string(rows) + " x " +
                std::to_string(depth) + " x " + std::to_string(columns));
  }
  if (type == ElementType::kS8) return MatmulS8(lhs, weights, rows, depth, columns, out, accumulate);
  MatmulFloat(type, lhs, weights, rows, depth, columns, out, accumulate);
}

}  // namespace

void MatmulRows(ElementType type, std::span<const uint32_t> lhs, std::span<const uint32_t> weights,
                uint32_t rows, uint32_t depth, uint32_t columns, std::span<uint32_t> out) {
  Matmul(type, lhs, weights, rows, depth, columns, out, false);
}

void MatmulRowsAccumulate(ElementType type, std::span<const uint32_t> lhs,
                          std::span<const uint32_t> weights, uint32_t rows, uint32_t depth,
                          uint32_t columns, std::span<uint32_t> out) {
  Matmul(type, lhs, weights, rows, depth, columns, out, true);
}

}  // namespace tpusim::models
