// multireduce/cuda/common.cuh -- what every device-wide algorithm shares: errors, vector loads,
// partial results for operators with or without an identity, and launch sizing.
#pragma once

#include <cuda_runtime.h>

#include <cuda/ptx>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "../operators.hpp"

namespace multireduce::cuda {

/// Thrown by the convenience layer (functions that allocate and return values) on CUDA errors and
/// bad arguments. `status()` is the CUDA error, or cudaErrorInvalidValue for bad arguments.
class error : public std::runtime_error {
 public:
  error(cudaError_t status, const std::string& what)
      : std::runtime_error(what + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")"),
        status_(status) {}
  cudaError_t status() const { return status_; }

 private:
  cudaError_t status_;
};

/// Throws multireduce::cuda::error when status is not cudaSuccess.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw error(status, what);
}

namespace detail {

/// The operator has a static identity<Acc>() (all of multireduce's built-in operators do).
template <class Op, class Acc>
concept has_identity = requires {
  { Op::template identity<Acc>() } -> std::convertible_to<Acc>;
};

/// A partial reduction that may be empty: for user operators without an identity element.
template <class Acc>
struct maybe {
  Acc value;
  int valid;
};

/// Any operator lifted to maybe<T>: an empty side leaves the other unchanged; order is kept.
template <class Op>
struct maybe_op {
  Op op;
  template <class T>
  __host__ __device__ __forceinline__ maybe<T> operator()(const maybe<T>& a, const maybe<T>& b) const {
    if (!a.valid) return b;
    if (!b.valid) return a;
    return maybe<T>{op(a.value, b.value), 1};
  }
};

/// How a kernel carries partial reductions: the plain accumulator when the operator has an
/// identity (cheapest), else maybe<Acc> with an emptiness flag.
template <class Acc, class Op>
struct partial {
  static constexpr bool plain = has_identity<Op, Acc>;
  using type = std::conditional_t<plain, Acc, maybe<Acc>>;

  __host__ __device__ static type empty() {
    if constexpr (plain) return Op::template identity<Acc>();
    else return type{Acc{}, 0};
  }
  __host__ __device__ static type of(const Acc& x) {
    if constexpr (plain) return x;
    else return type{x, 1};
  }
  /// The value of a partial known not to be empty.
  __host__ __device__ static Acc value(const type& p) {
    if constexpr (plain) return p;
    else return p.value;
  }
  /// The reduction's value given the caller's initial value: op(init, p) (init alone if empty).
  __host__ __device__ static Acc finish(const Op& op, const Acc& init, const type& p) {
    if constexpr (plain) return op(init, p);
    else return p.valid ? op(init, p.value) : init;
  }
};

/// The operator on partials: keeps left-to-right order, so non-commutative operators stay right.
template <class Acc, class Op>
struct partial_op {
  Op op;
  using type = typename partial<Acc, Op>::type;
  __host__ __device__ __forceinline__ type operator()(const type& a, const type& b) const {
    if constexpr (partial<Acc, Op>::plain) {
      return op(a, b);
    } else {
      if (!a.valid) return b;
      if (!b.valid) return a;
      return type{op(a.value, b.value), 1};
    }
  }
};

/// A shared-memory index with one pad word per 32 elements: a thread's run of 16 (or a stride-16
/// walk across a warp) then falls in distinct banks.
__host__ __device__ constexpr int padded(int i) { return i + (i >> 5); }

/// Elements of T in one 16-byte load (1 when T does not tile 16 bytes).
template <class T>
inline constexpr int vector_elements = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? int(16 / sizeof(T)) : 1;

template <class T>
struct alignas(16) vector16 {
  T v[vector_elements<T>];
};

/// Loads 16 bytes through the read-only path.
template <class T>
__device__ __forceinline__ vector16<T> load_vector(const vector16<T>* p) {
  const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
  vector16<T> v;
  std::memcpy(&v, &raw, sizeof v);
  return v;
}

/// Elements before the first 16-byte-aligned element of `p` (clamped to n). -1 if p is not even
/// aligned to sizeof(T) (then no vector loads are possible).
template <class T>
__host__ __device__ inline std::int64_t elements_to_alignment(const T* p, std::int64_t n) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if (address % alignof(T) != 0 || 16 % sizeof(T) != 0) return -1;
  const std::int64_t head = static_cast<std::int64_t>(((16 - address % 16) % 16) / sizeof(T));
  return head < n ? head : n;
}

