// multireduce/nccl.cuh -- the same reductions across NCCL ranks (GPU): a global 1-D array sharded
// over the ranks of the user's NCCL communicator in rank order (device memory, one GPU per rank),
// reduced by one collective, blocking call on the user's stream that gives every rank the same
// result, bitwise. The communicator and stream are the user's (as RAFT's comms take them): no
// communicator or stream is created behind the user's back (only temporary memory, kept between
// calls: Performance notes). docs/ranks.md is the user's page; multireduce/ranks/plan.hpp
// the transport-agnostic core; multireduce/mpi.hpp the CPU front with the same names.
//
//   float total = multireduce::nccl::reduce(comm, stream, d_mine, n, multireduce::sum{}, 0.0f);
//
// The granule: the global array is cut into granules of G elements (options::granule, default
// 2^26). Each granule is reduced whole by the one-GPU algorithm (cuda::workspace's reduce,
// statistics) on the rank where it starts, always from a 16-byte-aligned address (a granule
// whose address is not is first copied to an aligned buffer, so that the kernels' vector loads
// and thus the association are the same whatever the shard offsets); a granule that runs past
// its rank's shard gets the rest from the following rank(s) through one ncclAllGather of every
// rank's first elements (skipped when every shard starts on a granule boundary). The granules'
// partials are all-gathered (ncclAllGather, bytes) and folded left to right in global order on
// the host of every rank. So:
//  - the result does not depend on the number of ranks or the shard lengths: it equals this front
//    on ONE rank over the whole array (GPUs of one model: a granule's partition depends on the
//    SM count);
//  - for N <= G it is bitwise the plain one-GPU call on the whole array (when that array starts
//    16-byte aligned, as every cudaMalloc'd array does);
//  - for N > G it is the fold of the granules' one-GPU results, which rounds differently from one
//    GPU call over everything (floating-point sums; integers, min/max and bitwise ops are exact).
// argmin/argmax and knn_hamming are selections, exact in any grouping: each rank takes its own
// shard, the per-rank results are combined in rank order, bitwise the one-GPU call. Windows: each
// rank runs cuda::window_reduce over the windows starting in its shard, reading the W - 1
// elements after it from the following ranks; integer, min/max and bitwise windows are bitwise
// the one-GPU call's, floating-point sums/products equal within rounding.
//
// Errors: every call first all-gathers a 120-byte header per rank; every rank checks the table the
// same way and throws std::invalid_argument with the same message, so no rank waits forever. NCCL
// errors throw std::runtime_error with NCCL's error string, CUDA errors cuda::error (a
// std::runtime_error). Failures after the check (out of memory) are local to a rank. Inputs are
// only read.
//
// Performance notes:
// - A call borrows the thread's cuda::workspace for its (device, stream), kept between calls
//   (detail::kept_workspace), takes its temporary device buffers in stream order from a pool per
//   GPU that keeps its memory between calls (detail::stream_buffer: no cudaMalloc, no cudaFree,
//   which synchronises the device), makes one launch per owned granule, ncclAllGathers of the
//   header, the halo (if any) and the partials, one small copy back, and synchronises the stream
//   twice: after the header exchange (every rank checks the table on the host) and before it
//   returns (the result is read on the host).
// - The pool and the kept workspaces belong to the device's current context: a process must not
//   reset the device (cudaDeviceReset) between calls.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda/detail/error.cuh"
#include "cuda/detail/memory_pool.cuh"
#include "cuda/workspace.cuh"
#include "match/cuda.cuh"
#include "ranks/plan.hpp"
#include "statistics.hpp"

