#include "compiler/lower/scalar_kernel.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "isa/element_type.h"

namespace tpusim::compiler {
namespace {

using hlo::Opcode;
using isa::ElementType;
using namespace isa::ops;

struct IntType {
  int bytes;
  bool is_signed;
};

std::optional<IntType> IntegerScalar(ElementType type) {
  switch (type) {
    case ElementType::kPred: return IntType{1, false};
    case ElementType::kS8: return IntType{1, true};
    case ElementType::kU8: return IntType{1, false};
    case ElementType::kS16: return IntType{2, true};
    case ElementType::kU16: return IntType{2, false};
    case ElementType::kS32: return IntType{4, true};
    case ElementType::kU32: return IntType{4, false};
    case ElementType::kS64: return IntType{8, true};
    case ElementType::kU64: return IntType{8, false};
    default: return std::nullopt;
  }
}

bool IsScalarOpcode(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAdd: case Opcode::kSubtract: case Opcode::kMultiply: case Opcode::kDivide:
    case Opcode::kRemainder: case Opcode::kAnd: case Opcode::kOr: case Opcode::kXor: case Opcode::kNot:
    case Opcode::kNegate: case Opcode::kAbs: case Opcode::kMaximum: case Opcode::kMinimum:
    case Opcode::kClamp: case Opcode::kCompare: case Opcode::kSelect: case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical: case Opcode::kShiftRightArithmetic: case Opcode::kConvert:
    case Opcode::kCopy:
      return true;
    default:
      return false;
  }
}

constexpr uint64_t kSlotBytes = 8;  // one SMEM slot per operand, 8-aligned for ld.s64
constexpr int kFirstValueRegister = 1;
constexpr int kLastValueRegister = 24;  // s25.. are temporaries
constexpr int kTemp0 = 25;
constexpr int kTemp1 = 26;
constexpr int kTemp2 = 27;

bool IsFloatScalar(ElementType type) { return type == ElementType::kF32 || type == ElementType::kBF16; }

// A float compare's operands: f32 bits, or bf16 bits moved up to be the same value's f32 bits.
bool IsFloatCompare(const hlo::Instruction& x) {
  return x.opcode() == Opcode::kCompare && IsFloatScalar(x.operand(0)->shape().element_type);
}

class ScalarEmitter {
 public:
  explicit ScalarEmitter(KernelContext& context) : c_(context), out_(context.out) {}

