// Tests for compiler/eval/elementwise.h, compare.h and convert_ops.h. Expected values come from
// seed 003 ("Operation semantics": its Clamp, Select, ConvertElementType, Rem and Sign text),
// from the numerics rules of REFERENCE.md section 2 and DESIGN.md, from XLA's integer rules as
// the brief states them (x/0 = -1, x%0 = x, INT_MIN/-1 = INT_MIN, shifts past the width), and
// from IEEE 754 / the bf16 and f16 formats, worked out by hand in the comments.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "compiler/eval/compare.h"
#include "compiler/eval/convert_ops.h"
#include "compiler/eval/elementwise.h"
#include "compiler/eval/literal_util.h"
#include "compiler/hlo/literal.h"
#include "isa/error.h"

namespace tpusim::eval {
namespace {

using hlo::Literal;
using isa::ElementType;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Literal F32(std::vector<int64_t> dims, const std::vector<double>& values) {
  return Literal::FromDoubles(ElementType::kF32, std::move(dims), values);
}
Literal Ints(ElementType type, const std::vector<int64_t>& values) {
  return FromInts(type, {static_cast<int64_t>(values.size())}, values);
}
Literal Preds(const std::vector<int64_t>& values) { return Ints(ElementType::kPred, values); }

uint16_t Bits16(const Literal& literal, int64_t i) {
  uint16_t bits;
  std::memcpy(&bits, literal.bytes().data() + 2 * i, 2);
  return bits;
}

// --- Seed 003 examples ----------------------------------------------------------------------

TEST_CASE("clamp: seed 003's example with scalar min and max", "[eval]") {
  // let operand: s32[3] = {-1, 5, 9}; min 0; max 6 ==> {0, 5, 6}
  const Literal result = Clamp(ScalarInt(ElementType::kS32, 0), Ints(ElementType::kS32, {-1, 5, 9}),
                               ScalarInt(ElementType::kS32, 6));
  CHECK(result.element_type() == ElementType::kS32);
  CHECK(ToInts(result) == std::vector<int64_t>{0, 5, 6});
}

TEST_CASE("clamp: per-element bounds and NaN propagation", "[eval]") {
  const Literal result =
      Clamp(F32({3}, {0, 0, 0}), F32({3}, {-1, kNaN, 2}), F32({3}, {1, 1, kNaN}));
  const std::vector<double> values = ToDoubles(result);
  CHECK(values[0] == 0);
  CHECK(std::isnan(values[1]));
  CHECK(std::isnan(values[2]));
}

TEST_CASE("select: seed 003's examples", "[eval]") {
  const Literal v1 = Ints(ElementType::kS32, {1, 2, 3, 4});
  const Literal v2 = Ints(ElementType::kS32, {100, 200, 300, 400});
  // pred {true, false, false, true} ==> {1, 200, 300, 4}
  CHECK(ToInts(Select(Preds({1, 0, 0, 1}), v1, v2)) == std::vector<int64_t>{1, 200, 300, 4});
  // scalar pred true ==> {1, 2, 3, 4}
  CHECK(ToInts(Select(ScalarInt(ElementType::kPred, 1), v1, v2)) ==
        std::vector<int64_t>{1, 2, 3, 4});
}

TEST_CASE("select: a scalar pred selects between tuples", "[eval]") {
  const Literal a = Literal::Tuple({Ints(ElementType::kS32, {1}), F32({}, {2})});
  const Literal b = Literal::Tuple({Ints(ElementType::kS32, {3}), F32({}, {4})});
  CHECK(Select(ScalarInt(ElementType::kPred, 0), a, b) == b);
  CHECK_THROWS_AS(Select(Preds({1}), a, b), Error);
}

TEST_CASE("convert: seed 003's s32 -> f32 example", "[eval]") {
  const Literal b = Convert(Ints(ElementType::kS32, {0, 1, 2}), ElementType::kF32);
  CHECK(b.element_type() == ElementType::kF32);
  CHECK(ToDoubles(b) == std::vector<double>{0.0, 1.0, 2.0});
}

TEST_CASE("remainder: the sign of the dividend, magnitude below the divisor (seed 003)", "[eval]") {
  CHECK(ToDoubles(Binary(BinaryOp::kRemainder, F32({4}, {7, -7, 7, -7}),
                         F32({4}, {3, 3, -3, -3}))) == std::vector<double>{1, -1, 1, -1});
  CHECK(ToInts(Binary(BinaryOp::kRemainder, Ints(ElementType::kS32, {7, -7, 7, -7}),
                      Ints(ElementType::kS32, {3, 3, -3, -3}))) ==
        std::vector<int64_t>{1, -1, 1, -1});
}

TEST_CASE("sign: -1, 0, 1 by the element type's comparison (seed 003)", "[eval]") {
  CHECK(ToDoubles(Unary(UnaryOp::kSign, F32({3}, {-2.5, 0, 3}))) == std::vector<double>{-1, 0, 1});
  CHECK(ToInts(Unary(UnaryOp::kSign, Ints(ElementType::kS32, {-7, 0, 9}))) ==
        std::vector<int64_t>{-1, 0, 1});
  CHECK(std::isnan(ToDoubles(Unary(UnaryOp::kSign, F32({1}, {kNaN})))[0]));
}

TEST_CASE("is-finite: false for +-inf and NaN (seed 003)", "[eval]") {
  const Literal result = Unary(UnaryOp::kIsFinite, F32({4}, {1, kInf, -kInf, kNaN}));
  CHECK(result.element_type() == ElementType::kPred);
  CHECK(ToInts(result) == std::vector<int64_t>{1, 0, 0, 0});
}

// --- Integer rules --------------------------------------------------------------------------

TEST_CASE("integer arithmetic wraps (two's complement)", "[eval]") {
  constexpr int64_t kMin32 = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  CHECK(ToInts(Binary(BinaryOp::kAdd, Ints(ElementType::kS32, {kMax32}),
                      Ints(ElementType::kS32, {1}))) == std::vector<int64_t>{kMin32});
  CHECK(ToInts(Binary(BinaryOp::kAdd, Ints(ElementType::kS8, {100}),
                      Ints(ElementType::kS8, {100}))) == std::vector<int64_t>{-56});  // 200 - 256
  CHECK(ToInts(Binary(BinaryOp::kAdd, Ints(ElementType::kU8, {200}),
                      Ints(ElementType::kU8, {100}))) == std::vector<int64_t>{44});  // 300 - 256
  CHECK(ToInts(Binary(BinaryOp::kSubtract, Ints(ElementType::kU32, {0}),
                      Ints(ElementType::kU32, {1}))) == std::vector<int64_t>{0xFFFFFFFF});
  CHECK(ToInts(Binary(BinaryOp::kMultiply, Ints(ElementType::kS32, {65536}),
                      Ints(ElementType::kS32, {65536}))) ==
        std::vector<int64_t>{0});  // 2^32 mod 2^32
  CHECK(ToInts(Unary(UnaryOp::kNegate, Ints(ElementType::kS32, {kMin32}))) ==
        std::vector<int64_t>{kMin32});
  CHECK(ToInts(Unary(UnaryOp::kAbs, Ints(ElementType::kS32, {kMin32, -5}))) ==
        std::vector<int64_t>{kMin32, 5});
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  CHECK(
      ToInts(Binary(BinaryOp::kAdd, Ints(ElementType::kS64, {std::numeric_limits<int64_t>::max()}),
                    Ints(ElementType::kS64, {1}))) == std::vector<int64_t>{kMin64});
}

TEST_CASE("integer division by zero and INT_MIN / -1 follow XLA's evaluator", "[eval]") {
  constexpr int64_t kMin32 = std::numeric_limits<int32_t>::min();
  const Literal lhs = Ints(ElementType::kS32, {7, -7, kMin32, kMin32});
  const Literal rhs = Ints(ElementType::kS32, {0, 0, -1, 0});
  CHECK(ToInts(Binary(BinaryOp::kDivide, lhs, rhs)) == std::vector<int64_t>{-1, -1, kMin32, -1});
  CHECK(ToInts(Binary(BinaryOp::kRemainder, lhs, rhs)) == std::vector<int64_t>{7, -7, 0, kMin32});
  // Unsigned: x / 0 is all ones, x % 0 is x.
  CHECK(ToInts(Binary(BinaryOp::kDivide, Ints(ElementType::kU32, {7}),
                      Ints(ElementType::kU32, {0}))) == std::vector<int64_t>{0xFFFFFFFF});
  CHECK(ToInts(Binary(BinaryOp::kRemainder, Ints(ElementType::kU8, {7}),
                      Ints(ElementType::kU8, {0}))) == std::vector<int64_t>{7});
  // Narrow and wide types alike.
  CHECK(ToInts(Binary(BinaryOp::kDivide, Ints(ElementType::kS8, {-128}),
                      Ints(ElementType::kS8, {-1}))) == std::vector<int64_t>{-128});
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  CHECK(ToInts(Binary(BinaryOp::kDivide, Ints(ElementType::kS64, {kMin64}),
                      Ints(ElementType::kS64, {-1}))) == std::vector<int64_t>{kMin64});
  CHECK(ToInts(Binary(BinaryOp::kRemainder, Ints(ElementType::kS64, {kMin64}),
                      Ints(ElementType::kS64, {-1}))) == std::vector<int64_t>{0});
  // Ordinary division truncates toward zero.
  CHECK(ToInts(Binary(BinaryOp::kDivide, Ints(ElementType::kS32, {-7, 7}),
                      Ints(ElementType::kS32, {2, -2}))) == std::vector<int64_t>{-3, -3});
}

TEST_CASE("shifts by the width or more give 0, or the sign for arithmetic right shifts", "[eval]") {
  const Literal x = Ints(ElementType::kS32, {1, 1, -8, -8, 8, -8, -8, 1});
  const Literal n = Ints(ElementType::kS32, {31, 32, 1, 40, 40, 28, 32, -1});
  CHECK(ToInts(Binary(BinaryOp::kShiftLeft, x, n)) ==
        std::vector<int64_t>{std::numeric_limits<int32_t>::min(), 0, -16, 0, 0, int32_t(0x80000000),
                             0, 0});
  CHECK(ToInts(Binary(BinaryOp::kShiftRightArithmetic, x, n)) ==
        std::vector<int64_t>{0, 0, -4, -1, 0, -1, -1, 0});
  // -8 is 0xFFFFFFF8: logically shifted right by 28 it is 0xF.
  CHECK(ToInts(Binary(BinaryOp::kShiftRightLogical, x, n)) ==
        std::vector<int64_t>{0, 0, 0x7FFFFFFC, 0, 0, 0xF, 0, 0});
  // u8: 0x80 >>a 7 sign-fills within 8 bits (0xFF); >>l gives 1.
  CHECK(ToInts(Binary(BinaryOp::kShiftRightArithmetic, Ints(ElementType::kU8, {0x80}),
                      Ints(ElementType::kU8, {7}))) == std::vector<int64_t>{0xFF});
  CHECK(ToInts(Binary(BinaryOp::kShiftRightLogical, Ints(ElementType::kU8, {0x80}),
                      Ints(ElementType::kU8, {7}))) == std::vector<int64_t>{1});
  CHECK(ToInts(Binary(BinaryOp::kShiftLeft, Ints(ElementType::kU8, {0x81}),
                      Ints(ElementType::kU8, {1}))) == std::vector<int64_t>{2});
}

TEST_CASE("integer power: repeated squaring with wrap, negative exponents give 0", "[eval]") {
  const Literal base = Ints(ElementType::kS32, {2, 2, 1, 5, 3, -2});
  const Literal exponent = Ints(ElementType::kS32, {10, -1, -5, 0, 21, 3});
  // 3^21 = 10460353203 = 2 * 2^32 + 1870418611.
  CHECK(ToInts(Binary(BinaryOp::kPower, base, exponent)) ==
        std::vector<int64_t>{1024, 0, 1, 1, 1870418611, -8});
}

TEST_CASE("bitwise ops, not, popcnt and count-leading-zeros", "[eval]") {
  const Literal a = Ints(ElementType::kU8, {0xF0, 0x0F});
  const Literal b = Ints(ElementType::kU8, {0xFF, 0xF0});
  CHECK(ToInts(Binary(BinaryOp::kAnd, a, b)) == std::vector<int64_t>{0xF0, 0x00});
  CHECK(ToInts(Binary(BinaryOp::kOr, a, b)) == std::vector<int64_t>{0xFF, 0xFF});
  CHECK(ToInts(Binary(BinaryOp::kXor, a, b)) == std::vector<int64_t>{0x0F, 0xFF});
  CHECK(ToInts(Unary(UnaryOp::kNot, a)) == std::vector<int64_t>{0x0F, 0xF0});
  CHECK(ToInts(Unary(UnaryOp::kNot, Ints(ElementType::kS32, {0}))) == std::vector<int64_t>{-1});
  CHECK(ToInts(Unary(UnaryOp::kNot, Preds({1, 0}))) == std::vector<int64_t>{0, 1});
  CHECK(ToInts(Binary(BinaryOp::kAnd, Preds({1, 1, 0}), Preds({1, 0, 0}))) ==
        std::vector<int64_t>{1, 0, 0});
  CHECK(ToInts(Unary(UnaryOp::kPopcnt, Ints(ElementType::kS32, {-1, 0, 0x55}))) ==
        std::vector<int64_t>{32, 0, 4});
  CHECK(ToInts(Unary(UnaryOp::kPopcnt, Ints(ElementType::kS8, {-1}))) == std::vector<int64_t>{8});
  CHECK(ToInts(Unary(UnaryOp::kCountLeadingZeros, Ints(ElementType::kS32, {1, 0, -1}))) ==
        std::vector<int64_t>{31, 32, 0});
  CHECK(ToInts(Unary(UnaryOp::kCountLeadingZeros, Ints(ElementType::kU8, {1, 0x80}))) ==
        std::vector<int64_t>{7, 0});
}

// --- Float rules ----------------------------------------------------------------------------

TEST_CASE("maximum and minimum propagate NaN from either side", "[eval]") {
  const Literal a = F32({4}, {kNaN, 1, 2, -kInf});
  const Literal b = F32({4}, {1, kNaN, 3, 5});
  const std::vector<double> max = ToDoubles(Binary(BinaryOp::kMaximum, a, b));
  const std::vector<double> min = ToDoubles(Binary(BinaryOp::kMinimum, a, b));
  CHECK(std::isnan(max[0]));
  CHECK(std::isnan(max[1]));
  CHECK(max[2] == 3);
  CHECK(max[3] == 5);
  CHECK(std::isnan(min[0]));
  CHECK(std::isnan(min[1]));
  CHECK(min[2] == 2);
  CHECK(min[3] == -kInf);
}

TEST_CASE("bf16 ops compute in f32 and round once to nearest even", "[eval]") {
  // 1 + 2^-8 is exactly halfway between bf16 1 (mantissa 0, even) and 1 + 2^-7: it stays 1.
  const Literal one = Literal::FromDoubles(ElementType::kBF16, {2}, {1, 1});
  const Literal small = Literal::FromDoubles(ElementType::kBF16, {2}, {0x1p-8, 3 * 0x1p-8});
  const Literal sum = Binary(BinaryOp::kAdd, one, small);
  CHECK(sum.element_type() == ElementType::kBF16);
  CHECK(Bits16(sum, 0) == 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd mantissa 1) and 1 + 2^-6 (even mantissa 2).
  CHECK(Bits16(sum, 1) == 0x3F82);
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 exactly in f32; 2^-14 is below half a bf16 ulp (2^-8).
  const Literal x = Literal::FromDoubles(ElementType::kBF16, {1}, {1 + 0x1p-7});
  CHECK(ToDoubles(Binary(BinaryOp::kMultiply, x, x)) == std::vector<double>{1 + 0x1p-6});
  // f16: 2048 + 1 is halfway between 2048 and 2050 (ulp 2): ties to even keeps 2048.
  const Literal h = Binary(BinaryOp::kAdd, Literal::FromDoubles(ElementType::kF16, {1}, {2048}),
                           Literal::FromDoubles(ElementType::kF16, {1}, {1}));
  CHECK(ToDoubles(h) == std::vector<double>{2048});
}

TEST_CASE("float unary ops at points where their values are exact", "[eval]") {
  const Literal zero = F32({1}, {0});
  CHECK(ToDoubles(Unary(UnaryOp::kExponential, zero)) == std::vector<double>{1});
  CHECK(ToDoubles(Unary(UnaryOp::kExponentialMinusOne, zero)) == std::vector<double>{0});
  CHECK(ToDoubles(Unary(UnaryOp::kLog, F32({1}, {1}))) == std::vector<double>{0});
  CHECK(ToDoubles(Unary(UnaryOp::kLogPlusOne, zero)) == std::vector<double>{0});
  CHECK(ToDoubles(Unary(UnaryOp::kSqrt, F32({2}, {4, 2.25}))) == std::vector<double>{2, 1.5});
  CHECK(ToDoubles(Unary(UnaryOp::kRsqrt, F32({1}, {4}))) == std::vector<double>{0.5});
  CHECK(ToDoubles(Unary(UnaryOp::kCbrt, F32({2}, {27, -8}))) == std::vector<double>{3, -2});
  CHECK(ToDoubles(Unary(UnaryOp::kTanh, zero)) == std::vector<double>{0});
  CHECK(ToDoubles(Unary(UnaryOp::kLogistic, zero)) == std::vector<double>{0.5});
  CHECK(ToDoubles(Unary(UnaryOp::kSine, zero)) == std::vector<double>{0});
  CHECK(ToDoubles(Unary(UnaryOp::kCosine, zero)) == std::vector<double>{1});
  CHECK(ToDoubles(Unary(UnaryOp::kTan, zero)) == std::vector<double>{0});
  CHECK(ToDoubles(Unary(UnaryOp::kAbs, F32({2}, {-3, 3}))) == std::vector<double>{3, 3});
  CHECK(ToDoubles(Unary(UnaryOp::kNegate, F32({1}, {3}))) == std::vector<double>{-3});
  CHECK(std::isnan(ToDoubles(Unary(UnaryOp::kLog, F32({1}, {-1})))[0]));
  CHECK(ToDoubles(Unary(UnaryOp::kLog, zero)) == std::vector<double>{-kInf});
  // atan2(1, 1) = pi/4 to within an f32 ulp.
  CHECK(ToDoubles(Binary(BinaryOp::kAtan2, F32({1}, {1}), F32({1}, {1})))[0] ==
        Approx(M_PI / 4).epsilon(1e-7));
  CHECK(ToDoubles(Binary(BinaryOp::kPower, F32({2}, {2, 9}), F32({2}, {10, 0.5}))) ==
        std::vector<double>{1024, 3});
}

TEST_CASE("rounding ops: floor, ceil, half away from zero, half to even", "[eval]") {
  const Literal x = F32({6}, {2.5, -2.5, 3.5, 0.5, -0.5, 2.4});
  CHECK(ToDoubles(Unary(UnaryOp::kFloor, x)) == std::vector<double>{2, -3, 3, 0, -1, 2});
  CHECK(ToDoubles(Unary(UnaryOp::kCeil, x)) == std::vector<double>{3, -2, 4, 1, -0.0, 3});
  CHECK(ToDoubles(Unary(UnaryOp::kRoundNearestAfz, x)) == std::vector<double>{3, -3, 4, 1, -1, 2});
  CHECK(ToDoubles(Unary(UnaryOp::kRoundNearestEven, x)) ==
        std::vector<double>{2, -2, 4, 0, -0.0, 2});
  CHECK(std::signbit(ToDoubles(Unary(UnaryOp::kRoundNearestEven, x))[4]));
}

TEST_CASE("ops a type does not have are errors that name the op and the type", "[eval]") {
  CHECK_THROWS_WITH(Unary(UnaryOp::kExponential, Ints(ElementType::kS32, {1})),
                    Catch::Contains("exponential") && Catch::Contains("s32"));
  CHECK_THROWS_WITH(Binary(BinaryOp::kShiftLeft, F32({1}, {1}), F32({1}, {1})),
                    Catch::Contains("shift-left") && Catch::Contains("f32"));
  CHECK_THROWS_WITH(Unary(UnaryOp::kPopcnt, F32({1}, {1})), Catch::Contains("popcnt"));
  CHECK_THROWS_WITH(Binary(BinaryOp::kAdd, F32({2}, {1, 2}), F32({1}, {1})),
                    Catch::Contains("same dims"));
  CHECK_THROWS_AS(Binary(BinaryOp::kAdd, F32({1}, {1}), Ints(ElementType::kS32, {1})), Error);
}

TEST_CASE("element-wise ops on rank 0 and empty arrays", "[eval]") {
  const Literal scalar = Binary(BinaryOp::kAdd, F32({}, {1.5}), F32({}, {2}));
  CHECK(scalar.dims().empty());
  CHECK(ToDoubles(scalar) == std::vector<double>{3.5});
  const Literal empty = Literal(isa::Shape::Array(ElementType::kBF16, {0, 3}));
  const Literal result = Unary(UnaryOp::kExponential, empty);
  CHECK(result.dims() == std::vector<int64_t>{0, 3});
  CHECK(result.element_count() == 0);
  CHECK(Compare(empty, empty, CompareDirection::kEq).dims() == std::vector<int64_t>{0, 3});
}

TEST_CASE("op names are HLO's opcodes", "[eval]") {
  CHECK(UnaryOpName(UnaryOp::kExponentialMinusOne) == "exponential-minus-one");
  CHECK(ParseUnaryOp("count-leading-zeros") == UnaryOp::kCountLeadingZeros);
  CHECK(ParseBinaryOp("shift-right-logical") == BinaryOp::kShiftRightLogical);
  CHECK(!ParseBinaryOp("exponential").has_value());
  CHECK(ParseCompareDirection("GE") == CompareDirection::kGe);
  CHECK(ParseCompareType("TOTALORDER") == CompareType::kTotalOrder);
}

// --- Compare --------------------------------------------------------------------------------

std::vector<int64_t> CompareAll(const Literal& a, const Literal& b, CompareType type) {
  std::vector<int64_t> results;
  for (CompareDirection d : {CompareDirection::kEq, CompareDirection::kNe, CompareDirection::kLt,
                             CompareDirection::kLe, CompareDirection::kGt, CompareDirection::kGe}) {
    results.push_back(ToInts(Compare(a, b, d, type))[0]);
  }
  return results;
}

TEST_CASE("compare FLOAT: IEEE 754, NaN unordered (only NE holds), -0 == +0", "[eval]") {
  //                                                       EQ NE LT LE GT GE
  CHECK(CompareAll(F32({1}, {kNaN}), F32({1}, {1}), CompareType::kFloat) ==
        std::vector<int64_t>{0, 1, 0, 0, 0, 0});
  CHECK(CompareAll(F32({1}, {kNaN}), F32({1}, {kNaN}), CompareType::kFloat) ==
        std::vector<int64_t>{0, 1, 0, 0, 0, 0});
  CHECK(CompareAll(F32({1}, {-0.0}), F32({1}, {0.0}), CompareType::kFloat) ==
        std::vector<int64_t>{1, 0, 0, 1, 0, 1});
  CHECK(CompareAll(F32({1}, {1}), F32({1}, {2}), CompareType::kFloat) ==
        std::vector<int64_t>{0, 1, 1, 1, 0, 0});
  // The default type of float operands is FLOAT.
  CHECK(ToInts(Compare(F32({1}, {kNaN}), F32({1}, {kNaN}), CompareDirection::kEq)) ==
        std::vector<int64_t>{0});
}

TEST_CASE("compare TOTALORDER: -NaN < -inf < -1 < -0 < +0 < 1 < inf < NaN", "[eval]") {
  const std::vector<double> ordered = {-kNaN, -kInf, -1, -0.0, 0.0, 1, kInf, kNaN};
  for (ElementType type :
       {ElementType::kF32, ElementType::kBF16, ElementType::kF64, ElementType::kF16}) {
    const Literal values = Literal::FromDoubles(type, {8}, ordered);
    for (int64_t i = 0; i < 8; ++i) {
      for (int64_t j = 0; j < 8; ++j) {
        const Literal a = Literal::FromDoubles(type, {1}, {ordered[i]});
        const Literal b = Literal::FromDoubles(type, {1}, {ordered[j]});
        INFO("type " << isa::ElementTypeName(type) << " i " << i << " j " << j);
        CHECK(ToInts(Compare(a, b, CompareDirection::kLt, CompareType::kTotalOrder))[0] == (i < j));
        CHECK(ToInts(Compare(a, b, CompareDirection::kEq, CompareType::kTotalOrder))[0] ==
              (i == j));
      }
    }
  }
  CHECK(std::signbit(-kNaN));
}

TEST_CASE("compare SIGNED and UNSIGNED read the element bits", "[eval]") {
  const Literal minus_one = Ints(ElementType::kS32, {-1});
  const Literal zero = Ints(ElementType::kS32, {0});
  CHECK(ToInts(Compare(minus_one, zero, CompareDirection::kLt)) == std::vector<int64_t>{1});
  CHECK(ToInts(Compare(minus_one, zero, CompareDirection::kLt, CompareType::kUnsigned)) ==
        std::vector<int64_t>{0});
  const Literal high = Ints(ElementType::kU32, {0x80000000});
  const Literal one = Ints(ElementType::kU32, {1});
  CHECK(ToInts(Compare(high, one, CompareDirection::kGt)) == std::vector<int64_t>{1});
  CHECK(ToInts(Compare(high, one, CompareDirection::kGt, CompareType::kSigned)) ==
        std::vector<int64_t>{0});
  const Literal big = Ints(ElementType::kU64, {int64_t(0x8000000000000000ull)});
  CHECK(ToInts(Compare(big, Ints(ElementType::kU64, {1}), CompareDirection::kGt)) ==
        std::vector<int64_t>{1});
  CHECK_THROWS_WITH(
      Compare(F32({1}, {1}), F32({1}, {1}), CompareDirection::kEq, CompareType::kSigned),
      Catch::Contains("SIGNED"));
}

// --- Conversions ----------------------------------------------------------------------------

TEST_CASE("bitcast-convert keeps the bytes, adding or removing a minor dim across widths",
          "[eval]") {
  const Literal one = F32({1}, {1.0});
  CHECK(ToInts(BitcastConvert(one, ElementType::kS32)) == std::vector<int64_t>{0x3F800000});
  // Little-endian bytes of 0x3F800000: 00 00 80 3F.
  const Literal bytes = BitcastConvert(one, ElementType::kU8);
  CHECK(bytes.dims() == std::vector<int64_t>{1, 4});
  CHECK(ToInts(bytes) == std::vector<int64_t>{0x00, 0x00, 0x80, 0x3F});
  const Literal back = BitcastConvert(bytes, ElementType::kF32);
  CHECK(back.dims() == std::vector<int64_t>{1});
  CHECK(ToDoubles(back) == std::vector<double>{1.0});
  CHECK_THROWS_WITH(BitcastConvert(Ints(ElementType::kU8, {1, 2, 3}), ElementType::kF32),
                    Catch::Contains("minor dim of size 4"));
}

TEST_CASE("reduce-precision to bf16's and f16's parameters", "[eval]") {
  const Literal x = F32({4}, {1 + 0x1p-8, 1 + 3 * 0x1p-8, 1 + 0x1p-8 + 0x1p-20, kNaN});
  const std::vector<double> bf16 = ToDoubles(ReducePrecision(x, 8, 7));
  CHECK(bf16[0] == 1);           // tie to even
  CHECK(bf16[1] == 1 + 0x1p-6);  // tie to even (up)
  CHECK(bf16[2] == 1 + 0x1p-7);  // above the tie
  CHECK(std::isnan(bf16[3]));
  // f16: 65520 is halfway between 65504 and 65536 and rounds to 65536, beyond f16's range: inf.
  // 2^-20 is below f16's smallest normal (2^-14) and flushes to zero, sign kept.
  const std::vector<double> f16 =
      ToDoubles(ReducePrecision(F32({4}, {65520, 65504, 0x1p-20, -0x1p-20}), 5, 10));
  CHECK(f16[0] == kInf);
  CHECK(f16[1] == 65504);
  CHECK(f16[2] == 0);
  CHECK(f16[3] == 0);
  CHECK(std::signbit(f16[3]));
  CHECK_THROWS_AS(ReducePrecision(x, 0, 7), Error);
}

}  // namespace
}  // namespace tpusim::eval
