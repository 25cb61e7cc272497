// multireduce/ranks/plan.hpp -- the same reductions across ranks: the transport-agnostic core of
// the MPI front (multireduce/mpi.hpp) and the NCCL front (multireduce/nccl.cuh). Plain C++20, no
// MPI or NCCL: what a call exchanges first (one fixed-size header per rank) and how every rank
// checks the table the same way; the global layout of the shards; the granule plan; which
// elements of other ranks a rank needs (heads and tails, the halo) and where they land; the fold
// of partial results in global order; the merge of per-rank k-NN lists. docs/ranks.md is the
// user's page.
//
// The model: a global 1-D array of N elements is sharded over the ranks in rank order (rank r
// holds [start_r, start_r + n_r); lengths may differ and may be 0). Every call is collective and
// blocking, and every rank gets the same result, bitwise.
//
// The granule: the global array is cut into granules of G elements at global positions 0, G, 2G,
// ... Each granule is reduced whole, by the one-process algorithm, by the rank where it starts;
// a granule that runs past its rank's shard gets the missing elements from the following rank(s)
// through the head exchange (every rank contributes its first `head` elements to one all-gather;
// skipped when every shard starts on a granule boundary, which the headers tell everyone). The
// partial results are all-gathered and folded left to right in global order on every rank. So the
// result depends on N, G and the data, never on the number of ranks or the shard lengths.
//
// A transport is anything with `int rank()`, `int size()` and
// `void allgather(const void* mine, void* all, std::size_t bytes_per_rank)` over host memory
// (all[r * bytes_per_rank ...] receives rank r's bytes); the fronts plug theirs in.
//
// Errors: nothing here throws before the header exchange. check_headers() throws
// std::invalid_argument with the same message on every rank, since every rank reads the same table.
#pragma once

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "../match/match.hpp"

namespace multireduce::ranks {

/// What a transport offers: its rank, the rank count, and an all-gather of equal-sized host blocks.
template <class T>
concept transport = requires(T& t, const void* mine, void* all, std::size_t bytes) {
  { t.rank() } -> std::convertible_to<int>;
  { t.size() } -> std::convertible_to<int>;
  t.allgather(mine, all, bytes);
};

/// The collective call a header belongs to.
enum class job : std::uint32_t { reduce = 1, argmin, argmax, statistics, window_reduce, knn_hamming };

inline const char* to_string(job j) {
  switch (j) {
    case job::reduce: return "reduce";
    case job::argmin: return "argmin";
    case job::argmax: return "argmax";
    case job::statistics: return "statistics";
    case job::window_reduce: return "window_reduce";
    case job::knn_hamming: return "knn_hamming";
  }
  return "an unknown call";
}

// ---- element types ----------------------------------------------------------------------------

/// An element type as the header carries it: kind and size.
enum class dtype_kind : std::uint32_t { none = 0, signed_integer, unsigned_integer, floating, boolean, other };

struct dtype {
  dtype_kind kind = dtype_kind::none;
  std::uint32_t size = 0;
  friend bool operator==(const dtype&, const dtype&) = default;
};

template <class T>
constexpr dtype dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>) return {dtype_kind::boolean, sizeof(U)};
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) return {dtype_kind::signed_integer, sizeof(U)};
  else if constexpr (std::is_integral_v<U>) return {dtype_kind::unsigned_integer, sizeof(U)};
  else if constexpr (std::is_floating_point_v<U>) return {dtype_kind::floating, sizeof(U)};
  else return {dtype_kind::other, sizeof(U)};
}

/// NumPy's names: int32, uint8, float32, ...; other types by size ("a 12-byte type").
inline std::string to_string(dtype d) {
  const std::string bits = std::to_string(8 * d.size);
  switch (d.kind) {
    case dtype_kind::signed_integer: return "int" + bits;
    case dtype_kind::unsigned_integer: return "uint" + bits;
    case dtype_kind::floating: return "float" + bits;
    case dtype_kind::boolean: return "bool";
    case dtype_kind::other: return "a " + std::to_string(d.size) + "-byte type";
    case dtype_kind::none: return "no type";
  }
  return "an unknown type";
}

