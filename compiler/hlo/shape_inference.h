// Shape inference: the result shape XLA's ShapeInference (and HloVerifier) gives an instruction,
// computed from its operands' shapes, its attributes and the computations it calls. The verifier
// (verifier.h) compares it with the shape the text wrote; the rules, and the operations whose shape
// is only accepted as written, are in docs/verifier.md.
//
// What is compared is the logical shape: element type, dims and tuple structure. Layouts are
// ignored (an inferred shape has none), a bounded dynamic dim counts as its bound, and an unbounded
// one (`?`) matches any size.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "isa/shape.h"

namespace tpusim::hlo {

// The shape `instruction` must have. Throws tpusim::Error beginning with instruction.Describe()
// when its operands, attributes or called computations do not fit together (operands of an add
// with different dims, a slice past the end, a reducer taking the wrong parameters...). For the
// operations InfersShape says false for, returns the written shape without its layout.
isa::Shape InferShape(const Instruction& instruction);

// False for the operations whose result shape tpusim accepts as written (custom-call, bitcast,
// send/recv, fft...): their shape depends on something the text does not say.
bool InfersShape(const Instruction& instruction);

// Same element types, dims (bounded dynamic dims by their bounds, `?` matching anything) and tuple
// structure, recursively; layouts ignored.
bool SameShapeIgnoringLayout(const isa::Shape& a, const isa::Shape& b);

// XLA's text form of `shape` without layouts (`(f32[2,3], s32[])`), as error messages quote shapes.
std::string ShapeToStringWithoutLayout(const isa::Shape& shape);

}  // namespace tpusim::hlo
