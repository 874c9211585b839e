#include "isa/materialize.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "isa/convert.h"
#include "isa/error.h"

namespace tpusim::isa {
namespace {

int64_t CheckedElementBytes(const LayoutMap& map) {
  const ElementType type = map.shape().element_type;
  RequireSupported(type, "materializing " + ToString(map.shape()));
  if (map.element_bits() != ElementBitWidth(type)) {
    throw Error("materializing " + ToString(map.shape()) + ": E(" +
                std::to_string(map.element_bits()) + ") packing differs from " +
                std::string(ElementTypeName(type)) + "'s " + std::to_string(ElementBitWidth(type)) +
                " bits and is not supported");
  }
  return ElementByteWidth(type);
}

void CheckSize(const char* what, std::size_t actual, int64_t expected, const LayoutMap& map) {
  if (static_cast<int64_t>(actual) != expected) {
    throw Error(std::string(what) + " of " + ToString(map.shape()) + " must be " +
                std::to_string(expected) + " bytes, got " + std::to_string(actual));
  }
}

// The bytes of one padding element (seed 000's padding_value; XLA's lowest/highest of a float
// type are -inf/+inf, and ±448 for f8e4m3fn, which has no infinity).
std::vector<uint8_t> PaddingElement(const Layout& layout, ElementType type, int64_t bytes) {
  std::vector<uint8_t> element(bytes, 0);
  double value = 0;
  switch (layout.padding_value) {
    case PaddingValue::kZero:
    case PaddingValue::kUnknown:
      return element;
    case PaddingValue::kOne:
      value = 1;
      break;
    case PaddingValue::kLowest:
      value = -std::numeric_limits<double>::infinity();
      break;
    case PaddingValue::kHighest:
      value = std::numeric_limits<double>::infinity();
      break;
  }
  if (type == ElementType::kF8E4M3FN && value != 1) {
    element[0] = value < 0 ? 0xFE : 0x7E;
    return element;
  }
  ConvertElements(ElementType::kF64, &value, type, element.data(), 1);
  return element;
}

void FillPadding(const LayoutMap& map, int64_t element_bytes, std::span<uint8_t> image) {
  const std::vector<uint8_t> pad =
      PaddingElement(map.layout(), map.shape().element_type, element_bytes);
  if (std::all_of(pad.begin(), pad.end(), [](uint8_t b) { return b == 0; })) {
    std::fill(image.begin(), image.end(), 0);
    return;
  }
  for (std::size_t at = 0; at < image.size(); at += pad.size()) {
    std::memcpy(image.data() + at, pad.data(), pad.size());
  }
}

// For a separable layout: table[d][i] = linear index of the element with index i along logical
// dim d and 0 elsewhere; the linear index of any element is the sum over its dims.
std::vector<std::vector<int64_t>> DimOffsetTables(const LayoutMap& map) {
  const std::vector<int64_t>& dims = map.shape().dims;
  std::vector<std::vector<int64_t>> tables(dims.size());
  std::vector<int64_t> index(dims.size(), 0);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    tables[d].resize(dims[d]);
    for (int64_t i = 0; i < dims[d]; ++i) {
      index[d] = i;
      tables[d][i] = map.LinearIndex(index);
    }
    index[d] = 0;
  }
  return tables;
}

// Calls visit(image_base, logical_base) for every index of the dims in `outer` (most major first,
// the rest held at 0), stepping them with an odometer: image_base is the sum of their table
// offsets, logical_base their row-major offset in the array.
template <typename VisitFn>
void ForEachOuterIndex(const std::vector<std::vector<int64_t>>& tables, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& outer, VisitFn&& visit) {
  std::vector<int64_t> strides(dims.size(), 1);  // row-major strides of the logical array
  for (std::size_t d = dims.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * dims[d + 1];
  std::vector<int64_t> index(dims.size(), 0);
  int64_t image_base = 0;
  for (int64_t d : outer) image_base += tables[d][0];
  int64_t logical_base = 0;
  while (true) {
    visit(image_base, logical_base);
    std::size_t k = outer.size();
    while (true) {
      if (k == 0) return;
      const int64_t d = outer[--k];
      image_base -= tables[d][index[d]];
      if (++index[d] < dims[d]) {
        image_base += tables[d][index[d]];
        logical_base += strides[d];
        break;
      }
      logical_base -= (dims[d] - 1) * strides[d];
      index[d] = 0;
      image_base += tables[d][0];
    }
  }
}

// Copies one element between the logical array and the image.
template <int64_t kBytes, bool kToImage>
inline void CopyElement(const uint8_t* from, uint8_t* to, int64_t logical, int64_t image) {
  if constexpr (kToImage) {
    std::memcpy(to + image * kBytes, from + logical * kBytes, kBytes);
  } else {
    std::memcpy(to + logical * kBytes, from + image * kBytes, kBytes);
  }
}

// kBytes and kToImage are compile-time so that each element copy is one load and one store.
// When the most minor physical dim is the logical array's last dim, each line is contiguous in the
// array and near-contiguous in the image. Otherwise (a transposing layout such as {0,1}) the two
// dims are copied in square blocks so that both sides stay in cache.
template <int64_t kBytes, bool kToImage>
void CopySeparable(const LayoutMap& map, const uint8_t* from, uint8_t* to) {
  const std::vector<int64_t>& dims = map.shape().dims;
  const auto tables = DimOffsetTables(map);
  const int64_t last = static_cast<int64_t>(dims.size()) - 1;
  const int64_t inner = map.physical_order().back();
  std::vector<int64_t> outer;
  for (int64_t d : map.physical_order()) {
    if (d != inner && d != last) outer.push_back(d);
  }
  const int64_t* last_offsets = tables[last].data();
  if (inner == last) {
    ForEachOuterIndex(tables, dims, outer, [&](int64_t image_base, int64_t logical_base) {
      for (int64_t j = 0; j < dims[last]; ++j) {
        CopyElement<kBytes, kToImage>(from, to, logical_base + j, image_base + last_offsets[j]);
      }
    });
    return;
  }
  constexpr int64_t kBlock = 64;
  const int64_t* inner_offsets = tables[inner].data();
  int64_t inner_stride = 1;
  for (int64_t d = inner + 1; d <= last; ++d) inner_stride *= dims[d];
  ForEachOuterIndex(tables, dims, outer, [&](int64_t image_base, int64_t logical_base) {
    for (int64_t i0 = 0; i0 < dims[inner]; i0 += kBlock) {
      const int64_t i1 = std::min(i0 + kBlock, dims[inner]);
      for (int64_t j0 = 0; j0 < dims[last]; j0 += kBlock) {
        const int64_t j1 = std::min(j0 + kBlock, dims[last]);
        for (int64_t j = j0; j < j1; ++j) {
          for (int64_t i = i0; i < i1; ++i) {
            CopyElement<kBytes, kToImage>(from, to, logical_base + i * inner_stride + j,
                                image_base + inner_offsets[i] + last_offsets[j]);
          }
        }
      }
    }
  });
}

// Any layout, one element at a time through LayoutMap::LinearIndex (layouts with `*` dims).
void CopyGeneric(const LayoutMap& map, int64_t element_bytes, bool to_image,
                 std::span<const uint8_t> from, std::span<uint8_t> to) {
  const std::vector<int64_t>& dims = map.shape().dims;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t k = 0; k < map.element_count(); ++k) {
    const int64_t linear = map.LinearIndex(index);
    const int64_t src = (to_image ? k : linear) * element_bytes;
    const int64_t dst = (to_image ? linear : k) * element_bytes;
    std::memcpy(to.data() + dst, from.data() + src, element_bytes);
    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

template <bool kToImage>
void CopySeparableOfWidth(const LayoutMap& map, int64_t element_bytes, const uint8_t* from,
                          uint8_t* to) {
  switch (element_bytes) {
    case 1: return CopySeparable<1, kToImage>(map, from, to);
    case 2: return CopySeparable<2, kToImage>(map, from, to);
    case 4: return CopySeparable<4, kToImage>(map, from, to);
    case 8: return CopySeparable<8, kToImage>(map, from, to);
    default: throw Error("no fast copy for " + std::to_string(element_bytes) + "-byte elements");
  }
}

void Copy(const LayoutMap& map, int64_t element_bytes, bool to_image, std::span<const uint8_t> from,
          std::span<uint8_t> to) {
  if (map.element_count() == 0) return;
  if (map.shape().rank() == 0 || !map.is_separable()) {
    CopyGeneric(map, element_bytes, to_image, from, to);
    return;
  }
  if (to_image) {
    CopySeparableOfWidth<true>(map, element_bytes, from.data(), to.data());
  } else {
    CopySeparableOfWidth<false>(map, element_bytes, from.data(), to.data());
  }
}

}  // namespace

void MaterializeInto(const LayoutMap& map, std::span<const uint8_t> logical, std::span<uint8_t> image) {
  const int64_t element_bytes = CheckedElementBytes(map);
  CheckSize("the logical array", logical.size(), map.element_count() * element_bytes, map);
  CheckSize("the device image", image.size(), map.byte_size(), map);
  FillPadding(map, element_bytes, image);
  Copy(map, element_bytes, /*to_image=*/true, logical, image);
}

void DematerializeInto(const LayoutMap& map, std::span<const uint8_t> image, std::span<uint8_t> logical) {
  const int64_t element_bytes = CheckedElementBytes(map);
  CheckSize("the device image", image.size(), map.byte_size(), map);
  CheckSize("the logical array", logical.size(), map.element_count() * element_bytes, map);
  Copy(map, element_bytes, /*to_image=*/false, image, logical);
}

std::vector<uint8_t> Materialize(const Shape& shape, std::span<const uint8_t> logical) {
  const LayoutMap map(shape);
  std::vector<uint8_t> image(map.byte_size());
  MaterializeInto(map, logical, image);
  return image;
}

std::vector<uint8_t> Dematerialize(const Shape& shape, std::span<const uint8_t> image) {
  const LayoutMap map(shape);
  CheckedElementBytes(map);
  std::vector<uint8_t> logical(map.element_count() * ElementByteWidth(shape.element_type));
  DematerializeInto(map, image, logical);
  return logical;
}

}  // namespace tpusim::isa
