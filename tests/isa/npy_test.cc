// Tests for the .npy reader and writer. Expected bytes are written out from the format spec
// (numpy.lib.format) so that no Python is needed to run them.
#include "isa/npy.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "isa/error.h"

namespace {

using tpusim::Error;
using tpusim::isa::ElementType;
using tpusim::isa::NpyArray;
using tpusim::isa::ParseNpy;
using tpusim::isa::ReadNpy;
using tpusim::isa::SerializeNpy;
using tpusim::isa::WriteNpy;
using Catch::Contains;
using Catch::StartsWith;

std::vector<uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

// A .npy file whose header is `header` exactly as given (no padding added), then `data`.
std::vector<uint8_t> HandBuilt(int major, std::string_view header,
                               const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> file = Bytes(std::string_view("\x93NUMPY", 6));
  file.push_back(static_cast<uint8_t>(major));
  file.push_back(0);
  int length_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < length_bytes; ++i) file.push_back((header.size() >> (8 * i)) & 0xFF);
  file.insert(file.end(), header.begin(), header.end());
  file.insert(file.end(), data.begin(), data.end());
  return file;
}

// A v1.0 file with the given descr and shape text in a NumPy-style dict.
std::vector<uint8_t> WithDescr(std::string_view descr, std::string_view shape,
                               const std::vector<uint8_t>& data) {
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': " + std::string(shape) + ", }\n";
  return HandBuilt(1, header, data);
}

NpyArray Parse(const std::vector<uint8_t>& file,
               std::optional<ElementType> expected = std::nullopt) {
  return ParseNpy(file, expected, "in.npy");
}

std::vector<ElementType> SupportedTypes() {
  std::vector<ElementType> types;
  for (int i = 0; i <= static_cast<int>(ElementType::kOpaque); ++i) {
    auto type = static_cast<ElementType>(i);
    if (tpusim::isa::IsSupported(type)) types.push_back(type);
  }
  return types;
}

std::filesystem::path TempPath(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("tpusim_npy_test_" + std::to_string(getpid()) + "_" + name);
}

void CheckSameBytes(const std::vector<uint8_t>& actual, const std::string& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("byte " << i);
    CHECK(static_cast<int>(actual[i]) == static_cast<int>(static_cast<uint8_t>(expected[i])));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Writing: the exact bytes NumPy writes.

TEST_CASE("SerializeNpy writes an f32 [2,3] array byte for byte as NumPy does", "[npy]") {
  const int64_t dims[] = {2, 3};
  // 1.0f .. 6.0f, little-endian.
  const std::string data("\x00\x00\x80\x3f" "\x00\x00\x00\x40" "\x00\x00\x40\x40"
                         "\x00\x00\x80\x40" "\x00\x00\xa0\x40" "\x00\x00\xc0\x40", 24);
  // The dict is 59 bytes; NumPy adds 21 - len("2") = 20 spaces of room for the first dim to grow;
  // magic+version+length (10) + 59 + 20 + '\n' = 90, so 38 more spaces make the data start at 128.
  // Header length: 59 + 58 + 1 = 118 = 0x76.
  const std::string expected = std::string("\x93NUMPY\x01\x00", 8) + std::string("\x76\x00", 2) +
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
                               std::string(58, ' ') + "\n" + data;
  std::vector<uint8_t> bytes(data.begin(), data.end());
  CheckSameBytes(SerializeNpy(ElementType::kF32, dims, bytes), expected);
}

TEST_CASE("SerializeNpy writes a scalar byte for byte as NumPy does", "[npy]") {
  const std::string data("\x00\x00\xc0\x3f", 4);  // 1.5f
  // The dict is 55 bytes and a scalar gets no growth room: 10 + 55 + '\n' = 66, so 62 spaces
  // make the data start at 128. Header length: 55 + 62 + 1 = 118 = 0x76.
  const std::string expected = std::string("\x93NUMPY\x01\x00", 8) + std::string("\x76\x00", 2) +
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (), }" +
                               std::string(62, ' ') + "\n" + data;
  std::vector<uint8_t> bytes(data.begin(), data.end());
  CheckSameBytes(SerializeNpy(ElementType::kF32, {}, bytes), expected);
}

