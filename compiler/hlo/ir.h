// The HLO IR: a Module owns Computations, a Computation owns Instructions, in the order the text
// gave them. It holds what the text says (shapes as written, attributes in order, typed by name as
// XLA's parser types them) and where it said it (SourceLocation), so that a verifier can report
// `file:line:col` and the printer can write it back. Build one with ParseModule (parser.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/hlo/attribute.h"
#include "compiler/hlo/literal.h"
#include "compiler/hlo/opcode.h"
#include "isa/shape.h"

namespace tpusim::hlo {

class Computation;
class Module;

// How a constant's value was written.
enum class ConstantForm {
  kLiteral,  // parsed into literal()
  kText,     // an element type Literal cannot hold (c64, s4, f8e4m3b11fnuz...): literal_text() only
  kElided,   // `{...}`: the dump left the value out; no literal()
};

class Instruction {
 public:
  Instruction(std::string name, Opcode opcode, isa::Shape shape);

  const std::string& name() const { return name_; }
  Opcode opcode() const { return opcode_; }
  // For XLA's `<op>-start` shorthand (`fusion-start`): the wrapped operation's opcode, opcode()
  // being kAsyncStart / kAsyncUpdate / kAsyncDone.
  const std::optional<Opcode>& async_wrapped_opcode() const { return async_wrapped_opcode_; }
  const isa::Shape& shape() const { return shape_; }
  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(std::size_t i) const { return operands_.at(i); }
  std::size_t operand_count() const { return operands_.size(); }
  const std::vector<Attribute>& attributes() const { return attributes_; }
  Computation* parent() const { return parent_; }
  const SourceLocation& location() const { return location_; }
  bool is_root() const;

  // parameter(N): N. -1 for other opcodes.
  int64_t parameter_number() const { return parameter_number_; }

  // constant(...): how it was written, its value (nullptr unless form kLiteral), and its text
  // as written (always set for constants, the only content for kText).
  ConstantForm constant_form() const { return constant_form_; }
  const Literal* literal() const { return literal_ ? &*literal_ : nullptr; }
  const std::string& literal_text() const { return literal_text_; }

  // The attribute named `name`, or nullptr.
  const Attribute* FindAttribute(std::string_view name) const;
  bool HasAttribute(std::string_view name) const { return FindAttribute(name) != nullptr; }
  // The attribute's value if it is present and of type T, else nullptr.
  template <typename T>
  const T* Find(std::string_view name) const {
    const Attribute* attribute = FindAttribute(name);
    return attribute ? std::get_if<T>(&attribute->value) : nullptr;
  }

  // Typed accessors. Each throws tpusim::Error, naming the instruction and its `file:line:col`,
  // when the attribute is missing or of another type; the ones taking a default return it when
  // the attribute is missing.
  int64_t GetInt(std::string_view name) const;
  int64_t GetInt(std::string_view name, int64_t default_value) const;
  bool GetBool(std::string_view name) const;
  bool GetBool(std::string_view name, bool default_value) const;
  double GetDouble(std::string_view name) const;
  const std::string& GetString(std::string_view name) const;      // quoted strings
  const std::string& GetIdentifier(std::string_view name) const;  // direction=LT -> "LT"
  const std::vector<int64_t>& GetIntList(std::string_view name) const;
  // A dimension-number list that may be left out (lhs_batch_dims, inserted_window_dims, ...): an
  // absent one is empty, as XLA's parser reads it.
  std::vector<int64_t> GetIntListOrEmpty(std::string_view name) const {
    const auto* list = Find<std::vector<int64_t>>(name);
    return list ? *list : std::vector<int64_t>{};
  }
  const Window& GetWindow(std::string_view name = "window") const;
  const ConvolutionDimensionNumbers& GetConvolutionDimensionNumbers(std::string_view name = "dim_labels") const;
  const std::vector<SliceDimension>& GetSlice(std::string_view name = "slice") const;
  const PaddingConfig& GetPaddingConfig(std::string_view name = "padding") const;
  const ReplicaGroups& GetReplicaGroups(std::string_view name = "replica_groups") const;
  const std::vector<SourceTargetPair>& GetSourceTargetPairs(std::string_view name = "source_target_pairs") const;
  Computation* GetComputation(std::string_view name) const;  // also calls={%one}
  const std::vector<Computation*>& GetComputations(std::string_view name) const;
  const std::string& GetRawText(std::string_view name) const;  // metadata, sharding, ...
  // control-predecessors={...}; empty when there are none.
  std::vector<Instruction*> control_predecessors() const;
  // The computations this instruction calls (to_apply, condition and body, branches, calls=...),
  // in attribute order; none null.
  std::vector<Computation*> CalledComputations() const;

