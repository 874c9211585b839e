// Text inside SVG and HTML documents (trace-svg, sweep-plot).
#pragma once

#include <string>
#include <string_view>

namespace tpusim::traces {

// `text` with &, <, >, " and ' as entities: safe in element text and quoted attributes.
std::string XmlEscape(std::string_view text);

}  // namespace tpusim::traces