namespace multireduce::nccl {

/// The default granule: 2^26 elements (256 MiB of floats). Each granule is one launch of the one-GPU
/// kernel, and each launch costs its ramp and tail beside its read: on an H100 (nvidia-h100-x2,
/// 2026-11-26, multireduce-bench-nccl --log2 30) 2^24 took a 2^30-float statistics call to 2.9 ms
/// against the plain call's 1.42 ms; 2^26 launches a quarter as many.
inline constexpr std::int64_t default_granule = std::int64_t{1} << 26;

struct options {
  /// G >= 1, the same on every rank. The result depends on it (and on N and the data), never on
  /// the ranks or the shard lengths.
  std::int64_t granule = default_granule;
};

namespace detail {

/// The front's memory between calls.
struct temporary_tuning {
  /// (The buffers come from the library's kept pool, cuda/detail/memory_pool.cuh: the device's
  /// default pool would hand them back at each of a call's two synchronisations.)
  /// Temporary storage a kept workspace may hold (reduce, argmin/argmax and statistics need at most
  /// a few MiB); one that grew past it (a long window, a large search) is freed after its call.
  static constexpr std::size_t workspace_bytes_max = std::size_t{16} << 20;
  /// (device, stream) pairs whose workspace a thread keeps; past that the oldest is freed.
  static constexpr std::size_t streams_kept = 8;
};

/// The stream-ordered memory pool of the current GPU for the front's temporary buffers: the one the
/// library keeps per GPU (cuda/detail/memory_pool.cuh).
inline cudaMemPool_t temporary_pool() {
  int device = 0;
  multireduce::cuda::check(cudaGetDevice(&device), "multireduce::nccl: finding the current device");
  return multireduce::cuda::detail::kept_memory_pool(device);
}

/// `count` elements of T (uninitialised) of device memory in stream order: allocated on `stream`
/// from temporary_pool(), freed on it on destruction (cudaFreeAsync: once the work queued before
/// it has run, without waiting for anything), so it may be destroyed while that work is still
/// queued. Zero count: no allocation. Move-only. Failures throw cuda::error (the CUDA error state
/// cleared).
template <class T>
class stream_buffer {
 public:
  stream_buffer() = default;
  stream_buffer(std::size_t count, cudaStream_t stream) : stream_(stream) {
    if (count == 0) return;
    void* p = nullptr;
    if (const cudaError_t e = cudaMallocFromPoolAsync(&p, count * sizeof(T), temporary_pool(), stream); e != cudaSuccess) {
      cudaGetLastError();
      throw multireduce::cuda::error(
          e, "multireduce::nccl: allocating " + std::to_string(count * sizeof(T)) + " bytes of device memory");
    }
    data_ = static_cast<T*>(p);
    count_ = count;
  }
  stream_buffer(const stream_buffer&) = delete;
  stream_buffer& operator=(const stream_buffer&) = delete;
  stream_buffer(stream_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)), stream_(other.stream_) {}
  stream_buffer& operator=(stream_buffer&& other) noexcept {  // (the old memory goes with `other`)
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(stream_, other.stream_);
    return *this;
  }
  ~stream_buffer() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
  }

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
  cudaStream_t stream_ = 0;
};

}  // namespace detail

/// The transport over an NCCL communicator and a stream. allgather() takes host memory (staged
/// through the device); allgather_device() device memory. Throws std::runtime_error on NCCL errors.
class communicator {
 public:
  communicator(ncclComm_t comm, cudaStream_t stream, std::string function)
      : comm_(comm), stream_(stream), function_(std::move(function)) {
    check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    check(ncclCommCount(comm_, &size_), "ncclCommCount");
  }
  int rank() const { return rank_; }
  int size() const { return size_; }
  cudaStream_t stream() const { return stream_; }
  const std::string& function() const { return function_; }

  void allgather(const void* mine, void* all, std::size_t bytes) {
    if (bytes == 0) return;
    detail::stream_buffer<unsigned char> d_mine(bytes, stream_), d_all(bytes * std::size_t(size_), stream_);
    cuda(cudaMemcpyAsync(d_mine.data(), mine, bytes, cudaMemcpyHostToDevice, stream_), "copying to the GPU");
    allgather_device(d_mine.data(), d_all.data(), bytes);
    cuda(cudaMemcpyAsync(all, d_all.data(), bytes * std::size_t(size_), cudaMemcpyDeviceToHost, stream_),
         "copying from the GPU");
    synchronize();  // the host reads `all` (the buffers go back to the pool in stream order)
  }
  void allgather_device(const void* d_mine, void* d_all, std::size_t bytes) {
    if (bytes == 0) return;
    check(ncclAllGather(d_mine, d_all, bytes, ncclUint8, comm_, stream_), "ncclAllGather");
  }
  void synchronize() { cuda(cudaStreamSynchronize(stream_), "waiting for the stream"); }
  void cuda(cudaError_t e, const char* what) const {
    if (e != cudaSuccess) throw multireduce::cuda::error(e, function_ + ": " + what);
  }

