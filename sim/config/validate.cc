#include "sim/config/validate.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "isa/error.h"
#include "sim/config/derived.h"

namespace tpusim::sim {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A numeric field's value, as a double for range checks and as text for messages.
struct Number {
  double value;
  std::string text;
  bool is_power_of_two;
};

Number ReadNumber(const Message& message, const FieldDescriptor& field) {
  const Reflection& reflection = *message.GetReflection();
  const auto integer = [](auto v) {
    const bool power = v > 0 && (static_cast<uint64_t>(v) & (static_cast<uint64_t>(v) - 1)) == 0;
    return Number{static_cast<double>(v), std::to_string(v), power};
  };
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return integer(reflection.GetInt32(message, &field));
    case FieldDescriptor::CPPTYPE_INT64: return integer(reflection.GetInt64(message, &field));
    case FieldDescriptor::CPPTYPE_UINT32: return integer(reflection.GetUInt32(message, &field));
    case FieldDescriptor::CPPTYPE_UINT64: return integer(reflection.GetUInt64(message, &field));
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      const double v = field.cpp_type() == FieldDescriptor::CPPTYPE_FLOAT
                           ? reflection.GetFloat(message, &field)
                           : reflection.GetDouble(message, &field);
      return Number{v, fmt::format("{}", v), false};
    }
    default:
      throw Error("internal: " + field.full_name() + " is not a number");
  }
}

bool IsNumeric(const FieldDescriptor& field) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return true;
    default:
      return false;
  }
}

const ValidRange& RangeOf(const FieldDescriptor& field) {
  if (!field.options().HasExtension(valid_range)) {
    // A schema bug, not a user error: every number must say what values it takes.
    throw Error("internal: " + field.full_name() + " has no (valid_range) option in " +
                field.file()->name());
  }
  const ValidRange& range = field.options().GetExtension(valid_range);
  if (!range.has_min() || !range.has_max()) {
    throw Error("internal: the (valid_range) of " + field.full_name() + " needs a min and a max");
  }
  return range;
}

bool InRange(const ValidRange& range, const Number& number) {
  const double v = number.value;
  if (!std::isfinite(v)) return false;
  if (range.zero_allowed() && v == 0) return true;
  if (range.has_min() && (range.min_exclusive() ? !(v > range.min()) : !(v >= range.min()))) {
    return false;
  }
  if (range.has_max() && !(v <= range.max())) return false;
  return !range.power_of_two() || number.is_power_of_two;
}

// Walks a config message and collects every single-field problem.
class FieldChecker {
 public:
  explicit FieldChecker(const FieldSources& sources) : sources_(sources) {}

  void Check(const Message& message, const std::string& prefix) {
    const Descriptor& descriptor = *message.GetDescriptor();
    const Reflection& reflection = *message.GetReflection();
    for (int i = 0; i < descriptor.field_count(); ++i) {
      const FieldDescriptor& field = *descriptor.field(i);
      const std::string path = prefix.empty() ? field.name() : prefix + "." + field.name();
      if (field.is_repeated()) {
        throw Error("internal: validation does not handle the repeated field " + field.full_name());
      }
      // Look the range up first, so a schema field without one fails every load, not just the
      // loads that set it.
      const ValidRange* range = IsNumeric(field) ? &RangeOf(field) : nullptr;
      if (!reflection.HasField(message, &field)) {
        if (!field.options().GetExtension(may_be_absent)) Report(path, path + " is missing");
        continue;
      }
      if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Check(reflection.GetMessage(message, &field), path);
      } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
        if (reflection.GetString(message, &field).empty()) Report(path, path + " must not be empty");
      } else if (range != nullptr) {
        const Number number = ReadNumber(message, field);
        if (!InRange(*range, number)) {
          Report(path, fmt::format("{} must be {}, got {}", path, DescribeValidRange(field), number.text));
        }
      }
    }
  }

  std::vector<std::string>& problems() { return problems_; }

 private:
  void Report(const std::string& path, const std::string& what) {
    problems_.push_back(sources_.Describe(path) + ": " + what);
  }

  const FieldSources& sources_;
  std::vector<std::string> problems_;
};

