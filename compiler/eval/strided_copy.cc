#include "compiler/eval/strided_copy.h"

#include <cstring>

#include "compiler/eval/index_util.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

// The innermost dimension, specialised by element width so each element is one load and store.
template <int kWidth>
void CopyRow(int64_t count, const uint8_t* src, int64_t src_stride, uint8_t* dst,
             int64_t dst_stride) {
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst + i * dst_stride * kWidth, src + i * src_stride * kWidth, kWidth);
  }
}

void CopyRowOfWidth(int width, int64_t count, const uint8_t* src, int64_t src_stride, uint8_t* dst,
                    int64_t dst_stride) {
  switch (width) {
    case 1: return CopyRow<1>(count, src, src_stride, dst, dst_stride);
    case 2: return CopyRow<2>(count, src, src_stride, dst, dst_stride);
    case 4: return CopyRow<4>(count, src, src_stride, dst, dst_stride);
    case 8: return CopyRow<8>(count, src, src_stride, dst, dst_stride);
    default: break;
  }
  throw Error("internal error: strided copy of " + std::to_string(width) + "-byte elements");
}

}  // namespace

void CopyStrided(std::span<const int64_t> dims, int width, const uint8_t* src,
                 const AffineView& src_view, uint8_t* dst, const AffineView& dst_view) {
  if (dims.empty()) {
    std::memcpy(dst + dst_view.offset * width, src + src_view.offset * width, width);
    return;
  }
  const std::size_t inner = dims.size() - 1;
  const std::span<const int64_t> outer_dims = dims.first(inner);
  ForEachIndex(outer_dims, [&](std::span<const int64_t> index) {
    int64_t src_pos = src_view.offset;
    int64_t dst_pos = dst_view.offset;
    for (std::size_t d = 0; d < inner; ++d) {
      src_pos += index[d] * src_view.strides[d];
      dst_pos += index[d] * dst_view.strides[d];
    }
    CopyRowOfWidth(width, dims[inner], src + src_pos * width, src_view.strides[inner],
                   dst + dst_pos * width, dst_view.strides[inner]);
  });
}

}  // namespace tpusim::eval
