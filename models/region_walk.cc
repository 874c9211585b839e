#include "models/region_walk.h"

#include <algorithm>
#include <map>
#include <vector>

namespace tpusim::models {
namespace {

using isa::LayoutMap;

class RunMerger {
 public:
  explicit RunMerger(const std::function<void(const ByteRun&)>& emit) : emit_(emit) {}

  void Add(int64_t source, int64_t destination, int64_t bytes) {
    if (run_.bytes > 0 && source == run_.source_offset + run_.bytes &&
        destination == run_.destination_offset + run_.bytes) {
      run_.bytes += bytes;
      return;
    }
    Flush();
    run_ = {source, destination, bytes};
  }
  void Flush() {
    if (run_.bytes > 0) emit_(run_);
    run_.bytes = 0;
  }

 private:
  const std::function<void(const ByteRun&)>& emit_;
  ByteRun run_;
};

// Advances `index` (row-major over [first, end) per position of `dims`, the last fastest); false
// once every index has been visited.
bool Next(std::vector<int64_t>& index, const std::vector<int64_t>& first,
          const std::vector<int64_t>& end) {
  for (std::size_t p = index.size(); p-- > 0;) {
    if (++index[p] < end[p]) return true;
    index[p] = first[p];
  }
  return false;
}

// Any layouts, `*` tiles included: one LinearIndex per element and side, in row-major order.
void WalkGeneric(const LayoutMap& source, std::span<const int64_t> source_start,
                 const LayoutMap& destination, std::span<const int64_t> destination_start,
                 std::span<const int64_t> sizes, RunMerger& merger) {
  const int64_t element_bytes = source.element_bits() / 8;
  const std::size_t rank = sizes.size();
  std::vector<int64_t> k(rank, 0), zero(rank, 0), end(sizes.begin(), sizes.end());
  std::vector<int64_t> at_source(rank), at_destination(rank);
  do {
    for (std::size_t d = 0; d < rank; ++d) {
      at_source[d] = source_start[d] + k[d];
      at_destination[d] = destination_start[d] + k[d];
    }
    merger.Add(source.LinearIndex(at_source) * element_bytes,
               destination.LinearIndex(at_destination) * element_bytes, element_bytes);
  } while (Next(k, zero, end));
}

// The linear indices of the elements start .. start + out.size() - 1 along dim d.
void LinearIndices(const LayoutMap& map, std::size_t d, int64_t start, std::span<int64_t> out) {
  std::vector<int64_t> index(map.shape().rank(), 0);
  for (std::size_t k = 0; k < out.size(); ++k) {
    index[d] = start + static_cast<int64_t>(k);
    out[k] = map.LinearIndex(index);
  }
}

bool IsFlat(const LayoutMap& map) { return map.shape().rank() == 1 && map.layout().tiles.empty(); }

// table[k] = byte offset of the element at start[d] + k along dim d (0 in the other dims). For a
// separable layout an element's offset is the sum of its dims' entries.
std::vector<int64_t> DimTable(const LayoutMap& map, std::span<const int64_t> start, std::size_t d,
                              int64_t size, int64_t element_bytes, DimTableCache* cache) {
  std::vector<int64_t> table(size);
  if (cache != nullptr) {
    cache->Slice(map, d, start[d], table);
  } else {
    LinearIndices(map, d, start[d], table);
  }
  for (int64_t& offset : table) offset *= element_bytes;
  return table;
}

// The box a layout keeps contiguous: its first tile on the most minor physical dims (later tiles
// only reorder inside it), or the whole most minor dim when untiled.
std::vector<int64_t> NaturalBox(const LayoutMap& map) {
  const auto rank = static_cast<int64_t>(map.shape().rank());
  const std::vector<int64_t>& order = map.physical_order();
  std::vector<int64_t> box(rank, 1);
  const std::vector<isa::Tile>& tiles = map.layout().tiles;
  if (tiles.empty()) {
    box[order.back()] = std::max<int64_t>(1, map.shape().dims[order.back()]);
    return box;
  }
  const std::vector<int64_t>& tile = tiles.front().dims;
  const auto m = static_cast<int64_t>(tile.size());
  for (int64_t j = 0; j < std::min(m, rank); ++j) {
    box[order[rank - 1 - j]] = std::max<int64_t>(1, tile[m - 1 - j]);
  }
  return box;
}

// One box's extent along one dim, and what the box test needs from it.
struct Segment {
  int64_t first = 0;  // region-relative indices [first, end)
  int64_t end = 0;
  bool same_placement = true;  // destination offset - source offset is `shift` all along it
  int64_t shift = 0;
  int64_t source_min = 0;
  int64_t source_max = 0;
};

// Cuts [0, size) at the multiples of `box` in the source array's own indices (start + k).
std::vector<Segment> Segments(const std::vector<int64_t>& source_table,
                              const std::vector<int64_t>& destination_table, int64_t start,
                              int64_t box) {
  std::vector<Segment> segments;
  const auto size = static_cast<int64_t>(source_table.size());
  for (int64_t k = 0; k < size;) {
    Segment segment;
    segment.first = k;
    segment.end = std::min(size, k + box - (start + k) % box);
    segment.shift = destination_table[k] - source_table[k];
    segment.source_min = segment.source_max = source_table[k];
    for (int64_t i = k; i < segment.end; ++i) {
      segment.same_placement &= destination_table[i] - source_table[i] == segment.shift;
      segment.source_min = std::min(segment.source_min, source_table[i]);
      segment.source_max = std::max(segment.source_max, source_table[i]);
    }
    segments.push_back(segment);
    k = segment.end;
  }
  return segments;
}

class SeparableWalk {
 public:
  SeparableWalk(const LayoutMap& source, std::span<const int64_t> source_start,
                const LayoutMap& destination, std::span<const int64_t> destination_start,
                std::span<const int64_t> sizes, RunMerger& merger, DimTableCache* cache, BoxMemo* memo)
      : element_bytes_(source.element_bits() / 8),
        order_(source.physical_order()),
        merger_(merger),
        memo_(memo) {
    const std::size_t rank = sizes.size();
    const std::vector<int64_t> source_box = NaturalBox(source);
    const std::vector<int64_t> destination_box = NaturalBox(destination);
    source_tables_.resize(rank);
    destination_tables_.resize(rank);
    segments_.resize(rank);
    // Boxes of one element (a transposing pair of layouts) would only add a test per element:
    // then the whole region is one box, walked element by element.
    int64_t box_elements = 1;
    for (std::size_t d = 0; d < rank; ++d) {
      box_elements *= std::min(source_box[d], destination_box[d]);
    }
    for (std::size_t d = 0; d < rank; ++d) {
      source_tables_[d] = DimTable(source, source_start, d, sizes[d], element_bytes_, cache);
      destination_tables_[d] =
          DimTable(destination, destination_start, d, sizes[d], element_bytes_, cache);
      if (box_elements == 1) {
        segments_[d] = {Segment{.first = 0, .end = sizes[d], .same_placement = false}};
      } else {
        segments_[d] = Segments(source_tables_[d], destination_tables_[d], source_start[d],
                                std::min(source_box[d], destination_box[d]));
      }
    }
    if (memo_ != nullptr) NumberPatterns();
  }

