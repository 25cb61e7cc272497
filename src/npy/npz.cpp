// multireduce::npy -- .npz archives with libzip; see npz.hpp.
#include "npy/npz.hpp"

#include <zip.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "npy/npy.hpp"

namespace multireduce::npy {
namespace {

[[noreturn]] void fail(const std::string& what) { throw error("npy::encode_npz: " + what); }

struct source_free {
  void operator()(zip_source_t* s) const { zip_source_free(s); }
};
struct archive_discard {
  void operator()(zip_t* a) const { zip_discard(a); }
};
using source_ptr = std::unique_ptr<zip_source_t, source_free>;
using archive_ptr = std::unique_ptr<zip_t, archive_discard>;

/// An empty ZIP archive: the end of central directory record alone, what Python's zipfile writes
/// for no members (libzip writes no file at all for an archive without members).
std::vector<std::byte> empty_archive() {
  std::vector<std::byte> out(22, std::byte{0});
  out[0] = std::byte{'P'};
  out[1] = std::byte{'K'};
  out[2] = std::byte{5};
  out[3] = std::byte{6};
  return out;
}

/// 1980-01-01 00:00 local time: libzip stores a member's time as local time, so this time_t is the
/// one that becomes the DOS date 1980-01-01 00:00 in every time zone.
std::time_t earliest_zip_time() {
  std::tm t{};
  t.tm_year = 80;
  t.tm_mday = 1;
  t.tm_isdst = -1;
  return std::mktime(&t);
}

/// Adds one member, NAME.npy: the header, then the caller's data, both read in place at zip_close.
void add_member(zip_t* archive, const npz_entry& entry, const std::vector<std::byte>& header, std::time_t mtime) {
  // libzip reads through non-const pointers but writes nothing into a buffer it does not own.
  zip_buffer_fragment_t fragments[2] = {
      {reinterpret_cast<zip_uint8_t*>(const_cast<std::byte*>(header.data())), header.size()},
      {reinterpret_cast<zip_uint8_t*>(const_cast<std::byte*>(entry.data.data())), entry.data.size()},
  };
  source_ptr member(zip_source_buffer_fragment(archive, fragments, entry.data.empty() ? 1 : 2, 0));
  if (!member) fail(std::string("libzip: ") + zip_strerror(archive));
  const std::string file_name = entry.name + ".npy";
  const zip_int64_t index = zip_file_add(archive, file_name.c_str(), member.get(), ZIP_FL_ENC_UTF_8);
  if (index < 0) {
    if (zip_error_code_zip(zip_get_error(archive)) == ZIP_ER_EXISTS) fail("two arrays are named '" + entry.name + "'");
    fail("array '" + entry.name + "': libzip: " + zip_strerror(archive));
  }
  member.release();  // the archive owns it now
  const auto i = static_cast<zip_uint64_t>(index);
  if (zip_set_file_compression(archive, i, ZIP_CM_STORE, 0) != 0 || zip_file_set_mtime(archive, i, mtime, 0) != 0)
    fail("array '" + entry.name + "': libzip: " + zip_strerror(archive));
}

/// @return the .npy header of an entry, after checking everything about it that libzip does not.
std::vector<std::byte> checked_header(const npz_entry& entry) {
  if (entry.name.empty()) fail("an array has an empty name");
  if (const auto nul = entry.name.find('\0'); nul != std::string::npos)
    fail("array name '" + entry.name.substr(0, nul) + "\\0...' holds a NUL byte");
  std::vector<std::byte> header;
  try {
    header = encode_header(entry.descr, entry.shape);  // refuses bad descrs and shapes
  } catch (const error& e) {
    fail("array '" + entry.name + "': " + e.what());
  }
  std::uint64_t bytes = item_size_of(entry.descr);
  for (const std::int64_t d : entry.shape) bytes *= static_cast<std::uint64_t>(d);  // fits: encode_header checked
  if (entry.data.size() != bytes)
    fail("array '" + entry.name + "': shape and descr '" + entry.descr + "' need " + std::to_string(bytes) +
         " bytes, the data has " + std::to_string(entry.data.size()));
  return header;
}

/// Decodes one UTF-8 string into code points; throws std::invalid_argument for invalid UTF-8
/// (overlong forms, surrogates, past U+10FFFF, cut sequences, stray continuation bytes).
std::vector<char32_t> decode_utf8(const std::string& s, std::size_t index) {
  const auto invalid = [&](std::size_t at) {
    throw std::invalid_argument("npy::string_entry: string " + std::to_string(index) + " is not valid UTF-8 (byte " +
                                std::to_string(at) + ")");
  };
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    std::size_t length = 0;
    char32_t c = 0;
    char32_t minimum = 0;
    if (lead < 0x80) {
      length = 1, c = lead;
    } else if ((lead & 0xe0) == 0xc0) {
      length = 2, c = lead & 0x1f, minimum = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3, c = lead & 0x0f, minimum = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4, c = lead & 0x07, minimum = 0x10000;
    } else {
      invalid(i);
    }
    if (s.size() - i < length) invalid(i);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xc0) != 0x80) invalid(i + k);
      c = (c << 6) | (next & 0x3f);
    }
    if (c < minimum || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) invalid(i);
    out.push_back(c);
    i += length;
  }
  return out;
}

}  // namespace

