#include "compiler/hlo/opcode.h"

#include <array>
#include <unordered_map>

namespace tpusim::hlo {
namespace {

struct OpcodeInfo {
  Opcode opcode;
  std::string_view name;
};

// One row per opcode, in enum order (checked below).
constexpr std::array<OpcodeInfo, kOpcodeCount> kOpcodes = {{
    {Opcode::kAbs, "abs"},
    {Opcode::kAdd, "add"},
    {Opcode::kAddDependency, "add-dependency"},
    {Opcode::kAfterAll, "after-all"},
    {Opcode::kAllGather, "all-gather"},
    {Opcode::kAllGatherStart, "all-gather-start"},
    {Opcode::kAllGatherDone, "all-gather-done"},
    {Opcode::kAllReduce, "all-reduce"},
    {Opcode::kAllReduceStart, "all-reduce-start"},
    {Opcode::kAllReduceDone, "all-reduce-done"},
    {Opcode::kAllToAll, "all-to-all"},
    {Opcode::kAnd, "and"},
    {Opcode::kAsyncStart, "async-start"},
    {Opcode::kAsyncUpdate, "async-update"},
    {Opcode::kAsyncDone, "async-done"},
    {Opcode::kAtan2, "atan2"},
    {Opcode::kBatchNormGrad, "batch-norm-grad"},
    {Opcode::kBatchNormInference, "batch-norm-inference"},
    {Opcode::kBatchNormTraining, "batch-norm-training"},
    {Opcode::kBitcast, "bitcast"},
    {Opcode::kBitcastConvert, "bitcast-convert"},
    {Opcode::kBroadcast, "broadcast"},
    {Opcode::kCall, "call"},
    {Opcode::kCbrt, "cbrt"},
    {Opcode::kCeil, "ceil"},
    {Opcode::kCholesky, "cholesky"},
    {Opcode::kClamp, "clamp"},
    {Opcode::kClz, "count-leading-zeros"},
    {Opcode::kCollectiveBroadcast, "collective-broadcast"},
    {Opcode::kCollectivePermute, "collective-permute"},
    {Opcode::kCollectivePermuteStart, "collective-permute-start"},
    {Opcode::kCollectivePermuteDone, "collective-permute-done"},
    {Opcode::kCompare, "compare"},
    {Opcode::kComplex, "complex"},
    {Opcode::kConcatenate, "concatenate"},
    {Opcode::kConditional, "conditional"},
    {Opcode::kConstant, "constant"},
    {Opcode::kConvert, "convert"},
    {Opcode::kConvolution, "convolution"},
    {Opcode::kCopy, "copy"},
    {Opcode::kCopyStart, "copy-start"},
    {Opcode::kCopyDone, "copy-done"},
    {Opcode::kCos, "cosine"},
    {Opcode::kCustomCall, "custom-call"},
    {Opcode::kDivide, "divide"},
    {Opcode::kDomain, "domain"},
    {Opcode::kDot, "dot"},
    {Opcode::kDynamicReshape, "dynamic-reshape"},
    {Opcode::kDynamicSlice, "dynamic-slice"},
    {Opcode::kDynamicUpdateSlice, "dynamic-update-slice"},
    {Opcode::kErf, "erf"},
    {Opcode::kExp, "exponential"},
    {Opcode::kExpm1, "exponential-minus-one"},
    {Opcode::kFft, "fft"},
    {Opcode::kFloor, "floor"},
    {Opcode::kFusion, "fusion"},
    {Opcode::kGather, "gather"},
    {Opcode::kGetDimensionSize, "get-dimension-size"},
    {Opcode::kGetTupleElement, "get-tuple-element"},
    {Opcode::kImag, "imag"},
    {Opcode::kInfeed, "infeed"},
    {Opcode::kIota, "iota"},
    {Opcode::kIsFinite, "is-finite"},
    {Opcode::kLog, "log"},
    {Opcode::kLog1p, "log-plus-one"},
    {Opcode::kLogistic, "logistic"},
    {Opcode::kMap, "map"},
    {Opcode::kMaximum, "maximum"},
    {Opcode::kMinimum, "minimum"},
    {Opcode::kMultiply, "multiply"},
    {Opcode::kNegate, "negate"},
    {Opcode::kNot, "not"},
    {Opcode::kOptimizationBarrier, "opt-barrier"},
    {Opcode::kOr, "or"},
    {Opcode::kOutfeed, "outfeed"},
    {Opcode::kPad, "pad"},
    {Opcode::kParameter, "parameter"},
    {Opcode::kPartitionId, "partition-id"},
    {Opcode::kPopulationCount, "popcnt"},
    {Opcode::kPower, "power"},
    {Opcode::kRaggedAllToAll, "ragged-all-to-all"},
    {Opcode::kRaggedDot, "ragged-dot"},
    {Opcode::kReal, "real"},
    {Opcode::kRecv, "recv"},
    {Opcode::kRecvDone, "recv-done"},
    {Opcode::kReduce, "reduce"},
    {Opcode::kReducePrecision, "reduce-precision"},
    {Opcode::kReduceScatter, "reduce-scatter"},
    {Opcode::kReduceWindow, "reduce-window"},
    {Opcode::kRemainder, "remainder"},
    {Opcode::kReplicaId, "replica-id"},
    {Opcode::kReshape, "reshape"},
    {Opcode::kReverse, "reverse"},
    {Opcode::kRng, "rng"},
    {Opcode::kRngBitGenerator, "rng-bit-generator"},
    {Opcode::kRngGetAndUpdateState, "rng-get-and-update-state"},
    {Opcode::kRoundNearestAfz, "round-nearest-afz"},
    {Opcode::kRoundNearestEven, "round-nearest-even"},
    {Opcode::kRsqrt, "rsqrt"},
    {Opcode::kScaledDot, "scaled-dot"},
    {Opcode::kScatter, "scatter"},
    {Opcode::kSelect, "select"},
    {Opcode::kSelectAndScatter, "select-and-scatter"},
    {Opcode::kSend, "send"},
    {Opcode::kSendDone, "send-done"},
    {Opcode::kSetDimensionSize, "set-dimension-size"},
    {Opcode::kShiftLeft, "shift-left"},
    {Opcode::kShiftRightArithmetic, "shift-right-arithmetic"},
    {Opcode::kShiftRightLogical, "shift-right-logical"},
    {Opcode::kSign, "sign"},
    {Opcode::kSin, "sine"},
    {Opcode::kSlice, "slice"},
    {Opcode::kSort, "sort"},
    {Opcode::kSqrt, "sqrt"},
    {Opcode::kStochasticConvert, "stochastic-convert"},
    {Opcode::kSubtract, "subtract"},
    {Opcode::kTan, "tan"},
    {Opcode::kTanh, "tanh"},
    {Opcode::kTopK, "topk"},
    {Opcode::kTranspose, "transpose"},
    {Opcode::kTriangularSolve, "triangular-solve"},
    {Opcode::kTuple, "tuple"},
    {Opcode::kWhile, "while"},
    {Opcode::kXor, "xor"},
}};

constexpr bool TableMatchesEnum() {
  for (std::size_t i = 0; i < kOpcodes.size(); ++i) {
    if (static_cast<std::size_t>(kOpcodes[i].opcode) != i) return false;
  }
  return true;
}
static_assert(TableMatchesEnum(), "kOpcodes must list every Opcode in enum order");

}  // namespace

std::string_view OpcodeName(Opcode opcode) { return kOpcodes[static_cast<std::size_t>(opcode)].name; }

std::optional<Opcode> ParseOpcode(std::string_view name) {
  // A parse looks up one opcode per instruction: hash rather than scan ~125 names.
  static const std::unordered_map<std::string_view, Opcode> kByName = [] {
    std::unordered_map<std::string_view, Opcode> map;
    for (const OpcodeInfo& info : kOpcodes) map.emplace(info.name, info.opcode);
    return map;
  }();
  const auto it = kByName.find(name);
  if (it == kByName.end()) return std::nullopt;
  return it->second;
}

std::optional<AsyncOpcode> ParseAsyncOpcode(std::string_view name) {
  if (ParseOpcode(name)) return std::nullopt;
  constexpr std::pair<std::string_view, Opcode> kSuffixes[] = {
      {"-start", Opcode::kAsyncStart},
      {"-update", Opcode::kAsyncUpdate},
      {"-done", Opcode::kAsyncDone},
  };
  for (const auto& [suffix, async] : kSuffixes) {
    if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
    const std::optional<Opcode> wrapped = ParseOpcode(name.substr(0, name.size() - suffix.size()));
    // An async op does not wrap another async op's half (`async-start-done` means nothing).
    if (!wrapped || *wrapped == Opcode::kAsyncStart || *wrapped == Opcode::kAsyncUpdate ||
        *wrapped == Opcode::kAsyncDone) {
      return std::nullopt;
    }
    return AsyncOpcode{async, *wrapped};
  }
  return std::nullopt;
}

}  // namespace tpusim::hlo
