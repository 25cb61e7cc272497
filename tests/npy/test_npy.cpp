// npy::parse / read / encode and npy::input_file: round trips of every dtype, files made by NumPy
// (tests/data/npy, see make_fixtures.py there), every way a file is rejected, and inputs read in
// pieces (memory-mapped files, FIFOs, devices).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../common/scratch_dir.hpp"
#include "npy/input_file.hpp"
#include "npy/npy.hpp"

namespace npy = multireduce::npy;
namespace fs = std::filesystem;
using namespace std::string_literals;

namespace {

const fs::path fixtures = MULTIREDUCE_NPY_FIXTURES;

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

std::vector<std::byte> file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return bytes_of(s);
}

/// A .npy file with exactly this header text (no padding added) and data.
std::vector<std::byte> npy_file(std::string_view header, std::string_view data = {}, int major = 1) {
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  const std::size_t n = header.size();
  s += static_cast<char>(n & 0xff);
  s += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    s += static_cast<char>((n >> 16) & 0xff);
    s += static_cast<char>((n >> 24) & 0xff);
  }
  s += header;
  s += data;
  return bytes_of(s);
}

std::string dict(std::string_view descr, std::string_view shape, std::string_view fortran = "False") {
  return "{'descr': '" + std::string(descr) + "', 'fortran_order': " + std::string(fortran) +
         ", 'shape': " + std::string(shape) + ", }\n";
}

