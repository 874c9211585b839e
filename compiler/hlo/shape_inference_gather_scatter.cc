// gather and scatter: XLA's InferGatherShape / InferScatterShape, batching dims included. The
// start indices are "expanded" first: when index_vector_dim equals their rank, each index is a
// vector of one, as if the indices had a trailing dimension of size 1.
#include <algorithm>
#include <string>

#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo::inference {

using isa::Shape;

namespace {

bool Contains(const std::vector<int64_t>& values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// Checks `values` are increasing (hence unique) dimensions of a shape of `rank`.
void CheckSortedDimensions(const Instruction& instruction, const std::vector<int64_t>& values, int64_t rank,
                           std::string_view what) {
  CheckDimensions(instruction, values, rank, what);
  if (!std::is_sorted(values.begin(), values.end())) {
    Fail(instruction, std::string(what) + "=" + Str(values) + " must be in increasing order");
  }
}

// The start indices with the index vector dimension made explicit.
std::vector<int64_t> ExpandedIndexDims(const Instruction& instruction, const Shape& indices, int64_t index_vector_dim) {
  if (!isa::IsInteger(indices.element_type)) {
    Fail(instruction, "the indices " + Str(indices) + " of " + std::string(OpcodeName(instruction.opcode())) +
                          " must be integers");
  }
  if (index_vector_dim < 0 || index_vector_dim > indices.rank()) {
    Fail(instruction, "index_vector_dim=" + std::to_string(index_vector_dim) + " is out of range for the indices " +
                          Str(indices) + " (0.." + std::to_string(indices.rank()) + ")");
  }
  std::vector<int64_t> dims = indices.dims;
  if (index_vector_dim == indices.rank()) dims.push_back(1);
  return dims;
}

// The expanded index dims without the index vector dimension: the batch dims of the result.
std::vector<int64_t> BatchDims(const std::vector<int64_t>& expanded, int64_t index_vector_dim) {
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < static_cast<int64_t>(expanded.size()); ++i) {
    if (i != index_vector_dim) dims.push_back(expanded[i]);
  }
  return dims;
}

// Checks the index map (start_index_map / scatter_dims_to_operand_dims) and the two batching
// lists against the operand and the index vector.
void CheckIndexMap(const Instruction& instruction, std::string_view map_name, const std::vector<int64_t>& map,
                   int64_t index_vector_size, int64_t operand_rank, std::string_view operand_batching_name,
                   const std::vector<int64_t>& operand_batching, std::string_view indices_batching_name,
                   const std::vector<int64_t>& indices_batching, int64_t indices_rank, int64_t index_vector_dim) {
  if (static_cast<int64_t>(map.size()) != index_vector_size) {
    Fail(instruction, std::string(map_name) + "=" + Str(map) + " has " + std::to_string(map.size()) +
                          " entries for index vectors of " + std::to_string(index_vector_size));
  }
  CheckDimensions(instruction, map, operand_rank, map_name);
  CheckSortedDimensions(instruction, operand_batching, operand_rank, operand_batching_name);
  if (operand_batching.size() != indices_batching.size()) {
    Fail(instruction, std::string(operand_batching_name) + "=" + Str(operand_batching) + " and " +
                          std::string(indices_batching_name) + "=" + Str(indices_batching) +
                          " have different lengths");
  }
  CheckDimensions(instruction, indices_batching, indices_rank, indices_batching_name);
  if (Contains(indices_batching, index_vector_dim)) {
    Fail(instruction, std::string(indices_batching_name) + "=" + Str(indices_batching) +
                          " contains index_vector_dim " + std::to_string(index_vector_dim));
  }
}

}  // namespace

