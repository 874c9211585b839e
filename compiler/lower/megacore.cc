#include "compiler/lower/megacore.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tpusim::compiler {

int TensorCores(const isa::Target& target) { return static_cast<int>(std::max(target.tensor_cores(), 1u)); }

void EmitOnCores(AsmBuilder& out, int cores, int parts, const std::function<void(const CorePart&)>& piece) {
  if (cores <= 1) {
    piece({0, 1});
    return;
  }
  const std::string join = out.NewLabel("cores.join");
  std::vector<std::string> starts;
  out.Emit("core.id s0");
  for (int c = 1; c < parts; ++c) {
    starts.push_back(out.NewLabel("cores.part" + std::to_string(c)));
    out.Emit("beq s0, {}, {}", c, starts.back());
  }
  if (parts < cores) out.Emit("bne s0, 0, {}", join);  // cores without a part pass
  for (int c = 0; c < parts; ++c) {
    if (c > 0) out.Bind(starts[c - 1]);
    piece({c, parts});
    if (c + 1 < parts) out.Emit("br {}", join);
  }
  out.Bind(join);
  out.Emit("core.sync");
}

}  // namespace tpusim::compiler
