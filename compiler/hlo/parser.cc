// Recursive-descent parser of HLO text. The grammar (XLA's, as REFERENCE.md section 1 states it):
//   module       := ['HloModule' name [':'] (',' attribute)*] computation+
//   computation  := ['ENTRY'] name [signature] '{' instruction+ '}' [',' 'execution_thread=' string]
//   signature    := '(' [name ':' shape (',' name ':' shape)*] ')' '->' shape
//   instruction  := ['ROOT'] name '=' shape opcode '(' operands ')' (',' attribute)*
//   operands     := [[shape] name (',' [shape] name)*]   | INT (parameter) | literal (constant)
//   attribute    := name '=' value, the value's form chosen by the name (attribute.h)
// Names take an optional '%'; comments may appear wherever spaces may.
#include "compiler/hlo/parser.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/lexer.h"
#include "compiler/hlo/literal_text.h"
#include "compiler/hlo/value_parser.h"
#include "isa/error.h"

namespace tpusim::hlo {
namespace {

constexpr std::size_t kSingle = std::numeric_limits<std::size_t>::max();

// A computation named before (or after) its definition, resolved once all are parsed.
struct PendingReference {
  Instruction* instruction;
  std::size_t attribute;  // index into the instruction's attributes
  std::size_t element;    // index into a list of computations, or kSingle
  std::string_view name;
  std::size_t offset;
};

struct SignatureParameter {
  NameRef name;
  isa::Shape shape;
};

struct Signature {
  std::size_t offset = 0;
  std::vector<SignatureParameter> parameters;
  std::size_t result_offset = 0;
  isa::Shape result;
};

std::string Quote(std::string_view name) { return "'" + std::string(name) + "'"; }

class Parser {
 public:
  Parser(std::string_view text, std::string_view source_name)
      : lexer_(text), module_(std::make_unique<Module>("", std::string(source_name))) {}

  std::unique_ptr<Module> Parse() {
    lexer_.SkipTrivia();
    if (ConsumeKeyword("HloModule")) ParseHeader();
    while (true) {
      lexer_.SkipTrivia();
      if (lexer_.AtEnd()) break;
      ParseComputation();
    }
    if (module_->computations().empty()) lexer_.FailAt(lexer_.pos(), "expected a computation");
    SetEntry();
    ResolveComputationReferences();
    CheckNoCallCycles();
    CheckEntryComputationLayout();
    if (module_->name().empty()) module_->set_name(module_->entry()->name());
    return std::move(module_);
  }

 private:
  // ---- module -------------------------------------------------------------------------------

  void ParseHeader() {
    lexer_.SkipTrivia();
    const std::size_t name_offset = lexer_.pos();
    const std::string_view name = lexer_.ScanName();
    if (name.empty()) lexer_.FailAt(name_offset, "expected the module name after 'HloModule'");
    lexer_.Consume(':');  // `HloModule convolution.167:` in old dumps
    module_->set_name(std::string(name));
    while (true) {
      lexer_.SkipTrivia();
      if (!lexer_.Consume(',')) return;
      Attribute attribute = BeginAttribute([&](std::string_view n) { return module_->FindAttribute(n) != nullptr; });
      const std::string_view attribute_name = attribute.name;
      switch (ModuleAttributeKind(attribute_name)) {
        case AttributeKind::kInt: attribute.value = ParseIntValue(lexer_, attribute_name); break;
        case AttributeKind::kBool: attribute.value = ParseBoolValue(lexer_, attribute_name); break;
        case AttributeKind::kProgramShape: attribute.value = ParseProgramShape(lexer_, attribute_name); break;
        default: attribute.value = RawText{std::string(lexer_.ScanBalanced("a value for attribute " + Quote(attribute_name)))};
      }
      module_->AddAttribute(std::move(attribute));
    }
  }

