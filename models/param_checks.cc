#include "models/param_checks.h"

#include <bit>
#include <cmath>
#include <sstream>
#include <string>

#include "isa/error.h"

namespace tpusim::models {
namespace {

[[noreturn]] void Fail(std::string_view params, std::string_view field, std::string_view rule,
                       const std::string& value) {
  throw Error(std::string(params) + "." + std::string(field) + " must " + std::string(rule) +
              ", got " + value);
}

std::string Text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

void RequirePositive(std::string_view params, std::string_view field, double value) {
  if (!(value > 0 && std::isfinite(value))) {
    Fail(params, field, "be positive and finite", Text(value));
  }
}

void RequireNonNegative(std::string_view params, std::string_view field, double value) {
  if (!(value >= 0 && std::isfinite(value))) {
    Fail(params, field, "be >= 0 and finite", Text(value));
  }
}

void RequireAtLeast(std::string_view params, std::string_view field, uint64_t value, uint64_t min) {
  if (value < min) Fail(params, field, "be at least " + std::to_string(min), std::to_string(value));
}

void RequirePowerOfTwo(std::string_view params, std::string_view field, uint64_t value) {
  if (!std::has_single_bit(value)) Fail(params, field, "be a power of two", std::to_string(value));
}

}  // namespace tpusim::models
