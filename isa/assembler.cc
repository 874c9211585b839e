// Statement-level assembly: labels, directives and instructions, line by line; then the program
// checker, whose findings are mapped back to the text through the offsets recorded here.
#include "isa/assembler.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "isa/asm_lexer.h"
#include "isa/error.h"
#include "isa/instruction_set.h"
#include "isa/program_check.h"
#include "isa/shape.h"

namespace tpusim::isa {
namespace {

using Offsets = std::map<std::string, std::size_t, std::less<>>;

struct TargetKey {
  std::string_view name;
  void (Target::*set)(uint32_t);
};
// In the order the disassembler writes them; cmem (a bool) follows.
constexpr TargetKey kTargetKeys[] = {
    {"sublanes", &Target::set_sublanes},     {"lanes", &Target::set_lanes},
    {"vregs", &Target::set_vector_registers}, {"mxus", &Target::set_mxu_count},
    {"mxu_rows", &Target::set_mxu_rows},      {"mxu_cols", &Target::set_mxu_columns},
    {"dma_engines", &Target::set_dma_engines}, {"semaphores", &Target::set_semaphores},
};

// Optional (0 when left out): the MXU accumulator rows the program uses, and the TensorCores
// that run it.
constexpr std::string_view kAccRowsKey = "mxu_acc_rows";
constexpr std::string_view kCoresKey = "cores";

std::string Quote(std::string_view text) { return "'" + std::string(text) + "'"; }

class Assembler {
 public:
  explicit Assembler(std::string_view text) : text_(text) {}

  // The text as one instruction line.
  isa::Instruction OneInstruction() {
    LineCursor c(text_, 0, text_.size());
    c.SkipSpaces();
    Instruction(c);
    return std::move(*program_.mutable_instructions(0));
  }

  Program Run() {
    std::size_t begin = 0;
    while (begin <= text_.size()) {
      std::size_t end = text_.find('\n', begin);
      if (end == std::string_view::npos) end = text_.size();
      const std::size_t comment = text_.substr(begin, end - begin).find("//");
      Line(begin, comment == std::string_view::npos ? end : begin + comment);
      begin = end + 1;
    }
    if (!target_offset_) {
      throw ParseError(0, "missing .target directive: a program states the machine shape it was built for");
    }
    if (const std::optional<ProgramDefect> defect = FindProgramDefect(program_)) {
      throw ParseError(OffsetOf(defect->where), defect->message);
    }
    return std::move(program_);
  }

 private:
  void Line(std::size_t begin, std::size_t end) {
    LineCursor c(text_, begin, end);
    c.SkipSpaces();
    bool labelled = false;
    while (c.NameFollowedBy(':')) {
      DefineLabel(c);
      labelled = true;
      c.SkipSpaces();
    }
    if (c.AtEnd()) return;
    if (c.Peek('.')) {
      if (labelled) c.Fail(c.pos(), "a label names an instruction, not a directive");
      Directive(c);
    } else {
      Instruction(c);
    }
  }

  void DefineLabel(LineCursor& c) {
    const std::size_t at = c.pos();
    const std::string name(c.ReadName());
    c.SkipSpaces();
    c.Consume(':');
    if (ParseRegisterName(name)) c.Fail(at, "label " + Quote(name) + " is spelled like a register");
    if (!IsValidName(name)) c.Fail(at, "label " + Quote(name.substr(0, 40)) + " is not a valid name");
    if (const auto it = labels_.find(name); it != labels_.end()) {
      c.Fail(at, "label " + Quote(name) + " is already defined (line " + std::to_string(LineOf(it->second)) + ")");
    }
    labels_[name] = at;
    Label* label = program_.add_labels();
    label->set_name(name);
    label->set_instruction(static_cast<uint32_t>(program_.instructions_size()));
    label_offsets_.push_back(at);
  }

  // ---- directives ----