  // `name=` of an attribute (after its ','); the caller parses the value.
  template <typename IsDuplicate>
  Attribute BeginAttribute(IsDuplicate&& is_duplicate) {
    lexer_.SkipTrivia();
    const std::size_t offset = lexer_.pos();
    const std::string_view name = lexer_.ScanIdentifier();
    if (name.empty()) lexer_.FailAt(offset, "expected an attribute name after ','");
    lexer_.SkipTrivia();
    if (!lexer_.Consume('=')) lexer_.Fail("expected '=' after attribute name " + Quote(name));
    lexer_.SkipTrivia();
    if (is_duplicate(name)) lexer_.FailPlain(offset, "attribute " + Quote(name) + " is given twice");
    return Attribute{std::string(name), {}, lexer_.Locate(offset)};
  }

  void SetEntry() {
    if (entry_offsets_.size() > 1) {
      lexer_.FailPlain(entry_offsets_[1], "more than one ENTRY computation ('" + entries_[0]->name() + "' and '" +
                                              entries_[1]->name() + "')");
    }
    module_->set_entry(entries_.empty() ? module_->computations().back().get() : entries_[0]);
  }

  void ResolveComputationReferences() {
    for (const PendingReference& ref : pending_) {
      Computation* computation = module_->FindComputation(ref.name);
      if (!computation) lexer_.FailPlain(ref.offset, "undefined computation " + Quote(ref.name));
      AttributeValue& value = ref.instruction->mutable_attributes()[ref.attribute].value;
      if (ref.element == kSingle) {
        std::get<Computation*>(value) = computation;
      } else {
        std::get<std::vector<Computation*>>(value)[ref.element] = computation;
      }
    }
  }

  // Computations may be referenced before their definition, so a computation could end up
  // calling itself; HLO has no recursion. Depth-first search without recursion (modules have
  // thousands of computations).
  void CheckNoCallCycles() {
    const auto& computations = module_->computations();
    std::unordered_map<const Computation*, std::size_t> index;
    std::vector<std::vector<Computation*>> callees(computations.size());
    for (std::size_t i = 0; i < computations.size(); ++i) index[computations[i].get()] = i;
    for (std::size_t i = 0; i < computations.size(); ++i) callees[i] = computations[i]->CalledComputations();
    enum Color : uint8_t { kWhite, kGray, kBlack };
    std::vector<Color> color(computations.size(), kWhite);
    for (std::size_t root = 0; root < computations.size(); ++root) {
      if (color[root] != kWhite) continue;
      std::vector<std::pair<std::size_t, std::size_t>> stack = {{root, 0}};  // (computation, next callee)
      color[root] = kGray;
      while (!stack.empty()) {
        auto& [current, next] = stack.back();
        if (next == callees[current].size()) {
          color[current] = kBlack;
          stack.pop_back();
          continue;
        }
        Computation* callee = callees[current][next++];
        const std::size_t c = index.at(callee);
        if (color[c] == kGray) ReportCycle(*computations[current], *callee);
        if (color[c] == kWhite) {
          color[c] = kGray;
          stack.emplace_back(c, 0);
        }
      }
    }
  }

  [[noreturn]] void ReportCycle(const Computation& caller, const Computation& callee) {
    std::size_t offset = caller.location().offset;
    for (const auto& instruction : caller.instructions()) {
      for (const Attribute& attribute : instruction->attributes()) {
        const auto* one = std::get_if<Computation*>(&attribute.value);
        const auto* list = std::get_if<std::vector<Computation*>>(&attribute.value);
        if ((one && *one == &callee) ||
            (list && std::find(list->begin(), list->end(), &callee) != list->end())) {
          offset = attribute.location.offset;
        }
      }
    }
    const std::string message = &caller == &callee
                                    ? "computation " + Quote(callee.name()) + " calls itself"
                                    : "computation " + Quote(callee.name()) + " calls itself through " + Quote(caller.name());
    lexer_.FailPlain(offset, message);
  }

