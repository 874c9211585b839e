#include "compiler/hlo/ir.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "isa/error.h"

namespace tpusim::hlo {

std::string FormatLocation(std::string_view source_name, const SourceLocation& location) {
  if (!location.known()) return std::string(source_name);
  std::string out(source_name);
  if (!out.empty()) out += ":";
  return out + std::to_string(location.line) + ":" + std::to_string(location.column);
}

// ---- Instruction ------------------------------------------------------------------------------

Instruction::Instruction(std::string name, Opcode opcode, isa::Shape shape)
    : name_(std::move(name)), opcode_(opcode), shape_(std::move(shape)) {}

bool Instruction::is_root() const { return parent_ && parent_->root() == this; }

void Instruction::set_constant(ConstantForm form, std::optional<Literal> literal, std::string text) {
  constant_form_ = form;
  literal_ = std::move(literal);
  literal_text_ = std::move(text);
}

const Attribute* Instruction::FindAttribute(std::string_view name) const {
  for (const Attribute& attribute : attributes_) {
    if (attribute.name == name) return &attribute;
  }
  return nullptr;
}

std::string Instruction::Describe() const {
  const Module* module = parent_ ? parent_->parent() : nullptr;
  std::string where = FormatLocation(module ? module->source_name() : "", location_);
  if (!where.empty()) where += ": ";
  return where + "instruction '" + name_ + "'";
}

template <typename T>
const T& Instruction::Get(std::string_view name, std::string_view type) const {
  const Attribute* attribute = FindAttribute(name);
  if (!attribute) throw Error(Describe() + " has no attribute '" + std::string(name) + "'");
  const T* value = std::get_if<T>(&attribute->value);
  if (!value) {
    throw Error(Describe() + ": attribute '" + std::string(name) + "' is not " + std::string(type));
  }
  return *value;
}

int64_t Instruction::GetInt(std::string_view name) const { return Get<int64_t>(name, "an integer"); }

int64_t Instruction::GetInt(std::string_view name, int64_t default_value) const {
  return HasAttribute(name) ? GetInt(name) : default_value;
}

bool Instruction::GetBool(std::string_view name) const { return Get<bool>(name, "a boolean"); }

bool Instruction::GetBool(std::string_view name, bool default_value) const {
  return HasAttribute(name) ? GetBool(name) : default_value;
}

double Instruction::GetDouble(std::string_view name) const { return Get<double>(name, "a number"); }

const std::string& Instruction::GetString(std::string_view name) const {
  return Get<QuotedString>(name, "a quoted string").value;
}

const std::string& Instruction::GetIdentifier(std::string_view name) const {
  return Get<Identifier>(name, "an identifier").text;
}

const std::vector<int64_t>& Instruction::GetIntList(std::string_view name) const {
  return Get<std::vector<int64_t>>(name, "a list of integers");
}

const Window& Instruction::GetWindow(std::string_view name) const { return Get<Window>(name, "a window"); }

const ConvolutionDimensionNumbers& Instruction::GetConvolutionDimensionNumbers(std::string_view name) const {
  return Get<ConvolutionDimensionNumbers>(name, "convolution dimension labels");
}

const std::vector<SliceDimension>& Instruction::GetSlice(std::string_view name) const {
  return Get<std::vector<SliceDimension>>(name, "a slice");
}

const PaddingConfig& Instruction::GetPaddingConfig(std::string_view name) const {
  return Get<PaddingConfig>(name, "a padding config");
}

const ReplicaGroups& Instruction::GetReplicaGroups(std::string_view name) const {
  return Get<ReplicaGroups>(name, "replica groups");
}

const std::vector<SourceTargetPair>& Instruction::GetSourceTargetPairs(std::string_view name) const {
  return Get<std::vector<SourceTargetPair>>(name, "source-target pairs");
}

Computation* Instruction::GetComputation(std::string_view name) const {
  if (const auto* list = Find<std::vector<Computation*>>(name); list && list->size() == 1) {
    return list->front();
  }
  return Get<Computation*>(name, "a computation");
}

const std::vector<Computation*>& Instruction::GetComputations(std::string_view name) const {
  return Get<std::vector<Computation*>>(name, "a list of computations");
}

const std::string& Instruction::GetRawText(std::string_view name) const {
  return Get<RawText>(name, "raw text").text;
}

std::vector<Instruction*> Instruction::control_predecessors() const {
  const auto* list = Find<std::vector<Instruction*>>("control-predecessors");
  return list ? *list : std::vector<Instruction*>{};
}

// ---- Computation ------------------------------------------------------------------------------

Instruction* Computation::FindInstruction(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> instruction) {
  if (FindInstruction(instruction->name())) {
    throw Error("computation '" + name_ + "' already has an instruction named '" + instruction->name() + "'");
  }
  instruction->parent_ = this;
  Instruction* raw = instruction.get();
  instructions_.push_back(std::move(instruction));
  by_name_.emplace(raw->name(), raw);
  return raw;
}

void Computation::RemoveInstruction(Instruction* instruction) {
  if (instruction == root_ || instruction->opcode() == Opcode::kParameter) {
    throw Error(instruction->Describe() + ": the root and parameters cannot be removed");
  }
  for (const auto& other : instructions_) {
    const auto& operands = other->operands();
    if (std::find(operands.begin(), operands.end(), instruction) != operands.end()) {
      throw Error(instruction->Describe() + ": cannot be removed while '" + other->name() + "' reads it");
    }
  }
  const auto it = std::find_if(instructions_.begin(), instructions_.end(),
                               [&](const std::unique_ptr<Instruction>& x) { return x.get() == instruction; });
  if (it == instructions_.end()) throw Error(instruction->Describe() + ": not in computation '" + name_ + "'");
  by_name_.erase(instruction->name());
  instructions_.erase(it);
}

void Computation::RemoveInstructions(const std::unordered_set<const Instruction*>& dead) {
  for (const auto& x : instructions_) {
    if (dead.contains(x.get())) {
      if (x.get() == root_ || x->opcode() == Opcode::kParameter) {
        throw Error(x->Describe() + ": the root and parameters cannot be removed");
      }
      continue;
    }
    for (const Instruction* operand : x->operands()) {
      if (dead.contains(operand)) {
        throw Error(operand->Describe() + ": cannot be removed while '" + x->name() + "' reads it");
      }
    }
  }
  for (const auto& x : instructions_) {
    if (dead.contains(x.get())) by_name_.erase(x->name());
  }
  std::erase_if(instructions_, [&](const std::unique_ptr<Instruction>& x) { return dead.contains(x.get()); });
}

void Computation::RenameInstruction(Instruction* instruction, std::string name) {
  if (FindInstruction(name) != nullptr) {
    throw Error("computation '" + name_ + "' already has an instruction named '" + name + "'");
  }
  by_name_.erase(instruction->name());
  instruction->name_ = std::move(name);
  by_name_.emplace(instruction->name_, instruction);
}

void Computation::ReplaceUses(Instruction* old_value, Instruction* new_value) {
  for (const auto& user : instructions_) {
    for (std::size_t i = 0; i < user->operand_count(); ++i) {
      if (user->operand(i) == old_value) user->ReplaceOperand(i, new_value);
    }
  }
  if (root_ == old_value) root_ = new_value;
}

std::vector<Computation*> Instruction::CalledComputations() const {
  std::vector<Computation*> called;
  for (const Attribute& attribute : attributes_) {
    if (const auto* one = std::get_if<Computation*>(&attribute.value); one && *one) called.push_back(*one);
    if (const auto* list = std::get_if<std::vector<Computation*>>(&attribute.value)) {
      for (Computation* c : *list) {
        if (c) called.push_back(c);
      }
    }
  }
  return called;
}

std::vector<Computation*> Computation::CalledComputations() const {
  std::vector<Computation*> called;
  for (const auto& instruction : instructions_) {
    for (Computation* c : instruction->CalledComputations()) {
      if (std::find(called.begin(), called.end(), c) == called.end()) called.push_back(c);
    }
  }
  return called;
}

// ---- Module -----------------------------------------------------------------------------------

Computation* Module::FindComputation(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Computation* Module::AddComputation(std::unique_ptr<Computation> computation) {
  if (FindComputation(computation->name())) {
    throw Error("module '" + name_ + "' already has a computation named '" + computation->name() + "'");
  }
  computation->parent_ = this;
  Computation* raw = computation.get();
  computations_.push_back(std::move(computation));
  by_name_.emplace(raw->name(), raw);
  return raw;
}

void Computation::OrderOperandsFirst() {
  std::unordered_map<const Instruction*, std::size_t> position;
  for (std::size_t i = 0; i < instructions_.size(); ++i) position[instructions_[i].get()] = i;
  std::vector<std::unique_ptr<Instruction>> ordered;
  std::vector<int> state(instructions_.size(), 0);  // 0 unvisited, 1 on the stack, 2 placed
  // Depth-first, operands before users; an explicit stack, as chains can be long.
  for (std::size_t start = 0; start < instructions_.size(); ++start) {
    std::vector<std::pair<std::size_t, std::size_t>> stack = {{start, 0}};
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      if (state[i] == 2) {
        stack.pop_back();
        continue;
      }
      state[i] = 1;
      const Instruction& x = *instructions_[i];
      std::vector<Instruction*> before = x.operands();
      for (Instruction* p : x.control_predecessors()) before.push_back(p);
      if (next < before.size()) {
        const std::size_t operand = position.at(before[next++]);
        if (state[operand] == 1) throw Error(x.Describe() + " is part of a cycle");
        if (state[operand] == 0) stack.push_back({operand, 0});
        continue;
      }
      state[i] = 2;
      ordered.push_back(std::move(instructions_[i]));
      stack.pop_back();
    }
  }
  instructions_ = std::move(ordered);
}

std::vector<std::unique_ptr<Computation>> Module::ReleaseComputations() {
  set_entry(nullptr);
  by_name_.clear();
  for (const auto& computation : computations_) computation->parent_ = nullptr;
  return std::move(computations_);
}

std::unique_ptr<Module> Module::Clone() const {
  auto copy = std::make_unique<Module>(name_, source_name_);
  copy->attributes_ = attributes_;  // the HloModule line's: no instructions or computations in them
  std::unordered_map<const Computation*, Computation*> computations;
  std::unordered_map<const Instruction*, Instruction*> instructions;
  for (const auto& computation : computations_) {
    auto c = std::make_unique<Computation>(computation->name_);
    c->execution_thread_ = computation->execution_thread_;
    c->location_ = computation->location_;
    computations[computation.get()] = copy->AddComputation(std::move(c));
  }
  for (const auto& computation : computations_) {
    Computation* c = computations.at(computation.get());
    for (const auto& x : computation->instructions_) {
      auto y = std::make_unique<Instruction>(x->name_, x->opcode_, x->shape_);
      y->async_wrapped_opcode_ = x->async_wrapped_opcode_;
      y->attributes_ = x->attributes_;
      y->parameter_number_ = x->parameter_number_;
      y->constant_form_ = x->constant_form_;
      y->literal_ = x->literal_;
      y->literal_text_ = x->literal_text_;
      y->location_ = x->location_;
      instructions[x.get()] = c->AddInstruction(std::move(y));
    }
  }
  for (const auto& [original, y] : instructions) {
    for (const Instruction* operand : original->operands_) y->operands_.push_back(instructions.at(operand));
    for (Attribute& attribute : y->attributes_) {
      if (auto* one = std::get_if<Computation*>(&attribute.value)) {
        if (*one != nullptr) *one = computations.at(*one);
      } else if (auto* list = std::get_if<std::vector<Computation*>>(&attribute.value)) {
        for (Computation*& called : *list) called = computations.at(called);
      } else if (auto* before = std::get_if<std::vector<Instruction*>>(&attribute.value)) {
        for (Instruction*& predecessor : *before) predecessor = instructions.at(predecessor);
      }
    }
  }
  for (const auto& computation : computations_) {
    Computation* c = computations.at(computation.get());
    std::vector<Instruction*> parameters;
    for (const Instruction* parameter : computation->parameters_) parameters.push_back(instructions.at(parameter));
    c->set_parameters(std::move(parameters));
    if (computation->root_ != nullptr) c->set_root(instructions.at(computation->root_));
  }
  if (entry_ != nullptr) copy->set_entry(computations.at(entry_));
  return copy;
}

void Module::set_entry(Computation* entry) {
  if (entry_) entry_->is_entry_ = false;
  entry_ = entry;
  if (entry_) entry_->is_entry_ = true;
}

const Attribute* Module::FindAttribute(std::string_view name) const {
  for (const Attribute& attribute : attributes_) {
    if (attribute.name == name) return &attribute;
  }
  return nullptr;
}

void Module::SetIntAttribute(std::string_view name, int64_t value) {
  for (Attribute& attribute : attributes_) {
    if (attribute.name == name) {
      attribute.value = value;
      return;
    }
  }
  attributes_.push_back({std::string(name), value, {}});
}

int64_t Module::replica_count() const {
  const Attribute* attribute = FindAttribute("replica_count");
  const int64_t* value = attribute ? std::get_if<int64_t>(&attribute->value) : nullptr;
  return value ? *value : 1;
}

int64_t Module::num_partitions() const {
  const Attribute* attribute = FindAttribute("num_partitions");
  const int64_t* value = attribute ? std::get_if<int64_t>(&attribute->value) : nullptr;
  return value ? *value : 1;
}

bool Module::is_scheduled() const {
  const Attribute* attribute = FindAttribute("is_scheduled");
  const bool* value = attribute ? std::get_if<bool>(&attribute->value) : nullptr;
  return value && *value;
}

const ProgramShape* Module::entry_computation_layout() const {
  const Attribute* attribute = FindAttribute("entry_computation_layout");
  return attribute ? std::get_if<ProgramShape>(&attribute->value) : nullptr;
}

}  // namespace tpusim::hlo
