#include "compiler/lower/unit_reduce_kernel.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/elementwise_kernel.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/layout_index.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

// The reducer's computation cloned with array shapes of the result's dims: instructions that
// live only while the kernel is emitted (the element-wise emitter reads them, nothing keeps them).
class ReducerClone {
 public:
  ReducerClone(const hlo::Instruction& reduce, const std::vector<int64_t>& dims) : reduce_(reduce), dims_(dims) {}

  void Bind(const hlo::Instruction* parameter, const hlo::Instruction* value) { mapped_[parameter] = value; }

  const hlo::Instruction* Clone(const hlo::Instruction* x) {
    if (const auto it = mapped_.find(x); it != mapped_.end()) return it->second;
    if (x->shape().is_tuple) CannotLower(reduce_, "its reducer returns a tuple (variadic reduce)");
    std::unique_ptr<hlo::Instruction> copy;
    if (x->opcode() == Opcode::kConstant) {
      // Scalar constants stay scalars: the element-wise kernels broadcast them.
      copy = std::make_unique<hlo::Instruction>(x->name(), Opcode::kConstant, x->shape());
      std::optional<hlo::Literal> literal;
      if (x->literal() != nullptr) literal = *x->literal();
      copy->set_constant(x->constant_form(), std::move(literal), x->literal_text());
    } else if (x->opcode() == Opcode::kParameter) {
      CannotLower(reduce_, "its reducer reads parameter '" + x->name() + "' that is not one of its two");
    } else {
      copy = std::make_unique<hlo::Instruction>(
          x->name(), x->opcode(), WithDefaultLayouts(isa::Shape::Array(x->shape().element_type, dims_)));
      for (const hlo::Attribute& attribute : x->attributes()) copy->AddAttribute(attribute);
      for (const hlo::Instruction* operand : x->operands()) {
        copy->AddOperand(const_cast<hlo::Instruction*>(Clone(operand)));
      }
    }
    copy->DescribeAs(reduce_);
    const hlo::Instruction* result = copy.get();
    members_.push_back(result);
    owned_.push_back(std::move(copy));
    mapped_[x] = result;
    return result;
  }

  const std::vector<const hlo::Instruction*>& members() const { return members_; }

 private:
  const hlo::Instruction& reduce_;
  std::vector<int64_t> dims_;
  std::unordered_map<const hlo::Instruction*, const hlo::Instruction*> mapped_;
  std::vector<std::unique_ptr<hlo::Instruction>> owned_;
  std::vector<const hlo::Instruction*> members_;
};

}  // namespace

bool IsUnitReduce(const hlo::Instruction& instruction) {
  if (instruction.opcode() != Opcode::kReduce || instruction.operand_count() != 2 || instruction.shape().is_tuple) {
    return false;
  }
  const isa::Shape& operand = instruction.operand(0)->shape();
  if (operand.is_tuple) return false;
  for (int64_t d : instruction.GetIntList("dimensions")) {
    if (d < 0 || d >= operand.rank() || operand.dims[d] != 1) return false;
  }
  return true;
}

void EmitUnitReduceKernel(KernelContext& context) {
  const hlo::Instruction& reduce = context.instruction;
  const hlo::Instruction& operand = *reduce.operand(0);
  const hlo::Instruction& init = *reduce.operand(1);
  if (context.results.size() != 1 || context.results[0] == nullptr) CannotLower(reduce, "expected one array result");
  const DeviceBuffer& input = *context.operands.at(0).at(0);
  const isa::Shape& result = context.results[0]->shape;
  if (result.element_type != input.shape.element_type) {
    CannotLower(reduce, "its operand and result types differ");
  }

  // The operand's elements in the result's dims and layout, in HBM scratch.
  DeviceBuffer copy;
  copy.name = reduce.name() + ".operand";
  copy.shape = WithoutMemorySpace(result);
  copy.address = context.hbm_scratch_address;
  copy.size_bytes = isa::LayoutMap(copy.shape).byte_size();
  if (copy.size_bytes > context.hbm_scratch_bytes) {
    CannotLower(reduce, "its operand's copy needs " + std::to_string(copy.size_bytes) + " bytes of HBM, " +
                            std::to_string(context.hbm_scratch_bytes) + " are free");
  }
  const std::vector<int64_t> reduced = reduce.GetIntList("dimensions");
  std::vector<int64_t> kept;  // result dim k is operand dim kept[k]
  for (int64_t d = 0; d < operand.shape().rank(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
  }
  {
    DmaEmitter emitter(context);
    const DmaArray destination = HbmArray(copy);
    emitter.ZeroLayoutPadding(destination);
    DmaArray view = destination;
    view.shape = ExpandedView(destination.shape, operand.shape().rank(), kept);
    const std::vector<int64_t> origin(operand.shape().rank(), 0);
    emitter.SplitDma(HbmArray(input), origin, view, origin, operand.shape().dims);
    emitter.WaitDmas();
  }

  // reducer(init, copy) as an element-wise kernel.
  const hlo::Computation& reducer = *reduce.GetComputation("to_apply");
  if (reducer.parameters().size() != 2) CannotLower(reduce, "its reducer does not take two parameters");
  hlo::Instruction leaf(reduce.name() + ".operand", Opcode::kParameter, copy.shape);
  leaf.DescribeAs(reduce);
  ReducerClone clone(reduce, result.dims);
  clone.Bind(reducer.parameters()[0], &init);
  clone.Bind(reducer.parameters()[1], &leaf);
  const hlo::Instruction* root = clone.Clone(reducer.root());
  KernelGroup group;
  group.root = root;
  group.members = clone.members();
  group.operands = {&init, &leaf};
  if (root == &init || root == &leaf) CannotLower(reduce, "its reducer returns a parameter (not lowered)");
  const uint64_t used = AlignUp(copy.size_bytes, kBufferAlignmentBytes);
  KernelContext inner{context.out, context.options, *root, group, {context.operands.at(1), {&copy}}, context.results,
                      context.hbm_scratch_address + used, context.hbm_scratch_bytes - std::min(used, context.hbm_scratch_bytes), {}};
  EmitElementwiseKernel(inner);
}

}  // namespace tpusim::compiler
