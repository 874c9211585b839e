#include "compiler/eval/gather_scatter.h"

#include <algorithm>
#include <limits>
#include <string>

#include "compiler/eval/element_data.h"
#include "compiler/eval/fold.h"
#include "compiler/eval/index_util.h"
#include "compiler/eval/literal_util.h"
#include "compiler/eval/strided_copy.h"
#include "isa/error.h"
#include "isa/shape.h"

namespace tpusim::eval {
namespace {

using Dims = std::vector<int64_t>;

bool Contains(std::span<const int64_t> values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// Index arrays may be any integer type; unsigned values beyond int64 saturate (they are out of
// bounds either way).
std::vector<int64_t> IndexValues(const hlo::Literal& indices, const char* op) {
  const isa::ElementType type = indices.element_type();
  if (!isa::IsInteger(type)) {
    throw Error(std::string(op) + ": indices must be integers, got " +
                isa::ToString(indices.shape()));
  }
  if (isa::IsSignedInt(type)) return Widen<int64_t>(indices);
  const std::vector<uint64_t> raw = Widen<uint64_t>(indices);
  std::vector<int64_t> values(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    values[i] =
        static_cast<int64_t>(std::min<uint64_t>(raw[i], std::numeric_limits<int64_t>::max()));
  }
  return values;
}

// The index-vector array (gather's start_indices, scatter's scatter_indices) seen as a list of
// index vectors: one per batch position (the dims other than index_vector_dim, in order).
class IndexVectors {
 public:
  IndexVectors(const hlo::Literal& indices, int64_t index_vector_dim, std::size_t components,
               const char* op)
      : values_(IndexValues(indices, op)), strides_(RowMajorStrides(indices.dims())) {
    const int64_t rank = static_cast<int64_t>(indices.dims().size());
    if (index_vector_dim < 0 || index_vector_dim > rank) {
      throw Error(std::string(op) + ": index_vector_dim " + std::to_string(index_vector_dim) +
                  " is out of range for indices " + isa::ToString(indices.shape()));
    }
    // index_vector_dim == rank means a trailing dim of size 1 that is not in the array.
    const int64_t vector_size = index_vector_dim < rank ? indices.dims()[index_vector_dim] : 1;
    if (vector_size != static_cast<int64_t>(components)) {
      throw Error(std::string(op) + ": index vectors have " + std::to_string(vector_size) +
                  " components but the dimension numbers map " + std::to_string(components));
    }
    vector_stride_ = index_vector_dim < rank ? strides_[index_vector_dim] : 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != index_vector_dim) batch_dims_.push_back(d);
    }
    for (int64_t d : batch_dims_) batch_sizes_.push_back(indices.dims()[d]);
  }

  // Sizes of the batch dims, in order.
  const Dims& batch_sizes() const { return batch_sizes_; }

  // Throws unless every entry of `dims` is a batch dim of the indices (not index_vector_dim).
  void RequireBatchDims(std::span<const int64_t> dims, const char* op, const char* what) const {
    for (int64_t d : dims) {
      if (Contains(batch_dims_, d)) continue;
      throw Error(std::string(op) + ": " + what + " lists dim " + std::to_string(d) +
                  ", which is not a batch dim of the indices");
    }
  }

  // Component `c` of the index vector at batch position `batch`.
  int64_t Component(std::span<const int64_t> batch, std::size_t c) const {
    int64_t position = static_cast<int64_t>(c) * vector_stride_;
    for (std::size_t k = 0; k < batch.size(); ++k) position += batch[k] * strides_[batch_dims_[k]];
    return values_[position];
  }

  // The coordinate of indices dim `indices_dim` (a batch dim) at batch position `batch`.
  int64_t Coordinate(std::span<const int64_t> batch, int64_t indices_dim) const {
    for (std::size_t k = 0; k < batch_dims_.size(); ++k) {
      if (batch_dims_[k] == indices_dim) return batch[k];
    }
    throw Error("internal error: indices dim " + std::to_string(indices_dim) + " is not a batch dim");
  }

