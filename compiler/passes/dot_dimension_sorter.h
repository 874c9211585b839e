// XLA's DotDimensionSorter: a dot's contracting dims listed in another order than its operand
// stores them (Gemma 3's attention output, `lhs_contracting_dims={3,2}` of a row-major
// bf16[1,11,4,256] against `rhs_contracting_dims={1,0}` of bf16[4,256,1152]) are reordered, pair
// by pair, into the order of the lhs's layout, major to minor (else the rhs's), where that makes
// them one run of consecutive dims there. A contraction sums over every pair, so the order is
// free; but the dot kernel merges the contracting dims into K in the listed order, and only a run
// in the stored order is K as the operand's bytes hold it: the dot reads its operands in place
// instead of copying both (Gemma's attention output, 2.4 MB of weights: 14.2 -> 5.3 us).
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::compiler {

// Sorts every dot's contracting dims; returns the number of dots changed. Reads the layouts, so
// it runs after layout assignment.
int SortDotDimensions(hlo::Module& module);

}  // namespace tpusim::compiler