/// The message parse() throws; fails the test if it accepts the bytes.
std::string parse_error(std::span<const std::byte> bytes) {
  try {
    npy::parse(bytes, "test.npy");
  } catch (const npy::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "parse accepted the input";
  return {};
}

#define EXPECT_REJECTED(bytes, fragment)                  \
  do {                                                    \
    const std::string message = parse_error(bytes);       \
    EXPECT_NE(message.find(fragment), std::string::npos)  \
        << "message: " << message;                        \
    EXPECT_EQ(message.rfind("test.npy: ", 0), 0u)         \
        << "message does not name the file: " << message; \
  } while (0)

std::vector<std::int64_t> shape_of(std::initializer_list<std::int64_t> s) { return s; }

/// Writes bytes to a file (plainly: the tool's atomic outputs are tested in tests/cli).
void save_bytes(const fs::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
void save(const fs::path& path, npy::dtype type, const std::vector<std::int64_t>& shape, const void* data) {
  save_bytes(path, npy::encode(type, shape, data));
}

/// A fresh directory per test, removed afterwards.
class npy_files : public mr_test::scratch_dir {};

// ---- names ----------------------------------------------------------------------------------------

TEST(npy_dtype, names_sizes_and_descrs) {
  using enum npy::dtype;
  const std::vector<std::tuple<npy::dtype, std::string_view, std::size_t, std::string_view>> all{
      {int8, "int8", 1, "|i1"},          {int16, "int16", 2, "<i2"},     {int32, "int32", 4, "<i4"},
      {int64, "int64", 8, "<i8"},        {uint8, "uint8", 1, "|u1"},     {uint16, "uint16", 2, "<u2"},
      {uint32, "uint32", 4, "<u4"},      {uint64, "uint64", 8, "<u8"},   {float16, "float16", 2, "<f2"},
      {float32, "float32", 4, "<f4"},    {float64, "float64", 8, "<f8"},
  };
  for (const auto& [type, name, size, descr] : all) {
    EXPECT_EQ(npy::name_of(type), name);
    EXPECT_EQ(npy::to_string(type), name);
    EXPECT_EQ(npy::size_of(type), size);
    EXPECT_EQ(npy::descr_of(type), descr);
    EXPECT_EQ(npy::parse_dtype_name(name), type);
  }
  EXPECT_EQ(npy::parse_dtype_name("float"), std::nullopt);
  EXPECT_EQ(npy::parse_dtype_name("f4"), std::nullopt);
  EXPECT_EQ(npy::parse_dtype_name(""), std::nullopt);
  static_assert(npy::dtype_of<std::int8_t>() == int8 && npy::dtype_of<char>() == int8);
  static_assert(npy::dtype_of<long long>() == int64 && npy::dtype_of<unsigned long>() == uint64);
  static_assert(npy::dtype_of<float>() == float32 && npy::dtype_of<const double>() == float64);
  static_assert(npy::dtype_of<npy::float16_bits>() == float16);
}

TEST(npy_dtype, float16_to_float) {
  EXPECT_EQ(npy::to_float({0x3c00}), 1.0f);
  EXPECT_EQ(npy::to_float({0xc100}), -2.5f);
  EXPECT_EQ(npy::to_float({0x7bff}), 65504.0f);
  EXPECT_EQ(npy::to_float({0x0001}), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(npy::to_float({0x03ff}), std::ldexp(1023.0f, -24));
  EXPECT_EQ(npy::to_float({0x0400}), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(npy::to_float({0x7c00}), INFINITY);
  EXPECT_EQ(npy::to_float({0xfc00}), -INFINITY);
  EXPECT_TRUE(std::isnan(npy::to_float({0x7e00})));
  EXPECT_TRUE(std::signbit(npy::to_float({0x8000})));
}

TEST(npy_array, count_and_typed_access) {
  npy::array a{npy::dtype::float32, {}, std::vector<std::byte>(4)};
  EXPECT_EQ(a.count(), 1);
  a.shape = {2, 0, 3};
  EXPECT_EQ(a.count(), 0);
  a.shape = {3, 4};
  EXPECT_EQ(a.count(), 12);
  a.shape = {-1};
  EXPECT_THROW((void)a.count(), npy::error);

  a.shape = {1};
  EXPECT_EQ(a.values<float>().size(), 1u);
  try {
    (void)a.values<std::int32_t>();
    ADD_FAILURE() << "no error";
  } catch (const npy::error& e) {
    EXPECT_NE(std::string(e.what()).find("float32, not int32"), std::string::npos) << e.what();
  }
  a.shape = {2};  // 4 bytes of data cannot be 2 floats
  EXPECT_THROW((void)a.values<float>(), npy::error);
}

// ---- round trips of every dtype and shape ----------------------------------------------------------

template <class T>
class npy_round_trip : public npy_files {};
using element_types = testing::Types<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t,
                                     std::uint16_t, std::uint32_t, std::uint64_t, npy::float16_bits, float, double>;
TYPED_TEST_SUITE(npy_round_trip, element_types);

template <class T>
T element(std::int64_t i) {  // distinct values that use every byte where the type has them
  if constexpr (std::is_same_v<T, npy::float16_bits>) {
    return {static_cast<std::uint16_t>(0x3c00 + 0x101 * i)};
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(-1.25 * static_cast<double>(i) + 0.1);
  } else {
    const auto pattern = static_cast<std::uint64_t>(0x0102030405060708ull * static_cast<std::uint64_t>(i + 1));
    return static_cast<T>(pattern);
  }
}

TYPED_TEST(npy_round_trip, every_shape_through_a_file) {
  using T = TypeParam;
  constexpr npy::dtype type = npy::dtype_of<T>();
  for (const auto& shape : {shape_of({}), shape_of({0}), shape_of({5}), shape_of({3, 4}), shape_of({2, 0, 3})}) {
    std::int64_t n = 1;
    for (const auto d : shape) n *= d;
    std::vector<T> values;
    for (std::int64_t i = 0; i < n; ++i) values.push_back(element<T>(i));
    const fs::path path = this->dir / "a.npy";
    save(path, type, shape, values.data());

    const auto size = fs::file_size(path);
    const std::size_t data_bytes = values.size() * sizeof(T);
    EXPECT_EQ((size - data_bytes) % 64, 0u) << "data must start at a multiple of 64 bytes";
    const auto raw = file_bytes(path);
    EXPECT_EQ(static_cast<char>(raw[6]), 1) << "version 1.0";
    EXPECT_EQ(static_cast<char>(raw[size - data_bytes - 1]), '\n') << "the header ends with a newline";

    const npy::array a = npy::read(path);
    EXPECT_EQ(a.type, type);
    EXPECT_EQ(a.shape, shape);
    EXPECT_EQ(a.count(), n);
    const auto got = a.template values<T>();
    ASSERT_EQ(got.size(), values.size());
    if (data_bytes > 0) {
      EXPECT_EQ(std::memcmp(got.data(), values.data(), data_bytes), 0);
    }

    const npy::array b = npy::parse(npy::encode(type, shape, values.data()), "memory");
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST(npy_encode, long_header_switches_to_version_2) {
  const std::vector<std::int64_t> shape(25000, 1);  // "1, " 25000 times: more than 65535 bytes
  const std::uint8_t value = 42;
  const auto bytes = npy::encode(npy::dtype::uint8, shape, &value);
  EXPECT_EQ(static_cast<char>(bytes[6]), 2);
  EXPECT_EQ((bytes.size() - 1) % 64, 0u);
  const npy::array a = npy::parse(bytes, "long");
  EXPECT_EQ(a.shape, shape);
  EXPECT_EQ(a.values<std::uint8_t>()[0], 42);
}

TEST(npy_encode, rejects_bad_shapes) {
  const float x = 0;
  EXPECT_THROW(npy::encode(npy::dtype::float32, shape_of({-1}), &x), npy::error);
  EXPECT_THROW(npy::encode(npy::dtype::float32, shape_of({1ll << 40, 1ll << 40}), &x), npy::error);
  EXPECT_THROW(npy::encode(npy::dtype::float32, shape_of({2}), nullptr), npy::error);
  EXPECT_NO_THROW(npy::encode(npy::dtype::float32, shape_of({0}), nullptr));
}

// ---- files written by NumPy ----------------------------------------------------------------------

template <class T>
std::vector<T> values_in(const std::string& name, std::vector<std::int64_t> shape) {
  const npy::array a = npy::read(fixtures / name);
  EXPECT_EQ(a.shape, shape) << name;
  const auto v = a.values<T>();
  return {v.begin(), v.end()};
}

TEST(npy_numpy_files, little_endian) {
  std::vector<float> f32;
  for (int i = 0; i < 12; ++i) f32.push_back(0.5f * static_cast<float>(i));
  EXPECT_EQ(values_in<float>("float32_3x4.npy", {3, 4}), f32);
  EXPECT_EQ(values_in<std::int64_t>("int64_scalar.npy", {}), std::vector<std::int64_t>{-1234567890123});
  std::vector<float> f16;
  for (const auto h : values_in<npy::float16_bits>("float16_2x2.npy", {2, 2})) f16.push_back(npy::to_float(h));
  EXPECT_EQ(f16, (std::vector<float>{1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24)}));
  EXPECT_TRUE(values_in<std::int32_t>("int32_2x0x3.npy", {2, 0, 3}).empty());
  EXPECT_EQ(values_in<std::uint8_t>("uint8_5.npy", {5}), (std::vector<std::uint8_t>{0, 1, 127, 128, 255}));
  EXPECT_TRUE(values_in<std::int8_t>("int8_0.npy", {0}).empty());
  EXPECT_EQ(values_in<std::uint64_t>("uint64_3.npy", {3}), (std::vector<std::uint64_t>{0, 1, ~0ull}));
}

TEST(npy_numpy_files, big_endian_is_swapped) {
  EXPECT_EQ(values_in<double>("float64_be_5.npy", {5}), (std::vector<double>{1.5, -2.25, 0.0, 1e300, -1e-300}));
  EXPECT_EQ(values_in<std::int16_t>("int16_be_2x3.npy", {2, 3}),
            (std::vector<std::int16_t>{-3000, -2000, -1000, 0, 1000, 2000}));
  EXPECT_EQ(values_in<std::uint32_t>("uint32_be_4.npy", {4}),
            (std::vector<std::uint32_t>{0, 1, 0xdeadbeef, 0xffffffff}));
}

TEST(npy_numpy_files, versions_2_and_3) {
  EXPECT_EQ(values_in<std::uint16_t>("uint16_v2_4.npy", {4}), (std::vector<std::uint16_t>{1, 2, 3, 65535}));
  EXPECT_EQ(values_in<std::int32_t>("int32_v3_3.npy", {3}), (std::vector<std::int32_t>{-1, 0, 1}));
}

TEST(npy_numpy_files, writer_output_is_byte_identical_to_numpy) {
  for (const char* name : {"float32_3x4.npy", "int64_scalar.npy", "float16_2x2.npy", "int32_2x0x3.npy", "uint8_5.npy",
                           "int8_0.npy", "uint64_3.npy"}) {
    const auto original = file_bytes(fixtures / name);
    const npy::array a = npy::parse(original, name);
    EXPECT_EQ(npy::encode(a.type, a.shape, a.data.data()), original) << name;
  }
}

TEST(npy_numpy_files, rejected_with_a_reason) {
  const auto message = [](const char* name) {
    try {
      npy::read(fixtures / name);
    } catch (const npy::error& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << "names the file: " << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << name << " was accepted";
    return std::string();
  };
  EXPECT_NE(message("object_2.npy").find("unsupported dtype '|O'"), std::string::npos);
  EXPECT_NE(message("structured_2.npy").find("unsupported dtype '[('a', '<i4'), ('b', '<f4')]'"), std::string::npos);
  EXPECT_NE(message("bool_3.npy").find("unsupported dtype '|b1' (bool)"), std::string::npos);
}

// ---- header parsing: what NumPy's literal_eval would accept -------------------------------------

TEST(npy_header, flexible_python_literal) {
  const std::string data(12, '\x01');
  for (const std::string header : {
           "{'shape': (3,), 'fortran_order': False, 'descr': '<i4'}",
           "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (3,)}",
           "  {\n\t'descr' :'<i4' ,'fortran_order':False,\r\n 'shape':( 3 , ) , }  \n",
           "{'descr': 'i4', 'fortran_order': False, 'shape': (3,)}",
           "{'descr': '=i4', 'fortran_order': False, 'shape': (3,)}",
           "{'descr': '|i4', 'fortran_order': False, 'shape': (3,)}",
           "{'descr': '<i4', 'fortran_order': False, 'shape': (+3,)}",
           "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3,),}",
           "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 1, 1)}",
       }) {
    SCOPED_TRACE(header);
    npy::array a;
    ASSERT_NO_THROW(a = npy::parse(npy_file(header, data), "test.npy"));
    EXPECT_EQ(a.count(), 3);
    EXPECT_EQ(a.values<std::int32_t>()[2], 0x01010101);
  }
  EXPECT_EQ(npy::parse(npy_file(dict("<f8", "()"), std::string(8, '\0')), "t").shape, shape_of({}));
  EXPECT_EQ(npy::parse(npy_file(dict("<f8", "((2), 1)"), std::string(16, '\0')), "t").shape, shape_of({2, 1}));
}

TEST(npy_header, big_endian_and_one_byte_orders) {
  const std::string be = "\x01\x02\x03\x04\xff\xff\xff\xfe";
  EXPECT_EQ(npy::parse(npy_file(dict(">i4", "(2,)"), be), "t").values<std::int32_t>()[0], 0x01020304);
  EXPECT_EQ(npy::parse(npy_file(dict(">i4", "(2,)"), be), "t").values<std::int32_t>()[1], -2);
  EXPECT_EQ(npy::parse(npy_file(dict(">u2", "(4,)"), be), "t").values<std::uint16_t>()[3], 0xfffe);
  EXPECT_EQ(npy::parse(npy_file(dict(">i8", "()"), be), "t").values<std::int64_t>()[0], 0x01020304fffffffell);
  EXPECT_EQ(npy::parse(npy_file(dict(">u1", "(8,)"), be), "t").values<std::uint8_t>()[0], 1);
  EXPECT_EQ(npy::parse(npy_file(dict("<i1", "(8,)"), be), "t").values<std::int8_t>()[7], -2);
  const std::string one = "\x3f\xf0\0\0\0\0\0\0"s;  // 1.0 as a big-endian double
  EXPECT_EQ(npy::parse(npy_file(dict(">f8", "(1,)"), one), "t").values<double>()[0], 1.0);
  EXPECT_EQ(npy::parse(npy_file(dict(">f2", "(1,)"), "\x3c\x00"s), "t").values<npy::float16_bits>()[0].bits, 0x3c00);
}

TEST(npy_header, version_2_and_3_hand_made) {
  EXPECT_EQ(npy::parse(npy_file(dict("<u2", "(1,)"), "\x05\x00"s, 2), "t").values<std::uint16_t>()[0], 5);
  EXPECT_EQ(npy::parse(npy_file(dict("<u2", "(1,)"), "\x05\x00"s, 3), "t").values<std::uint16_t>()[0], 5);
}

// ---- every rejection names its problem -------------------------------------------------------------

TEST(npy_errors, magic_and_version) {
  EXPECT_REJECTED(bytes_of(""), "empty file");
  EXPECT_REJECTED(bytes_of("PK\x03\x04 a zip file"), "not a .npy file (bad magic");
  EXPECT_REJECTED(bytes_of("\x93NUMPx\x01\x00"), "bad magic");
  EXPECT_REJECTED(bytes_of("\x93NUM"), "truncated header");
  EXPECT_REJECTED(bytes_of("\x93NUMPY\x01"), "truncated header");
  EXPECT_REJECTED(npy_file(dict("<f4", "()"), "abcd", 4), "unsupported .npy format version 4.0");
  EXPECT_REJECTED(npy_file(dict("<f4", "()"), "abcd", 0), "unsupported .npy format version 0.0");
  auto v11 = npy_file(dict("<f4", "()"), "abcd");
  v11[7] = std::byte{1};
  EXPECT_REJECTED(v11, "unsupported .npy format version 1.1");
}

TEST(npy_errors, truncated_header) {
  EXPECT_REJECTED(bytes_of("\x93NUMPY\x01\x00\x46"), "truncated header");
  EXPECT_REJECTED(bytes_of("\x93NUMPY\x02\x00\x46\x00\x00"), "truncated header");
  auto file = npy_file(dict("<f4", "(1,)"), "abcd");
  file.resize(30);  // the length field promises more than there is
  EXPECT_REJECTED(file, "truncated header: it claims");
  auto huge = npy_file(dict("<f4", "(1,)"), "abcd", 2);
  huge[11] = std::byte{0xff};  // 4 GiB header length
  EXPECT_REJECTED(huge, "is too long for a numeric array");
  // The header ends inside the dict: the length field is too small.
  EXPECT_REJECTED(npy_file("{'descr': '<f4', 'fortran_order': Fa"), "malformed header");
  EXPECT_REJECTED(npy_file("{'descr': '<f4', "), "truncated?");
}

TEST(npy_errors, header_not_a_dict_or_malformed) {
  EXPECT_REJECTED(npy_file("[('descr', '<f4')]\n"), "header is not a Python dict literal");
  EXPECT_REJECTED(npy_file("descr=<f4 shape=3\n"), "header is not a Python dict literal");
  EXPECT_REJECTED(npy_file(""), "header is not a Python dict literal");
  EXPECT_REJECTED(npy_file("{'descr': '<f4' 'shape': (3,)}"), "malformed header: expected ',' or '}'");
  EXPECT_REJECTED(npy_file("{'descr' '<f4'}"), "malformed header: expected ':'");
  EXPECT_REJECTED(npy_file("{3: '<f4'}"), "malformed header: dict key is not a string");
  EXPECT_REJECTED(npy_file("{'descr': '<f4}"), "unterminated string");
  EXPECT_REJECTED(npy_file("{'descr': <f4}"), "malformed header: unexpected character '<'");
  EXPECT_REJECTED(npy_file("{'descr': float32}"), "malformed header: unexpected 'float32'");
  EXPECT_REJECTED(npy_file("{'shape': (3L,)}"), "malformed header: unexpected character after a number");
  EXPECT_REJECTED(npy_file("{'shape': (-)}"), "expected digits");
  EXPECT_REJECTED(npy_file("{} {}"), "unexpected text after the dict");
  EXPECT_REJECTED(npy_file("{'a':" + std::string(200, '(') + std::string(200, ')') + "}"), "nesting deeper than");
  EXPECT_REJECTED(npy_file(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\0", 56)),
                  "unexpected text after the dict");
}

TEST(npy_errors, keys) {
  EXPECT_REJECTED(npy_file("{'descr': '<f4', 'fortran_order': False}"), "header has no 'shape' key");
  EXPECT_REJECTED(npy_file("{'shape': (), 'fortran_order': False}"), "header has no 'descr' key");
  EXPECT_REJECTED(npy_file("{'shape': (), 'descr': '<f4'}"), "header has no 'fortran_order' key");
  EXPECT_REJECTED(npy_file("{}"), "header has no");
  EXPECT_REJECTED(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}"),
                  "unexpected key 'extra'");
  EXPECT_REJECTED(npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}"),
                  "duplicate key 'descr'");
}

TEST(npy_numpy_files, fortran_order_is_read_in_c_order) {
  // np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)): its data is 0 3 1 4 2 5.
  EXPECT_EQ(values_in<std::int32_t>("fortran_2x3.npy", {2, 3}), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(npy_header, fortran_order_data_is_transposed) {
  const std::int16_t f[24] = {0, 12, 4, 16, 8, 20, 1, 13, 5, 17, 9, 21, 2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23};
  const npy::array a = npy::parse(npy_file(dict("<i2", "(2, 3, 4)", "True"),
                                           std::string_view(reinterpret_cast<const char*>(f), sizeof f)),
                                  "f.npy");
  ASSERT_EQ(a.shape, shape_of({2, 3, 4}));
  const auto v = a.values<std::int16_t>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[std::size_t(i)], i) << "C-order element " << i;
  const npy::header h = npy::parse_header(npy_file(dict("<i2", "(2, 3, 4)", "True")), "f.npy");
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.count(), 24);
  EXPECT_EQ(npy::encode_header(npy::dtype::int16, shape_of({2, 3}), true).size() % 64, 0u);
  const auto fh = npy::encode_header(npy::dtype::int16, shape_of({2, 3}), true);
  EXPECT_TRUE(npy::parse_header(fh, "encoded").fortran_order);
}

TEST(npy_errors, fortran_order) {
  EXPECT_REJECTED(npy_file(dict("<f4", "(2, 2)", "0"), std::string(16, '\0')), "fortran_order is not True or False");
  EXPECT_REJECTED(npy_file(dict("<f4", "(2, 2)", "None"), std::string(16, '\0')), "fortran_order is not True or False");
}

TEST(npy_errors, dtypes) {
  for (const char* descr : {"|O", "<c8", "<f16", "|S3", "<U5", "|V8", "<M8[ns]", "<i16", "<i3", "", "<", "int32"})
    EXPECT_REJECTED(npy_file(dict(descr, "(1,)"), std::string(4, '\0')), "unsupported dtype '" + std::string(descr) + "'");
  EXPECT_REJECTED(npy_file(dict("|b1", "(1,)"), "\x01"), "(bool): convert with a.astype(np.uint8)");
  EXPECT_REJECTED(npy_file(dict("|O", "(1,)"), "x"), "(Python objects)");
  EXPECT_REJECTED(npy_file("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}"),
                  "unsupported dtype '[('a', '<i4')]' (structured dtypes are not supported)");
  EXPECT_REJECTED(npy_file("{'descr': 4, 'fortran_order': False, 'shape': (1,)}"), "unsupported dtype '4'");
}

TEST(npy_errors, shapes) {
  EXPECT_REJECTED(npy_file(dict("<f4", "(3, -1)")), "negative dimension -1 in shape (3, -1)");
  EXPECT_REJECTED(npy_file(dict("<f4", "(-9223372036854775808,)")), "negative dimension");
  EXPECT_REJECTED(npy_file(dict("<f4", "3")), "shape is not a tuple: '3'");
  EXPECT_REJECTED(npy_file(dict("<f4", "(3)")), "shape is not a tuple: '3'");
  EXPECT_REJECTED(npy_file(dict("<f4", "[3]")), "shape is not a tuple: '[3]'");
  EXPECT_REJECTED(npy_file(dict("<f4", "('3',)")), "shape is not a tuple of integers");
  EXPECT_REJECTED(npy_file(dict("<f4", "(True,)")), "shape is not a tuple of integers");
  EXPECT_REJECTED(npy_file(dict("<f4", "((3,),)")), "shape is not a tuple of integers");
  EXPECT_REJECTED(npy_file(dict("<f4", "(99999999999999999999,)")), "shape dimension 99999999999999999999 is too large");
  EXPECT_REJECTED(npy_file(dict("<f4", "(9223372036854775808,)")), "is too large");
  // Products past int64, including when a zero dimension makes the count 0 (as NumPy does).
  EXPECT_REJECTED(npy_file(dict("|u1", "(4294967296, 4294967296)")), "shape (4294967296, 4294967296) of uint8 is too large");
  EXPECT_REJECTED(npy_file(dict("<f8", "(1152921504606846976,)")), "is too large");
  EXPECT_REJECTED(npy_file(dict("<f4", "(4611686018427387904, 4611686018427387904, 0)")), "is too large");
  EXPECT_REJECTED(npy_file(dict("<f4", "(9223372036854775807,)")), "is too large");
}

TEST(npy_errors, data_size) {
  EXPECT_REJECTED(npy_file(dict("<f4", "(1000000,)"), std::string(16, '\0')),
                  "truncated data: shape (1000000,) of float32 needs 4000000 bytes, only 16 follow the header");
  EXPECT_REJECTED(npy_file(dict("<f8", "(1152921504606846975,)"), "x"), "truncated data");
  EXPECT_REJECTED(npy_file(dict("<f4", "()")), "truncated data");
  auto file = file_bytes(fixtures / "float32_3x4.npy");
  file.pop_back();
  EXPECT_REJECTED(file, "truncated data: shape (3, 4) of float32 needs 48 bytes, only 47 follow the header");
  file.push_back(std::byte{0});
  file.push_back(std::byte{0});
  EXPECT_REJECTED(file, "1 unexpected bytes after the data (shape (3, 4) of float32 needs 48 bytes)");
  EXPECT_REJECTED(npy_file(dict("<f4", "(0,)"), "x"), "1 unexpected bytes after the data");
}

TEST(npy_errors, messages_are_printable) {
  const std::string message = parse_error(npy_file(std::string("\x01\xff{'descr'") + '\0'));
  EXPECT_NE(message.find("\\x01\\xff"), std::string::npos) << message;
  for (const char c : message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << message;
  // A long hostile header is cut in messages.
  EXPECT_LT(parse_error(npy_file("[" + std::string(100000, '1'))).size(), 400u);
}

// ---- files --------------------------------------------------------------------------------------

TEST_F(npy_files, read_errors_name_the_path) {
  try {
    npy::read(dir / "missing.npy");
    ADD_FAILURE();
  } catch (const npy::error& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "missing.npy").string() + ": no such file");
  }
  try {
    npy::read(dir);
    ADD_FAILURE();
  } catch (const npy::error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  const fs::path bad = dir / "bad.npy";
  std::ofstream(bad) << "hello";
  try {
    npy::read(bad);
    ADD_FAILURE();
  } catch (const npy::error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad.string() + ": not a .npy file", 0), 0u) << e.what();
  }
}

// ---- input_file: the header first, then pieces ----------------------------------------------------

/// n float32 values i * 0.5 as a .npy file at `path`.
void save_ramp(const fs::path& path, std::int64_t n, const char* descr = "<f4") {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = 0.5f * float(i);
  if (std::string_view(descr) == "<f4") return save(path, npy::dtype::float32, shape_of({n}), v.data());
  std::string data(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  for (std::size_t i = 0; i < data.size(); i += 4) std::reverse(data.begin() + long(i), data.begin() + long(i) + 4);
  save_bytes(path, npy_file(dict(descr, "(" + std::to_string(n) + ",)"), data));
}

/// Reads `file` front to back in pieces of `piece` elements; checks every value of the ramp.
void expect_ramp_in_pieces(npy::input_file& file, std::int64_t piece) {
  for (std::int64_t first = 0; first < file.count(); first += piece) {
    const std::int64_t n = std::min(piece, file.count() - first);
    const auto* v = static_cast<const float*>(file.read(first, n));
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 0.5f * float(first + i)) << "element " << first + i;
  }
}

/// The same for the elements before `upto` only.
void expect_ramp_in_pieces_upto(npy::input_file& file, std::int64_t piece, std::int64_t upto) {
  for (std::int64_t first = 0; first < upto; first += piece) {
    const std::int64_t n = std::min(piece, upto - first);
    const auto* v = static_cast<const float*>(file.read(first, n));
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], 0.5f * float(first + i)) << "element " << first + i;
  }
}

TEST_F(npy_files, input_file_maps_a_regular_file_in_pieces) {
  save_ramp(dir / "r.npy", 1000003);
  auto file = npy::input_file::open((dir / "r.npy").string());
  EXPECT_FALSE(file->is_stream());
  EXPECT_EQ(file->count(), 1000003);
  EXPECT_EQ(file->type(), npy::dtype::float32);
  expect_ramp_in_pieces(*file, 65537);
  EXPECT_THROW(file->read(0, 10), std::logic_error) << "pieces never go back";
  // The other byte order, converted a piece at a time.
  save_ramp(dir / "big.npy", 5000, ">f4");
  auto big = npy::input_file::open((dir / "big.npy").string());
  expect_ramp_in_pieces(*big, 999);
  // Data that does not start at a multiple of its size (a header of odd length): copied.
  std::vector<float> v{0.0f, 0.5f, 1.0f};
  save_bytes(dir / "odd.npy", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}\n",
                                       std::string_view(reinterpret_cast<const char*>(v.data()), 12)));
  auto odd = npy::input_file::open((dir / "odd.npy").string());
  expect_ramp_in_pieces(*odd, 2);
}

