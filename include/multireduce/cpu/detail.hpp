// multireduce/cpu/detail.hpp -- the CPU backend's building blocks: OpenMP seam, chunk folds, the
// load-balanced segmented engine and the van Herk / Gil-Werman window engine. See cpu.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../operators.hpp"
#include "../statistics.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

// `#pragma omp ...` only where OpenMP is on: no unknown-pragma warnings elsewhere (nvcc's host
// pass, -Wall builds without -fopenmp); the code is then plain serial C++.
#if defined(_OPENMP)
#define MULTIREDUCE_DETAIL_PRAGMA(...) _Pragma(#__VA_ARGS__)
#define MULTIREDUCE_OMP(...) MULTIREDUCE_DETAIL_PRAGMA(omp __VA_ARGS__)
#else
#define MULTIREDUCE_OMP(...)
#endif

// GCC's vector extensions for the min/max folds, which GCC 12 does not vectorise by itself (the
// NaN-aware select defeats its SLP vectoriser): 4x faster for float. Other compilers, and nvcc's
// host pass, use the portable fold.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && !defined(__NVCOMPILER) && \
    !defined(__INTEL_LLVM_COMPILER)
#define MULTIREDUCE_CPU_VECTOR_EXTENSIONS 1
#else
#define MULTIREDUCE_CPU_VECTOR_EXTENSIONS 0
#endif

