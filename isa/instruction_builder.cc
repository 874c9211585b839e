#include "isa/instruction_builder.h"

#include "isa/error.h"
#include "isa/instruction_set.h"

namespace tpusim::isa {
namespace ops {
namespace {

RegOffset ToRegOffset(const RegPlus& item) {
  RegOffset out;
  if (item.reg) out.set_reg(*item.reg);
  out.set_offset(item.offset);
  return out;
}

}  // namespace

ShapeValue ShapeArg(const Shape& shape) { return {ToString(shape)}; }

Arg::Arg(SReg r) : kind_(Kind::kSReg) { operand_.set_sreg(r.n); }
Arg::Arg(VReg r) : kind_(Kind::kVReg) { operand_.set_vreg(r.n); }
Arg::Arg(MReg r) : kind_(Kind::kMReg) { operand_.set_mreg(r.n); }
Arg::Arg(MxuId m) : kind_(Kind::kMxu) { operand_.set_mxu(m.n); }
Arg::Arg(BitsValue b) : kind_(Kind::kBits) { operand_.set_bits(b.bits); }
Arg::Arg(LabelName l) : kind_(Kind::kLabel) { operand_.set_label(std::move(l.name)); }
Arg::Arg(const AddressValue& a) : kind_(Kind::kAddress) {
  isa::Address* address = operand_.mutable_address();
  address->set_space(a.space);
  if (a.at.reg) address->set_reg(*a.at.reg);
  address->set_offset(a.at.offset);
}
Arg::Arg(const SemaphoreValue& s) : kind_(Kind::kSemaphore) { *operand_.mutable_semaphore() = ToRegOffset(s.number); }
Arg::Arg(const IndexValue& i) : kind_(Kind::kIndex) {
  for (const RegPlus& item : i.items) *operand_.mutable_index()->add_items() = ToRegOffset(item);
}
Arg::Arg(const SizesValue& s) : kind_(Kind::kSizes) {
  for (int64_t n : s.items) operand_.mutable_sizes()->add_items(n);
}
Arg::Arg(ShapeValue s) : kind_(Kind::kShape) { operand_.set_shape(std::move(s.text)); }

}  // namespace ops

namespace {

using ops::Arg;

std::string_view ArgKindName(Arg::Kind kind) {
  switch (kind) {
    case Arg::Kind::kSReg: return "a scalar register";
    case Arg::Kind::kVReg: return "a vector register";
    case Arg::Kind::kMReg: return "a mask register";
    case Arg::Kind::kMxu: return "an MXU";
    case Arg::Kind::kImm: return "an immediate";
    case Arg::Kind::kBits: return "a bit pattern";
    case Arg::Kind::kLabel: return "a label";
    case Arg::Kind::kAddress: return "an address";
    case Arg::Kind::kSemaphore: return "a semaphore";
    case Arg::Kind::kIndex: return "an index list";
    case Arg::Kind::kSizes: return "a size list";
    case Arg::Kind::kShape: return "a shape";
  }
  return "?";
}

// Whether `arg` can fill an operand of `spec`'s kind.
bool Fits(const Arg& arg, const OperandSpec& spec) {
  switch (spec.kind) {
    case OperandKind::kSReg: return arg.kind() == Arg::Kind::kSReg;
    case OperandKind::kSRegOrImm: return arg.kind() == Arg::Kind::kSReg || arg.kind() == Arg::Kind::kImm;
    case OperandKind::kImm:
    case OperandKind::kDmaEngine: return arg.kind() == Arg::Kind::kImm;
    // A bit pattern may be written as a non-negative number, as the assembly writes it.
    case OperandKind::kBits: return arg.kind() == Arg::Kind::kBits || (arg.kind() == Arg::Kind::kImm && arg.operand().imm() >= 0);
    case OperandKind::kVReg: return arg.kind() == Arg::Kind::kVReg;
    case OperandKind::kMReg: return arg.kind() == Arg::Kind::kMReg;
    case OperandKind::kLabel: return arg.kind() == Arg::Kind::kLabel;
    case OperandKind::kAddress: return arg.kind() == Arg::Kind::kAddress;
    case OperandKind::kSemaphore: return arg.kind() == Arg::Kind::kSemaphore;
    case OperandKind::kMxu: return arg.kind() == Arg::Kind::kMxu;
    case OperandKind::kShape: return arg.kind() == Arg::Kind::kShape;
    case OperandKind::kIndex: return arg.kind() == Arg::Kind::kIndex;
    case OperandKind::kSizes: return arg.kind() == Arg::Kind::kSizes;
  }
  return false;
}

class Maker {
 public:
  Maker(Opcode opcode, const CallSite& where) : where_(where) {
    info_ = FindInstruction(opcode);
    if (info_ == nullptr) Fail("opcode " + std::to_string(static_cast<int>(opcode)) + " is not in the instruction table");
    instruction_.set_opcode(opcode);
    if (info_->operands.size() > 64) Fail("a table row of more than 64 operands");  // given_'s bits
    for (std::size_t i = 0; i < info_->operands.size(); ++i) instruction_.add_operands();
  }

