#include "isa/error.h"

#include <algorithm>

namespace tpusim {

std::string FormatParseError(std::string_view source, std::string_view text, const ParseError& error) {
  const std::size_t offset = std::min(error.offset(), text.size());
  std::size_t begin = offset;
  while (begin > 0 && text[begin - 1] != '\n') --begin;
  const std::size_t end = std::min(text.find('\n', offset), text.size());
  const std::size_t line = 1 + std::count(text.begin(), text.begin() + offset, '\n');
  const std::size_t column = offset - begin + 1;
  std::string out(source);
  out.append(":").append(std::to_string(line)).append(":").append(std::to_string(column));
  out.append(": ").append(error.what()).append("\n  ");
  out.append(text.substr(begin, end - begin)).append("\n  ");
  out.append(column - 1, ' ').append("^");
  return out;
}

}  // namespace tpusim
