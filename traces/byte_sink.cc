#include "traces/byte_sink.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "isa/error.h"

namespace tpusim::traces {

struct ByteSink::Deflater {
  z_stream stream{};
  std::vector<unsigned char> out = std::vector<unsigned char>(kBufferBytes);
};

ByteSink::ByteSink(const std::string& path, bool gzip) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    throw Error("cannot create trace file " + path + ": " + std::strerror(errno));
  }
  if (gzip) {
    deflater_ = std::make_unique<Deflater>();
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream (what gunzip and
    // Perfetto's UI read), not a zlib one.
    if (deflateInit2(&deflater_->stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      std::fclose(file_);
      throw Error("cannot start gzip compression for " + path);
    }
  }
  buffer_.reserve(kBufferBytes);
}

ByteSink::~ByteSink() {
  if (deflater_ != nullptr) deflateEnd(&deflater_->stream);
  if (file_ != nullptr) std::fclose(file_);
}

void ByteSink::Write(std::string_view bytes) {
  if (file_ == nullptr) throw Error("trace file " + path_ + " written after it was closed");
  while (!bytes.empty()) {
    const std::size_t room = kBufferBytes - buffer_.size();
    const std::size_t n = bytes.size() < room ? bytes.size() : room;
    buffer_.append(bytes.data(), n);
    bytes.remove_prefix(n);
    if (buffer_.size() == kBufferBytes) Flush();
  }
}

void ByteSink::WriteToFile(const char* data, std::size_t size) {
  if (size > 0 && std::fwrite(data, 1, size, file_) != size) {
    throw Error("cannot write trace file " + path_ + ": " + std::strerror(errno));
  }
}

void ByteSink::Flush() {
  if (deflater_ == nullptr) {
    WriteToFile(buffer_.data(), buffer_.size());
    buffer_.clear();
    return;
  }
  z_stream& z = deflater_->stream;
  z.next_in = reinterpret_cast<Bytef*>(buffer_.data());
  z.avail_in = static_cast<uInt>(buffer_.size());
  do {
    z.next_out = deflater_->out.data();
    z.avail_out = static_cast<uInt>(deflater_->out.size());
    deflate(&z, Z_NO_FLUSH);
    WriteToFile(reinterpret_cast<const char*>(deflater_->out.data()),
                deflater_->out.size() - z.avail_out);
  } while (z.avail_out == 0);
  buffer_.clear();
}

void ByteSink::Close() {
  if (file_ == nullptr) return;
  Flush();
  if (deflater_ != nullptr) {
    z_stream& z = deflater_->stream;
    int status = Z_OK;
    while (status == Z_OK) {
      z.next_out = deflater_->out.data();
      z.avail_out = static_cast<uInt>(deflater_->out.size());
      status = deflate(&z, Z_FINISH);
      WriteToFile(reinterpret_cast<const char*>(deflater_->out.data()),
                  deflater_->out.size() - z.avail_out);
    }
    if (status != Z_STREAM_END) throw Error("cannot finish gzip stream of " + path_);
    deflateEnd(&z);
    deflater_.reset();
  }
  const bool failed = std::fflush(file_) != 0 || std::ferror(file_) != 0;
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed || close_failed) throw Error("cannot write trace file " + path_);
}

}  // namespace tpusim::traces
