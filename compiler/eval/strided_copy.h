// One copy loop for every data-movement op: broadcast, transpose, slice, reverse and dynamic-slice
// read their operand through an affine view (offset + sum of index * stride, strides may be 0 or
// negative), and pad, concatenate and dynamic-update-slice write through one. Each op only
// computes its views; the loop is shared, and fast because its inner dimension copies fixed-width
// elements with a constant stride.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tpusim::eval {

// Positions (in elements) of an index space inside an array: offset + sum_d index[d] * strides[d].
struct AffineView {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

// For every index i of the box `dims` (row-major): dst[dst_view(i)] = src[src_view(i)], elements
// being `width` bytes. Nothing for a box with a zero dim; one element for rank 0.
void CopyStrided(std::span<const int64_t> dims, int width, const uint8_t* src,
                 const AffineView& src_view, uint8_t* dst, const AffineView& dst_view);

}  // namespace tpusim::eval