  // "file:line:col: instruction 'name'" (or without the location, if not parsed): how errors
  // about this instruction begin.
  std::string Describe() const;

  // Building (the parser; passes later).
  void set_async_wrapped_opcode(std::optional<Opcode> wrapped) { async_wrapped_opcode_ = wrapped; }
  void set_location(SourceLocation location) { location_ = location; }
  // An instruction built outside any computation to be lowered on behalf of `original` (a
  // kernel's canonical form) reads as it: its errors name original's file and line.
  void DescribeAs(const Instruction& original) {
    parent_ = original.parent_;
    location_ = original.location_;
  }
  // Passes: layout assignment gives shapes their layouts.
  void set_shape(isa::Shape shape) { shape_ = std::move(shape); }
  void set_parameter_number(int64_t number) { parameter_number_ = number; }
  void set_constant(ConstantForm form, std::optional<Literal> literal, std::string text);
  void AddOperand(Instruction* operand) { operands_.push_back(operand); }
  // Passes: operand i becomes `operand` (the caller keeps shapes consistent).
  void ReplaceOperand(std::size_t i, Instruction* operand) { operands_.at(i) = operand; }
  void AddAttribute(Attribute attribute) { attributes_.push_back(std::move(attribute)); }
  std::vector<Attribute>& mutable_attributes() { return attributes_; }
  // The attribute's value for a pass to change, if it is present and of type T, else nullptr.
  template <typename T>
  T* FindMutable(std::string_view name) {
    for (Attribute& attribute : attributes_) {
      if (attribute.name == name) return std::get_if<T>(&attribute.value);
    }
    return nullptr;
  }

 private:
  friend class Computation;
  friend class Module;  // Clone
  template <typename T>
  const T& Get(std::string_view name, std::string_view type) const;

  std::string name_;
  Opcode opcode_;
  std::optional<Opcode> async_wrapped_opcode_;
  isa::Shape shape_;
  std::vector<Instruction*> operands_;
  std::vector<Attribute> attributes_;
  int64_t parameter_number_ = -1;
  ConstantForm constant_form_ = ConstantForm::kLiteral;
  std::optional<Literal> literal_;
  std::string literal_text_;
  SourceLocation location_;
  Computation* parent_ = nullptr;
};

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  bool is_entry() const { return is_entry_; }
  const std::optional<std::string>& execution_thread() const { return execution_thread_; }
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }
  std::size_t instruction_count() const { return instructions_.size(); }
  // Parameters by number: parameters()[i] is parameter(i).
  const std::vector<Instruction*>& parameters() const { return parameters_; }
  Instruction* root() const { return root_; }
  Module* parent() const { return parent_; }
  const SourceLocation& location() const { return location_; }
  // The instruction named `name` (without '%') in this computation, or nullptr.
  Instruction* FindInstruction(std::string_view name) const;
  // The computations this one's instructions refer to (to_apply, calls, branches...), each once,
  // in order of first reference.
  std::vector<Computation*> CalledComputations() const;

  // Building. AddInstruction takes ownership, sets the parent, and throws tpusim::Error for a
  // duplicate name. set_parameters orders them by number.
  Instruction* AddInstruction(std::unique_ptr<Instruction> instruction);
  // Removes an instruction nothing reads (passes: after folding it into its users); throws
  // tpusim::Error for the root, a parameter or an instruction that is still read.
  void RemoveInstruction(Instruction* instruction);
  // Removes every instruction in `dead` in one pass over the computation (passes that drop many):
  // throws tpusim::Error, removing none, for the root, a parameter or one that a kept instruction
  // reads.
  void RemoveInstructions(const std::unordered_set<const Instruction*>& dead);
  // Renames `instruction`; throws tpusim::Error if another instruction has the name.
  void RenameInstruction(Instruction* instruction, std::string name);
  // Makes every reader of `old_value` (and the root, if it is `old_value`) read `new_value`.
  void ReplaceUses(Instruction* old_value, Instruction* new_value);
  void set_root(Instruction* root) { root_ = root; }
  // Reorders the instructions so that every one follows its operands (and control
  // predecessors), keeping the present order where it already does: passes that append
  // instructions read by earlier ones call it before anything walks the computation in order.
  void OrderOperandsFirst();
  void set_parameters(std::vector<Instruction*> parameters) { parameters_ = std::move(parameters); }
  void set_execution_thread(std::optional<std::string> thread) { execution_thread_ = std::move(thread); }
  void set_location(SourceLocation location) { location_ = location; }

 private:
  friend class Module;
  std::string name_;
  bool is_entry_ = false;
  std::optional<std::string> execution_thread_;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  std::unordered_map<std::string_view, Instruction*> by_name_;  // keys view instructions' names
  std::vector<Instruction*> parameters_;
  Instruction* root_ = nullptr;
  SourceLocation location_;
  Module* parent_ = nullptr;
};

