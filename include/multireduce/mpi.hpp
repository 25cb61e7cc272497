// multireduce/mpi.hpp -- the same reductions across MPI ranks (CPU): a global 1-D array sharded
// over the ranks of an MPI communicator in rank order, reduced by one collective, blocking call
// that gives every rank the same result, bitwise the same as the one-process CPU call
// (multireduce/cpu.hpp, multireduce/match/cpu.hpp) on the whole array, whatever the shard lengths.
// docs/ranks.md is the user's page; multireduce/ranks/plan.hpp the transport-agnostic core.
//
//   double mine[...];                                     // this rank's shard, host memory
//   double total = multireduce::mpi::reduce(MPI_COMM_WORLD, mine, n, multireduce::sum{}, 0.0);
//   auto s = multireduce::mpi::statistics(MPI_COMM_WORLD, mine, n);   // s.argmin: a global index
//
// How it stays bitwise (the granule): cpu::reduce and cpu::statistics fold chunks of
// cpu::chunk_elements (2^16) elements left to right. The global array is cut into granules of G
// elements (G a multiple of chunk_elements; options::granule, default chunk_elements). Each
// granule is folded by the rank where it starts, chunk by chunk, exactly as the one-process call
// folds those chunks (statistics with the one-process shift: the global first element); a
// granule that runs past its rank's shard gets the rest from the following rank(s) through one
// all-gather of every rank's first elements (skipped when every shard starts on a granule
// boundary). The chunks' partials are all-gathered and folded left to right in global order on
// every rank. The result is therefore independent of G and of the shard lengths. argmin/argmax
// and knn_hamming are selections, exact in any grouping: each rank takes its own shard and the
// per-rank results are combined in rank order (ties: the lower global index). Windows start each
// rank's computation where the one-process call's van Herk / Gil-Werman blocks start (a multiple
// of W), reading up to W - 1 elements before and after the shard from other ranks.
//
// Errors: every call first all-gathers a header per rank (the call, types, the init's bytes,
// operator, W, k, granule, length, what the rank found wrong with its own arguments); every rank checks the table
// the same way and throws std::invalid_argument with the same message on every rank, so no rank is
// left waiting. MPI errors throw std::runtime_error with MPI's error string where the
// communicator returns errors (MPI_ERRORS_RETURN; with the default handler MPI aborts). Failures
// after the check (out of memory) are local to a rank. Inputs are only read.
//
// Performance notes:
// - Every call: one all-gather of 120-byte headers, one of the partials (a value per chunk of
//   2^16 elements, or one per rank for argmin/argmax), and where shards do not start on granule
//   boundaries one of min(n, G - 1) elements per rank. The chunk folds run on all cores (OpenMP).
// - A rank whose windows or granules need other ranks' elements copies its range into one buffer.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu.hpp"
#include "match/cpu.hpp"
#include "ranks/plan.hpp"

namespace multireduce::mpi {

/// The default granule: one CPU chunk (2^16 elements). Results do not depend on the granule (a
/// multiple of cpu::chunk_elements); the smallest one needs the fewest elements from other ranks.
inline constexpr std::int64_t default_granule = cpu::chunk_elements;

struct options {
  /// G: a positive multiple of cpu::chunk_elements, the same on every rank.
  std::int64_t granule = default_granule;
};

/// The transport over an MPI communicator (host memory). Throws std::runtime_error on MPI errors.
class communicator {
 public:
  communicator(MPI_Comm comm, std::string function) : comm_(comm), function_(std::move(function)) {
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// all[r * bytes ...] = rank r's `bytes` bytes at `mine`. Blocks of more than 1 GiB go in pieces.
  void allgather(const void* mine, void* all, std::size_t bytes) {
    constexpr std::size_t piece = std::size_t(1) << 30;
    if (bytes <= piece) {
      check(MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, comm_),
            "MPI_Allgather");
      return;
    }
    std::vector<unsigned char> part(piece * std::size_t(size_));
    for (std::size_t first = 0; first < bytes; first += piece) {
      const std::size_t count = std::min(piece, bytes - first);
      check(MPI_Allgather(static_cast<const unsigned char*>(mine) + first, static_cast<int>(count), MPI_BYTE,
                          part.data(), static_cast<int>(count), MPI_BYTE, comm_),
            "MPI_Allgather");
      for (int r = 0; r < size_; ++r)
        std::memcpy(static_cast<unsigned char*>(all) + std::size_t(r) * bytes + first, part.data() + std::size_t(r) * count,
                    count);
    }
  }
  const std::string& function() const { return function_; }