  void Directive(LineCursor& c) {
    const std::size_t at = c.pos();
    c.Consume('.');
    const std::string_view name = c.ReadName();
    if (name == "program") {
      Once(program_offset_, at, c, ".program");
      c.SkipSpaces();
      const std::size_t name_at = c.pos();
      const std::string_view program_name = c.ReadName();
      if (program_name.empty()) c.Fail(name_at, "expected a program name, found " + c.Found(name_at));
      program_.set_name(std::string(program_name));
      ExpectEnd(c);
    } else if (name == "target") {
      Once(target_offset_, at, c, ".target");
      TargetDirective(c);
    } else if (name == "buffer") {
      BufferDirective(c, at);
    } else if (name == "data") {
      DataDirective(c, at);
    } else if (name == "loop") {
      LoopDirective(c, at);
    } else {
      c.Fail(at, "unknown directive " + Quote(c.Slice(at, c.pos())) +
                     " (expected .program, .target, .buffer, .data or .loop)");
    }
  }

  void Once(std::optional<std::size_t>& offset, std::size_t at, LineCursor& c, std::string_view what) {
    if (offset) c.Fail(at, std::string(what) + " is given twice (first on line " + std::to_string(LineOf(*offset)) + ")");
    offset = at;
  }

  void TargetDirective(LineCursor& c) {
    Target* target = program_.mutable_target();
    std::set<std::string_view> required;
    for (const TargetKey& key : kTargetKeys) required.insert(key.name);
    required.insert("cmem");
    Keywords(c, ".target", required, target_offsets_, [&](std::string_view key, std::size_t at) {
      if (key == "cmem") {
        const std::string_view value = c.ReadName();
        if (value != "true" && value != "false") c.Fail(at, "cmem is true or false, found " + c.Found(at));
        target->set_has_cmem(value == "true");
        return;
      }
      const AsmNumber number = c.ReadNumber();
      if (number.negative || number.magnitude > UINT32_MAX) c.Fail(at, std::string(key) + " must be in [0, 2^32)");
      for (const TargetKey& k : kTargetKeys) {
        if (k.name == key) (target->*k.set)(static_cast<uint32_t>(number.magnitude));
      }
      if (key == kAccRowsKey) target->set_mxu_accumulator_rows(static_cast<uint32_t>(number.magnitude));
      if (key == kCoresKey) target->set_tensor_cores(static_cast<uint32_t>(number.magnitude));
    }, {kAccRowsKey, kCoresKey});
  }

  // `NAME, space[ADDRESS]` of .buffer and .data; records the offsets of both.
  void NameAndAddress(LineCursor& c, std::string_view directive, Offsets& offsets, std::string* name,
                      MemorySpace* space, uint64_t* address) {
    c.SkipSpaces();
    offsets["name"] = c.pos();
    const std::size_t name_at = c.pos();
    *name = std::string(c.ReadName());
    if (name->empty()) c.Fail(name_at, "expected a name after " + std::string(directive) + ", found " + c.Found(name_at));
    ExpectComma(c);
    Place(c, directive, offsets, space, address);
  }

  // The `space[ADDRESS]` of .buffer, .data and .loop; records its offset as "address".
  void Place(LineCursor& c, std::string_view directive, Offsets& offsets, MemorySpace* space, uint64_t* address) {
    c.SkipSpaces();
    offsets["address"] = c.pos();
    const AsmValue value = c.ReadValue();
    const std::optional<MemorySpace> parsed = ParseMemorySpaceName(value.name);
    if (value.kind != AsmValue::Kind::kBracket || !parsed) {
      c.Fail(value.begin, "expected an address such as vmem[0x1000], found " + Quote(c.Slice(value.begin, value.end)));
    }
    const AsmItem& item = value.items[0];
    if (item.reg || item.number.negative) c.Fail(item.begin, "the address of " + std::string(directive) + " is a constant >= 0");
    *space = *parsed;
    *address = item.number.magnitude;
  }

