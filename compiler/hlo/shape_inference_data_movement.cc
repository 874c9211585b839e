// Operations that move elements without computing: broadcast, reshape, transpose, slices,
// concatenate, pad, reverse, iota. The element type is the operand's; the rules are XLA's
// ShapeInference (InferBroadcastShape, InferSliceShape, InferPadShape...).
#include <algorithm>
#include <cstdint>
#include <string>

#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo::inference {

using isa::ElementType;
using isa::Shape;

namespace {

const Shape& WrittenArray(const Instruction& instruction) {
  const Shape& written = instruction.shape();
  if (written.is_tuple) {
    Fail(instruction, std::string(OpcodeName(instruction.opcode())) + " produces an array, written " + Str(written));
  }
  return written;
}

bool HasUnbounded(const Shape& shape) {
  for (int64_t d : shape.dims) {
    if (d == isa::kUnboundedSize) return true;
  }
  return false;
}

// Number of elements, saturating instead of overflowing (only compared for equality).
int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > INT64_MAX / d) return INT64_MAX;
    count *= d;
  }
  return count;
}

// Index operands of dynamic-slice / dynamic-update-slice from `first`: one integer scalar per
// dimension of `rank`, all of one type, or (the older form) a single rank-1 vector of `rank`.
void CheckStartIndices(const Instruction& instruction, std::size_t first, int64_t rank) {
  const std::size_t count = instruction.operand_count() - first;
  const std::string name(OpcodeName(instruction.opcode()));
  const Shape& index = ArrayOperand(instruction, first, "the start index");
  if (count == 1 && index.rank() == 1) {
    if (!isa::IsInteger(index.element_type) || index.dims[0] != rank) {
      Fail(instruction, "the start index vector " + Str(index) + " of " + name + " must hold " + std::to_string(rank) +
                            " integers");
    }
    return;
  }
  if (static_cast<int64_t>(count) != rank) {
    Fail(instruction, name + " of a rank-" + std::to_string(rank) + " array takes " + std::to_string(rank) +
                          " start indices, got " + std::to_string(count));
  }
  for (std::size_t i = first; i < instruction.operand_count(); ++i) {
    const Shape& shape = ScalarOperand(instruction, i, "start index " + std::to_string(i - first), true);
    if (shape.element_type != index.element_type) {
      Fail(instruction, "the start indices of " + name + " must all have one type, got " + Str(index) + " and " +
                            Str(shape));
    }
  }
}

}  // namespace

Shape InferBroadcast(const Instruction& instruction) {
  // dimensions[i] is the output dimension operand dimension i becomes; the sizes must be equal
  // (XLA's verifier; the builder's size-1 expansion is a reshape first). The other output
  // dimensions are new, and only the text says how big.
  const Shape& operand = ArrayOperand(instruction, 0);
  const Shape& written = WrittenArray(instruction);
  const std::vector<int64_t>& dimensions = instruction.GetIntList("dimensions");
  if (static_cast<int64_t>(dimensions.size()) != operand.rank()) {
    Fail(instruction, "broadcast of the rank-" + std::to_string(operand.rank()) + " " + Str(operand) + " needs " +
                          std::to_string(operand.rank()) + " dimensions, got dimensions=" + Str(dimensions));
  }
  CheckDimensions(instruction, dimensions, written.rank(), "dimensions");
  std::vector<int64_t> dims = written.dims;
  for (std::size_t i = 0; i < dimensions.size(); ++i) dims[dimensions[i]] = operand.dims[i];
  return Array(operand.element_type, dims);
}

Shape InferReshape(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0);
  const Shape& written = WrittenArray(instruction);
  if (!HasUnbounded(operand) && !HasUnbounded(written) && Elements(operand.dims) != Elements(written.dims)) {
    Fail(instruction, "reshape of " + Str(operand) + " (" + std::to_string(Elements(operand.dims)) +
                          " elements) to " + Str(written) + " (" + std::to_string(Elements(written.dims)) +
                          " elements) changes the element count");
  }
  return Array(operand.element_type, written.dims);
}