Shape InferGather(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0, "the operand");
  const Shape& indices = ArrayOperand(instruction, 1, "the start indices");
  const std::vector<int64_t> kNone;
  const std::vector<int64_t>& offset_dims = instruction.GetIntList("offset_dims");
  const std::vector<int64_t>& collapsed = instruction.GetIntList("collapsed_slice_dims");
  const std::vector<int64_t>& start_index_map = instruction.GetIntList("start_index_map");
  const std::vector<int64_t>& operand_batching = IntListOr(instruction, "operand_batching_dims", kNone);
  const std::vector<int64_t>& indices_batching = IntListOr(instruction, "start_indices_batching_dims", kNone);
  const std::vector<int64_t>& slice_sizes = instruction.GetIntList("slice_sizes");
  const int64_t index_vector_dim = instruction.GetInt("index_vector_dim");

  const std::vector<int64_t> expanded = ExpandedIndexDims(instruction, indices, index_vector_dim);
  CheckIndexMap(instruction, "start_index_map", start_index_map, expanded[index_vector_dim], operand.rank(),
                "operand_batching_dims", operand_batching, "start_indices_batching_dims", indices_batching,
                static_cast<int64_t>(expanded.size()), index_vector_dim);
  CheckSortedDimensions(instruction, collapsed, operand.rank(), "collapsed_slice_dims");
  for (int64_t d : operand_batching) {
    if (Contains(collapsed, d)) {
      Fail(instruction, "dimension " + std::to_string(d) + " is both collapsed and a batching dimension");
    }
  }
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank()) {
    Fail(instruction, "slice_sizes=" + Str(slice_sizes) + " does not give one size per dimension of " + Str(operand));
  }
  for (std::size_t i = 0; i < slice_sizes.size(); ++i) {
    if (slice_sizes[i] < 0 || (operand.dims[i] != isa::kUnboundedSize && slice_sizes[i] > operand.dims[i])) {
      Fail(instruction, "slice_sizes=" + Str(slice_sizes) + ": size " + std::to_string(slice_sizes[i]) +
                            " of dimension " + std::to_string(i) + " does not fit in " + Str(operand));
    }
    const auto d = static_cast<int64_t>(i);
    if ((Contains(collapsed, d) || Contains(operand_batching, d)) && slice_sizes[i] > 1) {
      Fail(instruction, "slice_sizes=" + Str(slice_sizes) + ": dimension " + std::to_string(i) +
                            " is collapsed or batching, so its slice size must be 0 or 1");
    }
  }
  if (offset_dims.size() + collapsed.size() + operand_batching.size() != slice_sizes.size()) {
    Fail(instruction, "offset_dims=" + Str(offset_dims) + ", collapsed_slice_dims=" + Str(collapsed) +
                          " and operand_batching_dims=" + Str(operand_batching) + " must account for the " +
                          std::to_string(operand.rank()) + " dimensions of " + Str(operand));
  }

  const std::vector<int64_t> batch = BatchDims(expanded, index_vector_dim);
  const auto rank = static_cast<int64_t>(offset_dims.size() + batch.size());
  CheckSortedDimensions(instruction, offset_dims, rank, "offset_dims");
  std::vector<int64_t> offsets;  // the slice sizes the result keeps, in operand order
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (!Contains(collapsed, d) && !Contains(operand_batching, d)) offsets.push_back(slice_sizes[d]);
  }
  std::vector<int64_t> dims;
  std::size_t next_offset = 0;
  std::size_t next_batch = 0;
  for (int64_t i = 0; i < rank; ++i) {
    dims.push_back(Contains(offset_dims, i) ? offsets[next_offset++] : batch[next_batch++]);
  }
  return Array(operand.element_type, dims);
}