TEST_CASE("SerializeNpy writes the descr NumPy would for every supported type", "[npy]") {
  const std::pair<ElementType, std::string> cases[] = {
      {ElementType::kPred, "|b1"},     {ElementType::kS8, "|i1"},     {ElementType::kS16, "<i2"},
      {ElementType::kS32, "<i4"},      {ElementType::kS64, "<i8"},    {ElementType::kU8, "|u1"},
      {ElementType::kU16, "<u2"},      {ElementType::kU32, "<u4"},    {ElementType::kU64, "<u8"},
      {ElementType::kF16, "<f2"},      {ElementType::kBF16, "<V2"},   {ElementType::kF32, "<f4"},
      {ElementType::kF64, "<f8"},      {ElementType::kF8E4M3FN, "|V1"},
      {ElementType::kF8E5M2, "|V1"},
  };
  REQUIRE(std::size(cases) == SupportedTypes().size());
  const int64_t dims[] = {5};
  for (const auto& [type, descr] : cases) {
    INFO(tpusim::isa::ElementTypeName(type));
    std::vector<uint8_t> data(5 * tpusim::isa::ElementByteWidth(type), 0);
    std::vector<uint8_t> file = SerializeNpy(type, dims, data);
    std::string header(file.begin() + 10, file.end() - data.size());
    CHECK_THAT(header, StartsWith("{'descr': '" + descr +
                                  "', 'fortran_order': False, 'shape': (5,), }"));
  }
}

TEST_CASE("SerializeNpy aligns the data to 64 bytes and switches to 2.0 for huge headers",
          "[npy]") {
  for (std::size_t rank : {0, 1, 2, 7, 20, 40}) {
    std::vector<int64_t> dims(rank, 1);
    if (rank > 0) dims[0] = 1234567;
    std::vector<uint8_t> data(rank > 0 ? 1234567 : 1, 7);
    std::vector<uint8_t> file = SerializeNpy(ElementType::kU8, dims, data);
    std::size_t data_start = file.size() - data.size();
    INFO("rank " << rank);
    CHECK(file[6] == 1);
    CHECK(data_start % 64 == 0);
    CHECK(file[data_start - 1] == '\n');
    CHECK(data_start == 10 + file[8] + 256u * file[9]);
  }
  // 22000 dims of 1: "1, " each, over 65535 bytes of header, which only 2.0's length can hold.
  std::vector<int64_t> dims(22000, 1);
  std::vector<uint8_t> data = {42};
  std::vector<uint8_t> file = SerializeNpy(ElementType::kU8, dims, data);
  CHECK(file[6] == 2);
  CHECK(file[7] == 0);
  CHECK((file.size() - 1) % 64 == 0);
  std::size_t header_size = file[8] | file[9] << 8 | file[10] << 16 | file[11] << 24;
  CHECK(12 + header_size == file.size() - 1);
  NpyArray array = Parse(file);
  CHECK(array.dims == dims);
  CHECK(array.data == data);
}

TEST_CASE("SerializeNpy rejects bad input", "[npy]") {
  const int64_t dims[] = {2, 3};
  std::vector<uint8_t> data(24);
  CHECK_THROWS_WITH(SerializeNpy(ElementType::kC64, dims, std::vector<uint8_t>(48)),
                    Contains("c64 is not supported"));
  CHECK_THROWS_WITH(SerializeNpy(ElementType::kF32, dims, std::vector<uint8_t>(20)),
                    Contains("shape (2, 3) of f32 needs 24 bytes of data but 20 were given"));
  const int64_t negative[] = {2, -3};
  CHECK_THROWS_WITH(SerializeNpy(ElementType::kF32, negative, data),
                    Contains("negative dimension -3"));
  CHECK_THROWS_WITH(WriteNpy("/nonexistent-dir/x.npy", ElementType::kF32, dims, data),
                    StartsWith("/nonexistent-dir/x.npy: cannot open for writing"));
}

// ---------------------------------------------------------------------------------------------
// Reading: versions and header syntax.

