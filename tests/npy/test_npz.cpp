// npy::encode_npz and npy::string_entry: the archive parsed back with libzip (member names, order,
// sizes, stored, each member byte for byte what npy::encode writes), strings as NumPy's UTF-32,
// every refusal. check_npz.py reads the same sample with numpy.load (ctest npz_numpy_load).
#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "npy/npy.hpp"
#include "npy/npz.hpp"
#include "sample_npz.hpp"

namespace npy = multireduce::npy;

namespace {

/// One member of an archive as libzip reads it.
struct member {
  std::string name;
  zip_int32_t method = -1;
  std::vector<std::byte> bytes;
};

/// Every member of the archive in `bytes`, in archive order; fails the test if libzip cannot read it.
std::vector<member> read_archive(const std::vector<std::byte>& bytes) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  zip_t* archive = source ? zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error) : nullptr;
  if (!archive) {
    ADD_FAILURE() << "libzip cannot open the archive: " << zip_error_strerror(&error);
    if (source) zip_source_free(source);
    zip_error_fini(&error);
    return {};
  }
  zip_error_fini(&error);
  std::vector<member> out;
  const zip_int64_t count = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    zip_stat_t stat;
    zip_stat_init(&stat);
    EXPECT_EQ(zip_stat_index(archive, index, 0, &stat), 0);
    member m{stat.name, stat.comp_method, std::vector<std::byte>(stat.size)};
    EXPECT_EQ(stat.comp_size, stat.size) << m.name;
    zip_file_t* file = zip_fopen_index(archive, index, 0);  // checks the CRC when read to the end
    EXPECT_NE(file, nullptr) << m.name;
    if (file) {
      EXPECT_EQ(zip_fread(file, m.bytes.data(), m.bytes.size()), static_cast<zip_int64_t>(m.bytes.size())) << m.name;
      char extra;
      EXPECT_EQ(zip_fread(file, &extra, 1), 0) << m.name << ": bad CRC or more bytes than the directory says";
      zip_fclose(file);
    }
    out.push_back(std::move(m));
  }
  zip_close(archive);  // read only: frees the archive and the source
  return out;
}

std::vector<std::byte> concat(std::vector<std::byte> a, std::span<const std::byte> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The message encode_npz throws; fails the test if it writes the entries.
std::string npz_error(const std::vector<npy::npz_entry>& entries) {
  try {
    npy::encode_npz(entries);
  } catch (const npy::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "encode_npz accepted the entries";
  return {};
}

}  // namespace

TEST(npz, members_are_the_npy_files_in_order_and_stored) {
  mr_test::sample_npz sample;
  const auto entries = sample.entries();
  const std::vector<member> members = read_archive(npy::encode_npz(entries));
  ASSERT_EQ(members.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(members[i].name, entries[i].name + ".npy");
    EXPECT_EQ(members[i].method, ZIP_CM_STORE) << members[i].name;
  }
  using enum npy::dtype;
  EXPECT_EQ(members[1].bytes, npy::encode(int32, std::vector<std::int64_t>{6, 2}, sample.pairs.data()));
  EXPECT_EQ(members[2].bytes, npy::encode(int64, std::vector<std::int64_t>{7}, sample.offsets.data()));
  EXPECT_EQ(members[3].bytes, npy::encode(int32, std::vector<std::int64_t>{10, 3}, sample.matches.data()));
  EXPECT_EQ(members[4].bytes, npy::encode(int32, std::vector<std::int64_t>{0, 3}, nullptr));
  EXPECT_EQ(members[5].bytes, npy::encode(float32, std::vector<std::int64_t>{3, 2}, sample.xy.data()));
  EXPECT_EQ(members[6].bytes, npy::encode(uint8, std::vector<std::int64_t>{2, 32}, sample.bits.data()));
  // The strings: NumPy's header for "<U9", then 4 x 9 UTF-32LE code points.
  EXPECT_EQ(members[0].bytes,
            concat(npy::encode_header("<U9", std::vector<std::int64_t>{4}), std::span(sample.name_storage)));
  // Read back by the reader the tool uses, the numeric members give the arrays again.
  const npy::array offsets = npy::parse(members[2].bytes, "offsets.npy");
  EXPECT_EQ(std::vector<std::int64_t>(offsets.values<std::int64_t>().begin(), offsets.values<std::int64_t>().end()),
            sample.offsets);
}

TEST(npz, same_arrays_same_bytes) {
  mr_test::sample_npz sample;
  EXPECT_EQ(npy::encode_npz(sample.entries()), npy::encode_npz(sample.entries()));
}

TEST(npz, no_entries_is_an_empty_archive) {
  const std::vector<std::byte> bytes = npy::encode_npz({});
  EXPECT_EQ(bytes.size(), 22u);
  EXPECT_TRUE(read_archive(bytes).empty());
}

TEST(npz, string_entry_is_numpys_utf32) {
  std::vector<std::byte> storage;
  const std::vector<std::string> values{"a", "\xc3\xa4\xe8\xa7\x86\xf0\x9f\x98\x80", ""};  // a; ä 视 😀; empty
  const npy::npz_entry entry = npy::string_entry("names", values, storage);
  EXPECT_EQ(entry.name, "names");
  EXPECT_EQ(entry.descr, "<U3");  // code points, not bytes (9)
  EXPECT_EQ(entry.shape, std::vector<std::int64_t>{3});
  EXPECT_EQ(entry.data.data(), storage.data());
  const std::vector<char32_t> expected{U'a', 0, 0, 0xe4, 0x89c6, 0x1f600, 0, 0, 0};
  ASSERT_EQ(storage.size(), expected.size() * 4);
  for (std::size_t i = 0; i < expected.size(); ++i)
    for (int b = 0; b < 4; ++b)
      EXPECT_EQ(storage[4 * i + static_cast<std::size_t>(b)], static_cast<std::byte>((expected[i] >> (8 * b)) & 0xff))
          << "code point " << i << " byte " << b;

  // No strings, or only empty ones: "<U1", as NumPy makes them.
  EXPECT_EQ(npy::string_entry("none", std::vector<std::string>{}, storage).descr, "<U1");
  EXPECT_TRUE(storage.empty());
  EXPECT_EQ(npy::string_entry("blank", std::vector<std::string>{"", ""}, storage).descr, "<U1");
  EXPECT_EQ(storage.size(), 8u);
}

TEST(npz, string_entry_refuses_invalid_utf8) {
  std::vector<std::byte> storage;
  for (const std::string bad : {"\xff", "\x80", "a\xc3", "\xc0\x80", "\xe0\x80\x80", "\xed\xa0\x80",
                                "\xf4\x90\x80\x80", "\xe8\xa7", "\xc3\x28"}) {
    const std::vector<std::string> values{"fine", bad};
    try {
      npy::string_entry("names", values, storage);
      ADD_FAILURE() << "accepted " << testing::PrintToString(bad);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("string 1 is not valid UTF-8"), std::string::npos) << e.what();
    }
  }
  // The largest code point and the last before the surrogates are fine.
  EXPECT_EQ(npy::string_entry("ok", std::vector<std::string>{"\xf4\x8f\xbf\xbf\xed\x9f\xbf"}, storage).descr, "<U2");
}