Shape InferScatter(const Instruction& instruction) {
  // scatter(operand_0..n-1, indices, update_0..n-1): the result is the operands.
  const std::size_t n = (instruction.operand_count() - 1) / 2;
  const Shape& operand = ArrayOperand(instruction, 0);
  const Shape& indices = ArrayOperand(instruction, n, "the scatter indices");
  const Shape& update = ArrayOperand(instruction, n + 1);
  std::vector<isa::ElementType> operand_types;
  std::vector<isa::ElementType> update_types;
  std::vector<Shape> results;
  for (std::size_t i = 0; i < n; ++i) {
    const Shape& o = ArrayOperand(instruction, i);
    const Shape& u = ArrayOperand(instruction, n + 1 + i);
    if (o.dims != operand.dims || u.dims != update.dims) {
      Fail(instruction, "the operands (" + Str(o) + ") and updates (" + Str(u) +
                            ") of a variadic scatter must each have one shape");
    }
    if (u.element_type != o.element_type) {
      Fail(instruction, "update " + std::to_string(i) + " " + Str(u) + " of scatter is not of operand " +
                            std::to_string(i) + "'s type (" + Str(o) + ")");
    }
    operand_types.push_back(o.element_type);
    update_types.push_back(u.element_type);
    results.push_back(Array(o.element_type, o.dims));
  }

  const std::vector<int64_t> kNone;
  const std::vector<int64_t>& window_dims = instruction.GetIntList("update_window_dims");
  const std::vector<int64_t>& inserted = instruction.GetIntList("inserted_window_dims");
  const std::vector<int64_t>& to_operand = instruction.GetIntList("scatter_dims_to_operand_dims");
  const std::vector<int64_t>& operand_batching = IntListOr(instruction, "input_batching_dims", kNone);
  const std::vector<int64_t>& indices_batching = IntListOr(instruction, "scatter_indices_batching_dims", kNone);
  const int64_t index_vector_dim = instruction.GetInt("index_vector_dim");

  const std::vector<int64_t> expanded = ExpandedIndexDims(instruction, indices, index_vector_dim);
  CheckIndexMap(instruction, "scatter_dims_to_operand_dims", to_operand, expanded[index_vector_dim], operand.rank(),
                "input_batching_dims", operand_batching, "scatter_indices_batching_dims", indices_batching,
                static_cast<int64_t>(expanded.size()), index_vector_dim);
  CheckSortedDimensions(instruction, inserted, operand.rank(), "inserted_window_dims");
  for (int64_t d : operand_batching) {
    if (Contains(inserted, d)) {
      Fail(instruction, "dimension " + std::to_string(d) + " is both inserted and a batching dimension");
    }
  }
  if (window_dims.size() + inserted.size() + operand_batching.size() != static_cast<std::size_t>(operand.rank())) {
    Fail(instruction, "update_window_dims=" + Str(window_dims) + ", inserted_window_dims=" + Str(inserted) +
                          " and input_batching_dims=" + Str(operand_batching) + " must account for the " +
                          std::to_string(operand.rank()) + " dimensions of " + Str(operand));
  }
  const std::vector<int64_t> batch = BatchDims(expanded, index_vector_dim);
  const auto update_rank = static_cast<int64_t>(window_dims.size() + batch.size());
  if (update.rank() != update_rank) {
    Fail(instruction, "the updates " + Str(update) + " of scatter must have rank " + std::to_string(update_rank) +
                          " (update_window_dims=" + Str(window_dims) + " plus the scatter dims of the indices " +
                          Str(indices) + ")");
  }
  CheckSortedDimensions(instruction, window_dims, update_rank, "update_window_dims");
  // The window dims of the update run along the operand dims that are neither inserted nor
  // batching, and may not be larger; the other update dims are the indices' batch dims.
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (!Contains(inserted, d) && !Contains(operand_batching, d)) window_operand_dims.push_back(d);
  }
  std::size_t next_window = 0;
  std::size_t next_batch = 0;
  for (int64_t d = 0; d < update_rank; ++d) {
    if (Contains(window_dims, d)) {
      const int64_t operand_dim = window_operand_dims[next_window++];
      if (operand.dims[operand_dim] != isa::kUnboundedSize && update.dims[d] > operand.dims[operand_dim]) {
        Fail(instruction, "update window dimension " + std::to_string(d) + " of " + Str(update) +
                              " is larger than operand dimension " + std::to_string(operand_dim) + " of " + Str(operand));
      }
    } else if (update.dims[d] != batch[next_batch++]) {
      Fail(instruction, "scatter dimension " + std::to_string(d) + " of the updates " + Str(update) +
                            " does not match the indices " + Str(indices));
    }
  }
  CheckReducer(instruction, "to_apply", Called(instruction, "to_apply"), operand_types, update_types);
  return n == 1 ? results[0] : Shape::Tuple(results);
}

}  // namespace tpusim::hlo::inference