TEST_CASE("ParseNpy reads hand-built 1.0, 2.0 and 3.0 files", "[npy]") {
  const std::vector<uint8_t> ints = {1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff};  // int32 1, -2
  SECTION("1.0, double quotes, keys out of order, no padding") {
    NpyArray array = Parse(
        HandBuilt(1, R"({"shape": (2,), "fortran_order": False, "descr": "<i4"})", ints));
    CHECK(array.type == ElementType::kS32);
    CHECK(array.dims == std::vector<int64_t>{2});
    CHECK(array.data == ints);
  }
  SECTION("2.0, 32-bit header length") {
    NpyArray array =
        Parse(HandBuilt(2, "{'descr':'<u4','fortran_order':False,'shape':(1, 2),}\n", ints));
    CHECK(array.type == ElementType::kU32);
    CHECK(array.dims == std::vector<int64_t>{1, 2});
    CHECK(array.data == ints);
  }
  SECTION("3.0, utf-8 header, 16-byte aligned as old NumPy wrote") {
    std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
    header.append(16 - (12 + header.size() + 1) % 16, ' ');
    header += '\n';
    std::vector<uint8_t> file = HandBuilt(3, header, ints);
    CHECK((file.size() - ints.size()) % 16 == 0);
    NpyArray array = Parse(file);
    CHECK(array.type == ElementType::kS32);
    CHECK(array.dims == std::vector<int64_t>{2});
    CHECK(array.data == ints);
  }
}

TEST_CASE("ParseNpy parses the header as a Python dict literal", "[npy]") {
  const std::vector<uint8_t> data(12, 0x11);
  const char* headers[] = {
      "{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }",
      R"({"shape":(2,3),"descr":"<i2","fortran_order":False})",
      "{ 'fortran_order' : False ,\n\t'shape' : ( 2 , 3 , ) , 'descr' : '<i2' , }  \r\n",
      "{'descr': '=i2', 'fortran_order': False, 'shape': (2, 3)}",
      "{'descr': '<i2', 'fortran_order': False, 'shape': ((2), +3), }",
      "{'descr': '<i\\2', 'fortran_order': False, 'shape': (2, 3), }",  // '\2' escapes to '2'
  };
  for (const char* header : headers) {
    INFO(header);
    NpyArray array = Parse(HandBuilt(1, header, data));
    CHECK(array.type == ElementType::kS16);
    CHECK(array.dims == std::vector<int64_t>{2, 3});
    CHECK(array.data == data);
  }
}

TEST_CASE("ParseNpy reads shapes: scalar, 1-d, empty", "[npy]") {
  CHECK(Parse(WithDescr("<f4", "()", {0, 0, 0x80, 0x3f})).dims.empty());
  CHECK(Parse(WithDescr("|u1", "(5,)", {1, 2, 3, 4, 5})).dims == std::vector<int64_t>{5});
  CHECK(Parse(WithDescr("<f8", "(0,)", {})).dims == std::vector<int64_t>{0});
  NpyArray empty = Parse(WithDescr("<i4", "(2, 0, 3)", {}));
  CHECK(empty.dims == std::vector<int64_t>{2, 0, 3});
  CHECK(empty.data.empty());
  // One dim in Fortran order is the same bytes as in C order.
  NpyArray fortran = Parse(HandBuilt(
      1, "{'descr': '|u1', 'fortran_order': True, 'shape': (3,), }", {7, 8, 9}));
  CHECK(fortran.data == std::vector<uint8_t>{7, 8, 9});
}

// ---------------------------------------------------------------------------------------------
// Reading: raw bit patterns and byte order.

TEST_CASE("ParseNpy reads bf16 from '<V2', and from '<u2' when bf16 is expected", "[npy]") {
  const std::vector<uint8_t> data = {0x80, 0x3f, 0x00, 0xc0};  // bf16 1.0, -2.0
  NpyArray from_void = Parse(WithDescr("<V2", "(2,)", data));
  CHECK(from_void.type == ElementType::kBF16);
  CHECK(from_void.data == data);
  CHECK(Parse(WithDescr("<V2", "(2,)", data), ElementType::kBF16).type == ElementType::kBF16);
  CHECK(Parse(WithDescr("|V2", "(2,)", data)).type == ElementType::kBF16);
  NpyArray from_u16 = Parse(WithDescr("<u2", "(2,)", data), ElementType::kBF16);
  CHECK(from_u16.type == ElementType::kBF16);
  CHECK(from_u16.data == data);
  CHECK(Parse(WithDescr("<u2", "(2,)", data)).type == ElementType::kU16);
  NpyArray big = Parse(WithDescr(">u2", "(2,)", {0x3f, 0x80, 0xc0, 0x00}), ElementType::kBF16);
  CHECK(big.data == data);
}

