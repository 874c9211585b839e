#include "compiler/lower/elementwise_expr.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "compiler/hlo/reducer_pattern.h"
#include "compiler/lower/array_view.h"
#include "compiler/lower/kernel.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

bool IsSupportedType(isa::ElementType type) {
  return type == isa::ElementType::kF32 || type == isa::ElementType::kBF16 || type == isa::ElementType::kF16 ||
         type == isa::ElementType::kS32 ||
         type == isa::ElementType::kU32 || type == isa::ElementType::kS8 || type == isa::ElementType::kU8 ||
         type == isa::ElementType::kPred;
}

class Builder {
 public:
  explicit Builder(const hlo::Instruction& kernel) : kernel_(kernel) {}

  // Leaves: instruction -> kernel operand number.
  void AddLeaf(const hlo::Instruction* leaf, int operand) { leaves_[leaf] = operand; }

  int Visit(const hlo::Instruction* x) {
    if (const auto it = visited_.find(x); it != visited_.end()) return it->second;
    const int node = Build(x);
    visited_[x] = node;
    return node;
  }

  ElementwiseExpr Take() { return std::move(expr_); }
  ElementwiseExpr& expr() { return expr_; }

 private:
  // Node `node`, or an equal one built before (common subexpressions: lane-broadcast sinking
  // gives each broadcast its own copy of a row statistic's chain, and the HLO may compute a
  // value twice, as layer norm's `x - mean`).
  int Add(ExprNode node) {
    const auto key = KeyOf(node);
    if (const auto it = built_.find(key); it != built_.end()) return it->second;
    expr_.nodes.push_back(std::move(node));
    const int n = static_cast<int>(expr_.nodes.size()) - 1;
    built_[key] = n;
    return n;
  }

  // What makes two nodes compute the same value: the operation (with a compare's direction and
  // type), the value's type, the inputs, the operand loaded and how it is broadcast, the bits.
  using NodeKey = std::tuple<int, int, int, std::vector<int>, int, uint32_t, std::string, std::vector<int64_t>, const void*>;
  static NodeKey KeyOf(const ExprNode& node) {
    std::string attributes;
    std::vector<int64_t> broadcast_dims;
    const void* identity = nullptr;  // row folds: the reduce itself
    int opcode = -1;
    if (node.kind == ExprNode::Kind::kOp) {
      opcode = static_cast<int>(node.hlo->opcode());
      if (node.hlo->opcode() == Opcode::kCompare) {
        attributes = node.hlo->GetIdentifier("direction");
        if (node.hlo->HasAttribute("type")) attributes += "/" + node.hlo->GetIdentifier("type");
      }
    }
    if (node.kind == ExprNode::Kind::kRowFold) identity = node.hlo;
    if (node.view != nullptr && node.view->opcode() == Opcode::kBroadcast) {
      broadcast_dims = node.view->GetIntListOrEmpty("dimensions");
    } else if (node.view != nullptr) {
      identity = node.view;  // an array view: its own box
    }
    return {static_cast<int>(node.kind), opcode, static_cast<int>(node.type), node.inputs, node.operand,
            node.bits, attributes, broadcast_dims, identity};
  }

  // An array view of a kernel operand (compiler/lower/array_view.h), read by box DMAs into the
  // result's tiles.
  int LoadArrayView(const hlo::Instruction* x) {
    const auto view = ResolveArrayView(*x, [&](const hlo::Instruction& at) { return leaves_.contains(&at); });
    if (!view || !leaves_.contains(view->source) || x->shape().dims != kernel_dims()) {
      CannotLower(kernel_, std::string(hlo::OpcodeName(x->opcode())) + " '" + x->name() +
                               "' is not an array view of a kernel operand into the result's dims (not lowered "
                               "inside element-wise kernels yet)");
    }
    CheckType(*view->source);
    ExprNode node;
    node.kind = ExprNode::Kind::kLoad;
    node.hlo = x;
    node.type = x->shape().element_type;
    node.operand = leaves_.at(view->source);
    node.view = x;
    node.box = view;
    return Add(node);
  }

  void CheckType(const hlo::Instruction& x) {
    if (x.shape().is_tuple || !IsSupportedType(x.shape().element_type)) {
      CannotLower(kernel_, "'" + x.name() + "' has type " + isa::ToString(x.shape()) +
                               "; element-wise kernels hold f32, bf16, f16, s32, u32, s8, u8 and pred");
    }
  }

