// multireduce/cuda/match.cuh -- brute-force Hamming k-NN of binary descriptors on the GPU.
//
// Two kernels, one contract (multireduce/match.hpp): for every query the k nearest training
// descriptors, by distance then by training index (OpenCV's order), -1 past the training set.
//  - tensor_core (sm_80 and newer): mma.sync m16n8k256 on b1 operands with .and.popc gives
//    popc(a AND b) for a 16 x 8 tile of (query, train) pairs per instruction, and
//    hamming(a, b) = popc(a) + popc(b) - 2 popc(a AND b). A warp keeps 16 or 32 queries' A
//    fragments in registers and walks 128-row training tiles staged in shared memory. The
//    distances are then cheap and the top-k selection is the cost, so the epilogue is one
//    multiply-add and one compare per pair against the lane's current k-th best (queries'
//    popcounts folded into the threshold); only a pair that beats it takes the slow insertion.
//  - popcount (any GPU): the paper's section-8 kernel, made correct and modern: a group of 8
//    lanes holds 8 queries, each lane 1/8 of every query's words; per training row each lane
//    popcounts its words against all 8 queries and warp_multi_reduce<8, 8, swap> leaves lane i
//    with query i's full distance (7 shuffles for 8 sums) -- then the same top-k.
// Lanes see training rows in increasing index order, so a lane's list needs a strictly smaller
// distance to replace an entry; lists of different lanes, warps and training slices are merged by
// the key (distance, index). When there are too few queries to fill the GPU the training set is
// cut into slices and a second kernel merges the slices' lists.
// Batches: every launch carries a table of up to 48 searches (kernel parameters), each with its
// own query blocks and slices; a block finds its search by binary search of the table, so many
// small image pairs share one launch and fill the GPU together. A search can also be one piece of
// a larger training set (first_train_index, merge): the streamed search in cuda.cuh uses that.
// Descriptor widths: multiples of 4 bytes up to 128 (ORB 32, BRISK/FREAK/LATCH/AKAZE 64).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "../match.hpp"
#include "../cuda_lane.cuh"
#include "../operators.hpp"
#include "../warp_multi_reduce.hpp"
#include "common.cuh"

namespace multireduce::cuda {

/// Which kernel knn_hamming runs. automatic: tensor_core on sm_80 and newer, else popcount.
enum class match_path { automatic, tensor_core, popcount };

/// One search of a batch (device pointers): the k nearest of each of the `queries` rows of
/// `query` among the `trains` rows of `train`, written to idx and dist (queries x k int32).
struct knn_pair {
  const std::uint8_t* query = nullptr;
  std::int64_t queries = 0;
  const std::uint8_t* train = nullptr;
  std::int64_t trains = 0;
  std::int32_t* idx = nullptr;
  std::int32_t* dist = nullptr;
  /// Added to every training index reported: `train`'s first row's place in a larger training
  /// set that is searched a piece at a time (first_train_index + trains must fit int32).
  std::int64_t first_train_index = 0;
  /// Merge the new neighbours into the lists already in idx/dist (an earlier piece's result, with
  /// lower training indices) instead of overwriting them.
  bool merge = false;
};

namespace detail {

inline constexpr int match_max_bytes = 128;
inline constexpr std::uint64_t empty_key = ~0ull;
/// Above every distance (at most 1024 bits): the threshold of a list that is not full yet.
inline constexpr std::int32_t no_limit = 1 << 16;
/// The popcount given to the padding rows past the training set's end: never near anything.
inline constexpr std::int32_t padding_popc = 1 << 24;

/// A (distance, index) pair as one ordered 64-bit key.
__device__ __forceinline__ std::uint64_t match_key(std::int32_t distance, std::int32_t index) {
  return (std::uint64_t(std::uint32_t(distance)) << 32) | std::uint32_t(index);
}

/// The K smallest keys, sorted ascending (empty_key fills).
template <int K>
struct key_list {
  std::uint64_t key[K];
  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int j = 0; j < K; ++j) key[j] = empty_key;
  }
  /// Inserts `x` if it is smaller than the largest kept key.
  __device__ __forceinline__ void insert(std::uint64_t x) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const std::uint64_t y = key[j];
      const bool smaller = x < y;
      key[j] = smaller ? x : y;
      x = smaller ? y : x;
    }
  }
  /// The distance a new pair must beat (strictly) to enter: the largest kept distance.
  __device__ __forceinline__ std::int32_t threshold() const {
    return key[K - 1] == empty_key ? no_limit : static_cast<std::int32_t>(key[K - 1] >> 32);
  }
  /// Merges the lists of the lanes `mask` apart (xor) into every one of them.
  __device__ __forceinline__ void merge_lanes(int mask) {
    std::uint64_t other[K];
#pragma unroll
    for (int j = 0; j < K; ++j) other[j] = __shfl_xor_sync(0xffffffffu, key[j], mask);
#pragma unroll
    for (int j = 0; j < K; ++j) insert(other[j]);
  }
};

