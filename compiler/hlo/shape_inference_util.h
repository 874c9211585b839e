// Internal to shape inference (shape_inference*.cc): the rules of each op family, and the checks
// they share. Every failure throws tpusim::Error starting with the instruction's Describe(), so the
// message says which instruction and where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/ir.h"
#include "isa/shape.h"

namespace tpusim::hlo::inference {

// ---- failing ----------------------------------------------------------------------------------

// Throws Error("<Describe()>: <message>").
[[noreturn]] void Fail(const Instruction& instruction, const std::string& message);

// Shapes and lists as messages quote them.
std::string Str(const isa::Shape& shape);  // no layout
std::string Str(const std::vector<int64_t>& values);  // {0,1}
std::string Quote(std::string_view name);  // 'name'

// ---- building shapes --------------------------------------------------------------------------

isa::Shape Array(isa::ElementType type, std::vector<int64_t> dims);
isa::Shape Scalar(isa::ElementType type);
// `shape` without layouts (recursively) and without dynamic-dim flags: the logical shape.
isa::Shape Logical(const isa::Shape& shape);
// The written shape, as the inferred shape of operations accepted as written.
isa::Shape Written(const Instruction& instruction);

// ---- operands ---------------------------------------------------------------------------------

// Checks the operand count against the opcode's (fixed, at least, or an even/odd count).
void CheckOperandCount(const Instruction& instruction);

// Operand `i`'s shape, which must be an array (a token is one, of type token); `role` names it in
// the message ("the predicate").
const isa::Shape& ArrayOperand(const Instruction& instruction, std::size_t i, std::string_view role = "");
// Operand `i`'s shape, which must be a tuple.
const isa::Shape& TupleOperand(const Instruction& instruction, std::size_t i, std::string_view role = "");
// Operand `i` must be a scalar; of an integer type when `integer`.
const isa::Shape& ScalarOperand(const Instruction& instruction, std::size_t i, std::string_view role,
                                bool integer = false);
// "operand 2" or the role given.
std::string OperandName(std::size_t i, std::string_view role);

// ---- attributes -------------------------------------------------------------------------------

// Checks 0 <= dimension < rank; `what` names the attribute ("dimensions", "index_vector_dim").
void CheckDimension(const Instruction& instruction, int64_t dimension, int64_t rank, std::string_view what);
// Checks every value is a dimension of a shape of `rank` and none repeats.
void CheckDimensions(const Instruction& instruction, const std::vector<int64_t>& dimensions, int64_t rank,
                     std::string_view what);
// An int list attribute, or `fallback` when it is missing.
const std::vector<int64_t>& IntListOr(const Instruction& instruction, std::string_view name,
                                      const std::vector<int64_t>& fallback);

// ---- element types ----------------------------------------------------------------------------

// Neither token nor opaque: values of the type can be computed with.
bool IsNumeric(isa::ElementType type);
// Both floating-point, or equal (XLA's SameElementTypeIgnoringFpPrecision).
bool SameTypeIgnoringFpPrecision(isa::ElementType a, isa::ElementType b);
// The component type of a complex type (c64 -> f32); other types unchanged.
isa::ElementType RealType(isa::ElementType type);
// Of the two, the one with more bits (floats preferred over ints): XLA's HigherPrecisionElementType.
isa::ElementType HigherPrecision(isa::ElementType a, isa::ElementType b);

// ---- called computations ----------------------------------------------------------------------

// The computation attribute `name` (to_apply, body, calls...).
const Computation& Called(const Instruction& instruction, std::string_view name);
// Checks that `computation` (the `role` of the instruction: "to_apply", "body") takes exactly
// `parameters`, shape for shape (ignoring layouts; floats of any precision where
// `ignore_fp_precision`).
void CheckParameters(const Instruction& instruction, std::string_view role, const Computation& computation,
                     const std::vector<isa::Shape>& parameters, bool ignore_fp_precision = false);
// Checks that `computation` returns `result` (layouts ignored).
void CheckResult(const Instruction& instruction, std::string_view role, const Computation& computation,
                 const isa::Shape& result, bool ignore_fp_precision = false);
// The shape of the root of `computation`, layouts removed.
isa::Shape RootShape(const Computation& computation);

// Checks a reducer (reduce, reduce-window, scatter, all-reduce): it takes 2N scalars, the first N
// of the accumulator types (`accumulators`), the other N of the input types (`inputs`; precision
// of floats may differ, as XLA allows), and returns the accumulators (a tuple when N > 1).
void CheckReducer(const Instruction& instruction, std::string_view role, const Computation& computation,
                  const std::vector<isa::ElementType>& accumulators, const std::vector<isa::ElementType>& inputs);

// ---- windows ----------------------------------------------------------------------------------

// One dimension's output size of a windowed operation (convolution, reduce-window,
// select-and-scatter), XLA's InferWindowOutputShape: the base dilated and padded, the window
// dilated, then strided. Throws (naming `dimension`) for a non-positive size, stride or dilation.
int64_t WindowOutputSize(const Instruction& instruction, int64_t base, const WindowDimension& window,
                         std::size_t dimension);

// ---- the op families (one file each) ----------------------------------------------------------

// shape_inference_elementwise.cc
isa::Shape InferUnary(const Instruction& instruction);          // abs ... tanh, copy
isa::Shape InferBinary(const Instruction& instruction);         // add ... xor, atan2, complex
isa::Shape InferCompare(const Instruction& instruction);
isa::Shape InferSelect(const Instruction& instruction);
isa::Shape InferClamp(const Instruction& instruction);
isa::Shape InferConvert(const Instruction& instruction);
isa::Shape InferBitcastConvert(const Instruction& instruction);
isa::Shape InferStochasticConvert(const Instruction& instruction);
isa::Shape InferReducePrecision(const Instruction& instruction);
isa::Shape InferMap(const Instruction& instruction);

// shape_inference_data_movement.cc
isa::Shape InferBroadcast(const Instruction& instruction);
isa::Shape InferReshape(const Instruction& instruction);
isa::Shape InferDynamicReshape(const Instruction& instruction);
isa::Shape InferTranspose(const Instruction& instruction);
isa::Shape InferSlice(const Instruction& instruction);
isa::Shape InferDynamicSlice(const Instruction& instruction);
isa::Shape InferDynamicUpdateSlice(const Instruction& instruction);
isa::Shape InferConcatenate(const Instruction& instruction);
isa::Shape InferPad(const Instruction& instruction);
isa::Shape InferReverse(const Instruction& instruction);
isa::Shape InferIota(const Instruction& instruction);

// shape_inference_gather_scatter.cc
isa::Shape InferGather(const Instruction& instruction);
isa::Shape InferScatter(const Instruction& instruction);

// shape_inference_contraction.cc
isa::Shape InferDot(const Instruction& instruction);
isa::Shape InferConvolution(const Instruction& instruction);

// shape_inference_reduction.cc
isa::Shape InferReduce(const Instruction& instruction);
isa::Shape InferReduceWindow(const Instruction& instruction);
isa::Shape InferSelectAndScatter(const Instruction& instruction);
isa::Shape InferSort(const Instruction& instruction);
isa::Shape InferTopK(const Instruction& instruction);
isa::Shape InferBatchNorm(const Instruction& instruction);  // training, inference, grad

// shape_inference_control.cc
isa::Shape InferParameter(const Instruction& instruction);
isa::Shape InferConstant(const Instruction& instruction);
isa::Shape InferTuple(const Instruction& instruction);
isa::Shape InferGetTupleElement(const Instruction& instruction);
isa::Shape InferWhile(const Instruction& instruction);
isa::Shape InferConditional(const Instruction& instruction);
isa::Shape InferCall(const Instruction& instruction);  // call, fusion
isa::Shape InferAsync(const Instruction& instruction);  // async-start, -update, -done

// shape_inference_collectives.cc
isa::Shape InferAllReduce(const Instruction& instruction);  // all-reduce, all-reduce-start
isa::Shape InferAllGather(const Instruction& instruction);  // all-gather, all-gather-start
isa::Shape InferReduceScatter(const Instruction& instruction);
isa::Shape InferAllToAll(const Instruction& instruction);
isa::Shape InferCollectivePermute(const Instruction& instruction);  // and -start
isa::Shape InferCollectiveDone(const Instruction& instruction);  // all-reduce/all-gather/permute -done

// shape_inference_misc.cc: tokens, side effects, random numbers, dynamic shapes, linear algebra.
isa::Shape InferAfterAll(const Instruction& instruction);
isa::Shape InferAddDependency(const Instruction& instruction);
isa::Shape InferInfeed(const Instruction& instruction);
isa::Shape InferOutfeed(const Instruction& instruction);
isa::Shape InferSend(const Instruction& instruction);
isa::Shape InferSendDone(const Instruction& instruction);
isa::Shape InferRecv(const Instruction& instruction);
isa::Shape InferRecvDone(const Instruction& instruction);
isa::Shape InferCopyStart(const Instruction& instruction);
isa::Shape InferCopyDone(const Instruction& instruction);
isa::Shape InferRng(const Instruction& instruction);
isa::Shape InferRngBitGenerator(const Instruction& instruction);
isa::Shape InferGetDimensionSize(const Instruction& instruction);
isa::Shape InferSetDimensionSize(const Instruction& instruction);
isa::Shape InferCholesky(const Instruction& instruction);
isa::Shape InferTriangularSolve(const Instruction& instruction);

}  // namespace tpusim::hlo::inference
