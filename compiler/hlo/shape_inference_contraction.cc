// dot and convolution: XLA's InferDotOpShape and InferConvolveShape.
//
// Element types: XLA lets both take operands of different types (mixed precision, e.g. f8e5m2 x
// f8e4m3fn, or s8 x bf16) and a result type other than the operands' (preferred_element_type: a
// bf16 x bf16 dot accumulating into f32, an s8 x s8 dot into s32). The inferred type is the
// written one when XLA's MaybeUpcast would accept it as a preferred type, else the operands'
// higher-precision type (which then mismatches the written shape).
#include <algorithm>
#include <string>

#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo::inference {

using isa::ElementType;
using isa::Shape;

namespace {

// The result type: the operands' higher-precision type, or the written type if it is a valid
// preferred_element_type (MaybeUpcast: any type for float operands; for integer operands, not
// narrower than they are).
ElementType ResultType(const Instruction& instruction, const Shape& lhs, const Shape& rhs) {
  if (!IsNumeric(lhs.element_type) || !IsNumeric(rhs.element_type)) {
    Fail(instruction, std::string(OpcodeName(instruction.opcode())) + " cannot multiply " + Str(lhs) + " by " +
                          Str(rhs));
  }
  const ElementType operands = HigherPrecision(lhs.element_type, rhs.element_type);
  const Shape& written = instruction.shape();
  if (written.is_tuple || written.element_type == operands || !IsNumeric(written.element_type)) return operands;
  const bool narrower = isa::ElementBitWidth(written.element_type) < isa::ElementBitWidth(operands);
  if (!isa::IsFloat(operands) && narrower) return operands;
  return written.element_type;
}

}  // namespace

Shape InferDot(const Instruction& instruction) {
  // The result's dims: the batch dims, then lhs's free dims, then rhs's, each in order.
  if (instruction.operand_count() > 2 || instruction.HasAttribute("sparsity")) {
    return Written(instruction);  // a sparse dot: its metadata operands describe the compression
  }
  const Shape& lhs = ArrayOperand(instruction, 0, "lhs");
  const Shape& rhs = ArrayOperand(instruction, 1, "rhs");
  const std::vector<int64_t> kNone;
  const std::vector<int64_t>& lhs_batch = IntListOr(instruction, "lhs_batch_dims", kNone);
  const std::vector<int64_t>& rhs_batch = IntListOr(instruction, "rhs_batch_dims", kNone);
  const std::vector<int64_t>& lhs_contracting = IntListOr(instruction, "lhs_contracting_dims", kNone);
  const std::vector<int64_t>& rhs_contracting = IntListOr(instruction, "rhs_contracting_dims", kNone);
  if (lhs_batch.size() != rhs_batch.size() || lhs_contracting.size() != rhs_contracting.size()) {
    Fail(instruction, "dot needs as many lhs as rhs batch dims (" + Str(lhs_batch) + " vs " + Str(rhs_batch) +
                          ") and contracting dims (" + Str(lhs_contracting) + " vs " + Str(rhs_contracting) + ")");
  }
  std::vector<int64_t> lhs_used = lhs_batch;
  lhs_used.insert(lhs_used.end(), lhs_contracting.begin(), lhs_contracting.end());
  std::vector<int64_t> rhs_used = rhs_batch;
  rhs_used.insert(rhs_used.end(), rhs_contracting.begin(), rhs_contracting.end());
  CheckDimensions(instruction, lhs_used, lhs.rank(), "lhs_batch_dims and lhs_contracting_dims");
  CheckDimensions(instruction, rhs_used, rhs.rank(), "rhs_batch_dims and rhs_contracting_dims");
  for (std::size_t i = 0; i < lhs_used.size(); ++i) {
    const int64_t a = lhs.dims[lhs_used[i]];
    const int64_t b = rhs.dims[rhs_used[i]];
    if (a != b && a != isa::kUnboundedSize && b != isa::kUnboundedSize) {
      const bool batch = i < lhs_batch.size();
      Fail(instruction, std::string(batch ? "batch" : "contracting") + " dimension " + std::to_string(lhs_used[i]) +
                            " of lhs " + Str(lhs) + " has size " + std::to_string(a) + " but dimension " +
                            std::to_string(rhs_used[i]) + " of rhs " + Str(rhs) + " has size " + std::to_string(b));
    }
  }
  std::vector<int64_t> dims;
  for (int64_t d : lhs_batch) dims.push_back(lhs.dims[d]);
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (std::find(lhs_used.begin(), lhs_used.end(), d) == lhs_used.end()) dims.push_back(lhs.dims[d]);
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (std::find(rhs_used.begin(), rhs_used.end(), d) == rhs_used.end()) dims.push_back(rhs.dims[d]);
  }
  return Array(ResultType(instruction, lhs, rhs), dims);
}