  void CheckEntryComputationLayout() {
    const Attribute* attribute = module_->FindAttribute("entry_computation_layout");
    const ProgramShape* layout = module_->entry_computation_layout();
    if (!layout) return;
    const Computation& entry = *module_->entry();
    const std::size_t offset = attribute->location.offset;
    if (layout->parameters.size() != entry.parameters().size()) {
      lexer_.FailPlain(offset, "entry_computation_layout has " + std::to_string(layout->parameters.size()) +
                                   " parameters but ENTRY computation " + Quote(entry.name()) + " has " +
                                   std::to_string(entry.parameters().size()));
    }
    for (std::size_t i = 0; i < layout->parameters.size(); ++i) {
      const isa::Shape& actual = entry.parameters()[i]->shape();
      if (!Compatible(layout->parameters[i], actual)) {
        lexer_.FailPlain(offset, "entry_computation_layout gives parameter " + std::to_string(i) + " shape " +
                                     isa::ToString(layout->parameters[i]) + " but parameter(" + std::to_string(i) +
                                     ") of " + Quote(entry.name()) + " is " + isa::ToString(actual));
      }
    }
    if (!Compatible(layout->result, entry.root()->shape())) {
      lexer_.FailPlain(offset, "entry_computation_layout gives the result shape " + isa::ToString(layout->result) +
                                   " but ENTRY computation " + Quote(entry.name()) + " returns " +
                                   isa::ToString(entry.root()->shape()));
    }
  }

  // ---- computations -------------------------------------------------------------------------

  void ParseComputation() {
    const std::size_t entry_offset = lexer_.pos();
    const bool is_entry = ConsumeKeyword("ENTRY");
    lexer_.SkipTrivia();
    const std::size_t name_offset = lexer_.pos();
    const std::string_view name = lexer_.ScanName();
    if (name.empty()) {
      lexer_.FailAt(name_offset, is_entry ? "expected a computation name after ENTRY" : "expected a computation");
    }
    const SourceLocation location = lexer_.Locate(name_offset);
    if (const Computation* previous = module_->FindComputation(name)) {
      lexer_.FailPlain(name_offset, "duplicate computation name " + Quote(name) + " (first defined at " +
                                        FormatLocation("", previous->location()) + ")");
    }
    Computation* computation = module_->AddComputation(std::make_unique<Computation>(std::string(name)));
    computation->set_location(location);
    if (is_entry) {
      entries_.push_back(computation);
      entry_offsets_.push_back(entry_offset);
    }
    lexer_.SkipTrivia();
    std::optional<Signature> signature;
    if (lexer_.Peek() == '(') signature = ParseSignature(name);
    lexer_.Expect('{', "to open the body of computation " + Quote(name));
    Instruction* root = nullptr;
    while (true) {
      lexer_.SkipTrivia();
      if (lexer_.Consume('}')) break;
      if (lexer_.AtEnd()) lexer_.Fail("expected '}' to close computation " + Quote(name));
      ParseInstruction(*computation, root);
    }
    FinishComputation(*computation, name_offset, root, signature);
    lexer_.SkipTrivia();
    if (lexer_.Consume(',')) {
      lexer_.SkipTrivia();
      const std::size_t offset = lexer_.pos();
      if (lexer_.ScanIdentifier() != "execution_thread") {
        lexer_.FailAt(offset, "expected execution_thread=\"...\" after computation " + Quote(name));
      }
      lexer_.Expect('=', "after execution_thread");
      lexer_.SkipTrivia();
      computation->set_execution_thread(ParseQuotedValue(lexer_, "execution_thread"));
    }
  }