/// Kernel configuration shared by the host code and the kernels.
inline constexpr int popcount_block_threads = 256;  // 8 warps x 32 queries
inline constexpr int tensor_block_threads = 128;    // 4 warps
inline constexpr int tensor_train_tile = 128;       // training rows per shared-memory tile

/// 16-query tiles per warp of the tensor-core kernel: 2 when k <= 2 (k > 2: 1, for the registers
/// of the longer lists), 4 for 256-bit descriptors and many queries (measured on the H200: more
/// MMAs per B fragment pay there; with 512 bits the registers, with few queries the fewer blocks
/// cost more).
inline int tensor_m_tiles(int kcap, int chunks, std::int64_t queries) {
  return kcap > 2 ? 1 : chunks <= 2 && queries >= 32768 ? 4 : 2;
}

/// Loads 32-bit word `w` of row `r` (zero past the row's words or the set's rows).
__device__ __forceinline__ std::uint32_t descriptor_word(const std::uint32_t* rows, std::int64_t count, int words,
                                                         std::int64_t r, int w) {
  return r < count && w < words ? __ldg(rows + r * words + w) : 0u;
}

/// One search of a launch: a query set against a training set (device rows of 32-bit words; the
/// counts fit int32), planned as query_blocks x slices blocks from first_block on.
struct knn_problem {
  const std::uint32_t* query;
  const std::uint32_t* train;
  std::uint64_t* partials;  // slices x queries x Kcap keys
  std::int32_t* idx;
  std::int32_t* dist;
  std::int32_t queries, trains;
  std::int32_t first_train_index;  // added to every training index (a piece of a larger set)
  std::int32_t query_blocks, slices;
  std::int32_t first_block;
  std::int32_t merge;  // the finish merges with the lists already in idx/dist
};

/// The problems of one launch, a kernel parameter (under the portable 4 KB).
inline constexpr int knn_launch_capacity = 48;
struct knn_launch {
  knn_problem problem[knn_launch_capacity];
  int count;
};

/// Where a block works: its problem, its block of queries and its training slice (slices are the
/// slow index, so the blocks running together share training rows in L2).
struct knn_block {
  int problem;
  std::int32_t query_block, slice;
};

/// Batch: the launch has several problems, its grid is 1-D and the block searches the table;
/// otherwise the grid is (query blocks, slices) of problem 0 (measured: fewer registers in the
/// kernels than with the division).
template <bool Batch>
__device__ __forceinline__ knn_block locate_block(const knn_launch& launch) {
  if constexpr (!Batch) return knn_block{0, static_cast<std::int32_t>(blockIdx.x), static_cast<std::int32_t>(blockIdx.y)};
  const int block = static_cast<int>(blockIdx.x);
  int lo = 0, hi = launch.count - 1;  // the last problem with first_block <= block
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (launch.problem[mid].first_block <= block) lo = mid;
    else hi = mid - 1;
  }
  const int local = block - launch.problem[lo].first_block;
  return knn_block{lo, local % launch.problem[lo].query_blocks, local / launch.problem[lo].query_blocks};
}

