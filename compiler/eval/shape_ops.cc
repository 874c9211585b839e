#include "compiler/eval/shape_ops.h"

#include <algorithm>
#include <string>

#include "compiler/eval/element_data.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/strided_copy.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

hlo::Literal NewArray(const hlo::Literal& like, Dims dims) {
  return hlo::Literal(isa::Shape::Array(like.element_type(), std::move(dims)));
}

// out[i] = operand[src_view(i)] for every index of `out`.
void ReadThrough(const hlo::Literal& operand, const AffineView& src_view, hlo::Literal& out) {
  AffineView dst_view{0, RowMajorStrides(out.dims())};
  CopyStrided(out.dims(), operand.element_bytes(), operand.bytes().data(), src_view,
              out.mutable_bytes().data(), dst_view);
}

// out[dst_view(i)] = operand[i] for every index of `box` starting at `src_start` in operand.
void WriteThrough(const hlo::Literal& operand, std::span<const int64_t> src_start,
                  std::span<const int64_t> box, hlo::Literal& out, const AffineView& dst_view) {
  const Dims strides = RowMajorStrides(operand.dims());
  AffineView src_view{0, strides};
  for (std::size_t d = 0; d < strides.size(); ++d) src_view.offset += src_start[d] * strides[d];
  CopyStrided(box, operand.element_bytes(), operand.bytes().data(), src_view,
              out.mutable_bytes().data(), dst_view);
}

void RequireRank(std::span<const int64_t> values, const hlo::Literal& operand, const char* op,
                 const char* what) {
  if (values.size() == operand.dims().size()) return;
  throw Error(std::string(op) + ": " + what + " has " + std::to_string(values.size()) +
              " entries for an operand of rank " + std::to_string(operand.dims().size()) + " (" +
              isa::ToString(operand.shape()) + ")");
}

// XLA clamps dynamic start indices so that the whole box fits: start in [0, size - box].
Dims ClampedStarts(std::span<const int64_t> starts, std::span<const int64_t> dims,
                   std::span<const int64_t> box) {
  Dims clamped(starts.size());
  for (std::size_t d = 0; d < starts.size(); ++d) {
    clamped[d] = std::clamp<int64_t>(starts[d], 0, dims[d] - box[d]);
  }
  return clamped;
}

// Size of one padded dim: interior padding between n elements, then the edges.
int64_t PaddedSize(int64_t size, const PadDimension& pad) {
  const int64_t interior = size > 0 ? (size - 1) * pad.interior : 0;
  return pad.low + size + interior + pad.high;
}

}  // namespace

hlo::Literal Broadcast(const hlo::Literal& operand, std::span<const int64_t> out_dims,
                       std::span<const int64_t> dimensions) {
  RequireArray(operand, "broadcast", "the operand");
  RequireRank(dimensions, operand, "broadcast", "dimensions");
  RequireDistinctDims(dimensions, static_cast<int64_t>(out_dims.size()), "broadcast");
  const Dims operand_strides = RowMajorStrides(operand.dims());
  AffineView src_view{0, Dims(out_dims.size(), 0)};
  for (std::size_t i = 0; i < dimensions.size(); ++i) {
    const int64_t size = operand.dims()[i];
    const int64_t out_size = out_dims[dimensions[i]];
    if (size != out_size && size != 1) {
      throw Error("broadcast: operand dim " + std::to_string(i) + " has size " +
                  std::to_string(size) + " but output dim " + std::to_string(dimensions[i]) +
                  " has size " + std::to_string(out_size));
    }
    // A stretched size-1 dim reads the same element for every output index.
    if (size == out_size) src_view.strides[dimensions[i]] = operand_strides[i];
  }
  hlo::Literal out = NewArray(operand, Dims(out_dims.begin(), out_dims.end()));
  ReadThrough(operand, src_view, out);
  return out;
}

hlo::Literal Reshape(const hlo::Literal& operand, std::span<const int64_t> out_dims) {
  RequireArray(operand, "reshape", "the operand");
  if (ElementCountOf(out_dims) != operand.element_count()) {
    throw Error("reshape: cannot reshape " + isa::ToString(operand.shape()) + " (" +
                std::to_string(operand.element_count()) + " elements) to " +
                DimsToString(out_dims));
  }
  std::vector<uint8_t> bytes(operand.bytes().begin(), operand.bytes().end());
  return hlo::Literal::FromBytes(
      isa::Shape::Array(operand.element_type(), Dims(out_dims.begin(), out_dims.end())),
      std::move(bytes));
}