TEST_CASE("ParseNpy reads f8 from '|V1' or '|u1' when the f8 type is expected", "[npy]") {
  const std::vector<uint8_t> data = {0x38, 0xc0, 0x7e};
  for (ElementType type : {ElementType::kF8E4M3FN, ElementType::kF8E5M2}) {
    INFO(tpusim::isa::ElementTypeName(type));
    NpyArray from_void = Parse(WithDescr("|V1", "(3,)", data), type);
    CHECK(from_void.type == type);
    CHECK(from_void.data == data);
    CHECK(Parse(WithDescr("|u1", "(3,)", data), type).type == type);
  }
  CHECK(Parse(WithDescr("|u1", "(3,)", data)).type == ElementType::kU8);
  CHECK_THROWS_WITH(Parse(WithDescr("|V1", "(3,)", data)),
                    StartsWith("in.npy: ") && Contains("'|V1'") &&
                        Contains("(f8e4m3fn or f8e5m2) must be given"));
  CHECK_THROWS_WITH(Parse(WithDescr("|V1", "(3,)", data), ElementType::kS8),
                    StartsWith("in.npy: element type mismatch") && Contains("s8 is expected"));
}

TEST_CASE("ParseNpy byte-swaps big-endian files", "[npy]") {
  // f32 1.0 and -2.0, big-endian in the file.
  NpyArray f32 = Parse(WithDescr(">f4", "(2,)", {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0}));
  CHECK(f32.type == ElementType::kF32);
  CHECK(f32.data == std::vector<uint8_t>{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0});
  NpyArray s64 = Parse(WithDescr(">i8", "()", {1, 2, 3, 4, 5, 6, 7, 8}));
  CHECK(s64.type == ElementType::kS64);
  CHECK(s64.data == std::vector<uint8_t>{8, 7, 6, 5, 4, 3, 2, 1});
  NpyArray f16 = Parse(WithDescr(">f2", "(1,)", {0x3c, 0x00}));
  CHECK(f16.type == ElementType::kF16);
  CHECK(f16.data == std::vector<uint8_t>{0x00, 0x3c});
  NpyArray s8 = Parse(WithDescr(">i1", "(2,)", {1, 0xff}));  // one byte: nothing to swap
  CHECK(s8.type == ElementType::kS8);
  CHECK(s8.data == std::vector<uint8_t>{1, 0xff});
  NpyArray pred = Parse(WithDescr("|b1", "(2,)", {1, 0}));
  CHECK(pred.type == ElementType::kPred);
  CHECK(pred.data == std::vector<uint8_t>{1, 0});
}

// ---------------------------------------------------------------------------------------------
// Reading: errors, each with its message.

TEST_CASE("ParseNpy rejects bad preambles", "[npy]") {
  std::vector<uint8_t> good = WithDescr("|u1", "(1,)", {5});
  std::vector<uint8_t> bad_magic = good;
  bad_magic[1] = 'n';
  CHECK_THROWS_WITH(Parse(bad_magic), StartsWith("in.npy: not a .npy file (bad magic"));
  CHECK_THROWS_WITH(Parse(Bytes("PK\x03\x04")), Contains("bad magic"));
  std::vector<uint8_t> v4 = good;
  v4[6] = 4;
  CHECK_THROWS_WITH(Parse(v4), StartsWith("in.npy: unsupported .npy version 4.0 (supported: "
                                          "1.0, 2.0, 3.0)"));
  std::vector<uint8_t> v11 = good;
  v11[7] = 1;
  CHECK_THROWS_WITH(Parse(v11), Contains("unsupported .npy version 1.1"));
  CHECK_THROWS_WITH(Parse({}), StartsWith("in.npy: truncated header: the file is only 0 bytes"));
  CHECK_THROWS_WITH(Parse(std::vector<uint8_t>(good.begin(), good.begin() + 9)),
                    StartsWith("in.npy: truncated header: the file ends inside the header length"));
  CHECK_THROWS_WITH(Parse(std::vector<uint8_t>(good.begin(), good.begin() + 30)),
                    StartsWith("in.npy: truncated header: it should be"));
}

TEST_CASE("ParseNpy rejects data of the wrong size", "[npy]") {
  CHECK_THROWS_WITH(Parse(WithDescr("<f4", "(2, 3)", std::vector<uint8_t>(20))),
                    StartsWith("in.npy: truncated data: shape (2, 3) of f32 needs 24 bytes but "
                               "the file has 20"));
  CHECK_THROWS_WITH(Parse(WithDescr("<f4", "(2, 3)", std::vector<uint8_t>(25))),
                    StartsWith("in.npy: trailing bytes after the data: shape (2, 3) of f32 needs "
                               "24 bytes but the file has 25"));
}

