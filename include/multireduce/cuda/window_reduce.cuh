// multireduce/cuda/window_reduce.cuh -- sliding-window reduction with any associative operator.
//
// out[i] = op(init, in[i] op in[i+1] op ... op in[i+W-1]) for i in [0, n-W]: NumPy's
// sliding_window_view(x, W).<op>(-1). Operators need no inverse (max and min work), so this is not
// a difference of prefix sums. The method is van Herk / Gil-Werman: cut the input into chunks of W;
// S[r] = fold from r to the end of r's chunk (a suffix scan), P[r] = fold from the start of r's
// chunk to r (a prefix scan); then every window is op(S[i], P[i+W-1]) -- 3 operator applications
// per element whatever W is, and the operand order is kept, so non-commutative operators work.
//  - W <= 2048, "tile": a block stages 8192 consecutive inputs in shared memory (coalesced, all
//    loads in flight at once); each thread takes 16 consecutive ones, scans P within them and
//    reads its two runs off it (from its last chunk start; up to its first chunk end); the carries
//    between threads come from warp shuffles and a scan of the warps (two barriers); each thread
//    writes its P and S to shared memory, and the 8193-W windows op(S[i], P[i+W-1]) leave as
//    coalesced stores. Accumulators wider than 8 bytes get smaller tiles (and a lower W limit).
//  - W > 2048, "doubling": windows of 2^k elements are doubled in place over global memory and
//    combined along W's binary digits (2 log2 W elementwise passes; correct for any W, slower).
#pragma once

#include <cstdint>
#include <cstring>

#include "../cuda_lane.cuh"
#include "common.cuh"

