// What a reduce kernel must do, decided before any code is emitted: the reducer's op, the
// operand seen as matrices [M, R, C] (M the product of the major dims, R rows on sublanes, C
// columns on lanes, as the TPU's T(8,128) tiles lay them out), which of those three kinds of dims
// are reduced, and where each output element lies in the output's tiled image. The emitter
// (reduce_kernel.cc) turns a plan into code; the --check bound (sim/output_check.cc) reads the op.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/hlo/reducer_pattern.h"
#include "compiler/lower/vtile.h"
#include "isa/program.pb.h"
#include "isa/shape.h"

namespace tpusim::compiler {

using hlo::ReduceOp;
using hlo::ReducerOpOf;

// The 32-bit register word x with op(a, x) == a for every a of `type` (f32 and bf16 are held as
// f32): float add's is -0, since +0 + -0 = +0 would turn a -0 accumulator into +0.
uint32_t IdentityBits(ReduceOp op, isa::ElementType type);


// How the reduced dims fall on the operand's tiles.
enum class ReduceKind {
  kMajor,    // only major dims (or none): whole tiles fold element-wise
  kLanes,    // the minor dim C (and maybe major dims): each row folds across lanes
  kRows,     // the second-minor dim R (and maybe major dims): each column folds across sublanes
  kBoth,     // R and C (and maybe major dims): each matrix folds to one value
};

struct ReducePlan {
  ReduceOp op = ReduceOp::kAdd;
  ReduceKind kind = ReduceKind::kMajor;
  isa::ElementType type = isa::ElementType::kF32;  // init, result and the values folded
  // The operand's elements as stored: `type`, or bf16 for an f32 reduce of bf16 values widened to
  // f32 (reduce(convert(x)), read through: PlanReduce given a bf16 operand and an f32 result).
  isa::ElementType load_type = isa::ElementType::kF32;
  VtileGeometry in;          // the operand's tiles (rank 1: one strip per tile)
  VtileGeometry out;         // the result's tiles
  std::vector<int64_t> major_dims;  // operand dims above R and C (rank 1: none)
  std::vector<bool> major_reduced;
  int64_t rows = 1;     // R (rank 1: the tile rows of the T(1024) image)
  int64_t columns = 1;  // C
  bool rank1 = false;   // the operand is rank 1 (T(1024)): one strip per tile, folded to a scalar
  int64_t reduced_elements = 1;  // operand elements folded into each output element
  // The operand and result with their dims in memory order (row-major layouts, the same bytes):
  // what the kernel reduces. The fields above describe these.
  isa::Shape operand;
  isa::Shape result;
};

// The plan for `reduce` with operand and result shapes `operand`, `result` (with layouts), or a
// CannotLower error naming why it is not lowered. A bf16 operand with an f32 result is read as
// bf16 and folded as its f32 values (the reduce's own operand is that array widened).
ReducePlan PlanReduce(const hlo::Instruction& reduce, const isa::Shape& operand, const isa::Shape& result,
                      int64_t sublanes, int64_t lanes);

// Where the reduce kernel keeps its state in VMEM, from address 0: the accumulators (32-bit words
// in the result's tiling), a bf16 stage for the store, and the fold scratch; the operand's
// double-buffered blocks go from `end` up.
struct ReduceVmemLayout {
  uint64_t accumulators = 0;
  uint64_t stage = 0;
  uint64_t scratch = 0;
  uint64_t end = 0;
  uint64_t strip_bytes = 0;  // one operand strip
  // Whether the state and two operand strips fit in `capacity` bytes.
  bool Fits(uint64_t capacity) const { return end + 2 * strip_bytes + 2 * 4096 <= capacity; }
};
ReduceVmemLayout PlanReduceVmem(const ReducePlan& plan, int64_t sublanes, int64_t lanes);

// The output index kept from operand matrix `matrix` (row-major over major_dims): the kept major
// dims' coordinates, in order.
std::vector<int64_t> KeptMajorIndex(const ReducePlan& plan, int64_t matrix);

// Word offset (32-bit words) of output element `index` in an image of the result with 32-bit
// words and the result's tiling (T(8,128) for rank >= 2, T(1024) for rank 1, one word for rank 0).
int64_t OutputWord(const isa::Shape& result, const std::vector<int64_t>& index, int64_t sublanes, int64_t lanes);

// The VPU instruction of `op` on 32-bit words: arithmetic in f32 or s32 (wrapping: the same bits
// for u32), the order in f32, u32 or s32, the bitwise ops on any.
isa::Opcode ReduceOpInstruction(hlo::ReduceOp op, bool is_float, bool is_unsigned);

}  // namespace tpusim::compiler