class Module {
 public:
  explicit Module(std::string name, std::string source_name = "")
      : name_(std::move(name)), source_name_(std::move(source_name)) {}

  const std::string& name() const { return name_; }
  // The file (or description) the module was parsed from; used in error messages.
  const std::string& source_name() const { return source_name_; }
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }
  Computation* entry() const { return entry_; }
  Computation* FindComputation(std::string_view name) const;

  // Attributes of the `HloModule` line, in order. replica_count, num_partitions (int),
  // is_scheduled (bool) and entry_computation_layout (ProgramShape) are typed; the rest are raw.
  const std::vector<Attribute>& attributes() const { return attributes_; }
  const Attribute* FindAttribute(std::string_view name) const;
  int64_t replica_count() const;   // 1 when not given
  int64_t num_partitions() const;  // 1 when not given
  bool is_scheduled() const;       // false when not given
  const ProgramShape* entry_computation_layout() const;  // nullptr when not given

  // Building. AddComputation takes ownership and throws tpusim::Error for a duplicate name.
  void set_name(std::string name) { name_ = std::move(name); }
  Computation* AddComputation(std::unique_ptr<Computation> computation);
  void set_entry(Computation* entry);
  // A deep copy: the same computations, instructions, attributes and locations, every operand,
  // called computation and control predecessor pointing into the copy (Compile rewrites its own
  // copy, leaving its caller's module as written).
  std::unique_ptr<Module> Clone() const;
  // Hands over every computation (passes that parse generated HLO and move it into another
  // module); this module is left empty, without an entry.
  std::vector<std::unique_ptr<Computation>> ReleaseComputations();
  void AddAttribute(Attribute attribute) { attributes_.push_back(std::move(attribute)); }
  std::vector<Attribute>& mutable_attributes() { return attributes_; }
  // Sets the HloModule line's int attribute `name` (replica_count, num_partitions), adding it
  // where the line has none.
  void SetIntAttribute(std::string_view name, int64_t value);

 private:
  std::string name_;
  std::string source_name_;
  std::vector<Attribute> attributes_;
  std::vector<std::unique_ptr<Computation>> computations_;
  std::unordered_map<std::string_view, Computation*> by_name_;
  Computation* entry_ = nullptr;
};

// "file:line:col" for a location in a module parsed from `source_name` ("line:col" if the name
// is empty, "" if the location is unknown).
std::string FormatLocation(std::string_view source_name, const SourceLocation& location);

}  // namespace tpusim::hlo
