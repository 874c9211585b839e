#include "compiler/passes/strided_convolution.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/passes/new_instruction.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool Rewritable(const Instruction& conv) {
  if (conv.opcode() != Opcode::kConvolution || conv.shape().is_tuple || conv.operand_count() != 2) return false;
  if (conv.GetInt("feature_group_count", 1) != 1 || conv.GetInt("batch_group_count", 1) != 1) return false;
  if (!conv.HasAttribute("window") || conv.GetConvolutionDimensionNumbers().input_spatial_dimensions.size() != 2) return false;
  const hlo::Window& window = conv.GetWindow();
  if (window.dimensions.size() != 2) return false;
  bool strided = false;
  for (const hlo::WindowDimension& d : window.dimensions) {
    if (d.lhs_dilation != 1 || d.rhs_dilation != 1 || d.reversal || d.padding_low < 0 || d.padding_high < 0) return false;
    strided = strided || d.stride > 1;
  }
  return strided;
}

class Rewriter {
 public:
  explicit Rewriter(Instruction& conv) : conv_(conv), type_(conv.shape().element_type) {}

  Instruction* Run() {
    const hlo::ConvolutionDimensionNumbers& dn = conv_.GetConvolutionDimensionNumbers();
    const hlo::Window& window = conv_.GetWindow();
    const std::vector<int64_t> in_perm = {dn.input_batch_dimension, dn.input_spatial_dimensions[0],
                                          dn.input_spatial_dimensions[1], dn.input_feature_dimension};
    const std::vector<int64_t> kernel_perm = {dn.kernel_spatial_dimensions[0], dn.kernel_spatial_dimensions[1],
                                              dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension};
    const std::vector<int64_t> out_perm = {dn.output_batch_dimension, dn.output_spatial_dimensions[0],
                                           dn.output_spatial_dimensions[1], dn.output_feature_dimension};
    Instruction* x = Transpose(conv_.operand(0), in_perm);        // [B, H, W, C]
    Instruction* kernel = Transpose(conv_.operand(1), kernel_perm);  // [KH, KW, C, O]
    const std::vector<int64_t> xd = x->shape().dims;
    const std::vector<int64_t> kd = kernel->shape().dims;
    const isa::Shape& out = conv_.shape();
    const int64_t b = xd[0], c = xd[3], o = kd[3];
    int64_t stride[2], window_size[2], out_size[2], blocks[2], window_blocks[2];
    hlo::PaddingConfig image_padding{{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}};
    hlo::PaddingConfig kernel_padding = image_padding;
    for (int k = 0; k < 2; ++k) {
      const hlo::WindowDimension& d = window.dimensions[k];
      stride[k] = d.stride;
      window_size[k] = kd[k];
      out_size[k] = out.dims[out_perm[k + 1]];
      window_blocks[k] = CeilDiv(window_size[k], stride[k]);
      // Whole strides, and enough of them for every output's window.
      const int64_t padded = xd[k + 1] + d.padding_low + d.padding_high;
      blocks[k] = std::max(CeilDiv(padded, stride[k]), out_size[k] - 1 + window_blocks[k]);
      image_padding.dimensions[k + 1] = {d.padding_low, blocks[k] * stride[k] - xd[k + 1] - d.padding_low, 0};
      kernel_padding.dimensions[k] = {0, window_blocks[k] * stride[k] - window_size[k], 0};
    }
    // Space to depth: [B, H2, sh, W2, sw, C] -> [B, H2, W2, sh, sw, C] -> [B, H2, W2, sh sw C].
    Instruction* image = Pad(x, image_padding);
    image = Reshape(image, {b, blocks[0], stride[0], blocks[1], stride[1], c});
    image = Transpose(image, {0, 1, 3, 2, 4, 5});
    image = Reshape(image, {b, blocks[0], blocks[1], stride[0] * stride[1] * c});
    // The kernel likewise: [KH2, sh, KW2, sw, C, O] -> [KH2, KW2, sh, sw, C, O] -> [KH2, KW2, sh sw C, O].
    Instruction* weights = Pad(kernel, kernel_padding);
    weights = Reshape(weights, {window_blocks[0], stride[0], window_blocks[1], stride[1], c, o});
    weights = Transpose(weights, {0, 2, 1, 3, 4, 5});
    weights = Reshape(weights, {window_blocks[0], window_blocks[1], stride[0] * stride[1] * c, o});
    const int64_t out2[2] = {blocks[0] - window_blocks[0] + 1, blocks[1] - window_blocks[1] + 1};
    Instruction* dense = Add(Opcode::kConvolution, Array({b, out2[0], out2[1], o}));
    dense->AddOperand(image);
    dense->AddOperand(weights);
    hlo::Window dense_window;
    for (int k = 0; k < 2; ++k) dense_window.dimensions.push_back({window_blocks[k], 1, 0, 0, 1, 1, false});
    dense->AddAttribute({"window", dense_window, {}});
    dense->AddAttribute({"dim_labels", hlo::ConvolutionDimensionNumbers{0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}}, {}});
    for (const hlo::Attribute& attribute : conv_.attributes()) {
      if (attribute.name == "precision_config" || attribute.name == "metadata") dense->AddAttribute(attribute);
    }
    Instruction* result = dense;
    if (out2[0] != out_size[0] || out2[1] != out_size[1]) {
      result = Add(Opcode::kSlice, Array({b, out_size[0], out_size[1], o}));
      result->AddOperand(dense);
      result->AddAttribute({"slice", std::vector<hlo::SliceDimension>{{0, b, 1}, {0, out_size[0], 1}, {0, out_size[1], 1}, {0, o, 1}}, {}});
    }
    // Back to the output's dims: result dim out_perm[k] is canonical dim k.
    std::vector<int64_t> inverse(4);
    for (int64_t k = 0; k < 4; ++k) inverse[static_cast<std::size_t>(out_perm[k])] = k;
    return Transpose(result, inverse);
  }

 private:
  Instruction* Transpose(Instruction* x, const std::vector<int64_t>& permutation) {
    bool identity = true;
    for (std::size_t i = 0; i < permutation.size(); ++i) identity = identity && permutation[i] == static_cast<int64_t>(i);
    if (identity) return x;
    std::vector<int64_t> dims;
    for (int64_t p : permutation) dims.push_back(x->shape().dims[static_cast<std::size_t>(p)]);
    Instruction* t = Add(Opcode::kTranspose, Array(dims));
    t->AddOperand(x);
    t->AddAttribute({"dimensions", permutation, {}});
    return t;
  }
  Instruction* Reshape(Instruction* x, std::vector<int64_t> dims) {
    Instruction* r = Add(Opcode::kReshape, Array(std::move(dims)));
    r->AddOperand(x);
    return r;
  }
  Instruction* Pad(Instruction* x, const hlo::PaddingConfig& padding) {
    bool none = true;
    std::vector<int64_t> dims = x->shape().dims;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      dims[i] += padding.dimensions[i].low + padding.dimensions[i].high;
      none = none && padding.dimensions[i].low == 0 && padding.dimensions[i].high == 0;
    }
    if (none) return x;
    Instruction* zero = Add(Opcode::kConstant, isa::Shape::Array(type_, {}));
    zero->set_constant(hlo::ConstantForm::kLiteral, hlo::Literal::FromDoubles(type_, {}, {0.0}), "0");
    Instruction* p = Add(Opcode::kPad, Array(std::move(dims)));
    p->AddOperand(x);
    p->AddOperand(zero);
    p->AddAttribute({"padding", padding, {}});
    return p;
  }
  isa::Shape Array(std::vector<int64_t> dims) const { return isa::Shape::Array(type_, std::move(dims)); }
  Instruction* Add(Opcode opcode, isa::Shape shape) {
    return AddInstructionFor(conv_, conv_.name() + ".s2d" + std::to_string(next_++), opcode, std::move(shape));
  }

  Instruction& conv_;
  isa::ElementType type_;
  int next_ = 0;
};

}  // namespace

void RewriteStridedConvolutions(hlo::Module& module) {
  RewriteEach(module, Rewritable, [](Instruction& conv) { return Rewriter(conv).Run(); });
}

}  // namespace tpusim::compiler
