#include "models/dma_plan.h"

#include <algorithm>
#include <bit>
#include <map>
#include <span>
#include <utility>

#include "isa/layout_index.h"
#include "models/region_walk.h"

namespace tpusim::models {
namespace {

// The burst windows one side of a transfer touches: per window number (address / burst_bytes) the
// touched span [low, high) within it, and for destination windows the highest source window
// whose bytes land in it. When the image's windows are not many more than the region's (whole
// arrays, most tiles), they are a dense table indexed from the image's first window; otherwise
// (a thin slice of a large array) a list in the order the walk touches them, merged into the
// last entry while the walk stays in one window, and sorted (and merged) at the end only if the
// walk went back: walks are mostly in address order, and a hash map per DMA cost more than the
// rest of the plan (MaxText's broadcast fills).
class WindowSet {
 public:
  struct Span {
    uint64_t low = UINT64_MAX;  // UINT64_MAX: untouched
    uint64_t high = 0;
    uint64_t need = 0;
  };

  // The image spans [image_address, image_address + image_bytes); the region holds
  // payload_bytes of it.
  WindowSet(uint64_t burst_bytes, uint64_t image_address, uint64_t image_bytes,
            uint64_t payload_bytes)
      : burst_bytes_(burst_bytes), first_window_(image_address / burst_bytes) {
    const uint64_t image_windows = image_bytes / burst_bytes + 2;
    if (image_windows <= 4 * (payload_bytes / burst_bytes) + 4096) dense_.resize(image_windows);
  }

  void Touch(uint64_t window, uint64_t low, uint64_t high, uint64_t need) {
    Span& span = dense_.empty() ? Sparse(window) : dense_[window - first_window_];
    Merge(span, Span{low, high, need});
  }

  // The touched windows in address order.
  std::vector<std::pair<uint64_t, Span>> Sorted() {
    std::vector<std::pair<uint64_t, Span>> sorted;
    if (!dense_.empty()) {
      for (std::size_t i = 0; i < dense_.size(); ++i) {
        if (dense_[i].low != UINT64_MAX) sorted.emplace_back(first_window_ + i, dense_[i]);
      }
      return sorted;
    }
    if (in_order_) return std::move(sparse_);
    std::stable_sort(sparse_.begin(), sparse_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& entry : sparse_) {
      if (!sorted.empty() && sorted.back().first == entry.first) {
        Merge(sorted.back().second, entry.second);
      } else {
        sorted.push_back(entry);
      }
    }
    return sorted;
  }

  uint64_t burst_bytes() const { return burst_bytes_; }

 private:
  static void Merge(Span& into, const Span& span) {
    into.low = std::min(into.low, span.low);
    into.high = std::max(into.high, span.high);
    into.need = std::max(into.need, span.need);
  }

  Span& Sparse(uint64_t window) {
    if (sparse_.empty() || sparse_.back().first != window) {
      in_order_ = in_order_ && (sparse_.empty() || sparse_.back().first < window);
      sparse_.emplace_back(window, Span{});
    }
    return sparse_.back().second;
  }

  uint64_t burst_bytes_;
  uint64_t first_window_;
  std::vector<Span> dense_;
  std::vector<std::pair<uint64_t, Span>> sparse_;  // in touch order
  bool in_order_ = true;                            // sparse_'s windows strictly ascend
};

// Accounts one run: the source and destination windows it touches and, per destination window,
// the last source window feeding it, as read(window, low, high) and write(window, low, high,
// need). burst_bytes is a power of two: shifts, not divisions (this runs once per element when
// layouts scatter them).
template <typename Read, typename Write>
void TouchWindows(uint64_t source_address, uint64_t destination_address, uint64_t bytes,
                  uint64_t burst_bytes, Read&& read, Write&& write) {
  const int shift = std::countr_zero(burst_bytes);
  const uint64_t mask = burst_bytes - 1;
  const uint64_t source_end = source_address + bytes;
  for (uint64_t at = source_address; at < source_end;) {
    const uint64_t window = at >> shift;
    const uint64_t end = std::min(source_end, (window + 1) << shift);
    read(window, at & mask, end - (window << shift));
    at = end;
  }
  const uint64_t destination_end = destination_address + bytes;
  for (uint64_t at = destination_address; at < destination_end;) {
    const uint64_t window = at >> shift;
    const uint64_t end = std::min(destination_end, (window + 1) << shift);
    const uint64_t last_source_byte = source_address + (end - destination_address) - 1;
    write(window, at & mask, end - (window << shift), last_source_byte >> shift);
    at = end;
  }
}

// The windows a plan touches, kept in `reads` and `writes`.
class PlanWindows {
 public:
  PlanWindows(WindowSet& reads, WindowSet& writes) : reads_(reads), writes_(writes) {}

