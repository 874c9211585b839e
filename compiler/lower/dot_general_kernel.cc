#include "compiler/lower/dot_general_kernel.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/dot_epilogue.h"
#include "compiler/lower/dot_kernel.h"
#include "compiler/lower/mxu_tiling.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/layout_index.h"
#include "isa/program_check.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;

bool Contains(const std::vector<int64_t>& list, int64_t value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

int64_t Product(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t product = 1;
  for (int64_t d : which) product *= dims[d];
  return product;
}


// The one dim of `dims` above 1 (the last where all are 1); nullopt where there are several.
std::optional<std::size_t> OnlyDimAboveOne(const std::vector<int64_t>& dims) {
  std::optional<std::size_t> found;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (found) return std::nullopt;
    found = d;
  }
  if (!found && !dims.empty()) found = dims.size() - 1;
  return found;
}

// HBM scratch handed out in order, 4 KiB aligned.
class Scratch {
 public:
  Scratch(const KernelContext& context) : base_(context.hbm_scratch_address), end_(base_ + context.hbm_scratch_bytes) {}

  DeviceBuffer Take(const std::string& name, const isa::Shape& shape, const hlo::Instruction& dot) {
    DeviceBuffer buffer;
    buffer.name = name;
    buffer.shape = shape;
    buffer.address = base_;
    buffer.size_bytes = isa::LayoutMap(shape).byte_size();
    base_ = AlignUp(base_ + std::max<uint64_t>(buffer.size_bytes, 1), kBufferAlignmentBytes);
    if (base_ > end_) CannotLower(dot, "its canonical operand and result copies do not fit in the free HBM");
    return buffer;
  }
  uint64_t next() const { return base_; }
  uint64_t left() const { return end_ > base_ ? end_ - base_ : 0; }

 private:
  uint64_t base_;
  uint64_t end_;
};

// dims[order[0]], dims[order[1]], ...
std::vector<int64_t> Pick(const std::vector<int64_t>& dims, const std::vector<int64_t>& order) {
  std::vector<int64_t> picked;
  for (int64_t d : order) picked.push_back(dims[d]);
  return picked;
}

std::vector<int64_t> Cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A TPU-layout array in no memory space.
isa::Shape TpuArray(isa::ElementType type, const std::vector<int64_t>& dims) {
  return WithoutMemorySpace(WithDefaultLayouts(isa::Shape::Array(type, dims)));
}

// The canonical result: the TPU's tiles in row-major order even where a dim is 1 (the layout
// default moves size-1 dims major: [M, 1]{0,1}), the only layout the dot kernel writes.
isa::Shape RowMajorTpuArray(isa::ElementType type, const std::vector<int64_t>& dims) {
  isa::Shape shape = isa::Shape::Array(type, dims);
  shape.layout = isa::DefaultTpuLayout(type, shape.rank());
  return WithoutMemorySpace(shape);
}

// An operand the dot kernel reads in place: its buffer seen as the canonical [batch..., M, K] or
// [batch..., K, N] array (or with the last two swapped), and which of those two contracts.
struct InPlaceOperand {
  DeviceBuffer buffer;
  int64_t contracting = 0;
};

// In place when the operand seen with its dims permuted to its batch dims, then its free and its
// contracting dims as two runs (either first; the free run in index order, the order M and N
// merge them in; the contracting run in the order the dot lists them, the order K merges them
// in), has the merged array's bytes (SameRowMajorImage). Llama's bf16[1,8192,4096] x
// bf16[4096,14336] is a plain matrix product on the operands' own bytes: copying them would be 4
// passes for nothing. The permutation is a bitcast where the layout has the dims in that order
// already (MaxText's attention probabilities [16,8,K=2048,M=2048,1]{2,3,4,1,0}, K minor: the
// canonical [batch, M, K], 1 GB a layer that a copy would need).
std::optional<InPlaceOperand> InPlace(const DeviceBuffer& operand, const std::vector<int64_t>& batch,
                                      const std::vector<int64_t>& free, const std::vector<int64_t>& contracting) {
  const auto nb = static_cast<int64_t>(batch.size());
  for (const bool free_first : {true, false}) {
    const std::vector<int64_t>& first = free_first ? free : contracting;
    const std::vector<int64_t>& second = free_first ? contracting : free;
    std::vector<int64_t> dims = Pick(operand.shape.dims, batch);
    dims.insert(dims.end(), {Product(operand.shape.dims, first), Product(operand.shape.dims, second)});
    InPlaceOperand in_place{operand, free_first ? nb + 1 : nb};
    in_place.buffer.shape = TpuArray(operand.shape.element_type, dims);
    if (SameRowMajorImage(PermutedView(operand.shape, Cat(Cat(batch, first), second)), in_place.buffer.shape)) return in_place;
  }
  return std::nullopt;
}

