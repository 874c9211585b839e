// What the element-wise fusion tests share (compiler/passes/elementwise_fusion.h): a module's
// entry grouped into kernels after layout assignment, and questions about the groups.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/layout_assignment.h"

namespace tpusim::fusion_test {

// The entry's kernel groups, `fits` answering for fused reduces, row folds and iotas (null: all fit).
inline std::vector<compiler::KernelGroup> Groups(hlo::Module& module,
                                                 const std::function<bool(const compiler::KernelGroup&)>& fits = nullptr) {
  compiler::AssignLayouts(module);
  return compiler::FuseElementwise(compiler::Schedule(*module.entry()), fits);
}

// The groups' roots by name, in kernel order.
inline std::vector<std::string> Roots(const std::vector<compiler::KernelGroup>& groups) {
  std::vector<std::string> roots;
  for (const compiler::KernelGroup& group : groups) roots.push_back(group.root->name());
  return roots;
}

inline bool HasMember(const compiler::KernelGroup& group, const std::string& name) {
  return std::any_of(group.members.begin(), group.members.end(), [&](const hlo::Instruction* m) { return m->name() == name; });
}

}  // namespace tpusim::fusion_test