TEST_CASE("ParseNpy rejects what it cannot represent", "[npy]") {
  CHECK_THROWS_WITH(
      Parse(HandBuilt(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                      std::vector<uint8_t>(24))),
      StartsWith("in.npy: Fortran order is not supported; save with np.ascontiguousarray"));
  CHECK_THROWS_WITH(Parse(WithDescr("|O", "(1,)", std::vector<uint8_t>(8))),
                    StartsWith("in.npy: object arrays (descr '|O') are not supported"));
  CHECK_THROWS_WITH(
      Parse(HandBuilt(1, "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, "
                         "'shape': (1,), }",
                      std::vector<uint8_t>(8))),
      StartsWith("in.npy: structured dtypes (a list descr) are not supported"));
  for (const char* descr : {"<c8", "|S5", "<U3", "<M8[ns]", "<f16", "", "<", "f4x"}) {
    INFO(descr);
    CHECK_THROWS_WITH(Parse(WithDescr(descr, "(1,)", std::vector<uint8_t>(4))),
                      StartsWith("in.npy: unsupported dtype descr '" + std::string(descr) + "'"));
  }
  CHECK_THROWS_WITH(Parse(WithDescr("<f8", "(1,)", std::vector<uint8_t>(8)), ElementType::kF32),
                    StartsWith("in.npy: element type mismatch: the file holds f64 (descr '<f8') "
                               "but f32 is expected"));
  CHECK_THROWS_WITH(Parse(WithDescr("<V2", "(1,)", std::vector<uint8_t>(2)), ElementType::kF16),
                    Contains("the file holds bf16 (descr '<V2') but f16 is expected"));
  CHECK_THROWS_WITH(Parse(WithDescr("<i2", "(1,)", std::vector<uint8_t>(2)), ElementType::kBF16),
                    Contains("the file holds s16 (descr '<i2') but bf16 is expected"));
  CHECK_THROWS_WITH(Parse(WithDescr("<f4", "(1,)", std::vector<uint8_t>(4)), ElementType::kC64),
                    StartsWith("in.npy: element type c64 is not supported by tpusim"));
}

TEST_CASE("ParseNpy rejects negative and overflowing dims", "[npy]") {
  CHECK_THROWS_WITH(Parse(WithDescr("<f4", "(-1, 3)", {})),
                    StartsWith("in.npy: negative dimension -1 in shape"));
  CHECK_THROWS_WITH(Parse(WithDescr("<f4", "(99999999999999999999,)", {})),
                    StartsWith("in.npy: malformed header") && Contains("does not fit in 64 bits"));
  CHECK_THROWS_WITH(Parse(WithDescr("<f4", "(4294967296, 4294967296)", {})),
                    StartsWith("in.npy: shape (4294967296, 4294967296) has too many elements"));
  CHECK_THROWS_WITH(Parse(WithDescr("<f8", "(2305843009213693952,)", {})),
                    StartsWith("in.npy: shape (2305843009213693952,) has too many bytes"));
}

TEST_CASE("ParseNpy rejects malformed headers", "[npy]") {
  const std::pair<const char*, const char*> cases[] = {
      {"{'descr': '<f4', 'shape': (1,), }", "header has no 'fortran_order' key"},
      {"{'fortran_order': False, 'shape': (1,), }", "header has no 'descr' key"},
      {"{'descr': '<f4', 'fortran_order': False}", "header has no 'shape' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
       "unexpected key 'x' in header"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
       "duplicate key 'descr'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", "malformed header at byte"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
       "expected ',' or '}' between dict entries, found the end"},
      {"{'descr': '<f4", "unterminated string"},
      {"['descr', '<f4']", "header is not a dict"},
      {"", "expected a value, found the end of the header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", "'shape' is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ('1',), }", "holds a non-integer"},
      {"{'descr': 4, 'fortran_order': False, 'shape': (1,), }", "'descr' is not a string"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", "'fortran_order' is not True"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (1,), }", "unknown name 'false'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", "unexpected 'x' after"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,,), }", "expected a value"},
      {"{'descr': '<f4' 'fortran_order': False}",
       "expected ',' or '}' between dict entries, found '''"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-), }", "expected digits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\x01", "byte 0x01"},
  };
  for (const auto& [header, message] : cases) {
    INFO(header);
    CHECK_THROWS_WITH(Parse(HandBuilt(1, header, {0, 0, 0, 0})),
                      StartsWith("in.npy: ") && Contains(message));
  }
  std::string deep = "{'descr': '<f4', 'fortran_order': False, 'shape': " +
                     std::string(10000, '(') + "1" + std::string(10000, ')') + "}";
  CHECK_THROWS_WITH(Parse(HandBuilt(2, deep, {0, 0, 0, 0})), Contains("nested more than 32 deep"));
}

