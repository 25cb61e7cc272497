// multireduce/match/detail/popcount_kernel.cuh -- the CUDA-core matcher (any GPU): the paper's
// section-8 kernel made correct and modern. A group of 8 lanes holds 8 queries, each lane 1/8 of
// every query's words; per training row each lane popcounts its words against all 8 queries and
// warp_multi_reduce<8, 8, swap> leaves lane i with query i's full distance (7 shuffles for 8 sums).
#pragma once

#include <cstdint>

#include "../../cuda_lane.cuh"
#include "../../operators.hpp"
#include "../../warp/warp_multi_reduce.hpp"
#include "search.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

// ---- CUDA-core popcount path (the paper's kernel) -----------------------------------------------

/// Block: 256 threads = 256 queries of one search, one training slice (locate_block). Lane i of a
/// group of 8 holds words i, i+8, ... (M per query) of the group's 8 queries.
template <int M, int Kcap, bool Batch>
__global__ void __launch_bounds__(knn_tuning::popcount_block_threads)
    knn_popcount_kernel(const __grid_constant__ knn_launch launch, int words) {
  const knn_block at = locate_block<Batch>(launch);
  const knn_problem& p = launch.problem[at.problem];
  const std::uint32_t* query = p.query;
  const std::uint32_t* train = p.train;
  const std::int64_t queries = p.queries, trains = p.trains;
  cuda_lane lane;
  const int member = lane.id() & 7;
  const std::int64_t group_first = std::int64_t(at.query_block) * knn_tuning::popcount_block_threads + (threadIdx.x & ~7u);
  std::uint32_t q[8][M];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int m = 0; m < M; ++m) q[i][m] = descriptor_word(query, queries, words, group_first + i, member + 8 * m);
  std::int64_t begin, end;
  slice_rows(p, at.slice, begin, end);
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

}  // namespace multireduce::cuda::detail