  int Build(const hlo::Instruction* x) {
    CheckType(*x);
    const isa::ElementType type = x->shape().element_type;
    if (const auto leaf = leaves_.find(x); leaf != leaves_.end()) {
      ExprNode node;
      node.hlo = x;
      node.type = type;
      node.operand = leaf->second;
      if (x->shape().rank() == 0) {
        node.kind = ExprNode::Kind::kScalar;
      } else if (x->shape().dims == kernel_dims()) {
        node.kind = ExprNode::Kind::kLoad;
      } else {
        CannotLower(kernel_, "operand '" + x->name() + "' " + isa::ToString(x->shape()) +
                                 " is neither a scalar nor of the result's dims (broadcasts of arrays are not lowered yet)");
      }
      return Add(node);
    }
    switch (x->opcode()) {
      case Opcode::kConstant: {
        if (x->shape().rank() != 0 || x->literal() == nullptr) {
          CannotLower(kernel_, "constant '" + x->name() + "' is not a scalar (array constants in element-wise kernels are not lowered yet)");
        }
        ExprNode node;
        node.kind = ExprNode::Kind::kConstant;
        node.hlo = x;
        node.type = type;
        const hlo::Literal& literal = *x->literal();
        switch (DomainOf(type)) {
          case Domain::kFloat:
            node.bits = std::bit_cast<uint32_t>(static_cast<float>(literal.GetDouble(0)));
            break;
          case Domain::kInt:
          case Domain::kPred:
            node.bits = static_cast<uint32_t>(literal.GetInt(0));
            break;
        }
        return Add(node);
      }
      case Opcode::kBroadcast: {
        const hlo::Instruction* operand = x->operand(0);
        if (operand->shape().rank() == 0) return Visit(operand);
        if (const hlo::Instruction* reduce = RowFoldReduce(*x); reduce != nullptr && !leaves_.contains(operand) &&
                                                                 x->shape().dims == kernel_dims()) {
          // Every broadcast of the same reduce is one fold (Add).
          ExprNode node;
          node.kind = ExprNode::Kind::kRowFold;
          node.hlo = reduce;
          node.type = type;
          node.inputs.push_back(Visit(reduce->operand(0)));
          return Add(node);
        }
        if (operand->opcode() == Opcode::kIota && !leaves_.contains(operand) && x->shape().dims == kernel_dims()) {
          // An iota computed in the kernel (elementwise_fusion.h), broadcast: the iota of the
          // broadcast's shape along the dim the iota's goes to.
          ExprNode node;
          node.kind = ExprNode::Kind::kIota;
          node.hlo = x;
          node.type = type;
          const std::vector<int64_t> dims = x->GetIntListOrEmpty("dimensions");
          node.bits = static_cast<uint32_t>(dims.at(static_cast<std::size_t>(operand->GetInt("iota_dimension"))));
          return Add(node);
        }
        const auto leaf = leaves_.find(operand);
        if (leaf == leaves_.end() || x->shape().dims != kernel_dims() || operand->shape().rank() >= x->shape().rank()) {
          CannotLower(kernel_, "broadcast '" + x->name() + "' of a non-scalar that is not a kernel operand, or not into "
                                   "the result's dims (not lowered yet)");
        }
        CheckType(*operand);
        ExprNode node;
        node.kind = ExprNode::Kind::kLoad;
        node.hlo = x;
        node.type = type;
        node.operand = leaf->second;
        node.view = x;
        return Add(node);
      }
      case Opcode::kSlice:
      case Opcode::kTranspose:
        return LoadArrayView(x);
      case Opcode::kIota: {
        if (x->shape().dims != kernel_dims()) {
          CannotLower(kernel_, "iota '" + x->name() + "' is not of the result's dims (not lowered yet)");
        }
        ExprNode node;
        node.kind = ExprNode::Kind::kIota;
        node.hlo = x;
        node.type = type;
        node.bits = static_cast<uint32_t>(x->GetInt("iota_dimension"));
        return Add(node);
      }
      case Opcode::kReducePrecision:
        // JAX writes reduce-precision to bf16's own widths on bf16 values (exponent_bits=8,
        // mantissa_bits=7): every value is kept, so it moves nothing.
        if (!KeepsEveryValue(*x)) {
          CannotLower(kernel_, "reduce-precision '" + x->name() + "' to fewer exponent or mantissa bits than " +
                                   std::string(isa::ElementTypeName(type)) + " has (not lowered yet)");
        }
        return Visit(x->operand(0));
      case Opcode::kReshape:
        if (IsArrayViewStep(*x)) return LoadArrayView(x);
        [[fallthrough]];
      case Opcode::kCopy:
      case Opcode::kBitcast:
        // Inside a tile these move nothing when the dims stay the same.
        if (x->operand(0)->shape().dims != x->shape().dims || x->operand(0)->shape().element_type != type) {
          CannotLower(kernel_, std::string(hlo::OpcodeName(x->opcode())) + " '" + x->name() +
                                   "' changes the dims (not lowered inside element-wise kernels yet)");
        }
        return Visit(x->operand(0));
      default:
        break;
    }
    if (!IsElementwiseOpcode(x->opcode())) {
      CannotLower(kernel_, std::string(hlo::OpcodeName(x->opcode())) + " '" + x->name() +
                               "' is not an element-wise operation the VPU kernels lower");
    }
    if (Is8Bit(type) && (x->opcode() == Opcode::kShiftLeft || x->opcode() == Opcode::kShiftRightArithmetic ||
                         x->opcode() == Opcode::kShiftRightLogical)) {
      // Values are held widened to 32 bits; 8-bit shift semantics would need their own code.
      CannotLower(kernel_, std::string(hlo::OpcodeName(x->opcode())) + " '" + x->name() + "' on " +
                               std::string(isa::ElementTypeName(type)) + " (not lowered yet)");
    }
    if (x->opcode() == Opcode::kBitcastConvert &&
        (isa::ElementBitWidth(type) != 32 || isa::ElementBitWidth(x->operand(0)->shape().element_type) != 32)) {
      // A register holds 32-bit values as their own bits; narrower ones are widened (s8 and u8
      // differently), so only 32-bit reinterpretations are a plain register copy.
      CannotLower(kernel_, "bitcast-convert '" + x->name() + "' between types other than f32, s32 and u32 (not lowered yet)");
    }
    if (x->opcode() == Opcode::kCompare) {
      if (x->HasAttribute("type") && x->GetIdentifier("type") == "TOTALORDER") {
        CannotLower(kernel_, "compare '" + x->name() + "' with type=TOTALORDER (not lowered yet)");
      }
    }
    ExprNode node;
    node.kind = ExprNode::Kind::kOp;
    node.hlo = x;
    node.type = type;
    for (const hlo::Instruction* operand : x->operands()) {
      CheckType(*operand);
      node.inputs.push_back(Visit(operand));
    }
    return Add(node);
  }

