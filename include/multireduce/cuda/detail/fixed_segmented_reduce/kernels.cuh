// multireduce/cuda/detail/fixed_segmented_reduce/kernels.cuh -- the fixed-length form's kernels,
// chosen by the length L: direct (L = 1..16, a power of two, aligned input: straight from
// registers), tile (other L <= 16: staged in shared memory), the group kernel (L <= 2048,
// segments/folds.cuh) and the block kernel (longer L, a block per segment or per piece of one).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../../../block/block_reduce.hpp"
#include "../../../cuda_lane.cuh"
#include "../launch.cuh"
#include "../load.cuh"
#include "../partial.cuh"
#include "../segments/folds.cuh"
#include "tuning.cuh"

namespace multireduce::cuda::detail {

/// L <= 16: a block stages a tile of whole segments (up to BlockThreads * Items elements) in
/// shared memory, all its loads in flight at once and coalesced, then every thread reduces whole
/// segments there (thread t: segments t, t + BlockThreads, ...) and the outputs leave coalesced.
template <int BlockThreads, int Items, class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    tile_segments_kernel(It in, Out out, std::int64_t segments, int length, Op op, Acc init) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* tile = reinterpret_cast<T*>(shared_bytes);
  const int tile_segments = BlockThreads * Items / length;
  for (std::int64_t first = std::int64_t(blockIdx.x) * tile_segments; first < segments;
       first += std::int64_t(gridDim.x) * tile_segments) {
    const int count = segments - first < tile_segments ? static_cast<int>(segments - first) : tile_segments;
    const int elements = count * length;
    const std::int64_t base = first * length;
    T staged[Items];
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const int i = k * BlockThreads + threadIdx.x;
      if (i < elements) staged[k] = in[base + i];
    }
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const int i = k * BlockThreads + threadIdx.x;
      if (i < elements) tile[padded(i)] = staged[k];
    }
    __syncthreads();
    for (int s = threadIdx.x; s < count; s += BlockThreads) {
      Acc acc = init;
      for (int j = 0; j < length; ++j) acc = op(acc, static_cast<Acc>(tile[padded(s * length + j)]));
      out[first + s] = acc;
    }
    __syncthreads();
  }
}

/// K values of T stored with one instruction when K * sizeof(T) is 8 or 16 bytes.
template <class T, int K>
struct alignas((K * sizeof(T) == 8 || K * sizeof(T) == 16) ? K * sizeof(T) : alignof(T)) value_pack {
  T v[K];
};

/// L = 1, 2, 4, 8 or 16 over a 16-byte-aligned array: no staging. A thread's row is one 16-byte
/// vector, or L elements when that is more; it loads Rows rows (a grid stride apart, all in
/// flight), folds each into its row/L segment results and stores those next to its neighbours'
/// (one 8- or 16-byte store when VectorOut: `out` is an aligned Acc array). Leftover segments
/// (less than one row) go element-wise.
template <int BlockThreads, int L, bool VectorOut, class T, class Out, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    direct_segments_kernel(const T* in, Out out, std::int64_t segments, Op op, Acc init) {
  constexpr int V = vector_elements<T>;
  constexpr int row = V > L ? V : L, vectors = row / V, per_row = row / L;
  constexpr int rows_in_flight = fixed_segmented_reduce_tuning::direct_rows_in_flight;
  static_assert(V > 1 && row % V == 0 && row % L == 0);
  const std::int64_t rows = segments / per_row;
  const std::int64_t stride = std::int64_t(gridDim.x) * BlockThreads;
  const auto* vin = reinterpret_cast<const vector16<T>*>(in);
  for (std::int64_t r0 = std::int64_t(blockIdx.x) * BlockThreads + threadIdx.x; r0 < rows;
       r0 += rows_in_flight * stride) {
    vector16<T> v[rows_in_flight][vectors];
#pragma unroll
    for (int q = 0; q < rows_in_flight; ++q)
      if (r0 + q * stride < rows) {
#pragma unroll
        for (int u = 0; u < vectors; ++u) v[q][u] = load_vector(vin + (r0 + q * stride) * vectors + u);
      }
#pragma unroll
    for (int q = 0; q < rows_in_flight; ++q) {
      const std::int64_t r = r0 + q * stride;
      if (r >= rows) break;
      value_pack<Acc, per_row> results;
#pragma unroll
      for (int k = 0; k < per_row; ++k) {
        Acc acc = init;
#pragma unroll
        for (int j = 0; j < L; ++j) acc = op(acc, static_cast<Acc>(v[q][(k * L + j) / V].v[(k * L + j) % V]));
        results.v[k] = acc;
      }
      if constexpr (VectorOut) {
        *reinterpret_cast<value_pack<Acc, per_row>*>(&out[r * per_row]) = results;
      } else {
#pragma unroll
        for (int k = 0; k < per_row; ++k) out[r * per_row + k] = results.v[k];
      }
    }
  }
  const std::int64_t done = rows * per_row;
  if (blockIdx.x == 0 && threadIdx.x < segments - done) {
    const std::int64_t s = done + threadIdx.x;
    Acc acc = init;
    for (int j = 0; j < L; ++j) acc = op(acc, static_cast<Acc>(in[s * L + j]));
    out[s] = acc;
  }
}