  void BufferDirective(LineCursor& c, std::size_t at) {
    Buffer* buffer = program_.add_buffers();
    Offsets& offsets = buffer_offsets_.emplace_back();
    offsets[""] = at;
    MemorySpace space = MEMORY_SPACE_HBM;
    uint64_t address = 0;
    NameAndAddress(c, ".buffer", offsets, buffer->mutable_name(), &space, &address);
    buffer->set_space(space);
    buffer->set_address(address);
    ExpectComma(c);
    Keywords(c, ".buffer", {"size", "shape", "role"}, offsets, [&](std::string_view key, std::size_t key_at) {
      if (key == "size") {
        const AsmNumber number = c.ReadNumber();
        if (number.negative) c.Fail(key_at, "a buffer's size is >= 0");
        buffer->set_size_bytes(number.magnitude);
      } else if (key == "shape") {
        buffer->set_shape(ReadShape(c));
      } else {
        const AsmValue role = c.ReadValue();
        if (role.kind == AsmValue::Kind::kName && role.name == "temporary") {
          buffer->set_role(BUFFER_ROLE_TEMPORARY);
        } else if (role.kind == AsmValue::Kind::kCall && (role.name == "parameter" || role.name == "output")) {
          if (role.number.negative || role.number.magnitude > UINT32_MAX) c.Fail(role.begin, "a role number is in [0, 2^32)");
          buffer->set_role(role.name == "parameter" ? BUFFER_ROLE_PARAMETER : BUFFER_ROLE_OUTPUT);
          buffer->set_index(static_cast<uint32_t>(role.number.magnitude));
        } else {
          c.Fail(role.begin, "expected a role: parameter(N), output(N) or temporary, found " +
                                 Quote(c.Slice(role.begin, role.end)));
        }
      }
    });
  }

  void DataDirective(LineCursor& c, std::size_t at) {
    DataSegment* data = program_.add_data();
    Offsets& offsets = data_offsets_.emplace_back();
    offsets[""] = at;
    MemorySpace space = MEMORY_SPACE_HBM;
    uint64_t address = 0;
    NameAndAddress(c, ".data", offsets, data->mutable_name(), &space, &address);
    data->set_space(space);
    data->set_address(address);
    ExpectComma(c);
    Keywords(c, ".data", {"bytes"}, offsets, [&](std::string_view, std::size_t) { data->set_data(c.ReadHexBytes()); });
  }

  // `.loop LABEL` (a loop whose ending depends on no state), or `.loop LABEL, SPACE[ADDRESS],
  // size=N`: one region of its state; the lines of one label make one loop.
  void LoopDirective(LineCursor& c, std::size_t at) {
    c.SkipSpaces();
    const std::size_t label_at = c.pos();
    const std::string label(c.ReadName());
    if (label.empty()) c.Fail(label_at, "expected a label after .loop, found " + c.Found(label_at));
    auto [it, added] = loop_numbers_.try_emplace(label, program_.loops_size());
    if (added) {
      program_.add_loops()->set_label(label);
      loop_offsets_.push_back(label_at);
      region_offsets_.emplace_back();
    }
    c.SkipSpaces();
    if (c.AtEnd()) return;
    ExpectComma(c);
    c.SkipSpaces();
    const std::size_t key_at = c.pos();
    const bool is_counter = c.ReadName() == "counter" && c.Peek('=');
    c.set_pos(key_at);
    if (is_counter) return LoopCounterLine(c, at, *program_.mutable_loops(it->second));
    Offsets& offsets = region_offsets_.at(it->second).emplace_back();
    offsets[""] = at;
    MemorySpace space = MEMORY_SPACE_HBM;
    uint64_t address = 0;
    Place(c, ".loop", offsets, &space, &address);
    Region* region = program_.mutable_loops(it->second)->add_state();
    region->set_space(space);
    region->set_address(address);
    ExpectComma(c);
    Keywords(c, ".loop", {"size"}, offsets, [&](std::string_view, std::size_t key_at) {
      const AsmNumber number = c.ReadNumber();
      if (number.negative) c.Fail(key_at, "a region's size is >= 0");
      region->set_size_bytes(number.magnitude);
    });
  }