hlo::Literal Transpose(const hlo::Literal& operand, std::span<const int64_t> permutation) {
  RequireArray(operand, "transpose", "the operand");
  RequirePermutation(permutation, static_cast<int64_t>(operand.dims().size()), "transpose");
  const Dims operand_strides = RowMajorStrides(operand.dims());
  Dims out_dims(permutation.size());
  AffineView src_view{0, Dims(permutation.size())};
  for (std::size_t i = 0; i < permutation.size(); ++i) {
    out_dims[i] = operand.dims()[permutation[i]];
    src_view.strides[i] = operand_strides[permutation[i]];
  }
  hlo::Literal out = NewArray(operand, out_dims);
  ReadThrough(operand, src_view, out);
  return out;
}

hlo::Literal Slice(const hlo::Literal& operand, std::span<const int64_t> starts,
                   std::span<const int64_t> limits, std::span<const int64_t> strides) {
  RequireArray(operand, "slice", "the operand");
  RequireRank(starts, operand, "slice", "start_indices");
  RequireRank(limits, operand, "slice", "limit_indices");
  RequireRank(strides, operand, "slice", "strides");
  const Dims operand_strides = RowMajorStrides(operand.dims());
  Dims out_dims(starts.size());
  AffineView src_view{0, Dims(starts.size())};
  for (std::size_t d = 0; d < starts.size(); ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > operand.dims()[d] || strides[d] < 1) {
      throw Error("slice: dim " + std::to_string(d) + " of " + isa::ToString(operand.shape()) +
                  " cannot be sliced [" + std::to_string(starts[d]) + ":" +
                  std::to_string(limits[d]) + ":" + std::to_string(strides[d]) + "]");
    }
    out_dims[d] = (limits[d] - starts[d] + strides[d] - 1) / strides[d];
    src_view.offset += starts[d] * operand_strides[d];
    src_view.strides[d] = strides[d] * operand_strides[d];
  }
  hlo::Literal out = NewArray(operand, out_dims);
  ReadThrough(operand, src_view, out);
  return out;
}

hlo::Literal DynamicSlice(const hlo::Literal& operand, std::span<const int64_t> starts,
                          std::span<const int64_t> sizes) {
  RequireArray(operand, "dynamic-slice", "the operand");
  RequireRank(starts, operand, "dynamic-slice", "start_indices");
  RequireRank(sizes, operand, "dynamic-slice", "dynamic_slice_sizes");
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || sizes[d] > operand.dims()[d]) {
      throw Error("dynamic-slice: slice size " + std::to_string(sizes[d]) + " of dim " +
                  std::to_string(d) + " does not fit in " + isa::ToString(operand.shape()));
    }
  }
  const Dims clamped = ClampedStarts(starts, operand.dims(), sizes);
  const Dims ones(sizes.size(), 1);
  const Dims limits = [&] {
    Dims l(sizes.size());
    for (std::size_t d = 0; d < sizes.size(); ++d) l[d] = clamped[d] + sizes[d];
    return l;
  }();
  return Slice(operand, clamped, limits, ones);
}

hlo::Literal DynamicUpdateSlice(const hlo::Literal& operand, const hlo::Literal& update,
                                std::span<const int64_t> starts) {
  RequireArray(operand, "dynamic-update-slice", "the operand");
  RequireArray(update, "dynamic-update-slice", "the update");
  RequireSameType(operand, update, "dynamic-update-slice");
  RequireRank(starts, operand, "dynamic-update-slice", "start_indices");
  RequireRank(update.dims(), operand, "dynamic-update-slice", "the update's dims");
  for (std::size_t d = 0; d < starts.size(); ++d) {
    if (update.dims()[d] > operand.dims()[d]) {
      throw Error("dynamic-update-slice: update " + isa::ToString(update.shape()) +
                  " does not fit in " + isa::ToString(operand.shape()));
    }
  }
  const Dims clamped = ClampedStarts(starts, operand.dims(), update.dims());
  hlo::Literal out = operand;
  AffineView dst_view{0, RowMajorStrides(operand.dims())};
  for (std::size_t d = 0; d < clamped.size(); ++d) {
    dst_view.offset += clamped[d] * dst_view.strides[d];
  }
  WriteThrough(update, Dims(starts.size(), 0), update.dims(), out, dst_view);
  return out;
}

