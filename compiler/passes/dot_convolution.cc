#include "compiler/passes/dot_convolution.h"

#include <vector>

#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

bool IsDotConvolution(const Instruction& x) {
  if (x.opcode() != Opcode::kConvolution || x.shape().is_tuple || x.operand_count() != 2) return false;
  if (x.GetInt("feature_group_count", 1) != 1 || x.GetInt("batch_group_count", 1) != 1) return false;
  if (x.HasAttribute("window") && !x.GetWindow().dimensions.empty()) return false;
  const hlo::ConvolutionDimensionNumbers& dn = x.GetConvolutionDimensionNumbers();
  return dn.input_spatial_dimensions.empty() && x.operand(0)->shape().rank() == 2 && x.operand(1)->shape().rank() == 2;
}

Instruction* AsDot(Instruction& conv) {
  const hlo::ConvolutionDimensionNumbers& dn = conv.GetConvolutionDimensionNumbers();
  const isa::Shape& lhs = conv.operand(0)->shape();
  const isa::Shape& rhs = conv.operand(1)->shape();
  isa::Shape product = conv.shape();
  product.layout.reset();
  product.dims = {lhs.dims[dn.input_batch_dimension], rhs.dims[dn.kernel_output_feature_dimension]};
  Instruction* dot = AddInstructionFor(conv, conv.name() + ".dot", Opcode::kDot, product);
  dot->AddOperand(conv.operand(0));
  dot->AddOperand(conv.operand(1));
  dot->AddAttribute({"lhs_contracting_dims", std::vector<int64_t>{dn.input_feature_dimension}, {}});
  dot->AddAttribute({"rhs_contracting_dims", std::vector<int64_t>{dn.kernel_input_feature_dimension}, {}});
  for (const hlo::Attribute& attribute : conv.attributes()) {
    if (attribute.name == "precision_config" || attribute.name == "metadata") dot->AddAttribute(attribute);
  }
  if (dn.output_batch_dimension == 0) {
    dot->set_shape(conv.shape());  // [b, o]: the convolution's own shape and layout
    return dot;
  }
  Instruction* transpose = AddInstructionFor(conv, conv.name() + ".transpose", Opcode::kTranspose, conv.shape());
  transpose->AddOperand(dot);
  transpose->AddAttribute({"dimensions", std::vector<int64_t>{1, 0}, {}});
  return transpose;
}

}  // namespace

void RewriteDotConvolutions(hlo::Module& module) { RewriteEach(module, IsDotConvolution, AsDot); }

}  // namespace tpusim::compiler