/// The vector loop of for_each_strided with the loads of the next group of InFlight vectors issued
/// before the current group is visited (two groups in registers, taken in turn), so that a thread
/// with much arithmetic per vector keeps memory busy while it computes. Visits the groups that
/// start at i, i + InFlight * threads, ... while whole; returns where the single vectors begin.
template <int InFlight, class T, class OnVector>
__device__ __forceinline__ std::int64_t visit_groups_prefetched(const vector16<T>* body, std::int64_t vectors,
                                                                std::int64_t i, std::int64_t threads,
                                                                std::int64_t head, OnVector& on_vector) {
  constexpr int V = vector_elements<T>;
  const std::int64_t step = InFlight * threads;
  auto whole = [&](std::int64_t at) { return at + (InFlight - 1) * threads < vectors; };
  auto load = [&](vector16<T> (&group)[InFlight], std::int64_t at) {
#pragma unroll
    for (int u = 0; u < InFlight; ++u) group[u] = load_vector(body + at + u * threads);
  };
  auto visit = [&](const vector16<T> (&group)[InFlight], std::int64_t at) {
#pragma unroll
    for (int u = 0; u < InFlight; ++u) on_vector(group[u].v, head + (at + u * threads) * V);
  };
  if (!whole(i)) return i;
  vector16<T> a[InFlight], b[InFlight];
  load(a, i);
  while (true) {  // a holds the group at i
    const bool more = whole(i + step);
    if (more) load(b, i + step);
    visit(a, i);
    i += step;
    if (!more) return i;
    const bool further = whole(i + step);  // b holds the group at i
    if (further) load(a, i + step);
    visit(b, i);
    i += step;
    if (!further) return i;
  }
}

/// Visits one thread's grid-stride share of in[0, n), in increasing index order: the unaligned
/// head through on_element(x, index), then 16-byte vectors (InFlight loads issued together; with
/// Prefetch, the next InFlight while the current ones are visited) through
/// on_vector(const T (&)[V], first_index), then the tail through on_element. Iterators that are not
/// pointers, and pointers not aligned to sizeof(T), go element by element.
template <int BlockThreads, int InFlight, bool Prefetch = false, class It, class OnVector, class OnElement>
__device__ __forceinline__ void for_each_strided(It in, std::int64_t n, OnVector&& on_vector, OnElement&& on_element) {
  const std::int64_t thread = std::int64_t(blockIdx.x) * BlockThreads + threadIdx.x;
  const std::int64_t threads = std::int64_t(gridDim.x) * BlockThreads;
  std::int64_t scalar_from = 0;  // elements before this went through the head or the vectors
  if constexpr (std::is_pointer_v<It>) {
    using T = std::remove_cv_t<std::remove_pointer_t<It>>;
    constexpr int V = vector_elements<T>;
    const std::int64_t head = V > 1 ? elements_to_alignment(in, n) : -1;
    if (head >= 0) {
      if (thread < head) on_element(in[thread], thread);
      const std::int64_t vectors = (n - head) / V;
      const auto* body = reinterpret_cast<const vector16<T>*>(in + head);
      std::int64_t i = thread;
      if constexpr (Prefetch) {
        i = visit_groups_prefetched<InFlight>(body, vectors, i, threads, head, on_vector);
      } else {
        for (; i + (InFlight - 1) * threads < vectors; i += InFlight * threads) {
          vector16<T> v[InFlight];
#pragma unroll
          for (int u = 0; u < InFlight; ++u) v[u] = load_vector(body + i + u * threads);
#pragma unroll
          for (int u = 0; u < InFlight; ++u) on_vector(v[u].v, head + (i + u * threads) * V);
        }
      }
      for (; i < vectors; i += threads) on_vector(load_vector(body + i).v, head + i * V);
      scalar_from = head + vectors * V;
    }
  }
  for (std::int64_t i = scalar_from + thread; i < n; i += threads) on_element(in[i], i);
}

/// atomicAdd(ticket, 1) with acquire-release semantics at device scope; returns the old value. A
/// block's "am I the last?" ticket: its earlier writes are visible before the ticket moves, and
/// the block that takes the last ticket sees everyone's (no separate __threadfence on either side).
__device__ __forceinline__ unsigned ticket_add_acq_rel(unsigned* ticket) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(ticket) : "memory");
  return old;
}

/// atomicAdd(ticket, amount) with release semantics at device scope; returns the old value. The
/// writes before it are visible to whoever later sees the ticket move; unlike ticket_add_acq_rel
/// the caller does not wait for the old value until it uses it. The thread that takes the last
/// ticket calls acquire_fence() before it reads the others' writes.
__device__ __forceinline__ unsigned ticket_add_release(unsigned* ticket, unsigned amount) {
  unsigned old;
  asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(ticket), "r"(amount) : "memory");
  return old;
}

/// The acquire half of ticket_add_release's pattern: the writes released before the tickets this
/// thread has seen are visible to its later reads.
__device__ __forceinline__ void acquire_fence() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// ---- asynchronous copies into shared memory (cp.async, sm_80) ------------------------------------
// A thread issues copies, commits them as a group (commit_copies), and later waits for its groups
// (wait_copies<Pending>); the copies hold no registers meanwhile. Before sm_80 they are plain
// loads and stores, complete at once.

/// Copies 16 bytes (both addresses 16-byte aligned) from global to shared memory.
__device__ __forceinline__ void copy_async16(void* to, const void* from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(to))),
               "l"(from)
               : "memory");
#else
  *static_cast<uint4*>(to) = *static_cast<const uint4*>(from);
#endif
}
/// Copies one 32-bit word from global to shared memory; valid == false writes a zero instead.
__device__ __forceinline__ void copy_word_async(std::uint32_t* to, const std::uint32_t* from, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(address), "l"(from), "r"(valid ? 4 : 0) : "memory");
#else
  *to = valid ? __ldg(from) : 0u;
