#include "compiler/eval/reduce_window.h"

#include <string>
#include <vector>

#include "compiler/eval/compare.h"
#include "compiler/eval/element_data.h"
#include "compiler/eval/fold.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/shape_ops.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

// The in-bounds taps of every window position, as linear positions in the base array.
class WindowTaps {
 public:
  WindowTaps(std::span<const WindowDimension> window, std::span<const int64_t> base_dims,
             const char* op) {
    ValidateWindow(window, base_dims.size(), op);
    for (std::size_t d = 0; d < window.size(); ++d) {
      out_dims_.push_back(WindowOutputSize(base_dims[d], window[d]));
      sizes_.push_back(window[d].size);
    }
    base_strides_ = RowMajorStrides(base_dims);
    tables_ = WindowTapTables(window, base_dims, out_dims_);
  }

  const Dims& out_dims() const { return out_dims_; }

  // Calls fn(base_linear) for each tap of window position `out_index` that reads a base element,
  // in row-major order of the taps.
  template <typename Fn>
  void ForEachTap(std::span<const int64_t> out_index, Fn&& fn) const {
    ForEachIndex(sizes_, [&](std::span<const int64_t> tap) {
      int64_t position = 0;
      for (std::size_t d = 0; d < sizes_.size(); ++d) {
        const int64_t index = tables_[d][out_index[d] * sizes_[d] + tap[d]];
        if (index < 0) return;
        position += index * base_strides_[d];
      }
      fn(position);
    });
  }

 private:
  Dims out_dims_;
  Dims sizes_;
  Dims base_strides_;
  std::vector<std::vector<int64_t>> tables_;
};

template <typename T, typename F>
hlo::Literal NativeReduceWindow(const hlo::Literal& operand, const hlo::Literal& init,
                                const WindowTaps& taps, F fold) {
  using A = AccumulatorOf<T, F>;
  const std::vector<T> values = Widen<T>(operand);
  const A init_value = static_cast<A>(Widen<T>(init)[0]);
  std::vector<A> acc;
  acc.reserve(ElementCountOf(taps.out_dims()));
  ForEachIndex(taps.out_dims(), [&](std::span<const int64_t> out_index) {
    A a = init_value;
    taps.ForEachTap(out_index,
                    [&](int64_t position) { a = fold(a, static_cast<A>(values[position])); });
    acc.push_back(a);
  });
  return Narrow<A>(init.element_type(), taps.out_dims(), acc);
}

hlo::Literal GenericReduceWindow(std::span<const hlo::Literal> operands,
                                 std::span<const hlo::Literal> inits, const WindowTaps& taps,
                                 const Reducer& reducer) {
  const std::size_t n = operands.size();
  std::vector<hlo::Literal> results;
  for (const hlo::Literal& init : inits) {
    results.emplace_back(isa::Shape::Array(init.element_type(), taps.out_dims()));
  }
  std::vector<hlo::Literal> args(inits.begin(), inits.end());
  for (const hlo::Literal& operand : operands) {
    args.emplace_back(isa::Shape::Array(operand.element_type(), {}));
  }
  int64_t out_linear = 0;
  ForEachIndex(taps.out_dims(), [&](std::span<const int64_t> out_index) {
    for (std::size_t i = 0; i < n; ++i) args[i] = inits[i];
    taps.ForEachTap(out_index, [&](int64_t position) {
      for (std::size_t i = 0; i < n; ++i) CopyElement(operands[i], position, args[n + i], 0);
      std::vector<hlo::Literal> acc = reducer.ApplyToAccumulators(args, n, "reduce-window");
      for (std::size_t i = 0; i < n; ++i) args[i] = std::move(acc[i]);
    });
    for (std::size_t i = 0; i < n; ++i) CopyElement(args[i], 0, results[i], out_linear);
    ++out_linear;
  });
  if (n == 1) return std::move(results[0]);
  return hlo::Literal::Tuple(std::move(results));
}


// The tap select-and-scatter picks in one window: the first in-bounds tap, replaced by each later
// one the select computation does not prefer the current pick over. -1 if no tap is in bounds.
template <typename Keep>
int64_t SelectTap(const WindowTaps& taps, std::span<const int64_t> out_index, Keep keep) {
  int64_t selected = -1;
  taps.ForEachTap(out_index, [&](int64_t position) {
    if (selected < 0 || !keep(selected, position)) selected = position;
  });
  return selected;
}

