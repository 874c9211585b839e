#include "compiler/lower/dma_strided.h"

#include <fmt/format.h>
#include <functional>

#include "isa/layout_index.h"

namespace tpusim::compiler {

void EmitStridedCopy(DmaEmitter& emitter, const StridedSide& src, const StridedSide& dst,
                     const std::vector<int64_t>& size) {
  using namespace isa::ops;
  for (int64_t s : size) {
    if (s == 0) return;
  }
  // Walked dims, the destination's most major first.
  std::vector<int64_t> walked;
  int64_t dmas = 1;
  const std::vector<int64_t> dst_order = isa::LayoutMap(dst.array.shape).physical_order();
  for (int64_t d : dst_order) {
    if (size[d] > 1 && (src.step[d] != 1 || dst.step[d] != 1)) {
      walked.push_back(d);
      dmas *= size[d];
      if (dmas > kMaxStridedDmas) {
        CannotLower(emitter.context().instruction,
                    fmt::format("it would take more than {} DMAs (one per step of its strided or reversed dims)",
                                kMaxStridedDmas));
      }
    }
  }
  if (walked.empty()) {
    emitter.SplitDma(src.array, src.start, dst.array, dst.start, size);
    return;
  }
  std::vector<int64_t> box = size;
  for (int64_t d : walked) box[d] = 1;
  struct Walk {
    int64_t dim;
    int src_reg, dst_reg, counter;
  };
  std::vector<Walk> walks;
  for (int64_t d : walked) walks.push_back({d, emitter.AllocSreg(), emitter.AllocSreg(), emitter.AllocSreg()});
  std::vector<DmaIndex> src_start(src.start.begin(), src.start.end());
  std::vector<DmaIndex> dst_start(dst.start.begin(), dst.start.end());
  for (const Walk& w : walks) {
    src_start[w.dim] = DmaIndex(w.src_reg, 0);
    dst_start[w.dim] = DmaIndex(w.dst_reg, 0);
  }
  ProgramBuilder& out = emitter.out();
  const std::string& name = emitter.context().instruction.name();
  uint32_t engine = 0;
  // Loop nest `level` over [first, first + count) of its dim.
  std::function<void(std::size_t, int64_t, int64_t)> nest = [&](std::size_t level, int64_t first, int64_t count) {
    const Walk& w = walks[level];
    const int64_t d = w.dim;
    out.Emit(isa::OPCODE_MOV, {S(w.src_reg), src.start[d] + first * src.step[d]});
    out.Emit(isa::OPCODE_MOV, {S(w.dst_reg), dst.start[d] + first * dst.step[d]});
    out.Emit(isa::OPCODE_MOV, {S(w.counter), count});
    const std::string label = out.NewLabel(name + ".walk");
    out.Bind(label);
    if (level + 1 < walks.size()) {
      nest(level + 1, 0, size[walks[level + 1].dim]);
    } else {
      emitter.Dma(src.array, src_start, dst.array, dst_start, box, engine);
    }
    out.Emit(isa::OPCODE_ADD, {S(w.src_reg), S(w.src_reg), src.step[d]});
    out.Emit(isa::OPCODE_ADD, {S(w.dst_reg), S(w.dst_reg), dst.step[d]});
    out.Emit(isa::OPCODE_LOOP, {S(w.counter), Label(label)});
  };
  // The outermost walk cut into one range per engine; each range's DMAs keep one engine's queue.
  const int64_t outer = size[walks[0].dim];
  const int64_t engines = emitter.engines();
  const int64_t per = (outer + engines - 1) / engines;
  int emitted_nests = 0;
  for (int64_t first = 0; first < outer; first += per) {
    engine = emitter.NextEngine();
    nest(0, first, std::min(per, outer - first));
    ++emitted_nests;
  }
  // Dma() counted each DMA once per textual occurrence; the loops run it `dmas` times in all.
  emitter.AddPendingDmas(dmas - emitted_nests);
}

}  // namespace tpusim::compiler
