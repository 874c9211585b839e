// Attribute values of HLO instructions and modules, typed the way XLA's parser types them: by the
// attribute's name (`index=` is an integer, `window=` a Window, `to_apply=` a computation). What
// tpusim does not interpret (metadata, sharding, frontend_attributes, a JSON backend_config, any
// attribute it does not know) is kept as the exact text that was written, so it prints back as is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "isa/shape.h"

namespace tpusim::hlo {

class Computation;
class Instruction;

// Where something was written. Lines and columns count from 1 (columns in bytes); line 0 means
// "not parsed from text" (built by code).
struct SourceLocation {
  std::size_t offset = 0;
  int64_t line = 0;
  int64_t column = 0;
  bool known() const { return line > 0; }
  bool operator==(const SourceLocation&) const = default;
};

// One dimension of `window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1
// rhs_reversal=0x0}`; parts left out take these defaults.
struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t lhs_dilation = 1;  // XLA's base_dilation
  int64_t rhs_dilation = 1;  // XLA's window_dilation
  bool reversal = false;
  bool operator==(const WindowDimension&) const = default;
};

struct Window {
  std::vector<WindowDimension> dimensions;
  bool operator==(const Window&) const = default;
};

// `dim_labels=b01f_01io->b01f`: for the input (lhs), kernel (rhs) and output, the position of
// each labelled dimension. Spatial dimension i is the digit i; a dimension written `?` has no
// label, and a label that no position carries is -1. All three have rank spatial + 2.
struct ConvolutionDimensionNumbers {
  int64_t input_batch_dimension = -1;
  int64_t input_feature_dimension = -1;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = -1;
  int64_t kernel_output_feature_dimension = -1;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = -1;
  int64_t output_feature_dimension = -1;
  std::vector<int64_t> output_spatial_dimensions;
  bool operator==(const ConvolutionDimensionNumbers&) const = default;
};

// One `[start:limit:stride]` of `slice={[0:8], [0:128:2]}`.
struct SliceDimension {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDimension&) const = default;
};

// `padding=0_0x1_2_1`: low_high or low_high_interior per dimension (negative low/high allowed).
struct PaddingDimension {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PaddingDimension&) const = default;
};

struct PaddingConfig {
  std::vector<PaddingDimension> dimensions;
  bool operator==(const PaddingConfig&) const = default;
};

// The compact form `[G,S]<=[d0,d1,...]T(p0,p1,...)`: the device ids iota(d0*d1*...) reshaped to
// reshape_dims, transposed by transpose_perm, then cut into G groups of S.
struct IotaReplicaGroupList {
  std::vector<int64_t> group_dims;      // {G, S}
  std::vector<int64_t> reshape_dims;
  std::vector<int64_t> transpose_perm;  // identity when no T(...) was written
  bool operator==(const IotaReplicaGroupList&) const = default;
};

// `replica_groups={{0,1},{2,3}}` or `replica_groups=[2,2]<=[4]`. `groups` is always filled in
// (the iota form expanded); `iota` remembers the compact form so it prints back that way.
struct ReplicaGroups {
  std::vector<std::vector<int64_t>> groups;
  std::optional<IotaReplicaGroupList> iota;
  bool operator==(const ReplicaGroups&) const = default;
};

// One `{source,target}` of `source_target_pairs={{0,1},{1,2}}`.
struct SourceTargetPair {
  int64_t source = 0;
  int64_t target = 0;
  bool operator==(const SourceTargetPair&) const = default;
};

// A quoted string (`custom_call_target="foo"`), held unescaped.
struct QuotedString {
  std::string value;
  bool operator==(const QuotedString&) const = default;
};

// A bare word (`direction=LT`, `kind=kLoop`, `api_version=API_VERSION_TYPED_FFI`).
struct Identifier {
  std::string text;
  bool operator==(const Identifier&) const = default;
};

// A braced list of bare words (`operand_precision={default,highest}`).
struct IdentifierList {
  std::vector<std::string> items;
  bool operator==(const IdentifierList&) const = default;
};

