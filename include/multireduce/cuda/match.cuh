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
// cut into slices (one block column each) and a second kernel merges the slices' lists.
// Descriptor widths: multiples of 4 bytes up to 128 (ORB 32, BRISK/FREAK/LATCH/AKAZE 64).
#pragma once

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
  return kcap > 2 ? 1 : chunks == 1 && queries >= 32768 ? 4 : 2;
}

/// Loads 32-bit word `w` of row `r` (zero past the row's words or the set's rows).
__device__ __forceinline__ std::uint32_t descriptor_word(const std::uint32_t* rows, std::int64_t count, int words,
                                                         std::int64_t r, int w) {
  return r < count && w < words ? __ldg(rows + r * words + w) : 0u;
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

/// Block: 256 threads = 256 queries (blockIdx.x), training slice blockIdx.y. Lane i of a group of
/// 8 holds words i, i+8, ... (M per query) of the group's 8 queries.
template <int M, int Kcap>
__global__ void __launch_bounds__(popcount_block_threads)
    knn_popcount_kernel(const std::uint32_t* query, std::int64_t queries, const std::uint32_t* train,
                        std::int64_t trains, int words, std::uint64_t* partials) {
  cuda_lane lane;
  const int member = lane.id() & 7;
  const std::int64_t group_first = std::int64_t(blockIdx.x) * popcount_block_threads + (threadIdx.x & ~7u);
  std::uint32_t q[8][M];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int m = 0; m < M; ++m) q[i][m] = descriptor_word(query, queries, words, group_first + i, member + 8 * m);
  std::int64_t begin, end;
  slice_rows(trains, blockIdx.y, gridDim.y, begin, end);
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
      best.insert(match_key(static_cast<std::int32_t>(d), static_cast<std::int32_t>(t)));
      threshold = best.threshold();
    }
  }
  const std::int64_t q_index = group_first + member;
  if (q_index < queries) store_list(partials, queries, blockIdx.y, q_index, best);
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

