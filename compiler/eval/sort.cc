#include "compiler/eval/sort.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/eval/compare.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

// The rows along `dimension`: for each index of the other dims, the linear position of the row's
// first element; consecutive row elements are `stride` apart.
struct Rows {
  std::vector<int64_t> starts;
  int64_t length = 0;
  int64_t stride = 1;
};

Rows RowsAlong(std::span<const int64_t> dims, int64_t dimension) {
  Rows rows;
  const Dims strides = RowMajorStrides(dims);
  rows.length = dims[dimension];
  rows.stride = strides[dimension];
  Dims others(dims.begin(), dims.end());
  others[dimension] = 1;
  ForEachIndex(others, [&](std::span<const int64_t> index) {
    int64_t start = 0;
    for (std::size_t d = 0; d < index.size(); ++d) start += index[d] * strides[d];
    rows.starts.push_back(start);
  });
  return rows;
}

// A "goes before" predicate on linear positions, from the comparator.
class Before {
 public:
  Before(std::span<const hlo::Literal> operands, const Comparator& comparator)
      : operands_(operands), comparator_(comparator) {
    if (comparator.known) {
      order_.emplace(operands[0], *comparator.known);
      return;
    }
    for (const hlo::Literal& operand : operands) {
      args_.emplace_back(isa::Shape::Array(operand.element_type(), {}));
      args_.emplace_back(isa::Shape::Array(operand.element_type(), {}));
    }
  }

  bool operator()(int64_t a, int64_t b) {
    if (order_) return order_->Compare(a, b);
    for (std::size_t i = 0; i < operands_.size(); ++i) {
      CopyElement(operands_[i], a, args_[2 * i], 0);
      CopyElement(operands_[i], b, args_[2 * i + 1], 0);
    }
    return comparator_.Apply(args_);
  }

 private:
  std::span<const hlo::Literal> operands_;
  const Comparator& comparator_;
  std::optional<ElementOrder> order_;
  std::vector<hlo::Literal> args_;
};

}  // namespace

hlo::Literal Sort(std::span<const hlo::Literal> operands, int64_t dimension,
                  const Comparator& comparator, bool /*is_stable*/) {
  if (operands.empty()) throw Error("sort needs at least one operand");
  for (const hlo::Literal& operand : operands) {
    RequireArray(operand, "sort", "every operand");
    if (operand.dims() != operands[0].dims()) {
      throw Error("sort: operands " + isa::ToString(operands[0].shape()) + " and " +
                  isa::ToString(operand.shape()) + " differ in dims");
    }
  }
  const int64_t rank = static_cast<int64_t>(operands[0].dims().size());
  if (dimension < 0 || dimension >= rank) {
    throw Error("sort: dimension " + std::to_string(dimension) + " is out of range for " +
                isa::ToString(operands[0].shape()));
  }
  std::vector<hlo::Literal> results(operands.begin(), operands.end());
  Before before(operands, comparator);
  const Rows rows = RowsAlong(operands[0].dims(), dimension);
  std::vector<int64_t> order(rows.length);
  for (int64_t start : rows.starts) {
    for (int64_t i = 0; i < rows.length; ++i) order[i] = start + i * rows.stride;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return before(a, b); });
    for (int64_t i = 0; i < rows.length; ++i) {
      for (std::size_t k = 0; k < operands.size(); ++k) {
        CopyElement(operands[k], order[i], results[k], start + i * rows.stride);
      }
    }
  }
  if (results.size() == 1) return std::move(results[0]);
  return hlo::Literal::Tuple(std::move(results));
}

hlo::Literal TopK(const hlo::Literal& operand, int64_t k, bool largest) {
  RequireArray(operand, "topk", "the operand");
  if (operand.dims().empty()) throw Error("topk needs an operand of rank >= 1");
  const int64_t last = static_cast<int64_t>(operand.dims().size()) - 1;
  if (k < 0 || k > operand.dims()[last]) {
    throw Error("topk: k = " + std::to_string(k) + " is out of range for " +
                isa::ToString(operand.shape()));
  }
  const isa::ElementType type = operand.element_type();
  const CompareType compare_type =
      isa::IsFloat(type) ? CompareType::kTotalOrder : DefaultCompareType(type);
  const ElementOrder order(operand,
                           {largest ? CompareDirection::kGt : CompareDirection::kLt, compare_type});

  Dims out_dims = operand.dims();
  out_dims[last] = k;
  hlo::Literal values(isa::Shape::Array(type, out_dims));
  hlo::Literal indices(isa::Shape::Array(isa::ElementType::kS32, out_dims));
  const Rows rows = RowsAlong(operand.dims(), last);
  std::vector<int64_t> positions(rows.length);
  int64_t out = 0;
  for (int64_t start : rows.starts) {
    std::iota(positions.begin(), positions.end(), start);
    // A stable partial order: the first k of a stable sort, so ties keep the lower index.
    std::stable_sort(positions.begin(), positions.end(),
                     [&](int64_t a, int64_t b) { return order.Compare(a, b); });
    for (int64_t i = 0; i < k; ++i, ++out) {
      CopyElement(operand, positions[i], values, out);
      indices.SetInt(out, positions[i] - start);
    }
  }
  return hlo::Literal::Tuple({std::move(values), std::move(indices)});
}

}  // namespace tpusim::eval