// Text tpusim keeps but does not interpret, exactly as written (balanced brackets, strings and
// comments included): `metadata={...}`, `sharding={...}`, unknown attributes.
struct RawText {
  std::string text;
  bool operator==(const RawText&) const = default;
};

// `entry_computation_layout={(f32[2]{0}, s32[])->f32[2]{0}}`.
struct ProgramShape {
  std::vector<isa::Shape> parameters;
  isa::Shape result;
  bool operator==(const ProgramShape&) const = default;
};

using AttributeValue = std::variant<
    int64_t,                              // index=0
    bool,                                 // is_stable=true
    double,                               // epsilon=0.001
    QuotedString,                         // custom_call_target="x"
    Identifier,                           // direction=LT
    IdentifierList,                       // operand_precision={default,highest}
    std::vector<int64_t>,                 // dimensions={0,1}
    Window,                               // window={size=3x3}
    ConvolutionDimensionNumbers,          // dim_labels=b01f_01io->b01f
    std::vector<SliceDimension>,          // slice={[0:2]}
    PaddingConfig,                        // padding=1_1x0_0
    ReplicaGroups,                        // replica_groups={{0,1}}
    std::vector<SourceTargetPair>,        // source_target_pairs={{0,1}}
    Computation*,                         // to_apply=%add
    std::vector<Computation*>,            // branch_computations={%a, %b}
    std::vector<Instruction*>,            // control-predecessors={%x}
    ProgramShape,                         // entry_computation_layout={(...)->...}
    RawText>;                             // metadata={...}, sharding={...}, unknown attributes

struct Attribute {
  std::string name;
  AttributeValue value;
  SourceLocation location;  // of the attribute's name
};

// The typed form an attribute name takes.
enum class AttributeKind {
  kInt,
  kBool,
  kDouble,
  kQuotedString,
  kIdentifier,
  kIdentifierList,
  kIntList,
  kWindow,
  kConvolutionDimensionNumbers,
  kSliceList,
  kPaddingConfig,
  kReplicaGroups,
  kSourceTargetPairs,
  kComputation,
  kComputationList,
  kComputationOrList,     // calls=%f or calls={%f, %g}
  kInstructionList,
  kProgramShape,
  kStringOrRaw,           // backend_config="..." or backend_config={...}
  kRaw,
};

// The kind XLA's parser gives an instruction attribute named `name`; kRaw for names it does not
// type (and for names tpusim has never heard of).
AttributeKind InstructionAttributeKind(std::string_view name);
// The same for the attributes of the `HloModule` line.
AttributeKind ModuleAttributeKind(std::string_view name);

// XLA's text forms (what follows `name=`). Computation and instruction references print in
// printer.h, which knows their names.
std::string ToString(const Window& window);                          // {size=3x3 pad=1_1x1_1}
std::string ToString(const ConvolutionDimensionNumbers& dnums);      // b01f_01io->b01f
std::string ToString(const std::vector<SliceDimension>& slice);      // {[0:8], [0:128:2]}
std::string ToString(const PaddingConfig& padding);                  // 0_0x1_2_1
std::string ToString(const ReplicaGroups& groups);                   // {{0,1},{2,3}} or [2,2]<=[4]
std::string ToString(const std::vector<SourceTargetPair>& pairs);    // {{0,1},{1,2}}
std::string ToString(const ProgramShape& shape);                     // {(f32[2]{0})->f32[2]{0}}
std::string IntListToString(const std::vector<int64_t>& values);     // {0,1}
// A double printed with the fewest digits that read back as the same value ("0.001", "1e-05").
std::string FormatDouble(double value);
// `"..."` with backslash escapes for `"`, `\` and control bytes; ParseQuoted reads it back.
std::string QuoteString(std::string_view value);

// Expands the iota form: throws tpusim::Error if the dims do not describe a valid list (products
// differ, transpose_perm not a permutation, more than 2^20 devices).
std::vector<std::vector<int64_t>> ExpandIotaReplicaGroups(const IotaReplicaGroupList& iota);

}  // namespace tpusim::hlo
