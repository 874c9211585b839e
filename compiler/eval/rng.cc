#include "compiler/eval/rng.h"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "compiler/eval/element_data.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

// A uniform double in [0, 1): the top 53 bits of a word, scaled.
double UnitInterval(std::mt19937_64& engine) {
  return static_cast<double>(engine() >> 11) * 0x1.0p-53;
}

// A uniform integer in [0, range), range >= 1: words below 2^64 mod range are redrawn so that
// every residue is equally likely.
uint64_t UniformBelow(uint64_t range, std::mt19937_64& engine) {
  const uint64_t reject_below = (uint64_t{0} - range) % range;
  uint64_t word = engine();
  while (word < reject_below) word = engine();
  return word % range;
}

// A float value, rounded to `type` as an element of it would hold it (f64 for f64).
double RoundForType(isa::ElementType type, double value) {
  if (type == isa::ElementType::kF64) return value;
  return RoundToElement(type, static_cast<float>(value));
}

hlo::Literal UniformInts(const hlo::Literal& a, const hlo::Literal& b, const Dims& dims,
                         std::mt19937_64& engine) {
  const isa::ElementType type = a.element_type();
  const bool is_signed = isa::IsSignedInt(type);
  const int64_t count = ElementCountOf(dims);
  std::vector<uint64_t> values(count);
  // Work on 64-bit patterns: the low bound plus an offset below the range wraps correctly.
  const uint64_t low =
      is_signed ? static_cast<uint64_t>(Widen<int64_t>(a)[0]) : Widen<uint64_t>(a)[0];
  const uint64_t high =
      is_signed ? static_cast<uint64_t>(Widen<int64_t>(b)[0]) : Widen<uint64_t>(b)[0];
  const bool empty =
      is_signed ? static_cast<int64_t>(high) <= static_cast<int64_t>(low) : high <= low;
  for (uint64_t& value : values) value = empty ? low : low + UniformBelow(high - low, engine);
  if (!is_signed) return Narrow<uint64_t>(type, dims, values);
  return Narrow<int64_t>(type, dims, std::vector<int64_t>(values.begin(), values.end()));
}

hlo::Literal UniformFloats(const hlo::Literal& a, const hlo::Literal& b, const Dims& dims,
                           std::mt19937_64& engine) {
  const isa::ElementType type = a.element_type();
  const double low = Widen<double>(a)[0];
  const double high = Widen<double>(b)[0];
  std::vector<double> values(ElementCountOf(dims), low);
  if (!(low < high)) return Narrow<double>(type, dims, values);
  for (double& value : values) {
    do {
      value = RoundForType(type, low + (high - low) * UnitInterval(engine));
    } while (value >= high);
  }
  return Narrow<double>(type, dims, values);
}

void RequireScalarOf(const hlo::Literal& value, const char* op, const char* what, bool want_float) {
  RequireScalar(value, op, what);
  if (isa::IsFloat(value.element_type()) == want_float) return;
  throw Error(std::string(op) + ": " + what + " must be a " + (want_float ? "float" : "int") +
              " scalar, got " + isa::ToString(value.shape()));
}

}  // namespace

hlo::Literal RngUniform(const hlo::Literal& a, const hlo::Literal& b, std::span<const int64_t> dims,
                        std::mt19937_64& engine) {
  RequireScalar(a, "rng uniform", "a");
  RequireScalar(b, "rng uniform", "b");
  RequireSameType(a, b, "rng uniform");
  isa::RequireSupported(a.element_type(), "rng");
  const Dims out_dims(dims.begin(), dims.end());
  if (isa::IsFloat(a.element_type())) return UniformFloats(a, b, out_dims, engine);
  if (a.element_type() == isa::ElementType::kPred) throw Error("rng uniform: pred has no range");
  return UniformInts(a, b, out_dims, engine);
}

hlo::Literal RngNormal(const hlo::Literal& mu, const hlo::Literal& sigma,
                       std::span<const int64_t> dims, std::mt19937_64& engine) {
  RequireScalarOf(mu, "rng normal", "mu", true);
  RequireScalarOf(sigma, "rng normal", "sigma", true);
  RequireSameType(mu, sigma, "rng normal");
  const double mean = Widen<double>(mu)[0];
  const double deviation = Widen<double>(sigma)[0];
  std::vector<double> values(ElementCountOf(dims));
  for (double& value : values) {
    const double u1 = 1.0 - UnitInterval(engine);  // (0, 1]: log stays finite
    const double u2 = UnitInterval(engine);
    value =
        mean + deviation * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  return Narrow<double>(mu.element_type(), Dims(dims.begin(), dims.end()), values);
}

hlo::Literal RngBernoulli(const hlo::Literal& mean, std::span<const int64_t> dims,
                          isa::ElementType type, std::mt19937_64& engine) {
  RequireScalarOf(mean, "rng bernoulli", "mean", true);
  const double p = Widen<double>(mean)[0];
  std::vector<uint64_t> values(ElementCountOf(dims));
  for (uint64_t& value : values) value = UnitInterval(engine) < p ? 1 : 0;
  return Narrow<uint64_t>(type, Dims(dims.begin(), dims.end()), values);
}

}  // namespace tpusim::eval