  // `.loop LABEL, counter=SPACE[ADDRESS], type=T, step=N, while=COMPARE, bound=N` (isa::LoopCounter).
  void LoopCounterLine(LineCursor& c, std::size_t at, Loop& loop) {
    if (loop.has_counter()) c.Fail(at, "the loop at '" + loop.label() + "' has a counter already");
    LoopCounter& counter = *loop.mutable_counter();
    Offsets offsets;  // the checker places a counter's errors at the loop's first line
    std::optional<ElementType> type;
    std::size_t type_at = 0;
    Keywords(c, ".loop", {"counter", "type", "step", "while", "bound"}, offsets, [&](std::string_view key, std::size_t key_at) {
      if (key == "counter") {
        MemorySpace space = MEMORY_SPACE_HBM;
        uint64_t address = 0;
        Place(c, ".loop", offsets, &space, &address);
        counter.mutable_place()->set_space(space);
        counter.mutable_place()->set_address(address);
      } else if (key == "type") {
        type_at = c.pos();
        type = ParseElementType(c.ReadName());
        if (!type || !IsInteger(*type) || ElementBitWidth(*type) % 8 != 0) {
          c.Fail(type_at, "a loop counter's type is an integer type of whole bytes (s8 .. s64, u8 .. u64)");
        }
      } else if (key == "while") {
        const std::string_view compare = c.ReadName();
        if (compare != "EQ" && compare != "NE" && compare != "LT" && compare != "LE" && compare != "GT" && compare != "GE") {
          c.Fail(key_at, "`while` is one of EQ, NE, LT, LE, GT, GE");
        }
        counter.set_compare(std::string(compare));
      } else {
        const AsmNumber number = c.ReadNumber();
        if (!number.negative && number.magnitude > static_cast<uint64_t>(INT64_MAX)) {
          c.Fail(key_at, Quote(key) + " is a signed 64-bit number");
        }
        const int64_t value = number.negative ? static_cast<int64_t>(0 - number.magnitude) : static_cast<int64_t>(number.magnitude);
        if (key == "step") {
          counter.set_step(value);
        } else {
          counter.set_bound(value);
        }
      }
    });
    counter.set_is_signed(IsSignedInt(*type));
    counter.mutable_place()->set_size_bytes(static_cast<uint64_t>(ElementByteWidth(*type)));
  }

  // `key=value, ...` to the end of the line: each key once, each of `required` present. `read`
  // reads the value of `key`, which starts at the cursor (at offset `at`).
  template <typename Read>
  void Keywords(LineCursor& c, std::string_view directive, const std::set<std::string_view>& required,
                Offsets& offsets, Read read, const std::set<std::string_view>& optional = {}) {
    std::set<std::string, std::less<>> seen;
    std::set<std::string_view> all = required;
    all.insert(optional.begin(), optional.end());
    c.SkipSpaces();
    while (!c.AtEnd()) {
      const std::size_t at = c.pos();
      const std::string_view key = c.ReadName();
      if (key.empty() || !all.contains(key)) {
        c.Fail(at, std::string(directive) + " has no key " + (key.empty() ? c.Found(at) : Quote(key)) + " (keys: " +
                       Join(all) + ")");
      }
      if (!seen.insert(std::string(key)).second) c.Fail(at, Quote(key) + " is given twice");
      c.SkipSpaces();
      if (!c.Consume('=')) c.Fail(c.pos(), "expected '=' after " + std::string(key) + ", found " + c.Found(c.pos()));
      c.SkipSpaces();
      offsets[std::string(key)] = c.pos();
      read(key, c.pos());
      c.SkipSpaces();
      if (c.AtEnd()) break;
      ExpectComma(c);
      c.SkipSpaces();
    }
    for (std::string_view key : required) {
      if (!seen.contains(key)) c.Fail(c.TrimmedEnd(), std::string(directive) + " needs " + std::string(key) + "=");
    }
  }

  static std::string Join(const std::set<std::string_view>& keys) {
    std::string out;
    for (std::string_view key : keys) out += (out.empty() ? "" : ", ") + std::string(key);
    return out;
  }