// The dot's dims grouped: each operand's batch, free and contracting dims, and the canonical
// [batch..., M, K] x [batch..., K, N] sizes. `swapped`: the canonical dot's lhs is the HLO's rhs
// and its rhs the HLO's lhs (dot(a, b) = transpose(dot(b, a)), the result's bytes being those of
// the transpose: Transposes).
struct GeneralDims {
  std::vector<int64_t> lb, rb, lc, rc, lf, rf;
  std::vector<int64_t> batch;
  int64_t m = 0, k = 0, n = 0;
  bool swapped = false;
  // Which side's outer free dims became the batch dims (BatchOuterFreeDims): 0 lhs, 1 rhs, -1 none.
  // The other side is then replicated once per batch element.
  int outer_side = -1;
};

// Whether the result [batch..., M..., N...] holds the bytes of the canonical transposed result
// [batch..., N, M] and not those of [batch..., M, N]: a matrix-vector product's [M, 1]{0,1} is
// the row [1, M]. The dot is then computed as dot(rhs, lhs), written in place.
bool Transposes(const isa::Shape& result, const GeneralDims& g) {
  const auto nb = static_cast<int64_t>(g.batch.size());
  const auto m_dims = static_cast<int64_t>(g.lf.size());
  const int64_t rank = result.rank();
  if (SameRowMajorImage(result, RowMajorTpuArray(result.element_type, Cat(g.batch, {g.m, g.n})))) return false;
  std::vector<int64_t> order(static_cast<std::size_t>(nb));
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t d = nb + m_dims; d < rank; ++d) order.push_back(d);
  for (int64_t d = nb; d < nb + m_dims; ++d) order.push_back(d);
  return SameRowMajorImage(PermutedView(result, order), RowMajorTpuArray(result.element_type, Cat(g.batch, {g.n, g.m})));
}

// Weights whose free dims sit on both sides of their contracting run (Gemma 3's query projection
// `bf16[1,11,1152] x bf16[4,1152,256]`: a [1152, 256] matrix for each of 4 heads) are no [K, N]
// matrix as they lie, and copying them into one moves every weight twice more. Where the dot has
// no batch dims and the other operand is in place and smaller than the weights by the outer dims'
// count, the outer free dims become batch dims instead: each batch element is a plain product
// of the weights' own [K, inner] matrix (read in place) and a replica of the other operand (H
// copies of it in scratch), and the canonical result [outer..., M, N] is copied to the result's
// dims. The query projection: 11.0 -> 5.6 us (the weights at HBM's bandwidth: 1.9 us).
void BatchOuterFreeDims(const KernelContext& context, GeneralDims& g) {
  if (!g.batch.empty() || g.swapped) return;
  for (int side = 1; side >= 0; --side) {
    const DeviceBuffer& weights = *context.operands[side].at(0);
    const DeviceBuffer& other = *context.operands[1 - side].at(0);
    const std::vector<int64_t>& free = side == 0 ? g.lf : g.rf;
    const std::vector<int64_t>& contracting = side == 0 ? g.lc : g.rc;
    // The free dims before the first contracting dim, and after.
    const int64_t first = *std::min_element(contracting.begin(), contracting.end());
    std::vector<int64_t> outer, inner;
    for (int64_t d : free) (d < first ? outer : inner).push_back(d);
    if (outer.empty() || inner.empty()) continue;
    if (!InPlace(weights, outer, inner, contracting)) continue;
    if (!InPlace(other, {}, side == 0 ? g.rf : g.lf, side == 0 ? g.rc : g.lc)) continue;
    const int64_t copies = Product(weights.shape.dims, outer);
    if (static_cast<double>(copies) * static_cast<double>(other.size_bytes) >= static_cast<double>(weights.size_bytes)) continue;
    g.outer_side = side;
    g.batch = Pick(weights.shape.dims, outer);
    if (side == 0) {
      g.lb = outer;
      g.lf = inner;
      g.m = Product(weights.shape.dims, inner);
    } else {
      g.rb = outer;
      g.rf = inner;
      g.n = Product(weights.shape.dims, inner);
    }
    return;
  }
}

