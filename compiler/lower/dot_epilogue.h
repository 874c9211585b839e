// A dot's epilogue (output fusion, compiler/passes/dot_output_fusion.h): the element-wise
// operations the dot kernel applies to each vector register of accumulator sums as it reads them
// out, before it masks, packs and stores them, so that a bias, an activation or a convert never
// round-trips through HBM (XLA's TPU pipeline fuses a dot's element-wise consumers into its
// "convolution fusion" the same way).
//
// What an epilogue holds: the dot's result (f32 or bf16: a bf16 dot's sums rounded once, as the
// dot alone would store them), scalar constants, rank-1 arrays broadcast along the result's minor
// dim (a bias per output column), loaded once per kernel into VMEM and read per column tile with a
// stride-0 load (every sublane the same row), and arrays of the result's dims (a residual),
// whose box of each job the kernel loads into VMEM as the job starts; operations on f32 and bf16
// values (each bf16 result rounded to bf16, as the element-wise kernels do). Anything else (a
// per-row vector, pred values, integers) is refused with the reason, and the fusion pass then
// leaves the dot a kernel of its own.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "compiler/lower/program_builder.h"
#include "compiler/lower/elementwise_expr.h"
#include "compiler/lower/kernel.h"
#include "compiler/passes/buffer_assignment.h"
#include "compiler/passes/elementwise_fusion.h"

namespace tpusim::compiler {

struct DotEpilogue {
  // The operations over kernel operand 0, the dot's sums (kLoad), and the group's operands past
  // the dot's two (expression operand k >= 1 is the kernel's operand k + 1).
  ElementwiseExpr expr;
  std::vector<int> biases;           // kLoad nodes of rank-1 arrays broadcast along the minor dim
  std::vector<int> arrays;           // kLoad nodes of arrays of the result's dims
  std::vector<uint32_t> constants;   // distinct constant words, in first-use order
  int temps = 0;                     // vector registers its values need at most at once
  // Per node, where its value lives (assigned once, dot_epilogue.cc): -1 the read register, a
  // temp >= 0 (freed after the value's last use), or -2 - c for constant c.
  std::vector<int> registers;
  bool shifts_bf16 = false;          // a bf16 bias, widened by a shift of 16 (one more constant)
};

// The dot or convolution a kernel computes: the group's root, or the contraction of an output
// fusion (whose operands are the contraction's two, then its epilogue's).
const hlo::Instruction& ContractionOf(const KernelContext& context);

// The epilogue of `group`, a dot or convolution output fusion (FusedContraction(group) != nullptr),
// whose biases are vectors along result dim `column_dim` (a dot's last, a convolution's output
// feature dim). Throws (CannotLower, naming the group's root) where an operation or operand is not
// one an epilogue holds.
DotEpilogue BuildDotEpilogue(const KernelGroup& group, int64_t column_dim);

// Where an epilogue keeps its values while the dot kernel reads out: `temps` vector registers
// per copy from `temp0`, one per constant from `constant0` (the bf16 shift's last), and the scalar
// register holding the VMEM address of this job's first column in the first bias's row (bias b
// at `bias_stride` bytes after bias b - 1's).
// Array a's tiles of the job: the job's output stage's layout in the array's type, from VMEM at
// scalar register `array_base` + a x `array_stride`, `stage_tiles` column tiles a row of vregs.
struct DotEpilogueRegisters {
  int temp0 = 0;
  int constant0 = 0;
  int column_base = 0;
  uint64_t bias_stride = 0;
  int array_base = 0;
  uint64_t array_stride = 0;
  int64_t stage_tiles = 0;
};

// The vector register count an epilogue takes over `copies` read registers at once: its temps
// for each, and its constants.
int DotEpilogueVregs(const DotEpilogue& epilogue, int copies);

// The DMA of a bias's columns [first_column, first_column + columns) into its row at VMEM `vmem`
// (`row_words` words, at least `columns`): f32 words, a bf16 element in the low half of its word
// (the first of two packed rows), as EmitDotEpilogue reads it.
void EmitBiasRowDma(ProgramBuilder& out, const DeviceBuffer& bias, int64_t first_column, int64_t columns, int64_t row_words,
                    uint64_t vmem, uint32_t semaphore, uint32_t engine);

// Sets the constant registers (once, before the first read-out).
void EmitDotEpilogueConstants(ProgramBuilder& out, const DotEpilogue& epilogue, const DotEpilogueRegisters& regs);

// A tile of the job's output stage: row vreg `row` (of S rows), column tile `column`.
struct StageTile {
  int64_t row = 0;
  int64_t column = 0;
};

// Applies the epilogue to each of v`reads[i]`, the sums of stage tile `tiles[i]` (its column tile
// lanes x 4 bytes into each bias row), leaving the root's values there. Copy i's temps are `temps`
// registers from temp0 + i x temps.
void EmitDotEpilogue(ProgramBuilder& out, const DotEpilogue& epilogue, const DotEpilogueRegisters& regs,
                     const std::vector<int>& reads, const std::vector<StageTile>& tiles);

}  // namespace tpusim::compiler
