#include "compiler/passes/contraction_split.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/mxu_tiling.h"
#include "compiler/passes/layout_assignment.h"
#include "compiler/passes/new_instruction.h"
#include "isa/shape.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;
using isa::ElementType;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int Bytes(ElementType type) {
  switch (type) {
    case ElementType::kF32: return 4;
    case ElementType::kBF16: case ElementType::kF16: return 2;
    default: return 0;
  }
}

// The dot's sizes as the dot kernels see them: free dims merged into M and N (the general-dot
// path merges them so), batch dims into one.
DotForm MergedForm(const Instruction& dot) {
  DotForm form;
  const auto product = [](const isa::Shape& shape, const std::vector<int64_t>& skip_a, const std::vector<int64_t>& skip_b) {
    int64_t p = 1;
    for (int64_t d = 0; d < shape.rank(); ++d) {
      if (std::count(skip_a.begin(), skip_a.end(), d) == 0 && std::count(skip_b.begin(), skip_b.end(), d) == 0) {
        p *= shape.dims[d];
      }
    }
    return p;
  };
  const isa::Shape& lhs = dot.operand(0)->shape();
  const isa::Shape& rhs = dot.operand(1)->shape();
  const std::vector<int64_t> lhs_batch = dot.GetIntListOrEmpty("lhs_batch_dims");
  const std::vector<int64_t> rhs_batch = dot.GetIntListOrEmpty("rhs_batch_dims");
  const std::vector<int64_t>& lhs_k = dot.GetIntList("lhs_contracting_dims");
  const std::vector<int64_t>& rhs_k = dot.GetIntList("rhs_contracting_dims");
  form.m = product(lhs, lhs_batch, lhs_k);
  form.n = product(rhs, rhs_batch, rhs_k);
  form.k = 1;
  for (int64_t d : lhs_k) form.k *= lhs.dims[d];
  for (int64_t d : lhs_batch) form.batch *= lhs.dims[d];
  return form;
}

class Splitter {
 public:
  Splitter(const isa::Target& target, uint64_t vmem) : target_(target), vmem_(vmem) {}

  // How to cut K: along the contracting dim pair `which` (position in the contracting lists), in
  // slices of `step` elements of that dim. nullopt when the dot needs no cut or is not one this
  // pass applies to.
  struct Cut {
    std::size_t which = 0;
    int64_t step = 0;
  };
  std::optional<Cut> CutFor(const Instruction& dot) const {
    if (dot.shape().is_tuple) return std::nullopt;
    const int in_bytes = Bytes(dot.operand(0)->shape().element_type);
    const int out_bytes = Bytes(dot.shape().element_type);
    if (in_bytes == 0 || out_bytes == 0 || dot.operand(1)->shape().element_type != dot.operand(0)->shape().element_type) {
      return std::nullopt;
    }
    DotForm form = MergedForm(dot);
    if (form.m == 0 || form.n == 0 || form.k == 0) return std::nullopt;
    const int64_t most = MostGroupMxus(form, target_);
    const int64_t r = target_.mxu_rows();
    std::string why;
    const auto fits = [&](int64_t k, int bytes) {
      form.k = CeilDiv(k, r) * r;
      const std::optional<MxuTiling> t = PlanMxuTiling(form, target_, vmem_, in_bytes, bytes, &why);
      return t && t->mxus == most;
    };
    const int64_t k = form.k;
    if (fits(k, out_bytes)) return std::nullopt;
    // The outermost contracting dim longer than 1; the dims after it stay whole in every slice.
    const std::vector<int64_t>& lhs_k = dot.GetIntList("lhs_contracting_dims");
    const isa::Shape& lhs = dot.operand(0)->shape();
    for (std::size_t j = 0; j < lhs_k.size(); ++j) {
      const int64_t size = lhs.dims[lhs_k[j]];
      if (size == 1) continue;
      const int64_t inner = k / size;
      // A single contracting dim is cut at whole MXU row blocks.
      const int64_t unit = lhs_k.size() == 1 ? r : 1;
      // At most `size` slices (with a unit of 1, CeilDiv(size, n) >= 1 for every n: an MXU of one
      // row, whose tiling never fits, looped forever).
      for (int64_t n = 2; n <= size && CeilDiv(size, n) >= unit; ++n) {
        const int64_t step = CeilDiv(CeilDiv(size, n), unit) * unit;
        if (fits(step * inner, 4)) return Cut{j, step};
      }
      return std::nullopt;  // not even the smallest slice fits: the dot kernel says why
    }
    return std::nullopt;
  }

