// libFuzzer target for the .npy reader (isa/npy.h). The first byte picks the element type the
// caller expects (none, or one of ElementType's values); the rest is the file. Any input must
// either parse or throw tpusim::Error (never crash, hang, read out of bounds or trip a
// sanitizer), and what parses must hold product(dims) elements of its type and survive a
// round trip: SerializeNpy of it parses back to the same array. docs/testing.md says how to
// build and run it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>

#include "isa/element_type.h"
#include "isa/error.h"
#include "isa/npy.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "npy fuzzer: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tpusim::isa::ElementType;
  if (size == 0) return 0;
  std::optional<ElementType> expected;
  if (data[0] <= static_cast<uint8_t>(ElementType::kOpaque)) expected = static_cast<ElementType>(data[0]);
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  tpusim::isa::NpyArray array;
  try {
    array = tpusim::isa::ParseNpy(bytes, expected, "fuzz.npy");
  } catch (const tpusim::Error&) {
    return 0;
  }
  if (expected && array.type != *expected) Fail("parsed as another type than the one expected");
  uint64_t elements = 1;
  for (const int64_t dim : array.dims) {
    if (dim < 0) Fail("a negative dim");
    elements *= static_cast<uint64_t>(dim);
  }
  if (array.data.size() != elements * static_cast<uint64_t>(tpusim::isa::ElementByteWidth(array.type))) {
    Fail("data size is not product(dims) x the type's width");
  }
  std::vector<uint8_t> written;
  try {
    written = tpusim::isa::SerializeNpy(array.type, array.dims, array.data);
  } catch (const tpusim::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    Fail("a parsed array does not serialize");
  }
  const tpusim::isa::NpyArray again = tpusim::isa::ParseNpy(written, array.type, "written.npy");
  if (again.type != array.type || again.dims != array.dims || again.data != array.data) Fail("the round trip differs");
  return 0;
}