namespace multireduce::cuda {
namespace detail {

inline constexpr int window_tile_threads = 512;
/// Items per thread: 16 (an 8192-input tile) for accumulators up to 8 bytes, fewer for wider ones
/// so that the tile's two arrays stay within shared memory; none past 64 bytes (no tile kernel).
template <class Acc>
inline constexpr int window_tile_items = sizeof(Acc) <= 8 ? 16 : sizeof(Acc) <= 16 ? 8 : sizeof(Acc) <= 32 ? 4 : sizeof(Acc) <= 64 ? 2 : 0;
template <class Acc>
inline constexpr int window_tile_inputs = window_tile_threads * window_tile_items<Acc>;
/// The longest window of the tile kernel: a quarter of the tile (at most 1/3 of the loads repeat).
template <class Acc>
inline constexpr std::int64_t window_tile_max = window_tile_inputs<Acc> / 4;

/// A run of a segmented scan: its fold, and whether a segment boundary lies inside it (then the
/// fold starts at that boundary and nothing before it matters).
template <class Acc>
struct scan_run {
  Acc value;
  bool cut;
};

/// The run `near` extended by the run `far` beyond it, for a scan in direction Forward: far after
/// near when forward, far before near when backward (operands keep the array order).
template <bool Forward, class Acc, class Op>
__device__ __forceinline__ scan_run<Acc> extend_run(const scan_run<Acc>& far, const scan_run<Acc>& near, const Op& op) {
  if (near.cut) return near;
  return scan_run<Acc>{Forward ? op(far.value, near.value) : op(near.value, far.value), far.cut};
}

/// The carries of a block-wide segmented scan in both directions, one run per thread: the runs of
/// all threads before this one folded back to the nearest cut (forward), and of all threads after
/// it (backward). has_forward / has_backward: false for the first thread in that scan order.
/// Warp shuffles within warps; warp 0 and warp 1 scan the warps' runs; two barriers.
template <int BlockThreads, class Acc, class Op>
__device__ __forceinline__ void block_segmented_carries(cuda_lane& lane, scan_run<Acc> forward, scan_run<Acc> backward,
                                                        const Op& op, scan_run<Acc>* forward_runs,
                                                        scan_run<Acc>* backward_runs, bool& has_forward,
                                                        Acc& forward_carry, bool& has_backward, Acc& backward_carry) {
  constexpr int warps = BlockThreads / 32;
  static_assert(warps >= 2 && warps <= 32, "two to 32 warps");
  constexpr unsigned all = 0xffffffffu;
  const int id = lane.id(), warp = lane.warp_id();
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {  // inclusive scans within the warp
    const scan_run<Acc> before{shuffle_up(lane, forward.value, d, 32), __shfl_up_sync(all, forward.cut, d) != 0};
    const scan_run<Acc> after{shuffle_down(lane, backward.value, d, 32), __shfl_down_sync(all, backward.cut, d) != 0};
    if (id >= d) forward = extend_run<true>(before, forward, op);
    if (id + d < 32) backward = extend_run<false>(after, backward, op);
  }
  const scan_run<Acc> lane_forward{shuffle_up(lane, forward.value, 1, 32), __shfl_up_sync(all, forward.cut, 1) != 0};
  const scan_run<Acc> lane_backward{shuffle_down(lane, backward.value, 1, 32),
                                    __shfl_down_sync(all, backward.cut, 1) != 0};
  if (id == 31) forward_runs[warp] = forward;
  if (id == 0) backward_runs[warp] = backward;
  __syncthreads();
  if (warp < 2) {  // warp 0: exclusive forward scan of the warps' runs; warp 1: backward
    const bool fw = warp == 0;
    scan_run<Acc> run = id < warps ? (fw ? forward_runs[id] : backward_runs[id]) : scan_run<Acc>{Acc{}, true};
#pragma unroll
    for (int d = 1; d < warps; d *= 2) {
      const scan_run<Acc> before{shuffle_up(lane, run.value, d, 32), __shfl_up_sync(all, run.cut, d) != 0};
      const scan_run<Acc> after{shuffle_down(lane, run.value, d, 32), __shfl_down_sync(all, run.cut, d) != 0};
      if (fw && id >= d) run = extend_run<true>(before, run, op);
      if (!fw && id + d < warps) run = extend_run<false>(after, run, op);
    }
    const scan_run<Acc> before{shuffle_up(lane, run.value, 1, 32), __shfl_up_sync(all, run.cut, 1) != 0};
    const scan_run<Acc> after{shuffle_down(lane, run.value, 1, 32), __shfl_down_sync(all, run.cut, 1) != 0};
    if (fw && id >= 1 && id < warps) forward_runs[id] = before;          // now: the carry into warp id
    if (!fw && id + 1 < warps) backward_runs[id] = after;
  }
  __syncthreads();
  if (id == 0) {
    has_forward = warp > 0;
    if (has_forward) forward_carry = forward_runs[warp].value;
  } else {
    has_forward = true;
    forward_carry = warp > 0 ? extend_run<true>(forward_runs[warp], lane_forward, op).value : lane_forward.value;
  }
  if (id == 31) {
    has_backward = warp + 1 < warps;
    if (has_backward) backward_carry = backward_runs[warp].value;
  } else {
    has_backward = true;
    backward_carry =
        warp + 1 < warps ? extend_run<false>(backward_runs[warp], lane_backward, op).value : lane_backward.value;
  }
}

/// Shared memory of the tile kernel, padded one word per 32 so that a thread's 16 consecutive
/// elements are conflict-free: the staged inputs (then S), P, and the warps' runs.
template <class Acc>
struct window_tile_storage {
  Acc suffix[window_tile_inputs<Acc> + window_tile_inputs<Acc> / 32];
  Acc prefix[window_tile_inputs<Acc> + window_tile_inputs<Acc> / 32];
  scan_run<Acc> forward_runs[window_tile_threads / 32];
  scan_run<Acc> backward_runs[window_tile_threads / 32];
};

template <class It, class Out, class Acc, class Op>
__global__ void __launch_bounds__(window_tile_threads, sizeof(Acc) <= 4 ? 2 : 1)
    window_tile_kernel(It in, std::int64_t n, std::int64_t window, Out out, Op op, Acc init, bool apply_init) {
  constexpr int items = window_tile_items<Acc>, threads = window_tile_threads, tile_inputs = window_tile_inputs<Acc>;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  auto& s = *reinterpret_cast<window_tile_storage<Acc>*>(shared_bytes);
  cuda_lane lane;
  const int w = static_cast<int>(window);
  const std::int64_t outputs = n - window + 1;
  const int per_tile = tile_inputs - w + 1;
  const int first = threadIdx.x * items;  // this thread's positions in the tile: [first, first + items)
  static_assert(32 % items == 0, "a thread's items share one padding word");
  const int mine = padded(first);                 // where they are in shared memory
  const int coalesced = padded(threadIdx.x);      // position threadIdx.x + k * threads ...
  constexpr int padded_stride = threads + threads / 32;  // ... is coalesced + k * padded_stride
  // Chunks start at multiples of w from the tile's start: which of this thread's items start a
  // chunk, and which end one (bit j: item j).
  unsigned starts = 0, ends = 0;
  for (int j = 0, phase = first % w; j < items; ++j, phase = phase + 1 == w ? 0 : phase + 1) {
    if (phase == 0) starts |= 1u << j;
    if (phase == w - 1) ends |= 1u << j;
  }
  const int out_phase = static_cast<int>(threadIdx.x) % w, out_step = threads % w;  // output i's place in its chunk
  for (std::int64_t o0 = std::int64_t(blockIdx.x) * per_tile; o0 < outputs; o0 += std::int64_t(gridDim.x) * per_tile) {
    const int count = n - o0 < tile_inputs ? static_cast<int>(n - o0) : tile_inputs;
    const int tile_outputs = outputs - o0 < per_tile ? static_cast<int>(outputs - o0) : per_tile;
    {  // stage the inputs, all of the thread's loads in flight at once; positions past the end get
       // a copy of the last input (no window that is written reads them)
      Acc staged[items];
#pragma unroll
      for (int k = 0; k < items; ++k) {
        const int i = k * threads + threadIdx.x;
        staged[k] = static_cast<Acc>(in[o0 + (i < count ? i : count - 1)]);
      }
#pragma unroll
      for (int k = 0; k < items; ++k) s.suffix[coalesced + k * padded_stride] = staged[k];
    }
    __syncthreads();
    // P within the thread, left to right (a chunk start restarts it).
    Acc v[items];
#pragma unroll
    for (int j = 0; j < items; ++j) v[j] = s.suffix[mine + j];
#pragma unroll
    for (int j = 1; j < items; ++j)
      if (!((starts >> j) & 1u)) v[j] = op(v[j - 1], v[j]);
    // The thread's runs: from its last chunk start to its end (forward) is P's last item; from its
    // start to its first chunk end (backward) is P at that end (no chunk starts before it but at
    // item 0), or P's last item.
    Acc backward = v[items - 1];
#pragma unroll
    for (int j = items - 1; j >= 0; --j)
      if ((ends >> j) & 1u) backward = v[j];
    bool has_forward, has_backward;
    Acc forward_carry, backward_carry;
    block_segmented_carries<threads>(lane, scan_run<Acc>{v[items - 1], starts != 0}, scan_run<Acc>{backward, ends != 0},
                                     op, s.forward_runs, s.backward_runs, has_forward, forward_carry, has_backward,
                                     backward_carry);
    // The forward carry enters every item before the thread's first chunk start.
    if (has_forward) {
#pragma unroll
      for (int j = 0; j < items; ++j)
        if (!(starts & ((2u << j) - 1u))) v[j] = op(forward_carry, v[j]);
    }
#pragma unroll
    for (int j = 0; j < items; ++j) s.prefix[mine + j] = v[j];
    // S, right to left, the carry entering after the last chunk end (own positions only: the other
    // threads read theirs before the carries' barriers).
#pragma unroll
    for (int j = 0; j < items; ++j) v[j] = s.suffix[mine + j];
    v[items - 1] = ((ends >> (items - 1)) & 1u) || !has_backward ? v[items - 1] : op(v[items - 1], backward_carry);
#pragma unroll
    for (int j = items - 2; j >= 0; --j)
      if (!((ends >> j) & 1u)) v[j] = op(v[j], v[j + 1]);
#pragma unroll
    for (int j = 0; j < items; ++j) s.suffix[mine + j] = v[j];
    __syncthreads();
    // Window i = S[i] when i starts a chunk (the window is that chunk), else op(S[i], P[i+w-1]).
    int phase = out_phase;
#pragma unroll 4
    for (int i = threadIdx.x, k = 0; i < tile_outputs; i += threads, ++k) {
      Acc x = s.suffix[coalesced + k * padded_stride];
      if (phase != 0) x = op(x, s.prefix[padded(i + w - 1)]);
      out[o0 + i] = apply_init ? op(init, x) : x;
      phase += out_step;
      if (phase >= w) phase -= w;
    }
    __syncthreads();
  }
}

template <class Acc, class It, class To>
__global__ void window_convert_kernel(It in, std::int64_t n, To to) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    to[i] = static_cast<Acc>(in[i]);
}

/// to[i] = op(a[i], b[i + shift]) for i < count (a and to may be the same array).
template <class OutA, class Acc, class Op>
__global__ void window_combine_kernel(OutA a, Acc* b, std::int64_t shift, std::int64_t count, OutA to, Op op) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    to[i] = op(static_cast<Acc>(a[i]), b[i + shift]);
}