GeneralDims DimsOf(const KernelContext& context) {
  const hlo::Instruction& dot = ContractionOf(context);
  if (context.operands.size() < 2 || context.results.size() != 1) CannotLower(dot, "expected two operands and one result");
  const isa::Shape& lhs = context.operands[0].at(0)->shape;
  const isa::Shape& rhs = context.operands[1].at(0)->shape;
  GeneralDims g;
  g.lb = dot.GetIntListOrEmpty("lhs_batch_dims");
  g.rb = dot.GetIntListOrEmpty("rhs_batch_dims");
  g.lc = dot.GetIntListOrEmpty("lhs_contracting_dims");
  g.rc = dot.GetIntListOrEmpty("rhs_contracting_dims");
  if (g.lb.size() != g.rb.size() || g.lc.size() != g.rc.size()) {
    CannotLower(dot, "its lhs and rhs dimension numbers differ in count");
  }
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (!Contains(g.lb, d) && !Contains(g.lc, d)) g.lf.push_back(d);  // free dims in order
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (!Contains(g.rb, d) && !Contains(g.rc, d)) g.rf.push_back(d);
  }
  g.batch = Pick(lhs.dims, g.lb);
  g.m = Product(lhs.dims, g.lf);
  g.k = Product(lhs.dims, g.lc);
  g.n = Product(rhs.dims, g.rf);
  if (Transposes(context.results.at(0)->shape, g)) {
    std::swap(g.lb, g.rb);
    std::swap(g.lc, g.rc);
    std::swap(g.lf, g.rf);
    std::swap(g.m, g.n);
    g.swapped = true;
  }
  BatchOuterFreeDims(context, g);
  return g;
}

// Boxes a one-pass copy between an operand (or result) and its canonical array may take: one per
// index of the merged runs' outer dims (each box a DMA's issue on the scalar core); past it the
// copy goes through a row-major untiled image instead (two passes, a few boxes).
constexpr int64_t kMaxMergeBoxes = 256;

// The boxes of EmitMergeCopy for a split array of `dims`: one per index of its runs' dims other than
// their innermost (0 where the runs are not both there).
int64_t MergeBoxes(const std::vector<int64_t>& dims, std::size_t batch, std::size_t first) {
  const std::size_t rank = dims.size();
  if (first == 0 || rank < batch + first + 1) return 0;
  int64_t boxes = 1;
  for (std::size_t d = batch; d < rank; ++d) {
    if (d != batch + first - 1 && d != rank - 1) boxes *= dims[d];
  }
  return boxes;
}

// Whether EmitMergeCopy takes the split array `dims`. Runs shorter than a vector register's
// lanes are walked element by element either way.
bool MergeCopyFits(const std::vector<int64_t>& dims, std::size_t batch, std::size_t first, const isa::Target& target) {
  const int64_t boxes = MergeBoxes(dims, batch, first);
  return boxes > 0 && boxes <= kMaxMergeBoxes && dims.back() >= target.lanes();
}