 private:
  void check(ncclResult_t r, const char* what) const {
    if (r == ncclSuccess) return;
    std::string text = ncclGetErrorString(r);
    if (const char* last = ncclGetLastError(comm_); last != nullptr && *last != 0) text += std::string(" (") + last + ")";
    throw std::runtime_error(function_ + ": " + what + " failed: " + text);
  }
  ncclComm_t comm_;
  cudaStream_t stream_;
  std::string function_;
  int rank_ = 0, size_ = 1;
};
static_assert(ranks::transport<communicator>);

namespace detail {

template <class T>
using buffer = stream_buffer<T>;

/// The thread's cuda::workspace for the current device and `stream`, kept between calls, so that a
/// call does not allocate (and free: cudaFree synchronises the device) the one-GPU temporary
/// storage every time. A call borrows it (out of the thread's table, so nothing else uses it
/// meanwhile) and gives it back when it returns normally: the stream is then synchronised, so no
/// queued work uses the storage and reduce's ticket is zero again, as the workspace keeps it. A call
/// that throws, or whose workspace grew past workspace_bytes_max, frees it instead, as a workspace
/// of its own would be. The table is keyed by the stream's unique id (cudaStreamGetId), not its
/// handle, which a later stream may reuse.
class kept_workspace {
 public:
  explicit kept_workspace(cudaStream_t stream) : ws_(stream) {
    const char* what = "multireduce::nccl: finding the stream's workspace";
    multireduce::cuda::check(cudaGetDevice(&device_), what);
    multireduce::cuda::check(cudaStreamGetId(stream, &stream_id_), what);
    auto& kept = table();
    for (auto it = kept.begin(); it != kept.end(); ++it)
      if (it->device == device_ && it->stream_id == stream_id_) {
        ws_ = std::move(it->ws);
        kept.erase(it);
        break;
      }
  }
  kept_workspace(const kept_workspace&) = delete;
  kept_workspace& operator=(const kept_workspace&) = delete;
  ~kept_workspace() {
    if (std::uncaught_exceptions() != exceptions_ || ws_.reserved_bytes() > temporary_tuning::workspace_bytes_max) return;
    try {
      auto& kept = table();
      if (kept.size() >= temporary_tuning::streams_kept) kept.erase(kept.begin());  // the oldest
      kept.push_back(entry{device_, stream_id_, std::move(ws_)});
    } catch (...) {  // no memory for the table: the workspace is freed
    }
  }
  multireduce::cuda::workspace& operator*() { return ws_; }
  multireduce::cuda::workspace* operator->() { return &ws_; }

 private:
  struct entry {
    int device;
    unsigned long long stream_id;
    multireduce::cuda::workspace ws;
  };
  static std::vector<entry>& table() {
    thread_local std::vector<entry> kept;
    return kept;
  }
  int device_ = 0;
  unsigned long long stream_id_ = 0;
  int exceptions_ = std::uncaught_exceptions();
  multireduce::cuda::workspace ws_;
};

/// A call after its header exchange.
struct session {
  communicator t;
  std::vector<ranks::rank_header> table;
  ranks::layout l;
  session(ncclComm_t comm, cudaStream_t stream, const char* function, const ranks::rank_header& mine)
      : t(comm, stream, function), table(ranks::exchange_headers(t, mine)), l(ranks::check_headers(table, function)) {}
  int me() const { return t.rank(); }
  void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) {
    if (bytes > 0) t.cuda(cudaMemcpyAsync(to, from, bytes, kind, t.stream()), "copying");
  }
};

template <class T>
void check_shard(ranks::rank_header& h, const T* shard, std::int64_t n) {
  if (n < 0) ranks::set_error(h, ranks::local_error::negative_length, n);
  if (n > 0 && shard == nullptr) ranks::set_error(h, ranks::local_error::null_shard, n);
}