  Signature ParseSignature(std::string_view computation) {
    Signature signature;
    signature.offset = lexer_.pos();
    lexer_.Consume('(');
    lexer_.SkipTrivia();
    if (!lexer_.Consume(')')) {
      while (true) {
        lexer_.SkipTrivia();
        SignatureParameter parameter{ParseNameRef(lexer_, "a parameter name in the signature"), {}};
        lexer_.SkipTrivia();
        if (!lexer_.Consume(':')) lexer_.Fail("expected ':' after parameter name " + Quote(parameter.name.name));
        parameter.shape = ParseShape(lexer_);
        signature.parameters.push_back(std::move(parameter));
        lexer_.SkipTrivia();
        if (lexer_.Consume(',')) continue;
        lexer_.Expect(')', "to close the parameter list of computation " + Quote(computation));
        break;
      }
    }
    lexer_.SkipTrivia();
    if (!lexer_.ConsumeString("->")) lexer_.Fail("expected '->' after the parameter list of computation " + Quote(computation));
    lexer_.SkipTrivia();
    signature.result_offset = lexer_.pos();
    signature.result = ParseShape(lexer_);
    return signature;
  }

  void FinishComputation(Computation& computation, std::size_t name_offset, Instruction* root,
                         const std::optional<Signature>& signature) {
    const std::string& name = computation.name();
    if (computation.instructions().empty()) {
      lexer_.FailPlain(name_offset, "computation " + Quote(name) + " has no instructions");
    }
    computation.set_root(root ? root : computation.instructions().back().get());
    std::vector<Instruction*> parameters;
    for (const auto& instruction : computation.instructions()) {
      if (instruction->opcode() == Opcode::kParameter) parameters.push_back(instruction.get());
    }
    std::vector<Instruction*> by_number(parameters.size(), nullptr);
    for (Instruction* parameter : parameters) {
      const int64_t number = parameter->parameter_number();
      const std::size_t offset = parameter->location().offset;
      if (static_cast<uint64_t>(number) >= parameters.size()) {
        lexer_.FailPlain(offset, "parameter(" + std::to_string(number) + ") in computation " + Quote(name) +
                                     ", which has " + std::to_string(parameters.size()) +
                                     " parameters (numbers must be 0.." + std::to_string(parameters.size() - 1) + ")");
      }
      if (by_number[number]) {
        lexer_.FailPlain(offset, "parameter(" + std::to_string(number) + ") appears twice in computation " +
                                     Quote(name) + " (also " + Quote(by_number[number]->name()) + ")");
      }
      by_number[number] = parameter;
    }
    computation.set_parameters(by_number);
    if (signature) CheckSignature(computation, *signature);
  }

  void CheckSignature(const Computation& computation, const Signature& signature) {
    const std::string& name = computation.name();
    const auto& parameters = computation.parameters();
    if (signature.parameters.size() != parameters.size()) {
      lexer_.FailPlain(signature.offset, "computation " + Quote(name) + " has " + std::to_string(parameters.size()) +
                                             " parameters but its signature lists " +
                                             std::to_string(signature.parameters.size()));
    }
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const SignatureParameter& declared = signature.parameters[i];
      if (!Compatible(declared.shape, parameters[i]->shape())) {
        lexer_.FailPlain(declared.name.offset, "signature of computation " + Quote(name) + " gives parameter " +
                                                   std::to_string(i) + " shape " + isa::ToString(declared.shape) +
                                                   " but parameter(" + std::to_string(i) + ") " +
                                                   Quote(parameters[i]->name()) + " is " +
                                                   isa::ToString(parameters[i]->shape()));
      }
    }
    if (!Compatible(signature.result, computation.root()->shape())) {
      lexer_.FailPlain(signature.result_offset, "signature of computation " + Quote(name) + " returns " +
                                                    isa::ToString(signature.result) + " but its ROOT " +
                                                    Quote(computation.root()->name()) + " is " +
                                                    isa::ToString(computation.root()->shape()));
    }
  }

  // ---- instructions -------------------------------------------------------------------------

