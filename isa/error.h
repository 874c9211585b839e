// Errors raised by tpusim's libraries. Every user-facing failure is an Error whose message says
// what is wrong and where; the command line prints it and exits non-zero.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tpusim {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error at a position in some text (a shape string, an HLO file, a config). `offset` is the
// 0-based byte offset into the text that was parsed; callers turn it into line:col.
class ParseError : public Error {
 public:
  ParseError(std::size_t offset, const std::string& message)
      : Error(message), offset_(offset) {}
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

// Renders a ParseError raised while parsing `text` (from `source`, a file name or a description
// such as "SHAPE") as `source:line:col: message` followed by the offending line and a caret under
// the column. Lines and columns count from 1; columns count bytes.
std::string FormatParseError(std::string_view source, std::string_view text, const ParseError& error);

}  // namespace tpusim