  // The slices' dots, then their sum as a loop fusion (SumFusion).
  void Split(hlo::Module& module, Instruction& dot, const Cut& cut) {
    hlo::Computation& computation = *dot.parent();
    const int64_t lhs_k = dot.GetIntList("lhs_contracting_dims")[cut.which];
    const int64_t rhs_k = dot.GetIntList("rhs_contracting_dims")[cut.which];
    const int64_t k = dot.operand(0)->shape().dims[lhs_k];
    Instruction* sum = Add(dot, Opcode::kFusion, dot.shape(), "sum", 0);
    int64_t piece = 0;
    for (int64_t k0 = 0; k0 < k; k0 += cut.step, ++piece) {
      const int64_t k1 = std::min(k, k0 + cut.step);
      Instruction* lhs = Slice(dot, 0, lhs_k, k0, k1, piece);
      Instruction* rhs = Slice(dot, 1, rhs_k, k0, k1, piece);
      Instruction* partial = Add(dot, Opcode::kDot, AsType(dot.shape(), ElementType::kF32), "dot", piece);
      partial->AddOperand(lhs);
      partial->AddOperand(rhs);
      for (const hlo::Attribute& attribute : dot.attributes()) partial->AddAttribute(attribute);
      sum->AddOperand(partial);
    }
    sum->AddAttribute({"kind", hlo::Identifier{"kLoop"}, {}});
    sum->AddAttribute({"calls", module.AddComputation(SumFusion(dot, piece)), {}});
    computation.ReplaceUses(&dot, sum);
    computation.RemoveInstruction(&dot);
  }

 private:
  // convert(p0 + p1 + ... + p{n-1}) of n f32 slices to the dot's type, as a fusion's
  // computation: the sum stands for the MXU's accumulation of the whole K, so the split dot's
  // result is a kernel's output as the dot's was (XLA materializes a dot's result; element-wise
  // consumers do not compute it in their kernels), and a consumer that runs much later (MaxText's
  // vocabulary weight gradient, added after the backward layer loop to the embedding's) does
  // not keep the f32 slices live until then.
  static std::unique_ptr<hlo::Computation> SumFusion(const Instruction& dot, int64_t pieces) {
    auto fused = std::make_unique<hlo::Computation>(dot.name() + ".k_split.fused_sum");
    const isa::Shape f32 = AsType(dot.shape(), ElementType::kF32);
    std::vector<Instruction*> parameters;
    Instruction* sum = nullptr;
    for (int64_t i = 0; i < pieces; ++i) {
      auto parameter = std::make_unique<Instruction>("p" + std::to_string(i), Opcode::kParameter, f32);
      parameter->set_parameter_number(i);
      parameters.push_back(fused->AddInstruction(std::move(parameter)));
      if (sum == nullptr) {
        sum = parameters.back();
        continue;
      }
      auto add = std::make_unique<Instruction>("add" + std::to_string(i), Opcode::kAdd, f32);
      add->AddOperand(sum);
      add->AddOperand(parameters.back());
      sum = fused->AddInstruction(std::move(add));
    }
    if (dot.shape().element_type != ElementType::kF32) {
      auto convert = std::make_unique<Instruction>("convert", Opcode::kConvert, dot.shape());
      convert->AddOperand(sum);
      sum = fused->AddInstruction(std::move(convert));
    }
    fused->set_root(sum);
    fused->set_parameters(std::move(parameters));
    return fused;
  }

  // Operand `side` of `dot` restricted to [k0, k1) along its contracting dim `dim`.
  Instruction* Slice(const Instruction& dot, std::size_t side, int64_t dim, int64_t k0,
                     int64_t k1, int64_t piece) {
    Instruction* operand = dot.operand(side);
    isa::Shape shape = operand->shape();
    std::vector<hlo::SliceDimension> box;
    for (int64_t d = 0; d < shape.rank(); ++d) box.push_back({0, shape.dims[d], 1});
    box[dim] = {k0, k1, 1};
    shape.dims[dim] = k1 - k0;
    shape = AsType(shape, shape.element_type);
    Instruction* slice = Add(dot, Opcode::kSlice, shape, side == 0 ? "lhs" : "rhs", piece);
    slice->AddOperand(operand);
    slice->AddAttribute({"slice", box, {}});
    return slice;
  }
  static Instruction* Add(const Instruction& dot, Opcode opcode, isa::Shape shape, const char* role,
                          int64_t piece) {
    return AddInstructionFor(dot, dot.name() + ".k_split." + role + "." + std::to_string(piece), opcode, std::move(shape));
  }

  const isa::Target& target_;
  uint64_t vmem_;
};

}  // namespace

void SplitLongContractions(hlo::Module& module, const isa::Target& target, uint64_t vmem_capacity_bytes) {
  Splitter splitter(target, vmem_capacity_bytes);
  // The sums' computations are added to the module while its computations are visited.
  std::vector<hlo::Computation*> computations;
  for (const auto& computation : module.computations()) computations.push_back(computation.get());
  for (hlo::Computation* computation : computations) {
    std::vector<std::pair<Instruction*, Splitter::Cut>> splits;
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() != Opcode::kDot) continue;
      if (const auto cut = splitter.CutFor(*instruction)) splits.emplace_back(instruction.get(), *cut);
    }
    for (const auto& [dot, cut] : splits) splitter.Split(module, *dot, cut);
    // The slices and sums it appends are read by instructions written before them.
    if (!splits.empty()) computation->OrderOperandsFirst();
  }
}

}  // namespace tpusim::compiler
