// Tokens and side effects (after-all, add-dependency, infeed/outfeed, send/recv), asynchronous
// copies, random numbers, dynamic dimension sizes, and the linear-algebra ops. Where a result
// holds data only the text describes (infeed, recv, rng, rng-bit-generator's output), that part is
// taken as written and the rest is inferred.
#include <string>

#include "compiler/hlo/shape_inference.h"
#include "compiler/hlo/shape_inference_util.h"

namespace tpusim::hlo::inference {

using isa::ElementType;
using isa::Shape;

namespace {

Shape Token() { return Scalar(ElementType::kToken); }

void RequireToken(const Instruction& instruction, std::size_t i) {
  const Shape& shape = instruction.operand(i)->shape();
  if (shape.is_tuple || shape.element_type != ElementType::kToken) {
    Fail(instruction, "operand " + std::to_string(i) + " of " + std::string(OpcodeName(instruction.opcode())) +
                          " must be a token, got " + Str(shape));
  }
}

// The written result, which must be a tuple of `size` whose last element is a token (infeed,
// recv): the data part is as written.
const Shape& WrittenTuple(const Instruction& instruction, std::size_t size) {
  const Shape& written = instruction.shape();
  if (!written.is_tuple || written.tuple_shapes.size() != size) {
    Fail(instruction, std::string(OpcodeName(instruction.opcode())) + " produces a " + std::to_string(size) +
                          "-element tuple, written " + Str(written));
  }
  return written;
}

}  // namespace

Shape InferAfterAll(const Instruction& instruction) {
  for (std::size_t i = 0; i < instruction.operand_count(); ++i) RequireToken(instruction, i);
  return Token();
}

Shape InferAddDependency(const Instruction& instruction) {
  // add-dependency(value, token): the value, ordered after the token.
  RequireToken(instruction, 1);
  return Logical(instruction.operand(0)->shape());
}

Shape InferInfeed(const Instruction& instruction) {
  RequireToken(instruction, 0);
  return Shape::Tuple({Logical(WrittenTuple(instruction, 2).tuple_shapes[0]), Token()});
}

Shape InferOutfeed(const Instruction& instruction) {
  RequireToken(instruction, 1);
  return Token();
}

Shape InferSend(const Instruction& instruction) {
  // (data, context, token): the context is a u32 request id.
  RequireToken(instruction, 1);
  return Shape::Tuple({Logical(instruction.operand(0)->shape()), Scalar(ElementType::kU32), Token()});
}

Shape InferSendDone(const Instruction& instruction) {
  TupleOperand(instruction, 0, "the send");
  return Token();
}

Shape InferRecv(const Instruction& instruction) {
  RequireToken(instruction, 0);
  return Shape::Tuple({Logical(WrittenTuple(instruction, 3).tuple_shapes[0]), Scalar(ElementType::kU32), Token()});
}

Shape InferRecvDone(const Instruction& instruction) {
  const Shape& recv = TupleOperand(instruction, 0, "the recv");
  if (recv.tuple_shapes.empty()) Fail(instruction, "the recv " + Str(recv) + " of recv-done holds no data");
  return Shape::Tuple({Logical(recv.tuple_shapes[0]), Token()});
}

Shape InferCopyStart(const Instruction& instruction) {
  // (destination, source, context): both buffers have the operand's shape (in their own memory
  // spaces, which are layouts and so not compared).
  const Shape operand = Logical(instruction.operand(0)->shape());
  return Shape::Tuple({operand, operand, Scalar(ElementType::kU32)});
}

Shape InferCopyDone(const Instruction& instruction) {
  const Shape& start = TupleOperand(instruction, 0, "the copy-start");
  if (start.tuple_shapes.empty()) Fail(instruction, "the copy-start " + Str(start) + " of copy-done is empty");
  return Logical(start.tuple_shapes[0]);
}

Shape InferRng(const Instruction& instruction) {
  // rng(a, b): uniform in [a, b) or normal with mean a and deviation b; the text gives the dims.
  const Shape& a = ScalarOperand(instruction, 0, "a");
  const Shape& b = ScalarOperand(instruction, 1, "b");
  if (a.element_type != b.element_type) {
    Fail(instruction, "the parameters " + Str(a) + " and " + Str(b) + " of rng differ in type");
  }
  const std::string& distribution = instruction.GetIdentifier("distribution");
  if (distribution == "rng_normal" && !isa::IsFloat(a.element_type)) {
    Fail(instruction, "rng_normal needs floating-point parameters, got " + Str(a));
  }
  if (distribution != "rng_normal" && distribution != "rng_uniform") {
    Fail(instruction, "rng distribution '" + distribution + "' is not rng_uniform or rng_normal");
  }
  const Shape& written = instruction.shape();
  if (written.is_tuple) Fail(instruction, "rng produces an array, written " + Str(written));
  return Array(a.element_type, written.dims);
}

Shape InferRngBitGenerator(const Instruction& instruction) {
  // (new state, random bits): the state keeps its shape; the bits are as the text writes them.
  const Shape& state = ArrayOperand(instruction, 0, "the state");
  const Shape& written = WrittenTuple(instruction, 2);
  return Shape::Tuple({Array(state.element_type, state.dims), Logical(written.tuple_shapes[1])});
}

Shape InferGetDimensionSize(const Instruction& instruction) {
  const Shape& operand = ArrayOperand(instruction, 0);
  const std::vector<int64_t>& dimensions = instruction.GetIntList("dimensions");
  if (dimensions.size() != 1) Fail(instruction, "get-dimension-size takes one dimension, got " + Str(dimensions));
  CheckDimension(instruction, dimensions[0], operand.rank(), "dimensions");
  return Scalar(ElementType::kS32);
}

Shape InferSetDimensionSize(const Instruction& instruction) {
  // The dimension becomes dynamic with the operand's size as its bound: the dims are unchanged.
  const Shape& operand = ArrayOperand(instruction, 0, "the operand");
  ScalarOperand(instruction, 1, "the size", true);
  const std::vector<int64_t>& dimensions = instruction.GetIntList("dimensions");
  if (dimensions.size() != 1) Fail(instruction, "set-dimension-size takes one dimension, got " + Str(dimensions));
  CheckDimension(instruction, dimensions[0], operand.rank(), "dimensions");
  return Array(operand.element_type, operand.dims);
}

Shape InferCholesky(const Instruction& instruction) {
  // A batch of square matrices in the two minor dimensions.
  const Shape& a = ArrayOperand(instruction, 0);
  if (a.rank() < 2 || a.dims[a.rank() - 1] != a.dims[a.rank() - 2]) {
    Fail(instruction, "cholesky needs square matrices in the two minor dimensions, got " + Str(a));
  }
  return Array(a.element_type, a.dims);
}

Shape InferTriangularSolve(const Instruction& instruction) {
  // triangular-solve(a, b): a is a batch of square matrices, b the right-hand sides, with the
  // same batch dims; the result is b's shape.
  const Shape& a = ArrayOperand(instruction, 0, "a");
  const Shape& b = ArrayOperand(instruction, 1, "b");
  bool valid = a.rank() >= 2 && a.rank() == b.rank() && a.element_type == b.element_type &&
               a.dims[a.rank() - 1] == a.dims[a.rank() - 2];
  for (int64_t d = 0; valid && d + 2 < a.rank(); ++d) valid = a.dims[d] == b.dims[d];
  if (valid) {
    // left_side: a multiplies from the left, so its size matches b's rows; else b's columns.
    const bool left_side = instruction.GetBool("left_side", false);
    valid = a.dims[a.rank() - 1] == b.dims[b.rank() - (left_side ? 2 : 1)];
  }
  if (!valid) Fail(instruction, "triangular-solve cannot solve " + Str(a) + " against " + Str(b));
  return Array(b.element_type, b.dims);
}

}  // namespace tpusim::hlo::inference
