// Reductions and their relatives: reduce, reduce-window, select-and-scatter, sort, topk, batch
// norm. The variadic forms pair N inputs with N init values and give a tuple of N results; the
// called computation's signature is checked as XLA's VerifyReducerShape does.
#include <algorithm>
#include <string>

#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo::inference {

using isa::ElementType;
using isa::Shape;

namespace {

// The inputs (operands 0..n-1) and init values (n..2n-1) of a variadic reduction: inputs of one
// dims, scalar init values. Returns the init types and the input types.
struct Reduction {
  const Shape* input = nullptr;  // the first input
  std::vector<ElementType> init_types;
  std::vector<ElementType> input_types;
};

Reduction ReductionOperands(const Instruction& instruction) {
  const std::size_t n = instruction.operand_count() / 2;
  Reduction reduction;
  reduction.input = &ArrayOperand(instruction, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Shape& input = ArrayOperand(instruction, i);
    if (!SameShapeIgnoringLayout(Array(input.element_type, input.dims),
                                 Array(input.element_type, reduction.input->dims))) {
      Fail(instruction, "the inputs " + Str(*reduction.input) + " and " + Str(input) + " of " +
                            std::string(OpcodeName(instruction.opcode())) + " have different dims");
    }
    const Shape& init = ScalarOperand(instruction, n + i, "init value " + std::to_string(i));
    reduction.input_types.push_back(input.element_type);
    reduction.init_types.push_back(init.element_type);
  }
  return reduction;
}

// One array per init type, of `dims`; a tuple of them when there are several.
Shape Results(const std::vector<ElementType>& types, const std::vector<int64_t>& dims) {
  if (types.size() == 1) return Array(types[0], dims);
  std::vector<Shape> elements;
  for (ElementType type : types) elements.push_back(Array(type, dims));
  return Shape::Tuple(elements);
}

// The output dims of a window over `base` (reduce-window, select-and-scatter).
std::vector<int64_t> WindowedDims(const Instruction& instruction, const Shape& base) {
  const Window& window = instruction.GetWindow();
  if (static_cast<int64_t>(window.dimensions.size()) != base.rank()) {
    Fail(instruction, "window has " + std::to_string(window.dimensions.size()) + " dimensions for the rank-" +
                          std::to_string(base.rank()) + " " + Str(base));
  }
  std::vector<int64_t> dims;
  for (std::size_t i = 0; i < window.dimensions.size(); ++i) {
    dims.push_back(WindowOutputSize(instruction, base.dims[i], window.dimensions[i], i));
  }
  return dims;
}

// Checks a computation taking two scalars of `type` and returning pred[] (sort's comparator,
// select-and-scatter's select).
void CheckPredicate(const Instruction& instruction, std::string_view role, const Computation& computation,
                    const std::vector<Shape>& parameters) {
  CheckParameters(instruction, role, computation, parameters);
  CheckResult(instruction, role, computation, Scalar(ElementType::kPred));
}

}  // namespace

Shape InferReduce(const Instruction& instruction) {
  const Reduction reduction = ReductionOperands(instruction);
  const std::vector<int64_t>& dimensions = instruction.GetIntList("dimensions");
  CheckDimensions(instruction, dimensions, reduction.input->rank(), "dimensions");
  CheckReducer(instruction, "to_apply", Called(instruction, "to_apply"), reduction.init_types,
               reduction.input_types);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < reduction.input->rank(); ++d) {
    if (std::find(dimensions.begin(), dimensions.end(), d) == dimensions.end()) {
      dims.push_back(reduction.input->dims[d]);
    }
  }
  return Results(reduction.init_types, dims);
}

Shape InferReduceWindow(const Instruction& instruction) {
  const Reduction reduction = ReductionOperands(instruction);
  const std::vector<int64_t> dims = WindowedDims(instruction, *reduction.input);
  CheckReducer(instruction, "to_apply", Called(instruction, "to_apply"), reduction.init_types,
               reduction.input_types);
  return Results(reduction.init_types, dims);
}