  void Run() {
    // Segment numbers per position of order_ (major first).
    const std::size_t rank = order_.size();
    std::vector<int64_t> box(rank, 0), zero(rank, 0), count(rank);
    for (std::size_t p = 0; p < rank; ++p) {
      count[p] = static_cast<int64_t>(segments_[order_[p]].size());
    }
    do {
      VisitBox(box);
    } while (Next(box, zero, count));
  }

 private:
  const Segment& SegmentAt(const std::vector<int64_t>& box, std::size_t position) const {
    return segments_[order_[position]][box[position]];
  }

  void VisitBox(const std::vector<int64_t>& box) {
    bool same_placement = true;
    int64_t source_min = 0, source_max = 0, shift = 0, elements = 1;
    for (std::size_t p = 0; p < order_.size(); ++p) {
      const Segment& segment = SegmentAt(box, p);
      same_placement &= segment.same_placement;
      source_min += segment.source_min;
      source_max += segment.source_max;
      shift += segment.shift;
      elements *= segment.end - segment.first;
    }
    // The box's offsets are distinct multiples of the element size between source_min and
    // source_max; it is contiguous exactly when there is no room for a gap.
    if (same_placement && source_max - source_min == (elements - 1) * element_bytes_) {
      merger_.Add(source_min, source_min + shift, elements * element_bytes_);
      return;
    }
    if (memo_ == nullptr) {
      WalkElements(box);
      return;
    }
    int64_t source_base = 0, destination_base = 0;
    for (std::size_t p = 0; p < order_.size(); ++p) {
      const int64_t d = order_[p];
      const Segment& segment = SegmentAt(box, p);
      pattern_[p] = patterns_[d][box[p]];
      source_base += source_tables_[d][segment.first];
      destination_base += destination_tables_[d][segment.first];
    }
    merger_.Flush();
    if (memo_->BeginBox(pattern_, source_base, destination_base)) return;
    WalkElements(box);
    merger_.Flush();
    memo_->EndBox();
  }

  // patterns_[d][s]: a number per distinct list of offsets (source and destination, relative to
  // the segment's first element) of dim d's segments; a box's runs relative to its base offsets
  // follow from its segments' lists, the layouts being separable.
  void NumberPatterns() {
    const std::size_t rank = order_.size();
    patterns_.resize(rank);
    pattern_.resize(rank);
    std::map<std::vector<int64_t>, int32_t> numbers;
    for (std::size_t d = 0; d < rank; ++d) {
      for (const Segment& segment : segments_[d]) {
        std::vector<int64_t> offsets;
        offsets.reserve(2 * static_cast<std::size_t>(segment.end - segment.first));
        for (int64_t i = segment.first; i < segment.end; ++i) {
          offsets.push_back(source_tables_[d][i] - source_tables_[d][segment.first]);
          offsets.push_back(destination_tables_[d][i] - destination_tables_[d][segment.first]);
        }
        patterns_[d].push_back(numbers.emplace(std::move(offsets), static_cast<int32_t>(numbers.size())).first->second);
      }
    }
  }

