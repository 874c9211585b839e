// Native loops for reducers that are one known op (computation.h): the op as a functor type, so a
// kernel's inner loop is compiled once per op instead of switching per element, and the
// accumulator type each op uses.
//
// Accumulators (docs/evaluator.md): a float add accumulates in double, like XLA's evaluator's
// fast path for add-reductions, and rounds once to the element type at the end; every other
// op accumulates in the element's compute type (float for bf16/f16/f8/f32, double for f64,
// wrapping 64-bit ints), where max, min, and, or and xor are exact and multiply rounds each step
// to f32 (f64 for f64), not to the narrow type.
#pragma once

#include <optional>
#include <type_traits>

#include "compiler/eval/computation.h"
#include "compiler/eval/element_data.h"
#include "compiler/eval/elementwise.h"
#include "compiler/eval/scalar_ops.h"
#include "isa/element_type.h"

namespace tpusim::eval {

struct AddFold {
  template <typename A>
  A operator()(A a, A b) const {
    return scalar::Add(a, b);
  }
};
struct MultiplyFold {
  template <typename A>
  A operator()(A a, A b) const {
    return scalar::Multiply(a, b);
  }
};
struct MaximumFold {
  template <typename A>
  A operator()(A a, A b) const {
    return scalar::Maximum(a, b);
  }
};
struct MinimumFold {
  template <typename A>
  A operator()(A a, A b) const {
    return scalar::Minimum(a, b);
  }
};
struct AndFold {
  template <typename A>
  A operator()(A a, A b) const {
    return static_cast<A>(a & b);
  }
};
struct OrFold {
  template <typename A>
  A operator()(A a, A b) const {
    return static_cast<A>(a | b);
  }
};
struct XorFold {
  template <typename A>
  A operator()(A a, A b) const {
    return static_cast<A>(a ^ b);
  }
};

// The accumulator type of fold F over elements computed as T (see above).
template <typename T, typename F>
using AccumulatorOf =
    std::conditional_t<std::is_floating_point_v<T> && std::is_same_v<F, AddFold>, double, T>;

// The known op of `reducer` when it can run natively on elements of `type`: add, multiply,
// maximum, minimum for any type; and, or, xor for integers and pred. nullopt otherwise.
std::optional<BinaryOp> NativeFoldOp(const Reducer& reducer, isa::ElementType type);

// Calls fn(F{}) with the functor of `op`, which NativeFoldOp returned.
template <typename Fn>
decltype(auto) VisitFold(BinaryOp op, Fn&& fn) {
  switch (op) {
    case BinaryOp::kMultiply: return fn(MultiplyFold{});
    case BinaryOp::kMaximum: return fn(MaximumFold{});
    case BinaryOp::kMinimum: return fn(MinimumFold{});
    case BinaryOp::kAnd: return fn(AndFold{});
    case BinaryOp::kOr: return fn(OrFold{});
    case BinaryOp::kXor: return fn(XorFold{});
    default: return fn(AddFold{});
  }
}

// Whether fold F applies to compute type T at compile time (bitwise folds need integers); the
// kernels' generic lambdas use it to skip instantiating float bitwise loops.
template <typename T, typename F>
constexpr bool kFoldApplies =
    std::is_integral_v<T> ||
    !(std::is_same_v<F, AndFold> || std::is_same_v<F, OrFold> || std::is_same_v<F, XorFold>);

// Calls body(T{}, F{}) with the compute type T of `type` and the fold F of `op` (which
// NativeFoldOp returned), instantiating only the pairs that apply: a native loop written once for
// every type and fold.
template <typename Body>
hlo::Literal WithNativeFold(isa::ElementType type, BinaryOp op, Body&& body) {
  return VisitComputeType(type, [&](auto tag) {
    using T = decltype(tag);
    return VisitFold(op, [&](auto fold) -> hlo::Literal {
      if constexpr (kFoldApplies<T, decltype(fold)>) {
        return body(tag, fold);
      } else {
        throw Error("internal error: a bitwise native fold on floats");
      }
    });
  });
}

}  // namespace tpusim::eval