  void Add(uint64_t source_address, uint64_t destination_address, uint64_t bytes) {
    TouchWindows(
        source_address, destination_address, bytes, reads_.burst_bytes(),
        [&](uint64_t window, uint64_t low, uint64_t high) { reads_.Touch(window, low, high, 0); },
        [&](uint64_t window, uint64_t low, uint64_t high, uint64_t need) { writes_.Touch(window, low, high, need); });
  }
  WindowSet& reads() { return reads_; }
  WindowSet& writes() { return writes_; }

 private:
  WindowSet& reads_;
  WindowSet& writes_;
};

// Timing-only plans: a box walked element by element (a transpose's, a re-tiling's) touches a
// few windows with many runs (MaxText's and Llama's row-major bf16 <-> T(8,128)(2,1) copies: 2-byte
// runs, 256 per 512-byte window). Boxes of one pattern at the same offsets within their windows
// touch the same windows relative to their bases, so each such kind is walked once and its
// touches replayed for the others. Equal to walking every box: a window's request is the span of
// the bytes touched in it, and its need the last source window, whatever runs touch them.
class WindowMemo : public BoxMemo {
 public:
  WindowMemo(PlanWindows& windows, uint64_t source_base, uint64_t destination_base, uint64_t& payload_bytes)
      : windows_(windows),
        source_base_(source_base),
        destination_base_(destination_base),
        payload_bytes_(payload_bytes) {}

  // The walk's runs: recorded inside a box being learnt, else accounted.
  void Run(uint64_t source_address, uint64_t destination_address, uint64_t bytes) {
    payload_bytes_ += bytes;
    if (learning_ == nullptr) {
      windows_.Add(source_address, destination_address, bytes);
      return;
    }
    learning_->payload_bytes += bytes;
    TouchWindows(
        source_address, destination_address, bytes, windows_.reads().burst_bytes(),
        [&](uint64_t window, uint64_t low, uint64_t high) {
          Merge(learning_->reads, {Relative(window, source_window_), low, high, 0});
        },
        [&](uint64_t window, uint64_t low, uint64_t high, uint64_t need) {
          Merge(learning_->writes, {Relative(window, destination_window_), low, high, Relative(need, source_window_)});
        });
  }

  bool BeginBox(std::span<const int32_t> pattern, int64_t source_base, int64_t destination_base) override {
    const uint64_t burst = windows_.reads().burst_bytes();
    const uint64_t source = source_base_ + static_cast<uint64_t>(source_base);
    const uint64_t destination = destination_base_ + static_cast<uint64_t>(destination_base);
    source_window_ = source / burst;
    destination_window_ = destination / burst;
    key_.assign(pattern.begin(), pattern.end());
    key_.push_back(static_cast<int64_t>(source % burst));
    key_.push_back(static_cast<int64_t>(destination % burst));
    const auto known = boxes_.find(key_);
    if (known == boxes_.end()) {
      if (boxes_.size() >= kMaxBoxes) boxes_.clear();
      learning_ = &boxes_[key_];
      return false;
    }
    Replay(known->second);
    payload_bytes_ += known->second.payload_bytes;
    return true;
  }

  void EndBox() override {
    Replay(*learning_);
    learning_ = nullptr;
  }

 private:
  static constexpr std::size_t kMaxBoxes = 1 << 16;

  struct Touch {
    int64_t window = 0;  // relative to the window of the box's first element on its side
    uint64_t low = 0;
    uint64_t high = 0;
    int64_t need = 0;    // writes: relative to the window of the box's first source element
  };
  struct Box {
    std::vector<Touch> reads;
    std::vector<Touch> writes;
    uint64_t payload_bytes = 0;
  };

  static int64_t Relative(uint64_t window, uint64_t base) { return static_cast<int64_t>(window - base); }
  static uint64_t Absolute(int64_t relative, uint64_t base) { return base + static_cast<uint64_t>(relative); }

  // Into the entry of the same window (a box touches few; the latest ones most likely).
  static void Merge(std::vector<Touch>& touches, const Touch& touch) {
    for (auto it = touches.rbegin(); it != touches.rend(); ++it) {
      if (it->window == touch.window) {
        it->low = std::min(it->low, touch.low);
        it->high = std::max(it->high, touch.high);
        it->need = std::max(it->need, touch.need);
        return;
      }
    }
    touches.push_back(touch);
  }