  std::string ReadShape(LineCursor& c) {
    std::size_t pos = c.pos();
    const Shape shape = ParseShapeAt(c.text(), pos);  // ParseError offsets are already file offsets
    c.set_pos(pos);
    return ToString(shape);
  }

  void ExpectComma(LineCursor& c) {
    c.SkipSpaces();
    if (!c.Consume(',')) c.Fail(c.pos(), "expected ',', found " + c.Found(c.pos()));
  }

  void ExpectEnd(LineCursor& c) {
    c.SkipSpaces();
    if (!c.AtEnd()) c.Fail(c.pos(), "unexpected " + c.Found(c.pos()) + " at the end of the statement");
  }

  // ---- instructions ----

  void Instruction(LineCursor& c) {
    const std::size_t at = c.pos();
    const std::string_view mnemonic = c.ReadName();
    if (mnemonic.empty()) c.Fail(at, "expected an instruction, a label or a directive, found " + c.Found(at));
    const InstructionInfo* info = FindInstruction(mnemonic);
    if (info == nullptr) c.Fail(at, "unknown mnemonic " + Quote(mnemonic));
    if (!c.AtEnd() && c.text()[c.pos()] != ' ' && c.text()[c.pos()] != '\t' && c.text()[c.pos()] != '\r') {
      c.Fail(c.pos(), "expected a space after " + Quote(mnemonic) + ", found " + c.Found(c.pos()));
    }
    isa::Instruction* inst = program_.add_instructions();
    inst->set_opcode(info->opcode);
    const std::size_t count = info->operands.size();
    for (std::size_t i = 0; i < count; ++i) inst->add_operands();
    instruction_offsets_.push_back(at);
    std::vector<std::size_t>& offsets = operand_offsets_.emplace_back(count, at);

    std::vector<int> positional;
    for (std::size_t i = 0; i < count; ++i) {
      if (!info->operands[i].keyword) positional.push_back(static_cast<int>(i));
    }
    std::size_t next = 0;
    std::vector<bool> given(count, false);
    bool keyword_seen = false;
    c.SkipSpaces();
    while (!c.AtEnd()) {
      const std::size_t operand_at = c.pos();
      int index = -1;
      if (c.NameFollowedBy('=')) {
        const std::string_view key = c.ReadName();
        index = OperandIndex(*info, key);
        if (index < 0 || !info->operands[index].keyword) {
          c.Fail(operand_at, std::string(info->mnemonic) + " has no keyword operand " + Quote(key) + " (" +
                                 InstructionSignature(*info) + ")");
        }
        if (given[index]) c.Fail(operand_at, Quote(key) + " is given twice");
        c.SkipSpaces();
        c.Consume('=');
        c.SkipSpaces();
        keyword_seen = true;
      } else {
        if (keyword_seen) c.Fail(operand_at, "positional operands come before keyword operands");
        if (next >= positional.size()) {
          c.Fail(operand_at, "too many operands: " + std::to_string(positional.size()) + " expected (" +
                                 InstructionSignature(*info) + ")");
        }
        index = positional[next++];
      }
      offsets[index] = c.pos();
      *inst->mutable_operands(index) = ReadOperand(c, info->operands[index], *info);
      given[index] = true;
      c.SkipSpaces();
      if (c.AtEnd()) break;
      if (info->arrow && index == positional[0] && next == 1) {
        if (!c.Consume("->")) c.Fail(c.pos(), "expected '->' after the source address, found " + c.Found(c.pos()));
      } else if (!c.Consume(',')) {
        c.Fail(c.pos(), "expected ',' between operands, found " + c.Found(c.pos()));
      }
      c.SkipSpaces();
      if (c.AtEnd()) c.Fail(c.pos(), "expected an operand after the separator, found end of line");
    }
    if (next < positional.size()) {
      c.Fail(c.TrimmedEnd(), "too few operands: " + std::to_string(positional.size()) + " expected, found " +
                                 std::to_string(next) + " (" + InstructionSignature(*info) + ")");
    }
    for (std::size_t i = 0; i < count; ++i) {
      const OperandSpec& spec = info->operands[i];
      if (spec.keyword && !spec.optional && !given[i]) {
        c.Fail(c.TrimmedEnd(), std::string(info->mnemonic) + " needs " + std::string(spec.name) + "= (" +
                                   InstructionSignature(*info) + ")");
      }
    }
  }

