// multireduce::npy -- read and write NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// What is accepted (everything else throws npy::error with a message naming the problem):
//  - numeric dtypes i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 with byte order '<', '>', '|', '=' or none;
//    big-endian data is byte-swapped to native order on reading;
//  - C-order arrays only (`fortran_order: True` is rejected, also for 1-d arrays);
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

/// Parses the bytes of a whole .npy file. `name_for_errors` starts every error message.
array parse(std::span<const std::byte> file_bytes, std::string_view name_for_errors);

/// Reads and parses a .npy file; errors name the path (a missing file says so).
array read(const std::filesystem::path& path);

/// @return the bytes of a .npy file holding count(shape) elements of `type` read from `data`
///         (native order): version 1.0 (2.0 if the header needs it), little-endian descr, header
///         padded with spaces and a newline so the data starts at a multiple of 64 bytes,
///         byte for byte what numpy.save writes.
std::vector<std::byte> encode(dtype type, std::span<const std::int64_t> shape, const void* data);

/// Writes `bytes` to `path` atomically (a temporary file in the same directory, then a rename): a
/// failure leaves no half-written file. Throws error naming the path.
void write_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes);

/// Writes encode(type, shape, data) to `path` atomically: a temporary file in the same
/// directory (".<name>.tmp-<pid>-<n>"), fsync'ed, then renamed over `path` (a symlink at `path`
/// is replaced, not followed). On any failure the temporary is removed, `path` is untouched and
/// error is thrown.
void write(const std::filesystem::path& path, dtype type, std::span<const std::int64_t> shape, const void* data);
/// Writes `a` (see the overload above).
void write(const std::filesystem::path& path, const array& a);

}  // namespace multireduce::npy