  void ParseInstruction(Computation& computation, Instruction*& root) {
    const bool is_root = ConsumeKeyword("ROOT");
    lexer_.SkipTrivia();
    const std::size_t name_offset = lexer_.pos();
    const std::string_view name = lexer_.ScanName();
    if (name.empty()) {
      lexer_.FailAt(name_offset, is_root ? "expected an instruction name after ROOT"
                                         : "expected an instruction or '}' to close computation " +
                                               Quote(computation.name()));
    }
    const SourceLocation location = lexer_.Locate(name_offset);
    if (const Instruction* previous = computation.FindInstruction(name)) {
      lexer_.FailPlain(name_offset, "duplicate instruction name " + Quote(name) + " in computation " +
                                        Quote(computation.name()) + " (first defined at " +
                                        FormatLocation("", previous->location()) + ")");
    }
    lexer_.SkipTrivia();
    if (!lexer_.Consume('=')) lexer_.Fail("expected '=' after instruction name " + Quote(name));
    isa::Shape shape = ParseShape(lexer_);
    lexer_.SkipTrivia();
    const std::size_t opcode_offset = lexer_.pos();
    const std::string_view opcode_name = lexer_.ScanIdentifier();
    if (opcode_name.empty()) lexer_.FailAt(opcode_offset, "expected an opcode after the shape of " + Quote(name));
    std::optional<Opcode> opcode = ParseOpcode(opcode_name);
    std::optional<Opcode> wrapped;
    if (!opcode) {
      const std::optional<AsyncOpcode> async = ParseAsyncOpcode(opcode_name);
      if (!async) lexer_.FailPlain(opcode_offset, "unknown opcode " + Quote(opcode_name));
      opcode = async->async;
      wrapped = async->wrapped;
    }
    auto instruction = std::make_unique<Instruction>(std::string(name), *opcode, std::move(shape));
    instruction->set_location(location);
    instruction->set_async_wrapped_opcode(wrapped);
    lexer_.SkipTrivia();
    const std::size_t open_offset = lexer_.pos();
    if (!lexer_.Consume('(')) lexer_.Fail("expected '(' after opcode " + Quote(opcode_name));
    if (*opcode == Opcode::kParameter) {
      lexer_.SkipTrivia();
      const std::size_t number_offset = lexer_.pos();
      const int64_t number = lexer_.ScanInt("a parameter number");
      if (number < 0) lexer_.FailPlain(number_offset, "parameter number " + std::to_string(number) + " is negative");
      instruction->set_parameter_number(number);
      lexer_.Expect(')', "to close parameter(...)");
    } else if (*opcode == Opcode::kConstant) {
      ParseConstant(*instruction, open_offset);
    } else {
      ParseOperands(computation, *instruction);
    }
    ParseAttributes(computation, *instruction);
    // As XLA's parser: a broadcast of a scalar may leave out its dimensions, which are then {}.
    if (*opcode == Opcode::kBroadcast && !instruction->HasAttribute("dimensions") && instruction->operand_count() == 1 &&
        !instruction->operand(0)->shape().is_tuple && instruction->operand(0)->shape().rank() == 0) {
      instruction->AddAttribute({"dimensions", std::vector<int64_t>{}, location});
    }
    Instruction* added = computation.AddInstruction(std::move(instruction));
    if (is_root) {
      if (root) {
        lexer_.FailPlain(name_offset, "computation " + Quote(computation.name()) + " has more than one ROOT (" +
                                          Quote(root->name()) + " and " + Quote(name) + ")");
      }
      root = added;
    }
  }

  // After `constant(`: the value, kept as a Literal where tpusim can hold it, else as text.
  void ParseConstant(Instruction& instruction, std::size_t open_offset) {
    lexer_.SkipTrivia();
    const std::size_t start = lexer_.pos();
    if (lexer_.ConsumeString("{...}")) {
      lexer_.Expect(')', "to close constant(...)");
      instruction.set_constant(ConstantForm::kElided, std::nullopt, "{...}");
      return;
    }
    std::optional<Literal> literal;
    std::size_t end = 0;
    if (LiteralCanHold(instruction.shape())) {
      literal = ParseLiteral(lexer_, instruction.shape());
      end = lexer_.pos();
      lexer_.Expect(')', "to close constant(...)");
    } else {
      lexer_.SkipToClosingParen(open_offset);
      end = lexer_.pos() - 1;
      while (end > start && IsSpace(lexer_.text()[end - 1])) --end;
      if (end == start) lexer_.FailPlain(start, "constant(...) needs a value");
    }
    const ConstantForm form = literal ? ConstantForm::kLiteral : ConstantForm::kText;
    instruction.set_constant(form, std::move(literal), std::string(lexer_.text().substr(start, end - start)));
  }