// The copy between `split` -- dims [batch..., run 1 (`first` dims), run 2 (the rest)], the order
// the canonical array merges them in -- and `merged` = [batch..., product of run 1, product of run
// 2] (`to_merged`: split -> merged, else merged -> split), as one box per index of the runs' dims
// other than their innermost, which are contiguous in both (each box [1.., d1, 1.., d2]: the merged
// array seen in the split one's rank, run dims other than the innermost of size 1). The boxes
// move each byte once, where the untiled image moves it twice. False (nothing emitted) past
// kMaxMergeBoxes boxes, or where the innermost dim is shorter than the vector lanes.
bool EmitMergeCopy(DmaEmitter& e, const DmaArray& split, const DmaArray& merged, std::size_t batch, std::size_t first,
                   bool to_merged) {
  const std::vector<int64_t>& dims = split.shape.dims;
  const std::size_t rank = dims.size();
  const std::size_t inner1 = batch + first - 1;  // each run's innermost dim
  const std::size_t inner2 = rank - 1;
  if (!MergeCopyFits(dims, batch, first, e.out().target())) return false;
  const int64_t boxes = MergeBoxes(dims, batch, first);
  std::vector<int64_t> dim_map(batch + 2);
  std::iota(dim_map.begin(), dim_map.begin() + static_cast<std::ptrdiff_t>(batch), int64_t{0});
  dim_map[batch] = static_cast<int64_t>(inner1);
  dim_map[batch + 1] = static_cast<int64_t>(inner2);
  const DmaArray wide{merged.space, merged.address, ExpandedView(merged.shape, static_cast<int64_t>(rank), dim_map)};
  std::vector<int64_t> size(rank, 1);
  for (std::size_t d = 0; d < batch; ++d) size[d] = dims[d];
  size[inner1] = dims[inner1];
  size[inner2] = dims[inner2];
  std::vector<int64_t> index(rank, 0);  // over the outer run dims, the last fastest
  for (int64_t box = 0; box < boxes; ++box) {
    // Where the box starts in the merged array: each run's outer indices, row-major, times its
    // innermost dim.
    std::vector<int64_t> at(rank, 0);
    int64_t offset1 = 0, offset2 = 0;
    for (std::size_t d = batch; d < inner1; ++d) offset1 = offset1 * dims[d] + index[d];
    for (std::size_t d = inner1 + 1; d < inner2; ++d) offset2 = offset2 * dims[d] + index[d];
    at[inner1] = offset1 * dims[inner1];
    at[inner2] = offset2 * dims[inner2];
    if (to_merged) {
      e.SplitDma(split, index, wide, at, size);
    } else {
      e.SplitDma(wide, at, split, index, size);
    }
    for (std::size_t d = rank; d-- > batch;) {
      if (d == inner1 || d == inner2) continue;
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return true;
}

bool DotKernelTakesAsWritten(const KernelContext& context) {
  std::string why;
  return CanonicalDot(ContractionOf(context), &why) && context.results.size() == 1 &&
         DotKernelWritesLayout(context.results[0]->shape);
}

}  // namespace

int GeneralDotCoreParts(const KernelContext& context) {
  if (DotKernelTakesAsWritten(context)) return DotCoreParts(context);
  const int cores = static_cast<int>(isa::TensorCores(context.options.target));
  if (cores <= 1) return 1;
  // The canonical dot's split (DotCoreSlice), which the copies around it do not change.
  const GeneralDims g = DimsOf(context);
  DotForm form;
  form.batch_dims = g.batch;
  for (int64_t b : g.batch) form.batch *= b;
  form.m = g.m;
  form.k = g.k;
  form.n = g.n;
  DeviceBuffer canonical;
  canonical.shape = RowMajorTpuArray(context.results[0]->shape.element_type, Cat(g.batch, {g.m, g.n}));
  const CoreSlice last = DotCoreSlice(form, context.options, {cores - 1, cores}, canonical,
                                      context.operands.at(0).at(0)->shape.element_type);
  return last.end > last.first ? cores : 1;
}

void EmitGeneralDotKernel(KernelContext& context) {
  const hlo::Instruction& dot = ContractionOf(context);
  // A dot output fusion's epilogue runs in the canonical dot's read-out: only where the canonical
  // result is the result in place (so the epilogue's values land as the root's), its columns the
  // result's minor dim (a bias row along it).
  std::optional<DotEpilogue> epilogue;
  if (&dot != &context.instruction) epilogue = BuildDotEpilogue(context.group, dot.shape().rank() - 1);
  const DotEpilogue* epilogue_ptr = epilogue ? &*epilogue : nullptr;
  if (DotKernelTakesAsWritten(context)) {
    EmitDotKernel(context, *CanonicalDot(dot, nullptr), epilogue_ptr);
    return;
  }
  const auto [lb, rb, lc, rc, lf, rf, batch, m, k, n, swapped, outer_side] = DimsOf(context);
  const DeviceBuffer& lhs = *context.operands[swapped ? 1 : 0].at(0);
  const DeviceBuffer& rhs = *context.operands[swapped ? 0 : 1].at(0);
  const DeviceBuffer& result = *context.results[0];
  // Megacore: the cores split the canonical dot; core 0 alone makes the copies before and after
  // it, the cores meeting (core.sync) between.
  const bool split = context.part.count > 1;
  const bool copier = context.part.index == 0;
  const std::vector<int64_t> lhs_order = Cat(Cat(lb, lf), lc);
  const std::vector<int64_t> rhs_order = Cat(Cat(rb, rc), rf);
  const isa::ElementType in_type = lhs.shape.element_type;
  const isa::ElementType out_type = result.shape.element_type;

  Scratch scratch(context);
  const auto nb = static_cast<int64_t>(batch.size());
  // Each side is read (or written) in place when its bytes already are the canonical array's,
  // else copied through scratch; or, the side replicated where the other's outer free dims are the
  // batch dims (BatchOuterFreeDims), copied once per batch element from its in-place view.
  const bool replicate_lhs = outer_side == 1, replicate_rhs = outer_side == 0;
  const std::optional<InPlaceOperand> replica =
      replicate_lhs ? InPlace(lhs, {}, lf, lc) : replicate_rhs ? InPlace(rhs, {}, rf, rc) : std::nullopt;
  const std::optional<InPlaceOperand> lhs_side = replicate_lhs ? std::nullopt : InPlace(lhs, lb, lf, lc);
  const std::optional<InPlaceOperand> rhs_side = replicate_rhs ? std::nullopt : InPlace(rhs, rb, rf, rc);
  const bool lhs_copied = !lhs_side && !replicate_lhs, rhs_copied = !rhs_side && !replicate_rhs;
  // With the rhs's outer dims as the batch, the result's dims are [lhs free..., outer..., inner...]
  // and the canonical result's [outer..., M, N]: never the same elements in the same places.
  const bool out_reordered = outer_side == 1;
  const bool out_in_place =
      swapped || (!out_reordered && SameRowMajorImage(result.shape, RowMajorTpuArray(out_type, Cat(batch, {m, n}))));
  // A result whose dims are the canonical ones in another layout (a matrix-vector product's
  // [M, 1]{0,1}: the default layout puts size-1 dims major) is one re-tiling DMA away from the
  // canonical result, not two through untiled rows (which merge or split dims).
  const bool out_same_dims = !out_reordered && result.shape.dims == Cat(batch, {m, n});
  const auto replicated = [&](const std::string& name) {
    return scratch.Take(name, TpuArray(replica->buffer.shape.element_type, Cat(batch, replica->buffer.shape.dims)), dot);
  };
  DeviceBuffer lhs_rows, rhs_rows, lhs_canonical, rhs_canonical, out_canonical, out_rows;
  lhs_canonical = lhs_side        ? lhs_side->buffer
                  : replicate_lhs ? replicated(dot.name() + ".lhs")
                                  : scratch.Take(dot.name() + ".lhs", TpuArray(in_type, Cat(batch, {m, k})), dot);
  rhs_canonical = rhs_side        ? rhs_side->buffer
                  : replicate_rhs ? replicated(dot.name() + ".rhs")
                                  : scratch.Take(dot.name() + ".rhs", TpuArray(rhs.shape.element_type, Cat(batch, {k, n})), dot);
  if (out_in_place) {
    out_canonical = result;
    out_canonical.shape = RowMajorTpuArray(out_type, Cat(batch, {m, n}));
  } else {
    out_canonical = scratch.Take(dot.name() + ".out", RowMajorTpuArray(out_type, Cat(batch, {m, n})), dot);
  }

  const auto origin = [](std::size_t rank) { return std::vector<int64_t>(rank, 0); };
  const std::size_t batch_rank = batch.size();
  // Operands: the permuted view straight into the merged dims' TPU layout (EmitMergeCopy), else
  // through a row-major untiled image; the untiled images' first pass and the canonical arrays'
  // padding zeroes go out together.
  const bool copies_before = lhs_copied || rhs_copied || replica;
  if (copies_before && copier) {
    DmaEmitter e(context);
    struct Copy {
      DmaArray view;
      const DeviceBuffer* canonical;
      std::size_t first_run;
      std::optional<DmaArray> rows;  // the untiled image, seen with the canonical dims
    };
    std::vector<Copy> copies;
    if (lhs_copied) copies.push_back({{isa::MEMORY_SPACE_HBM, lhs.address, PermutedView(lhs.shape, lhs_order)}, &lhs_canonical, lf.size(), {}});
    if (rhs_copied) copies.push_back({{isa::MEMORY_SPACE_HBM, rhs.address, PermutedView(rhs.shape, rhs_order)}, &rhs_canonical, rc.size(), {}});
    if (replica) {
      // One box of the whole in-place view per batch index, into that element of the canonical array.
      const DeviceBuffer& canonical = replicate_lhs ? lhs_canonical : rhs_canonical;
      e.ZeroLayoutPadding(HbmArray(canonical));
      const std::vector<int64_t>& dims = replica->buffer.shape.dims;
      const DmaArray source{isa::MEMORY_SPACE_HBM, replica->buffer.address, ExpandedView(replica->buffer.shape, nb + 2, {nb, nb + 1})};
      std::vector<int64_t> index(static_cast<std::size_t>(nb), 0);
      int64_t elements = 1;
      for (int64_t b : batch) elements *= b;
      for (int64_t element = 0; element < elements; ++element) {
        e.SplitDma(source, origin(static_cast<std::size_t>(nb) + 2), HbmArray(canonical), Cat(index, {0, 0}),
                   Cat(std::vector<int64_t>(static_cast<std::size_t>(nb), 1), dims));
        for (auto d = static_cast<std::size_t>(nb); d-- > 0;) {
          if (++index[d] < batch[d]) break;
          index[d] = 0;
        }
      }
    }
    for (Copy& copy : copies) {
      if (MergeCopyFits(copy.view.shape.dims, batch_rank, copy.first_run, context.options.target)) continue;
      const DeviceBuffer rows = scratch.Take(copy.canonical->name + "_rows",
                                             RowMajorUntiled(copy.canonical->shape.element_type, copy.view.shape.dims), dot);
      e.SplitDma(copy.view, origin(copy.view.shape.rank()), HbmArray(rows), origin(rows.shape.rank()), rows.shape.dims);
      copy.rows = HbmArray(rows);
      copy.rows->shape = RowMajorUntiled(copy.canonical->shape.element_type, copy.canonical->shape.dims);
    }
    for (const Copy& copy : copies) e.ZeroLayoutPadding(HbmArray(*copy.canonical));
    e.WaitDmas();
    for (const Copy& copy : copies) {
      if (copy.rows) {
        e.SplitDma(*copy.rows, origin(batch_rank + 2), HbmArray(*copy.canonical), origin(batch_rank + 2),
                   copy.canonical->shape.dims);
      } else {
        EmitMergeCopy(e, copy.view, HbmArray(*copy.canonical), batch_rank, copy.first_run, true);
      }
    }
    e.WaitDmas();
  }

  // The canonical dot of the copies (or of the operands in place).
  const auto hbm = [](isa::Shape shape) {
    shape.layout->memory_space = isa::kMemorySpaceHbm;
    return shape;
  };
  std::vector<int64_t> batch_dims;
  for (std::size_t i = 0; i < batch.size(); ++i) batch_dims.push_back(static_cast<int64_t>(i));
  const int64_t lhs_contracting = lhs_side ? lhs_side->contracting : replicate_lhs ? nb + replica->contracting : nb + 1;
  const int64_t rhs_contracting = rhs_side ? rhs_side->contracting : replicate_rhs ? nb + replica->contracting : nb;
  DeviceBuffer lhs_in = lhs_canonical, rhs_in = rhs_canonical, out = out_canonical;
  lhs_in.shape = hbm(lhs_canonical.shape);
  rhs_in.shape = hbm(rhs_canonical.shape);
  out.shape = hbm(out_canonical.shape);
  std::string why;
  const std::optional<DotForm> form =
      CanonicalDot(lhs_in.shape, rhs_in.shape, {batch_dims, batch_dims, {lhs_contracting}, {rhs_contracting}}, &why);
  if (!form) CannotLower(dot, why);
  KernelContext inner{context.out, context.options, dot, context.group, {{&lhs_in}, {&rhs_in}}, {&out},
                      scratch.next(), scratch.left(), context.part};
  if (epilogue) {
    if (!out_in_place || swapped || out_reordered || (!epilogue->biases.empty() && rf.size() != 1)) {
      CannotLower(dot, "its epilogue needs the canonical result in place, its columns the result's minor dim");
    }
    inner.operands.insert(inner.operands.end(), context.operands.begin() + 2, context.operands.end());
  }
  if (split && copies_before) context.out.Emit(isa::OPCODE_CORE_SYNC);  // the operands' copies are done
  EmitDotKernel(inner, *form, epilogue_ptr);
  if (split && !out_in_place) context.out.Emit(isa::OPCODE_CORE_SYNC);  // every core's part of the result is in
  if (!copier) return;

  // The canonical result through a row-major untiled image in scratch, whose bytes seen as
  // `rows_view` (the result's dims) are the last DMA's source.
  const auto out_through_rows = [&](DmaEmitter& e, const isa::Shape& rows_view) {
    out_rows = scratch.Take(dot.name() + ".out_rows", RowMajorUntiled(out_type, Cat(batch, {m, n})), dot);
    e.SplitDma(HbmArray(out_canonical), origin(batch.size() + 2), HbmArray(out_rows), origin(batch.size() + 2),
               out_rows.shape.dims);
    e.WaitDmas();
    DmaArray rows = HbmArray(out_rows);
    rows.shape = rows_view;
    e.SplitDma(rows, origin(result.shape.rank()), HbmArray(result), origin(result.shape.rank()), result.shape.dims);
    e.WaitDmas();
  };
  if (out_reordered) {
    // [outer..., M, N] -> the result [lhs free..., outer..., inner...]. Where M and N are each one
    // dim of the result with the others of size 1 (the query projection's [1, 11] and [256]), the
    // canonical array seen in the result's dims is one DMA's source; else through a row-major
    // untiled image, seen with the split dims and permuted into the result's order.
    DmaEmitter e(context);
    e.ZeroLayoutPadding(HbmArray(result));
    const std::vector<int64_t> free = Pick(lhs.shape.dims, lf), inner = Pick(rhs.shape.dims, rf);
    const std::optional<std::size_t> free_dim = OnlyDimAboveOne(free), inner_dim = OnlyDimAboveOne(inner);
    if (free_dim && inner_dim) {
      std::vector<int64_t> dim_map;  // canonical dim -> result dim
      for (std::size_t d = 0; d < batch.size(); ++d) dim_map.push_back(static_cast<int64_t>(free.size() + d));
      dim_map.push_back(static_cast<int64_t>(*free_dim));
      dim_map.push_back(static_cast<int64_t>(free.size() + batch.size() + *inner_dim));
      const DmaArray view{isa::MEMORY_SPACE_HBM, out_canonical.address, ExpandedView(out_canonical.shape, result.shape.rank(), dim_map)};
      e.SplitDma(view, origin(result.shape.rank()), HbmArray(result), origin(result.shape.rank()), result.shape.dims);
      e.WaitDmas();
      return;
    }
    std::vector<int64_t> order;  // the result's dims as dims of the rows: free, outer, inner
    for (std::size_t d = 0; d < free.size(); ++d) order.push_back(static_cast<int64_t>(batch.size() + d));
    for (std::size_t d = 0; d < batch.size(); ++d) order.push_back(static_cast<int64_t>(d));
    for (std::size_t d = 0; d < inner.size(); ++d) order.push_back(static_cast<int64_t>(batch.size() + free.size() + d));
    out_through_rows(e, PermutedView(RowMajorUntiled(out_type, Cat(Cat(batch, free), inner)), order));
    return;
  }
  if (!out_in_place && out_same_dims) {
    DmaEmitter e(context);
    e.ZeroLayoutPadding(HbmArray(result));
    e.WaitDmas();
    e.SplitDma(HbmArray(out_canonical), origin(result.shape.rank()), HbmArray(result), origin(result.shape.rank()),
               result.shape.dims);
    e.WaitDmas();
  }
  // [batch..., M, N] -> the result [batch..., M dims..., N dims...], one pass (EmitMergeCopy), else
  // through a row-major untiled image of the result's dims.
  if (!out_in_place && !out_same_dims) {
    DmaEmitter e(context);
    e.ZeroLayoutPadding(HbmArray(result));
    e.WaitDmas();
    if (EmitMergeCopy(e, HbmArray(result), HbmArray(out_canonical), batch.size(), lf.size(), false)) {
      e.WaitDmas();
      return;
    }
    out_through_rows(e, RowMajorUntiled(out_type, result.shape.dims));
  }
}

}  // namespace tpusim::compiler