  void Replay(const Box& box) {
    for (const Touch& t : box.reads) windows_.reads().Touch(Absolute(t.window, source_window_), t.low, t.high, 0);
    for (const Touch& t : box.writes) {
      windows_.writes().Touch(Absolute(t.window, destination_window_), t.low, t.high, Absolute(t.need, source_window_));
    }
  }

  PlanWindows& windows_;
  uint64_t source_base_;
  uint64_t destination_base_;
  uint64_t& payload_bytes_;
  std::map<std::vector<int64_t>, Box> boxes_;
  std::vector<int64_t> key_;
  Box* learning_ = nullptr;
  uint64_t source_window_ = 0;
  uint64_t destination_window_ = 0;
};

}  // namespace

DmaPlan PlanDma(const DmaTransfer& transfer, uint64_t burst_bytes, bool move_data,
                DimTableCache* cache) {
  ValidateTransfer(transfer);
  const isa::LayoutMap source(transfer.source.shape);
  const isa::LayoutMap destination(transfer.destination.shape);
  Memory& source_memory = *transfer.source.memory;
  Memory& destination_memory = *transfer.destination.memory;
  const uint64_t source_base = transfer.source.base_address;
  const uint64_t destination_base = transfer.destination.base_address;

  int64_t elements = 1;
  for (int64_t size : transfer.sizes) elements *= size;
  const auto payload_bytes = static_cast<uint64_t>(elements * source.element_bits() / 8);
  WindowSet reads(burst_bytes, source_base, static_cast<uint64_t>(source.byte_size()),
                  payload_bytes);
  WindowSet writes(burst_bytes, destination_base, static_cast<uint64_t>(destination.byte_size()),
                   payload_bytes);
  DmaPlan plan;
  PlanWindows windows(reads, writes);
  if (move_data) {
    WalkRegion(source, transfer.source.start, destination, transfer.destination.start, transfer.sizes,
               [&](const ByteRun& run) {
                 const uint64_t from = source_base + static_cast<uint64_t>(run.source_offset);
                 const uint64_t to = destination_base + static_cast<uint64_t>(run.destination_offset);
                 const auto bytes = static_cast<uint64_t>(run.bytes);
                 destination_memory.contents().CopyFrom(source_memory.contents(), from, to, bytes);
                 windows.Add(from, to, bytes);
                 plan.payload_bytes += bytes;
               },
               cache);
  } else {
    WindowMemo memo(windows, source_base, destination_base, plan.payload_bytes);
    WalkRegion(source, transfer.source.start, destination, transfer.destination.start, transfer.sizes,
               [&](const ByteRun& run) {
                 memo.Run(source_base + static_cast<uint64_t>(run.source_offset),
                          destination_base + static_cast<uint64_t>(run.destination_offset),
                          static_cast<uint64_t>(run.bytes));
               },
               cache, &memo);
  }

  std::vector<uint64_t> read_windows;
  for (const auto& [window, span] : reads.Sorted()) {
    read_windows.push_back(window);
    plan.reads.push_back({window * burst_bytes + span.low, span.high - span.low});
  }
  for (const auto& [window, span] : writes.Sorted()) {
    plan.writes.push_back({window * burst_bytes + span.low, span.high - span.low});
    const auto need = std::lower_bound(read_windows.begin(), read_windows.end(), span.need);
    plan.write_needs.push_back(static_cast<uint64_t>(need - read_windows.begin()));
  }
  return plan;
}

namespace {

uint64_t Mix(uint64_t hash, uint64_t value) { return (hash ^ value) * 0x100000001b3ull + (hash >> 29); }

uint64_t HashEndpoint(uint64_t hash, const DmaEndpoint& endpoint) {
  hash = Mix(hash, reinterpret_cast<uintptr_t>(endpoint.memory));
  hash = Mix(hash, endpoint.base_address);
  hash = Mix(hash, static_cast<uint64_t>(endpoint.shape.element_type));
  for (int64_t d : endpoint.shape.dims) hash = Mix(hash, static_cast<uint64_t>(d));
  if (endpoint.shape.layout) {
    for (int64_t d : endpoint.shape.layout->minor_to_major) hash = Mix(hash, static_cast<uint64_t>(d) + 101);
    for (const isa::Tile& tile : endpoint.shape.layout->tiles) {
      for (int64_t d : tile.dims) hash = Mix(hash, static_cast<uint64_t>(d) + 211);
    }
  }
  for (int64_t s : endpoint.start) hash = Mix(hash, static_cast<uint64_t>(s) + 307);
  return hash;
}

bool SameEndpoint(const DmaEndpoint& a, const DmaEndpoint& b) {
  return a.memory == b.memory && a.base_address == b.base_address && a.start == b.start && a.shape == b.shape;
}

// Moves `endpoint`'s start back by whole periods of its layout (along a dim its first tile splits,
// the tile's size there; along any other dim, 1) and its base address forward by the bytes that
// moves every element: moving an index by whole tiles moves its element by the same bytes
// wherever it lies, so the region's bytes keep their places relative to each other, and the plan
// of the folded transfer, placed at the new base, is the transfer's. A dot kernel reads the same
// panel at every block of rows, a loop body the same slice at every step: one plan each, not one
// per start. Left alone where offsets are not a sum of one term per dim (tiles that combine dims,
// padded or split layouts, sub-byte elements).
void FoldStart(DmaEndpoint& endpoint) {
  const isa::Shape& shape = endpoint.shape;
  const auto rank = static_cast<std::size_t>(shape.rank());
  std::vector<int64_t> period(rank, 1);
  if (shape.layout) {
    const isa::Layout& layout = *shape.layout;
    if (!layout.padded_dimensions.empty() || !layout.split_configs.empty() || !layout.dim_level_types.empty() ||
        (layout.element_size_in_bits != 0 && layout.element_size_in_bits % 8 != 0)) {
      return;
    }
    if (!layout.tiles.empty()) {
      const std::vector<int64_t>& tile = layout.tiles.front().dims;
      if (tile.size() > rank) return;
      for (std::size_t j = 0; j < tile.size(); ++j) {
        if (tile[j] == isa::kCombineDimension) return;
        // The tile's dims apply to the most minor physical dims: minor_to_major[0] is the last.
        period[static_cast<std::size_t>(layout.minor_to_major[tile.size() - 1 - j])] = tile[j];
      }
    }
  }
  std::vector<int64_t> folded = endpoint.start;
  for (std::size_t d = 0; d < rank; ++d) folded[d] %= period[d];
  if (folded == endpoint.start) return;
  const isa::LayoutMap map(shape);
  endpoint.base_address += static_cast<uint64_t>(map.ByteOffset(endpoint.start) - map.ByteOffset(folded));
  endpoint.start = std::move(folded);
}

}  // namespace

PlacedDmaPlan DmaPlanCache::Plan(const DmaTransfer& transfer, uint64_t burst_bytes, DimTableCache* tables) {
  // The transfer with its base addresses reduced to their place in a burst window.
  DmaTransfer reduced = transfer;
  FoldStart(reduced.source);
  FoldStart(reduced.destination);
  const uint64_t source_base = reduced.source.base_address;
  const uint64_t destination_base = reduced.destination.base_address;
  reduced.source.base_address %= burst_bytes;
  reduced.destination.base_address %= burst_bytes;
  reduced.semaphore = nullptr;
  reduced.id = 0;
  PlacedDmaPlan placed;
  placed.read_offset = source_base - reduced.source.base_address;
  placed.write_offset = destination_base - reduced.destination.base_address;
  uint64_t hash = HashEndpoint(HashEndpoint(burst_bytes, reduced.source), reduced.destination);
  for (int64_t size : reduced.sizes) hash = Mix(hash, static_cast<uint64_t>(size) + 401);
  const auto [first, last] = entries_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const Entry& entry = it->second;
    if (entry.burst_bytes == burst_bytes && entry.transfer.sizes == reduced.sizes &&
        SameEndpoint(entry.transfer.source, reduced.source) &&
        SameEndpoint(entry.transfer.destination, reduced.destination)) {
      placed.plan = entry.plan;
      return placed;
    }
  }
  placed.plan = std::make_shared<const DmaPlan>(PlanDma(reduced, burst_bytes, false, tables));
  const std::size_t requests = placed.plan->reads.size() + placed.plan->writes.size();
  if (requests > kMaxRequests / 2) return placed;
  if (requests_ + requests > kMaxRequests) {
    entries_.clear();
    requests_ = 0;
  }
  entries_.emplace(hash, Entry{std::move(reduced), burst_bytes, placed.plan});
  requests_ += requests;
  return placed;
}

}  // namespace tpusim::models
