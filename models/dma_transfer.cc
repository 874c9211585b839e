#include "models/dma_transfer.h"

#include <string>

#include "isa/error.h"
#include "isa/layout_index.h"

namespace tpusim::models {
namespace {

std::string List(const std::vector<int64_t>& values) {
  std::string text = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(values[i]);
  }
  return text + "}";
}

// Checks one side; returns its element bits.
int64_t CheckEndpoint(const char* side, const DmaEndpoint& endpoint,
                      const std::vector<int64_t>& sizes) {
  const std::string where = std::string("DMA ") + side;
  if (endpoint.memory == nullptr) throw Error(where + ": no memory given");
  const isa::Shape& shape = endpoint.shape;
  if (shape.is_tuple) {
    throw Error(where + ": " + isa::ToString(shape) + " is a tuple, not an array");
  }
  const isa::LayoutMap map(shape);  // validates the layout
  const auto rank = static_cast<std::size_t>(shape.rank());
  if (endpoint.start.size() != rank || sizes.size() != rank) {
    throw Error(where + ": region start " + List(endpoint.start) + " and sizes " + List(sizes) +
                " must have one entry per dim of " + isa::ToString(shape));
  }
  for (std::size_t d = 0; d < rank; ++d) {
    if (endpoint.start[d] < 0 || sizes[d] < 0 || endpoint.start[d] > shape.dims[d] ||
        sizes[d] > shape.dims[d] - endpoint.start[d]) {
      throw Error(where + ": region start " + List(endpoint.start) + " sizes " + List(sizes) +
                  " is outside " + isa::ToString(shape) + " in dim " + std::to_string(d));
    }
  }
  if (map.element_bits() % 8 != 0) {
    throw Error(where + ": " + isa::ToString(shape) + " packs " +
                std::to_string(map.element_bits()) +
                "-bit elements; DMA moves whole-byte elements only");
  }
  // (The message is built only for an image that does not fit: transfers are checked often.)
  const uint64_t capacity = endpoint.memory->capacity_bytes();
  const auto bytes = static_cast<uint64_t>(map.byte_size());
  if (endpoint.base_address > capacity || bytes > capacity - endpoint.base_address) {
    endpoint.memory->CheckRange(where + " image (" + isa::ToString(shape) + ")",
                                endpoint.base_address, bytes);
  }
  return map.element_bits();
}

}  // namespace

DmaTransfer DmaTransfer::WholeArray(Memory& source, uint64_t source_base,
                                    const isa::Shape& source_shape, Memory& destination,
                                    uint64_t destination_base,
                                    const isa::Shape& destination_shape) {
  if (source_shape.dims != destination_shape.dims) {
    throw Error("DMA of a whole array: " + isa::ToString(source_shape) + " and " +
                isa::ToString(destination_shape) + " have different dims");
  }
  DmaTransfer transfer;
  transfer.source = {&source, source_base, source_shape,
                     std::vector<int64_t>(source_shape.dims.size(), 0)};
  transfer.destination = {&destination, destination_base, destination_shape,
                          std::vector<int64_t>(destination_shape.dims.size(), 0)};
  transfer.sizes = source_shape.dims;
  return transfer;
}

void ValidateTransfer(const DmaTransfer& transfer) {
  const int64_t source_bits = CheckEndpoint("source", transfer.source, transfer.sizes);
  const int64_t destination_bits =
      CheckEndpoint("destination", transfer.destination, transfer.sizes);
  if (transfer.source.shape.element_type != transfer.destination.shape.element_type ||
      source_bits != destination_bits) {
    throw Error("DMA from " + isa::ToString(transfer.source.shape) + " to " +
                isa::ToString(transfer.destination.shape) +
                ": element types differ (a DMA copies bytes; it does not convert)");
  }
  if (transfer.semaphore_increment < 0) {
    throw Error("DMA semaphore_increment must be >= 0, got " +
                std::to_string(transfer.semaphore_increment));
  }
}

}  // namespace tpusim::models