  // The box element by element, the source's most minor physical dim innermost.
  void WalkElements(const std::vector<int64_t>& box) {
    const std::size_t rank = order_.size();
    const std::size_t outer = rank - 1;
    std::vector<int64_t> index(outer), first(outer), end(outer);
    for (std::size_t p = 0; p < outer; ++p) {
      first[p] = index[p] = SegmentAt(box, p).first;
      end[p] = SegmentAt(box, p).end;
    }
    const int64_t inner = order_.back();
    const Segment& inner_segment = SegmentAt(box, outer);
    const std::vector<int64_t>& inner_source = source_tables_[inner];
    const std::vector<int64_t>& inner_destination = destination_tables_[inner];
    do {
      int64_t source_base = 0, destination_base = 0;
      for (std::size_t p = 0; p < outer; ++p) {
        source_base += source_tables_[order_[p]][index[p]];
        destination_base += destination_tables_[order_[p]][index[p]];
      }
      for (int64_t k = inner_segment.first; k < inner_segment.end; ++k) {
        merger_.Add(source_base + inner_source[k], destination_base + inner_destination[k],
                    element_bytes_);
      }
    } while (Next(index, first, end));
  }

  int64_t element_bytes_;
  const std::vector<int64_t>& order_;  // logical dims, major to minor in the source
  RunMerger& merger_;
  BoxMemo* memo_;
  std::vector<std::vector<int32_t>> patterns_;            // by logical dim, then segment
  std::vector<int32_t> pattern_;                          // the visited box's, by position
  std::vector<std::vector<int64_t>> source_tables_;       // by logical dim
  std::vector<std::vector<int64_t>> destination_tables_;  // by logical dim
  std::vector<std::vector<Segment>> segments_;            // by logical dim
};

}  // namespace

void DimTableCache::Slice(const LayoutMap& map, std::size_t d, int64_t start,
                          std::span<int64_t> out) {
  const int64_t dim_size = map.shape().dims[d];
  const auto size = static_cast<int64_t>(out.size());
  if (dim_size > kMaxCachedDim || start < 0 || start > dim_size - size) {
    // Not kept (LinearIndex rejects indices outside the array).
    LinearIndices(map, d, start, out);
    return;
  }
  Table* table = nullptr;
  for (Table& candidate : tables_) {
    if (candidate.dim == d && candidate.shape == map.shape()) {
      table = &candidate;
      break;
    }
  }
  if (table == nullptr) {
    if (tables_.size() == kMaxTables) tables_.erase(tables_.begin());
    table = &tables_.emplace_back();
    table->shape = map.shape();
    table->dim = d;
    table->linear.assign(static_cast<std::size_t>(dim_size), kUnknown);
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    int64_t& linear = table->linear[static_cast<std::size_t>(start) + k];
    if (linear == kUnknown) {
      // One run of unknown entries at once (LinearIndex checks the bounds).
      std::size_t end = k + 1;
      while (end < out.size() && table->linear[static_cast<std::size_t>(start) + end] == kUnknown) {
        ++end;
      }
      LinearIndices(map, d, start + static_cast<int64_t>(k),
                    std::span<int64_t>(table->linear).subspan(static_cast<std::size_t>(start) + k,
                                                              end - k));
    }
    out[k] = linear;
  }
}

void WalkRegion(const LayoutMap& source, std::span<const int64_t> source_start,
                const LayoutMap& destination, std::span<const int64_t> destination_start,
                std::span<const int64_t> sizes, const std::function<void(const ByteRun&)>& emit,
                DimTableCache* cache, BoxMemo* memo) {
  for (int64_t size : sizes) {
    if (size == 0) return;
  }
  // Two flat arrays (rank 1, untiled: the byte copies compiled kernels issue, up to gigabytes for
  // a parameter's host copy): one run, without a per-element offset table on each side.
  if (sizes.size() == 1 && IsFlat(source) && IsFlat(destination)) {
    const int64_t element_bytes = source.element_bits() / 8;
    if (source.element_bits() % 8 == 0 && source_start[0] >= 0 && destination_start[0] >= 0 &&
        source_start[0] + sizes[0] <= source.shape().dims[0] &&
        destination_start[0] + sizes[0] <= destination.shape().dims[0]) {
      emit({source_start[0] * element_bytes, destination_start[0] * element_bytes, sizes[0] * element_bytes});
      return;
    }
  }
  RunMerger merger(emit);
  if (sizes.empty() || !source.is_separable() || !destination.is_separable()) {
    WalkGeneric(source, source_start, destination, destination_start, sizes, merger);
  } else {
    SeparableWalk(source, source_start, destination, destination_start, sizes, merger, cache, memo)
        .Run();
  }
  merger.Flush();
}

}  // namespace tpusim::models