  void Run() {
    const KernelGroup& group = c_.group;
    const std::size_t n = group.operands.size();
    if (n + group.members.size() > kLastValueRegister) {
      CannotLower(c_.instruction, "too many values for the scalar registers");
    }
    const uint32_t engines = out_.target().dma_engines();
    for (std::size_t k = 0; k < n; ++k) {
      const DeviceBuffer& buffer = *c_.operands.at(k).at(0);
      EmitFlatDma(out_, isa::MEMORY_SPACE_HBM, buffer.address, isa::MEMORY_SPACE_SMEM, k * kSlotBytes, buffer.size_bytes, 0,
                  static_cast<uint32_t>(k % engines));
    }
    if (n > 0) out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(0), n});
    for (std::size_t k = 0; k < n; ++k) {
      const int reg = NewRegister(group.operands[k]);
      Load(reg, k * kSlotBytes, group.operands[k]->shape().element_type);
    }
    for (const hlo::Instruction* member : group.members) {
      const int reg = NewRegister(member);
      Compute(*member, reg);
      // Registers hold every value extended from its own width, as Load leaves them: an s32 add
      // that overflows, or a shift past bit 31, wraps as XLA's s32 does before anything reads it.
      const ElementType type = member->shape().element_type;
      if (member->opcode() != Opcode::kConstant && type != ElementType::kPred && IntegerScalar(type) &&
          IntegerScalar(type)->bytes < 8) {
        Narrow(reg, reg, type);
      }
    }
    const int result = registers_.at(group.root);
    const IntType type = *IntegerScalar(group.root->shape().element_type);
    const uint64_t slot = n * kSlotBytes;
    out_.Emit(type.bytes == 8 ? isa::OPCODE_ST_S64 : isa::OPCODE_ST_S32, {S(result), Smem(slot)});
    const DeviceBuffer& buffer = *c_.results.at(0);
    EmitFlatDma(out_, isa::MEMORY_SPACE_SMEM, slot, isa::MEMORY_SPACE_HBM, buffer.address, buffer.size_bytes, 0, 0);
    out_.Emit(isa::OPCODE_SEM_WAIT, {Sem(0), 1});
  }

 private:
  int NewRegister(const hlo::Instruction* value) {
    const int reg = kFirstValueRegister + static_cast<int>(registers_.size());
    registers_[value] = reg;
    return reg;
  }

  // s<reg> = the value at smem[address], sign- or zero-extended from its type's width to 64
  // bits; floats as their f32 bits (bf16 moved to the top half).
  void Load(int reg, uint64_t address, ElementType type) {
    if (IsFloatScalar(type)) {
      out_.Emit(isa::OPCODE_LD_U32, {S(reg), Smem(address)});
      if (type == ElementType::kBF16) {
        out_.Emit(isa::OPCODE_SHL, {S(reg), S(reg), 48});
        out_.Emit(isa::OPCODE_SHR, {S(reg), S(reg), 32});
      }
      return;
    }
    const IntType t = *IntegerScalar(type);
    if (t.bytes == 8) {
      out_.Emit(isa::OPCODE_LD_S64, {S(reg), Smem(address)});
    } else if (t.bytes == 4) {
      out_.Emit(t.is_signed ? isa::OPCODE_LD_S32 : isa::OPCODE_LD_U32, {S(reg), Smem(address)});
    } else {
      // The word holds stale bytes above the value (the DMA wrote only its bytes).
      const int shift = 64 - 8 * t.bytes;
      out_.Emit(isa::OPCODE_LD_U32, {S(reg), Smem(address)});
      out_.Emit(isa::OPCODE_SHL, {S(reg), S(reg), shift});
      out_.Emit(t.is_signed ? isa::OPCODE_SRA : isa::OPCODE_SHR, {S(reg), S(reg), shift});
    }
  }

  void SetImmediate(int reg, int64_t value) {
    out_.Emit(isa::OPCODE_AND, {S(reg), S(reg), 0});
    if (value != 0) out_.Emit(isa::OPCODE_ADD, {S(reg), S(reg), value});
  }

  // A constant member: its value as Load would have left it in a register.
  int64_t ConstantValue(const hlo::Instruction& x) {
    if (x.literal() == nullptr) CannotLower(x, "its value is not in the module");
    const std::span<const uint8_t> bytes = x.literal()->bytes();
    uint64_t raw = 0;
    for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) raw |= uint64_t{bytes[i]} << (8 * i);
    const ElementType type = x.shape().element_type;
    if (type == ElementType::kBF16) return static_cast<int64_t>(raw << 16);
    if (IsFloatScalar(type)) return static_cast<int64_t>(raw);
    const IntType t = *IntegerScalar(type);
    if (t.bytes == 8) return static_cast<int64_t>(raw);
    const int shift = 64 - 8 * t.bytes;
    return t.is_signed ? static_cast<int64_t>(raw << shift) >> shift : static_cast<int64_t>(raw);
  }

  // d = min or max of a and b.
  void MinMax(int d, bool max, int a, int b, bool is_signed) {
    if (is_signed) {
      out_.Emit(max ? isa::OPCODE_MAX : isa::OPCODE_MIN, {S(d), S(a), S(b)});
      return;
    }
    const std::string done = out_.NewLabel("scalar.minmax");
    out_.Emit(isa::OPCODE_MOV, {S(kTemp0), S(a)});
    out_.Emit(max ? isa::OPCODE_BGEU : isa::OPCODE_BLEU, {S(a), S(b), Label(done)});
    out_.Emit(isa::OPCODE_MOV, {S(kTemp0), S(b)});
    out_.Bind(done);
    out_.Emit(isa::OPCODE_MOV, {S(d), S(kTemp0)});
  }

  // d = a key whose signed order is the float order of the f32 bits in a (-0 and +0 both 0).
  void FloatKey(int d, int a) {
    const std::string done = out_.NewLabel("scalar.key");
    out_.Emit(isa::OPCODE_AND, {S(d), S(a), 0x7fffffff});
    out_.Emit(isa::OPCODE_SHR, {S(kTemp2), S(a), 31});
    out_.Emit(isa::OPCODE_BEQ, {S(kTemp2), 0, Label(done)});
    out_.Emit(isa::OPCODE_XOR, {S(d), S(d), -1});
    out_.Emit(isa::OPCODE_ADD, {S(d), S(d), 1});
    out_.Bind(done);
  }

  void Compare(const hlo::Instruction& x, int d, int a, int b) {
    const std::string direction = x.GetIdentifier("direction");
    const bool is_float = IsFloatScalar(x.operand(0)->shape().element_type);
    const bool is_signed = is_float || IntegerScalar(x.operand(0)->shape().element_type)->is_signed;
    isa::Opcode branch = isa::OPCODE_BEQ;
    if (direction == "EQ") branch = isa::OPCODE_BEQ;
    else if (direction == "NE") branch = isa::OPCODE_BNE;
    else if (direction == "LT") branch = is_signed ? isa::OPCODE_BLT : isa::OPCODE_BLTU;
    else if (direction == "LE") branch = is_signed ? isa::OPCODE_BLE : isa::OPCODE_BLEU;
    else if (direction == "GT") branch = is_signed ? isa::OPCODE_BGT : isa::OPCODE_BGTU;
    else if (direction == "GE") branch = is_signed ? isa::OPCODE_BGE : isa::OPCODE_BGEU;
    else CannotLower(x, "unknown comparison direction " + direction);
    const std::string done = out_.NewLabel("scalar.compare");
    if (is_float) {
      if (x.HasAttribute("type") && x.GetIdentifier("type") == "TOTALORDER") {
        CannotLower(x, "total-order float compares are not lowered on the scalar core");
      }
      // IEEE: every compare with a NaN is false, except NE.
      SetImmediate(d, direction == "NE" ? 1 : 0);
      out_.Emit(isa::OPCODE_AND, {S(kTemp0), S(a), 0x7fffffff});
      out_.Emit(isa::OPCODE_BGTU, {S(kTemp0), 0x7f800000, Label(done)});
      out_.Emit(isa::OPCODE_AND, {S(kTemp0), S(b), 0x7fffffff});
      out_.Emit(isa::OPCODE_BGTU, {S(kTemp0), 0x7f800000, Label(done)});
      FloatKey(kTemp0, a);
      FloatKey(kTemp1, b);
      a = kTemp0;
      b = kTemp1;
    }
    SetImmediate(d, 1);
    out_.Emit(branch, {S(a), S(b), Label(done)});
    SetImmediate(d, 0);
    out_.Bind(done);
  }

  void Compute(const hlo::Instruction& x, int d) {
    if (x.opcode() == Opcode::kConstant) {
      SetImmediate(d, ConstantValue(x));
      return;
    }
    std::vector<int> r;
    for (const hlo::Instruction* operand : x.operands()) r.push_back(registers_.at(operand));
    const ElementType operand_type = x.operand_count() > 0 ? x.operand(0)->shape().element_type : x.shape().element_type;
    if (x.opcode() == Opcode::kCompare) {
      Compare(x, d, r[0], r[1]);
      return;
    }
    const IntType t = *IntegerScalar(x.opcode() == Opcode::kSelect || x.opcode() == Opcode::kClamp
                                         ? x.shape().element_type
                                         : operand_type);
    const bool pred = operand_type == ElementType::kPred;
    switch (x.opcode()) {
      case Opcode::kAdd: out_.Emit(isa::OPCODE_ADD, {S(d), S(r[0]), S(r[1])}); return;
      case Opcode::kSubtract: out_.Emit(isa::OPCODE_SUB, {S(d), S(r[0]), S(r[1])}); return;
      case Opcode::kMultiply: out_.Emit(isa::OPCODE_MUL, {S(d), S(r[0]), S(r[1])}); return;
      // The ISA's x/0 = -1 (all ones unsigned) and x%0 = x are XLA's integer rules.
      case Opcode::kDivide:
        out_.Emit(t.is_signed ? isa::OPCODE_DIV : isa::OPCODE_DIVU, {S(d), S(r[0]), S(r[1])});
        return;
      case Opcode::kRemainder:
        out_.Emit(t.is_signed ? isa::OPCODE_REM : isa::OPCODE_REMU, {S(d), S(r[0]), S(r[1])});
        return;
      case Opcode::kAnd: out_.Emit(isa::OPCODE_AND, {S(d), S(r[0]), S(r[1])}); return;
      case Opcode::kOr: out_.Emit(isa::OPCODE_OR, {S(d), S(r[0]), S(r[1])}); return;
      case Opcode::kXor: out_.Emit(isa::OPCODE_XOR, {S(d), S(r[0]), S(r[1])}); return;
      case Opcode::kNot: out_.Emit(isa::OPCODE_XOR, {S(d), S(r[0]), pred ? 1 : -1}); return;
      case Opcode::kNegate:
        out_.Emit(isa::OPCODE_XOR, {S(d), S(r[0]), -1});
        out_.Emit(isa::OPCODE_ADD, {S(d), S(d), 1});
        return;
      case Opcode::kAbs: {
        out_.Emit(isa::OPCODE_MOV, {S(d), S(r[0])});
        if (!t.is_signed) return;
        const std::string done = out_.NewLabel("scalar.abs");
        out_.Emit(isa::OPCODE_BGE, {S(r[0]), 0, Label(done)});
        out_.Emit(isa::OPCODE_XOR, {S(d), S(r[0]), -1});
        out_.Emit(isa::OPCODE_ADD, {S(d), S(d), 1});
        out_.Bind(done);
        return;
      }
      case Opcode::kMaximum: MinMax(d, true, r[0], r[1], t.is_signed); return;
      case Opcode::kMinimum: MinMax(d, false, r[0], r[1], t.is_signed); return;
      case Opcode::kClamp:  // clamp(lo, x, hi) = min(max(x, lo), hi)
        MinMax(kTemp1, true, r[1], r[0], t.is_signed);
        MinMax(d, false, kTemp1, r[2], t.is_signed);
        return;
      case Opcode::kShiftLeft: out_.Emit(isa::OPCODE_SHL, {S(d), S(r[0]), S(r[1])}); return;
      case Opcode::kShiftRightArithmetic: out_.Emit(isa::OPCODE_SRA, {S(d), S(r[0]), S(r[1])}); return;
      case Opcode::kShiftRightLogical:
        // Logical: the value's own bits only (a sign-extended load has ones above them).
        out_.Emit(isa::OPCODE_MOV, {S(kTemp0), S(r[0])});
        if (t.bytes < 8) out_.Emit(isa::OPCODE_AND, {S(kTemp0), S(kTemp0), (uint64_t{1} << (8 * t.bytes)) - 1});
        out_.Emit(isa::OPCODE_SHR, {S(d), S(kTemp0), S(r[1])});
        return;
      case Opcode::kSelect: {
        const std::string done = out_.NewLabel("scalar.select");
        out_.Emit(isa::OPCODE_MOV, {S(d), S(r[1])});
        out_.Emit(isa::OPCODE_BNE, {S(r[0]), 0, Label(done)});
        out_.Emit(isa::OPCODE_MOV, {S(d), S(r[2])});
        out_.Bind(done);
        return;
      }
      case Opcode::kConvert:
        if (x.shape().element_type == ElementType::kPred) {
          const std::string done = out_.NewLabel("scalar.convert");
          SetImmediate(d, 1);
          out_.Emit(isa::OPCODE_BNE, {S(r[0]), 0, Label(done)});
          SetImmediate(d, 0);
          out_.Bind(done);
          return;
        }
        // Extended from the source's width; the next use or the store keeps the result's bytes.
        Narrow(d, r[0], x.shape().element_type);
        return;
      case Opcode::kBroadcast:  // rank 0 to rank 0
      case Opcode::kCopy: out_.Emit(isa::OPCODE_MOV, {S(d), S(r[0])}); return;
      default:
        CannotLower(x, "not a scalar-core operation");
    }
  }

  // d = a's low bits of `type`, extended again as Load would (a value reused after a convert).
  void Narrow(int d, int a, ElementType type) {
    const IntType t = *IntegerScalar(type);
    if (t.bytes == 8) {
      out_.Emit(isa::OPCODE_MOV, {S(d), S(a)});
      return;
    }
    const int shift = 64 - 8 * t.bytes;
    out_.Emit(isa::OPCODE_SHL, {S(d), S(a), shift});
    out_.Emit(t.is_signed ? isa::OPCODE_SRA : isa::OPCODE_SHR, {S(d), S(d), shift});
  }

  KernelContext& c_;
  ProgramBuilder& out_;
  std::unordered_map<const hlo::Instruction*, int> registers_;
};

