// HLO `compare`: element-wise comparisons to pred, with XLA's four comparison types, and an
// ElementOrder that sorts, top-k and select-and-scatter use to compare elements of one array fast.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "compiler/hlo/literal.h"
#include "isa/element_type.h"

namespace tpusim::eval {

enum class CompareDirection { kEq, kNe, kLt, kLe, kGt, kGe };

// FLOAT: IEEE 754 (any comparison with NaN is false, except NE which is true; -0 == +0).
// TOTALORDER: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN, NaNs ordered by payload.
// SIGNED / UNSIGNED: the integer bits read as two's complement / unsigned of the element width.
enum class CompareType { kFloat, kTotalOrder, kSigned, kUnsigned };

struct CompareSpec {
  CompareDirection direction = CompareDirection::kLt;
  CompareType type = CompareType::kFloat;
  // Compare canon(x) instead of x, where canon maps every NaN to +NaN and -0 to +0: what the
  // comparators JAX writes for sort do before a TOTALORDER compare (floats only).
  bool canonical_nan_and_zero = false;
};

// "EQ".."GE" and "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED" as HLO text writes them.
std::string_view CompareDirectionName(CompareDirection direction);
std::string_view CompareTypeName(CompareType type);
std::optional<CompareDirection> ParseCompareDirection(std::string_view text);
std::optional<CompareType> ParseCompareType(std::string_view text);

// The type XLA uses when an HLO compare has no `type=`: FLOAT for floats, SIGNED for signed ints,
// UNSIGNED for unsigned ints and pred.
CompareType DefaultCompareType(isa::ElementType type);

// compare(lhs, rhs): a pred array of the operands' dims. `type` defaults as above. Throws
// tpusim::Error for operands of different shapes, or FLOAT/TOTALORDER on integers or
// SIGNED/UNSIGNED on floats.
hlo::Literal Compare(const hlo::Literal& lhs, const hlo::Literal& rhs, CompareDirection direction,
                     std::optional<CompareType> type = std::nullopt);

// Elements of one array turned into keys once, so that comparing two of them is a single integer
// or double comparison: what sort, top-k and select-and-scatter need millions of times.
class ElementOrder {
 public:
  ElementOrder(const hlo::Literal& array, CompareSpec spec);
  // array[i] <direction> array[j], with the spec's comparison type.
  bool Compare(int64_t i, int64_t j) const;

 private:
  CompareDirection direction_;
  bool use_doubles_;
  std::vector<double> doubles_;  // FLOAT: the values (exact in f64)
  std::vector<int64_t> keys_;    // others: order-preserving signed keys
};

}  // namespace tpusim::eval