  const std::vector<int64_t>& kernel_dims() const {
    const isa::Shape& shape = kernel_.shape().is_tuple ? kernel_.shape().tuple_shapes.at(0) : kernel_.shape();
    return shape.dims;
  }

  const hlo::Instruction& kernel_;
  std::unordered_map<const hlo::Instruction*, int> leaves_;
  std::unordered_map<const hlo::Instruction*, int> visited_;
  std::map<NodeKey, int> built_;
  ElementwiseExpr expr_;
};

}  // namespace

const hlo::Instruction* RowFoldReduce(const hlo::Instruction& broadcast) {
  if (broadcast.opcode() != Opcode::kBroadcast || broadcast.operand_count() != 1 || broadcast.shape().is_tuple) return nullptr;
  const isa::Shape& shape = broadcast.shape();
  const int64_t rank = shape.rank();
  std::vector<int64_t> rows(static_cast<std::size_t>(std::max<int64_t>(rank - 1, 0)));
  for (int64_t d = 0; d + 1 < rank; ++d) rows[d] = d;
  if (rank < 2 || broadcast.GetIntListOrEmpty("dimensions") != rows) return nullptr;
  const hlo::Instruction* reduce = broadcast.operand(0);
  if (reduce->opcode() != Opcode::kReduce || reduce->operand_count() != 2 || reduce->shape().is_tuple) return nullptr;
  const isa::Shape& folded = reduce->operand(0)->shape();
  const bool float_type = folded.element_type == isa::ElementType::kF32 || folded.element_type == isa::ElementType::kBF16;
  if (folded.is_tuple || folded.dims != shape.dims || !float_type || shape.element_type != folded.element_type ||
      reduce->shape().element_type != folded.element_type ||
      reduce->GetIntListOrEmpty("dimensions") != std::vector<int64_t>{rank - 1}) {
    return nullptr;
  }
  const hlo::Instruction* init = reduce->operand(1);
  if (init->opcode() != Opcode::kConstant || init->literal() == nullptr || init->shape().rank() != 0) return nullptr;
  const double value = init->literal()->GetDouble(0);
  switch (hlo::ReducerOpOf(*reduce).value_or(hlo::ReduceOp::kXor)) {
    case hlo::ReduceOp::kAdd: return value == 0 ? reduce : nullptr;
    case hlo::ReduceOp::kMaximum: return value == -std::numeric_limits<double>::infinity() ? reduce : nullptr;
    case hlo::ReduceOp::kMinimum: return value == std::numeric_limits<double>::infinity() ? reduce : nullptr;
    default: return nullptr;
  }
}

