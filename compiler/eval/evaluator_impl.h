// Internals of the evaluator (evaluator.h), shared by its .cc files: evaluator.cc runs
// computations and control flow across devices; device_ops.cc evaluates one instruction on one
// device; collective_ops.cc evaluates the cross-device ops.
#pragma once

#include <random>
#include <unordered_map>
#include <span>
#include <vector>

#include "compiler/eval/computation.h"
#include "compiler/eval/evaluator.h"

namespace tpusim::eval {

// One value per device.
using DeviceValues = std::vector<hlo::Literal>;

// The execution plan of a computation: operand slots and use counts, so that a run indexes
// vectors instead of hashing instructions, and frees each value after its last use.
struct Plan {
  std::vector<std::vector<std::size_t>> operand_slots;
  std::vector<int64_t> use_counts;
  std::size_t root_slot = 0;
};

class EvaluatorImpl {
 public:
  EvaluatorImpl(const hlo::Module& module, EvaluatorOptions options);

  int64_t device_count() const { return device_count_; }
  int64_t num_partitions() const { return num_partitions_; }

  // Runs `computation` on `devices` devices with args[p][d] as parameter p on device d.
  DeviceValues Run(const hlo::Computation& computation, const std::vector<DeviceValues>& args,
                   int64_t devices);

  // The computation as a kernel callback, with a native fast path when it is one known op.
  Reducer ReducerFor(const hlo::Computation& computation);
  Comparator ComparatorFor(const hlo::Computation& computation);
  ScalarFunction FunctionFor(const hlo::Computation& computation);

  std::vector<hlo::Literal>& outfeed() { return outfeed_; }

 private:
  DeviceValues EvaluateInstruction(const hlo::Instruction& instruction,
                                   const std::vector<const DeviceValues*>& operands, int64_t devices);
  DeviceValues EvaluateControlFlow(const hlo::Instruction& instruction,
                                   const std::vector<const DeviceValues*>& operands, int64_t devices);
  DeviceValues EvaluateWhile(const hlo::Instruction& instruction, const DeviceValues& init,
                             int64_t devices);
  // One instruction on one device (device_ops.cc).
  hlo::Literal EvaluateOnDevice(const hlo::Instruction& instruction,
                                std::span<const hlo::Literal* const> operands, int64_t device);
  // Collectives and async wrappers of them (collective_ops.cc).
  DeviceValues EvaluateCollective(const hlo::Instruction& instruction,
                                  const std::vector<const DeviceValues*>& operands, int64_t devices);
  hlo::Literal EvaluateCustomCall(const hlo::Instruction& instruction,
                                  std::span<const hlo::Literal* const> operands);

  const hlo::Module& module_;
  EvaluatorOptions options_;
  int64_t num_partitions_;
  int64_t device_count_;
  std::mt19937_64 rng_;
  std::unordered_map<const hlo::Computation*, Plan> plans_;
  std::vector<hlo::Literal> outfeed_;
};

// Error helpers: "file:line:col: instruction 'x': <message>".
[[noreturn]] void FailAt(const hlo::Instruction& instruction, const std::string& message);

}  // namespace tpusim::eval
