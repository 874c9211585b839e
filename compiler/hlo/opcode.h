// HLO opcodes: every operation XLA's text format names, with the names XLA prints
// (`get-tuple-element`, `exponential`, `all-gather-start`). Asynchronous operations have their own
// opcodes (`async-start`, `copy-start`, ...); XLA also prints an async op that wraps a single
// instruction as `<wrapped>-start` / `-update` / `-done` (`fusion-start`), which ParseAsyncOpcode
// recognises.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tpusim::hlo {

enum class Opcode : uint8_t {
  kAbs, kAdd, kAddDependency, kAfterAll,
  kAllGather, kAllGatherStart, kAllGatherDone,
  kAllReduce, kAllReduceStart, kAllReduceDone,
  kAllToAll, kAnd,
  kAsyncStart, kAsyncUpdate, kAsyncDone,
  kAtan2, kBatchNormGrad, kBatchNormInference, kBatchNormTraining,
  kBitcast, kBitcastConvert, kBroadcast, kCall, kCbrt, kCeil, kCholesky, kClamp, kClz,
  kCollectiveBroadcast, kCollectivePermute, kCollectivePermuteStart, kCollectivePermuteDone,
  kCompare, kComplex, kConcatenate, kConditional, kConstant, kConvert, kConvolution,
  kCopy, kCopyStart, kCopyDone,
  kCos, kCustomCall, kDivide, kDomain, kDot, kDynamicReshape, kDynamicSlice,
  kDynamicUpdateSlice, kErf, kExp, kExpm1, kFft, kFloor, kFusion, kGather, kGetDimensionSize,
  kGetTupleElement, kImag, kInfeed, kIota, kIsFinite, kLog, kLog1p, kLogistic, kMap, kMaximum,
  kMinimum, kMultiply, kNegate, kNot, kOptimizationBarrier, kOr, kOutfeed, kPad, kParameter,
  kPartitionId, kPopulationCount, kPower, kRaggedAllToAll, kRaggedDot, kReal,
  kRecv, kRecvDone, kReduce, kReducePrecision, kReduceScatter, kReduceWindow, kRemainder,
  kReplicaId, kReshape, kReverse, kRng, kRngBitGenerator, kRngGetAndUpdateState,
  kRoundNearestAfz, kRoundNearestEven, kRsqrt, kScaledDot, kScatter, kSelect, kSelectAndScatter,
  kSend, kSendDone, kSetDimensionSize, kShiftLeft, kShiftRightArithmetic, kShiftRightLogical,
  kSign, kSin, kSlice, kSort, kSqrt, kStochasticConvert, kSubtract, kTan, kTanh, kTopK,
  kTranspose, kTriangularSolve, kTuple, kWhile, kXor,
};

inline constexpr int kOpcodeCount = static_cast<int>(Opcode::kXor) + 1;

// The name XLA prints ("get-tuple-element").
std::string_view OpcodeName(Opcode opcode);

// The opcode XLA prints as `name`; nullopt if there is none. Exact names only: see
// ParseAsyncOpcode for the `<wrapped>-start` forms.
std::optional<Opcode> ParseOpcode(std::string_view name);

// XLA's shorthand for an async op wrapping one instruction: `fusion-start` is an kAsyncStart
// wrapping a kFusion, `custom-call-done` a kAsyncDone. Only for names ParseOpcode does not know
// (`all-gather-start` and `copy-done` are opcodes of their own).
struct AsyncOpcode {
  Opcode async;    // kAsyncStart, kAsyncUpdate or kAsyncDone
  Opcode wrapped;  // the operation the async op runs
};
std::optional<AsyncOpcode> ParseAsyncOpcode(std::string_view name);

}  // namespace tpusim::hlo