// The selected operand position of every source element, in source row-major order.
std::vector<int64_t> SelectedPositions(const hlo::Literal& operand, const WindowTaps& taps,
                                       const Comparator& select) {
  std::vector<int64_t> selected;
  selected.reserve(ElementCountOf(taps.out_dims()));
  if (select.known) {
    const ElementOrder order(operand, *select.known);
    const auto keep = [&](int64_t a, int64_t b) { return order.Compare(a, b); };
    ForEachIndex(taps.out_dims(), [&](std::span<const int64_t> index) {
      selected.push_back(SelectTap(taps, index, keep));
    });
    return selected;
  }
  std::vector<hlo::Literal> args(2, hlo::Literal(isa::Shape::Array(operand.element_type(), {})));
  const auto keep = [&](int64_t a, int64_t b) {
    CopyElement(operand, a, args[0], 0);
    CopyElement(operand, b, args[1], 0);
    return select.Apply(args);
  };
  ForEachIndex(taps.out_dims(), [&](std::span<const int64_t> index) {
    selected.push_back(SelectTap(taps, index, keep));
  });
  return selected;
}

}  // namespace

hlo::Literal ReduceWindow(std::span<const hlo::Literal> operands,
                          std::span<const hlo::Literal> init_values,
                          std::span<const WindowDimension> window, const Reducer& reducer) {
  RequireReductionOperands("reduce-window", operands, init_values);
  const WindowTaps taps(window, operands[0].dims(), "reduce-window");
  const isa::ElementType type = operands[0].element_type();
  const std::optional<BinaryOp> native = NativeFoldOp(reducer, type);
  if (operands.size() == 1 && native) {
    return WithNativeFold(type, *native, [&](auto tag, auto fold) -> hlo::Literal {
      using T = decltype(tag);
      return NativeReduceWindow<T>(operands[0], init_values[0], taps, fold);
    });
  }
  return GenericReduceWindow(operands, init_values, taps, reducer);
}

hlo::Literal ReduceWindow(const hlo::Literal& operand, const hlo::Literal& init_value,
                          std::span<const WindowDimension> window, const Reducer& reducer) {
  return ReduceWindow(std::span<const hlo::Literal>(&operand, 1),
                      std::span<const hlo::Literal>(&init_value, 1), window, reducer);
}

hlo::Literal SelectAndScatter(const hlo::Literal& operand, const hlo::Literal& source,
                              const hlo::Literal& init_value,
                              std::span<const WindowDimension> window, const Comparator& select,
                              const Reducer& scatter) {
  RequireArray(operand, "select-and-scatter", "the operand");
  RequireArray(source, "select-and-scatter", "the source");
  RequireScalar(init_value, "select-and-scatter", "the init value");
  RequireSameType(operand, source, "select-and-scatter");
  RequireSameType(operand, init_value, "select-and-scatter");
  const WindowTaps taps(window, operand.dims(), "select-and-scatter");
  if (source.dims() != taps.out_dims()) {
    throw Error("select-and-scatter: the source must have the window positions' dims " +
                DimsToString(taps.out_dims()) + ", got " + isa::ToString(source.shape()));
  }
  const std::vector<int64_t> selected = SelectedPositions(operand, taps, select);
  const isa::ElementType type = operand.element_type();
  const std::optional<BinaryOp> native = NativeFoldOp(scatter, type);
  if (native) {
    return WithNativeFold(type, *native, [&](auto tag, auto fold) -> hlo::Literal {
      using T = decltype(tag);
      std::vector<T> result(operand.element_count(), Widen<T>(init_value)[0]);
      const std::vector<T> values = Widen<T>(source);
      for (std::size_t s = 0; s < selected.size(); ++s) {
        if (selected[s] < 0) continue;
        T& target = result[selected[s]];
        target = RoundToElement(type, fold(target, values[s]));
      }
      return Narrow<T>(type, operand.dims(), result);
    });
  }
  hlo::Literal result = Broadcast(init_value, operand.dims(), {});
  std::vector<hlo::Literal> args(2, hlo::Literal(isa::Shape::Array(type, {})));
  for (std::size_t s = 0; s < selected.size(); ++s) {
    if (selected[s] < 0) continue;
    CopyElement(result, selected[s], args[0], 0);
    CopyElement(source, static_cast<int64_t>(s), args[1], 0);
    const hlo::Literal value = scatter.Apply(args);
    if (value.is_tuple() || value.element_count() != 1 || value.element_type() != type) {
      throw Error("select-and-scatter: the scatter computation returned " +
                  isa::ToString(value.shape()) + ", expected a scalar of the operand's type");
    }
    CopyElement(value, 0, result, selected[s]);
  }
  return result;
}

}  // namespace tpusim::eval