  Operand ReadOperand(LineCursor& c, const OperandSpec& spec, const InstructionInfo& info) {
    Operand operand;
    if (spec.kind == OperandKind::kShape) {
      operand.set_shape(ReadShape(c));
      return operand;
    }
    const AsmValue value = c.ReadValue();
    auto wrong = [&]() {
      c.Fail(value.begin, "operand " + std::string(spec.name) + " of " + std::string(info.mnemonic) + " must be " +
                              std::string(OperandKindName(spec.kind)) + ", found " +
                              Quote(c.Slice(value.begin, value.end)));
    };
    auto is_reg = [&](RegisterName::Kind kind) {
      return value.kind == AsmValue::Kind::kRegister && value.reg.kind == kind;
    };
    auto reg_number = [&]() {
      if (value.reg.number > UINT32_MAX) c.Fail(value.begin, "register number " + Quote(c.Slice(value.begin, value.end)) + " is too large");
      return static_cast<uint32_t>(value.reg.number);
    };
    auto int64 = [&](const AsmNumber& number, std::size_t at) {
      const std::optional<int64_t> v = number.ToInt64();
      if (!v) c.Fail(at, "number " + c.Found(at) + " does not fit in a signed 64-bit immediate");
      return *v;
    };
    switch (spec.kind) {
      case OperandKind::kSReg:
        if (!is_reg(RegisterName::Kind::kSReg)) wrong();
        operand.set_sreg(reg_number());
        break;
      case OperandKind::kSRegOrImm:
        if (is_reg(RegisterName::Kind::kSReg)) {
          operand.set_sreg(reg_number());
        } else if (value.kind == AsmValue::Kind::kNumber) {
          operand.set_imm(int64(value.number, value.begin));
        } else {
          wrong();
        }
        break;
      case OperandKind::kImm:
      case OperandKind::kDmaEngine:
        if (value.kind != AsmValue::Kind::kNumber) wrong();
        operand.set_imm(int64(value.number, value.begin));
        break;
      case OperandKind::kBits:
        if (value.kind != AsmValue::Kind::kNumber) wrong();
        if (value.number.negative) c.Fail(value.begin, "a mask is not negative");
        operand.set_bits(value.number.magnitude);
        break;
      case OperandKind::kVReg:
        if (!is_reg(RegisterName::Kind::kVReg)) wrong();
        operand.set_vreg(reg_number());
        break;
      case OperandKind::kMReg:
        if (!is_reg(RegisterName::Kind::kMReg)) wrong();
        operand.set_mreg(reg_number());
        break;
      case OperandKind::kMxu:
        if (!is_reg(RegisterName::Kind::kMxu)) wrong();
        operand.set_mxu(reg_number());
        break;
      case OperandKind::kLabel:
        if (value.kind != AsmValue::Kind::kName) wrong();
        operand.set_label(std::string(value.name));
        break;
      case OperandKind::kAddress: {
        const std::optional<MemorySpace> space = ParseMemorySpaceName(value.name);
        if (value.kind != AsmValue::Kind::kBracket || !space) wrong();
        Address* address = operand.mutable_address();
        address->set_space(*space);
        const AsmItem& item = value.items[0];
        if (item.reg) address->set_reg(ScalarBase(c, item));
        address->set_offset(int64(item.number, item.begin));
        break;
      }
      case OperandKind::kSemaphore: {
        if (value.kind != AsmValue::Kind::kBracket || value.name != "sem") wrong();
        *operand.mutable_semaphore() = RegOffsetOf(c, value.items[0]);
        break;
      }
      case OperandKind::kIndex:
        if (value.kind != AsmValue::Kind::kList) wrong();
        for (const AsmItem& item : value.items) *operand.mutable_index()->add_items() = RegOffsetOf(c, item);
        break;
      case OperandKind::kSizes:
        if (value.kind != AsmValue::Kind::kList) wrong();
        for (const AsmItem& item : value.items) {
          if (item.reg) c.Fail(item.begin, "sizes are constants, not registers");
          operand.mutable_sizes()->add_items(int64(item.number, item.begin));
        }
        break;
      case OperandKind::kShape:
        break;  // handled above
    }
    return operand;
  }