/// Writes a lane's list for query q of slice `slice` to the partial results.
template <int Kcap>
__device__ __forceinline__ void store_list(std::uint64_t* partials, std::int64_t queries, int slice, std::int64_t q,
                                           const key_list<Kcap>& list) {
  std::uint64_t* to = partials + (std::int64_t(slice) * queries + q) * Kcap;
#pragma unroll
  for (int j = 0; j < Kcap; ++j) to[j] = list.key[j];
}

/// The training rows of slice `slice` out of `slices`: [begin, end).
__device__ __forceinline__ void slice_rows(std::int64_t trains, int slice, int slices, std::int64_t& begin,
                                           std::int64_t& end) {
  begin = trains * slice / slices;
  end = trains * (slice + 1) / slices;
}

// ---- CUDA-core popcount path (the paper's kernel) -----------------------------------------------

/// Block: 256 threads = 256 queries of one search, one training slice (locate_block). Lane i of a
/// group of 8 holds words i, i+8, ... (M per query) of the group's 8 queries.
template <int M, int Kcap, bool Batch>
__global__ void __launch_bounds__(popcount_block_threads)
    knn_popcount_kernel(const __grid_constant__ knn_launch launch, int words) {
  const knn_block at = locate_block<Batch>(launch);
  const knn_problem& p = launch.problem[at.problem];
  const std::uint32_t* query = p.query;
  const std::uint32_t* train = p.train;
  const std::int64_t queries = p.queries, trains = p.trains;
  cuda_lane lane;
  const int member = lane.id() & 7;
  const std::int64_t group_first = std::int64_t(at.query_block) * popcount_block_threads + (threadIdx.x & ~7u);
  std::uint32_t q[8][M];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int m = 0; m < M; ++m) q[i][m] = descriptor_word(query, queries, words, group_first + i, member + 8 * m);
  std::int64_t begin, end;
  slice_rows(trains, at.slice, p.slices, begin, end);
  key_list<Kcap> best;
  best.clear();
  std::int32_t threshold = no_limit;
#pragma unroll 2
  for (std::int64_t t = begin; t < end; ++t) {
    std::uint32_t row[M];
#pragma unroll
    for (int m = 0; m < M; ++m) row[m] = descriptor_word(train, trains, words, t, member + 8 * m);
    std::uint32_t partial[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      partial[i] = 0;
#pragma unroll
      for (int m = 0; m < M; ++m) partial[i] += __popc(q[i][m] ^ row[m]);
    }
    // Lane `member` of the group ends with the distance of query `member`.
    const auto d = warp_multi_reduce<8, 8, multi_reduce_algorithm::swap>(lane, partial, sum{})[0];
    if (static_cast<std::int32_t>(d) < threshold) {
      best.insert(match_key(static_cast<std::int32_t>(d), static_cast<std::int32_t>(t) + p.first_train_index));
      threshold = best.threshold();
    }
  }
  const std::int64_t q_index = group_first + member;
  if (q_index < queries) store_list(p.partials, queries, at.slice, q_index, best);
}

// ---- binary tensor-core path --------------------------------------------------------------------

/// D = A x B + C for a 16 x 256 b1 A (row-major) and a 256 x 8 b1 B (column-major) with AND and
/// popcount: d[i][j] = c[i][j] + popc(A row i AND B column j).
__device__ __forceinline__ void mma_and_popc(std::uint32_t (&d)[4], const std::uint32_t (&a)[4],
                                             const std::uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // the host never launches the tensor-core kernel below sm_80
#endif
}