inline void check_granule(ranks::rank_header& h, std::int64_t granule) {
  h.granule = granule;
  if (granule < 1) ranks::set_error(h, ranks::local_error::bad_granule, granule);
}

/// Every rank's halo slots on the device (empty when the plan needs none; every rank calls this).
template <class T>
buffer<T> exchange_halo(session& s, const ranks::halo_plan& h, const T* shard, std::int64_t n, buffer<T>& mine) {
  if (!h.needed()) return buffer<T>();
  mine = buffer<T>(std::size_t(h.slot()), s.t.stream());
  buffer<T> all(std::size_t(h.slot()) * std::size_t(s.l.size), s.t.stream());
  s.t.cuda(cudaMemsetAsync(mine.data(), 0, mine.bytes(), s.t.stream()), "clearing the halo");
  const std::int64_t m_head = n > 0 ? std::min(n, h.head) : 0, m_tail = n > 0 ? std::min(n, h.tail) : 0;
  s.copy(mine.data(), shard, std::size_t(m_head) * sizeof(T), cudaMemcpyDeviceToDevice);
  s.copy(mine.data() + h.head, shard + (n - m_tail), std::size_t(m_tail) * sizeof(T), cudaMemcpyDeviceToDevice);
  s.t.allgather_device(mine.data(), all.data(), mine.bytes());
  return all;
}

/// The global range [lo, hi) in one device buffer, from the shard and the gathered halo.
template <class T>
void assemble(session& s, const ranks::halo_plan& h, const buffer<T>& gathered, const T* shard, std::int64_t lo,
              std::int64_t hi, buffer<T>& out) {
  out = buffer<T>(std::size_t(hi - lo), s.t.stream());
  for (const auto& p : ranks::assemble(s.l, h, s.me(), lo, hi))
    s.copy(out.data() + p.target, (p.from_shard ? shard : gathered.data()) + p.source, std::size_t(p.count) * sizeof(T),
           cudaMemcpyDeviceToDevice);
}

/// Runs `reduce_one(const T* x, length, slot, granule)` for every granule this rank owns, each from a
/// 16-byte-aligned address; all-gathers the `Partial` slots and returns them (host bytes) with the
/// slot count. Every rank calls this.
template <class Partial, class T, class ReduceOne>
std::vector<unsigned char> granule_partials(session& s, const T* shard, std::int64_t n, const ranks::granule_plan& g,
                                            std::int64_t& slots, ReduceOne reduce_one) {
  const ranks::halo_plan halo = ranks::make_halo_plan(s.l, g);
  buffer<T> halo_mine;
  const buffer<T> gathered = exchange_halo(s, halo, shard, n, halo_mine);
  slots = g.max_owned();
  std::vector<unsigned char> host(std::size_t(slots) * sizeof(Partial) * std::size_t(s.l.size));
  if (slots == 0) return host;
  buffer<Partial> d_mine(static_cast<std::size_t>(slots), s.t.stream()),
      d_all(std::size_t(slots) * std::size_t(s.l.size), s.t.stream());
  s.t.cuda(cudaMemsetAsync(d_mine.data(), 0, d_mine.bytes(), s.t.stream()), "clearing the partials");
  const int me = s.me();
  buffer<T> staging, straddling;
  for (std::int64_t gi = g.first[std::size_t(me)]; gi < g.first[std::size_t(me) + 1]; ++gi) {
    const std::int64_t b = g.granule_begin(gi), e = g.granule_end(gi);
    const T* x;
    if (e <= s.l.end(me)) {
      x = shard + (b - s.l.begin(me));
      if (reinterpret_cast<std::uintptr_t>(x) % 16 != 0) {  // the association of an aligned array
        if (staging.size() < std::size_t(e - b)) staging = buffer<T>(std::size_t(g.granule), s.t.stream());
        s.copy(staging.data(), x, std::size_t(e - b) * sizeof(T), cudaMemcpyDeviceToDevice);
        x = staging.data();
      }
    } else {
      assemble(s, halo, gathered, shard, b, e, straddling);
      x = straddling.data();
    }
    reduce_one(x, e - b, d_mine.data() + (gi - g.first[std::size_t(me)]), gi);
  }
  s.t.allgather_device(d_mine.data(), d_all.data(), d_mine.bytes());
  s.copy(host.data(), d_all.data(), host.size(), cudaMemcpyDeviceToHost);
  s.t.synchronize();  // the host reads the partials (the buffers go back to the pool in stream order)
  return host;
}

