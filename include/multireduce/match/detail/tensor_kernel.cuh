// multireduce/match/detail/tensor_kernel.cuh -- the binary tensor-core matcher (sm_80 and newer):
// mma.sync m16n8k256 on b1 operands with .and.popc gives popc(a AND b) for a 16 x 8 tile of
// (query, train) pairs per instruction, and hamming(a, b) = popc(a) + popc(b) - 2 popc(a AND b).
// A warp keeps its queries' A fragments in registers and walks training tiles staged in shared
// memory; the epilogue is one multiply-add and one compare per pair against the lane's current
// k-th best, only a pair that beats it taking the slow insertion.
#pragma once

#include <cstdint>

#include "../../cuda/detail/ptx.cuh"
#include "../../cuda_lane.cuh"
#include "search.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

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
__global__ void __launch_bounds__(knn_tuning::tensor_block_threads)
    knn_tensor_kernel(const __grid_constant__ knn_launch launch, int words) {
  constexpr int stride = C * 8 + 4, tile = knn_tuning::tensor_train_tile;
  constexpr int block_queries = knn_tuning::tensor_block_threads / 32 * 16 * Mt;
  __shared__ __align__(16) std::uint32_t rows[2][tile * stride];
  __shared__ __align__(8) std::int32_t row_popc[2][tile];
  const knn_block at = locate_block<Batch>(launch);
  const knn_problem& p = launch.problem[at.problem];
  const std::uint32_t* query = p.query;
  const std::uint32_t* train = p.train;
  const std::int64_t queries = p.queries;
  cuda_lane lane;
  const int g = lane.id() >> 2, t = lane.id() & 3;
  const std::int64_t warp_first = std::int64_t(at.query_block) * block_queries + lane.warp_id() * 16 * Mt;
  // A fragments and the popcounts of this lane's query rows (g and g+8 of each m tile).
  std::uint32_t a[Mt][C][4];
  std::int32_t query_popc[Mt][2];
#pragma unroll
  for (int mt = 0; mt < Mt; ++mt)
    load_query_fragments<C>(lane, query, queries, words, warp_first + mt * 16 + g, t, a[mt], query_popc[mt]);
  key_list<Kcap> best[Mt][2];
  std::int32_t limit[Mt][2];  // a pair enters row r's list when popc(b) - 2 popc(a AND b) < limit
#pragma unroll
  for (int mt = 0; mt < Mt; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) best[mt][h].clear(), limit[mt][h] = no_limit - query_popc[mt][h];

  std::int64_t begin, end;
  slice_rows(p, at.slice, begin, end);
  // Thread r copies row r of a tile into buffer `buf` with cp.async (zeros past the slice's end
  // and the row's words), so the next tile arrives while this one is searched.
  static_assert(knn_tuning::tensor_block_threads == tile);
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
        bound = min(bound, shuffle_xor(lane, bound, 1, 32));
        limit[mt][h] = min(bound, shuffle_xor(lane, bound, 2, 32));
      }
    __syncthreads();  // every warp is done with buffer `buf` before it is refilled
  }
  // The four lanes of a group saw different columns of the same rows: merge them.
#pragma unroll
  for (int mt = 0; mt < Mt; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      best[mt][h].merge_lanes(lane, 1);
      best[mt][h].merge_lanes(lane, 2);
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

}  // namespace multireduce::cuda::detail
