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

namespace multireduce::npy {

/// Element types a .npy file may hold here (NumPy's names).
enum class dtype { int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64 };

/// @return the size of one element in bytes (1, 2, 4 or 8).
std::size_t size_of(dtype type);
/// @return NumPy's name: "int8" ... "float64".
std::string_view name_of(dtype type);
/// The same as name_of, for symmetry with the project's other enums.
inline std::string_view to_string(dtype type) { return name_of(type); }
/// @return the dtype named exactly `name` ("float32", ...), or nullopt.
std::optional<dtype> parse_dtype_name(std::string_view name);
/// @return the little-endian descr NumPy writes for `type`: "<f4", "|u1", ...
std::string_view descr_of(dtype type);

/// The bits of an IEEE binary16 value; the element type of float16 arrays.
struct float16_bits {
  std::uint16_t bits;
};
/// @return the float16 value widened to float (exact; NaN payloads are kept).
float to_float(float16_bits h);
/// @return x rounded to the nearest float16 (ties to even; overflow to infinity; NaN stays NaN).
float16_bits to_float16(float x);

/// Every failure: a message that names the file and the problem.
struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The dtype stored as elements of C++ type T: integers by size and signedness, float, double,
/// float16_bits. Other types do not compile.
template <class T>
consteval dtype dtype_of() {
  using U = std::remove_cv_t<T>;
  static_assert(!std::is_same_v<U, bool>, "npy has no bool dtype: use std::uint8_t");
  static_assert(std::is_integral_v<U> || std::is_same_v<U, float> || std::is_same_v<U, double> ||
                    std::is_same_v<U, float16_bits>,
                "T must be an integer of 1, 2, 4 or 8 bytes, float, double or npy::float16_bits");
  if constexpr (std::is_same_v<U, float>) {
    return dtype::float32;
  } else if constexpr (std::is_same_v<U, double>) {
    return dtype::float64;
  } else if constexpr (std::is_same_v<U, float16_bits>) {
    return dtype::float16;
  } else {
    static_assert(sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 || sizeof(U) == 8,
                  "T must be an integer of 1, 2, 4 or 8 bytes");
    constexpr bool s = std::is_signed_v<U>;
    if constexpr (sizeof(U) == 1) return s ? dtype::int8 : dtype::uint8;
    else if constexpr (sizeof(U) == 2) return s ? dtype::int16 : dtype::uint16;
    else if constexpr (sizeof(U) == 4) return s ? dtype::int32 : dtype::uint32;
    else return s ? dtype::int64 : dtype::uint64;
  }
}

/// Calls f(T{}) with T the C++ element type of `type` (float16_bits for float16): the one place
/// that maps a run-time dtype to a type.
template <class F>
decltype(auto) visit(dtype type, F&& f) {
  switch (type) {
    case dtype::int8: return f(std::int8_t{});
    case dtype::int16: return f(std::int16_t{});
    case dtype::int32: return f(std::int32_t{});
    case dtype::int64: return f(std::int64_t{});
    case dtype::uint8: return f(std::uint8_t{});
    case dtype::uint16: return f(std::uint16_t{});
    case dtype::uint32: return f(std::uint32_t{});
    case dtype::uint64: return f(std::uint64_t{});
    case dtype::float16: return f(float16_bits{});
    case dtype::float32: return f(float{});
    case dtype::float64: return f(double{});
  }
  throw std::logic_error("npy::visit: unknown dtype");
}

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
