// Every error the parser reports, with its exact `file:line:col: message`, line and caret.
// Positions are given as a marker: a piece of the text with '^' where the error points.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/hlo/parser.h"
#include "isa/error.h"

using namespace tpusim;
using namespace tpusim::hlo;

namespace {

// The full message ParseModule throws for `text` ("<no error>" if it parses).
std::string ErrorOf(std::string_view text) {
  try {
    ParseModule(text, "bad.hlo");
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Just the first line: `bad.hlo:line:col: message`.
std::string FirstLine(std::string_view text) {
  const std::string error = ErrorOf(text);
  return error.substr(0, error.find('\n'));
}

// "bad.hlo:line:col" of the '^' in `marker`, which (without the '^') occurs once in `text`;
// "end" for the end of the text.
std::string At(const std::string& text, std::string_view marker) {
  std::size_t offset = text.size();
  if (marker != "end") {
    const std::size_t caret = marker.find('^');
    REQUIRE(caret != std::string_view::npos);
    const std::string needle = std::string(marker.substr(0, caret)) + std::string(marker.substr(caret + 1));
    const std::size_t found = text.find(needle);
    REQUIRE(found != std::string::npos);
    REQUIRE(text.find(needle, found + 1) == std::string::npos);
    offset = found + caret;
  }
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "bad.hlo:" + std::to_string(line) + ":" + std::to_string(offset - line_start + 1);
}

std::string Wrap(std::string_view body) { return "HloModule m\n\nENTRY e {\n" + std::string(body) + "\n}\n"; }

struct Case {
  std::string text;
  const char* marker;
  const char* message;
};

void CheckErrors(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK(FirstLine(c.text) == At(c.text, c.marker) + ": " + c.message);
  }
}

}  // namespace

TEST_CASE("errors carry file:line:col, the line and a caret", "[hlo]") {
  CHECK(ErrorOf(Wrap("  a = f32[2] parameter(0)\n  b = f32[2] frobnicate(a)")) ==
        "bad.hlo:5:14: unknown opcode 'frobnicate'\n"
        "    b = f32[2] frobnicate(a)\n"
        "               ^");
  // The marker helper agrees with a position counted by hand.
  CHECK(At("ab\ncd", "c^d") == "bad.hlo:2:2");
}

TEST_CASE("malformed input", "[hlo]") {
  CheckErrors({
      {"", "end", "expected a computation, found end of text"},
      {"HloModule m\n", "end", "expected a computation, found end of text"},
      {"HloModule\n", "end", "expected the module name after 'HloModule', found end of text"},
      {"HloModule m, replica_count\n", "end", "expected '=' after attribute name 'replica_count', found end of text"},
      {"HloModule m\nENTRY {\n", "ENTRY ^{", "expected a computation name after ENTRY, found '{'"},
      {"HloModule m\ne [\n", "e ^[", "expected '{' to open the body of computation 'e', found '['"},
      {Wrap("  a f32[] parameter(0)"), "a ^f32", "expected '=' after instruction name 'a', found 'f32[] parameter('"},
      {Wrap("  a = parameter(0)"), "= ^parameter", "unknown element type 'parameter', found 'parameter(0)'"},
      {Wrap("  a = f32[2 parameter(0)"), "f32[2 ^parameter", "expected ']' to close the dimensions, found 'parameter(0)'"},
      {Wrap("  a = f32[2] parameter 0"), "parameter ^0", "expected '(' after opcode 'parameter', found '0'"},
      {Wrap("  a = f32[2] parameter(x)"), "(^x)", "expected a parameter number, found 'x)'"},
      {Wrap("  a = f32[2] parameter(0)\n  b = f32[2] negate(a"), "negate(a\n^}", "expected ')' to close the operands of 'b', found '}'"},
      {Wrap("  a = f32[2] parameter(0)\n  b = f32[2] negate(a,)"), "a,^)", "expected an operand name, found ')'"},
      {Wrap("  a = f32[2] parameter(0), =3"), ", ^=3", "expected an attribute name after ',', found '=3'"},
      {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n", "end", "expected '}' to close computation 'e', found end of text"},
      {Wrap("  a = f32[2] parameter(0) /* never closed"), "^/* never", "unterminated /* comment"},
      {Wrap("  a = f32[2] parameter(0), custom_call_target=\"abc"), "=^\"abc", "unterminated string"},
      {"HloModule m\nENTRY e {\n  a = f32[2] parameter(0), metadata={op_name=\"x\"", "=^{op", "unbalanced '{' in a value for attribute 'metadata'"},
      {Wrap("  a = f32[2] parameter(0), sharding={devices=[2)}"), "[2^)", "expected ']' in a value for attribute 'sharding', found ')}'"},
      {Wrap("  a = f32[2] parameter(0)\n}\n, execution_thread=1"), "=^1", "expected a quoted string for attribute 'execution_thread', found '1'"},
      {Wrap("  a = f32[2] parameter(0)\n}\n, thread=\"x\""), ", ^thread", "expected execution_thread=\"...\" after computation 'e', found 'thread=\"x\"'"},
      {Wrap("  a = f32[-3] parameter(0)"), "= ^f32", "dimension 0 of the shape has negative size -3"},
      {Wrap("  a = f32[2] parameter(99999999999999999999)"), "(^9", "a parameter number does not fit in 64 bits"},
      {Wrap("  a = f32[2] parameter(0), custom_call_target=\"\\q\""), "\"^\\q", "unknown escape sequence '\\q' in string"},
      {Wrap("  a = (f32[2], f32[3) parameter(0)"), "f32[3^)", "expected ']' to close the dimensions, found ') parameter('"},
      {Wrap("  a = f32[2]{1,0:T(8,128)Q} parameter(0)"), "128)^Q", "unknown layout attribute 'Q' (expected D, T, L, #, *, E, S, SC, P or M), found 'Q} parameter'"},
  });
}

TEST_CASE("unknown opcodes", "[hlo]") {
  // `add-start` is XLA's shorthand for an async op wrapping an add.
  CHECK(FirstLine(Wrap("  a = f32[] parameter(0)\n  b = f32[] add-start(a)")) == "<no error>");
  CheckErrors({
      {Wrap("  a = f32[] parameter(0)\n  b = f32[] multiply-begin(a)"), "] ^multiply", "unknown opcode 'multiply-begin'"},
      {Wrap("  a = f32[] parameter(0)\n  b = f32[] (a)"), "] ^(a)", "expected an opcode after the shape of 'b', found '(a)'"},
  });
}

TEST_CASE("undefined operands and computations", "[hlo]") {
  CheckErrors({
      {Wrap("  a = f32[2] parameter(0)\n  b = f32[2] add(a, c)"), "a, ^c", "use of undefined instruction 'c' (operands must be defined earlier in computation 'e')"},
      // An instruction defined later is not yet defined.
      {Wrap("  b = f32[2] negate(a)\n  a = f32[2] parameter(0)"), "negate(^a)", "use of undefined instruction 'a' (operands must be defined earlier in computation 'e')"},
      // Instructions of other computations are out of scope.
      {"HloModule m\nf {\n  x = f32[] parameter(0)\n}\nENTRY e {\n  y = f32[] negate(x)\n}\n", "negate(^x)", "use of undefined instruction 'x' (operands must be defined earlier in computation 'e')"},
      {Wrap("  a = f32[2] parameter(0)\n  b = f32[2] call(a), to_apply=%nowhere"), "=^%nowhere", "undefined computation 'nowhere'"},
      {Wrap("  a = pred[] parameter(0)\n  b = f32[] conditional(a), branch_computations={e, %gone}"), "e, ^%gone", "undefined computation 'gone'"},
      {Wrap("  a = f32[2] parameter(0), control-predecessors={b}\n  b = f32[2] negate(a)"), "{^b}", "use of undefined instruction 'b' in attribute 'control-predecessors' (it must be defined earlier in computation 'e')"},
  });
}

TEST_CASE("duplicate names", "[hlo]") {
  CheckErrors({
      {Wrap("  a = f32[2] parameter(0)\n  a = f32[2] negate(a)"), "^a = f32[2] negate", "duplicate instruction name 'a' in computation 'e' (first defined at 4:3)"},
      {Wrap("  %a = f32[2] parameter(0)\n  a = f32[2] negate(a)"), "^a = f32[2] negate", "duplicate instruction name 'a' in computation 'e' (first defined at 4:3)"},
      {"HloModule m\nf {\n  x = f32[] parameter(0)\n}\n%f {\n  y = f32[] parameter(0)\n}\n", "^%f", "duplicate computation name 'f' (first defined at 2:1)"},
      {Wrap("  a = f32[2] parameter(0), index=1, index=2"), "^index=2", "attribute 'index' is given twice"},
      {"HloModule m, replica_count=1, replica_count=2\ne {\n  ROOT a = f32[] parameter(0)\n}\n", "^replica_count=2", "attribute 'replica_count' is given twice"},
  });
}

TEST_CASE("malformed attribute values", "[hlo]") {
  const std::string p = "  a = f32[4,4] parameter(0)\n  b = f32[4,4] ";
  CheckErrors({
      {Wrap(p + "copy(a), index=x"), "=^x", "expected an integer for attribute 'index', found 'x'"},
      {Wrap(p + "copy(a), index=99999999999999999999"), "=^9", "an integer for attribute 'index' does not fit in 64 bits"},
      {Wrap(p + "copy(a), is_stable=yes"), "=^yes", "expected true or false for attribute 'is_stable', found 'yes'"},
      {Wrap(p + "copy(a), epsilon=abc"), "=^abc", "expected a number for attribute 'epsilon', found 'abc'"},
      {Wrap(p + "copy(a), dimensions={1,x}"), "1,^x", "expected an integer in attribute 'dimensions', found 'x}'"},
      {Wrap(p + "copy(a), dimensions=1"), "=^1", "expected '{' around the integers of attribute 'dimensions', found '1'"},
      {Wrap(p + "compare(a, a), direction=XX"), "=^XX", "unknown comparison direction 'XX' (expected EQ, NE, LT, LE, GT or GE)"},
      {Wrap(p + "copy(a), custom_call_target=abc"), "=^abc", "expected a quoted string for attribute 'custom_call_target', found 'abc'"},
      {Wrap(p + "copy(a), window={size=3x3 strides=1x1}"), "3x3 ^strides", "expected a window part (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal) or '}', found 'strides=1x1}'"},
      {Wrap(p + "copy(a), window={size=3x3 stride=1}"), "3x3 ^stride", "window part 'stride' has 1 dimensions but 'size' has 2"},
      {Wrap(p + "copy(a), window={stride=1}"), "=^{stride", "window has no 'size' part"},
      {Wrap(p + "copy(a), window={size=3 size=3}"), "3 ^size", "window part 'size' given twice"},
      {Wrap(p + "copy(a), window={size=3 pad=1}"), "pad=1^}", "expected '_' between low and high padding in a number in window part 'pad', found '}'"},
      {Wrap(p + "copy(a), window={size=3 rhs_reversal=2}"), "3 ^rhs_reversal", "window part 'rhs_reversal' takes 0 or 1 per dimension"},
      {Wrap(p + "copy(a), dim_labels=b01f_01io"), "=^b01f", "expected dim labels such as b01f_01io->b01f for attribute 'dim_labels', found 'b01f_01io'"},
      {Wrap(p + "copy(a), dim_labels=b01f_01io->b0f"), "=^b01f", "dim_labels 'b01f_01io->b0f': input, kernel and output must have the same rank, at least 2"},
      {Wrap(p + "copy(a), dim_labels=b01b_01io->b01f"), "b01^b_", "dim_labels: label 'b' appears twice in the input"},
      {Wrap(p + "copy(a), dim_labels=b01f_02io->b01f"), "_0^2io", "dim_labels: '2' is not a label of the kernel (expected i, o, ? or a spatial dimension 0..1)"},
      {Wrap(p + "copy(a), slice={[0:2:1:3]}"), "[0:2:1^:3]", "expected ']' to close the slice range, found ':3]}'"},
      {Wrap(p + "copy(a), slice={0:2}"), "{^0:2}", "expected '[' to open a slice range [start:limit:stride], found '0:2}'"},
      {Wrap(p + "copy(a), padding=1x1"), "=1^x1", "expected '_' between low and high padding in a number in attribute 'padding', found 'x1'"},
      {Wrap(p + "copy(a), replica_groups=[2,2]<=[5]"), "groups=^[2,2]", "replica groups: [2,2] holds 4 devices but <=[5] does not"},
      {Wrap(p + "copy(a), replica_groups=[4]<=[4]"), "groups=^[4]", "replica groups: the iota form needs [groups,group_size], got 1 dimensions"},
      {Wrap(p + "copy(a), replica_groups=[2,2]<=[2,2]T(0,0)"), "groups=^[2,2]", "replica groups: T(0,0) is not a permutation of 2 dimensions"},
      {Wrap(p + "copy(a), replica_groups=[1,100000000]<=[100000000]"), "=^[1,", "replica groups: more than 2^20 devices"},
      {Wrap(p + "copy(a), replica_groups=[2,2]<[4]"), "[2,2]^<[4]", "expected '<=' in the iota form of attribute 'replica_groups', found '<[4]'"},
      {Wrap(p + "copy(a), replica_groups={{0,1},2}"), "},^2}", "expected '{' around the integers of attribute 'replica_groups', found '2}'"},
      {Wrap(p + "copy(a), source_target_pairs={{0,1,2}}"), "{0,1^,2}", "expected '}' to close a {source,target} pair, found ',2}}'"},
      {Wrap(p + "copy(a), to_apply="), "to_apply=\n^}", "expected a computation name for attribute 'to_apply', found '}'"},
      {Wrap(p + "copy(a), operand_precision={default,}"), "default,^}", "expected a word for attribute 'operand_precision', found '}'"},
      {"HloModule m, entry_computation_layout={(f32[])->}\ne {\n  ROOT a = f32[] parameter(0)\n}\n", "->^}", "expected a shape (an element type such as f32, or '('), found '}'"},
      {"HloModule m, is_scheduled=1\ne {\n  ROOT a = f32[] parameter(0)\n}\n", "=^1", "expected true or false for attribute 'is_scheduled', found '1'"},
  });
}

TEST_CASE("operand shapes that differ from the operand's", "[hlo]") {
  CheckErrors({
      {Wrap("  a = f32[2]{0} parameter(0)\n  b = f32[2] negate(f32[3]{0} a)"), "negate(^f32[3]", "operand 'a' is written with shape f32[3]{0} but 'a' has shape f32[2]{0}"},
      {Wrap("  a = f32[2]{0} parameter(0)\n  b = f32[2] negate(s32[2] %a)"), "negate(^s32", "operand 'a' is written with shape s32[2] but 'a' has shape f32[2]{0}"},
      {Wrap("  a = (f32[2], s32[]) parameter(0)\n  b = f32[2] get-tuple-element((f32[2]) a), index=0"), "(^(f32[2]) a", "operand 'a' is written with shape (f32[2]) but 'a' has shape (f32[2], s32[])"},
  });
  // Layouts do not take part: XLA compares shapes as ShapeUtil::Compatible does.
  CHECK(FirstLine(Wrap("  a = f32[2,2]{1,0} parameter(0)\n  b = f32[2,2] negate(f32[2,2]{0,1} a)")) == "<no error>");
}

TEST_CASE("parameters against the signature and the entry layout", "[hlo]") {
  CheckErrors({
      {"HloModule m\nENTRY e (x: f32[], y: f32[]) -> f32[] {\n  ROOT x = f32[] parameter(0)\n}\n", "e ^(x", "computation 'e' has 1 parameters but its signature lists 2"},
      {"HloModule m\nENTRY e (x: s32[]) -> f32[] {\n  ROOT x = f32[] parameter(0)\n}\n", "(^x: s32", "signature of computation 'e' gives parameter 0 shape s32[] but parameter(0) 'x' is f32[]"},
      {"HloModule m\nENTRY e (x: f32[]) -> (f32[]) {\n  ROOT x = f32[] parameter(0)\n}\n", "-> ^(f32[])", "signature of computation 'e' returns (f32[]) but its ROOT 'x' is f32[]"},
      {"HloModule m\nENTRY e (x f32[]) -> f32[] {\n  ROOT x = f32[] parameter(0)\n}\n", "(x ^f32", "expected ':' after parameter name 'x', found 'f32[]) -> f32[] '"},
      {"HloModule m\nENTRY e (x: f32[]) f32[] {\n  ROOT x = f32[] parameter(0)\n}\n", "f32[]) ^f32", "expected '->' after the parameter list of computation 'e', found 'f32[] {'"},
      {Wrap("  a = f32[] parameter(1)"), "^a = ", "parameter(1) in computation 'e', which has 1 parameters (numbers must be 0..0)"},
      {Wrap("  a = f32[] parameter(0)\n  b = f32[] parameter(0)"), "^b = ", "parameter(0) appears twice in computation 'e' (also 'a')"},
      {Wrap("  a = f32[] parameter(-1)"), "(^-1)", "parameter number -1 is negative"},
      {"HloModule m, entry_computation_layout={(f32[], f32[])->f32[]}\ne {\n  ROOT a = f32[] parameter(0)\n}\n", "^entry_", "entry_computation_layout has 2 parameters but ENTRY computation 'e' has 1"},
      {"HloModule m, entry_computation_layout={(s32[])->f32[]}\ne {\n  ROOT a = f32[] parameter(0)\n}\n", "^entry_", "entry_computation_layout gives parameter 0 shape s32[] but parameter(0) of 'e' is f32[]"},
      {"HloModule m, entry_computation_layout={(f32[])->s32[]}\ne {\n  ROOT a = f32[] parameter(0)\n}\n", "^entry_", "entry_computation_layout gives the result shape s32[] but ENTRY computation 'e' returns f32[]"},
  });
}

TEST_CASE("structure: ROOT, ENTRY, empty computations, call cycles", "[hlo]") {
  CheckErrors({
      {Wrap("  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)"), "ROOT ^b", "computation 'e' has more than one ROOT ('a' and 'b')"},
      {"HloModule m\nENTRY a {\n  ROOT x = f32[] parameter(0)\n}\nENTRY b {\n  ROOT x = f32[] parameter(0)\n}\n", "^ENTRY b", "more than one ENTRY computation ('a' and 'b')"},
      {"HloModule m\nENTRY e {\n}\n", "ENTRY ^e", "computation 'e' has no instructions"},
      {"HloModule m\nf {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=f\n}\n", "^to_apply", "computation 'f' calls itself"},
      {"HloModule m\nf {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=g\n}\n"
       "g {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=f\n}\n", "^to_apply=f", "computation 'f' calls itself through 'g'"},
  });
}

TEST_CASE("constants that do not fit their shape", "[hlo]") {
  CheckErrors({
      {Wrap("  c = f32[3] constant({1, 2})"), "2^}", "dimension 0 of the constant has 2 elements but the shape f32[3] says 3"},
      {Wrap("  c = f32[2] constant({1, 2, 3})"), "2^, 3", "dimension 0 of the constant has more than 2 elements (shape f32[2])"},
      {Wrap("  c = f32[2,2] constant({1, 2})"), "{^1, 2}", "expected '{' to open dimension 1 of a constant of shape f32[2,2], found '1, 2})'"},
      {Wrap("  c = f32[] constant({1})"), "(^{1})", "expected a number in a floating-point constant, found '{1})'"},
      {Wrap("  c = f32[] constant(1x)"), "(1^x)", "expected ')' to close constant(...), found 'x)'"},
      {Wrap("  c = s8[] constant(128)"), "(^128)", "value 128 is out of range for s8"},
      {Wrap("  c = u8[] constant(-1)"), "(^-1)", "value -1 is out of range for u8"},
      {Wrap("  c = u64[] constant(18446744073709551616)"), "(^1844", "value 18446744073709551616 is out of range for u64"},
      {Wrap("  c = s32[] constant(1.5)"), "(^1.5)", "expected an integer in a s32 constant, found '1.5)'"},
      {Wrap("  c = pred[] constant(2)"), "(^2)", "expected true or false in a pred constant, found '2)'"},
      {Wrap("  c = (f32[], f32[]) constant((1))"), "(1^))", "the tuple constant has 1 elements but its shape (f32[], f32[]) has 2"},
      {Wrap("  c = (f32[]) constant((1, 2))"), "1^, 2", "the tuple constant has more elements than its shape (f32[])"},
      {Wrap("  c = (f32[]) constant((s32[] 1))"), "((^s32", "tuple constant element written as s32[] where the shape says f32[]"},
      {Wrap("  c = f32[100000000] constant({1})"), "(^{1})", "a constant of shape f32[100000000] has 100000000 elements, more than the text that follows"},
      {Wrap("  c = f32[] constant(1"), "(1\n^}", "expected ')' to close constant(...), found '}'"},
      {Wrap("  c = c64[] constant()"), "(^)", "constant(...) needs a value"},
      {Wrap("  c = c64[] constant((1, 2)"), "constant^(", "unbalanced '('"},
  });
}