template <class ArgOp, class ValueOp, class T>
key_value<T> arg_extreme(ncclComm_t comm, cudaStream_t stream, const T* shard, std::int64_t n, ranks::job j,
                         const char* function) {
  static_assert(std::is_arithmetic_v<T>, "multireduce::nccl::argmin/argmax need arithmetic elements");
  using KV = key_value<T>;
  auto h = ranks::make_header<T>(j, n);
  check_shard(h, shard, n);
  session s(comm, stream, function, h);
  kept_workspace ws(stream);
  buffer<KV> d_mine(1, stream), d_all(std::size_t(s.l.size), stream);
  if constexpr (std::is_same_v<ArgOp, multireduce::argmin>) ws->argmin_async(shard, n, d_mine.data());
  else ws->argmax_async(shard, n, d_mine.data());
  s.t.allgather_device(d_mine.data(), d_all.data(), sizeof(KV));
  std::vector<unsigned char> host(sizeof(KV) * std::size_t(s.l.size));
  s.copy(host.data(), d_all.data(), host.size(), cudaMemcpyDeviceToHost);
  s.t.synchronize();
  std::optional<KV> acc;
  // Rank r's result, its index moved by start_r, combined in rank order (ties: the lower index).
  for (int r = 0; r < s.l.size; ++r) {
    KV p;
    std::memcpy(&p, host.data() + std::size_t(r) * sizeof(KV), sizeof(KV));
    if (p.index < 0) continue;
    p.index += s.l.begin(r);
    acc = acc ? ArgOp{}(*acc, p) : p;
  }
  return acc ? *acc : KV{ValueOp::template identity<T>(), -1};
}

}  // namespace detail

/// init (+) x[0] (+) ... (+) x[N-1] over the global array (this rank holds `shard`, n elements of
/// device memory), every element converted to Acc, on `stream`; blocking. Granule 0 is reduced
/// with init, every other granule with op's identity, and the granules' results are folded left
/// to right: for N <= G bitwise cuda::workspace::reduce on the whole array.
/// Op needs an identity (every operator of operators.hpp has one).
/// @return the reduction (init for N == 0), the same on every rank.
/// @throws std::invalid_argument on every rank when any rank's arguments are wrong or the ranks
///         disagree; std::runtime_error on NCCL errors; cuda::error on CUDA errors.
template <class T, class Op, class Acc>
Acc reduce(ncclComm_t comm, cudaStream_t stream, const T* shard, std::int64_t n, Op op, Acc init,
           const options& opt = {}) {
  static_assert(requires { { Op::template identity<Acc>() } -> std::convertible_to<Acc>; },
                "multireduce::nccl::reduce: op needs an identity, static Acc identity<Acc>() (granules after the "
                "first start from it)");
  static_assert(std::is_trivially_copyable_v<Acc> && std::is_default_constructible_v<Acc>,
                "multireduce::nccl::reduce: the accumulator travels as bytes (trivially copyable)");
  auto h = ranks::make_header<T, Acc>(ranks::job::reduce, n, ranks::operator_fingerprint<Op>());
  ranks::set_init(h, init);
  detail::check_shard(h, shard, n);
  detail::check_granule(h, opt.granule);
  detail::session s(comm, stream, "multireduce::nccl::reduce", h);
  const ranks::granule_plan g(s.l, opt.granule);
  detail::kept_workspace ws(stream);
  std::int64_t slots = 0;
  const auto host = detail::granule_partials<Acc>(s, shard, n, g, slots,
                                                  [&](const T* x, std::int64_t length, Acc* out, std::int64_t granule) {
                                                    ws->reduce_async(x, length, out, op,
                                                                    granule == 0 ? init : Op::template identity<Acc>());
                                                  });
  std::optional<Acc> acc;
  ranks::for_each_partial<Acc>(host, s.l.size, slots, [&](int r) { return g.owned(r); },
                               [&](const Acc& p) { acc = acc ? op(*acc, p) : p; });
  return acc ? *acc : init;
}

