// A window over an array, as HLO's `window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=..
// rhs_reversal=..}` describes it for convolution, reduce-window and select-and-scatter.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tpusim::eval {

struct WindowDimension {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;  // may be negative (crops)
  int64_t padding_high = 0;
  int64_t base_dilation = 1;    // lhs_dilate: base elements are this far apart (holes between)
  int64_t window_dilation = 1;  // rhs_dilate: window taps are this far apart
  bool reversal = false;        // rhs_reversal (convolution only): taps visited in reverse
};

// The number of window positions along a base dim of `base_size` elements: how many strided
// placements of the dilated window fit in the dilated, padded base. 0 if none fits.
int64_t WindowOutputSize(int64_t base_size, const WindowDimension& window);

// The base index that window tap `tap` of output position `position` reads, or nullopt when it
// falls on padding or on a hole left by base dilation (XLA skips those taps).
std::optional<int64_t> WindowBaseIndex(int64_t position, int64_t tap, int64_t base_size,
                                       const WindowDimension& window);

// Throws tpusim::Error naming `op` unless `window` has one entry per base dim, every size is >= 0
// and every stride and dilation is >= 1.
void ValidateWindow(std::span<const WindowDimension> window, std::size_t rank, const char* op);

// Per window dim, the table of WindowBaseIndex for every (position, tap), -1 where skipped:
// table[d][position * size + tap]. Kernels look taps up instead of recomputing them.
std::vector<std::vector<int64_t>> WindowTapTables(std::span<const WindowDimension> window,
                                                  std::span<const int64_t> base_dims,
                                                  std::span<const int64_t> out_dims);

}  // namespace tpusim::eval