  void ParseOperands(const Computation& computation, Instruction& instruction) {
    lexer_.SkipTrivia();
    if (lexer_.Consume(')')) return;
    while (true) {
      lexer_.SkipTrivia();
      const std::size_t operand_offset = lexer_.pos();
      std::optional<isa::Shape> written;
      if (ShapeFollows()) {
        written = ParseShape(lexer_);
        lexer_.SkipTrivia();
      }
      const NameRef ref = ParseNameRef(lexer_, "an operand name");
      Instruction* operand = computation.FindInstruction(ref.name);
      if (!operand) {
        lexer_.FailPlain(ref.offset, "use of undefined instruction " + Quote(ref.name) +
                                         " (operands must be defined earlier in computation " +
                                         Quote(computation.name()) + ")");
      }
      if (written && !Compatible(*written, operand->shape())) {
        lexer_.FailPlain(operand_offset, "operand " + Quote(ref.name) + " is written with shape " +
                                             isa::ToString(*written) + " but " + Quote(ref.name) + " has shape " +
                                             isa::ToString(operand->shape()));
      }
      instruction.AddOperand(operand);
      lexer_.SkipTrivia();
      if (lexer_.Consume(',')) continue;
      lexer_.Expect(')', "to close the operands of " + Quote(instruction.name()));
      return;
    }
  }

  // An operand written with its shape: `f32[2]{0} %x`, `(f32[], s32[]) %t`.
  bool ShapeFollows() const {
    const std::string_view text = lexer_.text();
    std::size_t p = lexer_.pos();
    if (p < text.size() && text[p] == '(') return true;
    const std::size_t start = p;
    while (p < text.size() && ((text[p] >= 'a' && text[p] <= 'z') || IsDigit(text[p]))) ++p;
    return p > start && p < text.size() && text[p] == '[' && isa::ParseElementType(text.substr(start, p - start));
  }

  void ParseAttributes(const Computation& computation, Instruction& instruction) {
    while (true) {
      lexer_.SkipTrivia();
      if (!lexer_.Consume(',')) return;
      Attribute attribute = BeginAttribute([&](std::string_view n) { return instruction.HasAttribute(n); });
      attribute.value = ParseAttributeValue(computation, instruction, attribute.name);
      instruction.AddAttribute(std::move(attribute));
    }
  }

  AttributeValue ParseAttributeValue(const Computation& computation, Instruction& instruction,
                                     std::string_view name) {
    switch (InstructionAttributeKind(name)) {
      case AttributeKind::kInt: return ParseIntValue(lexer_, name);
      case AttributeKind::kBool: return ParseBoolValue(lexer_, name);
      case AttributeKind::kDouble: return ParseDoubleValue(lexer_, name);
      case AttributeKind::kQuotedString: return QuotedString{ParseQuotedValue(lexer_, name)};
      case AttributeKind::kIdentifier: return ParseIdentifier(name);
      case AttributeKind::kIdentifierList: return ParseIdentifierList(lexer_, name);
      case AttributeKind::kIntList: return ParseIntList(lexer_, name);
      case AttributeKind::kWindow: return ParseWindow(lexer_, name);
      case AttributeKind::kConvolutionDimensionNumbers: return ParseDimLabels(lexer_, name);
      case AttributeKind::kSliceList: return ParseSlice(lexer_, name);
      case AttributeKind::kPaddingConfig: return ParsePadding(lexer_, name);
      case AttributeKind::kReplicaGroups: return ParseReplicaGroups(lexer_, name);
      case AttributeKind::kSourceTargetPairs: return ParseSourceTargetPairs(lexer_, name);
      case AttributeKind::kComputation: return ParseComputationRef(instruction, name);
      case AttributeKind::kComputationList: return ParseComputationRefs(instruction, name);
      case AttributeKind::kComputationOrList:
        if (lexer_.Peek() == '{') return ParseComputationRefs(instruction, name);
        return ParseComputationRef(instruction, name);
      case AttributeKind::kInstructionList: return ParseInstructionRefs(computation, name);
      case AttributeKind::kStringOrRaw:
        if (lexer_.Peek() == '"') return QuotedString{lexer_.ScanQuoted()};
        return RawText{std::string(lexer_.ScanBalanced("a value for attribute " + Quote(name)))};
      case AttributeKind::kProgramShape:  // module attributes only
      case AttributeKind::kRaw: break;
    }
    return RawText{std::string(lexer_.ScanBalanced("a value for attribute " + Quote(name)))};
  }