 private:
  std::vector<int64_t> values_;
  Dims strides_;
  int64_t vector_stride_ = 0;
  Dims batch_dims_;
  Dims batch_sizes_;
};

// The start of a slice or window in the operand for one batch position: index-vector components
// at the mapped dims, batch coordinates at the batching dims, 0 elsewhere.
Dims StartIndex(const IndexVectors& vectors, std::span<const int64_t> batch, std::size_t rank,
                std::span<const int64_t> index_map, std::span<const int64_t> operand_batching_dims,
                std::span<const int64_t> indices_batching_dims) {
  Dims start(rank, 0);
  for (std::size_t c = 0; c < index_map.size(); ++c) {
    start[index_map[c]] = vectors.Component(batch, c);
  }
  for (std::size_t i = 0; i < operand_batching_dims.size(); ++i) {
    start[operand_batching_dims[i]] = vectors.Coordinate(batch, indices_batching_dims[i]);
  }
  return start;
}

// Operand dims that are neither in `removed_a` nor in `removed_b`, in increasing order: the dims
// a gather slice or a scatter window keeps.
Dims WindowDims(std::size_t rank, std::span<const int64_t> removed_a,
                std::span<const int64_t> removed_b) {
  Dims dims;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
    if (!Contains(removed_a, d) && !Contains(removed_b, d)) dims.push_back(d);
  }
  return dims;
}

Dims Joined(std::span<const int64_t> a, std::span<const int64_t> b) {
  Dims all(a.begin(), a.end());
  all.insert(all.end(), b.begin(), b.end());
  return all;
}

void RequireSameLength(std::span<const int64_t> a, std::span<const int64_t> b, const char* op,
                       const char* what) {
  if (a.size() == b.size()) return;
  throw Error(std::string(op) + ": " + what + " have different lengths (" +
              std::to_string(a.size()) + " and " + std::to_string(b.size()) + ")");
}

}  // namespace

hlo::Literal Gather(const hlo::Literal& operand, const hlo::Literal& start_indices,
                    const GatherDimensions& dims, std::span<const int64_t> slice_sizes) {
  RequireArray(operand, "gather", "the operand");
  RequireArray(start_indices, "gather", "start_indices");
  const std::size_t rank = operand.dims().size();
  if (slice_sizes.size() != rank) {
    throw Error("gather: slice_sizes has " + std::to_string(slice_sizes.size()) +
                " entries for the operand " + isa::ToString(operand.shape()));
  }
  RequireSameLength(dims.operand_batching_dims, dims.start_indices_batching_dims, "gather",
                    "operand_batching_dims and start_indices_batching_dims");
  const int64_t operand_rank = static_cast<int64_t>(rank);
  RequireDistinctDims(Joined(dims.collapsed_slice_dims, dims.operand_batching_dims), operand_rank,
                      "gather (collapsed_slice_dims and operand_batching_dims)");
  RequireDistinctDims(Joined(dims.start_index_map, dims.operand_batching_dims), operand_rank,
                      "gather (start_index_map and operand_batching_dims)");
  const IndexVectors vectors(start_indices, dims.index_vector_dim, dims.start_index_map.size(),
                             "gather");
  vectors.RequireBatchDims(dims.start_indices_batching_dims, "gather",
                           "start_indices_batching_dims");
  const Dims window_dims = WindowDims(rank, dims.collapsed_slice_dims, dims.operand_batching_dims);
  RequireSameLength(window_dims, dims.offset_dims, "gather",
                    "offset_dims and the slice dims that are neither collapsed nor batching");
  for (std::size_t d = 0; d < rank; ++d) {
    const bool dropped = !Contains(window_dims, static_cast<int64_t>(d));
    if (slice_sizes[d] < 0 || slice_sizes[d] > operand.dims()[d] ||
        (dropped && slice_sizes[d] != 1)) {
      throw Error("gather: slice size " + std::to_string(slice_sizes[d]) + " of dim " +
                  std::to_string(d) + " does not fit in " + isa::ToString(operand.shape()) +
                  (dropped ? " (a collapsed or batching dim has slice size 1)" : ""));
    }
  }

  // Output dims: offset dims take the slice sizes, the others the batch sizes, each in order.
  const std::size_t out_rank = vectors.batch_sizes().size() + dims.offset_dims.size();
  RequireDistinctDims(dims.offset_dims, static_cast<int64_t>(out_rank), "gather (offset_dims)");
  Dims out_dims(out_rank);
  Dims batch_out_dims;
  for (std::size_t d = 0, batch = 0, offset = 0; d < out_rank; ++d) {
    if (Contains(dims.offset_dims, static_cast<int64_t>(d))) {
      out_dims[d] = slice_sizes[window_dims[offset++]];
    } else {
      out_dims[d] = vectors.batch_sizes()[batch++];
      batch_out_dims.push_back(static_cast<int64_t>(d));
    }
  }
  hlo::Literal out(isa::Shape::Array(operand.element_type(), out_dims));
  const Dims operand_strides = RowMajorStrides(operand.dims());
  const Dims out_strides = RowMajorStrides(out_dims);
  Dims box;
  for (int64_t d : window_dims) box.push_back(slice_sizes[d]);

  // One strided copy of a whole slice per batch position.
  ForEachIndex(vectors.batch_sizes(), [&](std::span<const int64_t> batch) {
    Dims start = StartIndex(vectors, batch, rank, dims.start_index_map, dims.operand_batching_dims,
                            dims.start_indices_batching_dims);
    AffineView src{0, {}};
    for (std::size_t d = 0; d < rank; ++d) {
      start[d] = std::clamp<int64_t>(start[d], 0, operand.dims()[d] - slice_sizes[d]);
      src.offset += start[d] * operand_strides[d];
    }
    for (int64_t d : window_dims) src.strides.push_back(operand_strides[d]);
    AffineView dst{0, {}};
    for (std::size_t k = 0; k < batch.size(); ++k) {
      dst.offset += batch[k] * out_strides[batch_out_dims[k]];
    }
    for (int64_t d : dims.offset_dims) dst.strides.push_back(out_strides[d]);
    CopyStrided(box, operand.element_bytes(), operand.bytes().data(), src,
                out.mutable_bytes().data(), dst);
  });
  return out;
}

