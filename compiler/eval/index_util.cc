#include "compiler/eval/index_util.h"

#include <string>

#include "isa/error.h"

namespace tpusim::eval {

int64_t ElementCountOf(std::span<const int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

std::vector<int64_t> RowMajorStrides(std::span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

void RequireDistinctDims(std::span<const int64_t> dims, int64_t rank, const char* what) {
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      throw Error(std::string(what) + ": dimension " + std::to_string(d) +
                  " is out of range for rank " + std::to_string(rank));
    }
    if (seen[d]) {
      throw Error(std::string(what) + ": dimension " + std::to_string(d) + " is listed twice");
    }
    seen[d] = true;
  }
}

void RequirePermutation(std::span<const int64_t> permutation, int64_t rank, const char* what) {
  if (static_cast<int64_t>(permutation.size()) != rank) {
    throw Error(std::string(what) + ": a permutation of rank " + std::to_string(rank) + " has " +
                std::to_string(rank) + " entries, got " + std::to_string(permutation.size()));
  }
  RequireDistinctDims(permutation, rank, what);
}

}  // namespace tpusim::eval