/// Block: 4 warps, each with Mt 16-query tiles (A fragments in registers); the training rows of
/// the block's slice go through shared memory 128 at a time, double-buffered: cp.async brings the
/// next tile while this one is searched. Rows are padded to C*8 + 4 words so that the B fragment
/// loads are free of bank conflicts.
/// Fragments (groupID g = lane/4, t = lane%4): A a0/a2 = row g, words c*8+t / c*8+t+4; a1/a3 the
/// same for row g+8; B b0/b1 = column g, words c*8+t / c*8+t+4; D d0,d1 = row g, columns 2t, 2t+1;
/// d2,d3 = row g+8.
template <int C, int Kcap, int Mt, bool Batch>
__global__ void __launch_bounds__(tensor_block_threads)
    knn_tensor_kernel(const __grid_constant__ knn_launch launch, int words) {
  constexpr int stride = C * 8 + 4, tile = tensor_train_tile, block_queries = tensor_block_threads / 32 * 16 * Mt;
  __shared__ __align__(16) std::uint32_t rows[2][tile * stride];
  __shared__ __align__(8) std::int32_t row_popc[2][tile];
  const knn_block at = locate_block<Batch>(launch);
  const knn_problem& p = launch.problem[at.problem];
  const std::uint32_t* query = p.query;
  const std::uint32_t* train = p.train;
  const std::int64_t queries = p.queries, trains = p.trains;
  cuda_lane lane;
  const int g = lane.id() >> 2, t = lane.id() & 3;
  const std::int64_t warp_first = std::int64_t(at.query_block) * block_queries + lane.warp_id() * 16 * Mt;
  // A fragments and the popcounts of this lane's query rows (g and g+8 of each m tile).
  std::uint32_t a[Mt][C][4];
  std::int32_t query_popc[Mt][2];
#pragma unroll
  for (int mt = 0; mt < Mt; ++mt) {
    const std::int64_t r0 = warp_first + mt * 16 + g, r1 = r0 + 8;
    int p0 = 0, p1 = 0;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      a[mt][c][0] = descriptor_word(query, queries, words, r0, c * 8 + t);
      a[mt][c][1] = descriptor_word(query, queries, words, r1, c * 8 + t);
      a[mt][c][2] = descriptor_word(query, queries, words, r0, c * 8 + t + 4);
      a[mt][c][3] = descriptor_word(query, queries, words, r1, c * 8 + t + 4);
      p0 += __popc(a[mt][c][0]) + __popc(a[mt][c][2]);
      p1 += __popc(a[mt][c][1]) + __popc(a[mt][c][3]);
    }
    p0 += __shfl_xor_sync(0xffffffffu, p0, 1), p1 += __shfl_xor_sync(0xffffffffu, p1, 1);
    p0 += __shfl_xor_sync(0xffffffffu, p0, 2), p1 += __shfl_xor_sync(0xffffffffu, p1, 2);
    query_popc[mt][0] = p0, query_popc[mt][1] = p1;
  }
  key_list<Kcap> best[Mt][2];
  std::int32_t limit[Mt][2];  // a pair enters row r's list when popc(b) - 2 popc(a AND b) < limit