/// FNV-1a of `bytes` bytes: the fingerprints the ranks compare.
inline std::uint64_t fnv1a(const void* data, std::size_t bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

/// A fingerprint of an operator type, the same in every process of one program (and of programs
/// built by the same compiler): FNV-1a of its mangled name. Two lambdas are two operators.
template <class Op>
std::uint64_t operator_fingerprint() {
  const char* name = typeid(Op).name();
  return fnv1a(name, std::strlen(name));
}

// ---- the header --------------------------------------------------------------------------------

/// What a rank found wrong with its own arguments (checked before the exchange, reported after it
/// by every rank). `error_value` carries the offending number.
enum class local_error : std::int32_t {
  none = 0,
  negative_length,   // n < 0
  null_shard,        // shard == nullptr with n > 0
  bad_window,        // W < 1
  bad_k,             // k outside 1..match_max_k
  bad_bytes,         // descriptor width not a positive multiple of 4 (or past the backend's limit)
  negative_queries,  // queries < 0
  null_queries,      // query == nullptr with queries > 0
  null_knn_output,   // idx or dist == nullptr with queries > 0
  bad_granule,       // granule outside what the front takes
  too_many_rows,     // a count past int32 indices
};

/// Flags of a header.
inline constexpr std::uint32_t header_output_null = 1u;  ///< the window output pointer is null

/// The fixed-size record every call all-gathers first. Zero-filled, then set: no padding bytes
/// carry garbage, so tables compare byte for byte.
struct rank_header {
  std::uint32_t version;
  std::uint32_t job;
  std::uint32_t element_kind, element_size;  ///< the shard's element type
  std::uint32_t acc_kind, acc_size;          ///< the accumulator (init) type, or the element type
  std::uint64_t op;                          ///< operator_fingerprint<Op>(), 0 without an operator
  std::int64_t window;                       ///< W (window_reduce), else 0
  std::int64_t k;                            ///< k (knn_hamming), else 0
  std::int64_t bytes;                        ///< descriptor bytes (knn_hamming), else 0
  std::int64_t queries;                      ///< query count (knn_hamming), else 0
  std::int64_t granule;                      ///< G
  std::int64_t n;                            ///< this rank's shard length (rows for knn_hamming)
  double first;                              ///< shard[0] as double, 0 when n <= 0 (statistics' shift)
  std::int32_t error;                        ///< a local_error
  std::uint32_t flags;                       ///< header_output_null, ...
  std::int64_t error_value;
  std::uint64_t init_fingerprint;            ///< FNV-1a of the init's bytes (set_init), else 0
  std::uint64_t init_head;                   ///< the init's first 8 bytes (zero-filled), for messages
};
static_assert(std::is_trivially_copyable_v<rank_header> && sizeof(rank_header) == 120,
              "rank_header is exchanged as bytes: keep it fixed and free of padding");

inline constexpr std::uint32_t header_version = 2;

/// A zero-filled header for `j` with element type T and accumulator type Acc.
template <class T, class Acc = T>
rank_header make_header(job j, std::int64_t n, std::uint64_t op = 0) {
  rank_header h;
  std::memset(&h, 0, sizeof h);
  h.version = header_version;
  h.job = static_cast<std::uint32_t>(j);
  constexpr dtype e = dtype_of<T>(), a = dtype_of<Acc>();
  h.element_kind = static_cast<std::uint32_t>(e.kind);
  h.element_size = e.size;
  h.acc_kind = static_cast<std::uint32_t>(a.kind);
  h.acc_size = a.size;
  h.op = op;
  h.n = n;
  return h;
}

/// Whether an init of type Acc is compared between the ranks, byte for byte: types whose bytes are
/// all value (arithmetic and enum types, and classes without padding as
/// std::has_unique_object_representations tells). Others may carry padding of any content.
template <class Acc>
inline constexpr bool init_compared = std::is_trivially_copyable_v<Acc> &&
                                      (std::is_arithmetic_v<Acc> || std::is_enum_v<Acc> ||
                                       std::has_unique_object_representations_v<Acc>);

/// Puts the init's bytes into the header (its fingerprint, and its first 8 bytes for the message),
/// where init_compared<Acc>: ranks that pass different inits then fail check_headers.
template <class Acc>
void set_init(rank_header& h, const Acc& init) {
  if constexpr (init_compared<Acc>) {
    h.init_fingerprint = fnv1a(&init, sizeof(Acc));
    h.init_head = 0;
    std::memcpy(&h.init_head, &init, std::min(sizeof(Acc), sizeof(h.init_head)));
  }
}

/// Marks the first local error only (the one every rank will report).
inline void set_error(rank_header& h, local_error e, std::int64_t value) {
  if (h.error != 0) return;
  h.error = static_cast<std::int32_t>(e);
  h.error_value = value;
}

/// Whether an output is a null pointer (an iterator never is).
template <class Out>
bool is_null(const Out& out) {
  if constexpr (std::is_pointer_v<Out>) return out == nullptr;
  else return false;
}

/// The header of a window_reduce call over n elements with windows of `window`, starting from `init`.
template <class T, class Acc, class Op>
rank_header window_header(std::int64_t n, std::int64_t window, bool output_null, const Acc& init) {
  rank_header h = make_header<T, Acc>(job::window_reduce, n, operator_fingerprint<Op>());
  set_init(h, init);
  h.window = window;
  if (window < 1) set_error(h, local_error::bad_window, window);
  if (output_null) h.flags |= header_output_null;
  return h;
}

/// The header of a knn_hamming call: the training shard of `trains` rows, the replicated queries,
/// rows of `bytes` (a positive multiple of 4, at most max_bytes), k neighbours written to idx/dist.
inline rank_header knn_header(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train,
                              std::int64_t trains, int bytes, int max_bytes, int k, const std::int32_t* idx,
                              const std::int32_t* dist) {
  rank_header h = make_header<std::uint8_t>(job::knn_hamming, trains);
  h.k = k;
  h.bytes = bytes;
  h.queries = queries;
  constexpr std::int64_t most_rows = std::numeric_limits<std::int32_t>::max();
  if (trains < 0) set_error(h, local_error::negative_length, trains);
  if (trains > 0 && train == nullptr) set_error(h, local_error::null_shard, trains);
  if (trains > most_rows) set_error(h, local_error::too_many_rows, trains);
  if (bytes <= 0 || bytes % 4 != 0 || bytes > max_bytes) set_error(h, local_error::bad_bytes, bytes);
  if (k < 1 || k > match_max_k) set_error(h, local_error::bad_k, k);
  if (queries < 0) set_error(h, local_error::negative_queries, queries);
  if (queries > most_rows) set_error(h, local_error::too_many_rows, queries);
  if (queries > 0 && query == nullptr) set_error(h, local_error::null_queries, queries);
  if (queries > 0 && (idx == nullptr || dist == nullptr)) set_error(h, local_error::null_knn_output, queries);
  return h;
}

/// Every rank's header, in rank order.
template <transport Transport>
std::vector<rank_header> exchange_headers(Transport& t, const rank_header& mine) {
  std::vector<rank_header> all(static_cast<std::size_t>(t.size()));
  t.allgather(&mine, all.data(), sizeof(rank_header));
  return all;
}

// ---- the layout: where every shard lies ------------------------------------------------------------

struct layout {
  int size = 0;
  std::vector<std::int64_t> start;  ///< size + 1 entries: start[r] = n_0 + ... + n_{r-1}; start[size] = N
  std::int64_t total() const { return start.back(); }
  std::int64_t begin(int r) const { return start[static_cast<std::size_t>(r)]; }
  std::int64_t end(int r) const { return start[static_cast<std::size_t>(r) + 1]; }
  std::int64_t length(int r) const { return end(r) - begin(r); }
  /// The rank whose shard holds global position p (0 <= p < N): the last rank starting at or before it.
  int owner(std::int64_t p) const {
    const auto it = std::upper_bound(start.begin(), start.end() - 1, p);
    int r = static_cast<int>(it - start.begin()) - 1;
    while (length(r) == 0) --r;  // (empty ranks share their start with the next non-empty one)
    return r;
  }
};

namespace detail {
inline std::string rank_name(std::size_t r) { return "rank " + std::to_string(r); }

/// The init a header carries, as a number where its type is one (at most 8 bytes), else its bytes
/// in hex (the first 8).
inline std::string init_text(const rank_header& h) {
  const dtype a{static_cast<dtype_kind>(h.acc_kind), h.acc_size};
  auto as = [&](auto v) {
    std::memcpy(&v, &h.init_head, sizeof v);
    return v;
  };
  if (a.kind == dtype_kind::floating && (a.size == 4 || a.size == 8)) {
    char text[40];
    if (a.size == 4) std::snprintf(text, sizeof text, "%.9g", static_cast<double>(as(float{})));
    else std::snprintf(text, sizeof text, "%.17g", as(double{}));
    return text;
  }
  if (a.kind == dtype_kind::boolean) return as(bool{}) ? "true" : "false";
  if (a.kind == dtype_kind::signed_integer || a.kind == dtype_kind::unsigned_integer) {
    const bool sign = a.kind == dtype_kind::signed_integer;
    switch (a.size) {
      case 1: return sign ? std::to_string(as(std::int8_t{})) : std::to_string(as(std::uint8_t{}));
      case 2: return sign ? std::to_string(as(std::int16_t{})) : std::to_string(as(std::uint16_t{}));
      case 4: return sign ? std::to_string(as(std::int32_t{})) : std::to_string(as(std::uint32_t{}));
      case 8: return sign ? std::to_string(as(std::int64_t{})) : std::to_string(as(std::uint64_t{}));
      default: break;
    }
  }
  unsigned char bytes[8];
  std::memcpy(bytes, &h.init_head, sizeof bytes);
  std::string out = "bytes 0x";
  const char* digits = "0123456789abcdef";
  for (std::uint32_t i = 0; i < std::min<std::uint32_t>(a.size, 8); ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return a.size > 8 ? out + "..." : out;
}
inline std::string local_error_message(const rank_header& h) {
  const std::string v = std::to_string(h.error_value);
  switch (static_cast<local_error>(h.error)) {
    case local_error::none: return "";
    case local_error::negative_length: return "passed a shard length of " + v + " (must be >= 0)";
    case local_error::null_shard: return "passed a null shard pointer with " + v + " elements";
    case local_error::bad_window: return "passed window " + v + " (must be >= 1)";
    case local_error::bad_k: return "passed k = " + v + " (must be 1..8)";
    case local_error::bad_bytes: return "passed a descriptor width of " + v + " bytes (a positive multiple of 4, at most the backend's limit)";
    case local_error::negative_queries: return "passed " + v + " queries (must be >= 0)";
    case local_error::null_queries: return "passed a null query pointer with " + v + " queries";
    case local_error::null_knn_output: return "passed a null idx or dist pointer with " + v + " queries";
    case local_error::bad_granule: return "passed granule " + v + " (see the front's granule rule)";
    case local_error::too_many_rows: return "passed " + v + " rows (at most 2^31 - 1)";
  }
  return "reported error " + std::to_string(h.error);
}
}  // namespace detail

/// Checks the table the same way on every rank and throws std::invalid_argument("function: ...")
/// with the same message everywhere: the call, then each rank's own arguments, then agreement
/// with rank 0 (element and accumulator types, the init's bytes, operator, W, k, width, queries,
/// granule), then the global length. Returns the layout.
inline layout check_headers(const std::vector<rank_header>& all, const std::string& function) {
  auto fail = [&](const std::string& message) { throw std::invalid_argument(function + ": " + message); };
  const rank_header& h0 = all.at(0);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].version != h0.version)
      fail("ranks run different versions of multireduce's rank protocol (" + detail::rank_name(r) + " and rank 0)");
  // Ranks in different calls name different functions: this message names the front only.
  const std::string front = function.substr(0, function.rfind("::"));
  for (std::size_t r = 1; r < all.size(); ++r)
    if (all[r].job != h0.job)
      throw std::invalid_argument(front + ": " + "ranks disagree on the call: " + detail::rank_name(r) + " called " + to_string(static_cast<job>(all[r].job)) +
           ", rank 0 " + to_string(static_cast<job>(h0.job)));
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].error != 0) fail(detail::rank_name(r) + " " + detail::local_error_message(all[r]));
  const bool knn = static_cast<job>(h0.job) == job::knn_hamming;
  for (std::size_t r = 1; r < all.size(); ++r) {
    const rank_header& h = all[r];
    const std::string rn = detail::rank_name(r);
    const dtype e{static_cast<dtype_kind>(h.element_kind), h.element_size},
        e0{static_cast<dtype_kind>(h0.element_kind), h0.element_size};
    const dtype a{static_cast<dtype_kind>(h.acc_kind), h.acc_size}, a0{static_cast<dtype_kind>(h0.acc_kind), h0.acc_size};
    if (!knn && e != e0) fail(rn + " passed " + to_string(e) + " shards, rank 0 " + to_string(e0));
    if (a != a0) fail(rn + " passed an init of " + to_string(a) + ", rank 0 " + to_string(a0));
    if (h.init_fingerprint != h0.init_fingerprint || h.init_head != h0.init_head)
      fail("ranks disagree on the init: " + rn + " passed " + detail::init_text(h) + ", rank 0 " +
           detail::init_text(h0));
    if (h.op != h0.op) fail("ranks disagree on the operator (" + rn + "'s is not rank 0's)");
    if (h.window != h0.window)
      fail("ranks disagree on the window: " + rn + " passed W = " + std::to_string(h.window) + ", rank 0 W = " +
           std::to_string(h0.window));
    if (h.k != h0.k) fail("ranks disagree on k: " + rn + " passed " + std::to_string(h.k) + ", rank 0 " + std::to_string(h0.k));
    if (h.bytes != h0.bytes)
      fail("ranks disagree on the descriptor width: " + rn + " passed " + std::to_string(h.bytes) + " bytes, rank 0 " +
           std::to_string(h0.bytes));
    if (h.queries != h0.queries)
      fail("ranks disagree on the queries (replicated on every rank): " + rn + " passed " + std::to_string(h.queries) +
           ", rank 0 " + std::to_string(h0.queries));
    if (h.granule != h0.granule)
      fail("ranks disagree on the granule: " + rn + " passed " + std::to_string(h.granule) + ", rank 0 " +
           std::to_string(h0.granule));
  }
  layout l;
  l.size = static_cast<int>(all.size());
  l.start.assign(all.size() + 1, 0);
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].n > std::numeric_limits<std::int64_t>::max() - l.start[r]) fail("the global length overflows int64");
    l.start[r + 1] = l.start[r] + all[r].n;
  }
  if (knn && l.total() > std::numeric_limits<std::int32_t>::max())
    fail("the training set has " + std::to_string(l.total()) + " rows in all; global indices must fit int32");
  return l;
}

