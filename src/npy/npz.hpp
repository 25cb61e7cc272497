// multireduce::npy -- write NumPy .npz files: a ZIP archive of .npy files, one per named array,
// as numpy.savez writes them (stored, not compressed), for numpy.load.
//
// The archive is built in memory with libzip: each member is the .npy header (npy.hpp's
// encode_header) followed by the caller's bytes, read in place; the result is the whole archive,
// ready for the CLI's output_file. libzip writes a member's ZIP64 fields where its size or offset
// needs them (4 GiB and more; numpy.savez writes them for every member, numpy.load reads both
// forms). Every member's time is 1980-01-01 00:00 (the earliest a
// ZIP archive holds), so the same arrays give the same bytes on every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace multireduce::npy {

/// One array of an .npz: stored as NAME.npy. descr is NumPy's dtype string ("<i4", "<i8", "|u1",
/// "<f4", "<U12"; see item_size_of in npy.hpp); data holds the elements in C order, in the byte
/// order descr names, count(shape) * item_size_of(descr) bytes.
struct npz_entry {
  std::string name;
  std::string descr;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> data;
};

/// The bytes of an uncompressed .npz (what numpy.savez writes: a ZIP archive of .npy files, stored,
/// ZIP64 where sizes need it), for numpy.load. Members are written in the order given; no entries
/// give an empty archive (22 bytes, as numpy.savez() writes).
/// Throws npy::error for an entry it cannot write -- an empty name, a name with a NUL byte, two
/// entries of the same name, a descr item_size_of refuses, a negative shape, data of another size
/// than the shape needs -- and when libzip fails (out of memory). Memory: the archive is built in
/// libzip's buffer and then copied out, so twice the archive's size at the peak.
std::vector<std::byte> encode_npz(std::span<const npz_entry> entries);

/// NumPy's "<U{n}" array of strings (UTF-32LE, n = the longest name's code points; UTF-8 input
/// decoded, invalid UTF-8 an std::invalid_argument).
/// @param name the entry's name
/// @param values the strings, UTF-8; n is at least 1, as NumPy makes it (np.array([""]) is "<U1"),
///        and shorter strings are padded with NUL code points (NumPy drops trailing NULs when it
///        reads them, so a string ending in U+0000 does not come back whole)
/// @param storage receives the UTF-32LE data; the entry's data points into it, so keep it alive and
///        unchanged while the entry is used (one storage per entry)
/// @return the entry, shape (values.size(),)
npz_entry string_entry(std::string name, std::span<const std::string> values, std::vector<std::byte>& storage);

}  // namespace multireduce::npy