#pragma unroll
  for (int mt = 0; mt < Mt; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) best[mt][h].clear(), limit[mt][h] = no_limit - query_popc[mt][h];

  std::int64_t begin, end;
  slice_rows(trains, at.slice, p.slices, begin, end);
  // Thread r copies row r of a tile into buffer `buf` with cp.async (zeros past the slice's end
  // and the row's words), so the next tile arrives while this one is searched.
  static_assert(tensor_block_threads == tile);
  auto stage = [&](std::int64_t t0, int buf) {
    const std::int64_t row = t0 + threadIdx.x;
    const bool in = row < end;
    const std::uint32_t* from = train + (in ? row : 0) * words;
#pragma unroll
    for (int w = 0; w < C * 8; ++w)
      copy_word_async(&rows[buf][threadIdx.x * stride + w], from + (w < words ? w : 0), in && w < words);
  };
  if (begin < end) stage(begin, 0);
  commit_copies();
  int buf = 0;
  for (std::int64_t t0 = begin; t0 < end; t0 += tile, buf ^= 1) {
    if (t0 + tile < end) stage(t0 + tile, buf ^ 1);
    commit_copies();
    wait_copies<1>();  // this thread's copies of tile t0 have landed
    {
      int ones = 0;
#pragma unroll
      for (int w = 0; w < C * 8; ++w) ones += __popc(rows[buf][threadIdx.x * stride + w]);
      row_popc[buf][threadIdx.x] = t0 + threadIdx.x < end ? ones : padding_popc;
    }
    __syncthreads();  // every row of tile t0 is in
#pragma unroll 2
    for (int n0 = 0; n0 < tile; n0 += 8) {
      std::uint32_t b[C][2];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        b[c][0] = rows[buf][(n0 + g) * stride + c * 8 + t];
        b[c][1] = rows[buf][(n0 + g) * stride + c * 8 + t + 4];
      }
      const int2 pb = *reinterpret_cast<const int2*>(row_popc[buf] + n0 + 2 * t);
#pragma unroll
      for (int mt = 0; mt < Mt; ++mt) {
        std::uint32_t d[4] = {0, 0, 0, 0};
#pragma unroll
        for (int c = 0; c < C; ++c) mma_and_popc(d, a[mt][c], b[c]);
        // popc(b) - 2 popc(a AND b): the distance less the query's popcount.
        const std::int32_t e0 = pb.x - 2 * std::int32_t(d[0]), e1 = pb.y - 2 * std::int32_t(d[1]);
        const std::int32_t e2 = pb.x - 2 * std::int32_t(d[2]), e3 = pb.y - 2 * std::int32_t(d[3]);
        if (e0 < limit[mt][0] || e1 < limit[mt][0] || e2 < limit[mt][1] || e3 < limit[mt][1]) {
          const std::int32_t column = static_cast<std::int32_t>(t0 + n0 + 2 * t) + p.first_train_index;
          const std::int32_t e[4] = {e0, e1, e2, e3};
#pragma unroll
          for (int v = 0; v < 4; ++v) {
            const int h = v >> 1;
            if (e[v] < limit[mt][h]) {
              best[mt][h].insert(match_key(e[v] + query_popc[mt][h], column + (v & 1)));
              limit[mt][h] = min(limit[mt][h], best[mt][h].threshold() - query_popc[mt][h]);
            }
          }
        }
      }
    }
    // The four lanes of a group hold the same rows: each row's list over the group has its k-th
    // best at or below the smallest of the lanes' k-th bests, and every column still to come is
    // higher than every column seen, so a pair must beat that (strictly) to matter. Sharing the
    // bound makes the lanes' lists, and the slow path, rarer.
#pragma unroll
    for (int mt = 0; mt < Mt; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        std::int32_t bound = limit[mt][h];
        bound = min(bound, __shfl_xor_sync(0xffffffffu, bound, 1));
        limit[mt][h] = min(bound, __shfl_xor_sync(0xffffffffu, bound, 2));
      }
    __syncthreads();  // every warp is done with buffer `buf` before it is refilled
  }
  // The four lanes of a group saw different columns of the same rows: merge them.
#pragma unroll
  for (int mt = 0; mt < Mt; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      best[mt][h].merge_lanes(1);
      best[mt][h].merge_lanes(2);
      const std::int64_t q = warp_first + mt * 16 + g + 8 * h;
      if (t == 0 && q < queries) store_list(p.partials, queries, at.slice, q, best[mt][h]);
    }
}

/// Merges the slices' lists of every query (and the lists already in idx/dist when the problem
/// says merge) and writes the k nearest: problem blockIdx.y, queries over x.
template <int Kcap>
__global__ void knn_finish_kernel(const __grid_constant__ knn_launch launch, int k) {
  const knn_problem& p = launch.problem[blockIdx.y];
  for (std::int64_t q = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < p.queries;
       q += std::int64_t(gridDim.x) * blockDim.x) {
    key_list<Kcap> best;
    best.clear();
    if (p.merge)
      for (int j = 0; j < k; ++j)
        if (const std::int32_t i = p.idx[q * k + j]; i >= 0) best.insert(match_key(p.dist[q * k + j], i));
    for (int s = 0; s < p.slices; ++s)
#pragma unroll
      for (int j = 0; j < Kcap; ++j) best.insert(p.partials[(std::int64_t(s) * p.queries + q) * Kcap + j]);
    for (int j = 0; j < k; ++j) {
      const std::uint64_t key = best.key[j];
      p.idx[q * k + j] = key == empty_key ? -1 : static_cast<std::int32_t>(key & 0xffffffffu);
      p.dist[q * k + j] = key == empty_key ? -1 : static_cast<std::int32_t>(key >> 32);
    }
  }
}

