// The expression an element-wise kernel evaluates per tile: a DAG of element-wise HLO operations
// over the kernel's operands (streamed tiles of arrays with the output's dims, arrays broadcast
// to the output's dims, boxes of arrays read through array views, or scalars broadcast to every
// element) and scalar constants. Built from one element-wise instruction or
// from a fusion whose computation holds only such operations (plus scalar broadcasts, converts
// and same-shape copies/reshapes); anything else is refused with the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lower/array_view.h"
#include "compiler/passes/elementwise_fusion.h"
#include "isa/element_type.h"
#include "isa/program.pb.h"

namespace tpusim::compiler {

// How a value is held in a vector register: f32 words (f32, and bf16 rounded to bf16), 32-bit
// integers (s32, u32; s8 sign-extended and u8 zero-extended to 32 bits, so every 32-bit compare,
// min, max and convert to f32 is exact on them), or a mask register (pred).
enum class Domain { kFloat, kInt, kPred };

bool Is8Bit(isa::ElementType type);  // s8 or u8

struct ExprNode {
  // kRowFold: a row statistic broadcast back along its rows (RowFoldReduce): `hlo` is the reduce,
  // inputs[0] the value it folds, of the result's dims; every tile of a strip has the same value,
  // each row's fold in every lane.
  // kIota: an iota of the result's dims (`hlo`), its values computed from each element's index;
  // `bits` is its iota_dimension.
  enum class Kind { kLoad, kScalar, kConstant, kOp, kRowFold, kIota };
  Kind kind = Kind::kOp;
  const hlo::Instruction* hlo = nullptr;  // the operation (kOp), or the value's instruction
  isa::ElementType type = isa::ElementType::kF32;  // the value's element type
  std::vector<int> inputs;                // node numbers (kOp)
  int operand = -1;                       // kernel operand number (kLoad, kScalar)
  uint32_t bits = 0;                      // kConstant: the 32-bit word in its domain (pred: 0 or 1)
  // kLoad through a view (hlo == view too): a broadcast of an array, its operand kernel operand
  // `operand`, loaded into the result's tiles by replicating DMAs; or the top of an array view
  // (compiler/lower/array_view.h) of kernel operand `operand`, loaded by box DMAs. nullptr: a
  // plain load.
  const hlo::Instruction* view = nullptr;
  std::optional<ArrayView> box;  // an array view's box of its source (the kernel operand)
};

struct ElementwiseExpr {
  std::vector<ExprNode> nodes;  // operands before users
  std::vector<int> outputs;     // node of each result leaf
};

// The domain a type is held in by the VPU kernels; nullopt for a type they do not hold (f64, 16-
// and 64-bit integers, f8: compiler/passes/f8_conversion.h rewrites f8 into u8 first).
std::optional<Domain> HeldDomain(isa::ElementType type);
Domain DomainOf(isa::ElementType type);  // HeldDomain, or throws for a type the kernels do not hold

// Whether `opcode` is one the element-wise kernels compute.
bool IsElementwiseOpcode(hlo::Opcode opcode);

// The VPU's f32 instruction computing `opcode` on f32 words in one instruction of one or two
// vector operands, in the HLO operands' order (add: vadd.f32, tanh: vtanh.f32), if it has one.
std::optional<isa::Opcode> FloatVpuOpcode(hlo::Opcode opcode);

// Whether a reduce-precision keeps every value of its type (at least the type's own exponent and
// mantissa widths): then it is the identity, lowered as such.
bool KeepsEveryValue(const hlo::Instruction& reduce_precision);

// The expression of a kernel group (compiler/passes/elementwise_fusion.h): its members over its
// operands (kernel operand k is group.operands[k]), or, for a `fusion` instruction, the fused
// computation over its parameters. Throws (CannotLower) with the reason when it is not
// element-wise.
ElementwiseExpr BuildElementwiseExpr(const KernelGroup& group);

// The reduce when `broadcast` is a row statistic broadcast back along the rows it folds, which an
// element-wise kernel computes in its own registers (as XLA fuses a softmax's or a layer norm's
// reductions with their consumers): `broadcast(reduce(e, init), dimensions={0..r-2})` into e's
// dims, e of rank r >= 2 folded over its last (lane) dim by an add, maximum or minimum from the
// reducer's identity, in f32 or bf16 (folded in f32, a bf16 sum rounded once, as the reduce
// kernel does). nullptr for anything else.
const hlo::Instruction* RowFoldReduce(const hlo::Instruction& broadcast);
// Whether every one of `users` (reduce's, at least one) is such a broadcast of `reduce`: then its
// result need not exist outside the kernels that fold it.
bool OnlyRowFolded(const hlo::Instruction& reduce, const std::vector<const hlo::Instruction*>& users);

// Whether every element that is zero in every loaded operand is zero in node `node` (so the
// zero padding of the operands' tiles stays zero without masking).
bool PreservesZero(const ElementwiseExpr& expr, int node);

}  // namespace tpusim::compiler