/// The first element of the global array as the header carried it (statistics' shift), 0 if empty.
inline double global_first(const std::vector<rank_header>& all) {
  for (const auto& h : all)
    if (h.n > 0) return h.first;
  return 0;
}

// ---- the granule plan ----------------------------------------------------------------------------

/// Granule g covers [gG, min(N, (g+1)G)); rank r owns the granules that start in its shard,
/// [ceil(start_r / G), ceil(end_r / G)), and reduces the elements [first_element(r), last_element(r)).
struct granule_plan {
  std::int64_t granule = 1;
  std::int64_t total = 0;
  std::vector<std::int64_t> first;  ///< size + 1 entries: rank r owns granules [first[r], first[r + 1])

  granule_plan() = default;
  granule_plan(const layout& l, std::int64_t g) : granule(g), total(l.total()), first(l.start.size()) {
    for (std::size_t r = 0; r < l.start.size(); ++r) first[r] = (l.start[r] + g - 1) / g;
  }
  std::int64_t granules() const { return first.back(); }
  std::int64_t owned(int r) const { return first[std::size_t(r) + 1] - first[std::size_t(r)]; }
  std::int64_t max_owned() const {
    std::int64_t m = 0;
    for (std::size_t r = 0; r + 1 < first.size(); ++r) m = std::max(m, first[r + 1] - first[r]);
    return m;
  }
  std::int64_t first_element(int r) const { return std::min(total, first[std::size_t(r)] * granule); }
  std::int64_t last_element(int r) const { return std::min(total, first[std::size_t(r) + 1] * granule); }
  /// Granule g's global element range.
  std::int64_t granule_begin(std::int64_t g) const { return std::min(total, g * granule); }
  std::int64_t granule_end(std::int64_t g) const { return std::min(total, (g + 1) * granule); }
};

