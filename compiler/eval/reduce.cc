#include "compiler/eval/reduce.h"

#include <string>
#include <vector>

#include "compiler/eval/element_data.h"
#include "compiler/eval/fold.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

// Where each operand element goes: operand dims, and per operand dim its stride in the output
// (0 for reduced dims). A scalar operand is read as [1] with that dim reduced, so every loop
// below has an inner dim and the result is still f(init, x).
struct ReduceGeometry {
  Dims operand_dims;
  Dims operand_strides;
  Dims out_dims;
  Dims out_strides;  // indexed by operand dim
  Dims kept;         // operand dims that stay, in order
  Dims reduced;      // operand dims folded away, in order
};

ReduceGeometry MakeGeometry(const hlo::Literal& operand, std::span<const int64_t> dimensions) {
  const int64_t rank = static_cast<int64_t>(operand.dims().size());
  RequireDistinctDims(dimensions, rank, "reduce");
  ReduceGeometry g;
  g.operand_dims = rank == 0 ? Dims{1} : operand.dims();
  std::vector<bool> is_reduced(g.operand_dims.size(), rank == 0);
  for (int64_t d : dimensions) is_reduced[d] = true;
  for (std::size_t d = 0; d < g.operand_dims.size(); ++d) {
    (is_reduced[d] ? g.reduced : g.kept).push_back(static_cast<int64_t>(d));
    if (!is_reduced[d]) g.out_dims.push_back(g.operand_dims[d]);
  }
  g.operand_strides = RowMajorStrides(g.operand_dims);
  const Dims strides = RowMajorStrides(g.out_dims);
  g.out_strides.assign(g.operand_dims.size(), 0);
  for (std::size_t k = 0; k < g.kept.size(); ++k) g.out_strides[g.kept[k]] = strides[k];
  return g;
}

// One pass over the operand in row-major order. For each output element its operand elements
// arrive in row-major order of the reduced dims, which is the order XLA folds them in.
template <typename T, typename F>
hlo::Literal NativeReduce(const hlo::Literal& operand, const hlo::Literal& init,
                          const ReduceGeometry& g, F fold) {
  using A = AccumulatorOf<T, F>;
  const std::vector<T> values = Widen<T>(operand);
  const A init_value = static_cast<A>(Widen<T>(init)[0]);
  std::vector<A> acc(ElementCountOf(g.out_dims), init_value);

  const std::size_t inner = g.operand_dims.size() - 1;
  const int64_t inner_size = g.operand_dims[inner];
  const int64_t inner_out_stride = g.out_strides[inner];
  const std::span<const int64_t> outer_dims(g.operand_dims.data(), inner);
  ForEachIndex(outer_dims, [&](std::span<const int64_t> index) {
    int64_t in = 0;
    int64_t out = 0;
    for (std::size_t d = 0; d < inner; ++d) {
      in += index[d] * g.operand_strides[d];
      out += index[d] * g.out_strides[d];
    }
    const T* x = values.data() + in;
    if (inner_out_stride == 0) {
      A a = acc[out];
      for (int64_t j = 0; j < inner_size; ++j) a = fold(a, static_cast<A>(x[j]));
      acc[out] = a;
    } else {
      A* a = acc.data() + out;
      for (int64_t j = 0; j < inner_size; ++j) a[j] = fold(a[j], static_cast<A>(x[j]));
    }
  });
  return Narrow<A>(init.element_type(), g.out_dims, acc);
}

