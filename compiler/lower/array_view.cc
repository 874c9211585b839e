#include "compiler/lower/array_view.h"

#include <numeric>

#include "compiler/lower/dma_region.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

// The indices of `dims`' dims that are not 1, in order.
std::vector<int64_t> NonUnitDimIndices(const std::vector<int64_t>& dims) {
  std::vector<int64_t> result;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] != 1) result.push_back(static_cast<int64_t>(d));
  }
  return result;
}

}  // namespace

bool IsArrayViewStep(const hlo::Instruction& x) {
  if (x.operand_count() != 1 || x.shape().is_tuple) return false;
  const isa::Shape& operand = x.operand(0)->shape();
  if (operand.is_tuple || operand.element_type != x.shape().element_type) return false;
  if (x.opcode() == Opcode::kTranspose) return true;
  if (x.opcode() == Opcode::kSlice) {
    for (const hlo::SliceDimension& d : x.GetSlice()) {
      if (d.stride != 1) return false;
    }
    return true;
  }
  if (x.opcode() != Opcode::kReshape || operand.dims == x.shape().dims) return false;
  return isa::DimsWithoutOnes(operand.dims) == isa::DimsWithoutOnes(x.shape().dims);
}

std::optional<ArrayView> ResolveArrayView(const hlo::Instruction& x,
                                          const std::function<bool(const hlo::Instruction&)>& is_source) {
  if (!IsArrayViewStep(x) || is_source(x)) return std::nullopt;
  ArrayView view;
  view.source_dim.resize(x.shape().rank());
  std::iota(view.source_dim.begin(), view.source_dim.end(), 0);
  view.start.assign(x.shape().rank(), 0);
  const hlo::Instruction* at = &x;
  while (IsArrayViewStep(*at) && !is_source(*at)) {
    const hlo::Instruction* operand = at->operand(0);
    if (at->opcode() == Opcode::kSlice) {
      const auto& slice = at->GetSlice();
      for (std::size_t d = 0; d < slice.size(); ++d) view.start[d] += slice[d].start;
    } else if (at->opcode() == Opcode::kTranspose) {
      // Dim i of `at` is its operand's dim permutation[i].
      const std::vector<int64_t>& permutation = at->GetIntList("dimensions");
      std::vector<int64_t> start(operand->shape().rank(), 0);
      for (std::size_t i = 0; i < permutation.size(); ++i) start[permutation[i]] = view.start[i];
      for (int64_t& d : view.source_dim) d = d >= 0 ? permutation[d] : -1;
      view.start = std::move(start);
    } else {
      // The i-th dim other than size 1 of `at` is the i-th of its operand; size-1 dims are dropped
      // (a result dim on one drops out of the source) or added (at index 0).
      const std::vector<int64_t> from = NonUnitDimIndices(at->shape().dims);
      const std::vector<int64_t> to = NonUnitDimIndices(operand->shape().dims);
      std::vector<int64_t> operand_dim_of(at->shape().rank(), -1);
      for (std::size_t i = 0; i < from.size(); ++i) operand_dim_of[from[i]] = to[i];
      std::vector<int64_t> start(operand->shape().rank(), 0);
      for (std::size_t i = 0; i < from.size(); ++i) start[to[i]] = view.start[from[i]];
      for (int64_t& d : view.source_dim) d = d >= 0 ? operand_dim_of[d] : -1;
      view.start = std::move(start);
    }
    at = operand;
  }
  view.source = at;
  return view;
}

ArrayViewSpace ArrayViewDmaSpace(const ArrayView& view, const isa::Shape& result_tiles, const isa::Shape& source) {
  const int64_t source_rank = source.rank();
  const int64_t rank = result_tiles.rank();
  std::vector<int64_t> walked_by(source_rank, -1);
  for (int64_t k = 0; k < rank; ++k) {
    if (view.source_dim[k] >= 0) walked_by[view.source_dim[k]] = k;
  }
  std::vector<int64_t> one_index;  // source dims no result dim walks
  for (int64_t d = 0; d < source_rank; ++d) {
    if (walked_by[d] < 0) one_index.push_back(d);
  }
  const int64_t added = static_cast<int64_t>(one_index.size());
  ArrayViewSpace space;
  std::vector<int64_t> result_map(rank);
  std::iota(result_map.begin(), result_map.end(), added);
  space.tiles = ExpandedView(result_tiles, added + rank, result_map);
  std::vector<int64_t> source_map(source_rank);
  space.start.assign(added + rank, 0);
  for (int64_t i = 0; i < added; ++i) {
    source_map[one_index[i]] = i;
    space.start[i] = view.start[one_index[i]];
  }
  for (int64_t d = 0; d < source_rank; ++d) {
    if (walked_by[d] >= 0) {
      source_map[d] = added + walked_by[d];
      space.start[added + walked_by[d]] = view.start[d];
    }
  }
  space.source = ExpandedView(source, added + rank, source_map);
  return space;
}

}  // namespace tpusim::compiler
