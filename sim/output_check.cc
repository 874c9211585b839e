#include "sim/output_check.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <limits>
#include <unordered_map>
#include <variant>

#include "compiler/hlo/reducer_pattern.h"
#include "isa/error.h"
#include "sim/inputs.h"

namespace tpusim::sim {
namespace {

// Position of a float's bits in the ordered list of its type's values (sign-magnitude to a line).
int64_t OrderedPosition(uint64_t bits, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  const int64_t magnitude = static_cast<int64_t>(bits & (sign - 1));
  return (bits & sign) ? -magnitude : magnitude;
}

std::string IndexText(const std::vector<int64_t>& dims, int64_t linear) {
  std::vector<int64_t> index(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    index[d] = linear % dims[d];
    linear /= dims[d];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

// Two sums of the same n terms in different orders: the evaluator's (in increasing index, in f32
// for dots, in double for reduces) and the kernel's (MXU blocks, or lanes in parallel then a
// tree). Each is within (n - 1) u sum|x| of the exact sum (u = 2^-24; any order), so they differ
// by at most 2 (n - 1) u sum|x|. Without cancellation sum|x| = |s|: at most 2n f32 ulps (a bf16
// result: one ulp, a rounding that flips, plus 2n / 2^16; UlpsFor). With cancellation the relative error is
// unbounded, so an absolute bound passes too: sum|x| <= n max|x|, and --check's random inputs
// lie in [-1, 1), giving 2 n^2 u (a product of two such inputs too). Inputs given with --input
// that are larger may fail this bound without the kernel being wrong; the reason says so.
CheckBound SumBound(int64_t n) {
  CheckBound bound;
  bound.max_ulps = static_cast<uint64_t>(2 * n);
  bound.max_abs = 2.0 * static_cast<double>(n) * static_cast<double>(n) * 0x1.0p-24;
  return bound;
}

// Reduce (compiler/lower/reduce_kernel.cc, docs/compiler.md "Reduce"):
//   - float add: the kernel adds in f32, as the hardware does, in another order than the
//     evaluator (which sums in double and rounds once): SumBound with n the elements per result.
//   - float multiply over lanes or sublanes: the products are rounded to f32 at each step in a
//     different order than the evaluator's: each of the n - 1 roundings moves the result by at
//     most half an ulp relative to the exact product, in both programs: 2 (n - 1) ulps.
//     Over major dims only the kernel multiplies in the evaluator's order: bit for bit.
//   - max, min, integer ops: exact.
CheckBound ReduceBound(const hlo::Instruction& reduce) {
  const std::optional<hlo::ReduceOp> op = hlo::ReducerOpOf(reduce);
  const isa::Shape& operand = reduce.operand(0)->shape();
  if (!op || operand.is_tuple || !isa::IsFloat(operand.element_type)) return {};
  int64_t n = 1;
  bool lanes_or_sublanes = false;
  for (int64_t d : reduce.GetIntList("dimensions")) {
    n *= operand.dims.at(d);
    if (d + 2 >= operand.rank()) lanes_or_sublanes = true;
  }
  if (*op == hlo::ReduceOp::kAdd && n > 1) {
    CheckBound bound = SumBound(n);
    bound.reason = fmt::format("float add-reduce of {} elements adds in f32 in another order than the evaluator's double "
                               "sum: {} f32 ulps, or an absolute {} for inputs within [-1, 1]",
                               n, bound.max_ulps, bound.max_abs);
    return bound;
  }
  if (*op == hlo::ReduceOp::kMultiply && lanes_or_sublanes && n > 1) {
    return {static_cast<uint64_t>(2 * (n - 1)), 0,
            "float multiply-reduce rounds its " + std::to_string(n - 1) + " products in another order"};
  }
  return {};
}

// Batch norm (compiler/passes/batch_norm_expansion.h), expanded as XLA's BatchNormExpander writes
// it, against the evaluator's double arithmetic rounded once:
//   - training and grad: each feature's statistics are f32 sums of its N elements (x, x * x, dy,
//     dy * (x - mean)): SumBound with n = N. The normalization divides by sqrt(var + epsilon), so
//     where the variance is small the relative error grows: the absolute term covers inputs
//     within [-1, 1] whose variance is not.
//   - inference: y = x * s + (offset - mean * s) with s = scale * rsqrt(var + epsilon), five
//     f32 roundings and rsqrt's (at most 2 ulps): 16 ulps of y, or, where x * s and the shift
//     cancel, 16 ulps of their size, at most 2 / sqrt(epsilon) for inputs within [-1, 1].
CheckBound BatchNormBound(const hlo::Instruction& op) {
  if (op.opcode() == hlo::Opcode::kBatchNormInference) {
    const double epsilon = op.GetDouble("epsilon");
    CheckBound bound{16, 16 * 0x1.0p-24 * 2 / std::sqrt(std::max(epsilon, 1e-30)), ""};
    bound.reason = fmt::format("batch-norm-inference folds scale and shift in f32 (XLA's expansion): {} f32 ulps, or "
                               "an absolute {} for inputs within [-1, 1]",
                               bound.max_ulps, bound.max_abs);
    return bound;
  }
  if (op.opcode() != hlo::Opcode::kBatchNormTraining && op.opcode() != hlo::Opcode::kBatchNormGrad) return {};
  const isa::Shape& operand = op.operand(0)->shape();
  const int64_t feature = op.GetInt("feature_index");
  int64_t n = 1;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (d != feature) n *= operand.dims.at(d);
  }
  CheckBound bound = SumBound(std::max<int64_t>(n, 1));
  bound.reason = fmt::format("{} sums {} elements per feature in f32 (XLA's expansion) where the evaluator sums in "
                             "double: {} f32 ulps, or an absolute {} for inputs within [-1, 1]",
                             hlo::OpcodeName(op.opcode()), n, bound.max_ulps, bound.max_abs);
  return bound;
}

// Convolutions (docs/compiler.md, "Convolution") are dots of depth K = window taps x input
// features per group: the MXU kernel sums each tap's K block on an MXU and adds the blocks with
// mxu.pop.acc, the evaluator sums tap by tap, feature by feature; the products are the same (f32
// products rounded once in both), so the dot bound below holds with that K. (The depthwise VPU
// kernel adds in the evaluator's order and is bit-exact; the bound covers it.)
int64_t ConvolutionDepth(const hlo::Instruction& conv) {
  const auto& dn = conv.GetConvolutionDimensionNumbers();
  const isa::Shape& kernel = conv.operand(1)->shape();
  int64_t k = kernel.dims.at(dn.kernel_input_feature_dimension);
  for (int64_t d : dn.kernel_spatial_dimensions) k *= kernel.dims.at(d);
  return k;
}

// Dots. The evaluator adds the K products of an output in increasing k into one f32 sum; the dot
// kernel (docs/compiler.md, "Dot") adds each K block of R (the MXU's depth) in increasing k on
// an MXU, then adds the blocks' sums in increasing block order (mxu.pop.acc). The products are
// the same and exact (bf16 x bf16 fits f32), so for K <= R the results are bit-exact; otherwise
// SumBound with n = K.
CheckBound DotBound(const hlo::Instruction& instruction) {
  int64_t k = 1;
  if (instruction.opcode() == hlo::Opcode::kDot) {
    const auto* contracting = instruction.Find<std::vector<int64_t>>("lhs_contracting_dims");
    if (contracting) {
      for (int64_t d : *contracting) k *= instruction.operand(0)->shape().dims.at(d);
    }
  } else if (instruction.opcode() == hlo::Opcode::kConvolution) {
    k = ConvolutionDepth(instruction);
  } else {
    return {};
  }
  CheckBound bound = SumBound(k);
  bound.reason = fmt::format(
      "dot or convolution with K = {} sums its products in MXU blocks, not in XLA's order: {} f32 ulps, or an "
      "absolute {} for inputs within [-1, 1] (docs/compiler.md, Dot and Convolution)",
      k, bound.max_ulps, bound.max_abs);
  return bound;
}

// The looser of two bounds, with both reasons.
void Widen(CheckBound& bound, const CheckBound& other) {
  if (other.reason.empty()) return;
  bound.max_ulps = std::max(bound.max_ulps, other.max_ulps);
  bound.max_abs = std::max(bound.max_abs, other.max_abs);
  if (bound.reason.find(other.reason) == std::string::npos) {
    bound.reason += (bound.reason.empty() ? "" : "; ") + other.reason;
  }
}

CheckBound OwnBound(const hlo::Instruction& instruction) {
  switch (instruction.opcode()) {
    case hlo::Opcode::kDot:
    case hlo::Opcode::kConvolution:
      return DotBound(instruction);
    case hlo::Opcode::kReduce:
      return ReduceBound(instruction);
    default:
      return BatchNormBound(instruction);
  }
}

// The bound of every value: its instruction's own, its operands', and every instruction's of the
// computations it calls (loop bodies, calls, fusions, reducers), whose rounding errors flow into
// it; memoized, walked with an explicit stack (a model's chains are thousands deep).
class Dataflow {
 public:
  const CheckBound& Of(const hlo::Instruction& value) {
    std::vector<std::pair<const hlo::Instruction*, bool>> stack = {{&value, false}};
    while (!stack.empty()) {
      const auto [x, inputs_done] = stack.back();
      if (bounds_.contains(x)) {
        stack.pop_back();
        continue;
      }
      const std::vector<const hlo::Instruction*> inputs = Inputs(*x);
      if (!inputs_done) {
        stack.back().second = true;
        for (const hlo::Instruction* input : inputs) {
          if (!bounds_.contains(input)) stack.emplace_back(input, false);
        }
        continue;
      }
      stack.pop_back();
      CheckBound bound = OwnBound(*x);
      for (const hlo::Instruction* input : inputs) Widen(bound, bounds_.at(input));
      bounds_.emplace(x, std::move(bound));
    }
    return bounds_.at(&value);
  }

 private:
  static std::vector<const hlo::Instruction*> Inputs(const hlo::Instruction& x) {
    std::vector<const hlo::Instruction*> inputs(x.operands().begin(), x.operands().end());
    const auto add_all = [&](const hlo::Computation* called) {
      if (called == nullptr) return;
      for (const auto& inner : called->instructions()) inputs.push_back(inner.get());
    };
    for (const hlo::Attribute& attribute : x.attributes()) {
      if (const auto* one = std::get_if<hlo::Computation*>(&attribute.value)) add_all(*one);
      if (const auto* list = std::get_if<std::vector<hlo::Computation*>>(&attribute.value)) {
        for (const hlo::Computation* called : *list) add_all(called);
      }
    }
    return inputs;
  }

  std::unordered_map<const hlo::Instruction*, CheckBound> bounds_;
};

// The bound of each output leaf of `value` (a tuple instruction's leaves are its operands'; any
// other value's leaves all come from it).
void LeafBounds(const hlo::Instruction& value, Dataflow& dataflow, std::vector<CheckBound>& bounds) {
  if (value.opcode() == hlo::Opcode::kTuple) {
    for (const hlo::Instruction* operand : value.operands()) LeafBounds(*operand, dataflow, bounds);
    return;
  }
  const CheckBound& bound = dataflow.Of(value);
  bounds.insert(bounds.end(), ArrayLeafCount(value.shape()), bound);
}

}  // namespace

std::vector<CheckBound> BoundsFor(const hlo::Module& module) {
  Dataflow dataflow;
  std::vector<CheckBound> bounds;
  LeafBounds(*module.entry()->root(), dataflow, bounds);
  for (CheckBound& bound : bounds) {
    if (bound.reason.empty()) bound.reason = "every operation it depends on computes as XLA's evaluator does";
  }
  return bounds;
}

CheckBound Loosest(const std::vector<CheckBound>& bounds) {
  CheckBound loosest;
  for (const CheckBound& bound : bounds) Widen(loosest, bound);
  return loosest;
}

uint64_t UlpsFor(const CheckBound& bound, isa::ElementType type) {
  if (bound.max_ulps == 0) return 0;
  // f32's 23 stored mantissa bits less the type's: how many f32 ulps one of its ulps spans.
  int coarser = 0;
  switch (type) {
    case isa::ElementType::kBF16: coarser = 23 - 7; break;
    case isa::ElementType::kF16: coarser = 23 - 10; break;
    default: return bound.max_ulps;
  }
  const uint64_t scale = uint64_t{1} << coarser;
  return 1 + (bound.max_ulps + scale - 1) / scale;
}

CheckResult CompareOutputs(const std::vector<const hlo::Literal*>& expected, const std::vector<isa::NpyArray>& actual,
                           const CheckBound& bound) {
  return CompareOutputs(expected, actual, std::vector<CheckBound>(expected.size(), bound));
}

CheckResult CompareOutputs(const std::vector<const hlo::Literal*>& expected, const std::vector<isa::NpyArray>& actual,
                           const std::vector<CheckBound>& bounds) {
  if (expected.size() != actual.size()) {
    throw Error(fmt::format("--check: the evaluator gives {} outputs and the simulation {}", expected.size(), actual.size()));
  }
  if (bounds.size() != expected.size()) {
    throw Error(fmt::format("internal: --check has {} bounds for {} outputs", bounds.size(), expected.size()));
  }
  CheckResult result;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const CheckBound& bound = bounds[i];
    const hlo::Literal& want = *expected[i];
    const isa::NpyArray& got = actual[i];
    if (want.element_type() != got.type || want.dims() != got.dims) {
      throw Error(fmt::format("--check: output {} is {} in the evaluator but {}[{}] in the simulation", i,
                              isa::ToString(want.shape()), isa::ElementTypeName(got.type), fmt::join(got.dims, ",")));
    }
    const isa::ElementType type = want.element_type();
    const int width = isa::ElementBitWidth(type);
    const int bytes = isa::ElementByteWidth(type);
    const bool is_float = isa::IsFloat(type);
    const uint64_t max_ulps = UlpsFor(bound, type);
    const std::span<const uint8_t> a = want.bytes();
    const hlo::Literal have = hlo::Literal::FromBytes(want.shape(), got.data);
    for (int64_t e = 0; e < want.element_count(); ++e) {
      uint64_t x = 0;
      uint64_t y = 0;
      std::memcpy(&x, a.data() + e * bytes, bytes);
      std::memcpy(&y, got.data.data() + e * bytes, bytes);
      if (x == y) continue;
      uint64_t ulps = std::numeric_limits<uint64_t>::max();
      if (is_float) {
        const bool nan_x = std::isnan(want.GetDouble(e));
        const bool nan_y = std::isnan(have.GetDouble(e));
        if (nan_x && nan_y) continue;
        if (!nan_x && !nan_y) {
          const int64_t distance = OrderedPosition(x, width) - OrderedPosition(y, width);
          ulps = static_cast<uint64_t>(distance < 0 ? -distance : distance);
        }
      }
      // Bit-exact families allow no difference at all: -0 and +0 are 0 ulps apart but not equal.
      const bool exact = bound.max_ulps == 0 && bound.max_abs == 0;
      bool beyond = !is_float || ulps > max_ulps || exact;
      if (beyond && is_float && bound.max_abs > 0 && std::abs(want.GetDouble(e) - have.GetDouble(e)) <= bound.max_abs) {
        beyond = false;
      }
      if (beyond) ++result.mismatches;
      if (ulps >= result.worst_ulps || (beyond && result.ok)) {
        const double want_value = want.GetDouble(e);
        const double got_value = have.GetDouble(e);
        result.worst_ulps = std::max(result.worst_ulps, ulps);
        result.worst_abs = std::abs(want_value - got_value);
        result.worst = fmt::format("output {} element {}: expected {}, got {}{}", i, IndexText(want.dims(), e),
                                   want_value, got_value,
                                   is_float && ulps != std::numeric_limits<uint64_t>::max() ? fmt::format(" ({} ulp)", ulps) : "");
      }
      if (beyond) result.ok = false;
    }
  }
  return result;
}

}  // namespace tpusim::sim
