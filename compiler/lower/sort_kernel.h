// sort on the VPU (docs/compiler.md, "Sort, top-k, gather"): a bitonic network along the sorted
// dim, with the independent rows spread over the sublanes and lanes of a vreg, so that every
// compare-exchange is element-wise between two vregs at two positions of the sorted dim.
#pragma once

#include <optional>

#include "compiler/hlo/ir.h"
#include "compiler/lower/kernel.h"

namespace tpusim::compiler {

// How the kernel orders operand 0: ascending or descending by a 32-bit signed key derived from
// each element (ties broken by the original position, which makes the sort stable).
struct SortKeySpec {
  bool descending = false;         // GT comparators
  bool total_order = false;        // floats: TOTALORDER (else FLOAT: -0 == +0)
  bool canonical = false;          // JAX's canon(x): every NaN as +NaN, -0 as +0
  bool is_unsigned = false;        // UNSIGNED compares
};

// The comparator's compare of (p0, p1), or of canon(p0), canon(p1) as JAX writes it; other
// parameters may exist but not be used. nullopt for anything else (LE/GE, other operands...).
std::optional<SortKeySpec> MatchSortComparator(const hlo::Computation& comparator);

void EmitSortKernel(KernelContext& context);

}  // namespace tpusim::compiler