 private:
  void check(int code, const char* what) const {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(function_ + ": " + what + " failed: " + std::string(text, std::size_t(length)));
  }
  MPI_Comm comm_;
  std::string function_;
  int rank_ = 0, size_ = 1;
};
static_assert(ranks::transport<communicator>);

namespace detail {

/// A call after its header exchange: the transport, every rank's header, the layout.
struct session {
  communicator t;
  std::vector<ranks::rank_header> table;
  ranks::layout l;
  session(MPI_Comm comm, const char* function, const ranks::rank_header& mine)
      : t(comm, function), table(ranks::exchange_headers(t, mine)), l(ranks::check_headers(table, function)) {}
  int me() const { return t.rank(); }
};

template <class T>
void check_shard(ranks::rank_header& h, const T* shard, std::int64_t n) {
  if (n < 0) ranks::set_error(h, ranks::local_error::negative_length, n);
  if (n > 0 && shard == nullptr) ranks::set_error(h, ranks::local_error::null_shard, n);
  if constexpr (std::is_arithmetic_v<T>)
    if (n > 0 && shard != nullptr) h.first = static_cast<double>(shard[0]);
}

inline void check_granule(ranks::rank_header& h, std::int64_t granule) {
  h.granule = granule;
  if (granule <= 0 || granule % cpu::chunk_elements != 0) ranks::set_error(h, ranks::local_error::bad_granule, granule);
}

/// The global range [lo, hi) read through the halo plan `h` (already exchanged into `gathered`):
/// a pointer into the shard when the range lies in it, else a copy in `storage`.
template <class T>
const T* range(const session& s, const ranks::halo_plan& h, const std::vector<T>& gathered, const T* shard,
               std::int64_t lo, std::int64_t hi, std::vector<T>& storage) {
  const int me = s.me();
  if (lo >= s.l.begin(me) && hi <= s.l.end(me)) return shard + (lo - s.l.begin(me));
  storage.resize(std::size_t(hi - lo));
  for (const auto& p : ranks::assemble(s.l, h, me, lo, hi))
    std::memcpy(storage.data() + p.target, (p.from_shard ? shard : gathered.data()) + p.source,
                std::size_t(p.count) * sizeof(T));
  return storage.data();
}

/// Every rank's halo slots (empty when the plan needs none; every rank calls this).
template <class T>
std::vector<T> exchange_halo(session& s, const ranks::halo_plan& h, const T* shard, std::int64_t n) {
  if (!h.needed()) return {};
  std::vector<T> mine(static_cast<std::size_t>(h.slot())), all(std::size_t(h.slot()) * std::size_t(s.l.size));
  ranks::pack_halo_slot(h, shard, n, sizeof(T), mine.data());
  s.t.allgather(mine.data(), all.data(), std::size_t(h.slot()) * sizeof(T));
  return all;
}

/// All-gathers `per_rank[r]` partials of P per rank (this rank's in `mine`) and visits them in
/// global order.
template <class P, class Visit>
void gather_in_order(session& s, const std::vector<P>& mine, const std::vector<std::int64_t>& per_rank, Visit visit) {
  std::int64_t slot = 0;
  for (auto c : per_rank) slot = std::max(slot, c);
  if (slot == 0) return;
  std::vector<unsigned char> out(std::size_t(slot) * sizeof(P), 0), all(out.size() * std::size_t(s.l.size));
  if (!mine.empty()) std::memcpy(out.data(), mine.data(), mine.size() * sizeof(P));
  s.t.allgather(out.data(), all.data(), out.size());
  ranks::for_each_partial<P>(all, s.l.size, slot, [&](int r) { return per_rank[std::size_t(r)]; }, visit);
}

/// The chunks of cpu::chunk_elements in each rank's granules.
inline std::vector<std::int64_t> chunks_per_rank(const ranks::layout& l, const ranks::granule_plan& g) {
  std::vector<std::int64_t> c(std::size_t(l.size));
  for (int r = 0; r < l.size; ++r)
    c[std::size_t(r)] = cpu::detail::ceil_div(g.last_element(r) - g.first_element(r), cpu::chunk_elements);
  return c;
}

template <class ArgOp, class ValueOp, class T>
key_value<T, std::int64_t> arg_extreme(MPI_Comm comm, const T* shard, std::int64_t n, ranks::job j, const char* function) {
  static_assert(std::is_arithmetic_v<T>, "multireduce::mpi::argmin/argmax need arithmetic elements");
  using KV = key_value<T, std::int64_t>;
  auto h = ranks::make_header<T>(j, n);
  check_shard(h, shard, n);
  session s(comm, function, h);
  KV local = n > 0 ? cpu::detail::arg_extreme<ArgOp, ValueOp>(shard, n, function) : KV{ValueOp::template identity<T>(), -1};
  if (local.index >= 0) local.index += s.l.begin(s.me());
  std::optional<KV> acc;
  gather_in_order(s, std::vector<KV>{local}, std::vector<std::int64_t>(std::size_t(s.l.size), 1), [&](const KV& p) {
    if (p.index >= 0) acc = acc ? ArgOp{}(*acc, p) : p;
  });
  return acc ? *acc : KV{ValueOp::template identity<T>(), -1};
}

/// The elements of the granules this rank owns, [lo, hi) of the global array, in one range (its
/// shard, with the rest of a straddling granule from the following ranks), and every rank's count
/// of chunks in them. Every rank constructs one (the head exchange is collective).
template <class T>
struct owned_range {
  owned_range(session& s, std::int64_t granule, const T* shard, std::int64_t n)
      : g(s.l, granule), per_rank(chunks_per_rank(s.l, g)), me(s.me()) {
    const ranks::halo_plan halo = ranks::make_halo_plan(s.l, g);
    const std::vector<T> gathered = exchange_halo(s, halo, shard, n);
    lo = g.first_element(me);
    hi = g.last_element(me);
    x = lo < hi ? range(s, halo, gathered, shard, lo, hi, storage) : nullptr;
  }
  owned_range(const owned_range&) = delete;  // (x may point into storage)
  owned_range& operator=(const owned_range&) = delete;
  std::int64_t chunks() const { return per_rank[std::size_t(me)]; }

