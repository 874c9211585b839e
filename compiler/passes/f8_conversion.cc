#include "compiler/passes/f8_conversion.h"

#include <cmath>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/lower/kernel.h"
#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

using hlo::Instruction;
using hlo::Opcode;
using isa::ElementType;

// The parameters of a lowered f8 format (isa/convert.cc's NarrowFormat).
struct F8Format {
  int mantissa_bits;
  int bias;
  bool has_infinity;  // f8e5m2: exponent 31 is inf/NaN; f8e4m3fn: only S.1111.111 is NaN
};

bool IsF8(ElementType type) {
  switch (type) {
    case ElementType::kF8E5M2: case ElementType::kF8E4M3: case ElementType::kF8E4M3FN:
    case ElementType::kF8E4M3B11FNUZ: case ElementType::kF8E3M4: case ElementType::kF8E5M2FNUZ:
    case ElementType::kF8E4M3FNUZ: case ElementType::kF8E8M0FNU:
      return true;
    default:
      return false;
  }
}

F8Format FormatOf(const Instruction& at, ElementType type) {
  if (type == ElementType::kF8E5M2) return {2, 15, true};
  if (type == ElementType::kF8E4M3FN) return {3, 7, false};
  CannotLower(at, std::string(isa::ElementTypeName(type)) +
                      " is not lowered (f8 support covers f8e5m2 and f8e4m3fn, converted on the VPU)");
}

uint32_t F32Bits(int exponent) { return static_cast<uint32_t>(exponent + 127) << 23; }  // 2^exponent

// Builds instructions in `origin`'s computation, with its dims and source location.
class Emitter {
 public:
  explicit Emitter(Instruction& origin) : origin_(origin), computation_(*origin.parent()) {}

  Instruction* Op(Opcode opcode, ElementType type, std::vector<Instruction*> operands) {
    isa::Shape shape = isa::Shape::Array(type, origin_.shape().dims);
    Instruction* x = Add(opcode, std::move(shape));
    for (Instruction* operand : operands) x->AddOperand(operand);
    return x;
  }
  Instruction* U32(uint32_t value) { return Constant(ElementType::kU32, static_cast<double>(value)); }
  Instruction* F32(double value) { return Constant(ElementType::kF32, value); }
  Instruction* Compare(Instruction* a, Instruction* b, const char* direction) {
    Instruction* x = Op(Opcode::kCompare, ElementType::kPred, {a, b});
    x->AddAttribute({"direction", hlo::Identifier{direction}, {}});
    return x;
  }
  Instruction* Bits(Instruction* x, ElementType type) { return Op(Opcode::kBitcastConvert, type, {x}); }
  Instruction* U(Opcode opcode, Instruction* a, Instruction* b) { return Op(opcode, ElementType::kU32, {a, b}); }
  // `x`'s bytes seen as `type` (same element width, same dims and layout: an alias, no kernel).
  Instruction* Reinterpret(Instruction* x, ElementType type) {
    isa::Shape shape = x->shape();
    shape.element_type = type;
    Instruction* view = Add(Opcode::kBitcast, std::move(shape));
    view->AddOperand(x);
    return view;
  }

 private:
  Instruction* Constant(ElementType type, double value) {
    Instruction* scalar = Add(Opcode::kConstant, isa::Shape::Array(type, {}));
    hlo::Literal literal = hlo::Literal::FromDoubles(type, {}, {value});
    scalar->set_constant(hlo::ConstantForm::kLiteral, std::move(literal), std::to_string(value));
    Instruction* broadcast = Add(Opcode::kBroadcast, isa::Shape::Array(type, origin_.shape().dims));
    broadcast->AddOperand(scalar);
    broadcast->AddAttribute({"dimensions", std::vector<int64_t>{}, {}});
    return broadcast;
  }
  Instruction* Add(Opcode opcode, isa::Shape shape) {
    std::string name;
    do {
      name = origin_.name() + ".f8." + std::to_string(next_++);
    } while (computation_.FindInstruction(name) != nullptr);
    auto x = std::make_unique<Instruction>(name, opcode, std::move(shape));
    x->set_location(origin_.location());
    return computation_.AddInstruction(std::move(x));
  }