namespace multireduce::cpu {

/// The fixed unit of parallel work, in elements: a reduction is split into chunks of this many
/// elements whatever the number of threads, and chunk results are combined left to right, so
/// every result is the same with 1 thread or 64. (256 KiB of floats: a chunk stays in L2 while
/// argmin/argmax re-scan it.)
inline constexpr std::int64_t chunk_elements = std::int64_t{1} << 16;

/// Threads an OpenMP parallel region would use now (1 without OpenMP).
inline int max_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

namespace detail {

using multireduce::detail::is_nan;

/// Independent accumulators in a commutative chunk fold: enough to hide the latency of a floating
/// add and to fill two SSE / one AVX register of floats, so the compiler vectorises the loop.
inline constexpr int fold_lanes = 8;
/// Windows up to this long are folded directly: W operations per output (init included), no more
/// than vHGW's 4, and the loop vectorises.
inline constexpr std::int64_t direct_window_max = 4;
/// Window tile: windows up to this long are grouped whole into tiles of about this many elements;
/// longer ones are cut into sub-tiles of this many elements, joined through carries.
inline constexpr std::int64_t window_tile = std::int64_t{1} << 12;

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

inline void require(bool ok, const char* function, const std::string& message) {
  if (!ok) throw std::invalid_argument(std::string("multireduce::cpu::") + function + ": " + message);
}

inline void check_count(std::int64_t n, const char* function, const char* name) {
  require(n >= 0, function, std::string(name) + " must be >= 0, got " + std::to_string(n));
}

template <class Op, class Acc>
constexpr void check_operator() {
  static_assert(std::is_invocable_v<const Op&, const Acc&, const Acc&> &&
                    std::is_convertible_v<std::invoke_result_t<const Op&, const Acc&, const Acc&>, Acc>,
                "multireduce::cpu: op must be callable as Acc op(const Acc&, const Acc&) const, where Acc is the "
                "type of init");
}

#if MULTIREDUCE_CPU_VECTOR_EXTENSIONS
template <class T>
struct simd16 {
  typedef T type __attribute__((vector_size(16)));
};
template <class T>
using mask_lane = std::conditional_t<sizeof(T) == 1, std::int8_t,
                  std::conditional_t<sizeof(T) == 2, std::int16_t,
                  std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>>>;

/// The smallest (Max = false) or largest element of x[first, last), with minimum's/maximum's NaN
/// rule: a NaN wins (the first one). Needs last - first >= 4 * 16 / sizeof(T).
template <bool Max, class T>
T simd_extreme(const T* x, std::int64_t first, std::int64_t last) {
  using V = typename simd16<T>::type;
  using M = typename simd16<mask_lane<T>>::type;
  constexpr int width = 16 / sizeof(T), k = 4;
  V a[k];
  M nan_seen[k] = {};
  const std::int64_t steps = (last - first) / (k * width);
  for (int j = 0; j < k; ++j) {
    std::memcpy(&a[j], x + first + j * width, 16);
    if constexpr (!std::is_integral_v<T>) nan_seen[j] = (M)(a[j] != a[j]);
  }
  for (std::int64_t step = 1; step < steps; ++step)
    for (int j = 0; j < k; ++j) {
      V v;
      std::memcpy(&v, x + first + step * (k * width) + j * width, 16);
      if constexpr (Max) a[j] = a[j] < v ? v : a[j];
      else a[j] = v < a[j] ? v : a[j];
      if constexpr (!std::is_integral_v<T>) nan_seen[j] |= (M)(v != v);
    }
  T r = a[0][0];
  bool any_nan = false;
  auto take = [&](T y) {
    if (Max ? r < y : y < r) r = y;
  };
  for (int j = 0; j < k; ++j)
    for (int l = 0; l < width; ++l) {
      take(a[j][l]);
      any_nan |= nan_seen[j][l] != 0;
    }
  for (std::int64_t i = first + steps * (k * width); i < last; ++i) {
    take(x[i]);
    any_nan |= is_nan(x[i]);
  }
  if (any_nan)
    for (std::int64_t q = first; q < last; ++q)
      if (is_nan(x[q])) return x[q];
  return r;
}
#endif

/// Whether fold_nonempty<Acc>(It, ..., Op) can take simd_extreme.
template <class Acc, class It, class Op>
inline constexpr bool simd_extreme_applies =
    MULTIREDUCE_CPU_VECTOR_EXTENSIONS && (std::is_same_v<Op, minimum> || std::is_same_v<Op, maximum>) &&
    std::contiguous_iterator<It> && std::is_same_v<std::remove_cv_t<std::iter_value_t<It>>, Acc> &&
    std::is_arithmetic_v<Acc> && !std::is_same_v<Acc, bool> && (16 % sizeof(Acc) == 0);

/// Fold of in[first, last) (non-empty), no initial value. Commutative operators use fold_lanes
/// interleaved accumulators (element i goes to lane i % fold_lanes) and a fixed tree at the end;
/// others fold strictly left to right. Short ranges fold left to right either way.
template <class Acc, class It, class Op>
Acc fold_nonempty(It in, std::int64_t first, std::int64_t last, const Op& op) {
  auto x = [&](std::int64_t i) { return static_cast<Acc>(in[i]); };
#if MULTIREDUCE_CPU_VECTOR_EXTENSIONS
  if constexpr (simd_extreme_applies<Acc, It, Op>) {
    if (last - first >= 8 * 16 / static_cast<std::int64_t>(sizeof(Acc)))
      return simd_extreme<std::is_same_v<Op, maximum>>(std::to_address(in), first, last);
  }
#endif
  if constexpr (is_commutative_v<Op>) {
    if (last - first >= 2 * fold_lanes) {
      static_assert(fold_lanes == 8, "the lane initialisation below lists 8 lanes");
      Acc a[fold_lanes] = {x(first),     x(first + 1), x(first + 2), x(first + 3),
                           x(first + 4), x(first + 5), x(first + 6), x(first + 7)};
      std::int64_t i = first + fold_lanes;
      for (; i + fold_lanes <= last; i += fold_lanes)
        for (int j = 0; j < fold_lanes; ++j) a[j] = op(a[j], x(i + j));
      for (int j = 0; i + j < last; ++j) a[j] = op(a[j], x(i + j));
      for (int width = fold_lanes / 2; width > 0; width /= 2)
        for (int j = 0; j < width; ++j) a[j] = op(a[2 * j], a[2 * j + 1]);
      return a[0];
    }
  }
  Acc acc = x(first);
  for (std::int64_t i = first + 1; i < last; ++i) acc = op(acc, x(i));
  return acc;
}

/// op(init, fold of in[first, last)), or init for an empty range: one segment's result.
template <class Acc, class It, class Op>
Acc fold_segment(It in, std::int64_t first, std::int64_t last, const Op& op, const Acc& init) {
  if (last <= first) return init;
  return op(init, fold_nonempty<Acc>(in, first, last, op));
}

/// Reduction of in[0, n) (n > 0) without initial value: per-chunk folds in parallel, then the
/// chunk results left to right.
template <class Acc, class It, class Op>
Acc fold_chunks(It in, std::int64_t n, const Op& op) {
  const std::int64_t chunks = ceil_div(n, chunk_elements);
  if (chunks == 1) return fold_nonempty<Acc>(in, 0, n, op);
  std::vector<Acc> partial(static_cast<std::size_t>(chunks), static_cast<Acc>(in[0]));
  MULTIREDUCE_OMP(parallel for schedule(static))
  for (std::int64_t c = 0; c < chunks; ++c)
    partial[static_cast<std::size_t>(c)] =
        fold_nonempty<Acc>(in, c * chunk_elements, std::min(n, (c + 1) * chunk_elements), op);
  Acc acc = partial[0];
  for (std::int64_t c = 1; c < chunks; ++c) acc = op(acc, partial[static_cast<std::size_t>(c)]);
  return acc;
}

// ---- argmin / argmax ---------------------------------------------------------------------------

/// The first position in [first, last) holding a value equal to m (for a NaN m: the first NaN).
template <class V, class It>
std::int64_t find_first(It in, std::int64_t first, std::int64_t last, const V& m) {
  if (is_nan(m)) {
    for (std::int64_t i = first; i < last; ++i)
      if (is_nan(static_cast<V>(in[i]))) return i;
  } else {
    for (std::int64_t i = first; i < last; ++i)
      if (static_cast<V>(in[i]) == m) return i;
  }
  return first;  // not reached: m is one of the values
}

/// argmin (ArgOp = argmin, ValueOp = minimum) or argmax of in[0, n), n > 0. Per chunk: the extreme
/// value by the vectorised fold, then its first position by a scan of the (cached) chunk; chunk
/// results combine in order, so ties keep the lowest index and the first NaN wins (NumPy).
template <class ArgOp, class ValueOp, class It>
key_value<std::iter_value_t<It>, std::int64_t> arg_extreme(It in, std::int64_t n) {
  using V = std::iter_value_t<It>;
  using KV = key_value<V, std::int64_t>;
  auto chunk_result = [&](std::int64_t first, std::int64_t last) {
    if constexpr (std::is_arithmetic_v<V>) {
      const V m = fold_nonempty<V>(in, first, last, ValueOp{});
      const std::int64_t i = find_first(in, first, last, m);
      return KV{static_cast<V>(in[i]), i};
    } else {
      KV acc{static_cast<V>(in[first]), first};
      for (std::int64_t i = first + 1; i < last; ++i) acc = ArgOp{}(acc, KV{static_cast<V>(in[i]), i});
      return acc;
    }
  };
  const std::int64_t chunks = ceil_div(n, chunk_elements);
  std::vector<KV> partial(static_cast<std::size_t>(chunks));
  MULTIREDUCE_OMP(parallel for schedule(static) if (chunks > 1))
  for (std::int64_t c = 0; c < chunks; ++c)
    partial[static_cast<std::size_t>(c)] = chunk_result(c * chunk_elements, std::min(n, (c + 1) * chunk_elements));
  KV acc = partial[0];
  for (std::int64_t c = 1; c < chunks; ++c) acc = ArgOp{}(acc, partial[static_cast<std::size_t>(c)]);
  return acc;
}

// ---- statistics --------------------------------------------------------------------------------

/// The statistics state of in[first, last) (non-empty) from shifted sums with the given shift.
/// Three passes over the chunk (sums; min and max by the folds; their first positions): each
/// loop vectorises on its own, and the chunk is in cache after the first.
template <class T, class It>
statistics_accumulator<T> stats_chunk(It in, std::int64_t first, std::int64_t last, double shift) {
  using sum_type = statistics_sum_t<T>;
  constexpr int lanes = 4;  // 4 accumulators x 4 doubles: 8 SSE registers
  double s1[lanes] = {}, s2[lanes] = {}, l1[lanes] = {}, sq[lanes] = {};
  std::uint64_t integer_sum = 0;  // integer sums wrap (NumPy); unsigned makes that defined behaviour
  auto step = [&](int j, T v) {
    const double d = static_cast<double>(v), e = d - shift;
    s1[j] += e;
    s2[j] += e * e;
    l1[j] += d < 0 ? -d : d;
    sq[j] += d * d;
  };
  std::int64_t i = first;
  for (; i + lanes <= last; i += lanes)
    for (int j = 0; j < lanes; ++j) step(j, static_cast<T>(in[i + j]));
  for (int j = 0; i + j < last; ++j) step(j, static_cast<T>(in[i + j]));
  if constexpr (std::is_integral_v<T>)
    for (std::int64_t k = first; k < last; ++k) integer_sum += static_cast<std::uint64_t>(static_cast<T>(in[k]));
  auto total = [](const double* a) { return (a[0] + a[1]) + (a[2] + a[3]); };
  const double count = static_cast<double>(last - first), shifted_sum = total(s1);
  // Floating point: the sum from the shifted sum (one accumulator less), as the CUDA backend does.
  sum_type sum;
  if constexpr (std::is_integral_v<T>) sum = static_cast<sum_type>(integer_sum);
  else sum = count * shift + shifted_sum;
  const T min_value = fold_nonempty<T>(in, first, last, minimum{});
  const T max_value = fold_nonempty<T>(in, first, last, maximum{});
  const std::int64_t i_min = find_first(in, first, last, min_value);
  const std::int64_t i_max = find_first(in, first, last, max_value);
  return statistics_accumulator<T>::from_shifted_sums(last - first, shift, shifted_sum, total(s2), sum, total(l1),
                                                      total(sq), static_cast<T>(in[i_min]), i_min,
                                                      static_cast<T>(in[i_max]), i_max);
}

// ---- segmented reductions ----------------------------------------------------------------------

/// Reduces `segments` segments: segment s is in[seg_begin(s), seg_begin(s) + length), where
/// work(s) is the exclusive prefix sum of (length + 1) over the segments before s (so
/// length(s) = work(s + 1) - work(s) - 1, and empty segments count as work too).
///
/// The work range [0, work(segments)) is cut into items of chunk_elements units; items run in
/// parallel. A segment shorter than chunk_elements is reduced whole by the item where it starts;
/// a longer one is reduced in pieces, one per item it overlaps, whose results are combined left
/// to right afterwards. The cut depends on the offsets only, never on the thread count.
template <class Acc, class It, class Out, class Op, class SegBegin, class Work>
void segmented_engine(It in, Out out, std::int64_t segments, const SegBegin& seg_begin, const Work& work,
                      const Op& op, const Acc& init) {
  if (segments == 0) return;
  constexpr std::int64_t unit = chunk_elements;
  const std::int64_t total = work(segments);
  const std::int64_t items = ceil_div(total, unit);
  auto segment_at = [&](std::int64_t w) {  // the s with work(s) <= w < work(s + 1)
    std::int64_t lo = 0, hi = segments;
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (work(mid) <= w) lo = mid;
      else hi = mid;
    }
    return lo;
  };
  // Pieces of long segments: head[k] is item k's piece of a segment begun in an earlier item,
  // tail[k] its piece of a long segment begun in item k. Empty pieces stay nullopt.
  std::vector<std::optional<Acc>> head(static_cast<std::size_t>(items)), tail(static_cast<std::size_t>(items));
  std::vector<std::int64_t> first_segment(static_cast<std::size_t>(items));