  ranks::granule_plan g;
  std::vector<std::int64_t> per_rank;
  int me;
  std::int64_t lo = 0, hi = 0;
  std::vector<T> storage;
  const T* x = nullptr;
};

}  // namespace detail

/// init (+) x[0] (+) ... (+) x[N-1] over the global array (this rank holds `shard`, n elements),
/// with (+) = op and every element converted to Acc: bitwise cpu::reduce(x, N, op, init) on the
/// whole array, on every rank. Collective and blocking.
/// @param granule (options) a positive multiple of cpu::chunk_elements; the result does not depend on it.
/// @return the reduction (init for N == 0), the same on every rank.
/// @throws std::invalid_argument on every rank when any rank's arguments are wrong or the ranks
///         disagree (element type, init type or value, operator, granule); std::runtime_error on MPI errors.
template <class T, class Op, class Acc>
Acc reduce(MPI_Comm comm, const T* shard, std::int64_t n, Op op, Acc init, const options& opt = {}) {
  MULTIREDUCE_CPU_CHECK_OPERATOR(Op, Acc);
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<Acc> && std::is_default_constructible_v<Acc>,
                "multireduce::mpi::reduce: elements and the accumulator travel as bytes (trivially copyable)");
  auto h = ranks::make_header<T, Acc>(ranks::job::reduce, n, ranks::operator_fingerprint<Op>());
  ranks::set_init(h, init);
  detail::check_shard(h, shard, n);
  detail::check_granule(h, opt.granule);
  detail::session s(comm, "multireduce::mpi::reduce", h);
  const detail::owned_range<T> r(s, opt.granule, shard, n);
  const T* x = r.x;
  const std::int64_t lo = r.lo, hi = r.hi, chunks = r.chunks();
  std::vector<Acc> partial(std::size_t(chunks), chunks > 0 ? static_cast<Acc>(x[0]) : init);
  MULTIREDUCE_OMP(parallel for schedule(static) if (chunks > 1))
  for (std::int64_t c = 0; c < chunks; ++c)
    partial[std::size_t(c)] = cpu::detail::fold_nonempty<Acc>(x, c * cpu::chunk_elements,
                                                              std::min(hi - lo, (c + 1) * cpu::chunk_elements), op);
  std::optional<Acc> acc;
  detail::gather_in_order(s, partial, r.per_rank, [&](const Acc& p) { acc = acc ? op(*acc, p) : p; });
  return acc ? op(init, *acc) : init;
}