  Instruction& origin_;
  hlo::Computation& computation_;
  int next_ = 0;
};

// The f32 value of the f8 array `x` (exact; NaN keeps its sign and payload, as isa's decoder).
Instruction* Widen(Emitter& e, Instruction* x, const F8Format& f) {
  Instruction* b = e.Op(Opcode::kConvert, ElementType::kU32, {e.Reinterpret(x, ElementType::kU8)});
  Instruction* sign = e.U(Opcode::kAnd, e.U(Opcode::kShiftLeft, b, e.U32(24)), e.U32(0x80000000u));
  Instruction* magnitude = e.U(Opcode::kAnd, b, e.U32(0x7f));
  // Exponent and mantissa at the f32 positions: read as an f32 they are the value x 2^(bias - 127)
  // (an f32 denormal for an f8 denormal), so one exact multiply rebiases normals and denormals.
  Instruction* fields = e.U(Opcode::kShiftLeft, magnitude, e.U32(23 - f.mantissa_bits));
  Instruction* scaled = e.Op(Opcode::kMultiply, ElementType::kF32,
                             {e.Bits(fields, ElementType::kF32), e.F32(std::ldexp(1.0, 127 - f.bias))});
  // Infinity and NaN: the all-ones f32 exponent over the f8 mantissa (f8e4m3fn: only 0x7f, NaN).
  Instruction* special = f.has_infinity ? e.Compare(magnitude, e.U32(0x7c), "GE") : e.Compare(magnitude, e.U32(0x7f), "EQ");
  Instruction* bits = e.Op(Opcode::kSelect, ElementType::kU32,
                           {special, e.U(Opcode::kOr, fields, e.U32(0x7f800000u)), e.Bits(scaled, ElementType::kU32)});
  return e.Bits(e.U(Opcode::kOr, bits, sign), ElementType::kF32);
}

// The u8 codes of the f32 array `y` rounded to the f8 format (isa's encoder: nearest even,
// denormals rounded, overflow to inf or NaN, NaN to the quiet NaN, sign kept).
Instruction* Narrow(Emitter& e, Instruction* y, const F8Format& f) {
  const int drop = 23 - f.mantissa_bits;
  Instruction* w = e.Bits(y, ElementType::kU32);
  Instruction* sign = e.U(Opcode::kAnd, w, e.U32(0x80000000u));
  Instruction* a = e.U(Opcode::kXor, w, sign);  // |y| as bits
  // Below the smallest normal: adding 2^(24 - bias - m) rounds |y| (by the f32 add, nearest even)
  // to a multiple of the f8 denormal step 2^(1 - bias - m); the sum's low bits are the code.
  const int magic = 24 - f.bias - f.mantissa_bits;
  Instruction* sum = e.Op(Opcode::kAdd, ElementType::kF32, {e.Bits(a, ElementType::kF32), e.F32(std::ldexp(1.0, magic))});
  Instruction* denormal = e.U(Opcode::kSubtract, e.Bits(sum, ElementType::kU32), e.U32(F32Bits(magic)));
  // Normals: rebias the exponent and round the dropped bits to nearest even (add half - 1 plus
  // the kept mantissa's lowest bit, then shift); a carry rounds up into the next exponent.
  const uint32_t rebias_round = static_cast<uint32_t>((f.bias - 127) * (1 << 23)) + ((1u << (drop - 1)) - 1);
  Instruction* lowest = e.U(Opcode::kAnd, e.U(Opcode::kShiftRightLogical, a, e.U32(drop)), e.U32(1));
  Instruction* normal = e.U(Opcode::kShiftRightLogical,
                            e.U(Opcode::kAdd, e.U(Opcode::kAdd, a, lowest), e.U32(rebias_round)), e.U32(drop));
  Instruction* code = e.Op(Opcode::kSelect, ElementType::kU32,
                           {e.Compare(a, e.U32(F32Bits(1 - f.bias)), "LT"), denormal, normal});
  // From the first power of two above the largest finite value every input overflows (below it
  // the rounding itself yields inf, or NaN's code for f8e4m3fn); inf and NaN are above too.
  const uint32_t overflow_code = f.has_infinity ? 0x7c : 0x7f;
  const int overflow_exponent = f.has_infinity ? 16 : 9;  // 2^16 (f8e5m2), 2^9 (f8e4m3fn: max 448)
  code = e.Op(Opcode::kSelect, ElementType::kU32,
              {e.Compare(a, e.U32(F32Bits(overflow_exponent)), "GE"), e.U32(overflow_code), code});
  if (f.has_infinity) {
    code = e.Op(Opcode::kSelect, ElementType::kU32, {e.Compare(a, e.U32(0x7f800000u), "GT"), e.U32(0x7e), code});
  }
  code = e.U(Opcode::kOr, code, e.U(Opcode::kShiftRightLogical, sign, e.U32(24)));
  return e.Op(Opcode::kConvert, ElementType::kU8, {code});
}