// ---- halos: elements of other ranks ---------------------------------------------------------------

/// Every rank needs the global range [begin[r], end[r]) (its own shard's part and the rest from
/// other ranks). One all-gather moves it: each rank contributes a slot of head + tail elements,
/// its first min(n, head) elements, then its last min(n, tail) elements. head/tail are the most
/// any rank needs from a following/preceding rank, so 0 + 0 means no exchange.
struct halo_plan {
  std::int64_t head = 0, tail = 0;
  std::vector<std::int64_t> begin, end;  ///< per rank: the global range it reads
  bool needed() const { return head + tail > 0; }
  std::int64_t slot() const { return head + tail; }
};

/// The halo plan of the ranges [begin[r], end[r]) (begin[r] <= start_r, end[r] >= start_r when
/// the range is not empty; an empty range needs nothing).
inline halo_plan make_halo_plan(const layout& l, std::vector<std::int64_t> begin, std::vector<std::int64_t> end) {
  halo_plan h;
  for (int r = 0; r < l.size; ++r) {
    const std::int64_t b = begin[std::size_t(r)], e = end[std::size_t(r)];
    if (b >= e) continue;
    for (int q = 0; q < l.size; ++q) {
      if (q == r || l.length(q) == 0) continue;
      const std::int64_t lo = std::max(b, l.begin(q)), hi = std::min(e, l.end(q));
      if (lo >= hi) continue;
      if (q > r) h.head = std::max(h.head, hi - l.begin(q));
      else h.tail = std::max(h.tail, l.end(q) - lo);
    }
  }
  h.begin = std::move(begin);
  h.end = std::move(end);
  return h;
}