hlo::Literal GenericReduce(std::span<const hlo::Literal> operands,
                           std::span<const hlo::Literal> inits, const ReduceGeometry& g,
                           const Reducer& reducer) {
  const std::size_t n = operands.size();
  std::vector<hlo::Literal> results;
  for (const hlo::Literal& init : inits) {
    results.emplace_back(isa::Shape::Array(init.element_type(), g.out_dims));
  }
  Dims reduced_sizes;
  for (int64_t d : g.reduced) reduced_sizes.push_back(g.operand_dims[d]);

  // args = (accumulators..., values...), reused for every call.
  std::vector<hlo::Literal> args(inits.begin(), inits.end());
  for (const hlo::Literal& operand : operands) {
    args.emplace_back(isa::Shape::Array(operand.element_type(), {}));
  }
  int64_t out_linear = 0;
  ForEachIndex(g.out_dims, [&](std::span<const int64_t> out_index) {
    int64_t base = 0;
    for (std::size_t k = 0; k < g.kept.size(); ++k) {
      base += out_index[k] * g.operand_strides[g.kept[k]];
    }
    for (std::size_t i = 0; i < n; ++i) args[i] = inits[i];
    ForEachIndex(reduced_sizes, [&](std::span<const int64_t> reduced_index) {
      int64_t position = base;
      for (std::size_t k = 0; k < g.reduced.size(); ++k) {
        position += reduced_index[k] * g.operand_strides[g.reduced[k]];
      }
      for (std::size_t i = 0; i < n; ++i) CopyElement(operands[i], position, args[n + i], 0);
      std::vector<hlo::Literal> acc = reducer.ApplyToAccumulators(args, n, "reduce");
      for (std::size_t i = 0; i < n; ++i) args[i] = std::move(acc[i]);
    });
    for (std::size_t i = 0; i < n; ++i) CopyElement(args[i], 0, results[i], out_linear);
    ++out_linear;
  });
  if (n == 1) return std::move(results[0]);
  return hlo::Literal::Tuple(std::move(results));
}


}  // namespace

hlo::Literal Reduce(std::span<const hlo::Literal> operands,
                    std::span<const hlo::Literal> init_values, std::span<const int64_t> dimensions,
                    const Reducer& reducer) {
  RequireReductionOperands("reduce", operands, init_values);
  const ReduceGeometry g = MakeGeometry(operands[0], dimensions);
  const isa::ElementType type = operands[0].element_type();
  const std::optional<BinaryOp> native = NativeFoldOp(reducer, type);
  if (operands.size() == 1 && native) {
    return WithNativeFold(type, *native, [&](auto tag, auto fold) -> hlo::Literal {
      using T = decltype(tag);
      return NativeReduce<T>(operands[0], init_values[0], g, fold);
    });
  }
  return GenericReduce(operands, init_values, g, reducer);
}

hlo::Literal Reduce(const hlo::Literal& operand, const hlo::Literal& init_value,
                    std::span<const int64_t> dimensions, const Reducer& reducer) {
  return Reduce(std::span<const hlo::Literal>(&operand, 1),
                std::span<const hlo::Literal>(&init_value, 1), dimensions, reducer);
}

hlo::Literal Map(std::span<const hlo::Literal> operands, const ScalarFunction& function,
                 isa::ElementType result_type) {
  if (operands.empty()) throw Error("map needs at least one operand");
  for (const hlo::Literal& operand : operands) {
    RequireArray(operand, "map", "every operand");
    if (operand.dims() != operands[0].dims()) {
      throw Error("map: operands " + isa::ToString(operands[0].shape()) + " and " +
                  isa::ToString(operand.shape()) + " differ in dims");
    }
  }
  hlo::Literal result(isa::Shape::Array(result_type, operands[0].dims()));
  std::vector<hlo::Literal> args;
  for (const hlo::Literal& operand : operands) {
    args.emplace_back(isa::Shape::Array(operand.element_type(), {}));
  }
  for (int64_t i = 0; i < result.element_count(); ++i) {
    for (std::size_t k = 0; k < operands.size(); ++k) CopyElement(operands[k], i, args[k], 0);
    const hlo::Literal value = function(args);
    if (value.is_tuple() || value.element_count() != 1 || value.element_type() != result_type) {
      throw Error("map: the computation returned " + isa::ToString(value.shape()) +
                  ", expected a " + std::string(isa::ElementTypeName(result_type)) + " scalar");
    }
    CopyElement(value, 0, result, i);
  }
  return result;
}

}  // namespace tpusim::eval
