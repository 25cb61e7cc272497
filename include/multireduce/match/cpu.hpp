// multireduce/match/cpu.hpp -- the matcher on the CPU: brute-force Hamming k-NN with all cores
// (OpenMP) and 64-bit popcounts, and the whole match (k-NN, rules, cross-check). The contract is
// match/match.hpp's.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__CUDACC__) && !defined(__NVCOMPILER) && !defined(__INTEL_LLVM_COMPILER)
#define MULTIREDUCE_MATCH_AVX512 1  // knn_rows_avx512 is built (and runs where the CPU has it)
#include <immintrin.h>
#endif

#include "../cpu/detail/parallel.hpp"
#include "collection.hpp"
#include "match.hpp"

namespace multireduce {
namespace cpu {

namespace detail {

/// Keeps the k smallest (distance, index) keys seen, sorted; indices arrive in increasing order,
/// so a strictly smaller distance is needed to pass an equal one.
struct top_k {
  int k;
  std::int32_t dist[match_max_k], idx[match_max_k];
  int size = 0;
  void push(std::int32_t d, std::int32_t i) {
    if (size == k && d >= dist[k - 1]) return;
    int p = size < k ? size++ : k - 1;
    while (p > 0 && dist[p - 1] > d) {
      dist[p] = dist[p - 1], idx[p] = idx[p - 1];
      --p;
    }
    dist[p] = d, idx[p] = i;
  }
};

/// On x86-64 with GCC or Clang (not in nvcc's host pass): clones of the distance loop for CPUs with
/// AVX-512 VPOPCNTDQ, AVX2 and POPCNT, picked at load time, so a portable build still uses the
/// popcount instructions.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__CUDACC__) && !defined(__NVCOMPILER) && !defined(__INTEL_LLVM_COMPILER)
#define MULTIREDUCE_POPCOUNT_CLONES __attribute__((target_clones("arch=icelake-server", "arch=haswell", "popcnt", "default")))
#else
#define MULTIREDUCE_POPCOUNT_CLONES
#endif

/// d[i] = hamming(a, train row first + i) for i < count (rows of `words` 64-bit words, a copy of
/// the bytes: no alignment needed). A plain loop over rows the compiler vectorises.
MULTIREDUCE_POPCOUNT_CLONES
inline void hamming_row_block(const std::uint64_t* a, const std::uint64_t* rows, int words, std::int64_t count,
                              std::int32_t* d) {
  for (std::int64_t i = 0; i < count; ++i) {
    std::int32_t sum = 0;
    for (int w = 0; w < words; ++w) sum += std::popcount(a[w] ^ rows[i * words + w]);
    d[i] = sum;
  }
}

#if defined(MULTIREDUCE_MATCH_AVX512)
/// Whether this CPU runs knn_rows_avx512 (AVX-512 F and VPOPCNTDQ), asked once.
inline bool cpu_has_avx512_popcount() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq");
  return has;
}

/// The distances of queries a[0, nq) (rows of `words` words) to training rows t0 + [0, count),
/// whose words are transposed (word w of row i at rows_t[w * stride + i], stride a multiple of 8),
/// pushed into lists[0, nq): eight rows to a 512-bit vector, four queries sharing each load. The
/// distances stay in registers; one compare against each list's admission bound (its k-th
/// distance once full) finds the few that enter it.
__attribute__((target("avx512f,avx512vpopcntdq"))) inline void knn_rows_avx512(
    const std::uint64_t* a, int nq, const std::uint64_t* rows_t, std::int64_t stride, int words, std::int64_t count,
    std::int64_t t0, top_k* lists) {
  constexpr int queries_per_pass = 4;
  for (int q = 0; q < nq; q += queries_per_pass) {
    const int here = nq - q < queries_per_pass ? nq - q : queries_per_pass;
    const std::uint64_t* aq = a + std::size_t(q) * words;
    for (std::int64_t i = 0; i < count; i += 8) {
      const __mmask8 valid = count - i >= 8 ? __mmask8(0xff) : static_cast<__mmask8>((1u << (count - i)) - 1);
      __m512i ds[queries_per_pass];  // (unrolled: registers)
#pragma GCC unroll 4
      for (int j = 0; j < queries_per_pass; ++j) ds[j] = _mm512_setzero_si512();
      for (int w = 0; w < words; ++w) {
        const __m512i r = _mm512_load_si512(rows_t + std::size_t(w) * stride + i);
#pragma GCC unroll 4
        for (int j = 0; j < queries_per_pass; ++j)
          if (j < here)
            ds[j] = _mm512_add_epi64(
                ds[j], _mm512_popcnt_epi64(_mm512_xor_si512(r, _mm512_set1_epi64(std::int64_t(aq[j * words + w])))));
      }
      for (int j = 0; j < here; ++j) {
        top_k& l = lists[q + j];
        const std::int64_t bound = l.size == l.k ? l.dist[l.k - 1] : std::numeric_limits<std::int32_t>::max();
        __mmask8 m = _mm512_mask_cmplt_epi64_mask(valid, ds[j], _mm512_set1_epi64(bound));
        if (m == 0) continue;  // (after the first rows, nearly always)
        alignas(64) std::int64_t v[8];
        _mm512_store_si512(v, ds[j]);
        for (; m != 0; m = static_cast<__mmask8>(m & (m - 1))) {
          const int lane = __builtin_ctz(m);
          l.push(static_cast<std::int32_t>(v[lane]), static_cast<std::int32_t>(t0 + i + lane));
        }
      }
    }
  }
}
#endif

}  // namespace detail

/// The k nearest training descriptors of every query by Hamming distance (idx, dist: queries x k,
/// -1 past the training set's size), with all cores (OpenMP) and 64-bit popcounts (POPCNT or
/// AVX-512 VPOPCNTDQ where the CPU has them). Query blocks against training blocks that stay in
/// cache: on CPUs with AVX-512 VPOPCNTDQ, eight training rows at a time against four queries
/// (knn_rows_avx512); elsewhere the distances of one query to a training block first, then its
/// top-k list.
inline void knn_hamming(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train, std::int64_t trains,
                        int bytes, int k, std::int32_t* idx, std::int32_t* dist) {
  check_match_arguments(queries, trains, bytes, k);
  constexpr std::int64_t query_block = 64, train_block = 1024;
  const int words = (bytes + 7) / 8;  // rows widened to whole 64-bit words (zero padding)
  const std::int64_t blocks = (queries + query_block - 1) / query_block;
  // Called from a parallel region (the collection matcher's, or the caller's own): this thread alone.
  MULTIREDUCE_OMP(parallel for schedule(dynamic, 1) if(!omp_in_parallel()))
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t q0 = b * query_block, q1 = std::min(queries, q0 + query_block);
    std::vector<detail::top_k> best(static_cast<std::size_t>(q1 - q0), detail::top_k{k, {}, {}, 0});
    std::vector<std::uint64_t> a(static_cast<std::size_t>((q1 - q0) * words), 0), rows(std::size_t(train_block * words));
    for (std::int64_t q = q0; q < q1; ++q) std::memcpy(&a[std::size_t((q - q0) * words)], query + q * bytes, std::size_t(bytes));
    std::vector<std::int32_t> d(static_cast<std::size_t>(train_block));
#if defined(MULTIREDUCE_MATCH_AVX512)
    // For knn_rows_avx512, the training block's words transposed (64-byte aligned: whole vectors
    // of 8 rows).
    const bool avx512 = detail::cpu_has_avx512_popcount();
    std::vector<std::uint64_t> rows_t(avx512 ? std::size_t(train_block * words) + 8 : 0);
    std::uint64_t* t_words = rows_t.data();
    while (reinterpret_cast<std::uintptr_t>(t_words) % 64 != 0) ++t_words;
#endif
    for (std::int64_t t0 = 0; t0 < trains; t0 += train_block) {
      const std::int64_t t1 = std::min(trains, t0 + train_block);
      std::fill(rows.begin(), rows.end(), 0);
      for (std::int64_t t = t0; t < t1; ++t)
        std::memcpy(&rows[std::size_t((t - t0) * words)], train + t * bytes, std::size_t(bytes));
#if defined(MULTIREDUCE_MATCH_AVX512)
      if (avx512) {
        for (std::int64_t i = 0; i < t1 - t0; ++i)
          for (int w = 0; w < words; ++w) t_words[std::size_t(w) * train_block + std::size_t(i)] = rows[std::size_t(i * words + w)];
        detail::knn_rows_avx512(a.data(), static_cast<int>(q1 - q0), t_words, train_block, words, t1 - t0, t0,
                                best.data());
        continue;
      }
#endif
      for (std::int64_t q = q0; q < q1; ++q) {
        detail::hamming_row_block(&a[std::size_t((q - q0) * words)], rows.data(), words, t1 - t0, d.data());
        auto& list = best[static_cast<std::size_t>(q - q0)];
        for (std::int64_t t = t0; t < t1; ++t) list.push(d[std::size_t(t - t0)], static_cast<std::int32_t>(t));
      }
    }
    for (std::int64_t q = q0; q < q1; ++q) {
      const auto& list = best[static_cast<std::size_t>(q - q0)];
      for (int j = 0; j < k; ++j) {
        idx[q * k + j] = j < list.size ? list.idx[j] : -1;
        dist[q * k + j] = j < list.size ? list.dist[j] : -1;
      }
    }
  }
}