/// What every search of a call shares: the kernel, its list length and its tile shape.
struct knn_config {
  bool tensor;
  int kcap, units;  // units: chunks of 256 bits (tensor) or words per lane (popcount)
  int m_tiles;      // tensor: 16-query tiles per warp
  int block_queries;
  std::int64_t want_blocks;  // blocks that fill the GPU
  std::int64_t resident;     // tensor: blocks resident on the GPU at once (0: unknown)
  int searches;              // searches with queries
  double total_work;         // sum of queries x trains over the call's searches
};

/// One search's plan: its blocks and its partial lists' bytes in the temporary storage.
struct knn_pair_plan {
  int query_blocks, slices;
  std::size_t partial_bytes;
};

inline bool valid_knn_pair(const knn_pair& p) {
  return p.queries >= 0 && p.trains >= 0 && p.queries <= INT32_MAX && p.trains <= INT32_MAX &&
         p.first_train_index >= 0 && p.first_train_index + p.trains <= INT32_MAX &&
         (p.queries == 0 || reinterpret_cast<std::uintptr_t>(p.query) % 4 == 0) &&
         (p.trains == 0 || p.queries == 0 || reinterpret_cast<std::uintptr_t>(p.train) % 4 == 0);
}

/// The search kernel a configuration launches (all share one signature), and its block size.
struct knn_kernel_choice {
  void (*kernel)(knn_launch, int);
  int threads;
};
template <int Kcap, bool Batch>
knn_kernel_choice knn_kernel_for(const knn_config& c) {
  auto pick = [&](auto units) -> knn_kernel_choice {
    constexpr int U = decltype(units)::value;
    if (c.tensor && c.m_tiles == 4 && U <= 2 && Kcap == 2)
      return {knn_tensor_kernel<U <= 2 ? U : 2, 2, 4, Batch>, tensor_block_threads};
    if (c.tensor) return {knn_tensor_kernel<U, Kcap, Kcap <= 2 ? 2 : 1, Batch>, tensor_block_threads};
    return {knn_popcount_kernel<U, Kcap, Batch>, popcount_block_threads};
  };
  switch (c.units) {
    case 1: return pick(std::integral_constant<int, 1>{});
    case 2: return pick(std::integral_constant<int, 2>{});
    case 3: return pick(std::integral_constant<int, 3>{});
    default: return pick(std::integral_constant<int, 4>{});
  }
}

inline cudaError_t configure_knn(const knn_pair* pairs, int count, int bytes, int k, match_path path, knn_config& c) {
  if (count < 0 || (count > 0 && pairs == nullptr) || bytes <= 0 || bytes % 4 != 0 || bytes > match_max_bytes ||
      k < 1 || k > match_max_k)
    return cudaErrorInvalidValue;
  std::int64_t queries = 0;
  c.total_work = 0;
  c.searches = 0;
  for (int i = 0; i < count; ++i) {
    if (!valid_knn_pair(pairs[i])) return cudaErrorInvalidValue;
    queries += pairs[i].queries;
    c.total_work += double(pairs[i].queries) * double(pairs[i].trains);
    c.searches += pairs[i].queries > 0;
  }
  int device = 0, major = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (const cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device); e != cudaSuccess)
    return e;
  if (path == match_path::tensor_core && major < 8) return cudaErrorNotSupported;
  c.tensor = path == match_path::tensor_core || (path == match_path::automatic && major >= 8);
  c.kcap = k <= 2 ? 2 : 8;
  c.units = (bytes / 4 + 7) / 8;  // both kernels: 8 words = 256 bits per unit
  c.m_tiles = tensor_m_tiles(c.kcap, c.units, queries);
  c.block_queries = c.tensor ? tensor_block_threads / 32 * 16 * c.m_tiles : popcount_block_threads;
  // Blocks wanted per SM: the popcount kernel gains from many (a short last wave), the tensor-core
  // kernel from fewer, longer ones (measured on the H200).
  c.want_blocks = std::int64_t(sm_count()) * (c.tensor ? 8 : 32);
  c.resident = 0;
  if (c.tensor && c.searches == 1) {
    const knn_kernel_choice lone = c.kcap <= 2 ? knn_kernel_for<2, false>(c) : knn_kernel_for<8, false>(c);
    int per_sm = 0;
    if (const cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lone.kernel, lone.threads, 0);
        e != cudaSuccess)
      return e;
    c.resident = std::int64_t(per_sm) * sm_count();
  }
  return cudaSuccess;
}