template <class Out, class Acc, class Op>
__global__ void window_finish_kernel(Out out, std::int64_t count, Op op, Acc init) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = op(init, static_cast<Acc>(out[i]));
}

template <class It, class Out, class Acc, class Op>
cudaError_t window_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, std::int64_t window,
                          Out out, Op op, Acc init, cudaStream_t stream) {
  static_assert(std::is_invocable_r_v<Acc, const Op&, const Acc&, const Acc&>,
                "multireduce::cuda::window_reduce: op must be callable as Acc op(Acc, Acc)");
  if (n < 0 || window < 1) return cudaErrorInvalidValue;
  const bool tile = window_tile_items<Acc> > 0 && window <= window_tile_max<Acc>;
  const std::size_t needed = tile ? 1 : 2 * round_up(sizeof(Acc) * std::size_t(n));
  if (temp_storage == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if (temp_bytes < needed) return cudaErrorInvalidValue;
  const std::int64_t outputs = n - window + 1;
  if (outputs <= 0) return cudaSuccess;
  const int sms = sm_count();
  if (tile) {
    const int shared = static_cast<int>(sizeof(window_tile_storage<Acc>));
    auto kernel = window_tile_kernel<It, Out, Acc, Op>;
    if (const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
        e != cudaSuccess)
      return e;
    int per_sm = 0;
    if (const cudaError_t e =
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, window_tile_threads, std::size_t(shared));
        e != cudaSuccess)
      return e;
    const std::int64_t per_tile = window_tile_inputs<Acc> - window + 1;
    bool apply_init = true;  // op(identity, x) == x: skip it
    if constexpr (has_identity<Op, Acc> && std::is_arithmetic_v<Acc>) {
      const Acc identity = Op::template identity<Acc>();
      apply_init = std::memcmp(&identity, &init, sizeof(Acc)) != 0;
    }
    std::int64_t blocks = (outputs + per_tile - 1) / per_tile;
    const std::int64_t resident = std::int64_t(sms) * (per_sm > 0 ? per_sm : 1);
    if (blocks > resident) blocks = resident;
    kernel<<<static_cast<int>(blocks), window_tile_threads, shared, stream>>>(in, n, window, out, op, init, apply_init);
    return cudaPeekAtLastError();
  }
  // Doubling: D holds folds of 2^k elements; `out` accumulates W's binary digits from the lowest.
  Acc* d = static_cast<Acc*>(temp_storage);
  Acc* e = reinterpret_cast<Acc*>(static_cast<char*>(temp_storage) + round_up(sizeof(Acc) * std::size_t(n)));
  const int blocks = sms * 8, threads = 256;
  window_convert_kernel<Acc><<<blocks, threads, 0, stream>>>(in, n, d);
  std::int64_t covered = 0;  // out[i] holds the fold of in[i, i + covered)
  for (std::int64_t size = 1; size <= window; size *= 2) {
    if (window & size) {
      if (covered == 0) {
        window_convert_kernel<Acc><<<blocks, threads, 0, stream>>>(static_cast<const Acc*>(d), outputs, out);
      } else {
        window_combine_kernel<<<blocks, threads, 0, stream>>>(out, d, covered, outputs, out, op);
      }
      covered += size;
    }
    if (size * 2 <= window) {  // D(2^(k+1))[i] = op(D[i], D[i + 2^k]) for the positions still needed
      window_combine_kernel<<<blocks, threads, 0, stream>>>(d, d, size, n - 2 * size + 1, e, op);
      std::swap(d, e);
    }
    if (const cudaError_t err = cudaPeekAtLastError(); err != cudaSuccess) return err;
  }
  window_finish_kernel<<<blocks, threads, 0, stream>>>(out, outputs, op, init);
  return cudaPeekAtLastError();
}

}  // namespace detail

/// Sliding-window reduction: out[i] = op(init, fold of in[i, i+W)) for i in [0, n-W]; writes
/// max(0, n-W+1) outputs. Any W >= 1 and any associative operator (no inverse needed).
/// CUB style: temp_storage == nullptr queries temp_bytes. Asynchronous on `stream`.
template <class It, class Out, class Acc, class Op>
cudaError_t window_reduce(void* temp_storage, std::size_t& temp_bytes, It in, std::int64_t n, std::int64_t window,
                          Out out, Op op, Acc init, cudaStream_t stream = 0) {
  return detail::window_reduce(temp_storage, temp_bytes, in, n, window, out, op, init, stream);
}

}  // namespace multireduce::cuda