  MULTIREDUCE_OMP(parallel for schedule(static) if (items > 1))
  for (std::int64_t k = 0; k < items; ++k) {
    const std::int64_t lo = k * unit, hi = std::min(total, lo + unit);
    std::int64_t s = segment_at(lo);
    first_segment[static_cast<std::size_t>(k)] = s;
    for (std::int64_t ws = work(s); s < segments && ws < hi; ++s) {
      const std::int64_t we = work(s + 1), length = we - ws - 1, b = seg_begin(s);
      if (length < unit) {
        if (ws >= lo) out[s] = fold_segment(in, b, b + length, op, init);
      } else {
        const std::int64_t j0 = std::max(ws, lo) - ws, j1 = std::min(std::min(we, hi) - ws, length);
        std::optional<Acc> piece;
        if (j1 > j0) piece = fold_nonempty<Acc>(in, b + j0, b + j1, op);
        (ws < lo ? head : tail)[static_cast<std::size_t>(k)] = piece;
      }
      ws = we;
    }
  }

  // Long segments end in the item holding their last work unit: that item joins the pieces.
  MULTIREDUCE_OMP(parallel for schedule(static) if (items > 1))
  for (std::int64_t k = 0; k < items; ++k) {
    const std::int64_t lo = k * unit, hi = std::min(total, lo + unit);
    const std::int64_t s = first_segment[static_cast<std::size_t>(k)];
    const std::int64_t ws = work(s), we = work(s + 1);
    if (ws >= lo || we - ws - 1 < unit || we > hi) continue;
    const std::int64_t k_start = ws / unit;
    Acc acc = init;
    if (const auto& p = tail[static_cast<std::size_t>(k_start)]) acc = op(acc, *p);
    for (std::int64_t j = k_start + 1; j <= k; ++j)
      if (const auto& p = head[static_cast<std::size_t>(j)]) acc = op(acc, *p);
    out[s] = acc;
  }
}

// ---- window reductions (van Herk / Gil-Werman) -------------------------------------------------
//
// Cut the input into blocks of W elements aligned at 0. For a window starting at i = bW + r,
// r > 0, the window is the suffix of block b from r plus the prefix of block b + 1 up to r - 1:
//   out[i] = init (+) (S_b[r] (+) P_{b+1}[r - 1]),  S_b[r] = x[bW+r] (+) ... (+) x[bW+W-1],
//                                                 P_{b+1}[q] = x[(b+1)W] (+) ... (+) x[(b+1)W+q];
// for r = 0 the window is block b itself: out[i] = init (+) S_b[0]. Four operations per element
// whatever W (suffix, prefix, join, init), no inverse needed, operands kept in left-to-right order. Blocks with
// outputs: b < n / W (the last one may need only part of P_{b+1}).

/// Windows of compile-time length W <= direct_window_max, folded directly: out[i] = init (+)
/// (in[i] (+) ... (+) in[i + W - 1]), the same association as a short segment.
template <int W, class Acc, class It, class Out, class Op>
void window_direct(It in, std::int64_t outputs, Out out, const Op& op, const Acc& init) {
  MULTIREDUCE_OMP(parallel for schedule(static) if (outputs > chunk_elements))
  for (std::int64_t i = 0; i < outputs; ++i) {
    Acc r = static_cast<Acc>(in[i]);
    for (int j = 1; j < W; ++j) r = op(r, static_cast<Acc>(in[i + j]));
    out[i] = op(init, r);
  }
}

/// W <= window_tile: tiles of whole blocks. Blocks are taken four at a time so that eight
/// independent chains (a suffix and a prefix per block) advance side by side in registers.
template <class Acc, class It, class Out, class Op>
void window_blocks(It in, std::int64_t n, std::int64_t w, Out out, const Op& op, const Acc& init) {
  auto x = [&](std::int64_t i) { return static_cast<Acc>(in[i]); };
  const std::int64_t blocks = n / w;                                      // blocks holding outputs
  const std::int64_t group = std::max<std::int64_t>(1, window_tile / w);  // blocks per tile
  const std::int64_t tiles = ceil_div(blocks, group);
  // P_{b+1}[0, len) is needed for the outputs r = 1..len of block b: len = min(W - 1, n - (b + 1)W).
  auto prefix_length = [&](std::int64_t b) { return std::min(w - 1, n - (b + 1) * w); };
  MULTIREDUCE_OMP(parallel if (tiles > 1))
  {
    std::vector<Acc> suffix(static_cast<std::size_t>(group * w), init), prefix(static_cast<std::size_t>(group * w), init);
    MULTIREDUCE_OMP(for schedule(static))
    for (std::int64_t t = 0; t < tiles; ++t) {
      const std::int64_t b0 = t * group, g_count = std::min(blocks, b0 + group) - b0;
      Acc* S = suffix.data();
      Acc* P = prefix.data();
      std::int64_t g = 0;
      for (; g + 4 <= g_count && prefix_length(b0 + g + 3) == w - 1; g += 4) {
        const std::int64_t base = (b0 + g) * w;
        Acc s[4] = {x(base + w - 1), x(base + 2 * w - 1), x(base + 3 * w - 1), x(base + 4 * w - 1)};
        Acc p[4] = {x(base + w), x(base + 2 * w), x(base + 3 * w), x(base + 4 * w)};
        for (int j = 0; j < 4; ++j) {
          S[(g + j) * w + w - 1] = s[j];
          P[(g + j) * w] = p[j];
        }
        for (std::int64_t q = 1; q < w - 1; ++q)
          for (int j = 0; j < 4; ++j) {
            s[j] = op(x(base + j * w + w - 1 - q), s[j]);
            S[(g + j) * w + w - 1 - q] = s[j];
            p[j] = op(p[j], x(base + (j + 1) * w + q));
            P[(g + j) * w + q] = p[j];
          }
        for (int j = 0; j < 4; ++j) S[(g + j) * w] = op(x(base + j * w), s[j]);
      }
      for (; g < g_count; ++g) {  // the tile's last few blocks, and the array's last block
        const std::int64_t base = (b0 + g) * w, len = prefix_length(b0 + g);
        Acc s = x(base + w - 1);
        S[g * w + w - 1] = s;
        for (std::int64_t r = w - 2; r >= 0; --r) S[g * w + r] = s = op(x(base + r), s);
        if (len > 0) {
          Acc p = x(base + w);
          P[g * w] = p;
          for (std::int64_t q = 1; q < len; ++q) P[g * w + q] = p = op(p, x(base + w + q));
        }
      }
      for (g = 0; g < g_count; ++g) {
        const std::int64_t base = (b0 + g) * w, len = prefix_length(b0 + g);
        const Acc* Sg = S + g * w;
        const Acc* Pg = P + g * w - 1;
        out[base] = op(init, Sg[0]);
        for (std::int64_t r = 1; r <= len; ++r) out[base + r] = op(init, op(Sg[r], Pg[r]));
      }
    }
  }
}

/// W > window_tile: every block is cut into sub-tiles of window_tile elements so that long windows
/// (a few blocks, or one) still use every thread and bounded memory. Pass 1 folds each sub-tile;
/// pass 2 turns those into carries (the fold of the rest of the block after a sub-tile, and of the
/// block before it); pass 3 runs each sub-tile's suffix and prefix chains from its carries.
template <class Acc, class It, class Out, class Op>
void window_subtiles(It in, std::int64_t n, std::int64_t w, Out out, const Op& op, const Acc& init) {
  auto x = [&](std::int64_t i) { return static_cast<Acc>(in[i]); };
  constexpr std::int64_t tile = window_tile;
  const std::int64_t blocks = n / w;                   // blocks holding outputs
  const std::int64_t span = blocks + (blocks * w < n);  // plus a partial block read by prefixes
  const std::int64_t per_block = ceil_div(w, tile);
  const std::int64_t slots = span * per_block;
  auto slot_range = [&](std::int64_t slot) {  // elements of sub-tile `slot`, clipped to n
    const std::int64_t b = slot / per_block, k = slot % per_block;
    const std::int64_t first = b * w + k * tile, last = std::min(b * w + std::min(w, (k + 1) * tile), n);
    return std::pair<std::int64_t, std::int64_t>{first, last};
  };
  std::vector<std::optional<Acc>> fold(static_cast<std::size_t>(slots)), after(static_cast<std::size_t>(slots)),
      before(static_cast<std::size_t>(slots));
  MULTIREDUCE_OMP(parallel for schedule(static))
  for (std::int64_t slot = 0; slot < slots; ++slot) {
    const auto [first, last] = slot_range(slot);
    if (first < last) fold[static_cast<std::size_t>(slot)] = fold_nonempty<Acc>(in, first, last, op);
  }
  auto join = [&](const std::optional<Acc>& a, const std::optional<Acc>& b) -> std::optional<Acc> {
    if (!a) return b;
    if (!b) return a;
    return op(*a, *b);
  };
  MULTIREDUCE_OMP(parallel for schedule(static))
  for (std::int64_t b = 0; b < span; ++b) {
    const std::size_t s0 = static_cast<std::size_t>(b * per_block), count = static_cast<std::size_t>(per_block);
    for (std::size_t k = 1; k < count; ++k) before[s0 + k] = join(before[s0 + k - 1], fold[s0 + k - 1]);
    for (std::size_t k = count - 1; k-- > 0;) after[s0 + k] = join(fold[s0 + k + 1], after[s0 + k + 1]);
  }
  MULTIREDUCE_OMP(parallel if (blocks * per_block > 1))
  {
    std::vector<Acc> suffix(static_cast<std::size_t>(tile), init);
    MULTIREDUCE_OMP(for schedule(static))
    for (std::int64_t slot = 0; slot < blocks * per_block; ++slot) {
      const std::int64_t b = slot / per_block, k = slot % per_block, base = b * w;
      const std::int64_t r0 = k * tile, r1 = std::min(w, r0 + tile);  // block b is whole
      const std::int64_t r_last = std::min(r1 - 1, n - w - base);        // last output start in the sub-tile
      if (r0 > r_last) continue;
      Acc* S = suffix.data();
      const auto& carry = after[static_cast<std::size_t>(slot)];
      S[r1 - 1 - r0] = carry ? op(x(base + r1 - 1), *carry) : x(base + r1 - 1);
      for (std::int64_t r = r1 - 2; r >= r0; --r) S[r - r0] = op(x(base + r), S[r - r0 + 1]);
      // running: the fold of block b + 1 over [0, r), for the output at r.
      std::int64_t r = r0;
      Acc running = init;
      if (r0 == 0) {
        out[base] = op(init, S[0]);
        if (r_last == 0) continue;
        running = x(base + w);
        r = 1;
      } else {
        running = *before[static_cast<std::size_t>(slot + per_block)];  // block b + 1 holds >= r0 elements
      }
      for (;; ++r) {
        out[base + r] = op(init, op(S[r - r0], running));
        if (r == r_last) break;
        running = op(running, x(base + w + r));
      }
    }
  }
}

}  // namespace detail
}  // namespace multireduce::cpu
