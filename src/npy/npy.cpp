// multireduce::npy -- see npy.hpp for what is accepted and why.
// No fmt here on purpose: tests/fuzz/run_fuzz.cmake compiles this file alone with clang and
// libFuzzer, and a dependency-free file keeps that build trivial.
#include "npy/npy.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <utility>

namespace multireduce::npy {
namespace {

constexpr std::string_view magic = "\x93NUMPY";
constexpr std::size_t array_align = 64;           // numpy.lib.format.ARRAY_ALIGN
constexpr std::size_t growth_axis_max_digits = 21;  // numpy.lib.format.GROWTH_AXIS_MAX_DIGITS
// A numeric array's header is under 2 KiB (at most 64 dimensions); NumPy itself refuses headers
// over 10,000 characters by default. The cap bounds the parser's memory on hostile files.
constexpr std::size_t max_header_bytes = std::size_t{1} << 20;
constexpr int max_nesting = 32;

struct descr_info_entry {
  dtype type;
  std::string_view descr;  // what numpy.save writes, little-endian
};
constexpr std::array<descr_info_entry, 11> descrs{{
    {dtype::int8, "|i1"},    {dtype::int16, "<i2"},   {dtype::int32, "<i4"},   {dtype::int64, "<i8"},
    {dtype::uint8, "|u1"},   {dtype::uint16, "<u2"},  {dtype::uint32, "<u4"},  {dtype::uint64, "<u8"},
    {dtype::float16, "<f2"}, {dtype::float32, "<f4"}, {dtype::float64, "<f8"},
}};

/// Text from a file, made safe to print: printable ASCII kept, the rest as \xNN, long text cut.
std::string printable(std::string_view s, std::size_t max_chars = 100) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

[[noreturn]] void fail(std::string_view name, const std::string& what) {
  throw error(std::string(name) + ": " + what);
}

std::string shape_repr(std::span<const std::int64_t> shape) {  // Python's repr of the tuple
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

/// Bytes for count(shape) elements of `size` bytes, or nullopt past int64 (NumPy's rule: zero
/// dimensions are skipped, so (2**62, 2**62, 0) is too big as well).
std::optional<std::int64_t> checked_bytes(std::span<const std::int64_t> shape, std::size_t size) {
  std::int64_t bytes = static_cast<std::int64_t>(size);
  bool zero = false;
  for (const std::int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      zero = true;
      continue;
    }
    if (bytes > std::numeric_limits<std::int64_t>::max() / d) return std::nullopt;
    bytes *= d;
  }
  return zero ? 0 : bytes;
}

void swap_elements(std::span<std::byte> data, std::size_t size) {
  if (size == 1) return;
  for (std::size_t i = 0; i + size <= data.size(); i += size) std::reverse(&data[i], &data[i] + size);
}

// ---- the header: a Python dict literal ------------------------------------------------------------

struct literal {
  enum class kind { string, integer, boolean, none, tuple, list, dict };
  kind k = kind::none;
  std::string_view source;  // the literal as written, for messages
  std::string_view text;    // string: what is between the quotes (escapes not decoded)
  std::int64_t integer = 0;
  bool fits = true;  // integer: false beyond int64
  bool truth = false;
  std::vector<literal> items;  // tuple, list; dict: key, value, key, value, ...
};

class header_parser {
 public:
  header_parser(std::string_view header, std::string_view name) : s_(header), name_(name) {}

  literal parse_dict() {
    skip_space();
    if (at_end() || s_[pos_] != '{')
      fail(name_, "header is not a Python dict literal: '" + printable(s_) + "'");
    literal d = value(0);
    skip_space();
    if (!at_end()) malformed("unexpected text after the dict");
    return d;
  }

 private:
  bool at_end() const { return pos_ >= s_.size(); }