/// Block: 4 warps, each with Mt 16-query tiles (A fragments in registers); training rows of slice
/// blockIdx.y go through shared memory 128 at a time, each row padded to C*8 + 4 words so that
/// the B fragment loads are free of bank conflicts.
/// Fragments (groupID g = lane/4, t = lane%4): A a0/a2 = row g, words c*8+t / c*8+t+4; a1/a3 the
/// same for row g+8; B b0/b1 = column g, words c*8+t / c*8+t+4; D d0,d1 = row g, columns 2t, 2t+1;
/// d2,d3 = row g+8.
template <int C, int Kcap, int Mt>
__global__ void __launch_bounds__(tensor_block_threads)
    knn_tensor_kernel(const std::uint32_t* query, std::int64_t queries, const std::uint32_t* train,
                      std::int64_t trains, int words, std::uint64_t* partials) {
  constexpr int stride = C * 8 + 4, tile = tensor_train_tile, block_queries = tensor_block_threads / 32 * 16 * Mt;
  __shared__ __align__(16) std::uint32_t rows[tile * stride];
  __shared__ __align__(8) std::int32_t row_popc[tile];
  cuda_lane lane;
  const int g = lane.id() >> 2, t = lane.id() & 3;
  const std::int64_t warp_first = std::int64_t(blockIdx.x) * block_queries + lane.warp_id() * 16 * Mt;
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
  slice_rows(trains, blockIdx.y, gridDim.y, begin, end);
  for (std::int64_t t0 = begin; t0 < end; t0 += tile) {
    const int count = end - t0 < tile ? static_cast<int>(end - t0) : tile;
    __syncthreads();  // the previous tile is done
    for (int i = threadIdx.x; i < tile * C * 8; i += tensor_block_threads) {
      const int r = i / (C * 8), w = i % (C * 8);
      rows[r * stride + w] = r < count ? descriptor_word(train, trains, words, t0 + r, w) : 0u;
    }
    __syncthreads();
    if (threadIdx.x < tile) {
      int p = 0;
#pragma unroll
      for (int w = 0; w < C * 8; ++w) p += __popc(rows[threadIdx.x * stride + w]);
      row_popc[threadIdx.x] = int(threadIdx.x) < count ? p : padding_popc;
    }
    __syncthreads();
#pragma unroll 2
    for (int n0 = 0; n0 < tile; n0 += 8) {
      std::uint32_t b[C][2];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        b[c][0] = rows[(n0 + g) * stride + c * 8 + t];
        b[c][1] = rows[(n0 + g) * stride + c * 8 + t + 4];
      }
      const int2 pb = *reinterpret_cast<const int2*>(row_popc + n0 + 2 * t);
#pragma unroll
      for (int mt = 0; mt < Mt; ++mt) {
        std::uint32_t d[4] = {0, 0, 0, 0};
#pragma unroll
        for (int c = 0; c < C; ++c) mma_and_popc(d, a[mt][c], b[c]);
        // popc(b) - 2 popc(a AND b): the distance less the query's popcount.
        const std::int32_t e0 = pb.x - 2 * std::int32_t(d[0]), e1 = pb.y - 2 * std::int32_t(d[1]);
        const std::int32_t e2 = pb.x - 2 * std::int32_t(d[2]), e3 = pb.y - 2 * std::int32_t(d[3]);
        if (e0 < limit[mt][0] || e1 < limit[mt][0] || e2 < limit[mt][1] || e3 < limit[mt][1]) {
          const std::int32_t column = static_cast<std::int32_t>(t0 + n0 + 2 * t);
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
  }
  // The four lanes of a group saw different columns of the same rows: merge them.
#pragma unroll
  for (int mt = 0; mt < Mt; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      best[mt][h].merge_lanes(1);
      best[mt][h].merge_lanes(2);
      const std::int64_t q = warp_first + mt * 16 + g + 8 * h;
      if (t == 0 && q < queries) store_list(partials, queries, blockIdx.y, q, best[mt][h]);
    }
}

/// Merges the slices' lists of every query (in slice order) and writes the k nearest.
template <int Kcap>
__global__ void knn_finish_kernel(const std::uint64_t* partials, std::int64_t queries, int slices, int k,
                                  std::int32_t* idx, std::int32_t* dist) {
  for (std::int64_t q = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < queries;
       q += std::int64_t(gridDim.x) * blockDim.x) {
    key_list<Kcap> best;
    best.clear();
    for (int s = 0; s < slices; ++s)
#pragma unroll
      for (int j = 0; j < Kcap; ++j) best.insert(partials[(std::int64_t(s) * queries + q) * Kcap + j]);
    for (int j = 0; j < k; ++j) {
      const std::uint64_t key = best.key[j];
      idx[q * k + j] = key == empty_key ? -1 : static_cast<std::int32_t>(key & 0xffffffffu);
      dist[q * k + j] = key == empty_key ? -1 : static_cast<std::int32_t>(key >> 32);
    }
  }
}

/// The launch plan: which kernel, its grid, and the training slices.
struct knn_plan {
  bool tensor;
  int kcap, units;  // units: chunks of 256 bits (tensor) or words per lane (popcount)
  int m_tiles;      // tensor: 16-query tiles per warp
  int query_blocks, slices;
  std::size_t temp_bytes;
};

inline cudaError_t plan_knn(std::int64_t queries, std::int64_t trains, int bytes, int k, match_path path,
                            knn_plan& plan) {
  if (queries < 0 || trains < 0 || bytes <= 0 || bytes % 4 != 0 || bytes > match_max_bytes || k < 1 ||
      k > match_max_k || queries > INT32_MAX || trains > INT32_MAX)
    return cudaErrorInvalidValue;
  int device = 0, major = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (const cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device); e != cudaSuccess)
    return e;
  if (path == match_path::tensor_core && major < 8) return cudaErrorNotSupported;
  plan.tensor = path == match_path::tensor_core || (path == match_path::automatic && major >= 8);
  plan.kcap = k <= 2 ? 2 : 8;
  const int words = bytes / 4;
  plan.units = (words + 7) / 8;  // both kernels: 8 words = 256 bits per unit
  plan.m_tiles = tensor_m_tiles(plan.kcap, plan.units, queries);
  const int per_block = plan.tensor ? tensor_block_threads / 32 * 16 * plan.m_tiles : popcount_block_threads;
  const std::int64_t qb = (queries + per_block - 1) / per_block;
  plan.query_blocks = static_cast<int>(qb < 1 ? 1 : qb);
  // Blocks wanted per SM: the popcount kernel gains from many (a short last wave), the tensor-core
  // kernel from fewer, longer ones (measured on the H200). A slice keeps at least 512 rows.
  const std::int64_t want = std::int64_t(sm_count()) * (plan.tensor ? 8 : 32);
  std::int64_t slices = (want + plan.query_blocks - 1) / plan.query_blocks;
  const std::int64_t most = trains / 512;
  if (slices > most) slices = most;
  if (slices > 65535) slices = 65535;
  plan.slices = static_cast<int>(slices < 1 ? 1 : slices);
  plan.temp_bytes = round_up(sizeof(std::uint64_t) * std::size_t(plan.slices) * std::size_t(queries) * plan.kcap);
  if (plan.temp_bytes == 0) plan.temp_bytes = 256;
  return cudaSuccess;
}

template <int Kcap>
cudaError_t launch_knn(const knn_plan& plan, const std::uint32_t* query, std::int64_t queries,
                       const std::uint32_t* train, std::int64_t trains, int words, int k, std::int32_t* idx,
                       std::int32_t* dist, std::uint64_t* partials, cudaStream_t stream) {
  const dim3 grid(plan.query_blocks, plan.slices);
  auto run = [&](auto units) {
    constexpr int U = decltype(units)::value;
    if (plan.tensor && plan.m_tiles == 4 && U == 1 && Kcap == 2)
      knn_tensor_kernel<1, 2, 4><<<grid, tensor_block_threads, 0, stream>>>(query, queries, train, trains, words, partials);
    else if (plan.tensor)
      knn_tensor_kernel<U, Kcap, Kcap <= 2 ? 2 : 1><<<grid, tensor_block_threads, 0, stream>>>(query, queries, train, trains,
                                                                                           words, partials);
    else knn_popcount_kernel<U, Kcap><<<grid, popcount_block_threads, 0, stream>>>(query, queries, train, trains, words, partials);
  };
  switch (plan.units) {
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 2: run(std::integral_constant<int, 2>{}); break;
    case 3: run(std::integral_constant<int, 3>{}); break;
    default: run(std::integral_constant<int, 4>{}); break;
  }
  if (const cudaError_t e = cudaPeekAtLastError(); e != cudaSuccess) return e;
  const int threads = 256;
  const std::int64_t blocks = (queries + threads - 1) / threads;
  knn_finish_kernel<Kcap><<<static_cast<int>(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks), threads, 0, stream>>>(
      partials, queries, plan.slices, k, idx, dist);
  return cudaPeekAtLastError();
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
  detail::knn_plan plan{};
  if (const cudaError_t e = detail::plan_knn(queries, trains, bytes, k, path, plan); e != cudaSuccess) return e;
  if (temp_storage == nullptr) {
    temp_bytes = plan.temp_bytes;
    return cudaSuccess;
  }
  if (temp_bytes < plan.temp_bytes) return cudaErrorInvalidValue;
  if ((queries > 0 && reinterpret_cast<std::uintptr_t>(query) % 4 != 0) ||
      (trains > 0 && reinterpret_cast<std::uintptr_t>(train) % 4 != 0))
    return cudaErrorInvalidValue;
  if (queries == 0) return cudaSuccess;
  auto* partials = static_cast<std::uint64_t*>(temp_storage);
  const auto* q = reinterpret_cast<const std::uint32_t*>(query);
  const auto* t = reinterpret_cast<const std::uint32_t*>(train);
  return plan.kcap <= 2 ? detail::launch_knn<2>(plan, q, queries, t, trains, bytes / 4, k, idx, dist, partials, stream)
                        : detail::launch_knn<8>(plan, q, queries, t, trains, bytes / 4, k, idx, dist, partials, stream);
}

}  // namespace multireduce::cuda