Shape InferDynamicReshape(const Instruction& instruction) {
  // dynamic-reshape(operand, size0, size1, ...): the sizes are runtime values; the text gives bounds.
  const Shape& operand = ArrayOperand(instruction, 0);
  const Shape& written = WrittenArray(instruction);
  if (static_cast<int64_t>(instruction.operand_count()) != written.rank() + 1) {
    Fail(instruction, "dynamic-reshape to rank " + std::to_string(written.rank()) + " takes " +
                          std::to_string(written.rank()) + " sizes, got " +
                          std::to_string(instruction.operand_count() - 1));
  }
  for (std::size_t i = 1; i < instruction.operand_count(); ++i) {
    ScalarOperand(instruction, i, "size " + std::to_string(i - 1), true);
  }
  return Array(operand.element_type, written.dims);
}

Shape InferTranspose(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0);
  const std::vector<int64_t>& permutation = instruction.GetIntList("dimensions");
  if (static_cast<int64_t>(permutation.size()) != operand.rank()) {
    Fail(instruction, "transpose dimensions=" + Str(permutation) + " is not a permutation of the " +
                          std::to_string(operand.rank()) + " dimensions of " + Str(operand));
  }
  CheckDimensions(instruction, permutation, operand.rank(), "dimensions");
  std::vector<int64_t> dims;
  for (int64_t d : permutation) dims.push_back(operand.dims[d]);
  return Array(operand.element_type, dims);
}

Shape InferSlice(const Instruction& instruction) {
  // Each dimension keeps start, start+stride, ... below limit: ceil((limit - start) / stride).
  const Shape& operand = ArrayOperand(instruction, 0);
  const std::vector<SliceDimension>& slice = instruction.GetSlice();
  if (static_cast<int64_t>(slice.size()) != operand.rank()) {
    Fail(instruction, "slice gives " + std::to_string(slice.size()) + " ranges for the rank-" +
                          std::to_string(operand.rank()) + " " + Str(operand));
  }
  std::vector<int64_t> dims;
  for (std::size_t i = 0; i < slice.size(); ++i) {
    const SliceDimension& s = slice[i];
    const int64_t size = operand.dims[i];
    const std::string range = "[" + std::to_string(s.start) + ":" + std::to_string(s.limit) + ":" +
                              std::to_string(s.stride) + "]";
    if (s.stride <= 0) Fail(instruction, "slice range " + range + " of dimension " + std::to_string(i) +
                                             " has a stride below 1");
    if (s.start < 0 || s.start > s.limit || (size != isa::kUnboundedSize && s.limit > size)) {
      Fail(instruction, "slice range " + range + " of dimension " + std::to_string(i) + " is not within [0:" +
                            std::to_string(size) + "] of " + Str(operand));
    }
    dims.push_back((s.limit - s.start + s.stride - 1) / s.stride);
  }
  return Array(operand.element_type, dims);
}

Shape InferDynamicSlice(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0);
  CheckStartIndices(instruction, 1, operand.rank());
  const std::vector<int64_t>& sizes = instruction.GetIntList("dynamic_slice_sizes");
  if (static_cast<int64_t>(sizes.size()) != operand.rank()) {
    Fail(instruction, "dynamic_slice_sizes=" + Str(sizes) + " does not give one size per dimension of " +
                          Str(operand));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || (operand.dims[i] != isa::kUnboundedSize && sizes[i] > operand.dims[i])) {
      Fail(instruction, "dynamic_slice_sizes=" + Str(sizes) + ": size " + std::to_string(sizes[i]) +
                            " of dimension " + std::to_string(i) + " is not within 0.." +
                            std::to_string(operand.dims[i]) + " of " + Str(operand));
    }
  }
  return Array(operand.element_type, sizes);
}

Shape InferDynamicUpdateSlice(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0, "the operand");
  const Shape& update = ArrayOperand(instruction, 1, "the update");
  CheckStartIndices(instruction, 2, operand.rank());
  if (update.element_type != operand.element_type) {
    Fail(instruction, "the update " + Str(update) + " of dynamic-update-slice is not of the operand's type (" +
                          Str(operand) + ")");
  }
  bool fits = update.rank() == operand.rank();
  for (int64_t i = 0; fits && i < update.rank(); ++i) {
    fits = operand.dims[i] == isa::kUnboundedSize || (update.dims[i] >= 0 && update.dims[i] <= operand.dims[i]);
  }
  if (!fits) Fail(instruction, "the update " + Str(update) + " of dynamic-update-slice does not fit in " + Str(operand));
  return Array(operand.element_type, operand.dims);
}

