#include "compiler/passes/batch_norm_expansion.h"

#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/passes/new_instruction.h"
#include "isa/element_type.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;
using isa::ElementType;

// The module's `add` of two `type` scalars (a reduce's to_apply), added the first time it is asked for.
hlo::Computation* AddComputation(hlo::Module& module, ElementType type) {
  const std::string name = "batch_norm.add." + std::string(isa::ElementTypeName(type));
  if (hlo::Computation* existing = module.FindComputation(name)) return existing;
  auto computation = std::make_unique<hlo::Computation>(name);
  const isa::Shape scalar = isa::Shape::Array(type, {});
  std::vector<Instruction*> parameters;
  for (int64_t i = 0; i < 2; ++i) {
    auto parameter = std::make_unique<Instruction>(i == 0 ? "a" : "b", Opcode::kParameter, scalar);
    parameter->set_parameter_number(i);
    parameters.push_back(computation->AddInstruction(std::move(parameter)));
  }
  auto sum = std::make_unique<Instruction>("sum", Opcode::kAdd, scalar);
  sum->AddOperand(parameters[0]);
  sum->AddOperand(parameters[1]);
  computation->set_root(computation->AddInstruction(std::move(sum)));
  computation->set_parameters(std::move(parameters));
  return module.AddComputation(std::move(computation));
}

// Writes one batch-norm op's expansion next to it.
class Expander {
 public:
  Expander(hlo::Module& module, Instruction& op)
      : module_(module), op_(op), x_(*op.operand(0)), feature_(op.GetInt("feature_index")),
        epsilon_(op.GetDouble("epsilon")) {
    const isa::Shape& shape = x_.shape();
    type_ = shape.element_type;
    if (shape.is_tuple || feature_ < 0 || feature_ >= shape.rank()) {
      throw Error(op.Describe() + ": feature_index " + std::to_string(feature_) + " is not a dim of " +
                  isa::ToString(shape));
    }
    dims_ = shape.dims;
    for (int64_t d = 0; d < shape.rank(); ++d) {
      if (d == feature_) continue;
      reduced_.push_back(d);
      count_ *= static_cast<double>(dims_[d]);
    }
  }

  Instruction* Run() {
    switch (op_.opcode()) {
      case Opcode::kBatchNormTraining: return Training();
      case Opcode::kBatchNormInference: return Inference();
      case Opcode::kBatchNormGrad: return Grad();
      default: throw Error(op_.Describe() + ": not a batch-norm op");
    }
  }

 private:
  Instruction* Training() {
    Instruction* scale = op_.operand(1);
    Instruction* offset = op_.operand(2);
    Instruction* mean = Op(Opcode::kDivide, {Sum(&x_), Features(count_)});
    Instruction* mean_of_squares = Op(Opcode::kDivide, {Sum(Op(Opcode::kMultiply, {&x_, &x_})), Features(count_)});
    Instruction* var = Op(Opcode::kSubtract, {mean_of_squares, Op(Opcode::kMultiply, {mean, mean})});
    Instruction* r = Op(Opcode::kRsqrt, {Op(Opcode::kAdd, {var, Features(epsilon_)})});
    Instruction* normalized = Op(Opcode::kMultiply, {Op(Opcode::kSubtract, {&x_, Spread(mean)}), Spread(r)});
    Instruction* y = Op(Opcode::kAdd, {Op(Opcode::kMultiply, {normalized, Spread(scale)}), Spread(offset)});
    return Tuple({y, mean, var});
  }

  Instruction* Inference() {
    Instruction* scale = op_.operand(1);
    Instruction* offset = op_.operand(2);
    Instruction* mean = op_.operand(3);
    Instruction* var = op_.operand(4);
    Instruction* r = Op(Opcode::kRsqrt, {Op(Opcode::kAdd, {var, Features(epsilon_)})});
    Instruction* true_scale = Op(Opcode::kMultiply, {scale, r});
    Instruction* true_shift = Op(Opcode::kSubtract, {offset, Op(Opcode::kMultiply, {mean, true_scale})});
    return Op(Opcode::kAdd, {Op(Opcode::kMultiply, {&x_, Spread(true_scale)}), Spread(true_shift)});
  }

