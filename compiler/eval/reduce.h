// HLO reduce and map. Reduce-window and select-and-scatter are in reduce_window.h.
#pragma once

#include <cstdint>
#include <span>

#include "compiler/eval/computation.h"
#include "compiler/hlo/literal.h"
#include "isa/element_type.h"

namespace tpusim::eval {

// reduce: N operands of equal dims and N scalar init values; each output element (the operand
// dims minus `dimensions`, in order) folds init with the operand elements it covers, visited in
// row-major order of the reduced dims: acc = reducer(acc, x), variadic acc = reducer(accs...,
// xs...). One operand gives an array, several a tuple. A known reducer on one operand runs
// natively (fold.h: a float add sums in double and rounds once).
hlo::Literal Reduce(std::span<const hlo::Literal> operands,
                    std::span<const hlo::Literal> init_values, std::span<const int64_t> dimensions,
                    const Reducer& reducer);

// Single-operand convenience form.
hlo::Literal Reduce(const hlo::Literal& operand, const hlo::Literal& init_value,
                    std::span<const int64_t> dimensions, const Reducer& reducer);

// map: out[i] = function(operands[0][i], ..., operands[N-1][i]) for operands of equal dims, the
// result an array of `result_type`. (For a map whose computation is one element-wise op, call
// Unary or Binary instead: same result, no per-element call.)
hlo::Literal Map(std::span<const hlo::Literal> operands, const ScalarFunction& function,
                 isa::ElementType result_type);

}  // namespace tpusim::eval
