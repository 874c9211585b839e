// The HLO verifier: checks that a module is well formed and that every instruction's written
// shape is the one its operation gives (shape_inference.h). Run after parsing, before anything
// relies on shapes (the evaluator, the passes): a wrong shape in the text would otherwise surface
// as a wrong result or a crash far from its cause. docs/verifier.md lists the rules.
#pragma once

#include "compiler/hlo/ir.h"

namespace tpusim::hlo {

// Throws tpusim::Error at the first problem, naming the instruction and its `file:line:col`:
//   model.hlo:12:3: instruction 'dot.1': expected shape f32[2,3,5] (inferred from
//   dot(f32[2,3,4], f32[2,4,5])), written f32[2,5,3]
// Structure checked first, per computation: the module has an entry; every computation has a root
// of its own; its parameters are numbered 0..n-1, each once; operands are instructions of the same
// computation defined before their user. Then per instruction: the operand count its opcode takes,
// the signatures of the computations it calls (count and shapes of parameters, root shape), and
// its shape against the inferred one (element type, dims, tuple structure; layouts ignored).
void Verify(const Module& module);

}  // namespace tpusim::hlo