#endif
}
__device__ __forceinline__ void commit_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most `Pending` of this thread's committed copy groups are still in flight.
template <int Pending>
__device__ __forceinline__ void wait_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

/// Copies a trivially copyable value word by word with L2-coherent loads (for data written by
/// other blocks of the same launch).
template <class T>
__device__ __forceinline__ T load_coherent(const T* p) {
  T out;
  if constexpr (sizeof(T) % 4 == 0) {
    auto* dst = reinterpret_cast<unsigned*>(&out);
    const auto* src = reinterpret_cast<const unsigned*>(p);
    for (std::size_t i = 0; i < sizeof(T) / 4; ++i) dst[i] = __ldcg(src + i);
  } else {
    auto* dst = reinterpret_cast<unsigned char*>(&out);
    const auto* src = reinterpret_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < sizeof(T); ++i) dst[i] = __ldcg(src + i);
  }
  return out;
}

inline std::size_t round_up(std::size_t bytes, std::size_t alignment = 256) {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// An attribute of the current device, cached per device ordinal; `fallback` when it cannot be read.
template <cudaDeviceAttr Attribute>
inline int current_device_attribute(int fallback) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return fallback;
  static int cache[64] = {};
  if (cache[device] == 0) {
    int value = fallback;
    if (cudaDeviceGetAttribute(&value, Attribute, device) != cudaSuccess) value = fallback;
    cache[device] = value;
  }
  return cache[device];
}

/// Multiprocessors of the current device.
inline int sm_count() { return current_device_attribute<cudaDevAttrMultiProcessorCount>(1); }

/// Compute capability major version of the current device.
inline int device_major() { return current_device_attribute<cudaDevAttrComputeCapabilityMajor>(0); }

// ---- overlapped launches (programmatic dependent launch, sm_90) --------------------------------
// A kernel launched with launch_overlapped may be scheduled while the kernel before it in the
// stream is still running, once every block of that kernel has called allow_next_grid() (or
// exited). Before it reads anything that kernel wrote, it calls wait_for_previous_grid(), which
// returns once the previous kernel has completed and its writes are visible. Before sm_90 both
// are no-ops and the launch is an ordinary one.

/// Lets the next kernel in the stream be scheduled (its blocks then wait in wait_for_previous_grid).
__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Waits until the previous kernel in the stream has completed and its writes are visible.
__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Called at a block's end by a kernel that may not have waited for the previous one: thread 0
/// waits, so that this kernel completes only after the previous one (and a kernel that waits for
/// this one sees both complete).
__device__ __forceinline__ void complete_after_previous_grid() {
  if (threadIdx.x == 0) wait_for_previous_grid();
}

/// kernel<<<blocks, threads, shared, stream>>>(args...), overlapping the previous kernel's tail on
/// sm_90 and later (see allow_next_grid / wait_for_previous_grid).
template <class... Params, class... Args>
cudaError_t launch_overlapped(void (*kernel)(Params...), int blocks, int threads, std::size_t shared,
                              cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  if (device_major() >= 9) {
    config.attrs = &overlap;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(std::forward<Args>(args))...);
}

// ---- bulk copies into shared memory (the tensor memory accelerator, sm_90) ---------------------
// A stage of shared memory is filled by one thread with one bulk copy and announced through an
// mbarrier: stage_expect(bar, bytes) + stage_bulk_copy(...) by the issuing thread, stage_wait(bar,
// parity) by every reader (parity: 0 on the first use of `bar`, then alternating). Only launched
// on sm_90 and later; on older architectures these trap.

__device__ __forceinline__ void stage_barrier_init(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  ::cuda::ptx::mbarrier_init(bar, 1);
  ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
#else
  __trap();
#endif
}

/// Arrives on `bar` (count 1), expecting `bytes` more from bulk copies (0: the phase completes now).
__device__ __forceinline__ void stage_expect(std::uint64_t* bar, std::uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  ::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta, ::cuda::ptx::space_shared, bar,
                                       bytes);
#else
  __trap();
#endif
}

/// Copies `bytes` (a multiple of 16; both addresses 16-byte aligned) from global to shared memory.
__device__ __forceinline__ void stage_bulk_copy(void* to, const void* from, std::uint32_t bytes, std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  ::cuda::ptx::cp_async_bulk(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, to, from, bytes, bar);
#else
  __trap();
#endif
}

__device__ __forceinline__ void stage_wait(std::uint64_t* bar, std::uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  while (!::cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
#else
  __trap();
#endif
}

/// Blocks of `kernel` that fit on the device at once (at least one per SM): the grid of a
/// kernel whose blocks loop over their work, so that no block starts only after others finish.
template <class Kernel>
inline int resident_grid(Kernel kernel, int threads, std::size_t shared = 0) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared) != cudaSuccess || per_sm < 1)
    per_sm = 1;
  return sm_count() * per_sm;
}

}  // namespace detail
}  // namespace multireduce::cuda