bool IsScalarValue(const isa::Shape& shape) {
  return !shape.is_tuple && shape.rank() == 0 && (IntegerScalar(shape.element_type) || IsFloatScalar(shape.element_type));
}

}  // namespace

bool IsScalarCoreGroup(const KernelGroup& group) {
  const hlo::Instruction& root = *group.root;
  if (!IsScalarValue(root.shape()) || !IntegerScalar(root.shape().element_type)) return false;
  for (const hlo::Instruction* member : group.members) {
    const hlo::Opcode opcode = member->opcode();
    const bool rank0_broadcast = opcode == Opcode::kBroadcast && member->operand(0)->shape().rank() == 0;
    if (!IsScalarValue(member->shape())) return false;
    if (opcode != Opcode::kConstant && !rank0_broadcast && !IsScalarOpcode(opcode)) return false;
    for (const hlo::Instruction* operand : member->operands()) {
      const isa::Shape& shape = operand->shape();
      if (!IsScalarValue(shape)) return false;
      if (IsFloatScalar(shape.element_type) && !IsFloatCompare(*member)) return false;
    }
    if (IsFloatScalar(member->shape().element_type) && opcode != Opcode::kConstant) return false;
  }
  // Integer scalars the VPU could hold run here too: a loop counter then stays on the scalar core
  // (and in timing-only runs, which move scalars but no vector data, it still counts).
  return true;
}

void EmitScalarKernel(KernelContext& context) {
  if (context.results.size() != 1 || context.results[0] == nullptr) CannotLower(context.instruction, "expected one array result");
  ScalarEmitter(context).Run();
}

}  // namespace tpusim::compiler