// The rules between fields, checked on a config whose fields are each valid.
void CheckCrossFieldRules(const ArchConfig& config, const FieldSources& sources,
                          std::vector<std::string>& problems) {
  const auto report = [&](const std::string& path, const std::string& what) {
    problems.push_back(sources.Describe(path) + ": " + what);
  };
  const TensorCoreConfig& core = config.tensor_core();

  // A vector load fills a whole vreg from VMEM.
  const uint64_t vmem_bytes = MibToBytes(core.vmem().capacity_mib());
  if (vmem_bytes < VregBytes(config)) {
    report("tensor_core.vmem.capacity_mib",
           fmt::format("tensor_core.vmem.capacity_mib ({} MiB) is smaller than one vreg: "
                       "{} sublanes x {} lanes x 4 bytes = {} bytes (tensor_core.vpu set at {})",
                       core.vmem().capacity_mib(), core.vpu().sublane_count(), core.vpu().lane_count(),
                       VregBytes(config), sources.Describe("tensor_core.vpu.lane_count")));
  }

  // The HBM model sends each burst to one channel; a burst crossing a stripe would need two.
  if (core.dma().burst_bytes() > config.hbm().interleave_bytes()) {
    report("tensor_core.dma.burst_bytes",
           fmt::format("tensor_core.dma.burst_bytes ({}) must not exceed hbm.interleave_bytes ({}, "
                       "set at {}) so that a burst lies in one HBM channel",
                       core.dma().burst_bytes(), config.hbm().interleave_bytes(),
                       sources.Describe("hbm.interleave_bytes")));
  }

  // The simulator holds every MXU accumulator in memory (models/mxu.h): 1 GiB of them per MXU at
  // most (real ones hold MiBs), so that a config it cannot run is refused here rather than
  // failing to allocate mid-run.
  constexpr uint64_t kAccumulatorBytesHeld = uint64_t{1} << 30;
  const uint64_t accumulator_bytes = uint64_t{core.mxu().accumulator_rows()} * core.mxu().column_count() * 4;
  if (accumulator_bytes > kAccumulatorBytesHeld) {
    report("tensor_core.mxu.accumulator_rows",
           fmt::format("tensor_core.mxu.accumulator_rows ({}) x column_count ({}, set at {}) x 4 bytes = {} bytes of "
                       "accumulators per MXU, more than tpusim holds ({} bytes per MXU)",
                       core.mxu().accumulator_rows(), core.mxu().column_count(),
                       sources.Describe("tensor_core.mxu.column_count"), accumulator_bytes, kAccumulatorBytesHeld));
  }

  // Every channel must own at least one stripe of the address space.
  const uint64_t stripes_bytes = uint64_t{config.hbm().channel_count()} * config.hbm().interleave_bytes();
  if (MibToBytes(config.hbm().capacity_mib()) < stripes_bytes) {
    report("hbm.capacity_mib",
           fmt::format("hbm.capacity_mib ({} MiB) is less than one interleave stripe per channel: "
                       "{} channels x {} bytes = {} bytes",
                       config.hbm().capacity_mib(), config.hbm().channel_count(),
                       config.hbm().interleave_bytes(), stripes_bytes));
  }
}

std::string FormatBound(double bound) { return fmt::format("{}", bound); }

}  // namespace

std::string DescribeValidRange(const FieldDescriptor& field) {
  const ValidRange& range = RangeOf(field);
  const std::string interval = fmt::format(
      "{}{}, {}]", range.min_exclusive() ? "(" : "[", FormatBound(range.min()), FormatBound(range.max()));
  if (range.power_of_two()) return "a power of two in " + interval;
  if (range.zero_allowed()) return "0 or in " + interval;
  return "in " + interval;
}

void ValidateArchConfig(const ArchConfig& config, const FieldSources& sources) {
  FieldChecker checker(sources);
  checker.Check(config, "");
  std::vector<std::string>& problems = checker.problems();
  if (problems.empty()) CheckCrossFieldRules(config, sources, problems);
  if (problems.empty()) return;
  std::string message = problems.front();
  for (std::size_t i = 1; i < problems.size(); ++i) message += "\n" + problems[i];
  throw Error(message);
}

}  // namespace tpusim::sim
