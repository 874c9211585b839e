#include "compiler/hlo/attribute.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "isa/error.h"

namespace tpusim::hlo {
namespace {

template <typename T, typename Fn>
std::string Join(const std::vector<T>& items, std::string_view separator, Fn&& to_string) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += to_string(items[i]);
  }
  return out;
}

std::string JoinInts(const std::vector<int64_t>& values, std::string_view separator) {
  return Join(values, separator, [](int64_t v) { return std::to_string(v); });
}

// `3x3`, `1_1x0_2`: one field of every window dimension, joined by 'x'.
template <typename Fn>
std::string WindowField(const Window& window, Fn&& field) {
  return Join(window.dimensions, "x", field);
}

// A spatial label is a single digit, so dim_labels describe at most 10 spatial dimensions.
void PutLabels(std::string& out, std::size_t rank, int64_t first, char first_label, int64_t second,
               char second_label, const std::vector<int64_t>& spatial) {
  std::string labels(rank, '?');
  auto put = [&](int64_t position, char label) {
    if (position >= 0 && static_cast<std::size_t>(position) < rank) labels[position] = label;
  };
  put(first, first_label);
  put(second, second_label);
  for (std::size_t i = 0; i < spatial.size(); ++i) put(spatial[i], static_cast<char>('0' + i));
  out += labels;
}

}  // namespace

AttributeKind InstructionAttributeKind(std::string_view name) {
  using K = AttributeKind;
  // The attribute names XLA's parser types, with the type it gives them.
  static const std::unordered_map<std::string_view, AttributeKind> kKinds = {
      {"index", K::kInt},
      {"iota_dimension", K::kInt},
      {"k", K::kInt},
      {"feature_index", K::kInt},
      {"feature_group_count", K::kInt},
      {"batch_group_count", K::kInt},
      {"channel_id", K::kInt},
      {"index_vector_dim", K::kInt},
      {"exponent_bits", K::kInt},
      {"mantissa_bits", K::kInt},
      {"cross_program_prefetch_index", K::kInt},
      {"largest", K::kBool},
      {"is_stable", K::kBool},
      {"indices_are_sorted", K::kBool},
      {"unique_indices", K::kBool},
      {"constrain_layout", K::kBool},
      {"use_global_device_ids", K::kBool},
      {"is_host_transfer", K::kBool},
      {"custom_call_has_side_effect", K::kBool},
      {"left_side", K::kBool},
      {"lower", K::kBool},
      {"unit_diagonal", K::kBool},
      {"is_cross_program_prefetch", K::kBool},
      {"epsilon", K::kDouble},
      {"custom_call_target", K::kQuotedString},
      {"async_execution_thread", K::kQuotedString},
      {"infeed_config", K::kQuotedString},
      {"outfeed_config", K::kQuotedString},
      {"direction", K::kIdentifier},
      {"type", K::kIdentifier},
      {"kind", K::kIdentifier},
      {"distribution", K::kIdentifier},
      {"api_version", K::kIdentifier},
      {"algorithm", K::kIdentifier},
      {"fft_type", K::kIdentifier},
      {"transpose_a", K::kIdentifier},
      {"custom_call_schedule", K::kIdentifier},
      {"operand_precision", K::kIdentifierList},
      {"dimensions", K::kIntList},
      {"dynamic_slice_sizes", K::kIntList},
      {"slice_sizes", K::kIntList},
      {"lhs_batch_dims", K::kIntList},
      {"rhs_batch_dims", K::kIntList},
      {"lhs_contracting_dims", K::kIntList},
      {"rhs_contracting_dims", K::kIntList},
      {"lhs_ragged_dims", K::kIntList},
      {"offset_dims", K::kIntList},
      {"collapsed_slice_dims", K::kIntList},
      {"start_index_map", K::kIntList},
      {"operand_batching_dims", K::kIntList},
      {"start_indices_batching_dims", K::kIntList},
      {"update_window_dims", K::kIntList},
      {"inserted_window_dims", K::kIntList},
      {"scatter_dims_to_operand_dims", K::kIntList},
      {"input_batching_dims", K::kIntList},
      {"scatter_indices_batching_dims", K::kIntList},
      {"fft_length", K::kIntList},
      {"window", K::kWindow},
      {"dim_labels", K::kConvolutionDimensionNumbers},
      {"slice", K::kSliceList},
      {"padding", K::kPaddingConfig},
      {"replica_groups", K::kReplicaGroups},
      {"source_target_pairs", K::kSourceTargetPairs},
      {"to_apply", K::kComputation},
      {"condition", K::kComputation},
      {"body", K::kComputation},
      {"select", K::kComputation},
      {"scatter", K::kComputation},
      {"true_computation", K::kComputation},
      {"false_computation", K::kComputation},
      {"branch_computations", K::kComputationList},
      {"called_computations", K::kComputationList},
      {"calls", K::kComputationOrList},
      {"control-predecessors", K::kInstructionList},
      {"backend_config", K::kStringOrRaw},
  };
  const auto it = kKinds.find(name);
  return it == kKinds.end() ? AttributeKind::kRaw : it->second;
}