TEST_F(npy_files, input_file_checks_the_size_before_reading) {
  save_ramp(dir / "r.npy", 100);
  auto bytes = file_bytes(dir / "r.npy");
  bytes.resize(bytes.size() - 4);
  save_bytes(dir / "short.npy", bytes);
  try {
    npy::input_file::open((dir / "short.npy").string());
    ADD_FAILURE() << "a truncated file was opened";
  } catch (const npy::error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated data"), std::string::npos) << e.what();
  }
  bytes.resize(bytes.size() + 8);
  save_bytes(dir / "long.npy", bytes);
  EXPECT_THROW(npy::input_file::open((dir / "long.npy").string()), npy::error);
}

TEST_F(npy_files, input_file_streams_a_fifo_and_reads_only_what_the_header_declares) {
  save_ramp(dir / "r.npy", 300000);
  const auto bytes = file_bytes(dir / "r.npy");
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader may close the pipe before the writer's trailing bytes: EPIPE for the writer, not a
  // SIGPIPE for the whole test program.
  const auto previous_handler = std::signal(SIGPIPE, SIG_IGN);
  // The writer sends the file and then more: the reader must stop at the declared data (and not
  // wait for an end that never comes: the writer keeps the pipe open until the reader is done).
  std::atomic<bool> done{false};
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const auto n = ::write(fd, bytes.data() + sent, bytes.size() - sent);
      if (n <= 0) break;
      sent += std::size_t(n);
    }
    (void)!::write(fd, "trailing", 8);
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ::close(fd);
  });
  {
    auto file = npy::input_file::open(fifo.string());
    EXPECT_TRUE(file->is_stream());
    // Overlapping pieces (windows) and skips (offsets that start late) both work on a stream.
    const auto* a = static_cast<const float*>(file->read(10, 100));
    EXPECT_EQ(a[0], 5.0f);
    const auto* b = static_cast<const float*>(file->read(50, 100000));
    EXPECT_EQ(b[0], 25.0f);
    EXPECT_EQ(b[99999], 0.5f * 100049);
    const auto* c = static_cast<const float*>(file->read(200000, 100000));
    EXPECT_EQ(c[99999], 0.5f * 299999);
  }
  done = true;
  writer.join();
  std::signal(SIGPIPE, previous_handler);
}

