#include "compiler/eval/window.h"

#include <string>

#include "isa/error.h"

namespace tpusim::eval {

int64_t WindowOutputSize(int64_t base_size, const WindowDimension& window) {
  const int64_t dilated_base = base_size > 0 ? (base_size - 1) * window.base_dilation + 1 : 0;
  const int64_t padded = window.padding_low + dilated_base + window.padding_high;
  const int64_t dilated_window =
      window.size > 0 ? (window.size - 1) * window.window_dilation + 1 : 0;
  if (padded < dilated_window) return 0;
  return (padded - dilated_window) / window.stride + 1;
}

std::optional<int64_t> WindowBaseIndex(int64_t position, int64_t tap, int64_t base_size,
                                       const WindowDimension& window) {
  const int64_t dilated =
      position * window.stride + tap * window.window_dilation - window.padding_low;
  if (dilated < 0 || dilated % window.base_dilation != 0) return std::nullopt;
  const int64_t index = dilated / window.base_dilation;
  if (index >= base_size) return std::nullopt;
  return index;
}

void ValidateWindow(std::span<const WindowDimension> window, std::size_t rank, const char* op) {
  if (window.size() != rank) {
    throw Error(std::string(op) + ": the window has " + std::to_string(window.size()) +
                " dims for " + std::to_string(rank) + " base dims");
  }
  for (std::size_t d = 0; d < window.size(); ++d) {
    const WindowDimension& w = window[d];
    if (w.size < 0 || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1) {
      throw Error(std::string(op) + ": window dim " + std::to_string(d) + " has size " +
                  std::to_string(w.size) + ", stride " + std::to_string(w.stride) + ", dilations " +
                  std::to_string(w.base_dilation) + " and " + std::to_string(w.window_dilation) +
                  " (sizes >= 0, the others >= 1)");
    }
  }
}

std::vector<std::vector<int64_t>> WindowTapTables(std::span<const WindowDimension> window,
                                                  std::span<const int64_t> base_dims,
                                                  std::span<const int64_t> out_dims) {
  std::vector<std::vector<int64_t>> tables(window.size());
  for (std::size_t d = 0; d < window.size(); ++d) {
    const int64_t size = window[d].size;
    tables[d].assign(out_dims[d] * size, -1);
    for (int64_t position = 0; position < out_dims[d]; ++position) {
      for (int64_t tap = 0; tap < size; ++tap) {
        const std::optional<int64_t> index =
            WindowBaseIndex(position, tap, base_dims[d], window[d]);
        if (index) tables[d][position * size + tap] = *index;
      }
    }
  }
  return tables;
}

}  // namespace tpusim::eval