namespace {

// Scatter's visiting order: update elements grouped by scatter position (row-major over the
// update dims that are not window dims), each window in row-major order; `fn(operand_linear,
// update_linear)` for every update whose window fits in the operand.
template <typename Fn>
void ForEachScatterUpdate(const hlo::Literal& operand, const hlo::Literal& scatter_indices,
                          const hlo::Literal& updates, const ScatterDimensions& dims, Fn&& fn) {
  const std::size_t rank = operand.dims().size();
  RequireSameLength(dims.input_batching_dims, dims.scatter_indices_batching_dims, "scatter",
                    "input_batching_dims and scatter_indices_batching_dims");
  const int64_t operand_rank = static_cast<int64_t>(rank);
  RequireDistinctDims(Joined(dims.inserted_window_dims, dims.input_batching_dims), operand_rank,
                      "scatter (inserted_window_dims and input_batching_dims)");
  RequireDistinctDims(Joined(dims.scatter_dims_to_operand_dims, dims.input_batching_dims),
                      operand_rank, "scatter (scatter_dims_to_operand_dims and input_batching_dims)");
  RequireDistinctDims(dims.update_window_dims, static_cast<int64_t>(updates.dims().size()),
                      "scatter (update_window_dims)");
  const IndexVectors vectors(scatter_indices, dims.index_vector_dim,
                             dims.scatter_dims_to_operand_dims.size(), "scatter");
  vectors.RequireBatchDims(dims.scatter_indices_batching_dims, "scatter",
                           "scatter_indices_batching_dims");
  const Dims window_dims = WindowDims(rank, dims.inserted_window_dims, dims.input_batching_dims);
  RequireSameLength(
      window_dims, dims.update_window_dims, "scatter",
      "update_window_dims and the operand dims that are neither inserted nor batching");
  Dims scatter_update_dims;
  for (int64_t d = 0; d < static_cast<int64_t>(updates.dims().size()); ++d) {
    if (!Contains(dims.update_window_dims, d)) scatter_update_dims.push_back(d);
  }
  Dims scatter_sizes, window_sizes;
  for (int64_t d : scatter_update_dims) scatter_sizes.push_back(updates.dims()[d]);
  for (int64_t d : dims.update_window_dims) window_sizes.push_back(updates.dims()[d]);
  if (scatter_sizes != vectors.batch_sizes()) {
    throw Error("scatter: the updates' scatter dims " + DimsToString(scatter_sizes) +
                " do not match the scatter indices' batch dims " +
                DimsToString(vectors.batch_sizes()));
  }
  // Window size along every operand dim (1 for inserted and batching dims).
  Dims operand_window(rank, 1);
  for (std::size_t k = 0; k < window_dims.size(); ++k) {
    operand_window[window_dims[k]] = window_sizes[k];
  }

  const Dims operand_strides = RowMajorStrides(operand.dims());
  const Dims update_strides = RowMajorStrides(updates.dims());
  ForEachIndex(scatter_sizes, [&](std::span<const int64_t> batch) {
    const Dims start = StartIndex(vectors, batch, rank, dims.scatter_dims_to_operand_dims,
                                  dims.input_batching_dims, dims.scatter_indices_batching_dims);
    int64_t operand_base = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      if (start[d] < 0 || start[d] + operand_window[d] > operand.dims()[d]) return;  // skipped
      operand_base += start[d] * operand_strides[d];
    }
    int64_t update_base = 0;
    for (std::size_t k = 0; k < batch.size(); ++k) {
      update_base += batch[k] * update_strides[scatter_update_dims[k]];
    }
    ForEachIndex(window_sizes, [&](std::span<const int64_t> window) {
      int64_t operand_linear = operand_base;
      int64_t update_linear = update_base;
      for (std::size_t k = 0; k < window.size(); ++k) {
        operand_linear += window[k] * operand_strides[window_dims[k]];
        update_linear += window[k] * update_strides[dims.update_window_dims[k]];
      }
      fn(operand_linear, update_linear);
    });
  });
}