Shape InferConcatenate(const Instruction& instruction) {
  const std::vector<int64_t>& dimensions = instruction.GetIntList("dimensions");
  const Shape& first = ArrayOperand(instruction, 0);
  if (dimensions.size() != 1) {
    Fail(instruction, "concatenate takes one dimension, got dimensions=" + Str(dimensions));
  }
  const int64_t axis = dimensions[0];
  CheckDimension(instruction, axis, first.rank(), "dimensions");
  std::vector<int64_t> dims = first.dims;
  dims[axis] = 0;
  for (std::size_t i = 0; i < instruction.operand_count(); ++i) {
    const Shape& shape = ArrayOperand(instruction, i);
    bool same = shape.element_type == first.element_type && shape.rank() == first.rank();
    for (int64_t d = 0; same && d < first.rank(); ++d) same = d == axis || shape.dims[d] == first.dims[d];
    if (!same) {
      Fail(instruction, "operand " + std::to_string(i) + " " + Str(shape) + " of concatenate does not match operand 0 " +
                            Str(first) + " except in dimension " + std::to_string(axis));
    }
    if (dims[axis] != isa::kUnboundedSize) {
      dims[axis] = shape.dims[axis] == isa::kUnboundedSize ? isa::kUnboundedSize : dims[axis] + shape.dims[axis];
    }
  }
  return Array(first.element_type, dims);
}

Shape InferPad(const Instruction& instruction) {
  // Per dimension: low + size + (size - 1) * interior + high; low and high may be negative (they
  // cut), interior may not.
  const Shape& operand = ArrayOperand(instruction, 0, "the operand");
  const Shape& value = ScalarOperand(instruction, 1, "the padding value");
  if (value.element_type != operand.element_type) {
    Fail(instruction, "the padding value " + Str(value) + " of pad is not of the operand's type (" + Str(operand) + ")");
  }
  const PaddingConfig& padding = instruction.GetPaddingConfig();
  if (static_cast<int64_t>(padding.dimensions.size()) != operand.rank()) {
    Fail(instruction, "padding=" + ToString(padding) + " does not give one padding per dimension of " + Str(operand));
  }
  std::vector<int64_t> dims;
  for (std::size_t i = 0; i < padding.dimensions.size(); ++i) {
    const PaddingDimension& p = padding.dimensions[i];
    const int64_t size = operand.dims[i];
    if (p.interior < 0) {
      Fail(instruction, "padding=" + ToString(padding) + ": dimension " + std::to_string(i) +
                            " has negative interior padding " + std::to_string(p.interior));
    }
    if (size == isa::kUnboundedSize) {
      dims.push_back(isa::kUnboundedSize);
      continue;
    }
    const int64_t padded = p.low + size + std::max<int64_t>(size - 1, 0) * p.interior + p.high;
    if (padded < 0) {
      Fail(instruction, "padding=" + ToString(padding) + " makes dimension " + std::to_string(i) + " of " +
                            Str(operand) + " negative (" + std::to_string(padded) + ")");
    }
    dims.push_back(padded);
  }
  return Array(operand.element_type, dims);
}

Shape InferReverse(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0);
  CheckDimensions(instruction, instruction.GetIntList("dimensions"), operand.rank(), "dimensions");
  return Array(operand.element_type, operand.dims);
}

Shape InferIota(const Instruction& instruction) {
  // Nothing to infer from: the text gives the shape; the dimension must be one of it.
  const Shape& written = WrittenArray(instruction);
  if (written.rank() == 0) Fail(instruction, "iota needs an array of rank 1 or more, written " + Str(written));
  if (!IsNumeric(written.element_type)) {
    Fail(instruction, "iota needs a numeric element type, written " + Str(written));
  }
  CheckDimension(instruction, instruction.GetInt("iota_dimension"), written.rank(), "iota_dimension");
  return Written(instruction);
}

}  // namespace tpusim::hlo::inference
