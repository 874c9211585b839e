// Row-major index arithmetic shared by the kernels: strides, and a visitor over every index of an
// array in row-major order (the order XLA's evaluator visits elements, which fixes the order of
// every accumulation the kernels do).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tpusim::eval {

// Number of elements of an array of `dims` (1 for a scalar, 0 if any dim is 0).
int64_t ElementCountOf(std::span<const int64_t> dims);

// Row-major strides in elements: the last dim has stride 1.
std::vector<int64_t> RowMajorStrides(std::span<const int64_t> dims);

// Calls fn(index) for every index of an array of `dims`, in row-major order (last dim fastest).
// A scalar gets one call with an empty index; an array with a zero dim gets none. `index` is only
// valid during the call.
template <typename Fn>
void ForEachIndex(std::span<const int64_t> dims, Fn&& fn) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  std::vector<int64_t> index(dims.size(), 0);
  while (true) {
    fn(std::span<const int64_t>(index));
    int64_t i = static_cast<int64_t>(dims.size()) - 1;
    for (; i >= 0; --i) {
      if (++index[i] < dims[i]) break;
      index[i] = 0;
    }
    if (i < 0) return;
  }
}

// Checks that `dims` is a permutation of 0..rank-1 (transpose, reshape orders); throws
// tpusim::Error naming `what` otherwise.
void RequirePermutation(std::span<const int64_t> permutation, int64_t rank, const char* what);

// Checks that every entry of `dims` is a distinct dimension of an array of `rank`.
void RequireDistinctDims(std::span<const int64_t> dims, int64_t rank, const char* what);

}  // namespace tpusim::eval