/// The halo plan of the granule jobs: rank r reads the elements of the granules it owns.
inline halo_plan make_halo_plan(const layout& l, const granule_plan& g) {
  std::vector<std::int64_t> b(std::size_t(l.size)), e(std::size_t(l.size));
  for (int r = 0; r < l.size; ++r) {
    b[std::size_t(r)] = g.first_element(r);
    e[std::size_t(r)] = g.last_element(r);
  }
  return make_halo_plan(l, std::move(b), std::move(e));
}

/// Packs this rank's slot (head + tail elements of `element_bytes`, unused bytes zero) from its shard.
inline void pack_halo_slot(const halo_plan& h, const void* shard, std::int64_t n, std::size_t element_bytes,
                           void* slot) {
  auto* out = static_cast<unsigned char*>(slot);
  std::memset(out, 0, std::size_t(h.slot()) * element_bytes);
  if (n <= 0) return;
  const auto* in = static_cast<const unsigned char*>(shard);
  const std::int64_t m_head = std::min(n, h.head), m_tail = std::min(n, h.tail);
  std::memcpy(out, in, std::size_t(m_head) * element_bytes);
  std::memcpy(out + std::size_t(h.head) * element_bytes, in + std::size_t(n - m_tail) * element_bytes,
              std::size_t(m_tail) * element_bytes);
}

