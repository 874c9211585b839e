// The instruction table: for every opcode of program.proto, its mnemonic, operands, the unit that
// runs it and the cost class that charges it. It is the one place these facts live: the
// assembler, the disassembler, the program checker, the models and docs/isa.md all read it
// (tests/isa/isa_table_test.cc keeps the doc's table equal to this one).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "isa/element_type.h"
#include "isa/program.pb.h"

namespace tpusim::isa {

// Architectural register counts that do not depend on the target. Vector registers do:
// Target.vector_registers (as VpuConfig.vector_register_count).
inline constexpr uint32_t kScalarRegisterCount = 32;  // s0..s31; s0 is an ordinary register
inline constexpr uint32_t kMaskRegisterCount = 8;     // m0..m7

// Which unit executes an instruction. The scalar core runs kScalar itself and dispatches the
// others to the unit's in-order queue: one VPU queue (shared by its three sub-units), one queue
// per MXU, one per DMA engine.
enum class Unit : uint8_t {
  kScalar,
  kVpu,                 // element-wise sub-unit, vector loads and stores, vpu.signal
  kVpuTranscendental,
  kVpuCrossLane,
  kMxu,
  kDma,
};
// "scalar", "vpu", "vpu-transcendental", "vpu-cross-lane", "mxu", "dma".
std::string_view UnitName(Unit unit);

// What charges an instruction's time: each class names the ArchConfig fields (paths from
// ArchConfig) whose values the timing model uses for it; docs/isa.md gives the equations.
enum class CostClass : uint8_t {
  kScalarIssue,
  kScalarBranch,
  kSmemAccess,
  kSemaphore,
  kCoreSync,
  kVpuIssue,
  kVpuElementwise,
  kVpuTranscendental,
  kVpuCrossLane,
  kVmemLoad,
  kVmemStore,
  kMxuWeightPush,
  kMxuLatch,
  kMxuPassBf16,
  kMxuPassF32,
  kMxuPassF16,
  kMxuPassS8,
  kMxuPassF8,
  kMxuPop,
  kDmaTransfer,
};

struct CostClassInfo {
  CostClass cost = CostClass::kScalarIssue;
  std::string_view name;                        // "vpu-elementwise"
  std::vector<std::string_view> config_fields = {};  // "tensor_core.vpu.elementwise.latency_cycles", ...
  std::string_view summary;                     // how the fields charge the instruction
};

enum class OperandKind : uint8_t {
  kSReg,        // s0..s31
  kSRegOrImm,   // a scalar register or a signed immediate in [min, max]
  kImm,         // a signed immediate in [min, max]
  kBits,        // an unsigned bit pattern (a sublane mask), printed in hex
  kVReg,        // v0..v(target.vector_registers - 1)
  kMReg,        // m0..m7
  kLabel,       // a label name
  kAddress,     // space[sN + offset] with space in OperandSpec::spaces
  kSemaphore,   // sem[sN + offset]
  kMxu,         // mxu0..mxu(target.mxu_count - 1)
  kDmaEngine,   // 0..target.dma_engines - 1
  kShape,       // an isa::Shape with a layout
  kIndex,       // [e, e, ...], each e a register + offset: per-dim element indices
  kSizes,       // [n, n, ...]: per-dim sizes >= 1
};
// "scalar register", "vector register", ... for messages.
std::string_view OperandKindName(OperandKind kind);

// How an instruction uses a register operand (for the models' register interlocks).
enum class Access : uint8_t { kNone, kRead, kWrite, kReadWrite };

struct OperandSpec {
  std::string_view name;  // "vd", "va", "stride"; keyword operands are written name=value
  OperandKind kind = OperandKind::kImm;
  Access access = Access::kRead;
  bool keyword = false;   // written `name=value` after the positional operands, in any order
  bool optional = false;  // may be left out (Operand with no value)
  int64_t min = std::numeric_limits<int64_t>::min();  // immediate range (kImm, kSRegOrImm)
  int64_t max = std::numeric_limits<int64_t>::max();
  uint32_t spaces = 0;    // kAddress: bit (1 << MemorySpace) for each space allowed
};

struct InstructionInfo {
  Opcode opcode = OPCODE_UNSPECIFIED;
  std::string_view mnemonic;
  Unit unit = Unit::kScalar;
  CostClass cost = CostClass::kScalarIssue;
  std::vector<OperandSpec> operands = {};  // positional ones first, then keyword ones
  // The data type an MXU instruction pushes (the input type whose passes count it), if any.
  std::optional<ElementType> mxu_type = std::nullopt;
  // The two positional operands are written `a -> b` rather than `a, b` (dma).
  bool arrow = false;
  std::string_view summary;  // one line of semantics; docs/isa.md has the full text
};

// Every instruction, in opcode order.
const std::vector<InstructionInfo>& InstructionTable();
// The row of `opcode` or of `mnemonic`; nullptr if there is none.
const InstructionInfo* FindInstruction(Opcode opcode);
const InstructionInfo* FindInstruction(std::string_view mnemonic);
// The index of the operand called `name` in `info.operands`, or -1.
int OperandIndex(const InstructionInfo& info, std::string_view name);

const std::vector<CostClassInfo>& CostClassTable();
const CostClassInfo& GetCostClassInfo(CostClass cost);

// Memory space names as the assembly writes them: "hbm", "vmem", "smem", "cmem", "host", "ici".
std::string_view MemorySpaceName(MemorySpace space);
std::optional<MemorySpace> ParseMemorySpaceName(std::string_view name);
inline constexpr uint32_t SpaceBit(MemorySpace space) { return 1u << static_cast<int>(space); }

// Rows of `type` one vreg holds when packed as TPU tiles pack it (T(8,128)(2,1) for 16-bit types,
// (4,1) for 8-bit): sublanes * 32 / bit width. Element (r, c) of the rows is in sublane
// r / (32 / width), lane c, bits [width * (r % (32 / width)), ...): the lowest part is the
// earliest row.
uint32_t PackedRowsPerVreg(ElementType type, uint32_t sublanes);

}  // namespace tpusim::isa