/// The fewest slices (at most `most`) whose blocks fill the GPU's resident slots in whole waves to
/// 95% or more (a last wave that is mostly empty costs the tensor-core kernel up to a fifth on
/// the H200); failing that, the best filled.
inline std::int64_t slices_for_whole_waves(std::int64_t query_blocks, std::int64_t resident, std::int64_t most) {
  std::int64_t best = 1;
  double best_fill = 0;
  for (std::int64_t s = 1; s <= most; ++s) {
    const double waves = double(query_blocks * s) / double(resident);
    const double fill = waves / std::ceil(waves);
    if (fill >= 0.95) return s;
    if (fill > best_fill + 1e-9) best = s, best_fill = fill;
    if (waves > 16) break;
  }
  return best;
}

/// A search gets its share of the wanted blocks by its work; when its query blocks are fewer, the
/// training set is cut into slices of at least 512 rows. A lone tensor-core search picks its
/// slices to fill whole waves.
inline knn_pair_plan plan_knn_pair(const knn_config& c, const knn_pair& p) {
  knn_pair_plan plan{};
  const std::int64_t qb = (p.queries + c.block_queries - 1) / c.block_queries;
  plan.query_blocks = static_cast<int>(qb < 1 ? 1 : qb);
  std::int64_t most = p.trains / 512;
  if (most > 65535) most = 65535;
  std::int64_t slices;
  if (c.resident > 0) {
    slices = slices_for_whole_waves(plan.query_blocks, c.resident, most < 1 ? 1 : most);
  } else {
    const double share = c.total_work > 0 ? double(p.queries) * double(p.trains) / c.total_work : 1.0;
    const auto want = static_cast<std::int64_t>(double(c.want_blocks) * share + 0.5);
    slices = (want + plan.query_blocks - 1) / plan.query_blocks;
  }
  if (slices > most) slices = most;
  plan.slices = static_cast<int>(slices < 1 ? 1 : slices);
  plan.partial_bytes = round_up(sizeof(std::uint64_t) * std::size_t(plan.slices) * std::size_t(p.queries) * c.kcap);
  return plan;
}

template <int Kcap>
void launch_knn_kernels(const knn_config& c, const knn_launch& launch, int blocks, int words, int k,
                        std::int64_t most_queries, cudaStream_t stream) {
  // One search: a (query blocks, slices) grid; several: a 1-D grid and the table search.
  const bool batch = launch.count > 1;
  const knn_kernel_choice search = batch ? knn_kernel_for<Kcap, true>(c) : knn_kernel_for<Kcap, false>(c);
  const dim3 grid = batch ? dim3(blocks) : dim3(launch.problem[0].query_blocks, launch.problem[0].slices);
  search.kernel<<<grid, search.threads, 0, stream>>>(launch, words);
  const int threads = 256;
  const std::int64_t x = (most_queries + threads - 1) / threads;
  knn_finish_kernel<Kcap><<<dim3(static_cast<unsigned>(x < 1 ? 1 : x > 65535 ? 65535 : x), launch.count), threads, 0,
                            stream>>>(launch, k);
}

