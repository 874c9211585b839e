#include "compiler/lower/megacore.h"

#include <string>
#include <vector>

namespace tpusim::compiler {

std::pair<int64_t, int64_t> PartRange(int64_t count, const CorePart& part) {
  return {count * part.index / part.count, count * (part.index + 1) / part.count};
}

void EmitOnCores(ProgramBuilder& out, int parts, const std::function<void(const CorePart&)>& piece) {
  using namespace isa::ops;
  const int cores = static_cast<int>(isa::TensorCores(out.target()));
  if (cores == 1) {
    piece({0, 1});
    out.Emit(isa::OPCODE_CORE_SYNC);  // alone, it ends the kernel's segment (sim/chip/segment_replay.h)
    return;
  }
  const std::string join = out.NewLabel("cores.join");
  std::vector<std::string> starts;
  out.Emit(isa::OPCODE_CORE_ID, {S(0)});
  for (int c = 1; c < parts; ++c) {
    starts.push_back(out.NewLabel("cores.part" + std::to_string(c)));
    out.Emit(isa::OPCODE_BEQ, {S(0), c, Label(starts.back())});
  }
  if (parts < cores) out.Emit(isa::OPCODE_BNE, {S(0), 0, Label(join)});  // cores without a part pass
  for (int c = 0; c < parts; ++c) {
    if (c > 0) out.Bind(starts[c - 1]);
    piece({c, parts});
    if (c + 1 < parts) out.Emit(isa::OPCODE_BR, {Label(join)});
  }
  out.Bind(join);
  out.Emit(isa::OPCODE_CORE_SYNC);
}

}  // namespace tpusim::compiler