hlo::Literal Concatenate(std::span<const hlo::Literal> operands, int64_t dimension) {
  if (operands.empty()) throw Error("concatenate needs at least one operand");
  const hlo::Literal& first = operands[0];
  RequireArray(first, "concatenate", "operand 0");
  const int64_t rank = static_cast<int64_t>(first.dims().size());
  if (dimension < 0 || dimension >= rank) {
    throw Error("concatenate: dimension " + std::to_string(dimension) +
                " is out of range for rank " + std::to_string(rank));
  }
  Dims out_dims = first.dims();
  out_dims[dimension] = 0;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const hlo::Literal& operand = operands[i];
    RequireArray(operand, "concatenate", "every operand");
    RequireSameType(first, operand, "concatenate");
    bool compatible = operand.dims().size() == first.dims().size();
    for (int64_t d = 0; compatible && d < rank; ++d) {
      compatible = d == dimension || operand.dims()[d] == first.dims()[d];
    }
    if (!compatible) {
      throw Error("concatenate: operand " + std::to_string(i) + " " +
                  isa::ToString(operand.shape()) + " does not match operand 0 " +
                  isa::ToString(first.shape()) + " outside dimension " + std::to_string(dimension));
    }
    out_dims[dimension] += operand.dims()[dimension];
  }
  hlo::Literal out = NewArray(first, out_dims);
  AffineView dst_view{0, RowMajorStrides(out_dims)};
  for (const hlo::Literal& operand : operands) {
    WriteThrough(operand, Dims(rank, 0), operand.dims(), out, dst_view);
    dst_view.offset += operand.dims()[dimension] * dst_view.strides[dimension];
  }
  return out;
}

hlo::Literal Pad(const hlo::Literal& operand, const hlo::Literal& padding_value,
                 std::span<const PadDimension> padding) {
  RequireArray(operand, "pad", "the operand");
  RequireScalar(padding_value, "pad", "the padding value");
  RequireSameType(operand, padding_value, "pad");
  if (padding.size() != operand.dims().size()) {
    throw Error("pad: padding has " + std::to_string(padding.size()) + " dims for " +
                isa::ToString(operand.shape()));
  }
  const std::size_t rank = padding.size();
  Dims out_dims(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    out_dims[d] = PaddedSize(operand.dims()[d], padding[d]);
    if (padding[d].interior < 0 || out_dims[d] < 0) {
      throw Error("pad: dim " + std::to_string(d) + " of " + isa::ToString(operand.shape()) +
                  " padded " + std::to_string(padding[d].low) + "_" +
                  std::to_string(padding[d].high) + "_" + std::to_string(padding[d].interior) +
                  " would have size " + std::to_string(out_dims[d]));
    }
  }
  hlo::Literal out = Broadcast(padding_value, out_dims, {});

  // Operand index i lands at low + i * (interior + 1); copy the box of indices that land inside.
  Dims first(rank), box(rank);
  AffineView dst_view{0, RowMajorStrides(out_dims)};
  for (std::size_t d = 0; d < rank; ++d) {
    const int64_t step = padding[d].interior + 1;
    const int64_t low = padding[d].low;
    first[d] = low >= 0 ? 0 : (-low + step - 1) / step;
    const int64_t last_in_bounds =
        (out_dims[d] - 1 - low) >= 0 ? (out_dims[d] - 1 - low) / step : -1;
    const int64_t last = std::min(operand.dims()[d] - 1, last_in_bounds);
    box[d] = std::max<int64_t>(0, last - first[d] + 1);
    dst_view.offset += (low + first[d] * step) * dst_view.strides[d];
    dst_view.strides[d] *= step;
  }
  if (ElementCountOf(box) > 0) WriteThrough(operand, first, box, out, dst_view);
  return out;
}

hlo::Literal Reverse(const hlo::Literal& operand, std::span<const int64_t> dimensions) {
  RequireArray(operand, "reverse", "the operand");
  RequireDistinctDims(dimensions, static_cast<int64_t>(operand.dims().size()), "reverse");
  AffineView src_view{0, RowMajorStrides(operand.dims())};
  if (operand.element_count() > 0) {
    for (int64_t d : dimensions) {
      src_view.offset += (operand.dims()[d] - 1) * src_view.strides[d];
      src_view.strides[d] = -src_view.strides[d];
    }
  }
  hlo::Literal out = NewArray(operand, operand.dims());
  ReadThrough(operand, src_view, out);
  return out;
}

hlo::Literal Iota(isa::ElementType type, std::span<const int64_t> dims, int64_t iota_dimension) {
  if (iota_dimension < 0 || iota_dimension >= static_cast<int64_t>(dims.size())) {
    throw Error("iota: iota_dimension " + std::to_string(iota_dimension) + " is out of range for " +
                DimsToString(dims));
  }
  std::vector<int64_t> values;
  values.reserve(ElementCountOf(dims));
  ForEachIndex(dims,
               [&](std::span<const int64_t> index) { values.push_back(index[iota_dimension]); });
  return Narrow<int64_t>(type, Dims(dims.begin(), dims.end()), values);
}

hlo::Literal Copy(const hlo::Literal& operand) { return operand; }

}  // namespace tpusim::eval