Shape InferSelectAndScatter(const Instruction& instruction) {
  // select-and-scatter(operand, source, init): the window over the operand picks one element per
  // window (select), and each source element is scattered onto it (scatter). The source has one
  // element per window position; the result is the operand's shape.
  const Shape& operand = ArrayOperand(instruction, 0, "the operand");
  const Shape& source = ArrayOperand(instruction, 1, "the source");
  const Shape& init = ScalarOperand(instruction, 2, "the init value");
  const std::vector<int64_t> windows = WindowedDims(instruction, operand);
  if (!SameShapeIgnoringLayout(Array(source.element_type, windows), Array(source.element_type, source.dims))) {
    Fail(instruction, "the source " + Str(source) + " of select-and-scatter must have one element per window " +
                          "position of the operand " + Str(operand) + ", " + Str(Array(source.element_type, windows)));
  }
  const Shape element = Scalar(operand.element_type);
  CheckPredicate(instruction, "select", Called(instruction, "select"), {element, element});
  CheckReducer(instruction, "scatter", Called(instruction, "scatter"), {init.element_type}, {source.element_type});
  return Array(operand.element_type, operand.dims);
}

Shape InferSort(const Instruction& instruction) {
  // sort(k0, v1, ...): all of one dims, sorted along one dimension; the comparator sees two
  // scalars of each operand's type (lhs and rhs of operand 0, then of operand 1, ...).
  const Shape& keys = ArrayOperand(instruction, 0, "the keys");
  std::vector<Shape> results;
  std::vector<Shape> parameters;
  for (std::size_t i = 0; i < instruction.operand_count(); ++i) {
    const Shape& operand = ArrayOperand(instruction, i);
    if (!SameShapeIgnoringLayout(Array(keys.element_type, keys.dims), Array(keys.element_type, operand.dims))) {
      Fail(instruction, "operand " + std::to_string(i) + " " + Str(operand) + " of sort does not have the keys' dims " +
                            Str(keys));
    }
    results.push_back(Array(operand.element_type, operand.dims));
    parameters.push_back(Scalar(operand.element_type));
    parameters.push_back(Scalar(operand.element_type));
  }
  const std::vector<int64_t>& dimensions = instruction.GetIntList("dimensions");
  if (dimensions.size() != 1) Fail(instruction, "sort takes one dimension, got dimensions=" + Str(dimensions));
  CheckDimension(instruction, dimensions[0], keys.rank(), "dimensions");
  CheckPredicate(instruction, "to_apply", Called(instruction, "to_apply"), parameters);
  return results.size() == 1 ? results[0] : Shape::Tuple(results);
}

Shape InferTopK(const Instruction& instruction) {
  // The k largest (or smallest) along the last dimension, and their s32 indices.
  const Shape& operand = ArrayOperand(instruction, 0);
  const int64_t k = instruction.GetInt("k");
  if (operand.rank() == 0) Fail(instruction, "topk needs an operand of rank 1 or more, got " + Str(operand));
  if (k < 0 || (operand.dims.back() != isa::kUnboundedSize && k > operand.dims.back())) {
    Fail(instruction, "topk k=" + std::to_string(k) + " is not within 0.." + std::to_string(operand.dims.back()) +
                          ", the last dimension of " + Str(operand));
  }
  std::vector<int64_t> dims = operand.dims;
  dims.back() = k;
  return Shape::Tuple({Array(operand.element_type, dims), Array(ElementType::kS32, dims)});
}

Shape InferBatchNorm(const Instruction& instruction) {
  // Operand layout per opcode: training (operand, scale, offset), inference (operand, scale,
  // offset, mean, variance), grad (operand, scale, mean, variance, grad_output). Every per-feature
  // operand is a vector of the feature dimension's size; all share the operand's float type.
  const Shape& operand = ArrayOperand(instruction, 0, "the operand");
  if (!isa::IsFloat(operand.element_type) || operand.rank() < 1) {
    Fail(instruction, "batch norm needs a floating-point operand of rank 1 or more, got " + Str(operand));
  }
  const int64_t feature_index = instruction.GetInt("feature_index");
  CheckDimension(instruction, feature_index, operand.rank(), "feature_index");
  const Shape features = Array(operand.element_type, {operand.dims[feature_index]});
  const Opcode opcode = instruction.opcode();
  for (std::size_t i = 1; i < instruction.operand_count(); ++i) {
    const bool grad_output = opcode == Opcode::kBatchNormGrad && i == 4;
    const Shape expected = grad_output ? Array(operand.element_type, operand.dims) : features;
    const Shape& actual = ArrayOperand(instruction, i);
    if (!SameShapeIgnoringLayout(expected, actual)) {
      Fail(instruction, "operand " + std::to_string(i) + " of " + std::string(OpcodeName(opcode)) + " must be " +
                            Str(expected) + ", got " + Str(actual));
    }
  }
  const Shape result = Array(operand.element_type, operand.dims);
  if (opcode == Opcode::kBatchNormInference) return result;
  return Shape::Tuple({result, features, features});  // output (or grad_operand) and two per-feature
}

}  // namespace tpusim::hlo::inference