/// One block per piece: segment s = blockIdx / pieces covers [s*length, (s+1)*length); piece p of
/// it is [length*p/pieces, length*(p+1)/pieces). pieces == 1: writes op(init, fold) to out[s];
/// otherwise the piece's fold (no init) to partials[blockIdx].
template <int BlockThreads, class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    block_fixed_segments_kernel(It in, Out out, Acc* partials, std::int64_t segments, std::int64_t length,
                                int pieces, Op op, Acc init) {
  using P = partial<Acc, Op>;
  __shared__ block_reduce_storage<typename P::type, BlockThreads> storage;
  cuda_lane lane;
  for (std::int64_t b = blockIdx.x; b < segments * pieces; b += gridDim.x) {
    const std::int64_t s = b / pieces, p = b % pieces;
    const std::int64_t begin = s * length + length * p / pieces, end = s * length + length * (p + 1) / pieces;
    const auto r = block_fold<BlockThreads, It, Acc>(lane, in, begin, end, op, storage);
    if (threadIdx.x == 0) {
      if (pieces == 1) out[s] = P::finish(op, init, r);
      else partials[b] = P::value(r);  // pieces are never empty
    }
    __syncthreads();
  }
}

template <class Out, class Acc>
__global__ void fill_kernel(Out out, std::int64_t count, Acc value) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = value;
}

/// Pieces per segment for the block kernel, given the blocks that are resident at once. With at
/// least half as many segments, none. With fewer, as many as fit that one wave (rounded down, so
/// that no SM gets a piece to do after the others are done; measured: 3 pieces of 2^18 -> 5.8
/// blocks per SM, 83-86% of copy; 17 smaller pieces, 88%; 4 pieces, the one wave, see
/// docs/results.md).
inline int pieces_for(std::int64_t segments, std::int64_t length, int resident) {
  if (segments >= std::int64_t(resident) / 2) return 1;
  std::int64_t pieces = std::int64_t(resident) / segments;
  const std::int64_t most = length / fixed_segmented_reduce_tuning::min_piece;
  if (pieces > most) pieces = most;
  return pieces < 1 ? 1 : static_cast<int>(pieces);
}