TEST_CASE("ReadNpy names the path in its errors", "[npy]") {
  std::string missing = TempPath("missing.npy").string();
  CHECK_THROWS_WITH(ReadNpy(missing), StartsWith(missing + ": cannot open for reading"));
  std::string bad = TempPath("bad.npy").string();
  std::vector<uint8_t> file = WithDescr("<f4", "(2,)", std::vector<uint8_t>(7));
  {
    std::ofstream out(bad, std::ios::binary);
    out.write(reinterpret_cast<const char*>(file.data()), file.size());
  }
  CHECK_THROWS_WITH(ReadNpy(bad), StartsWith(bad + ": truncated data"));
  std::filesystem::remove(bad);
}

// ---------------------------------------------------------------------------------------------
// Round trips and robustness.

TEST_CASE("Every supported type round-trips through SerializeNpy/ParseNpy and files", "[npy]") {
  std::mt19937 random(1234);
  const std::vector<std::vector<int64_t>> shapes = {{}, {7}, {2, 3}, {2, 0, 4}, {1, 2, 3, 4}};
  for (ElementType type : SupportedTypes()) {
    for (const std::vector<int64_t>& dims : shapes) {
      INFO(tpusim::isa::ElementTypeName(type) << " rank " << dims.size());
      int64_t count = 1;
      for (int64_t dim : dims) count *= dim;
      std::vector<uint8_t> data(count * tpusim::isa::ElementByteWidth(type));
      for (uint8_t& byte : data) byte = random() & 0xFF;
      std::vector<uint8_t> file = SerializeNpy(type, dims, data);
      CHECK((file.size() - data.size()) % 64 == 0);
      NpyArray array = Parse(file, type);
      CHECK(array.type == type);
      CHECK(array.dims == dims);
      CHECK(array.data == data);
      std::string path = TempPath("roundtrip.npy").string();
      WriteNpy(path, type, dims, data);
      NpyArray from_file = ReadNpy(path, type);
      std::filesystem::remove(path);
      CHECK(from_file.type == type);
      CHECK(from_file.dims == dims);
      CHECK(from_file.data == data);
    }
  }
}

TEST_CASE("ParseNpy never crashes on truncated or corrupted files", "[npy]") {
  const int64_t dims[] = {2, 3};
  const std::vector<std::pair<std::vector<uint8_t>, std::optional<ElementType>>> files = {
      {SerializeNpy(ElementType::kF32, dims, std::vector<uint8_t>(24, 1)), std::nullopt},
      {SerializeNpy(ElementType::kF32, {}, std::vector<uint8_t>(4, 2)), std::nullopt},
      {SerializeNpy(ElementType::kBF16, dims, std::vector<uint8_t>(12, 3)), ElementType::kBF16},
      {HandBuilt(3, R"({"shape": (2, 1,), "fortran_order": False, "descr": ">i2"})", {1, 2, 3, 4}),
       std::nullopt},
  };
  std::mt19937 random(42);
  for (const auto& [file, expected] : files) {
    REQUIRE_NOTHROW(ParseNpy(file, expected, "fuzz.npy"));
    // Data must be exactly the right size, so every proper prefix is an error.
    for (std::size_t size = 0; size < file.size(); ++size) {
      std::span<const uint8_t> prefix(file.data(), size);
      CHECK_THROWS_AS(ParseNpy(prefix, expected, "fuzz.npy"), Error);
    }
    int parsed = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<uint8_t> corrupt = file;
      int flips = 1 + random() % 4;
      for (int i = 0; i < flips; ++i) {
        std::size_t at = random() % corrupt.size();
        if (random() % 2) {
          corrupt[at] ^= static_cast<uint8_t>(1u << (random() % 8));
        } else {
          corrupt[at] = static_cast<uint8_t>(random());
        }
      }
      // Anything but a tpusim::Error escaping (or a crash) fails the test.
      try {
        ParseNpy(corrupt, expected, "fuzz.npy");
        ++parsed;
      } catch (const Error& error) {
        CHECK_THAT(error.what(), StartsWith("fuzz.npy: "));
      }
    }
    CHECK(parsed > 0);  // flips in the data and the padding still parse
  }
}
