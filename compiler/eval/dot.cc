#include "compiler/eval/dot.h"

#include <string>

#include "compiler/eval/element_data.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/scalar_ops.h"
#include "compiler/eval/shape_ops.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

// The dims of one operand sorted into roles.
struct OperandDims {
  Dims batch;
  Dims free;
  Dims contracting;
};

OperandDims Classify(const hlo::Literal& operand, const Dims& batch, const Dims& contracting,
                     const char* side) {
  const int64_t rank = static_cast<int64_t>(operand.dims().size());
  Dims all = batch;
  all.insert(all.end(), contracting.begin(), contracting.end());
  RequireDistinctDims(all, rank, side);
  OperandDims roles{batch, {}, contracting};
  for (int64_t d = 0; d < rank; ++d) {
    bool used = false;
    for (int64_t u : all) used = used || u == d;
    if (!used) roles.free.push_back(d);
  }
  return roles;
}

int64_t SizeOf(const hlo::Literal& operand, const Dims& dims) {
  int64_t size = 1;
  for (int64_t d : dims) size *= operand.dims()[d];
  return size;
}

void RequireMatchingSizes(const hlo::Literal& lhs, const Dims& lhs_dims, const hlo::Literal& rhs,
                          const Dims& rhs_dims, const char* what) {
  if (lhs_dims.size() != rhs_dims.size()) {
    throw Error(std::string("dot: lhs and rhs have different numbers of ") + what + " dims (" +
                std::to_string(lhs_dims.size()) + " and " + std::to_string(rhs_dims.size()) + ")");
  }
  for (std::size_t i = 0; i < lhs_dims.size(); ++i) {
    if (lhs.dims()[lhs_dims[i]] != rhs.dims()[rhs_dims[i]]) {
      throw Error(std::string("dot: ") + what + " dim " + std::to_string(lhs_dims[i]) + " of lhs " +
                  isa::ToString(lhs.shape()) + " and dim " + std::to_string(rhs_dims[i]) +
                  " of rhs " + isa::ToString(rhs.shape()) + " differ in size");
    }
  }
}

// `operand` transposed so that the dims come in the order first, second, third, then widened to
// the accumulator type: a [B, X, Y] matrix stack in row-major order.
template <typename A>
std::vector<A> Arrange(const hlo::Literal& operand, const Dims& first, const Dims& second,
                       const Dims& third) {
  Dims permutation = first;
  permutation.insert(permutation.end(), second.begin(), second.end());
  permutation.insert(permutation.end(), third.begin(), third.end());
  return Widen<A>(Transpose(operand, permutation));
}

// out[i][j] += a[i][k] * b[k][j] over k in increasing order for each (i, j): the i-k-j order
// keeps every output's summation order while the j loop runs over contiguous memory, which the
// compiler vectorizes (products and sums stay separately rounded: no FMA contraction is enabled
// in this build, so each product is rounded to A before it is added, as in XLA's evaluator).
template <typename A>
void MultiplyInto(const A* __restrict a, const A* __restrict b, A* __restrict out, int64_t m,
                  int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    A* __restrict row = out + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const A scale = a[i * k + p];
      const A* __restrict b_row = b + p * n;
      for (int64_t j = 0; j < n; ++j) {
        row[j] = scalar::Add(row[j], scalar::Multiply(scale, b_row[j]));
      }
    }
  }
}

template <typename A>
std::vector<A> BatchedProduct(const std::vector<A>& a, const std::vector<A>& b, int64_t batch,
                              int64_t m, int64_t k, int64_t n) {
  std::vector<A> out(batch * m * n, A(0));
  for (int64_t i = 0; i < batch; ++i) {
    MultiplyInto(a.data() + i * m * k, b.data() + i * k * n, out.data() + i * m * n, m, k, n);
  }
  return out;
}

}  // namespace

hlo::Literal Dot(const hlo::Literal& lhs, const hlo::Literal& rhs, const DotDimensions& dims,
                 isa::ElementType result_type) {
  RequireArray(lhs, "dot", "lhs");
  RequireArray(rhs, "dot", "rhs");
  const OperandDims l = Classify(lhs, dims.lhs_batch_dims, dims.lhs_contracting_dims, "dot (lhs)");
  const OperandDims r = Classify(rhs, dims.rhs_batch_dims, dims.rhs_contracting_dims, "dot (rhs)");
  RequireMatchingSizes(lhs, l.batch, rhs, r.batch, "batch");
  RequireMatchingSizes(lhs, l.contracting, rhs, r.contracting, "contracting");

  Dims out_dims;
  for (int64_t d : l.batch) out_dims.push_back(lhs.dims()[d]);
  for (int64_t d : l.free) out_dims.push_back(lhs.dims()[d]);
  for (int64_t d : r.free) out_dims.push_back(rhs.dims()[d]);
  const int64_t batch = SizeOf(lhs, l.batch);
  const int64_t m = SizeOf(lhs, l.free);
  const int64_t k = SizeOf(lhs, l.contracting);
  const int64_t n = SizeOf(rhs, r.free);

  return VisitComputeType(result_type, [&](auto tag) {
    // Integers accumulate as uint64_t whatever their signedness: wrapping add and multiply are
    // the same bits, and Narrow keeps the low bits of the output width.
    using T = decltype(tag);
    using A = std::conditional_t<std::is_integral_v<T>, uint64_t, T>;
    const std::vector<A> a = Arrange<A>(lhs, l.batch, l.free, l.contracting);
    const std::vector<A> b = Arrange<A>(rhs, r.batch, r.contracting, r.free);
    return Narrow<A>(result_type, out_dims, BatchedProduct(a, b, batch, m, k, n));
  });
}

}  // namespace tpusim::eval