/// Launches direct_segments_kernel when it applies (a 16-byte-aligned pointer, L a power of two
/// up to 16); returns false otherwise.
template <class It, class Out, class Acc, class Op>
bool launch_direct_segments(It in, Out out, std::int64_t segments, std::int64_t length, Op op, Acc init,
                            cudaStream_t stream, cudaError_t& error) {
  if constexpr (std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    if constexpr (vector_elements<T> > 1 && 16 % vector_elements<T> == 0) {
      if (reinterpret_cast<std::uintptr_t>(in) % 16 != 0) return false;
      constexpr bool out_is_acc = std::is_same_v<Out, Acc*> && vector_elements<Acc> > 1;
      const bool out_aligned = out_is_acc && reinterpret_cast<std::uintptr_t>(&out[0]) % 16 == 0;
      using tuning = fixed_segmented_reduce_tuning;
      constexpr int threads = tuning::direct_threads;
      auto launch_direct = [&](auto l) {
        constexpr int L = decltype(l)::value;
        constexpr int row = vector_elements<T> > L ? vector_elements<T> : L, per_row = row / L;
        constexpr bool vector_out = out_is_acc && (per_row * sizeof(Acc) == 8 || per_row * sizeof(Acc) == 16);
        const int blocks = grid_for(segments / per_row, threads * tuning::direct_rows_in_flight,
                                    sm_count() * tuning::direct_blocks_per_sm);
        auto kernel = vector_out && !out_aligned ? direct_segments_kernel<threads, L, false, T, Out, Acc, Op>
                                                 : direct_segments_kernel<threads, L, vector_out, T, Out, Acc, Op>;
        return launch(kernel, blocks, threads, 0, stream, in, out, segments, op, init);
      };
      switch (length) {
        case 1: error = launch_direct(std::integral_constant<int, 1>{}); return true;
        case 2: error = launch_direct(std::integral_constant<int, 2>{}); return true;
        case 4: error = launch_direct(std::integral_constant<int, 4>{}); return true;
        case 8: error = launch_direct(std::integral_constant<int, 8>{}); return true;
        case 16: error = launch_direct(std::integral_constant<int, 16>{}); return true;
        default: return false;
      }
    }
  }
  return false;
}

/// Fixed lengths up to group_max_length: no temporary storage needed.
template <class It, class Out, class Acc, class Op>
cudaError_t launch_short_fixed(It in, Out out, std::int64_t segments, std::int64_t length, Op op, Acc init,
                               cudaStream_t stream) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(*in)>>;
  using tuning = fixed_segmented_reduce_tuning;
  if (length == 0) {
    constexpr int threads = tuning::fill_threads;
    return launch(fill_kernel<Out, Acc>, grid_for(segments, threads, sm_count() * tuning::fill_blocks_per_sm), threads,
                  0, stream, out, segments, init);
  }
  if (cudaError_t e; length <= tuning::tile_max_length && launch_direct_segments(in, out, segments, length, op, init, stream, e))
    return e;
  if (length <= tuning::tile_max_length) {
    constexpr int threads = tuning::tile_threads, items = tuning::tile_items;
    const int shared = static_cast<int>(sizeof(T) * (padded(threads * items) + 1));
    auto kernel = tile_segments_kernel<threads, items, It, Out, Acc, Op>;
    if (const cudaError_t e = allow_dynamic_shared(kernel, std::size_t(shared));
        e != cudaSuccess)
      return e;
    const int blocks = grid_for(segments, threads * items / static_cast<int>(length), resident_grid(kernel, threads, shared));
    return launch(kernel, blocks, threads, shared, stream, in, out, segments, static_cast<int>(length), op, init);
  }
  // The group kernel with computed offsets (every segment is short here).
  const fixed_offsets b{length, 0}, e{length, length};
  switch (tuning::group_lanes_for_length(length)) {
    case 4: return launch_group_segments<4>(in, out, segments, b, e, op, init, stream);
    case 8: return launch_group_segments<8>(in, out, segments, b, e, op, init, stream);
    case 16: return launch_group_segments<16>(in, out, segments, b, e, op, init, stream);
    default: return launch_group_segments<32>(in, out, segments, b, e, op, init, stream);
  }
}

}  // namespace multireduce::cuda::detail