AttributeKind ModuleAttributeKind(std::string_view name) {
  if (name == "replica_count" || name == "num_partitions") return AttributeKind::kInt;
  if (name == "is_scheduled") return AttributeKind::kBool;
  if (name == "entry_computation_layout") return AttributeKind::kProgramShape;
  return AttributeKind::kRaw;
}

std::string ToString(const Window& window) {
  // XLA's window_util::ToString: `size` always, the other parts only when not all default.
  if (window.dimensions.empty()) return "{}";
  const auto& dims = window.dimensions;
  auto any = [&](auto&& pred) { return std::any_of(dims.begin(), dims.end(), pred); };
  std::string out = "{size=";
  out += WindowField(window, [](const WindowDimension& d) { return std::to_string(d.size); });
  if (any([](const WindowDimension& d) { return d.stride != 1; })) {
    out += " stride=";
    out += WindowField(window, [](const WindowDimension& d) { return std::to_string(d.stride); });
  }
  if (any([](const WindowDimension& d) { return d.padding_low != 0 || d.padding_high != 0; })) {
    out += " pad=";
    out += WindowField(window, [](const WindowDimension& d) {
      return std::to_string(d.padding_low) + "_" + std::to_string(d.padding_high);
    });
  }
  if (any([](const WindowDimension& d) { return d.lhs_dilation != 1; })) {
    out += " lhs_dilate=";
    out += WindowField(window, [](const WindowDimension& d) { return std::to_string(d.lhs_dilation); });
  }
  if (any([](const WindowDimension& d) { return d.rhs_dilation != 1; })) {
    out += " rhs_dilate=";
    out += WindowField(window, [](const WindowDimension& d) { return std::to_string(d.rhs_dilation); });
  }
  if (any([](const WindowDimension& d) { return d.reversal; })) {
    out += " rhs_reversal=";
    out += WindowField(window, [](const WindowDimension& d) { return std::string(d.reversal ? "1" : "0"); });
  }
  return out + "}";
}

std::string ToString(const ConvolutionDimensionNumbers& dnums) {
  std::string out;
  PutLabels(out, dnums.input_spatial_dimensions.size() + 2, dnums.input_batch_dimension, 'b',
            dnums.input_feature_dimension, 'f', dnums.input_spatial_dimensions);
  out += '_';
  PutLabels(out, dnums.kernel_spatial_dimensions.size() + 2, dnums.kernel_input_feature_dimension,
            'i', dnums.kernel_output_feature_dimension, 'o', dnums.kernel_spatial_dimensions);
  out += "->";
  PutLabels(out, dnums.output_spatial_dimensions.size() + 2, dnums.output_batch_dimension, 'b',
            dnums.output_feature_dimension, 'f', dnums.output_spatial_dimensions);
  return out;
}

std::string ToString(const std::vector<SliceDimension>& slice) {
  return "{" + Join(slice, ", ", [](const SliceDimension& d) {
           std::string text = "[" + std::to_string(d.start) + ":" + std::to_string(d.limit);
           if (d.stride != 1) text += ":" + std::to_string(d.stride);
           return text + "]";
         }) + "}";
}

std::string ToString(const PaddingConfig& padding) {
  if (padding.dimensions.empty()) return "{}";
  return Join(padding.dimensions, "x", [](const PaddingDimension& d) {
    std::string text = std::to_string(d.low) + "_" + std::to_string(d.high);
    if (d.interior != 0) text += "_" + std::to_string(d.interior);
    return text;
  });
}