bool OnlyRowFolded(const hlo::Instruction& reduce, const std::vector<const hlo::Instruction*>& users) {
  return !users.empty() && std::all_of(users.begin(), users.end(),
                                       [&](const hlo::Instruction* u) { return RowFoldReduce(*u) == &reduce; });
}

bool KeepsEveryValue(const hlo::Instruction& reduce_precision) {
  int exponent = 0;
  int mantissa = 0;
  switch (reduce_precision.shape().element_type) {
    case isa::ElementType::kF32: exponent = 8; mantissa = 23; break;
    case isa::ElementType::kBF16: exponent = 8; mantissa = 7; break;
    case isa::ElementType::kF16: exponent = 5; mantissa = 10; break;
    default: return false;
  }
  return reduce_precision.GetInt("exponent_bits") >= exponent && reduce_precision.GetInt("mantissa_bits") >= mantissa;
}

bool Is8Bit(isa::ElementType type) { return type == isa::ElementType::kS8 || type == isa::ElementType::kU8; }

std::optional<Domain> HeldDomain(isa::ElementType type) {
  switch (type) {
    case isa::ElementType::kF32:
    case isa::ElementType::kBF16:
    case isa::ElementType::kF16:  // widened to f32 in registers (f16_emulation.h)
      return Domain::kFloat;
    case isa::ElementType::kS32:
    case isa::ElementType::kU32:
    case isa::ElementType::kS8:
    case isa::ElementType::kU8:
      return Domain::kInt;
    case isa::ElementType::kPred:
      return Domain::kPred;
    default:
      return std::nullopt;
  }
}

Domain DomainOf(isa::ElementType type) {
  const std::optional<Domain> domain = HeldDomain(type);
  if (!domain) throw Error("element type " + std::string(isa::ElementTypeName(type)) + " is not held in vector registers");
  return *domain;
}

std::optional<isa::Opcode> FloatVpuOpcode(hlo::Opcode opcode) {
  switch (opcode) {
    case Opcode::kAdd: return isa::OPCODE_VADD_F32;
    case Opcode::kSubtract: return isa::OPCODE_VSUB_F32;
    case Opcode::kMultiply: return isa::OPCODE_VMUL_F32;
    case Opcode::kDivide: return isa::OPCODE_VDIV_F32;
    case Opcode::kMaximum: return isa::OPCODE_VMAX_F32;
    case Opcode::kMinimum: return isa::OPCODE_VMIN_F32;
    case Opcode::kNegate: return isa::OPCODE_VNEG_F32;
    case Opcode::kAbs: return isa::OPCODE_VABS_F32;
    case Opcode::kExp: return isa::OPCODE_VEXP_F32;
    case Opcode::kLog: return isa::OPCODE_VLOG_F32;
    case Opcode::kRsqrt: return isa::OPCODE_VRSQRT_F32;
    case Opcode::kSqrt: return isa::OPCODE_VSQRT_F32;
    case Opcode::kTanh: return isa::OPCODE_VTANH_F32;
    case Opcode::kLogistic: return isa::OPCODE_VLOGISTIC_F32;
    case Opcode::kSin: return isa::OPCODE_VSIN_F32;
    case Opcode::kCos: return isa::OPCODE_VCOS_F32;
    case Opcode::kPower: return isa::OPCODE_VPOW_F32;
    default: return std::nullopt;
  }
}