inline cudaError_t knn_hamming_batched(void* temp_storage, std::size_t& temp_bytes, const knn_pair* pairs, int count,
                                       int bytes, int k, match_path path, cudaStream_t stream) {
  knn_config c{};
  if (const cudaError_t e = configure_knn(pairs, count, bytes, k, path, c); e != cudaSuccess) return e;
  std::size_t needed = 0;
  for (int i = 0; i < count; ++i) needed += plan_knn_pair(c, pairs[i]).partial_bytes;
  if (temp_storage == nullptr) {
    temp_bytes = needed > 0 ? needed : 256;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  // Launches of up to knn_launch_capacity searches (searches without queries need nothing).
  knn_launch launch{};
  std::int64_t blocks = 0, most_queries = 0;
  char* partials = static_cast<char*>(temp_storage);
  auto flush = [&]() -> cudaError_t {
    if (launch.count == 0) return cudaSuccess;
    if (c.kcap <= 2) launch_knn_kernels<2>(c, launch, static_cast<int>(blocks), bytes / 4, k, most_queries, stream);
    else launch_knn_kernels<8>(c, launch, static_cast<int>(blocks), bytes / 4, k, most_queries, stream);
    launch.count = 0, blocks = 0, most_queries = 0;
    return cudaPeekAtLastError();
  };
  for (int i = 0; i < count; ++i) {
    const knn_pair& pair = pairs[i];
    if (pair.queries == 0) continue;
    const knn_pair_plan plan = plan_knn_pair(c, pair);
    const std::int64_t pair_blocks = std::int64_t(plan.query_blocks) * plan.slices;
    if (launch.count == knn_launch_capacity || blocks + pair_blocks > INT32_MAX)
      if (const cudaError_t e = flush(); e != cudaSuccess) return e;
    launch.problem[launch.count++] = knn_problem{
        reinterpret_cast<const std::uint32_t*>(pair.query), reinterpret_cast<const std::uint32_t*>(pair.train),
        reinterpret_cast<std::uint64_t*>(partials), pair.idx, pair.dist, static_cast<std::int32_t>(pair.queries),
        static_cast<std::int32_t>(pair.trains), static_cast<std::int32_t>(pair.first_train_index), plan.query_blocks,
        plan.slices, static_cast<std::int32_t>(blocks), pair.merge ? 1 : 0};
    partials += plan.partial_bytes;
    blocks += pair_blocks;
    if (pair.queries > most_queries) most_queries = pair.queries;
  }
  return flush();
}

}  // namespace detail

/// The k nearest training descriptors of every query by Hamming distance (multireduce/match.hpp
/// has the contract): idx and dist are queries x k int32 arrays on the device; -1 past the
/// training set's size. Descriptors are rows of `bytes` bytes (a multiple of 4, at most 128) in
/// device memory aligned to 4 bytes. CUB style: temp_storage == nullptr queries temp_bytes.
/// @return cudaErrorInvalidValue for bad sizes or misaligned rows, cudaErrorNotSupported for
/// match_path::tensor_core below sm_80, or the launch error. Asynchronous on `stream`.
inline cudaError_t knn_hamming(void* temp_storage, std::size_t& temp_bytes, const std::uint8_t* query,
                               std::int64_t queries, const std::uint8_t* train, std::int64_t trains, int bytes, int k,
                               std::int32_t* idx, std::int32_t* dist, match_path path = match_path::automatic,
                               cudaStream_t stream = 0) {
  const knn_pair pair{query, queries, train, trains, idx, dist};
  return detail::knn_hamming_batched(temp_storage, temp_bytes, &pair, 1, bytes, k, path, stream);
}

/// Many independent searches (image pairs of different sizes) of one descriptor width and one k,
/// with as few launches as possible: up to 48 searches share one launch, the GPU's blocks shared
/// out by each search's work, so a batch of small pairs fills the GPU. `pairs` is a host array;
/// each pair is the k nearest of its queries among its training rows, exactly as knn_hamming.
/// CUB style, asynchronous on `stream`; errors as knn_hamming.
inline cudaError_t knn_hamming_batched(void* temp_storage, std::size_t& temp_bytes, const knn_pair* pairs, int count,
                                       int bytes, int k, match_path path = match_path::automatic,
                                       cudaStream_t stream = 0) {
  return detail::knn_hamming_batched(temp_storage, temp_bytes, pairs, count, bytes, k, path, stream);
}

}  // namespace multireduce::cuda