  static uint32_t ScalarBase(LineCursor& c, const AsmItem& item) {
    if (item.reg->kind != RegisterName::Kind::kSReg) c.Fail(item.begin, "a base or index register is a scalar register (s0..s31)");
    if (item.reg->number > UINT32_MAX) c.Fail(item.begin, "register number is too large");
    return static_cast<uint32_t>(item.reg->number);
  }

  static RegOffset RegOffsetOf(LineCursor& c, const AsmItem& item) {
    RegOffset out;
    if (item.reg) out.set_reg(ScalarBase(c, item));
    const std::optional<int64_t> offset = item.number.ToInt64();
    if (!offset) c.Fail(item.begin, "offset does not fit in 64 bits");
    out.set_offset(*offset);
    return out;
  }

  // ---- mapping checker findings back to the text ----

  std::size_t OffsetOf(const ProgramLocation& where) const {
    auto field = [&where](const Offsets& offsets) {
      const auto it = offsets.find(where.field);
      return it != offsets.end() ? it->second : offsets.at("");
    };
    switch (where.part) {
      case ProgramLocation::Part::kProgram: return program_offset_.value_or(0);
      case ProgramLocation::Part::kTarget: {
        const auto it = target_offsets_.find(where.field);
        return it != target_offsets_.end() ? it->second : target_offset_.value_or(0);
      }
      case ProgramLocation::Part::kBuffer: return field(buffer_offsets_.at(where.index));
      case ProgramLocation::Part::kData: return field(data_offsets_.at(where.index));
      case ProgramLocation::Part::kLabel: return label_offsets_.at(where.index);
      case ProgramLocation::Part::kLoop:
        return where.operand >= 0 ? field(region_offsets_.at(where.index).at(where.operand))
                                  : loop_offsets_.at(where.index);
      case ProgramLocation::Part::kInstruction:
        return where.operand >= 0 ? operand_offsets_.at(where.index).at(where.operand)
                                  : instruction_offsets_.at(where.index);
    }
    return 0;
  }

  std::size_t LineOf(std::size_t offset) const {
    std::size_t line = 1;
    for (std::size_t i = 0; i < offset && i < text_.size(); ++i) line += text_[i] == '\n';
    return line;
  }

  std::string_view text_;
  Program program_;
  std::map<std::string, std::size_t> labels_;
  std::optional<std::size_t> program_offset_;
  std::optional<std::size_t> target_offset_;
  Offsets target_offsets_;
  std::vector<Offsets> buffer_offsets_;
  std::vector<Offsets> data_offsets_;
  std::vector<std::size_t> label_offsets_;
  std::map<std::string, int, std::less<>> loop_numbers_;  // loop by label
  std::vector<std::size_t> loop_offsets_;                  // each loop's first label
  std::vector<std::vector<Offsets>> region_offsets_;       // each loop's state regions
  std::vector<std::size_t> instruction_offsets_;
  std::vector<std::vector<std::size_t>> operand_offsets_;
};

}  // namespace

Program Assemble(std::string_view text) { return Assembler(text).Run(); }

Instruction AssembleInstruction(std::string_view line) { return Assembler(line).OneInstruction(); }

Program Assemble(std::string_view text, std::string_view source) {
  try {
    return Assemble(text);
  } catch (const ParseError& e) {
    throw Error(FormatParseError(source, text, e));
  }
}

Program AssembleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  std::ostringstream contents;
  contents << in.rdbuf();
  return Assemble(contents.str(), path);
}

}  // namespace tpusim::isa
