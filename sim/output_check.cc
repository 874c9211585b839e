#include "sim/output_check.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <limits>

#include "isa/error.h"

namespace tpusim::sim {
namespace {

// Position of a float's bits in the ordered list of its type's values (sign-magnitude to a line).
int64_t OrderedPosition(uint64_t bits, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  const int64_t magnitude = static_cast<int64_t>(bits & (sign - 1));
  return (bits & sign) ? -magnitude : magnitude;
}

std::string IndexText(const std::vector<int64_t>& dims, int64_t linear) {
  std::vector<int64_t> index(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    index[d] = linear % dims[d];
    linear /= dims[d];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

// Two sums of the same n terms in different orders: the evaluator's (in increasing index, in f32
// for dots, in double for reduces) and the kernel's (the order its accumulation states). Each is
// within (n - 1) u sum|x| of the exact sum (u = 2^-24; any order), so they differ by at most
// 2 (n - 1) u sum|x|. Without cancellation sum|x| = |s|: at most 2n f32 ulps (a bf16 result: one
// ulp, a rounding that flips, plus 2n / 2^16; UlpsFor). With cancellation the relative error is
// unbounded, so an absolute bound passes too: sum|x| <= n max|x|, and --check's random inputs
// lie in [-1, 1), giving 2 n^2 u (a product of two such inputs too). Inputs given with --input
// that are larger may fail this bound without the kernel being wrong; the reason says so.
CheckBound SumBound(int64_t n) {
  CheckBound bound;
  bound.max_ulps = static_cast<uint64_t>(2 * n);
  bound.max_abs = 2.0 * static_cast<double>(n) * static_cast<double>(n) * 0x1.0p-24;
  return bound;
}

// The bound of one accumulation the compiled module states (compiler/lower/accumulations.h):
//   - a sum of n terms: SumBound(n);
//   - a product of n factors, each rounded to f32 in another order: each of the n - 1 roundings
//     moves the result by at most half an ulp relative to the exact product, in both programs:
//     2 (n - 1) ulps;
//   - batch-norm inference, y = x * s + (offset - mean * s) with s = scale * rsqrt(var + epsilon):
//     five f32 roundings and rsqrt's (at most 2 ulps): 16 ulps of y, or, where x * s and the shift
//     cancel, 16 ulps of their size, at most 2 / sqrt(epsilon) for inputs within [-1, 1].
CheckBound BoundOf(const compiler::Accumulation& a) {
  using Kind = compiler::Accumulation::Kind;
  CheckBound bound;
  switch (a.kind) {
    case Kind::kSum:
      bound = SumBound(a.depth);
      break;
    case Kind::kProduct:
      bound.max_ulps = static_cast<uint64_t>(2 * (a.depth - 1));
      bound.reason = a.source + " " + a.order;
      return bound;
    case Kind::kBatchNormInference:
      bound = {16, 16 * 0x1.0p-24 * 2 / std::sqrt(std::max(a.epsilon, 1e-30)), ""};
      break;
  }
  bound.reason = fmt::format("{} {}: {} f32 ulps, or an absolute {} for inputs within [-1, 1]", a.source, a.order,
                             bound.max_ulps, bound.max_abs);
  return bound;
}

// The looser of two bounds, with each of their reasons ("; "-separated) once.
void Widen(CheckBound& bound, const CheckBound& other) {
  if (other.reason.empty()) return;
  bound.max_ulps = std::max(bound.max_ulps, other.max_ulps);
  bound.max_abs = std::max(bound.max_abs, other.max_abs);
  for (std::size_t at = 0; at < other.reason.size();) {
    const std::size_t end = std::min(other.reason.find("; ", at), other.reason.size());
    const std::string part = other.reason.substr(at, end - at);
    if (bound.reason.find(part) == std::string::npos) bound.reason += (bound.reason.empty() ? "" : "; ") + part;
    at = end + 2;
  }
}

}  // namespace

std::vector<CheckBound> BoundsFor(const std::vector<std::vector<compiler::Accumulation>>& outputs) {
  std::vector<CheckBound> bounds;
  for (const std::vector<compiler::Accumulation>& accumulations : outputs) {
    CheckBound bound;
    for (const compiler::Accumulation& a : accumulations) Widen(bound, BoundOf(a));
    if (bound.reason.empty()) bound.reason = "every operation it depends on computes as XLA's evaluator does";
    bounds.push_back(std::move(bound));
  }
  return bounds;
}

CheckBound Loosest(const std::vector<CheckBound>& bounds) {
  CheckBound loosest;
  for (const CheckBound& bound : bounds) Widen(loosest, bound);
  return loosest;
}

uint64_t UlpsFor(const CheckBound& bound, isa::ElementType type) {
  if (bound.max_ulps == 0) return 0;
  // f32's 23 stored mantissa bits less the type's: how many f32 ulps one of its ulps spans.
  int coarser = 0;
  switch (type) {
    case isa::ElementType::kBF16: coarser = 23 - 7; break;
    case isa::ElementType::kF16: coarser = 23 - 10; break;
    default: return bound.max_ulps;
  }
  const uint64_t scale = uint64_t{1} << coarser;
  return 1 + (bound.max_ulps + scale - 1) / scale;
}

CheckResult CompareOutputs(const std::vector<const hlo::Literal*>& expected, const std::vector<isa::NpyArray>& actual,
                           const CheckBound& bound) {
  return CompareOutputs(expected, actual, std::vector<CheckBound>(expected.size(), bound));
}

CheckResult CompareOutputs(const std::vector<const hlo::Literal*>& expected, const std::vector<isa::NpyArray>& actual,
                           const std::vector<CheckBound>& bounds) {
  if (expected.size() != actual.size()) {
    throw Error(fmt::format("--check: the evaluator gives {} outputs and the simulation {}", expected.size(), actual.size()));
  }
  if (bounds.size() != expected.size()) {
    throw Error(fmt::format("internal: --check has {} bounds for {} outputs", bounds.size(), expected.size()));
  }
  CheckResult result;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const CheckBound& bound = bounds[i];
    const hlo::Literal& want = *expected[i];
    const isa::NpyArray& got = actual[i];
    if (want.element_type() != got.type || want.dims() != got.dims) {
      throw Error(fmt::format("--check: output {} is {} in the evaluator but {}[{}] in the simulation", i,
                              isa::ToString(want.shape()), isa::ElementTypeName(got.type), fmt::join(got.dims, ",")));
    }
    const isa::ElementType type = want.element_type();
    const int width = isa::ElementBitWidth(type);
    const int bytes = isa::ElementByteWidth(type);
    const bool is_float = isa::IsFloat(type);
    const uint64_t max_ulps = UlpsFor(bound, type);
    const std::span<const uint8_t> a = want.bytes();
    const hlo::Literal have = hlo::Literal::FromBytes(want.shape(), got.data);
    for (int64_t e = 0; e < want.element_count(); ++e) {
      uint64_t x = 0;
      uint64_t y = 0;
      std::memcpy(&x, a.data() + e * bytes, bytes);
      std::memcpy(&y, got.data.data() + e * bytes, bytes);
      if (x == y) continue;
      uint64_t ulps = std::numeric_limits<uint64_t>::max();
      if (is_float) {
        const bool nan_x = std::isnan(want.GetDouble(e));
        const bool nan_y = std::isnan(have.GetDouble(e));
        if (nan_x && nan_y) continue;
        if (!nan_x && !nan_y) {
          const int64_t distance = OrderedPosition(x, width) - OrderedPosition(y, width);
          ulps = static_cast<uint64_t>(distance < 0 ? -distance : distance);
        }
      }
      // Bit-exact families allow no difference at all: -0 and +0 are 0 ulps apart but not equal.
      const bool exact = bound.max_ulps == 0 && bound.max_abs == 0;
      bool beyond = !is_float || ulps > max_ulps || exact;
      if (beyond && is_float && bound.max_abs > 0 && std::abs(want.GetDouble(e) - have.GetDouble(e)) <= bound.max_abs) {
        beyond = false;
      }
      if (beyond) ++result.mismatches;
      if (ulps >= result.worst_ulps || (beyond && result.ok)) {
        const double want_value = want.GetDouble(e);
        const double got_value = have.GetDouble(e);
        result.worst_ulps = std::max(result.worst_ulps, ulps);
        result.worst_abs = std::abs(want_value - got_value);
        result.worst = fmt::format("output {} element {}: expected {}, got {}{}", i, IndexText(want.dims(), e),
                                   want_value, got_value,
                                   is_float && ulps != std::numeric_limits<uint64_t>::max() ? fmt::format(" ({} ulp)", ulps) : "");
      }
      if (beyond) result.ok = false;
    }
  }
  return result;
}

}  // namespace tpusim::sim