bool IsElementwiseOpcode(hlo::Opcode opcode) {
  switch (opcode) {
    case Opcode::kAdd: case Opcode::kSubtract: case Opcode::kMultiply: case Opcode::kDivide:
    case Opcode::kMaximum: case Opcode::kMinimum: case Opcode::kRemainder:
    case Opcode::kNegate: case Opcode::kAbs:
    case Opcode::kExp: case Opcode::kLog: case Opcode::kRsqrt: case Opcode::kSqrt: case Opcode::kTanh:
    case Opcode::kLogistic: case Opcode::kSin: case Opcode::kCos: case Opcode::kPower:
    case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor: case Opcode::kNot:
    case Opcode::kShiftLeft: case Opcode::kShiftRightArithmetic: case Opcode::kShiftRightLogical:
    case Opcode::kCompare: case Opcode::kSelect: case Opcode::kClamp: case Opcode::kConvert:
    case Opcode::kBitcastConvert: case Opcode::kReducePrecision:
      return true;
    default:
      return false;
  }
}

ElementwiseExpr BuildElementwiseExpr(const KernelGroup& group) {
  const hlo::Instruction& instruction = *group.root;
  Builder builder(instruction);
  const hlo::Instruction* root = &instruction;
  if (instruction.opcode() == Opcode::kFusion) {
    const hlo::Computation* fused = instruction.GetComputation("calls");
    for (const hlo::Instruction* parameter : fused->parameters()) {
      builder.AddLeaf(parameter, static_cast<int>(parameter->parameter_number()));
    }
    root = fused->root();
  } else {
    for (std::size_t i = 0; i < group.operands.size(); ++i) {
      builder.AddLeaf(group.operands[i], static_cast<int>(i));
    }
  }
  std::vector<const hlo::Instruction*> outputs;
  if (root->opcode() == Opcode::kTuple) {
    for (const hlo::Instruction* element : root->operands()) outputs.push_back(element);
  } else {
    outputs.push_back(root);
  }
  std::vector<int> output_nodes;
  for (const hlo::Instruction* output : outputs) {
    if (output->shape().is_tuple || output->shape().dims != (instruction.shape().is_tuple
                                                                  ? instruction.shape().tuple_shapes.at(0).dims
                                                                  : instruction.shape().dims)) {
      CannotLower(instruction, "the results do not all have the same dims (not lowered yet)");
    }
    output_nodes.push_back(builder.Visit(output));
  }
  ElementwiseExpr expr = builder.Take();
  expr.outputs = std::move(output_nodes);
  return expr;
}

bool PreservesZero(const ElementwiseExpr& expr, int node) {
  const ExprNode& n = expr.nodes.at(node);
  switch (n.kind) {
    case ExprNode::Kind::kLoad:
      // The DMAs of a broadcast or an array view write its elements only, not the tiles' padding.
      return n.view == nullptr;
    case ExprNode::Kind::kScalar:
    case ExprNode::Kind::kRowFold:  // in every lane, the padding lanes included
    case ExprNode::Kind::kIota:     // indices past the dims in the padding
      return false;
    case ExprNode::Kind::kConstant:
      return n.bits == 0 || (DomainOf(n.type) == Domain::kFloat && n.bits == 0x80000000u);
    case ExprNode::Kind::kOp:
      break;
  }
  const auto all_inputs = [&] {
    for (int input : n.inputs) {
      if (!PreservesZero(expr, input)) return false;
    }
    return true;
  };
  switch (n.hlo->opcode()) {
    case Opcode::kAdd: case Opcode::kSubtract: case Opcode::kMultiply: case Opcode::kMaximum:
    case Opcode::kMinimum: case Opcode::kNegate: case Opcode::kAbs: case Opcode::kSqrt: case Opcode::kTanh:
    case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor: case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic: case Opcode::kShiftRightLogical: case Opcode::kClamp:
      return all_inputs();
    case Opcode::kConvert:
      return DomainOf(expr.nodes.at(n.inputs[0]).type) != Domain::kPred && all_inputs();
    case Opcode::kSelect:  // either branch is zero there, whichever the predicate picks
      return PreservesZero(expr, n.inputs[1]) && PreservesZero(expr, n.inputs[2]);
    default:
      return false;
  }
}

}  // namespace tpusim::compiler
