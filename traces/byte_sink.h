// Where a trace writer's bytes go: a file, written through a fixed-size buffer, optionally as a
// gzip stream (zlib's deflate with a gzip header), so that memory does not grow with the trace.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace tpusim::traces {

class ByteSink {
 public:
  static constexpr std::size_t kBufferBytes = 64 * 1024;

  // Creates (truncates) `path`; throws tpusim::Error naming the file if it cannot.
  ByteSink(const std::string& path, bool gzip);
  ~ByteSink();
  ByteSink(const ByteSink&) = delete;
  ByteSink& operator=(const ByteSink&) = delete;

  void Write(std::string_view bytes);
  // Flushes everything (and ends the gzip stream) and closes the file; throws tpusim::Error if
  // the file cannot be written. No writes after.
  void Close();

  // Bytes held in memory waiting to be written (at most kBufferBytes): the writers' only state
  // that grows with what they write, which tests check stays bounded.
  std::size_t bytes_buffered() const { return buffer_.size(); }
  std::size_t buffer_capacity() const { return buffer_.capacity(); }

 private:
  struct Deflater;
  void Flush();
  void WriteToFile(const char* data, std::size_t size);

  std::string path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<Deflater> deflater_;  // null for a plain file
  std::string buffer_;
};

}  // namespace tpusim::traces