  Instruction* Grad() {
    Instruction* scale = op_.operand(1);
    Instruction* mean = op_.operand(2);
    Instruction* var = op_.operand(3);
    Instruction* dy = op_.operand(4);
    Instruction* var_epsilon = Op(Opcode::kAdd, {var, Features(epsilon_)});
    Instruction* r = Op(Opcode::kRsqrt, {var_epsilon});
    Instruction* centered = Op(Opcode::kSubtract, {&x_, Spread(mean)});
    Instruction* sum_dy = Sum(dy);
    Instruction* sum_dy_centered = Sum(Op(Opcode::kMultiply, {dy, centered}));
    Instruction* grad_scale = Op(Opcode::kMultiply, {sum_dy_centered, r});
    Instruction* coefficient = Op(Opcode::kDivide, {Op(Opcode::kMultiply, {scale, r}), Features(count_)});
    Instruction* ratio = Op(Opcode::kDivide, {sum_dy_centered, var_epsilon});
    Instruction* inner = Op(Opcode::kSubtract,
                            {Op(Opcode::kSubtract, {Op(Opcode::kMultiply, {Full(count_), dy}), Spread(sum_dy)}),
                             Op(Opcode::kMultiply, {centered, Spread(ratio)})});
    Instruction* grad_x = Op(Opcode::kMultiply, {Spread(coefficient), inner});
    return Tuple({grad_x, grad_scale, sum_dy});
  }

  // An element-wise op of operands of one shape, with that shape.
  Instruction* Op(Opcode opcode, std::vector<Instruction*> operands) {
    Instruction* x = Add(opcode, operands.at(0)->shape());
    for (Instruction* operand : operands) x->AddOperand(operand);
    return x;
  }
  // The sum of `x` (the operand's dims) over every dim but the feature dim: a feature vector.
  Instruction* Sum(Instruction* x) {
    Instruction* sum = Add(Opcode::kReduce, Vector());
    sum->AddOperand(x);
    sum->AddOperand(Scalar(0));
    sum->AddAttribute({"dimensions", reduced_, {}});
    sum->AddAttribute({"to_apply", AddComputation(module_, type_), {}});
    return sum;
  }
  // A feature vector seen in the operand's dims.
  Instruction* Spread(Instruction* vector) {
    Instruction* x = Add(Opcode::kBroadcast, isa::Shape::Array(type_, dims_));
    x->AddOperand(vector);
    x->AddAttribute({"dimensions", std::vector<int64_t>{feature_}, {}});
    return x;
  }
  Instruction* Features(double value) { return Filled(value, {dims_[feature_]}); }
  Instruction* Full(double value) { return Filled(value, dims_); }
  Instruction* Filled(double value, std::vector<int64_t> dims) {
    Instruction* x = Add(Opcode::kBroadcast, isa::Shape::Array(type_, std::move(dims)));
    x->AddOperand(Scalar(value));
    x->AddAttribute({"dimensions", std::vector<int64_t>{}, {}});
    return x;
  }
  Instruction* Scalar(double value) {
    Instruction* x = Add(Opcode::kConstant, isa::Shape::Array(type_, {}));
    x->set_constant(hlo::ConstantForm::kLiteral, hlo::Literal::FromDoubles(type_, {}, {value}), std::to_string(value));
    return x;
  }
  Instruction* Tuple(std::vector<Instruction*> elements) {
    std::vector<isa::Shape> shapes;
    for (const Instruction* element : elements) shapes.push_back(element->shape());
    Instruction* x = Add(Opcode::kTuple, isa::Shape::Tuple(std::move(shapes)));
    for (Instruction* element : elements) x->AddOperand(element);
    return x;
  }
  isa::Shape Vector() const { return isa::Shape::Array(type_, {dims_[feature_]}); }
  Instruction* Add(Opcode opcode, isa::Shape shape) {
    return AddInstructionFor(op_, op_.name() + "." + std::to_string(next_++), opcode, std::move(shape));
  }

  hlo::Module& module_;
  Instruction& op_;
  Instruction& x_;
  int64_t feature_;
  double epsilon_;
  ElementType type_ = ElementType::kF32;
  std::vector<int64_t> dims_;
  std::vector<int64_t> reduced_;
  double count_ = 1;  // N: the elements of each feature
  int next_ = 0;
};

bool IsBatchNorm(const Instruction& x) {
  return x.opcode() == Opcode::kBatchNormTraining || x.opcode() == Opcode::kBatchNormInference ||
         x.opcode() == Opcode::kBatchNormGrad;
}

}  // namespace

void ExpandBatchNorms(hlo::Module& module) {
  RewriteEach(module, IsBatchNorm, [&module](Instruction& op) { return Expander(module, op).Run(); });
}

}  // namespace tpusim::compiler