std::vector<std::byte> encode_npz(std::span<const npz_entry> entries) {
  // Every header first: bad names, descrs and shapes are refused before libzip is involved, and
  // the headers stay alive until zip_close reads them.
  std::vector<std::vector<std::byte>> headers;
  headers.reserve(entries.size());
  for (const npz_entry& entry : entries) headers.push_back(checked_header(entry));
  if (entries.empty()) return empty_archive();

  zip_error_t error;
  zip_error_init(&error);
  source_ptr buffer(zip_source_buffer_create(nullptr, 0, 0, &error));
  archive_ptr archive;
  if (buffer) archive.reset(zip_open_from_source(buffer.get(), ZIP_TRUNCATE, &error));
  // An open archive owns the reference the buffer was made with; one more is ours (`buffer`), to
  // read the archive back after zip_close.
  if (archive) zip_source_keep(buffer.get());
  const std::string why = archive ? "" : zip_error_strerror(&error);
  zip_error_fini(&error);
  if (!archive) fail("libzip cannot make an archive in memory: " + why);

  const std::time_t mtime = earliest_zip_time();
  for (std::size_t i = 0; i < entries.size(); ++i) add_member(archive.get(), entries[i], headers[i], mtime);
  if (zip_close(archive.get()) != 0) fail(std::string("libzip: ") + zip_strerror(archive.get()));
  archive.release();  // zip_close freed it

  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_source_stat(buffer.get(), &stat) != 0 || (stat.valid & ZIP_STAT_SIZE) == 0 ||
      zip_source_open(buffer.get()) != 0)
    fail(std::string("libzip cannot read the archive back: ") + zip_error_strerror(zip_source_error(buffer.get())));
  std::vector<std::byte> out(static_cast<std::size_t>(stat.size));
  const zip_int64_t read = zip_source_read(buffer.get(), out.data(), out.size());
  zip_source_close(buffer.get());
  if (read < 0 || static_cast<zip_uint64_t>(read) != stat.size)
    fail(std::string("libzip cannot read the archive back: ") + zip_error_strerror(zip_source_error(buffer.get())));
  return out;
}

npz_entry string_entry(std::string name, std::span<const std::string> values, std::vector<std::byte>& storage) {
  std::vector<std::vector<char32_t>> decoded;
  decoded.reserve(values.size());
  std::size_t longest = 1;  // NumPy's smallest string dtype is <U1
  for (std::size_t i = 0; i < values.size(); ++i) {
    decoded.push_back(decode_utf8(values[i], i));
    longest = std::max(longest, decoded.back().size());
  }
  storage.assign(values.size() * longest * 4, std::byte{0});
  std::size_t at = 0;
  for (const auto& code_points : decoded) {
    for (std::size_t k = 0; k < longest; ++k) {
      const char32_t c = k < code_points.size() ? code_points[k] : 0;
      for (int b = 0; b < 4; ++b) storage[at++] = static_cast<std::byte>((c >> (8 * b)) & 0xff);  // little-endian
    }
  }
  return {std::move(name), "<U" + std::to_string(longest), {static_cast<std::int64_t>(values.size())}, storage};
}

}  // namespace multireduce::npy