  void Positional(const Arg& arg) {
    while (next_ < info_->operands.size() && info_->operands[next_].keyword) ++next_;
    if (next_ >= info_->operands.size()) Fail("too many operands");
    Set(next_++, arg);
  }

  void Keyword(const ops::KeywordArg& keyword) {
    const int index = OperandIndex(*info_, keyword.name);
    if (index < 0 || !info_->operands[index].keyword) Fail("no keyword operand '" + std::string(keyword.name) + "'");
    if (Given(static_cast<std::size_t>(index))) Fail("'" + std::string(keyword.name) + "' is given twice");
    Set(static_cast<std::size_t>(index), keyword.value);
  }

  Instruction Finish() {
    for (std::size_t i = 0; i < info_->operands.size(); ++i) {
      if (!Given(i) && !info_->operands[i].optional) Fail("operand " + std::string(info_->operands[i].name) + " is missing");
    }
    return std::move(instruction_);
  }

 private:
  bool Given(std::size_t index) const { return (given_ >> index) & 1; }

  void Set(std::size_t index, const Arg& arg) {
    const OperandSpec& spec = info_->operands[index];
    if (!Fits(arg, spec)) {
      Fail("operand " + std::string(spec.name) + " must be " + std::string(OperandKindName(spec.kind)) + ", not " +
           std::string(ArgKindName(arg.kind())));
    }
    if (arg.kind() == Arg::Kind::kAddress && (spec.spaces & SpaceBit(arg.operand().address().space())) == 0) {
      Fail("operand " + std::string(spec.name) + " may not address " +
           std::string(MemorySpaceName(arg.operand().address().space())));
    }
    if (arg.kind() == Arg::Kind::kImm) {
      const int64_t value = arg.operand().imm();
      if (arg.unsigned_too_large()) Fail("operand " + std::string(spec.name) + " does not fit in a signed 64-bit immediate");
      if (spec.kind == OperandKind::kBits) {
        instruction_.mutable_operands(static_cast<int>(index))->set_bits(static_cast<uint64_t>(value));
        given_ |= uint64_t{1} << index;
        return;
      }
      if (value < spec.min || value > spec.max) {
        Fail("operand " + std::string(spec.name) + " = " + std::to_string(value) + " is outside [" +
             std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]");
      }
    }
    *instruction_.mutable_operands(static_cast<int>(index)) = arg.operand();
    given_ |= uint64_t{1} << index;
  }

  [[noreturn]] void Fail(const std::string& message) const {
    throw Error("internal: " + std::string(where_.file) + ":" + std::to_string(where_.line) + ": " +
                std::string(info_ != nullptr ? info_->mnemonic : std::string_view("instruction")) + ": " + message);
  }

  CallSite where_;
  const InstructionInfo* info_ = nullptr;
  Instruction instruction_;
  uint64_t given_ = 0;  // bit i: operand i is set (a row has at most 64 operands)
  std::size_t next_ = 0;
};

template <typename Positional, typename Keywords>
Instruction Make(Opcode opcode, const Positional& positional, const Keywords& keywords, const CallSite& where) {
  Maker maker(opcode, where);
  for (const Arg& arg : positional) maker.Positional(arg);
  for (const ops::KeywordArg& keyword : keywords) maker.Keyword(keyword);
  return maker.Finish();
}

}  // namespace

Instruction MakeInstruction(Opcode opcode, std::initializer_list<ops::Arg> positional,
                            std::initializer_list<ops::KeywordArg> keywords, CallSite where) {
  return Make(opcode, positional, keywords, where);
}

Instruction MakeInstruction(Opcode opcode, const std::vector<ops::Arg>& positional,
                            const std::vector<ops::KeywordArg>& keywords, CallSite where) {
  return Make(opcode, positional, keywords, where);
}

}  // namespace tpusim::isa
