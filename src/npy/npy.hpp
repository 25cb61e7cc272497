// multireduce::npy -- read and write NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// What is accepted (everything else throws npy::error with a message naming the problem):
//  - numeric dtypes i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 with byte order '<', '>', '|', '=' or none;
//    big-endian data is byte-swapped to native order on reading;
//  - C-order and Fortran-order arrays (parse and read give C order: a Fortran-order array's data,
//    the C-order data of its transpose, is transposed back; input_file.hpp maps axes instead);
//  - the header is parsed as a Python literal: any key order, any whitespace, trailing commas,
//    `(n,)` and `()` shapes; exactly the keys 'descr', 'fortran_order' and 'shape', each once.
// Deliberately rejected:
//  - bool ('|b1'): there is no bool dtype here; convert with a.astype(np.uint8);
//  - bytes after the array data: a .npy file holds exactly one array, so extra bytes mean the
//    header's shape and the data disagree (or two arrays were appended to one file);
//  - Python 2 headers with `L` suffixes (NumPy wrote those before 2012).
// Hostile input is safe: every size is checked against the file length before anything is
// allocated, header parsing is linear in its length with bounded nesting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "runtime/dtype.hpp"

namespace multireduce::npy {

// The element types and their names are the runtime's (runtime/dtype.hpp).
using runtime::dtype;
using runtime::dtype_of;
using runtime::float16_bits;
using runtime::name_of;
using runtime::parse_dtype_name;
using runtime::size_of;
using runtime::to_float;
using runtime::to_float16;
using runtime::to_string;
using runtime::visit;

/// @return the little-endian descr NumPy writes for `type`: "<f4", "|u1", ...
std::string_view descr_of(dtype type);

/// Every failure: a message that names the file and the problem.
struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a .npy header says, and where the data starts.
struct header {
  dtype type = dtype::float32;
  bool swap = false;                ///< the data is in the other byte order than this machine's
  bool fortran_order = false;       ///< the data is the C-order data of the reversed shape
  std::vector<std::int64_t> shape;  ///< () for a 0-d array (one element)
  std::size_t data_offset = 0;      ///< bytes before the data: magic, version, length, header

  /// @return the product of shape (1 for 0-d).
  std::int64_t count() const;
  /// @return count() * size_of(type).
  std::int64_t data_bytes() const;
};

/// The bytes a header reader needs first: magic, version and the header's length field.
inline constexpr std::size_t header_prefix_bytes = 12;

/// @return the header's total size (its data_offset) from the first bytes of a file (at least
///         min(header_prefix_bytes, the file's size) of them); throws error for a file that is not
///         a .npy file, an unsupported version or a header too long to be a numeric array's.
std::size_t header_size(std::span<const std::byte> first_bytes, std::string_view name_for_errors);

/// Parses the header at the start of `bytes`, which hold at least header_size() bytes.
header parse_header(std::span<const std::byte> bytes, std::string_view name_for_errors);

/// The C-order data of an array of `shape` from its Fortran-order data (the C-order data of the
/// reversed shape), elements of `element_size` bytes.
std::vector<std::byte> fortran_to_c_order(std::span<const std::byte> data, std::span<const std::int64_t> shape,
                                          std::size_t element_size);

/// An n-dimensional array as read from a .npy file.
struct array {
  dtype type = dtype::float32;
  std::vector<std::int64_t> shape;  ///< () for a 0-d array (one element)
  std::vector<std::byte> data;      ///< native byte order, C order, count() * size_of(type) bytes

  /// @return the product of shape (1 for 0-d); throws error on a negative or overflowing shape.
  std::int64_t count() const;

  /// @return the elements as T; throws error unless dtype_of<T>() == type and data has
  ///         exactly count() elements.
  template <class T>
  std::span<const T> values() const {
    check_access(dtype_of<T>());
    return {reinterpret_cast<const T*>(data.data()), data.size() / sizeof(T)};
  }
  template <class T>
  std::span<T> values() {
    check_access(dtype_of<T>());
    return {reinterpret_cast<T*>(data.data()), data.size() / sizeof(T)};
  }

 private:
  void check_access(dtype requested) const;
};

/// Parses the bytes of a whole .npy file (C order, native byte order). `name_for_errors` starts
/// every error message.
array parse(std::span<const std::byte> file_bytes, std::string_view name_for_errors);

/// Reads and parses a small .npy file whole (offsets, keypoints, descriptors); errors name the
/// path (a missing file says so). Big inputs are read with input_file.
array read(const std::filesystem::path& path);

/// @return the header NumPy writes for an array of `type` and `shape`: version 1.0 (2.0 if the header
///         needs it), little-endian descr, padded with spaces and a newline so that the data
///         starts at a multiple of 64 bytes. Throws error for a negative or overflowing shape.
std::vector<std::byte> encode_header(dtype type, std::span<const std::int64_t> shape, bool fortran_order = false);

/// @return the bytes of one element of NumPy's dtype string `descr`: a byte order ('<', '>', '|', '='),
///         a kind and a size ("<i4": 4, "|u1": 1, "<U12": 48, UTF-32 code points). Throws error for
///         anything else, a size the kind does not have ("<i3") or a size of 2**31 or more.
std::size_t item_size_of(std::string_view descr);

/// encode_header for any descr that item_size_of accepts, strings ("<U12", "|S5") among them: the
/// descr is written as given.
std::vector<std::byte> encode_header(std::string_view descr, std::span<const std::int64_t> shape,
                                     bool fortran_order = false);

/// @return the bytes of a .npy file holding count(shape) elements of `type` read from `data`
///         (native order, C order): encode_header and the data, byte for byte what numpy.save writes.
std::vector<std::byte> encode(dtype type, std::span<const std::int64_t> shape, const void* data);

}  // namespace multireduce::npy