/// The smallest element of the global array and its GLOBAL index (NumPy's rules: the lowest index
/// among equal values, across ranks too; the first NaN); empty: {minimum::identity<T>(), -1}, as
/// cuda::workspace::argmin. Bitwise the one-GPU call on the whole array.
template <class T>
key_value<T> argmin(ncclComm_t comm, cudaStream_t stream, const T* shard, std::int64_t n) {
  return detail::arg_extreme<multireduce::argmin, minimum>(comm, stream, shard, n, ranks::job::argmin,
                                                           "multireduce::nccl::argmin");
}

/// The largest element and its GLOBAL index, as argmin.
template <class T>
key_value<T> argmax(ncclComm_t comm, cudaStream_t stream, const T* shard, std::int64_t n) {
  return detail::arg_extreme<multireduce::argmax, maximum>(comm, stream, shard, n, ranks::job::argmax,
                                                           "multireduce::nccl::argmax");
}

/// All statistics of the global array (global argmin/argmax): each granule's one-GPU statistics,
/// merged left to right (statistics_accumulator::of_result, merge: Chan et al., shift-free). One
/// granule (N <= G): exactly the one-GPU result.
template <class T>
multireduce::statistics<T> statistics(ncclComm_t comm, cudaStream_t stream, const T* shard, std::int64_t n,
                                      const options& opt = {}) {
  static_assert(std::is_arithmetic_v<T>, "multireduce::nccl::statistics needs arithmetic elements");
  using result = multireduce::statistics<T>;
  auto h = ranks::make_header<T>(ranks::job::statistics, n);
  detail::check_shard(h, shard, n);
  detail::check_granule(h, opt.granule);
  detail::session s(comm, stream, "multireduce::nccl::statistics", h);
  const ranks::granule_plan g(s.l, opt.granule);
  detail::kept_workspace ws(stream);
  std::int64_t slots = 0;
  const auto host = detail::granule_partials<result>(
      s, shard, n, g, slots,
      [&](const T* x, std::int64_t length, result* out, std::int64_t) { ws->statistics_async(x, length, out); });
  if (g.granules() == 1) {
    result only{};  // granule 0: its owner's first slot
    for (int r = 0; r < s.l.size; ++r)
      if (g.owned(r) == 1) std::memcpy(&only, host.data() + std::size_t(r) * std::size_t(slots) * sizeof(result), sizeof(result));
    return only;
  }
  statistics_accumulator<T> acc;
  std::int64_t granule = 0;
  ranks::for_each_partial<result>(host, s.l.size, slots, [&](int r) { return g.owned(r); }, [&](const result& p) {
    acc = statistics_accumulator<T>::merge(acc, statistics_accumulator<T>::of_result(p, g.granule_begin(granule++)));
  });
  return acc.result();
}

/// Sliding windows over the global array: this rank writes the windows that START in its shard,
/// count = max(0, min(n, N - W + 1 - start)), to out[0, count) (device memory), reading the W - 1
/// elements after its shard from the following ranks (any number of them). Integer, min/max and
/// bitwise windows are bitwise cuda::window_reduce on the whole array; floating-point sums and
/// products equal it within rounding.
/// @return count.
template <class T, class Out, class Op, class Acc>
std::int64_t window_reduce(ncclComm_t comm, cudaStream_t stream, const T* shard, std::int64_t n, std::int64_t window,
                           Out out, Op op, Acc init) {
  const char* function = "multireduce::nccl::window_reduce";
  auto h = ranks::window_header<T, Acc, Op>(n, window, ranks::is_null(out), init);
  detail::check_shard(h, shard, n);
  detail::session s(comm, stream, function, h);
  for (int r = 0; r < s.l.size; ++r)
    if (ranks::window_outputs(s.l, r, window) > 0 && (s.table[std::size_t(r)].flags & ranks::header_output_null))
      throw std::invalid_argument(std::string(function) + ": rank " + std::to_string(r) + " passed a null output for " +
                                  std::to_string(ranks::window_outputs(s.l, r, window)) + " windows");
  const ranks::halo_plan halo = ranks::make_window_plan(s.l, window, 1);
  detail::buffer<T> halo_mine, assembled;
  const detail::buffer<T> gathered = detail::exchange_halo(s, halo, shard, n, halo_mine);
  const int me = s.me();
  const std::int64_t count = ranks::window_outputs(s.l, me, window);
  detail::kept_workspace ws(stream);  // (given back after the synchronisation below)
  if (count > 0) {
    const std::int64_t lo = halo.begin[std::size_t(me)], hi = halo.end[std::size_t(me)];
    const T* x = shard;
    if (hi > s.l.end(me)) {
      detail::assemble(s, halo, gathered, shard, lo, hi, assembled);
      x = assembled.data();
    }
    ws->window_reduce_async(x, hi - lo, window, out, op, init);
  }
  s.t.synchronize();  // the call is blocking: the windows are written when it returns
  return count;
}

