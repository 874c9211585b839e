#include "compiler/passes/reduce_split.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/reduce_plan.h"
#include "compiler/passes/new_instruction.h"
#include "isa/error.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;

struct Split {
  int64_t dim = 0;          // operand dim cut into slices
  int64_t result_dim = 0;   // the same dim in the result
  int64_t step = 0;         // elements per slice (the last may have fewer)
};

class Splitter {
 public:
  Splitter(int64_t sublanes, int64_t lanes, uint64_t vmem) : s_(sublanes), l_(lanes), vmem_(vmem) {}

  bool Fits(const Instruction& reduce, const isa::Shape& operand, const isa::Shape& result) const {
    try {
      return PlanReduceVmem(PlanReduce(reduce, operand, result, s_, l_), s_, l_).Fits(vmem_);
    } catch (const Error&) {
      return true;  // a reduce the kernel refuses for another reason: it says why
    }
  }

  std::optional<Split> Plan(const Instruction& reduce) const {
    if (reduce.opcode() != Opcode::kReduce || reduce.operand_count() != 2 || reduce.shape().is_tuple) return std::nullopt;
    const isa::Shape& operand = reduce.operand(0)->shape();
    const isa::Shape& result = reduce.shape();
    if (operand.is_tuple || !operand.layout || !result.layout || Fits(reduce, operand, result)) return std::nullopt;
    const std::vector<int64_t>& reduced = reduce.GetIntList("dimensions");
    int64_t result_dim = 0;
    for (int64_t d = 0; d < operand.rank(); ++d) {
      if (std::count(reduced.begin(), reduced.end(), d) != 0) continue;
      if (operand.dims[d] > 1) {
        for (int64_t n = 2; n <= operand.dims[d]; ++n) {
          const int64_t step = (operand.dims[d] + n - 1) / n;
          if (Fits(reduce, Resized(operand, d, step), Resized(result, result_dim, step))) {
            return Split{d, result_dim, step};
          }
        }
        return std::nullopt;  // even one row of this dim does not fit: the kernel says so
      }
      ++result_dim;
    }
    return std::nullopt;
  }

  static isa::Shape Resized(isa::Shape shape, int64_t dim, int64_t size) {
    shape.dims[dim] = size;
    return shape;
  }

  void Run(Instruction& reduce, const Split& split) {
    hlo::Computation& computation = *reduce.parent();
    Instruction* operand = reduce.operand(0);
    const int64_t size = operand->shape().dims[split.dim];
    std::vector<Instruction*> pieces;
    for (int64_t start = 0, piece = 0; start < size; start += split.step, ++piece) {
      const int64_t stop = std::min(size, start + split.step);
      std::vector<hlo::SliceDimension> box;
      for (int64_t d = 0; d < operand->shape().rank(); ++d) box.push_back({0, operand->shape().dims[d], 1});
      box[split.dim] = {start, stop, 1};
      Instruction* slice = Add(reduce, Opcode::kSlice, Resized(operand->shape(), split.dim, stop - start),
                               "slice", piece);
      slice->AddOperand(operand);
      slice->AddAttribute({"slice", box, {}});
      Instruction* part = Add(reduce, Opcode::kReduce,
                              Resized(reduce.shape(), split.result_dim, stop - start), "reduce", piece);
      part->AddOperand(slice);
      part->AddOperand(reduce.operand(1));
      for (const hlo::Attribute& attribute : reduce.attributes()) part->AddAttribute(attribute);
      pieces.push_back(part);
    }
    Instruction* concatenate = Add(reduce, Opcode::kConcatenate, reduce.shape(), "concatenate", 0);
    for (Instruction* part : pieces) concatenate->AddOperand(part);
    concatenate->AddAttribute({"dimensions", std::vector<int64_t>{split.result_dim}, {}});
    computation.ReplaceUses(&reduce, concatenate);
    computation.RemoveInstruction(&reduce);
  }

 private:
  static Instruction* Add(const Instruction& reduce, Opcode opcode, isa::Shape shape,
                          const char* role, int64_t piece) {
    return AddInstructionFor(reduce, reduce.name() + ".split." + role + "." + std::to_string(piece), opcode,
                             std::move(shape));
  }

  int64_t s_;
  int64_t l_;
  uint64_t vmem_;
};

}  // namespace

void SplitLargeReduces(hlo::Module& module, int64_t sublanes, int64_t lanes, uint64_t vmem_capacity_bytes) {
  Splitter splitter(sublanes, lanes, vmem_capacity_bytes);
  for (const auto& computation : module.computations()) {
    std::vector<std::pair<Instruction*, Split>> splits;
    for (const auto& instruction : computation->instructions()) {
      if (const std::optional<Split> split = splitter.Plan(*instruction)) splits.emplace_back(instruction.get(), *split);
    }
    for (const auto& [reduce, split] : splits) splitter.Run(*reduce, split);
    // The slices and reduces it appends are read by instructions written before them.
    if (!splits.empty()) computation->OrderOperandsFirst();
  }
}

}  // namespace tpusim::compiler
