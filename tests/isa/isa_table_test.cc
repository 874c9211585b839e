// The instruction table: complete, consistent, charged by fields ArchConfig has, and the same
// table docs/isa.md shows.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <google/protobuf/descriptor.h>

#include "isa/asm_syntax.h"
#include "isa/instruction_set.h"
#include "isa/program.pb.h"
#include "sim/config/arch_config.pb.h"

using namespace tpusim::isa;

namespace {

std::string Upper(std::string_view text) {
  std::string out;
  for (char c : text) out.push_back(c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return out;
}

std::string EscapePipes(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// The markdown docs/isa.md carries between its table markers.
std::string InstructionTableMarkdown() {
  std::string out = "| mnemonic | operands | unit | cost class | semantics |\n|---|---|---|---|---|\n";
  for (const InstructionInfo& info : InstructionTable()) {
    std::string signature = InstructionSignature(info).substr(info.mnemonic.size());
    if (!signature.empty()) signature = "`" + signature.substr(1) + "`";
    out += "| `" + std::string(info.mnemonic) + "` | " + signature + " | " + std::string(UnitName(info.unit)) +
           " | " + std::string(GetCostClassInfo(info.cost).name) + " | " + EscapePipes(info.summary) + " |\n";
  }
  return out;
}

std::string CostClassMarkdown() {
  std::string out = "| cost class | ArchConfig fields | charge |\n|---|---|---|\n";
  for (const CostClassInfo& cost : CostClassTable()) {
    std::string fields;
    for (std::string_view field : cost.config_fields) fields += (fields.empty() ? "`" : ", `") + std::string(field) + "`";
    out += "| " + std::string(cost.name) + " | " + fields + " | " + std::string(cost.summary) + " |\n";
  }
  return out;
}

std::string Between(const std::string& text, const std::string& begin, const std::string& end) {
  const std::size_t b = text.find(begin);
  const std::size_t e = text.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return "(markers not found)";
  return text.substr(b + begin.size() + 1, e - b - begin.size() - 1);
}

}  // namespace

TEST_CASE("every opcode has exactly one table row and its mnemonic follows the enum name", "[isa]") {
  const google::protobuf::EnumDescriptor* opcodes = Opcode_descriptor();
  std::set<std::string> mnemonics;
  int rows = 0;
  for (int i = 0; i < opcodes->value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor* value = opcodes->value(i);
    const auto opcode = static_cast<Opcode>(value->number());
    if (opcode == OPCODE_UNSPECIFIED) {
      CHECK(FindInstruction(opcode) == nullptr);
      continue;
    }
    INFO(value->name());
    const InstructionInfo* info = FindInstruction(opcode);
    REQUIRE(info != nullptr);
    CHECK(info->opcode == opcode);
    CHECK("OPCODE_" + Upper(info->mnemonic) == value->name());
    CHECK(FindInstruction(info->mnemonic) == info);
    CHECK(mnemonics.insert(std::string(info->mnemonic)).second);
    ++rows;
  }
  CHECK(static_cast<std::size_t>(rows) == InstructionTable().size());
  CHECK(FindInstruction("vadd") == nullptr);
  CHECK(FindInstruction(static_cast<Opcode>(9999)) == nullptr);
}

TEST_CASE("table rows are well formed", "[isa]") {
  for (const InstructionInfo& info : InstructionTable()) {
    INFO(info.mnemonic);
    bool keyword_seen = false;
    std::set<std::string_view> names;
    for (const OperandSpec& spec : info.operands) {
      INFO(spec.name);
      CHECK(names.insert(spec.name).second);
      CHECK_FALSE(spec.name.empty());
      if (spec.keyword) keyword_seen = true;
      CHECK((spec.keyword || !keyword_seen));  // positional operands first
      CHECK((spec.keyword || !spec.optional));  // only keyword operands are optional
      CHECK((spec.kind == OperandKind::kAddress) == (spec.spaces != 0));
      CHECK(spec.min <= spec.max);
      const bool is_register = spec.kind == OperandKind::kSReg || spec.kind == OperandKind::kVReg ||
                               spec.kind == OperandKind::kMReg || spec.kind == OperandKind::kSRegOrImm;
      if (!is_register) CHECK(spec.access == Access::kNone);
    }
    CHECK_FALSE(info.summary.empty());
    // The unit and the cost class agree.
    const std::string_view cost = GetCostClassInfo(info.cost).name;
    switch (info.unit) {
      case Unit::kScalar:
        CHECK((cost.starts_with("scalar") || cost == "smem-access" || cost == "semaphore" || cost == "core-sync"));
        break;
      case Unit::kVpu: CHECK((cost == "vpu-elementwise" || cost.starts_with("vmem") || cost == "vpu-issue")); break;
      case Unit::kVpuTranscendental: CHECK(cost == "vpu-transcendental"); break;
      case Unit::kVpuCrossLane: CHECK(cost == "vpu-cross-lane"); break;
      case Unit::kMxu: CHECK(cost.starts_with("mxu")); break;
      case Unit::kDma: CHECK(cost == "dma-transfer"); break;
    }
    const bool pushes = info.mnemonic.starts_with("mxu.push") || info.mnemonic.starts_with("mxu.wpush");
    CHECK(info.mxu_type.has_value() == pushes);
    CHECK(info.arrow == (info.opcode == OPCODE_DMA));
  }
  // The MXU data types and the passes that charge them.
  CHECK(GetCostClassInfo(FindInstruction("mxu.push.f8e5m2")->cost).name == "mxu-pass-f8");
  CHECK(GetCostClassInfo(FindInstruction("mxu.push.s8")->cost).config_fields[0] == "tensor_core.mxu.s8_passes");
  CHECK(*FindInstruction("mxu.wpush.f16")->mxu_type == ElementType::kF16);
}

TEST_CASE("every cost class names ArchConfig fields that exist", "[isa]") {
  const auto& costs = CostClassTable();
  for (std::size_t i = 0; i < costs.size(); ++i) {
    INFO(costs[i].name);
    CHECK(static_cast<std::size_t>(costs[i].cost) == i);  // GetCostClassInfo indexes by value
    CHECK_FALSE(costs[i].config_fields.empty());
    for (std::string_view path : costs[i].config_fields) {
      INFO(path);
      const google::protobuf::Descriptor* message = tpusim::ArchConfig::descriptor();
      const google::protobuf::FieldDescriptor* field = nullptr;
      std::stringstream parts{std::string(path)};
      std::string part;
      while (std::getline(parts, part, '.')) {
        REQUIRE(message != nullptr);
        field = message->FindFieldByName(part);
        REQUIRE(field != nullptr);
        message = field->message_type();
      }
      CHECK(field != nullptr);
    }
  }
}

TEST_CASE("PackedRowsPerVreg follows the TPU tile packing", "[isa]") {
  CHECK(PackedRowsPerVreg(ElementType::kF32, 8) == 8);
  CHECK(PackedRowsPerVreg(ElementType::kBF16, 8) == 16);
  CHECK(PackedRowsPerVreg(ElementType::kF16, 8) == 16);
  CHECK(PackedRowsPerVreg(ElementType::kS8, 8) == 32);
  CHECK(PackedRowsPerVreg(ElementType::kF8E4M3FN, 4) == 16);
}

TEST_CASE("docs/isa.md shows the instruction and cost class tables", "[isa]") {
  // TPUSIM_WRITE_ISA_TABLES=path writes the expected tables there, to paste into the doc.
  if (const char* path = std::getenv("TPUSIM_WRITE_ISA_TABLES")) {
    std::ofstream(path) << InstructionTableMarkdown() << "\n" << CostClassMarkdown();
  }
  std::ifstream in(std::string(TPUSIM_SOURCE_DIR) + "/docs/isa.md");
  REQUIRE(in);
  std::stringstream doc;
  doc << in.rdbuf();
  CHECK(Between(doc.str(), "<!-- instruction table: begin -->", "<!-- instruction table: end -->") ==
        InstructionTableMarkdown());
  CHECK(Between(doc.str(), "<!-- cost classes: begin -->", "<!-- cost classes: end -->") == CostClassMarkdown());
}