/// One copy of an assembled range: `count` elements from this rank's shard (from_shard, at
/// `source`) or from the gathered slots (at element `source` of the all-gathered buffer), to
/// element `target` of the assembled range.
struct halo_piece {
  bool from_shard;
  std::int64_t source, target, count;
};

/// How rank `me` assembles the global range [lo, hi) from its shard and the gathered slots.
/// Throws std::logic_error if the plan does not cover it (a bug, the same on every rank).
inline std::vector<halo_piece> assemble(const layout& l, const halo_plan& h, int me, std::int64_t lo, std::int64_t hi) {
  std::vector<halo_piece> pieces;
  for (int q = 0; q < l.size && lo < hi; ++q) {
    const std::int64_t a = std::max(lo, l.begin(q)), b = std::min(hi, l.end(q));
    if (a >= b) continue;
    if (q == me) {
      pieces.push_back({true, a - l.begin(q), a - lo, b - a});
    } else if (q > me) {
      if (b - l.begin(q) > h.head) throw std::logic_error("multireduce::ranks::assemble: the head exchange is too short");
      pieces.push_back({false, q * h.slot() + (a - l.begin(q)), a - lo, b - a});
    } else {
      const std::int64_t kept = std::min(l.length(q), h.tail), first_kept = l.end(q) - kept;
      if (a < first_kept) throw std::logic_error("multireduce::ranks::assemble: the tail exchange is too short");
      pieces.push_back({false, q * h.slot() + h.head + (a - first_kept), a - lo, b - a});
    }
  }
  return pieces;
}