/// The k nearest training descriptors of every query by Hamming distance, GLOBAL training indices:
/// the queries (queries x bytes, device memory) are the same on every rank, the training rows
/// sharded (this rank holds `trains` rows). idx/dist (queries x k int32, device memory) get, on
/// every rank, exactly the one-GPU search's result on the whole training set: distance, then lower
/// index (OpenCV's order); -1 past the training set's size.
inline void knn_hamming(ncclComm_t comm, cudaStream_t stream, const std::uint8_t* query, std::int64_t queries,
                        const std::uint8_t* train, std::int64_t trains, int bytes, int k, std::int32_t* idx,
                        std::int32_t* dist, match_path path = match_path::automatic) {
  const auto h =
      ranks::knn_header(query, queries, train, trains, bytes, multireduce::cuda::match_max_bytes, k, idx, dist);
  detail::session s(comm, stream, "multireduce::nccl::knn_hamming", h);
  if (queries == 0) return;
  const std::size_t per = std::size_t(queries) * std::size_t(k);
  detail::buffer<std::int32_t> d_mine(2 * per, stream), d_all(2 * per * std::size_t(s.l.size), stream);
  detail::kept_workspace ws(stream);  // (given back after the synchronisations below)
  if (trains == 0) {
    s.t.cuda(cudaMemsetAsync(d_mine.data(), 0xff, d_mine.bytes(), stream), "no training rows");  // -1 everywhere
  } else {
    knn_pair piece{query, queries, train, trains, d_mine.data(), d_mine.data() + per};  // (kernel arguments)
    piece.first_train_index = s.l.begin(s.me());
    multireduce::cuda::knn_hamming_batched_async(*ws, &piece, 1, bytes, k, path);
  }
  s.t.allgather_device(d_mine.data(), d_all.data(), d_mine.bytes());
  std::vector<std::int32_t> all(2 * per * std::size_t(s.l.size));
  s.copy(all.data(), d_all.data(), all.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost);
  s.t.synchronize();
  // Rank r's slot: [idx | dist]; merge_knn wants every rank's idx, then every rank's dist.
  std::vector<std::int32_t> all_idx(per * std::size_t(s.l.size)), all_dist(all_idx.size()), merged(2 * per);
  for (int r = 0; r < s.l.size; ++r) {
    std::memcpy(all_idx.data() + std::size_t(r) * per, all.data() + std::size_t(r) * 2 * per, per * sizeof(std::int32_t));
    std::memcpy(all_dist.data() + std::size_t(r) * per, all.data() + std::size_t(r) * 2 * per + per,
                per * sizeof(std::int32_t));
  }
  ranks::merge_knn(all_idx.data(), all_dist.data(), s.l.size, queries, k, merged.data(), merged.data() + per);
  s.copy(idx, merged.data(), per * sizeof(std::int32_t), cudaMemcpyHostToDevice);
  s.copy(dist, merged.data() + per, per * sizeof(std::int32_t), cudaMemcpyHostToDevice);
  s.t.synchronize();
}

}  // namespace multireduce::nccl
