#include "compiler/lower/dot_general_kernel.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "compiler/lower/dma_region.h"
#include "compiler/lower/dot_kernel.h"
#include "compiler/lower/mxu_tiling.h"
#include "compiler/passes/layout_assignment.h"
#include "isa/layout_index.h"

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

}  // namespace

void EmitGeneralDotKernel(KernelContext& context) {
  const hlo::Instruction& dot = context.instruction;
  std::string why;
  if (CanonicalDot(dot, &why)) {
    EmitDotKernel(context);
    return;
  }
  if (context.operands.size() != 2 || context.results.size() != 1) CannotLower(dot, "expected two operands and one result");
  const DeviceBuffer& lhs = *context.operands[0].at(0);
  const DeviceBuffer& rhs = *context.operands[1].at(0);
  const DeviceBuffer& result = *context.results[0];
  const std::vector<int64_t> lb = dot.GetIntListOrEmpty("lhs_batch_dims");
  const std::vector<int64_t> rb = dot.GetIntListOrEmpty("rhs_batch_dims");
  const std::vector<int64_t> lc = dot.GetIntListOrEmpty("lhs_contracting_dims");
  const std::vector<int64_t> rc = dot.GetIntListOrEmpty("rhs_contracting_dims");
  if (lb.size() != rb.size() || lc.size() != rc.size()) CannotLower(dot, "its lhs and rhs dimension numbers differ in count");
  std::vector<int64_t> lf, rf;  // free dims in order
  for (int64_t d = 0; d < lhs.shape.rank(); ++d) {
    if (!Contains(lb, d) && !Contains(lc, d)) lf.push_back(d);
  }
  for (int64_t d = 0; d < rhs.shape.rank(); ++d) {
    if (!Contains(rb, d) && !Contains(rc, d)) rf.push_back(d);
  }
  const std::vector<int64_t> batch = Pick(lhs.shape.dims, lb);
  const int64_t m = Product(lhs.shape.dims, lf);
  const int64_t k = Product(lhs.shape.dims, lc);
  const int64_t n = Product(rhs.shape.dims, rf);
  const std::vector<int64_t> lhs_order = Cat(Cat(lb, lf), lc);
  const std::vector<int64_t> rhs_order = Cat(Cat(rb, rc), rf);
  const isa::ElementType in_type = lhs.shape.element_type;
  const isa::ElementType out_type = result.shape.element_type;
  const auto tiled = [](isa::ElementType type, const std::vector<int64_t>& dims) {
    return WithoutMemorySpace(WithDefaultLayouts(isa::Shape::Array(type, dims)));
  };

  Scratch scratch(context);
  const DeviceBuffer lhs_rows = scratch.Take(dot.name() + ".lhs_rows", RowMajorUntiled(in_type, Pick(lhs.shape.dims, lhs_order)), dot);
  const DeviceBuffer rhs_rows = scratch.Take(dot.name() + ".rhs_rows", RowMajorUntiled(rhs.shape.element_type, Pick(rhs.shape.dims, rhs_order)), dot);
  const DeviceBuffer lhs_canonical = scratch.Take(dot.name() + ".lhs", tiled(in_type, Cat(batch, {m, k})), dot);
  const DeviceBuffer rhs_canonical = scratch.Take(dot.name() + ".rhs", tiled(rhs.shape.element_type, Cat(batch, {k, n})), dot);
  const DeviceBuffer out_canonical = scratch.Take(dot.name() + ".out", tiled(out_type, Cat(batch, {m, n})), dot);
  const DeviceBuffer out_rows = scratch.Take(dot.name() + ".out_rows", RowMajorUntiled(out_type, Cat(batch, {m, n})), dot);

  const auto origin = [](std::size_t rank) { return std::vector<int64_t>(rank, 0); };
  // Operands: permuted view -> row-major untiled -> the merged dims' TPU layout.
  {
    DmaEmitter e(context);
    e.SplitDma(DmaArray{"hbm", lhs.address, PermutedView(lhs.shape, lhs_order)}, origin(lhs_order.size()),
               HbmArray(lhs_rows), origin(lhs_order.size()), lhs_rows.shape.dims);
    e.SplitDma(DmaArray{"hbm", rhs.address, PermutedView(rhs.shape, rhs_order)}, origin(rhs_order.size()),
               HbmArray(rhs_rows), origin(rhs_order.size()), rhs_rows.shape.dims);
    e.ZeroLayoutPadding(HbmArray(lhs_canonical));
    e.ZeroLayoutPadding(HbmArray(rhs_canonical));
    e.WaitDmas();
    DmaArray lhs_merged = HbmArray(lhs_rows);
    lhs_merged.shape = RowMajorUntiled(in_type, lhs_canonical.shape.dims);
    DmaArray rhs_merged = HbmArray(rhs_rows);
    rhs_merged.shape = RowMajorUntiled(rhs.shape.element_type, rhs_canonical.shape.dims);
    e.SplitDma(lhs_merged, origin(batch.size() + 2), HbmArray(lhs_canonical), origin(batch.size() + 2),
               lhs_canonical.shape.dims);
    e.SplitDma(rhs_merged, origin(batch.size() + 2), HbmArray(rhs_canonical), origin(batch.size() + 2),
               rhs_canonical.shape.dims);
    e.WaitDmas();
  }

  // The canonical dot, as instructions that live while it is emitted.
  const auto hbm = [](isa::Shape shape) {
    shape.layout->memory_space = isa::kMemorySpaceHbm;
    return shape;
  };
  hlo::Instruction lhs_leaf(dot.name() + ".lhs", Opcode::kParameter, hbm(lhs_canonical.shape));
  hlo::Instruction rhs_leaf(dot.name() + ".rhs", Opcode::kParameter, hbm(rhs_canonical.shape));
  hlo::Instruction canonical(dot.name(), Opcode::kDot, hbm(out_canonical.shape));
  canonical.DescribeAs(dot);
  canonical.AddOperand(&lhs_leaf);
  canonical.AddOperand(&rhs_leaf);
  std::vector<int64_t> batch_dims;
  for (std::size_t i = 0; i < batch.size(); ++i) batch_dims.push_back(static_cast<int64_t>(i));
  const auto nb = static_cast<int64_t>(batch.size());
  canonical.AddAttribute({"lhs_batch_dims", batch_dims, {}});
  canonical.AddAttribute({"rhs_batch_dims", batch_dims, {}});
  canonical.AddAttribute({"lhs_contracting_dims", std::vector<int64_t>{nb + 1}, {}});
  canonical.AddAttribute({"rhs_contracting_dims", std::vector<int64_t>{nb}, {}});
  DeviceBuffer lhs_in = lhs_canonical, rhs_in = rhs_canonical, out = out_canonical;
  lhs_in.shape = lhs_leaf.shape();
  rhs_in.shape = rhs_leaf.shape();
  out.shape = canonical.shape();
  KernelGroup group;
  group.root = &canonical;
  group.members = {&canonical};
  KernelContext inner{context.out, context.options, canonical, group, {{&lhs_in}, {&rhs_in}}, {&out},
                      scratch.next(), scratch.left()};
  EmitDotKernel(inner);

  // [batch..., M, N] -> row-major untiled (the result's dims' row-major image) -> the result.
  {
    DmaEmitter e(context);
    e.SplitDma(HbmArray(out_canonical), origin(batch.size() + 2), HbmArray(out_rows), origin(batch.size() + 2),
               out_rows.shape.dims);
    e.ZeroLayoutPadding(HbmArray(result));
    e.WaitDmas();
    DmaArray rows = HbmArray(out_rows);
    rows.shape = RowMajorUntiled(out_type, result.shape.dims);
    e.SplitDma(rows, origin(result.shape.rank()), HbmArray(result), origin(result.shape.rank()), result.shape.dims);
    e.WaitDmas();
  }
}

}  // namespace tpusim::compiler