// ---- windows -----------------------------------------------------------------------------------

/// Rank r writes the windows that start in its shard: out_count(r) = max(0, min(n_r, N - W + 1 - start_r)).
inline std::int64_t window_outputs(const layout& l, int r, std::int64_t w) {
  const std::int64_t c = std::min(l.length(r), l.total() - w + 1 - l.begin(r));
  return c > 0 ? c : 0;
}

/// The windows' halo: rank r reads [begin_r, start_r + out_count(r) + W - 1), begin_r = start_r
/// rounded down to a multiple of `align` (1: no alignment; the CPU front passes W for W past its
/// direct folds, so that its van Herk / Gil-Werman blocks fall where the one-process call puts them).
inline halo_plan make_window_plan(const layout& l, std::int64_t w, std::int64_t align) {
  std::vector<std::int64_t> b(std::size_t(l.size)), e(std::size_t(l.size));
  for (int r = 0; r < l.size; ++r) {
    const std::int64_t c = window_outputs(l, r, w);
    b[std::size_t(r)] = e[std::size_t(r)] = l.begin(r);
    if (c == 0) continue;
    b[std::size_t(r)] = align > 1 ? l.begin(r) / align * align : l.begin(r);
    e[std::size_t(r)] = l.begin(r) + c + w - 1;
  }
  return make_halo_plan(l, std::move(b), std::move(e));
}

// ---- folds -----------------------------------------------------------------------------------

/// Gathered partials: rank r's slot holds `count(r)` values of P (slot_values per rank, bytes
/// copied with memcpy); calls visit(P) for each, in rank order then slot order.
template <class P, class Count, class Visit>
void for_each_partial(const std::vector<unsigned char>& gathered, int size, std::int64_t slot_values, Count count,
                      Visit visit) {
  static_assert(std::is_trivially_copyable_v<P> && std::is_default_constructible_v<P>,
                "partials travel as bytes: a trivially copyable, default-constructible type");
  for (int r = 0; r < size; ++r)
    for (std::int64_t i = 0; i < count(r); ++i) {
      P p;
      std::memcpy(&p, gathered.data() + (std::size_t(r) * std::size_t(slot_values) + std::size_t(i)) * sizeof(P),
                  sizeof(P));
      visit(p);
    }
}

// ---- k-NN ------------------------------------------------------------------------------------

/// Merges per-rank k-NN lists (all_idx/all_dist: size x queries x k, global training indices, -1
/// past a rank's rows, each list sorted by distance then index) into the k nearest of the union,
/// by distance, then lower index (OpenCV's order); -1 past the union's size. Ranks hold disjoint
/// index ranges, so the result is exactly the one-process search's.
inline void merge_knn(const std::int32_t* all_idx, const std::int32_t* all_dist, int size, std::int64_t queries, int k,
                      std::int32_t* idx, std::int32_t* dist) {
  std::vector<int> at(std::size_t(size > 0 ? size : 1));
  const std::size_t per_rank = std::size_t(queries) * std::size_t(k);
  for (std::int64_t q = 0; q < queries; ++q) {
    std::fill(at.begin(), at.end(), 0);
    for (int j = 0; j < k; ++j) {
      int best = -1;
      std::int32_t best_d = 0, best_i = 0;
      for (int r = 0; r < size; ++r) {
        if (at[std::size_t(r)] >= k) continue;
        const std::size_t o = std::size_t(r) * per_rank + std::size_t(q) * std::size_t(k) + std::size_t(at[std::size_t(r)]);
        if (all_idx[o] < 0) continue;
        if (best < 0 || all_dist[o] < best_d || (all_dist[o] == best_d && all_idx[o] < best_i)) {
          best = r;
          best_d = all_dist[o];
          best_i = all_idx[o];
        }
      }
      const std::size_t out = std::size_t(q) * std::size_t(k) + std::size_t(j);
      if (best < 0) {
        idx[out] = -1;
        dist[out] = -1;
      } else {
        idx[out] = best_i;
        dist[out] = best_d;
        ++at[std::size_t(best)];
      }
    }
  }
}

}  // namespace multireduce::ranks