// Rewrites one convert with an f8 operand or result (or both).
void RewriteConvert(Instruction* convert) {
  hlo::Computation& computation = *convert->parent();
  Emitter e(*convert);
  Instruction* source = convert->operand(0);
  if (IsF8(source->shape().element_type)) {
    // The convert now reads the exact f32: f32 -> T is what remains to do.
    convert->ReplaceOperand(0, Widen(e, source, FormatOf(*convert, source->shape().element_type)));
    source = convert->operand(0);
  }
  const ElementType to = convert->shape().element_type;
  if (!IsF8(to)) return;
  const F8Format format = FormatOf(*convert, to);
  if (source->shape().element_type != ElementType::kF32) source = e.Op(Opcode::kConvert, ElementType::kF32, {source});
  Instruction* codes = Narrow(e, source, format);
  // The u8 codes keep the convert's layout, so the f8 view of them is the convert's result.
  isa::Shape codes_shape = convert->shape();
  codes_shape.element_type = ElementType::kU8;
  codes->set_shape(codes_shape);
  Instruction* result = e.Reinterpret(codes, to);
  computation.ReplaceUses(convert, result);
  computation.RemoveInstruction(convert);
}

bool IsF8Convert(const Instruction& x) {
  return x.opcode() == Opcode::kConvert && x.operand_count() == 1 && !x.shape().is_tuple &&
         (IsF8(x.shape().element_type) || IsF8(x.operand(0)->shape().element_type));
}

}  // namespace

int RewriteF8Conversions(hlo::Module& module) {
  int rewritten = 0;
  for (const auto& computation : module.computations()) {
    std::vector<Instruction*> instructions;
    for (const auto& x : computation->instructions()) instructions.push_back(x.get());
    // Dot operands first: each f8 operand gets one bf16 convert (exact), shared by its readers.
    std::unordered_map<Instruction*, Instruction*> widened;
    std::vector<Instruction*> converts;
    for (Instruction* x : instructions) {
      if (x->opcode() != Opcode::kDot) continue;
      for (std::size_t side = 0; side < x->operand_count(); ++side) {
        Instruction* operand = x->operand(side);
        if (operand->shape().is_tuple || !IsF8(operand->shape().element_type)) continue;
        FormatOf(*x, operand->shape().element_type);  // refuses the other f8 variants here
        Instruction*& bf16 = widened[operand];
        if (bf16 == nullptr) {
          Emitter e(*x);
          bf16 = e.Op(Opcode::kConvert, ElementType::kBF16, {operand});
          bf16->set_shape(isa::Shape::Array(ElementType::kBF16, operand->shape().dims));
          converts.push_back(bf16);
        }
        x->ReplaceOperand(side, bf16);
      }
    }
    for (Instruction* x : instructions) {
      if (IsF8Convert(*x)) converts.push_back(x);
    }
    for (Instruction* convert : converts) RewriteConvert(convert);
    rewritten += static_cast<int>(converts.size());
    // The converts it appends are read by instructions written before them.
    if (!converts.empty()) computation->OrderOperandsFirst();
  }
  return rewritten;
}

}  // namespace tpusim::compiler