  void skip_space() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r' ||
                         s_[pos_] == '\f' || s_[pos_] == '\v'))
      ++pos_;
  }

  [[noreturn]] void malformed(const std::string& what) const {
    fail(name_, "malformed header: " + what + " at offset " + std::to_string(pos_) + " of '" + printable(s_) + "'");
  }

  literal value(int depth) {
    if (depth > max_nesting) malformed("nesting deeper than " + std::to_string(max_nesting));
    skip_space();
    if (at_end()) malformed("header ends where a value was expected (truncated?)");
    const std::size_t start = pos_;
    literal v;
    const char c = s_[pos_];
    if (c == '{' || c == '(' || c == '[') {
      v = sequence(depth, c);
    } else if (c == '\'' || c == '"') {
      v = string();
    } else if (c == '-' || c == '+' || (c >= '0' && c <= '9')) {
      v = integer();
    } else if (is_name_char(c)) {
      std::size_t end = pos_;
      while (end < s_.size() && is_name_char(s_[end])) ++end;
      const std::string_view word = s_.substr(pos_, end - pos_);
      if (word == "True" || word == "False") {
        v.k = literal::kind::boolean;
        v.truth = word == "True";
      } else if (word == "None") {
        v.k = literal::kind::none;
      } else {
        malformed("unexpected '" + printable(word, 40) + "'");
      }
      pos_ = end;
    } else {
      malformed("unexpected character '" + printable(s_.substr(pos_, 1)) + "'");
    }
    if (v.source.empty()) v.source = s_.substr(start, pos_ - start);
    return v;
  }

  static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  literal string() {
    literal v;
    v.k = literal::kind::string;
    const char quote = s_[pos_++];
    const std::size_t start = pos_;
    while (!at_end() && s_[pos_] != quote) {
      if (s_[pos_] == '\n') malformed("newline inside a string");
      pos_ += s_[pos_] == '\\' ? 2 : 1;
    }
    if (at_end()) {
      pos_ = s_.size();
      malformed("unterminated string");
    }
    v.text = s_.substr(start, pos_ - start);
    ++pos_;
    return v;
  }

  literal integer() {
    literal v;
    v.k = literal::kind::integer;
    bool negative = false;
    if (s_[pos_] == '-' || s_[pos_] == '+') negative = s_[pos_++] == '-';
    if (at_end() || s_[pos_] < '0' || s_[pos_] > '9') malformed("expected digits after the sign");
    std::uint64_t magnitude = 0;
    for (; !at_end() && s_[pos_] >= '0' && s_[pos_] <= '9'; ++pos_) {
      const auto digit = static_cast<std::uint64_t>(s_[pos_] - '0');
      if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) v.fits = false;
      else magnitude = magnitude * 10 + digit;
    }
    if (!at_end() && is_name_char(s_[pos_])) malformed("unexpected character after a number");
    constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (!v.fits || magnitude > max + (negative ? 1 : 0)) {
      v.fits = false;
    } else if (negative) {
      v.integer = magnitude == max + 1 ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(magnitude);
    } else {
      v.integer = static_cast<std::int64_t>(magnitude);
    }
    return v;
  }

  // {k: v, ...}, (a, b, ...) or [a, b, ...], trailing comma allowed. "(x)" is x, not a tuple.
  literal sequence(int depth, char open) {
    const std::size_t start = pos_++;
    const char close = open == '{' ? '}' : open == '(' ? ')' : ']';
    literal v;
    v.k = open == '{' ? literal::kind::dict : open == '(' ? literal::kind::tuple : literal::kind::list;
    bool comma = false;
    for (;;) {
      skip_space();
      if (at_end()) malformed(std::string("header ends before the closing '") + close + "' (truncated?)");
      if (s_[pos_] == close) break;
      v.items.push_back(value(depth + 1));
      if (open == '{') {
        if (v.items.back().k != literal::kind::string) malformed("dict key is not a string");
        skip_space();
        if (at_end() || s_[pos_] != ':') malformed("expected ':' after a dict key");
        ++pos_;
        v.items.push_back(value(depth + 1));
      }
      skip_space();
      if (at_end()) malformed(std::string("header ends before the closing '") + close + "' (truncated?)");
      if (s_[pos_] == ',') {
        comma = true;
        ++pos_;
        continue;
      }
      if (s_[pos_] != close) malformed(std::string("expected ',' or '") + close + "'");
    }
    ++pos_;
    if (open == '(' && v.items.size() == 1 && !comma) {
      literal inner = std::move(v.items.front());
      return inner;
    }
    v.source = s_.substr(start, pos_ - start);
    return v;
  }

  std::string_view s_;
  std::string_view name_;
  std::size_t pos_ = 0;
};

struct descr_info {
  dtype type;
  bool swap;  // stored in the other byte order than this machine's
};