/// The smallest element of the global array and its GLOBAL index, NumPy's rules: the lowest index
/// among equal values (across ranks too), the first NaN if there is one; an empty global array
/// gives {minimum::identity<T>(), -1}, as cpu::argmin. Bitwise cpu::argmin on the whole array.
template <class T>
key_value<T, std::int64_t> argmin(MPI_Comm comm, const T* shard, std::int64_t n) {
  return detail::arg_extreme<multireduce::argmin, minimum>(comm, shard, n, ranks::job::argmin, "multireduce::mpi::argmin");
}

/// The largest element and its GLOBAL index, as argmin.
template <class T>
key_value<T, std::int64_t> argmax(MPI_Comm comm, const T* shard, std::int64_t n) {
  return detail::arg_extreme<multireduce::argmax, maximum>(comm, shard, n, ranks::job::argmax, "multireduce::mpi::argmax");
}

/// count, sum, mean, var, std, min, argmin, max, argmax (global indices), l1 and l2 of the global
/// array in one pass: bitwise cpu::statistics on the whole array (the same chunk states, with the
/// shift of the whole array, merged in the same order).
template <class T>
multireduce::statistics<T> statistics(MPI_Comm comm, const T* shard, std::int64_t n, const options& opt = {}) {
  static_assert(std::is_arithmetic_v<T>, "multireduce::mpi::statistics needs arithmetic elements");
  using state = statistics_accumulator<T>;
  auto h = ranks::make_header<T>(ranks::job::statistics, n);
  detail::check_shard(h, shard, n);
  detail::check_granule(h, opt.granule);
  detail::session s(comm, "multireduce::mpi::statistics", h);
  double shift = ranks::global_first(s.table);
  if (!(std::abs(shift) <= std::numeric_limits<double>::max())) shift = 0;  // NaN or inf first: no shift (cpu::statistics)
  const detail::owned_range<T> r(s, opt.granule, shard, n);
  const T* x = r.x;
  const std::int64_t lo = r.lo, hi = r.hi, chunks = r.chunks();
  std::vector<state> partial(static_cast<std::size_t>(chunks));
  MULTIREDUCE_OMP(parallel for schedule(static) if (chunks > 1))
  for (std::int64_t c = 0; c < chunks; ++c) {
    state p = cpu::detail::stats_chunk<T>(x, c * cpu::chunk_elements, std::min(hi - lo, (c + 1) * cpu::chunk_elements), shift);
    p.argmin += lo;  // (non-empty chunks: both indices are set)
    p.argmax += lo;
    partial[std::size_t(c)] = p;
  }
  state acc;
  detail::gather_in_order(s, partial, r.per_rank, [&](const state& p) { acc = state::merge(acc, p); });
  return acc.result();
}