Shape InferConvolution(const Instruction& instruction) {
  const Shape& lhs = ArrayOperand(instruction, 0, "the input");
  const Shape& rhs = ArrayOperand(instruction, 1, "the kernel");
  const ConvolutionDimensionNumbers& dnums = instruction.GetConvolutionDimensionNumbers();
  const std::size_t spatial = dnums.input_spatial_dimensions.size();
  const auto rank = static_cast<int64_t>(spatial + 2);
  if (lhs.rank() != rank || rhs.rank() != rank) {
    Fail(instruction, "dim_labels=" + ToString(dnums) + " describe rank-" + std::to_string(rank) +
                          " operands, got the input " + Str(lhs) + " and the kernel " + Str(rhs));
  }
  if (dnums.kernel_spatial_dimensions.size() != spatial || dnums.output_spatial_dimensions.size() != spatial) {
    Fail(instruction, "dim_labels=" + ToString(dnums) + " give the input, kernel and output different numbers of "
                      "spatial dimensions");
  }
  // Every dimension of each operand carries exactly one label.
  std::vector<int64_t> input = dnums.input_spatial_dimensions;
  input.push_back(dnums.input_batch_dimension);
  input.push_back(dnums.input_feature_dimension);
  std::vector<int64_t> kernel = dnums.kernel_spatial_dimensions;
  kernel.push_back(dnums.kernel_input_feature_dimension);
  kernel.push_back(dnums.kernel_output_feature_dimension);
  std::vector<int64_t> output = dnums.output_spatial_dimensions;
  output.push_back(dnums.output_batch_dimension);
  output.push_back(dnums.output_feature_dimension);
  CheckDimensions(instruction, input, rank, "the input labels of dim_labels");
  CheckDimensions(instruction, kernel, rank, "the kernel labels of dim_labels");
  CheckDimensions(instruction, output, rank, "the output labels of dim_labels");

  const int64_t feature_groups = instruction.GetInt("feature_group_count", 1);
  const int64_t batch_groups = instruction.GetInt("batch_group_count", 1);
  if (feature_groups < 1 || batch_groups < 1 || (feature_groups > 1 && batch_groups > 1)) {
    Fail(instruction, "feature_group_count=" + std::to_string(feature_groups) + " and batch_group_count=" +
                          std::to_string(batch_groups) + ": each must be at least 1, and not both above 1");
  }
  const int64_t batch = lhs.dims[dnums.input_batch_dimension];
  const int64_t input_features = lhs.dims[dnums.input_feature_dimension];
  const int64_t kernel_input_features = rhs.dims[dnums.kernel_input_feature_dimension];
  const int64_t kernel_output_features = rhs.dims[dnums.kernel_output_feature_dimension];
  if (input_features % feature_groups != 0 || input_features / feature_groups != kernel_input_features) {
    Fail(instruction, "the input " + Str(lhs) + " has " + std::to_string(input_features) + " features in " +
                          std::to_string(feature_groups) + " group(s), so the kernel " + Str(rhs) +
                          " must take " + std::to_string(input_features / feature_groups) + " input features, not " +
                          std::to_string(kernel_input_features));
  }
  if (kernel_output_features % feature_groups != 0 || kernel_output_features % batch_groups != 0) {
    Fail(instruction, "the kernel's " + std::to_string(kernel_output_features) +
                          " output features do not divide into the feature_group_count " +
                          std::to_string(feature_groups) + " or batch_group_count " + std::to_string(batch_groups));
  }
  if (batch % batch_groups != 0) {
    Fail(instruction, "the input batch " + std::to_string(batch) + " does not divide by batch_group_count " +
                          std::to_string(batch_groups));
  }

  // window= may be left out only when there are no spatial dimensions; its sizes are the kernel's.
  Window window;
  if (instruction.HasAttribute("window")) window = instruction.GetWindow();
  if (window.dimensions.size() != spatial) {
    Fail(instruction, "window has " + std::to_string(window.dimensions.size()) + " dimensions for " +
                          std::to_string(spatial) + " spatial dimensions");
  }
  std::vector<int64_t> dims(rank, 0);
  dims[dnums.output_batch_dimension] = batch / batch_groups;
  dims[dnums.output_feature_dimension] = kernel_output_features;
  for (std::size_t i = 0; i < spatial; ++i) {
    const int64_t kernel_size = rhs.dims[dnums.kernel_spatial_dimensions[i]];
    if (window.dimensions[i].size != kernel_size) {
      Fail(instruction, "window dimension " + std::to_string(i) + " has size " +
                            std::to_string(window.dimensions[i].size) + " but the kernel " + Str(rhs) +
                            " has size " + std::to_string(kernel_size) + " there");
    }
    dims[dnums.output_spatial_dimensions[i]] =
        WindowOutputSize(instruction, lhs.dims[dnums.input_spatial_dimensions[i]], window.dimensions[i], i);
  }
  return Array(ResultType(instruction, lhs, rhs), dims);
}

}  // namespace tpusim::hlo::inference
