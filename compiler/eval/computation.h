// How kernels call the computations an HLO instruction carries (reduce's to_apply, sort's
// comparator, scatter's combiner, select-and-scatter's select and scatter, map's to_apply).
//
// The evaluator wraps any HLO computation as a ScalarFunction: it receives scalar Literals (the
// computation's parameters, in order) and returns a scalar Literal, or a tuple of scalars for a
// variadic reducer. That is general but costs an interpreter call per element, so when the
// computation is just one known op applied to its parameters (`add(p0, p1)`, `compare(p0, p1),
// direction=LT`), the evaluator also sets `known`, and the kernels run a native loop instead
// (the same arithmetic, scalar_ops.h, without building Literals). A Reducer or Comparator may
// have only `known` set (tests, internal uses); then Apply() evaluates the known op on Literals.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "compiler/eval/compare.h"
#include "compiler/eval/elementwise.h"
#include "compiler/hlo/literal.h"

namespace tpusim::eval {

using ScalarFunction = std::function<hlo::Literal(std::span<const hlo::Literal> args)>;

// A binary reduction: called as f(accumulator, value), or for N operands as
// f(acc_0, ..., acc_{N-1}, value_0, ..., value_{N-1}) returning a tuple of N scalars (XLA's
// argument order for variadic reduce, reduce-window and scatter).
struct Reducer {
  std::optional<BinaryOp> known;
  ScalarFunction function;

  static Reducer Of(BinaryOp op) { return Reducer{op, nullptr}; }
  static Reducer Of(ScalarFunction function) { return Reducer{std::nullopt, std::move(function)}; }

  // Calls `function`, or the known op when there is no function. Throws tpusim::Error if neither.
  hlo::Literal Apply(std::span<const hlo::Literal> args) const;

  // Apply() with args = (accumulators..., values...), its result split into one scalar per
  // accumulator and checked to have the accumulators' element types (a scalar for one
  // accumulator, a tuple of N scalars for N). Throws tpusim::Error naming `op` otherwise.
  std::vector<hlo::Literal> ApplyToAccumulators(std::span<const hlo::Literal> args,
                                                std::size_t accumulators, const char* op) const;
};

// A comparison returning a pred scalar. Sort calls it with (lhs_0, rhs_0, lhs_1, rhs_1, ...), one
// pair per sorted operand; select-and-scatter with (selected, candidate). `known` means the
// computation is compare(p0, p1) with that spec, which looks at operand 0 only.
struct Comparator {
  std::optional<CompareSpec> known;
  ScalarFunction function;

  static Comparator Of(CompareSpec spec) { return Comparator{spec, nullptr}; }
  static Comparator Of(ScalarFunction function) {
    return Comparator{std::nullopt, std::move(function)};
  }

  // Calls `function` (or compares args[0] with args[1] by `known`) and returns the pred.
  bool Apply(std::span<const hlo::Literal> args) const;
};

}  // namespace tpusim::eval