/// Sliding windows over the global array: out[i] = init (+) x[i] (+) ... (+) x[i + W - 1]. This
/// rank writes the windows that START in its shard, count = max(0, min(n, N - W + 1 - start)),
/// to out[0, count); the elements after (and, for bitwise blocks, before) its shard come from the
/// other ranks (any number of them: shards may be shorter than W or empty). Bitwise the
/// corresponding outputs of cpu::window_reduce on the whole array, for every W and operator.
/// @return count, the outputs this rank wrote.
template <class T, class Out, class Op, class Acc>
std::int64_t window_reduce(MPI_Comm comm, const T* shard, std::int64_t n, std::int64_t window, Out out, Op op, Acc init) {
  MULTIREDUCE_CPU_CHECK_OPERATOR(Op, Acc);
  static_assert(std::is_trivially_copyable_v<T>, "multireduce::mpi::window_reduce: elements travel as bytes");
  const char* function = "multireduce::mpi::window_reduce";
  auto h = ranks::window_header<T, Acc, Op>(n, window, ranks::is_null(out), init);
  detail::check_shard(h, shard, n);
  detail::session s(comm, function, h);
  for (int r = 0; r < s.l.size; ++r)
    if (ranks::window_outputs(s.l, r, window) > 0 && (s.table[std::size_t(r)].flags & ranks::header_output_null))
      throw std::invalid_argument(std::string(function) + ": rank " + std::to_string(r) + " passed a null output for " +
                                  std::to_string(ranks::window_outputs(s.l, r, window)) + " windows");
  const std::int64_t align = window > cpu::detail::direct_window_max ? window : 1;
  const ranks::halo_plan halo = ranks::make_window_plan(s.l, window, align);
  const std::vector<T> gathered = detail::exchange_halo(s, halo, shard, n);
  const int me = s.me();
  const std::int64_t count = ranks::window_outputs(s.l, me, window);
  if (count == 0) return 0;
  const std::int64_t lo = halo.begin[std::size_t(me)], hi = halo.end[std::size_t(me)];
  std::vector<T> storage;
  const T* x = detail::range(s, halo, gathered, shard, lo, hi, storage);
  if (lo == s.l.begin(me)) return cpu::window_reduce(x, hi - lo, window, out, op, init);
  std::vector<Acc> all(std::size_t(hi - lo - window + 1), init);  // windows from lo; this rank's from start
  cpu::window_reduce(x, hi - lo, window, all.data(), op, init);
  const std::int64_t skip = s.l.begin(me) - lo;
  for (std::int64_t i = 0; i < count; ++i) out[i] = all[std::size_t(skip + i)];
  return count;
}

/// The k nearest training descriptors of every query by Hamming distance, with GLOBAL training
/// indices: the queries (queries x bytes, host memory) are the same on every rank, the training
/// rows sharded (this rank holds `trains` rows). idx/dist (queries x k int32, host memory) get,
/// on every rank, exactly cpu::knn_hamming's result on the whole training set: distance, then
/// lower index (OpenCV's order); -1 past the training set's size.
inline void knn_hamming(MPI_Comm comm, const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train,
                        std::int64_t trains, int bytes, int k, std::int32_t* idx, std::int32_t* dist) {
  const auto h = ranks::knn_header(query, queries, train, trains, bytes, std::numeric_limits<int>::max(), k, idx, dist);
  detail::session s(comm, "multireduce::mpi::knn_hamming", h);
  if (queries == 0) return;
  const std::size_t per = std::size_t(queries) * std::size_t(k);
  std::vector<std::int32_t> mine(2 * per), all(2 * per * std::size_t(s.l.size));
  cpu::knn_hamming(query, queries, train, trains, bytes, k, mine.data(), mine.data() + per);
  const std::int64_t first = s.l.begin(s.me());
  for (std::size_t i = 0; i < per; ++i)
    if (mine[i] >= 0) mine[i] = static_cast<std::int32_t>(mine[i] + first);
  s.t.allgather(mine.data(), all.data(), 2 * per * sizeof(std::int32_t));
  // Rank r's slot: [idx | dist]; merge_knn wants every rank's idx, then every rank's dist.
  std::vector<std::int32_t> all_idx(per * std::size_t(s.l.size)), all_dist(all_idx.size());
  for (int r = 0; r < s.l.size; ++r) {
    std::memcpy(all_idx.data() + std::size_t(r) * per, all.data() + std::size_t(r) * 2 * per, per * sizeof(std::int32_t));
    std::memcpy(all_dist.data() + std::size_t(r) * per, all.data() + std::size_t(r) * 2 * per + per,
                per * sizeof(std::int32_t));
  }
  ranks::merge_knn(all_idx.data(), all_dist.data(), s.l.size, queries, k, idx, dist);
}

}  // namespace multireduce::mpi
