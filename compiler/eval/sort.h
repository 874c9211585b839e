// HLO sort (multi-operand, by a comparator) and topk.
#pragma once

#include <cstdint>
#include <span>

#include "compiler/eval/computation.h"
#include "compiler/hlo/literal.h"

namespace tpusim::eval {

// sort: operands of equal dims are sorted together along `dimension`, every other index fixed:
// the elements are permuted so that comparator(a, b) ("a goes before b") holds for no later a.
// The comparator gets (lhs_0, rhs_0, lhs_1, rhs_1, ...), one pair per operand; a known
// comparator compares operand 0 only, without calls. The sort is always stable (std::stable_sort:
// a valid result for an unstable sort too, and the same on every machine); `is_stable` is
// accepted for the record. One operand gives an array, several a tuple.
hlo::Literal Sort(std::span<const hlo::Literal> operands, int64_t dimension,
                  const Comparator& comparator, bool is_stable = true);

// topk: along the last dim, the k largest (or smallest) elements in order, and their s32
// indices; equal elements keep the lower index first. Floats order by TOTALORDER (NaN above
// +inf, so NaNs come first when largest), ints by value. Returns the tuple (values, indices).
hlo::Literal TopK(const hlo::Literal& operand, int64_t k, bool largest = true);

}  // namespace tpusim::eval