descr_info parse_descr(const literal& d, std::string_view name) {
  if (d.k == literal::kind::list)
    fail(name, "unsupported dtype '" + printable(d.source) + "' (structured dtypes are not supported)");
  if (d.k != literal::kind::string)
    fail(name, "unsupported dtype '" + printable(d.source) + "' (descr is not a dtype string)");
  std::string_view s = d.text;
  char order = '=';
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '='))
    order = s[0], s.remove_prefix(1);
  if (s == "b1")
    fail(name, "unsupported dtype '" + printable(d.text) + "' (bool): convert with a.astype(np.uint8) before saving");
  if (s == "O" || s == "O8" || s == "O4")
    fail(name, "unsupported dtype '" + printable(d.text) + "' (Python objects)");
  static constexpr std::array<std::pair<std::string_view, dtype>, 11> kinds{{
      {"i1", dtype::int8},
      {"i2", dtype::int16},
      {"i4", dtype::int32},
      {"i8", dtype::int64},
      {"u1", dtype::uint8},
      {"u2", dtype::uint16},
      {"u4", dtype::uint32},
      {"u8", dtype::uint64},
      {"f2", dtype::float16},
      {"f4", dtype::float32},
      {"f8", dtype::float64},
  }};
  for (const auto& [code, type] : kinds) {
    if (s != code) continue;
    const bool little = std::endian::native == std::endian::little;
    return {type, (order == '<' && !little) || (order == '>' && little)};
  }
  fail(name, "unsupported dtype '" + printable(d.text) +
                 "' (supported: int8..int64, uint8..uint64, float16, float32, float64)");
}

std::vector<std::int64_t> parse_shape(const literal& s, std::string_view name) {
  if (s.k != literal::kind::tuple) fail(name, "shape is not a tuple: '" + printable(s.source) + "'");
  std::vector<std::int64_t> shape;
  shape.reserve(s.items.size());
  for (const literal& d : s.items) {
    if (d.k != literal::kind::integer)
      fail(name, "shape is not a tuple of integers: '" + printable(s.source) + "'");
    if (!d.fits) fail(name, "shape dimension " + printable(d.source) + " is too large in '" + printable(s.source) + "'");
    if (d.integer < 0) fail(name, "negative dimension " + std::to_string(d.integer) + " in shape " + printable(s.source));
    shape.push_back(d.integer);
  }
  return shape;
}

std::uint32_t read_le(const std::byte* p, std::size_t n) {
  std::uint32_t v = 0;
  for (std::size_t i = n; i-- > 0;) v = (v << 8) | std::to_integer<std::uint32_t>(p[i]);
  return v;
}

std::vector<std::byte> header_named(std::string_view name, std::string_view descr, std::size_t item_size,
                                    std::span<const std::int64_t> shape, bool fortran_order) {
  for (const std::int64_t d : shape)
    if (d < 0) fail(name, "cannot write shape " + shape_repr(shape) + ": negative dimension");
  const auto bytes = checked_bytes(shape, item_size);
  if (!bytes || static_cast<std::uint64_t>(*bytes) > std::numeric_limits<std::size_t>::max() / 2)
    fail(name, "cannot write shape " + shape_repr(shape) + ": too many elements");

  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': " +
                       (fortran_order ? "True" : "False") + ", 'shape': " + shape_repr(shape) + ", }";
  if (!shape.empty()) {  // NumPy's spare room for growing the first axis in place
    const std::size_t digits = std::to_string(shape.front()).size();
    if (digits < growth_axis_max_digits) header.append(growth_axis_max_digits - digits, ' ');
  }
  std::size_t prefix = magic.size() + 2 + 2;  // magic, version, uint16 length
  const std::size_t hlen = header.size() + 1;  // + the final newline
  std::size_t padded = hlen + array_align - (prefix + hlen) % array_align;
  char major = 1;
  if (padded > 0xffff) {
    major = 2;
    prefix = magic.size() + 2 + 4;  // uint32 length
    padded = hlen + array_align - (prefix + hlen) % array_align;
  }
  header.append(padded - hlen, ' ');
  header += '\n';

  std::vector<std::byte> out;
  out.reserve(prefix + padded);
  auto put = [&](std::string_view s) {
    for (const char c : s) out.push_back(static_cast<std::byte>(c));
  };
  put(magic);
  out.push_back(static_cast<std::byte>(major));
  out.push_back(std::byte{0});
  for (std::size_t i = 0; i < prefix - magic.size() - 2; ++i)  // the header length, little-endian
    out.push_back(static_cast<std::byte>((padded >> (8 * i)) & 0xff));
  put(header);
  return out;
}

}  // namespace

std::string_view descr_of(dtype type) {
  for (const auto& d : descrs)
    if (d.type == type) return d.descr;
  throw error("npy: invalid dtype value " + std::to_string(static_cast<int>(type)));
}

std::int64_t array::count() const {
  const auto n = checked_bytes(shape, 1);
  if (!n) throw error("npy::array: shape " + shape_repr(shape) + " is negative or too large");
  return *n;
}

