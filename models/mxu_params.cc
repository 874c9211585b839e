#include "models/mxu_params.h"

#include <string>

#include "isa/error.h"
#include "models/param_checks.h"

namespace tpusim::models {

void Validate(const MxuParams& params) {
  constexpr std::string_view kParams = "MxuParams";
  RequireAtLeast(kParams, "rows", params.rows, 1);
  RequireAtLeast(kParams, "columns", params.columns, 1);
  RequireAtLeast(kParams, "sublanes", params.sublanes, 1);
  RequireAtLeast(kParams, "lanes", params.lanes, 1);
  RequireAtLeast(kParams, "weight_buffer_count", params.weight_buffer_count, 1);
  RequirePositive(kParams, "bf16_passes", params.bf16_passes);
  RequireNonNegative(kParams, "f32_passes", params.f32_passes);
  RequireNonNegative(kParams, "f16_passes", params.f16_passes);
  RequireNonNegative(kParams, "s8_passes", params.s8_passes);
  RequireNonNegative(kParams, "f8_passes", params.f8_passes);
}

bool IsMxuInputType(isa::ElementType type) {
  using isa::ElementType;
  return type == ElementType::kBF16 || type == ElementType::kF32 || type == ElementType::kF16 ||
         type == ElementType::kS8 || type == ElementType::kF8E4M3FN || type == ElementType::kF8E5M2;
}

std::string_view PassesFieldFor(isa::ElementType type) {
  using isa::ElementType;
  switch (type) {
    case ElementType::kBF16: return "bf16_passes";
    case ElementType::kF32: return "f32_passes";
    case ElementType::kF16: return "f16_passes";
    case ElementType::kS8: return "s8_passes";
    case ElementType::kF8E4M3FN:
    case ElementType::kF8E5M2: return "f8_passes";
    default: break;
  }
  throw Error("the MXU takes bf16, f32, f16, s8, f8e4m3fn and f8e5m2 inputs, not " +
              std::string(isa::ElementTypeName(type)));
}

double PassesFor(const MxuParams& params, isa::ElementType type) {
  const std::string_view field = PassesFieldFor(type);  // throws for other types
  if (field == "bf16_passes") return params.bf16_passes;
  if (field == "f32_passes") return params.f32_passes;
  if (field == "f16_passes") return params.f16_passes;
  if (field == "s8_passes") return params.s8_passes;
  return params.f8_passes;
}

}  // namespace tpusim::models
