// HLO reduce-window and select-and-scatter: a window slides over the operand (window.h).
#pragma once

#include <span>

#include "compiler/eval/computation.h"
#include "compiler/eval/window.h"
#include "compiler/hlo/literal.h"

namespace tpusim::eval {

// reduce-window: N operands of equal dims, N scalar inits. Output dim d has
// WindowOutputSize(operand dim d, window[d]) elements; each folds init with the operand elements
// under its window taps, in row-major order of the taps, skipping taps on padding or on base-
// dilation holes (XLA's evaluator). One operand gives an array, several a tuple. A known reducer
// on one operand runs natively with reduce's accumulators (fold.h).
hlo::Literal ReduceWindow(std::span<const hlo::Literal> operands,
                          std::span<const hlo::Literal> init_values,
                          std::span<const WindowDimension> window, const Reducer& reducer);

hlo::Literal ReduceWindow(const hlo::Literal& operand, const hlo::Literal& init_value,
                          std::span<const WindowDimension> window, const Reducer& reducer);

// select-and-scatter: the result starts as `init_value` everywhere (operand's dims). For each
// source element (row-major; `source` has reduce-window's output dims) the window's taps are
// visited in row-major order and the first in-bounds one is selected; a later tap replaces it
// when select(selected, candidate) is false. Then result[selected] = scatter(result[selected],
// source element), rounded to the element type each time (seed 003).
hlo::Literal SelectAndScatter(const hlo::Literal& operand, const hlo::Literal& source,
                              const hlo::Literal& init_value,
                              std::span<const WindowDimension> window, const Comparator& select,
                              const Reducer& scatter);

}  // namespace tpusim::eval
