#include "compiler/lower/megacore.h"

#include <string>
#include <vector>

namespace tpusim::compiler {

std::pair<int64_t, int64_t> PartRange(int64_t count, const CorePart& part) {
  return {count * part.index / part.count, count * (part.index + 1) / part.count};
}

void EmitOnCores(ProgramBuilder& out, int parts, const std::function<void(const CorePart&)>& piece) {
  const int cores = static_cast<int>(isa::TensorCores(out.target()));
  if (cores == 1) {
    piece({0, 1});
    out.Emit("core.sync");  // alone, it ends the kernel's segment (sim/chip/segment_replay.h)
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
