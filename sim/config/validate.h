// Validation of an ArchConfig: every value in its schema range, every field present, and the
// rules that tie fields together.
#pragma once

#include <google/protobuf/descriptor.h>

#include <string>

#include "sim/config/arch_config.pb.h"
#include "sim/config/field_sources.h"

namespace tpusim::sim {

// Checks `config`: each field is present (except blocks marked (may_be_absent)), each string is
// non-empty, each number lies in its field's (valid_range) option, and the cross-field rules hold
// (VMEM holds a vreg; a DMA burst fits in one HBM interleave stripe; HBM holds one stripe per
// channel). Throws tpusim::Error listing every problem, one per line, as
// `WHERE: PATH what is wrong`, WHERE from `sources` (file:line:col, --set ..., or the file).
// Cross-field rules are checked once the single-field rules pass.
void ValidateArchConfig(const ArchConfig& config, const FieldSources& sources);

// The valid values of a numeric field as errors and docs/configs.md write them: "in [1, 8]",
// "in (0, 1000000]", "a power of two in [32, 1048576]", "0 or in [0.0625, 64]". Throws
// tpusim::Error if the field has no (valid_range) option.
std::string DescribeValidRange(const google::protobuf::FieldDescriptor& field);

}  // namespace tpusim::sim
