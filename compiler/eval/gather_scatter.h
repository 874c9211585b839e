// HLO gather and scatter with XLA's full dimension numbers, including operand batching dims.
// The semantics are XLA's "Operation semantics" (current English text; seed 003 predates these
// ops), restated in docs/evaluator.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compiler/eval/computation.h"
#include "compiler/hlo/literal.h"

namespace tpusim::eval {

struct GatherDimensions {
  std::vector<int64_t> offset_dims;           // output dims that index within a slice
  std::vector<int64_t> collapsed_slice_dims;  // operand dims of slice size 1 left out of the output
  std::vector<int64_t> start_index_map;       // operand dim each start-index component addresses
  int64_t index_vector_dim = 0;               // start_indices dim holding the index vectors
  std::vector<int64_t> operand_batching_dims;        // operand dims paired with ...
  std::vector<int64_t> start_indices_batching_dims;  // ... these start_indices dims
};

// gather: for each batch position of start_indices, the slice of `slice_sizes` starting at the
// start index it holds (clamped so the slice fits, as XLA does) and, for batching dims, at the
// batch position itself. Output dims: offset_dims get the sizes of the slice dims that are neither
// collapsed nor batching (in order), the other output dims the batch dims of start_indices.
hlo::Literal Gather(const hlo::Literal& operand, const hlo::Literal& start_indices,
                    const GatherDimensions& dims, std::span<const int64_t> slice_sizes);

struct ScatterDimensions {
  std::vector<int64_t> update_window_dims;    // update dims that index within a window
  std::vector<int64_t> inserted_window_dims;  // operand dims of window size 1 absent from updates
  std::vector<int64_t> scatter_dims_to_operand_dims;  // operand dim of each index component
  int64_t index_vector_dim = 0;
  std::vector<int64_t> input_batching_dims;            // operand dims paired with ...
  std::vector<int64_t> scatter_indices_batching_dims;  // ... these scatter_indices dims
};

// scatter: N operands and N updates (N >= 1; one result, or a tuple of N for N > 1). Visiting the
// updates in row-major order, each update element goes to operand index = (start index from
// scatter_indices, batch positions for batching dims) + (its window index), and the result there
// becomes combiner(result, update) (variadic: (results..., updates...) -> tuple). An update whose
// whole window does not fit in the operand is skipped (XLA's evaluator; XLA calls out-of-bounds
// scatter implementation-defined).
hlo::Literal Scatter(std::span<const hlo::Literal> operands, const hlo::Literal& scatter_indices,
                     std::span<const hlo::Literal> updates, const ScatterDimensions& dims,
                     const Reducer& combiner);

}  // namespace tpusim::eval