/// knn_hamming, then accept_matches (with the reverse 1-NN search when rule.cross_check).
inline std::vector<match> match_descriptors(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train,
                                            std::int64_t trains, int bytes, int k, const match_rule& rule,
                                            std::vector<std::int32_t>* knn_idx = nullptr,
                                            std::vector<std::int32_t>* knn_dist = nullptr) {
  check_match_rule(rule);
  std::vector<std::int32_t> idx(static_cast<std::size_t>(queries * k)), dist(idx.size());
  knn_hamming(query, queries, train, trains, bytes, k, idx.data(), dist.data());
  std::vector<std::int32_t> reverse;
  if (rule.cross_check) {
    reverse.resize(static_cast<std::size_t>(trains));
    std::vector<std::int32_t> reverse_dist(reverse.size());
    knn_hamming(train, trains, query, queries, bytes, 1, reverse.data(), reverse_dist.data());
  }
  auto kept = accept_matches(idx.data(), dist.data(), queries, k, rule, rule.cross_check ? reverse.data() : nullptr);
  if (knn_idx) *knn_idx = std::move(idx);
  if (knn_dist) *knn_dist = std::move(dist);
  return kept;
}

/// Matches every pair of a collection (host rows) as match_descriptors would and hands each
/// pair's matches to `done` (on this thread) when they are ready. With many pairs, every core
/// matches whole pairs (its searches on that core alone), a batch of pairs at a time, each batch
/// handed out in pair order; with fewer pairs than twice the cores, one pair after the other, each
/// with all cores.
inline void match_collection(const descriptor_collection& c, std::span<const image_pair> pairs, int k,
                             const match_rule& rule, const pair_matches_callback& done) {
  check_match_rule(rule);
  check_collection(c, pairs, k);
  if ((rule.ratio > 0 || rule.margin >= 0) && k < 2) throw std::invalid_argument("the ratio and margin tests need k >= 2");
  auto match_pair = [&](std::size_t p) {
    const image_pair q = pairs[p];
    return match_descriptors(c.image(q.first), c.rows_of(q.first), c.image(q.second), c.rows_of(q.second), c.bytes, k,
                             rule);
  };
  const std::size_t threads = static_cast<std::size_t>(max_threads());
  if (pairs.size() < 2 * threads) {
    for (std::size_t p = 0; p < pairs.size(); ++p) done(static_cast<std::int64_t>(p), match_pair(p));
    return;
  }
  const std::size_t batch = 16 * threads;
  std::vector<std::vector<match>> kept(batch);
  for (std::size_t first = 0; first < pairs.size(); first += batch) {
    const auto count = static_cast<std::int64_t>(std::min(batch, pairs.size() - first));
    bool out_of_memory = false;
    MULTIREDUCE_OMP(parallel for schedule(dynamic, 1))
    for (std::int64_t i = 0; i < count; ++i) {
      try {
        kept[std::size_t(i)] = match_pair(first + std::size_t(i));
      } catch (const std::bad_alloc&) {  // (the arguments were checked: nothing else throws)
        MULTIREDUCE_OMP(atomic write)
        out_of_memory = true;
      }
    }
    if (out_of_memory) throw std::bad_alloc();
    for (std::int64_t i = 0; i < count; ++i) done(static_cast<std::int64_t>(first) + i, kept[std::size_t(i)]);
  }
}

}  // namespace cpu
}  // namespace multireduce