TEST(npz, refusals_name_the_array) {
  const std::vector<std::int32_t> six(6);
  const auto data = std::as_bytes(std::span(six));
  auto error_of = [&](npy::npz_entry entry) { return npz_error({entry}); };
  EXPECT_NE(error_of({"a", "<i4", {5}, data}).find("array 'a': shape and descr '<i4' need 20 bytes, the data has 24"),
            std::string::npos);
  EXPECT_NE(error_of({"", "<i4", {6}, data}).find("empty name"), std::string::npos);
  EXPECT_NE(error_of({std::string("a\0b", 3), "<i4", {6}, data}).find("NUL"), std::string::npos);
  EXPECT_NE(error_of({"a", "<i4", {-6}, data}).find("array 'a': npy::encode_header: cannot write shape (-6,)"),
            std::string::npos);
  for (const char* descr : {"<i3", "i4", "<x4", "<U0", "<i4'", "<f16", "<U", "<U4294967296", "|b2"})
    EXPECT_NE(error_of({"a", descr, {6}, data}).find("array 'a': npy::item_size_of: cannot write dtype"),
              std::string::npos)
        << descr;
  const std::string twice = npz_error({{"a", "<i4", {6}, data}, {"b", "<i4", {6}, data}, {"a", "<u4", {6}, data}});
  EXPECT_NE(twice.find("two arrays are named 'a'"), std::string::npos) << twice;
}

TEST(npy_encode, header_from_a_descr_string) {
  const std::vector<std::int64_t> shape{3, 4};
  EXPECT_EQ(npy::encode_header("<i4", shape), npy::encode_header(npy::dtype::int32, shape));
  EXPECT_EQ(npy::encode_header("<f8", shape, true), npy::encode_header(npy::dtype::float64, shape, true));
  const std::vector<std::byte> header = npy::encode_header("<U12", shape);
  EXPECT_EQ(header.size() % 64, 0u);
  const std::string text(reinterpret_cast<const char*>(header.data()) + 10, header.size() - 10);
  EXPECT_EQ(text.rfind("{'descr': '<U12', 'fortran_order': False, 'shape': (3, 4), }", 0), 0u) << text;
  EXPECT_EQ(npy::item_size_of("<U12"), 48u);
  EXPECT_EQ(npy::item_size_of("|S5"), 5u);
  EXPECT_EQ(npy::item_size_of("|u1"), 1u);
  EXPECT_EQ(npy::item_size_of(">c16"), 16u);
  EXPECT_EQ(npy::item_size_of("|b1"), 1u);
  EXPECT_EQ(npy::item_size_of("=f2"), 2u);
  EXPECT_THROW(npy::item_size_of("<i4 "), npy::error);
  EXPECT_THROW(npy::item_size_of(""), npy::error);
}
