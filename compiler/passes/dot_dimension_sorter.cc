#include "compiler/passes/dot_dimension_sorter.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

// The order that sorts `contracting` (dims of `operand`) by their place in its layout, major to
// minor, where they then are consecutive there; nullopt where they are not (or it has no layout).
std::optional<std::vector<std::size_t>> LayoutOrder(const isa::Shape& operand, const std::vector<int64_t>& contracting) {
  if (!operand.layout || operand.is_tuple) return std::nullopt;
  const std::vector<int64_t>& minor_to_major = operand.layout->minor_to_major;
  std::vector<int64_t> place(contracting.size());
  for (std::size_t i = 0; i < contracting.size(); ++i) {
    const auto it = std::find(minor_to_major.begin(), minor_to_major.end(), contracting[i]);
    if (it == minor_to_major.end()) return std::nullopt;
    place[i] = static_cast<int64_t>(minor_to_major.end() - it);  // 1 for the most major dim
  }
  std::vector<std::size_t> order(contracting.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return place[a] < place[b]; });
  for (std::size_t i = 1; i < order.size(); ++i) {
    if (place[order[i]] != place[order[i - 1]] + 1) return std::nullopt;
  }
  return order;
}

// Sorts one dot's pairs; true if it changed them.
bool Sort(hlo::Instruction& dot) {
  std::vector<int64_t>* lhs = dot.FindMutable<std::vector<int64_t>>("lhs_contracting_dims");
  std::vector<int64_t>* rhs = dot.FindMutable<std::vector<int64_t>>("rhs_contracting_dims");
  if (lhs == nullptr || rhs == nullptr || lhs->size() != rhs->size() || lhs->size() < 2) return false;
  std::optional<std::vector<std::size_t>> order = LayoutOrder(dot.operand(0)->shape(), *lhs);
  if (!order) order = LayoutOrder(dot.operand(1)->shape(), *rhs);
  if (!order || std::is_sorted(order->begin(), order->end())) return false;
  std::vector<int64_t> sorted_lhs, sorted_rhs;
  for (std::size_t i : *order) {
    sorted_lhs.push_back((*lhs)[i]);
    sorted_rhs.push_back((*rhs)[i]);
  }
  *lhs = sorted_lhs;
  *rhs = sorted_rhs;
  return true;
}

}  // namespace

int SortDotDimensions(hlo::Module& module) {
  int changed = 0;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() == Opcode::kDot && instruction->operand_count() == 2 && Sort(*instruction)) ++changed;
    }
  }
  return changed;
}

}  // namespace tpusim::compiler