  Identifier ParseIdentifier(std::string_view name) {
    const std::size_t offset = lexer_.pos();
    const std::string_view word = ParseIdentifierValue(lexer_, name);
    if (name == "direction" && word != "EQ" && word != "NE" && word != "LT" && word != "LE" && word != "GT" &&
        word != "GE") {
      lexer_.FailPlain(offset, "unknown comparison direction " + Quote(word) + " (expected EQ, NE, LT, LE, GT or GE)");
    }
    return Identifier{std::string(word)};
  }

  Computation* ParseComputationRef(Instruction& instruction, std::string_view name) {
    const NameRef ref = ParseNameRef(lexer_, "a computation name for attribute " + Quote(name));
    pending_.push_back({&instruction, instruction.attributes().size(), kSingle, ref.name, ref.offset});
    return nullptr;
  }

  std::vector<Computation*> ParseComputationRefs(Instruction& instruction, std::string_view name) {
    const std::vector<NameRef> refs = ParseNameList(lexer_, name, "a computation name");
    for (std::size_t i = 0; i < refs.size(); ++i) {
      pending_.push_back({&instruction, instruction.attributes().size(), i, refs[i].name, refs[i].offset});
    }
    return std::vector<Computation*>(refs.size(), nullptr);
  }

  std::vector<Instruction*> ParseInstructionRefs(const Computation& computation, std::string_view name) {
    std::vector<Instruction*> instructions;
    for (const NameRef& ref : ParseNameList(lexer_, name, "an instruction name")) {
      Instruction* instruction = computation.FindInstruction(ref.name);
      if (!instruction) {
        lexer_.FailPlain(ref.offset, "use of undefined instruction " + Quote(ref.name) + " in attribute " + Quote(name) +
                                         " (it must be defined earlier in computation " + Quote(computation.name()) + ")");
      }
      instructions.push_back(instruction);
    }
    return instructions;
  }

  // ---- helpers ------------------------------------------------------------------------------

  // `word` at the cursor, not followed by a name character (`ENTRY` but not `ENTRY_2`).
  bool ConsumeKeyword(std::string_view word) {
    const std::string_view text = lexer_.text();
    const std::size_t pos = lexer_.pos();
    if (text.substr(pos, word.size()) != word) return false;
    if (pos + word.size() < text.size() && IsNameChar(text[pos + word.size()])) return false;
    lexer_.set_pos(pos + word.size());
    return true;
  }

  Lexer lexer_;
  std::unique_ptr<Module> module_;
  std::vector<PendingReference> pending_;
  std::vector<Computation*> entries_;
  std::vector<std::size_t> entry_offsets_;
};

}  // namespace

std::unique_ptr<Module> ParseModule(std::string_view text, std::string_view source_name) {
  try {
    Parser parser(text, source_name);
    return parser.Parse();
  } catch (const ParseError& error) {
    throw Error(FormatParseError(source_name, text, error));
  }
}

}  // namespace tpusim::hlo