std::string ToString(const ReplicaGroups& groups) {
  if (groups.iota) {
    const IotaReplicaGroupList& iota = *groups.iota;
    std::string out = "[" + JoinInts(iota.group_dims, ",") + "]<=[" + JoinInts(iota.reshape_dims, ",") + "]";
    // As written: XLA leaves out an identity T(...), but one that was written prints back.
    if (!iota.transpose_perm.empty()) out += "T(" + JoinInts(iota.transpose_perm, ",") + ")";
    return out;
  }
  return "{" + Join(groups.groups, ",", [](const std::vector<int64_t>& g) { return IntListToString(g); }) + "}";
}

std::string ToString(const std::vector<SourceTargetPair>& pairs) {
  return "{" + Join(pairs, ",", [](const SourceTargetPair& p) {
           return "{" + std::to_string(p.source) + "," + std::to_string(p.target) + "}";
         }) + "}";
}

std::string ToString(const ProgramShape& shape) {
  return "{(" + Join(shape.parameters, ", ", [](const isa::Shape& s) { return isa::ToString(s); }) +
         ")->" + isa::ToString(shape.result) + "}";
}

std::string IntListToString(const std::vector<int64_t>& values) { return "{" + JoinInts(values, ",") + "}"; }

std::string FormatDouble(double value) {
  if (std::isnan(value)) return std::signbit(value) ? "-nan" : "nan";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string QuoteString(std::string_view value) {
  std::string out = "\"";
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      // Three octal digits: the unescaper stops after three, so no following digit is swallowed.
      out += '\\';
      out += static_cast<char>('0' + (byte >> 6));
      out += static_cast<char>('0' + ((byte >> 3) & 7));
      out += static_cast<char>('0' + (byte & 7));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::vector<std::vector<int64_t>> ExpandIotaReplicaGroups(const IotaReplicaGroupList& iota) {
  constexpr int64_t kMaxDevices = int64_t{1} << 20;  // far more than any TPU pod
  auto product = [&](const std::vector<int64_t>& dims, std::string_view what) {
    int64_t count = 1;
    for (int64_t d : dims) {
      if (d <= 0) throw Error("replica groups: " + std::string(what) + " dimension " + std::to_string(d) + " is not positive");
      if (__builtin_mul_overflow(count, d, &count) || count > kMaxDevices) {
        throw Error("replica groups: more than 2^20 devices");
      }
    }
    return count;
  };
  if (iota.group_dims.size() != 2) {
    throw Error("replica groups: the iota form needs [groups,group_size], got " +
                std::to_string(iota.group_dims.size()) + " dimensions");
  }
  const int64_t devices = product(iota.group_dims, "group");
  if (iota.reshape_dims.empty() || product(iota.reshape_dims, "reshape") != devices) {
    throw Error("replica groups: [" + JoinInts(iota.group_dims, ",") + "] holds " + std::to_string(devices) +
                " devices but <=[" + JoinInts(iota.reshape_dims, ",") + "] does not");
  }
  const std::size_t rank = iota.reshape_dims.size();
  std::vector<int64_t> perm = iota.transpose_perm;
  if (perm.empty()) {
    for (std::size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  }
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (std::size_t i = 0; valid && i < perm.size(); ++i) {
    valid = perm[i] >= 0 && static_cast<std::size_t>(perm[i]) < rank && !seen[perm[i]];
    if (valid) seen[perm[i]] = true;
  }
  if (!valid) {
    throw Error("replica groups: T(" + JoinInts(iota.transpose_perm, ",") + ") is not a permutation of " +
                std::to_string(rank) + " dimensions");
  }
  // Element o of the transposed array, in row-major order over dims reshape[perm[i]], is the
  // iota element whose index has idx[perm[i]] = o's i-th coordinate.
  std::vector<int64_t> transposed_dims(rank);
  for (std::size_t i = 0; i < rank; ++i) transposed_dims[i] = iota.reshape_dims[perm[i]];
  std::vector<int64_t> index(rank);
  std::vector<std::vector<int64_t>> groups(iota.group_dims[0]);
  for (int64_t o = 0; o < devices; ++o) {
    int64_t rest = o;
    for (std::size_t i = rank; i-- > 0;) {
      index[perm[i]] = rest % transposed_dims[i];
      rest /= transposed_dims[i];
    }
    int64_t device = 0;
    for (std::size_t d = 0; d < rank; ++d) device = device * iota.reshape_dims[d] + index[d];
    groups[o / iota.group_dims[1]].push_back(device);
  }
  return groups;
}

}  // namespace tpusim::hlo
