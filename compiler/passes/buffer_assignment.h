// Buffer assignment: where every array the entry computation produces lives in HBM. The
// instructions run one after another in `schedule` order; a value's buffer lives from the
// instruction that writes it to the last instruction that reads it (through tuples,
// get-tuple-element, bitcasts and other aliases), and buffers whose lives do not overlap share
// addresses (first fit, 4 KiB aligned so every buffer starts on a whole vreg tile). Parameters,
// constants and the root's arrays live for the whole program: parameters and outputs are dumped
// after the run, constants are written before it. A while loop's state reuses its init's buffers
// when the init is not read after the loop, and donated parameters hold their outputs
// (Donations), as XLA's buffer assignment does. Arrays whose layout says S(5) (host offload,
// compiler/passes/host_offload.h) live in host memory instead: a heap of their own, placed the
// same way from its own base, with its own peak and capacity; they never count toward HBM. A
// dynamic-update-slice whose operand nothing reads afterwards writes into it (in place).
#pragma once

#include <cstdint>
#include <optional>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/passes/input_output_alias.h"
#include "isa/program.pb.h"
#include "isa/shape.h"

namespace tpusim::compiler {

inline constexpr uint64_t kBufferAlignmentBytes = 4096;

// `value` rounded up to a multiple of `alignment` (addresses, buffer and region sizes).
constexpr uint64_t AlignUp(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

// One array in device memory.
struct DeviceBuffer {
  std::string name;      // unique in the program: the defining instruction's name, plus ".N" for tuple leaves
  isa::Shape shape;      // an array shape with its layout (S(5) for a host array)
  uint64_t address = 0;  // byte address in HBM, or in host memory for a host array
  uint64_t size_bytes = 0;  // the layout's byte size
  std::size_t first = 0;    // schedule position that writes it
  std::size_t last = 0;     // last schedule position that reads it

  bool in_host_memory() const { return shape.layout && shape.layout->memory_space == isa::kMemorySpaceHost; }
  // The memory's assembler name: "hbm" or "host".
  std::string_view space() const { return in_host_memory() ? "host" : "hbm"; }
  isa::MemorySpace memory_space() const { return in_host_memory() ? isa::MEMORY_SPACE_HOST : isa::MEMORY_SPACE_HBM; }
};

// Sets the addresses of `placed` (sizes and lives given) from `base`, none overlapping another
// live at the same time (4 KiB aligned), and returns the peak (highest end). Places them by both
// orders, first write (first fit) and decreasing size (XLA's and TFLite's greedy by size), and
// keeps the lower peak; where that is above `budget` (the module would not fit), also tries
// greedy by size over randomly scaled sizes (seeded: the same buffers give the same addresses)
// until one fits.
uint64_t PlaceBuffers(const std::vector<DeviceBuffer*>& placed, uint64_t base, uint64_t budget);

// The schedule position where the most HBM bytes are live (buffers written at or before it and
// read at or after it; called computations' regions included), and the largest of them.
struct LivePeak {
  std::size_t position = 0;
  std::string instruction;  // the instruction there
  uint64_t bytes = 0;       // live in all
  std::size_t buffers = 0;  // how many
  std::vector<std::pair<std::string, uint64_t>> largest;  // name and bytes, largest first (at most 10)
};

struct BufferAssignment {
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  // Per instruction of the schedule: its arrays in flattening order (tuple leaves depth first);
  // a token leaf is nullptr.
  std::unordered_map<const hlo::Instruction*, std::vector<const DeviceBuffer*>> leaves;
  uint64_t peak_bytes = 0;  // highest HBM address in use
  uint64_t base_address = 0;  // where this assignment's own HBM buffers begin (NestedBinding)
  uint64_t host_peak_bytes = 0;     // highest host-memory address in use by host arrays
  uint64_t host_base_address = 0;   // where its host arrays begin
  // Where each region of NestedBinding::regions begins (aligned).
  std::unordered_map<const hlo::Instruction*, uint64_t> regions;
  LivePeak live_peak;  // of the HBM buffers

  // The end of the highest buffer live at schedule position `position` (written at or before it
  // and read at or after it), and at least base_address: the space above it is free while the
  // instruction at `position` runs, so a kernel's scratch and a called computation's region may go
  // there even when buffers written later lie higher.
  uint64_t LiveTopAt(std::size_t position) const;
  // The same for the host arrays (at least host_base_address): where a called computation's host
  // arrays may go.
  uint64_t HostLiveTopAt(std::size_t position) const;
  // The largest HBM range free while the instruction at `position` runs, as {address, bytes}:
  // from `top` (at least LiveTopAt(position), and above what callers have live) to `capacity`,
  // or a hole between the buffers live there below peak_bytes (this assignment's own space, a
  // called computation's region when nested), which buffers live before or after it leave. The
  // range from `top` where it is as large: a kernel's scratch goes there as before holes counted.
  std::pair<uint64_t, uint64_t> LargestFreeAt(std::size_t position, uint64_t top, uint64_t capacity) const;
};

// Whether two array shapes have the same byte image for the same row-major element order, so that
// a reshape between them moves nothing: both row-major (size-1 dims anywhere) with no padding
// fields, and either both
// untiled, or with equal tiles whose first tile (rank k) sees the same k most minor dims after
// the dims above them in memory (whole slabs, one after another) are merged into the first tiled dim where
// it is a multiple of its tile size. Conservative: false means "not shown to be identical".
bool SameRowMajorImage(const isa::Shape& a, const isa::Shape& b);

// A reshape whose operand and result have the same image (SameRowMajorImage), or of a one-element
// array to a scalar (its first bytes): a bitcast.
bool IsAliasingReshape(const hlo::Instruction& instruction);

// A transpose whose result's layout holds its operand's bytes as they lie (its operand seen with
// the dims permuted is the result's shape, or has its image, SameRowMajorImage): a bitcast, as XLA's algebraic
// simplifier makes such a transpose once layouts are assigned (Gemma 3's key/value projection
// `bf16[2,1,256,1,11]` transposed to `bf16[2,1,11,1,256]`, its size-1 dims laid out major: both
// are [2][256][11] in memory).
bool IsAliasingTranspose(const hlo::Instruction& instruction);

// Where a slice's bytes begin in its operand's, where they are a contiguous range of them: both
// in the same layout, every dim whole but the most major one longer than 1 in that layout, which
// no tile covers, sliced in steps of 1 (the operand is then that dim's extent of equal slabs, one
// after another). XLA reads such a slice as an offset into its operand's buffer (the contraction
// split's K slices of MaxText's `[16,2048,...]` weight-gradient operands). nullopt otherwise.
std::optional<uint64_t> AliasingSliceOffset(const hlo::Instruction& instruction);
inline bool IsAliasingSlice(const hlo::Instruction& instruction) { return AliasingSliceOffset(instruction).has_value(); }

// Parameters and constants: their buffers live for the whole program (parameters and outputs are
// dumped after the run, constants written before it).
bool LivesWholeProgram(const hlo::Instruction& instruction);

// True for instructions that name existing buffers instead of writing new ones: parameter,
// tuple, get-tuple-element, bitcast, reshapes and transposes that are bitcasts, slices that
// are ranges of their operand's bytes (AliasingSliceOffset), optimization-barrier,
// add-dependency, after-all, custom-call "Sharding" (a partitioning annotation), and a custom-call
// "MoveToHost" or "MoveToDevice" whose operand already is where its result goes (equal shapes,
// memory space included).
bool IsAliasingInstruction(const hlo::Instruction& instruction);

// Instructions of `computation` in an order where operands (and control predecessors) come first:
// the text's order when it already is one, except that broadcasts and iotas come just before
// their first reader.
std::vector<const hlo::Instruction*> Schedule(const hlo::Computation& computation);

// Which instructions run inside another's kernel (element-wise fusion): they get no buffer, and
// what they read is read when their kernel (the instruction they map to) runs.
using KernelOf = std::unordered_map<const hlo::Instruction*, const hlo::Instruction*>;

// For a computation called by another (while body and condition, conditional branches, call):
// its parameters (and constants, which live in a pool written before the program starts) name
// buffers that exist already, and its own values go at or above `base_address`, in the region its
// caller's assignment reserved for them (`regions`), which overlaps nothing the callers still need.
struct NestedBinding {
  uint64_t base_address = 0;
  uint64_t host_base_address = 0;  // the same for host arrays (the host heap)
  // A while body's: its parameter is the loop state, which the body may update in place (a
  // dynamic-update-slice; the state gets the body's result anyway). A call's or
  // a branch's parameters are the caller's arrays, which must stay as they are.
  bool parameters_writable = false;
  // Instructions whose leaves are given: they get no buffer of their own, and lives are not
  // tracked for the given buffers (their owner keeps them alive across the call).
  std::unordered_map<const hlo::Instruction*, std::vector<const DeviceBuffer*>> bound;
  // Per control-flow instruction, the HBM its called computations need while it runs: a region of
  // that many bytes is placed among the buffers, live at the instruction only, so it may go in
  // the space between buffers live there (BufferAssignment::regions) rather than above them all.
  std::unordered_map<const hlo::Instruction*, uint64_t> regions;
};

// Entry parameters donated to outputs (input_output_alias). A donated parameter's buffer holds
// its output when nothing reads the parameter after the output's kernel, or when that kernel is
// the last reader and may write over it while reading it (`may_overwrite`: an element-wise
// kernel reading it at the result's own indices, each block read before it is written). Else the
// output gets a buffer of its own, as XLA copies when it cannot alias. `may_overwrite` also lets
// a fused element-wise kernel write its result over an operand that nothing reads afterwards, in
// any computation (without it, only kernels of one element-wise instruction do).
struct Donations {
  std::vector<DonatedParameter> aliases;
  std::function<bool(const hlo::Instruction& writer, const hlo::Instruction& parameter)> may_overwrite;
};

// What the user set the capacities as (sim/: the ArchConfig's fields, hbm.capacity_mib and
// host.capacity_mib), named with their value in MiB by a capacity error; empty: not named.
struct CapacityNames {
  std::string hbm;
  std::string host;
};

// " (NAME = N MiB)" for a capacity the user set as NAME; "" where `name` is empty.
std::string CapacityNote(const std::string& name, uint64_t capacity_bytes);

// Assigns HBM (host memory for S(5) arrays) to the values of `schedule` (every instruction of one
// computation). Throws tpusim::Error when the HBM peak exceeds `hbm_capacity_bytes` or the host
// arrays' peak exceeds `host_capacity_bytes`, naming the peak, the capacity (and the field it was
// set by, `names`) and the instruction where it is reached. peak_bytes is at least
// binding.base_address, host_peak_bytes at least binding.host_base_address.
BufferAssignment AssignBuffers(const std::vector<const hlo::Instruction*>& schedule, uint64_t hbm_capacity_bytes,
                               const KernelOf& computed_inside = {}, const NestedBinding& binding = {},
                               const Donations& donations = {},
                               uint64_t host_capacity_bytes = std::numeric_limits<uint64_t>::max(),
                               const CapacityNames& names = {});

}  // namespace tpusim::compiler
