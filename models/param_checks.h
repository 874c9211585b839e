// Checks shared by the models' parameter structs. Each throws tpusim::Error naming the struct and
// the field, e.g. "HbmParams.channel_count must be at least 1, got 0".
#pragma once

#include <cstdint>
#include <string_view>

namespace tpusim::models {

// value > 0 and finite.
void RequirePositive(std::string_view params, std::string_view field, double value);
// value >= 0 and finite.
void RequireNonNegative(std::string_view params, std::string_view field, double value);
void RequireAtLeast(std::string_view params, std::string_view field, uint64_t value, uint64_t min);
void RequirePowerOfTwo(std::string_view params, std::string_view field, uint64_t value);

}  // namespace tpusim::models
