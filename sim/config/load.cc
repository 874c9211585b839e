#include "sim/config/load.h"

#include "sim/config/field_sources.h"
#include "sim/config/override.h"
#include "sim/config/text_proto.h"
#include "sim/config/validate.h"

namespace tpusim::sim {

ArchConfig ParseArchConfig(std::string_view text, const std::string& source,
                           const std::vector<std::string>& overrides) {
  ArchConfig config;
  google::protobuf::TextFormat::ParseInfoTree tree;
  ParseTextProto(text, source, config, tree);

  FieldSources sources(source);
  sources.RecordParse(*ArchConfig::descriptor(), tree, text);
  for (const std::string& assignment : overrides) {
    const std::string path = ApplyOverride(config, assignment);
    sources.RecordOverride(path, assignment);
  }
  ValidateArchConfig(config, sources);
  return config;
}

ArchConfig LoadArchConfig(const std::string& path, const std::vector<std::string>& overrides) {
  return ParseArchConfig(ReadTextFile(path), path, overrides);
}

}  // namespace tpusim::sim