TEST_F(npy_files, input_file_refuses_endless_and_truncated_streams_at_once) {
  try {
    npy::input_file::open("/dev/zero");
    ADD_FAILURE() << "/dev/zero was opened";
  } catch (const npy::error& e) {
    EXPECT_NE(std::string(e.what()).find("not a .npy file"), std::string::npos) << e.what();
  }
  try {
    npy::input_file::open("/dev/null");
    ADD_FAILURE() << "/dev/null was opened";
  } catch (const npy::error& e) {
    EXPECT_NE(std::string(e.what()).find("empty file"), std::string::npos) << e.what();
  }
  // A stream that ends inside the data: the piece that needs the missing bytes says so.
  save_ramp(dir / "r.npy", 1000);
  auto bytes = file_bytes(dir / "r.npy");
  bytes.resize(bytes.size() - 40);
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    (void)!::write(fd, bytes.data(), bytes.size());
    ::close(fd);
  });
  auto file = npy::input_file::open(fifo.string());
  try {
    file->read(0, 1000);
    ADD_FAILURE() << "a truncated stream was read";
  } catch (const npy::error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated data"), std::string::npos) << e.what();
  }
  writer.join();
}

// ---- input_file: a regular file cut short while it is read (truncate, a rewrite in place) ---------

/// The message of the npy::error `body` throws; fails the test if it throws none.
template <class F>
std::string npy_error_of(F&& body) {
  try {
    body();
  } catch (const npy::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

bool says_shrank(const std::string& message, const fs::path& path) {
  return message.rfind(path.string() + ": the input shrank while it was read", 0) == 0;
}

TEST_F(npy_files, input_file_says_when_the_file_was_cut_short_between_pieces) {
  const fs::path path = dir / "r.npy";
  save_ramp(path, 3000000);
  auto file = npy::input_file::open(path.string());
  expect_ramp_in_pieces_upto(*file, 1000000, 1000000);
  fs::resize_file(path, 4096);  // as `truncate -s 4096` by another program
  std::string message = npy_error_of([&] { file->read(1000000, 1000000); });
  EXPECT_TRUE(says_shrank(message, path)) << message;
  EXPECT_NE(message.find("4096 bytes now, 12000128 when it was opened"), std::string::npos) << message;
  message = npy_error_of([&] { file->check_intact(); });
  EXPECT_TRUE(says_shrank(message, path)) << message;
  // Read whole (npy::read, and the tool's Fortran-order and offsets files): the same.
  save_ramp(path, 1000);
  auto whole = npy::input_file::open(path.string());
  fs::resize_file(path, 1000);
  message = npy_error_of([&] { whole->read_all(); });
  EXPECT_TRUE(says_shrank(message, path)) << message;
}

TEST_F(npy_files, input_file_reads_zeros_where_a_piece_handed_out_lost_its_pages_and_says_so) {
  // A piece already handed out to a job (the CPU backend's threads, a copy to the GPU) whose file is
  // cut under it: reading the lost pages raises SIGBUS. Instead of the process dying, those pages
  // read as zeros, in every thread, and the input_file says so before any output leaves.
  const fs::path path = dir / "r.npy";
  const std::int64_t n = 4 << 20;  // 16 MiB of data
  save_ramp(path, n);
  auto file = npy::input_file::open(path.string());
  const auto* v = static_cast<const float*>(file->read(0, n));
  ASSERT_EQ(v[n - 1], 0.5f * float(n - 1));
  EXPECT_NO_THROW(file->check_intact());
  // Cut to 3/4 (the header is 128 bytes): this thread meets the cut.
  fs::resize_file(path, 128 + (n / 4 * 3) * 4);
  const volatile float* at = v;
  EXPECT_EQ(at[n - 1], 0.0f);  // SIGBUS without the handler
  EXPECT_EQ(at[n / 4 * 3 - 1], 0.5f * float(n / 4 * 3 - 1)) << "what the file still holds reads as before";
  // Cut to 1/4: another thread meets it.
  fs::resize_file(path, 128 + (n / 4) * 4);
  float seen_by_thread = -1;
  std::thread reader([&] { seen_by_thread = at[n / 2 + 1234]; });
  reader.join();
  EXPECT_EQ(seen_by_thread, 0.0f);
  EXPECT_EQ(at[n / 4 - 1], 0.5f * float(n / 4 - 1));
  EXPECT_EQ(at[n / 4], 0.0f);
  const std::string message = npy_error_of([&] { file->check_intact(); });
  EXPECT_TRUE(says_shrank(message, path)) << message;
  // A file that grows back to its size does not undo it: what was read meanwhile was zeros.
  fs::resize_file(path, 128 + n * 4);
  EXPECT_TRUE(says_shrank(npy_error_of([&] { file->check_intact(); }), path));
  EXPECT_TRUE(says_shrank(npy_error_of([&] { file->read(n - 10, 10); }), path));
}

TEST_F(npy_files, input_file_leaves_other_bus_errors_fatal) {
  // The handler mends only the mappings of input files: any other SIGBUS ends the process as before.
  const fs::path path = dir / "other.bin";
  std::ofstream(path) << std::string(1 << 16, 'x');
  save_ramp(dir / "r.npy", 100000);
#ifdef __SANITIZE_ADDRESS__
  const auto ends_as_without_the_handler = testing::ExitedWithCode(1);  // AddressSanitizer's own report
  const char* says = "BUS";
#else
  const auto ends_as_without_the_handler = testing::KilledBySignal(SIGBUS);
  const char* says = "";
#endif
  EXPECT_EXIT(
      {
        auto file = npy::input_file::open((dir / "r.npy").string());  // installs the handler
        const int fd = ::open(path.c_str(), O_RDONLY);
        void* p = ::mmap(nullptr, 1 << 16, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) std::_Exit(3);
        if (::ftruncate(::open(path.c_str(), O_WRONLY), 0) != 0) std::_Exit(4);
        volatile char c = static_cast<const char*>(p)[40000];
        (void)c;
        std::_Exit(0);
      },
      ends_as_without_the_handler, says);
}

TEST_F(npy_files, input_files_past_the_mapping_slots_are_read_as_streams_and_checked_the_same) {
  // More inputs open at once than the handler lists (64): the rest are read with read(2), where a
  // cut file is a short read, reported the same way.
  std::vector<std::unique_ptr<npy::input_file>> files;
  for (int i = 0; i < 70; ++i) {
    const fs::path path = dir / ("r" + std::to_string(i) + ".npy");
    save_ramp(path, 100000);
    files.push_back(npy::input_file::open(path.string()));
  }
  for (auto& f : files) {
    EXPECT_FALSE(f->is_stream()) << "regular files are read front to back either way";
    expect_ramp_in_pieces_upto(*f, 10000, 50000);
  }
  const fs::path last = dir / "r69.npy";
  fs::resize_file(last, 128 + 60000 * 4);
  const std::string message = npy_error_of([&] { files.back()->read(50000, 50000); });
  EXPECT_TRUE(says_shrank(message, last)) << message;
}

TEST_F(npy_files, read_all_gives_c_order) {
  const std::int32_t f[6] = {0, 3, 1, 4, 2, 5};  // (2, 3) in Fortran order
  save_bytes(dir / "f.npy", npy_file(dict("<i4", "(2, 3)", "True"),
                                     std::string_view(reinterpret_cast<const char*>(f), sizeof f)));
  const npy::array a = npy::read(dir / "f.npy");
  EXPECT_EQ(std::vector<std::int32_t>(a.values<std::int32_t>().begin(), a.values<std::int32_t>().end()),
            (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));
}

}  // namespace