void ValidateScatter(std::span<const hlo::Literal> operands,
                     std::span<const hlo::Literal> updates) {
  if (operands.empty() || operands.size() != updates.size()) {
    throw Error("scatter needs N >= 1 operands and as many updates, got " +
                std::to_string(operands.size()) + " and " + std::to_string(updates.size()));
  }
  for (std::size_t i = 0; i < operands.size(); ++i) {
    RequireArray(operands[i], "scatter", "every operand");
    RequireArray(updates[i], "scatter", "every update");
    RequireSameType(operands[i], updates[i], "scatter");
    if (operands[i].dims() != operands[0].dims() || updates[i].dims() != updates[0].dims()) {
      throw Error("scatter: all operands must have the same dims, and all updates");
    }
  }
}

}  // namespace

hlo::Literal Scatter(std::span<const hlo::Literal> operands, const hlo::Literal& scatter_indices,
                     std::span<const hlo::Literal> updates, const ScatterDimensions& dims,
                     const Reducer& combiner) {
  ValidateScatter(operands, updates);
  RequireArray(scatter_indices, "scatter", "scatter_indices");
  const std::size_t n = operands.size();
  const isa::ElementType type = operands[0].element_type();
  const std::optional<BinaryOp> native = NativeFoldOp(combiner, type);
  if (n == 1 && native) {
    return WithNativeFold(type, *native, [&](auto tag, auto fold) -> hlo::Literal {
      using T = decltype(tag);
      std::vector<T> result = Widen<T>(operands[0]);
      const std::vector<T> values = Widen<T>(updates[0]);
      ForEachScatterUpdate(
          operands[0], scatter_indices, updates[0], dims, [&](int64_t target, int64_t update) {
            result[target] = RoundToElement(type, fold(result[target], values[update]));
          });
      return Narrow<T>(type, operands[0].dims(), result);
    });
  }

  std::vector<hlo::Literal> results(operands.begin(), operands.end());
  std::vector<hlo::Literal> args;
  for (const hlo::Literal& operand : operands) {
    args.emplace_back(isa::Shape::Array(operand.element_type(), {}));
  }
  for (const hlo::Literal& operand : operands) {
    args.emplace_back(isa::Shape::Array(operand.element_type(), {}));
  }
  ForEachScatterUpdate(
      operands[0], scatter_indices, updates[0], dims, [&](int64_t target, int64_t update) {
        for (std::size_t i = 0; i < n; ++i) {
          CopyElement(results[i], target, args[i], 0);
          CopyElement(updates[i], update, args[n + i], 0);
        }
        hlo::Literal value = combiner.Apply(args);
        for (std::size_t i = 0; i < n; ++i) {
          const hlo::Literal& part = value.is_tuple() ? value.elements().at(i) : value;
          if (part.is_tuple() || part.element_count() != 1 ||
              part.element_type() != results[i].element_type()) {
            throw Error("scatter: the combiner returned " + isa::ToString(value.shape()) +
                        ", expected " + std::to_string(n) + " scalar(s) of the operands' types");
          }
          CopyElement(part, 0, results[i], target);
        }
      });
  if (n == 1) return std::move(results[0]);
  return hlo::Literal::Tuple(std::move(results));
}

}  // namespace tpusim::eval