void array::check_access(dtype requested) const {
  if (requested != type)
    throw error("npy::array: elements are " + std::string(name_of(type)) + ", not " + std::string(name_of(requested)));
  if (static_cast<std::uint64_t>(count()) * size_of(type) != data.size())
    throw error("npy::array: " + std::to_string(data.size()) + " bytes of data for shape " + shape_repr(shape) +
                " of " + std::string(name_of(type)));
}

std::int64_t header::count() const {
  const auto n = checked_bytes(shape, 1);
  if (!n) throw error("npy::header: shape " + shape_repr(shape) + " is negative or too large");
  return *n;
}

std::int64_t header::data_bytes() const {
  const auto n = checked_bytes(shape, size_of(type));
  if (!n) throw error("npy::header: shape " + shape_repr(shape) + " is too large (more than 2^63 bytes)");
  return *n;
}

std::size_t header_size(std::span<const std::byte> file, std::string_view name) {
  const auto bytes_text = [&](std::size_t offset, std::size_t n) {
    return std::string_view(reinterpret_cast<const char*>(file.data()) + offset, n);
  };
  const std::size_t size = file.size();
  if (size == 0) fail(name, "empty file, not a .npy file");
  if (bytes_text(0, std::min(size, magic.size())) != magic.substr(0, std::min(size, magic.size())))
    fail(name, "not a .npy file (bad magic: starts with '" + printable(bytes_text(0, std::min(size, magic.size()))) +
                   "', expected '\\x93NUMPY')");
  if (size < magic.size() + 2) fail(name, "truncated header: the file ends after " + std::to_string(size) + " bytes");
  const auto major = std::to_integer<unsigned>(file[6]);
  const auto minor = std::to_integer<unsigned>(file[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t header_start = magic.size() + 2 + length_bytes;
  if (size < header_start) fail(name, "truncated header: the file ends after " + std::to_string(size) + " bytes");
  const std::size_t header_length = read_le(file.data() + magic.size() + 2, length_bytes);
  if (header_length > max_header_bytes)
    fail(name, "header of " + std::to_string(header_length) + " bytes is too long for a numeric array (limit " +
                   std::to_string(max_header_bytes) + ")");
  return header_start + header_length;
}

header parse_header(std::span<const std::byte> file, std::string_view name) {
  const std::size_t total = header_size(file, name);
  const std::size_t header_start = file[6] == std::byte{1} ? 10 : 12;
  if (total > file.size())
    fail(name, "truncated header: it claims " + std::to_string(total - header_start) + " bytes, the file has " +
                   std::to_string(file.size() - header_start) + " after the length field");
  const std::string_view text(reinterpret_cast<const char*>(file.data()) + header_start, total - header_start);
  const literal dict = header_parser(text, name).parse_dict();
  const literal* descr = nullptr;
  const literal* fortran_order = nullptr;
  const literal* shape = nullptr;
  for (std::size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const std::string_view key = dict.items[i].text;
    const literal** slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran_order
                           : key == "shape"         ? &shape
                                                    : nullptr;
    if (slot == nullptr)
      fail(name, "unexpected key '" + printable(key) + "' in header (expected 'descr', 'fortran_order', 'shape')");
    if (*slot != nullptr) fail(name, "duplicate key '" + printable(key) + "' in header");
    *slot = &dict.items[i + 1];
  }
  if (descr == nullptr) fail(name, "header has no 'descr' key");
  if (fortran_order == nullptr) fail(name, "header has no 'fortran_order' key");
  if (shape == nullptr) fail(name, "header has no 'shape' key");

  const descr_info d = parse_descr(*descr, name);
  if (fortran_order->k != literal::kind::boolean)
    fail(name, "fortran_order is not True or False: '" + printable(fortran_order->source) + "'");
  header h;
  h.type = d.type;
  h.swap = d.swap;
  h.fortran_order = fortran_order->truth;
  h.shape = parse_shape(*shape, name);
  h.data_offset = total;
  if (!checked_bytes(h.shape, size_of(h.type)))
    fail(name, "shape " + shape_repr(h.shape) + " of " + std::string(name_of(h.type)) +
                   " is too large (more than 2^63 bytes)");
  return h;
}

std::vector<std::byte> fortran_to_c_order(std::span<const std::byte> data, std::span<const std::int64_t> shape,
                                          std::size_t size) {
  std::vector<std::byte> out(data.size());
  const std::size_t ndim = shape.size();
  const std::int64_t n = static_cast<std::int64_t>(data.size() / size);
  if (ndim < 2 || n == 0) return {data.begin(), data.end()};
  // Element at C-order index i of `shape` has multi-index m; in Fortran order it sits at
  // sum m[d] * stride[d] with stride[0] = 1, stride[d] = stride[d-1] * shape[d-1].
  std::vector<std::int64_t> stride(ndim, 1), m(ndim, 0);
  for (std::size_t d = 1; d < ndim; ++d) stride[d] = stride[d - 1] * shape[d - 1];
  std::int64_t at = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(out.data() + std::size_t(i) * size, data.data() + std::size_t(at) * size, size);
    for (std::size_t d = ndim; d-- > 0;) {  // the next C-order multi-index
      at += stride[d];
      if (++m[d] < shape[d]) break;
      at -= stride[d] * shape[d];
      m[d] = 0;
    }
  }
  return out;
}

array parse(std::span<const std::byte> file, std::string_view name) {
  const header h = parse_header(file, name);
  const std::size_t available = file.size() - h.data_offset;
  const auto needed = static_cast<std::uint64_t>(h.data_bytes());
  const std::string what = "shape " + shape_repr(h.shape) + " of " + std::string(name_of(h.type));
  if (needed > available)
    fail(name, "truncated data: " + what + " needs " + std::to_string(needed) + " bytes, only " +
                   std::to_string(available) + " follow the header");
  if (needed < available)
    fail(name, std::to_string(available - static_cast<std::size_t>(needed)) + " unexpected bytes after the data (" +
                   what + " needs " + std::to_string(needed) + " bytes)");
  array a;
  a.type = h.type;
  a.shape = h.shape;
  a.data.assign(file.begin() + static_cast<std::ptrdiff_t>(h.data_offset), file.end());
  if (h.swap) swap_elements(a.data, size_of(a.type));
  if (h.fortran_order) a.data = fortran_to_c_order(a.data, a.shape, size_of(a.type));
  return a;
}

std::size_t item_size_of(std::string_view descr) {
  const auto bad = [&](std::string_view why) -> std::size_t {
    fail("npy::item_size_of", "cannot write dtype '" + printable(descr) + "': " + std::string(why));
  };
  if (descr.size() < 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos)
    return bad("not a byte order ('<', '>', '|' or '='), a kind and a size");
  std::size_t size = 0;
  for (const char c : descr.substr(2)) {
    if (c < '0' || c > '9') return bad("the size is not a number");
    size = size * 10 + static_cast<std::size_t>(c - '0');
    if (size >= std::size_t{1} << 31) return bad("the size is not below 2**31");
  }
  // NumPy's sizes for each kind; strings (S bytes, U UTF-32 code points) and raw bytes (V) take any.
  const auto one_of = [&](std::initializer_list<std::size_t> sizes) {
    return std::find(sizes.begin(), sizes.end(), size) != sizes.end();
  };
  switch (descr[1]) {
    case 'b': return one_of({1}) ? size : bad("bool has size 1");
    case 'i':
    case 'u': return one_of({1, 2, 4, 8}) ? size : bad("integers have size 1, 2, 4 or 8");
    case 'f': return one_of({2, 4, 8}) ? size : bad("floats have size 2, 4 or 8");
    case 'c': return one_of({8, 16}) ? size : bad("complex numbers have size 8 or 16");
    case 'S':
    case 'V': return size > 0 ? size : bad("the size is 0");
    case 'U': return size > 0 ? 4 * size : bad("the size is 0");
    default: return bad("the kind is not one of b i u f c S U V");
  }
}

std::vector<std::byte> encode_header(dtype type, std::span<const std::int64_t> shape, bool fortran_order) {
  return header_named("npy::encode_header", descr_of(type), size_of(type), shape, fortran_order);
}

std::vector<std::byte> encode_header(std::string_view descr, std::span<const std::int64_t> shape, bool fortran_order) {
  return header_named("npy::encode_header", descr, item_size_of(descr), shape, fortran_order);
}

std::vector<std::byte> encode(dtype type, std::span<const std::int64_t> shape, const void* data) {
  std::vector<std::byte> out = header_named("npy::encode", descr_of(type), size_of(type), shape, false);
  const auto bytes = static_cast<std::size_t>(*checked_bytes(shape, size_of(type)));
  if (bytes > 0 && data == nullptr) fail("npy::encode", "cannot write shape " + shape_repr(shape) + ": data is null");
  const std::size_t prefix = out.size();
  const auto* p = static_cast<const std::byte*>(data);
  out.insert(out.end(), p, p + bytes);
  if constexpr (std::endian::native == std::endian::big)
    swap_elements(std::span<std::byte>(out).subspan(prefix), size_of(type));
  return out;
}

}  // namespace multireduce::npy
