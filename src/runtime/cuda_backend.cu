// runtime/cuda_backend.cu -- the runtime's jobs on a GPU (multireduce::cuda).
//
// What runs here (anything else is CPU-only, and cuda_unsupported_reason says so):
//  - whole-array reduce and statistics: every dtype but float16, every operator that fits the
//    dtype; host inputs larger than the free GPU memory go through the GPU in chunks (one
//    streamed fold for all three);
//  - segmented (fixed length or offsets) and window reduce: float32, float64, int32 and int64 with
//    sum, min or max;
//  - the matcher: descriptors of up to match_max_bytes; a training set that does not fit in the
//    free GPU memory is streamed through it.
// Every call makes its device current and gives the caller's back when it returns.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <multireduce/cuda.cuh>
#include <multireduce/match/cuda.cuh>

#include "backends.hpp"
#include "pairwise.hpp"
#include "pieces.hpp"

namespace multireduce::runtime::backends {
namespace {

namespace mc = multireduce::cuda;

/// Throws the runtime's device_error for a failed CUDA call.
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw device_error(int(status), std::string("GPU: ") + what + ": " + cudaGetErrorString(status));
  }
}

/// Runs `body` (which may throw cuda::error) with `device` current, restoring the caller's device
/// after it, and turns the CUDA layer's errors into the runtime's.
template <class F>
void on_device(int device, const char* what, F&& body) {
  int previous = 0;
  check(cudaGetDevice(&previous), "finding the current device");
  if (previous != device) check(cudaSetDevice(device), "selecting the device");
  struct restore {
    int device;
    bool changed;
    ~restore() {
      if (changed) cudaSetDevice(device);
    }
  } give_back{previous, previous != device};
  try {
    body();
  } catch (const mc::error& e) {
    const std::string message = std::string("GPU: ") + what + ": " + e.what();
    if (e.status() == cudaErrorMemoryAllocation) throw device_memory_error(int(e.status()), message);
    throw device_error(int(e.status()), message);
  }
}

/// The GPU's name, read once per device (cudaGetDeviceProperties takes about 100 us, as long as a
/// small job itself) and kept in a table that a mutex guards: calls from many threads are safe.
std::string device_name(int device) {
  static std::mutex guard;
  static std::map<int, std::string> names;
  std::lock_guard<std::mutex> lock(guard);
  if (auto it = names.find(device); it != names.end()) return it->second;
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device), "reading the device's name");
  return names[device] = p.name;
}

/// "" when `device` exists; else why not.
std::string missing_device(int device) {
  const int count = cuda_device_count();
  if (count == 0) return "no CUDA device is available";
  if (device < 0 || device >= count)
    return "device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " device(s))";
  return "";
}

cudaStream_t stream_of(const execution& exec) { return static_cast<cudaStream_t>(exec.stream); }

/// Copies `count` host elements to the device, timed as a transfer.
template <class T>
void upload(T* d, const T* host, std::int64_t count, cudaStream_t stream, mc::event_timer& timer, report& r) {
  timer.start();
  mc::check(cudaMemcpyAsync(d, host, sizeof(T) * std::size_t(count), cudaMemcpyHostToDevice, stream),
            "uploading the input");
  r.transfer_seconds += timer.stop();
}

/// Elements per chunk when streaming n elements of `bytes_per_element` through the GPU: half of
/// its free memory.
std::int64_t chunk_elements(std::int64_t n, std::size_t bytes_per_element) {
  std::size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "querying free memory");
  const auto fit = static_cast<std::int64_t>(free_bytes / 2 / bytes_per_element);
  return n < fit ? n : (fit > 1 ? fit : 1);
}

/// Runs fold_piece(device pointer, count, index of its first element) over a host source, piece
/// by piece through one device buffer (pieces of at most half the free GPU memory), and returns the
/// pieces' partials in order (none for an empty input).
template <class T, class FoldPiece>
auto fold_pieces(array_source& in, mc::workspace& ws, report& r, const execution& exec, FoldPiece&& fold_piece) {
  using Partial = decltype(fold_piece(static_cast<const T*>(nullptr), std::int64_t(0), std::int64_t(0)));
  std::vector<Partial> partials;
  const std::int64_t n = in.count();
  r.bytes_read += n * std::int64_t(sizeof(T));
  if (n == 0) return partials;
  const std::int64_t piece = std::min(in.piece_elements(), chunk_elements(n, sizeof(T)));
  mc::device_buffer<T> d(static_cast<std::size_t>(std::min(piece, n)));
  mc::event_timer timer(ws.stream());
  for (std::int64_t first = 0; first < n; first += piece) {
    const std::int64_t count = std::min(piece, n - first);
    upload(d.data(), static_cast<const T*>(in.read(first, count)), count, ws.stream(), timer, r);
    timer.start();
    partials.push_back(fold_piece(d.data(), count, first));
    r.seconds += timer.stop();
    if (exec.progress) exec.progress(first + count, n);
  }
  return partials;
}

/// A whole-array float sum of a host source: NumPy's pairwise tree over the pieces (each piece's
/// sum is the GPU's), so that pieces combine pairwise, not one after another.
template <class T>
T pairwise_sum_of_pieces(array_source& in, mc::workspace& ws, report& r, const execution& exec) {
  const std::int64_t n = in.count();
  r.bytes_read += n * std::int64_t(sizeof(T));
  const std::int64_t piece = std::max(std::min(in.piece_elements(), chunk_elements(n, sizeof(T))), pairwise::block);
  mc::device_buffer<T> d(static_cast<std::size_t>(std::max<std::int64_t>(std::min(piece, n), 1)));
  mc::event_timer timer(ws.stream());
  return T(0) + pairwise::over_pieces<T>(0, n, piece, [&](std::int64_t first, std::int64_t count) {
    if (count == 0) return T(0);
    upload(d.data(), static_cast<const T*>(in.read(first, count)), count, ws.stream(), timer, r);
    timer.start();
    const T s = ws.reduce(d.data(), count, multireduce::sum{}, T(0));
    r.seconds += timer.stop();
    if (exec.progress) exec.progress(first + count, n);
    return s;
  });
}

/// A whole-array job on a host source.
template <class T>
void whole_reduce(const reduce_job& job, array_source& in, output_sink& out, mc::workspace& ws, report& r,
                  const execution& exec) {
  if constexpr (std::is_floating_point_v<T>) {
    if (job.op == op_kind::sum) {
      const T total = pairwise_sum_of_pieces<T>(in, ws, r, exec);
      return out.write(&total, 1);
    }
  }
  if (info(job.op).positional) {
    const bool smallest = job.op == op_kind::argmin;
    const auto parts = fold_pieces<T>(in, ws, r, exec, [&](const T* d, std::int64_t count, std::int64_t first) {
      key_value<T> found = smallest ? ws.argmin(d, count) : ws.argmax(d, count);
      found.index += first;
      return found;
    });
    std::int64_t index = -1;
    key_value<T> best{};
    for (const auto& p : parts) {
      best = index < 0 ? p : smallest ? multireduce::argmin{}(best, p) : multireduce::argmax{}(best, p);
      index = best.index;
    }
    return out.write(&index, 1);
  }
  visit_value_op<T>(job.op, [&](auto op, auto init) {
    const auto parts = fold_pieces<T>(in, ws, r, exec, [&](const T* d, std::int64_t count, std::int64_t) {
      return ws.reduce(d, count, op, init);
    });
    auto acc = init;
    for (const auto& p : parts) acc = op(acc, p);
    out.write(&acc, 1);
  });
}

/// A whole-array job on an array in device memory, its result to host or device memory.
template <class T>
void whole_reduce_on_device(const reduce_job& job, const output_view& out, mc::workspace& ws, report& r) {
  const T* d = static_cast<const T*>(job.input.data);
  const std::int64_t n = job.input.count;
  r.bytes_read += n * std::int64_t(sizeof(T));
  mc::event_timer timer(ws.stream());
  timer.start();
  auto put = [&](const auto& value) {
    r.seconds += timer.stop();
    if (out.where == memory::host) std::memcpy(out.data, &value, sizeof(value));
    else mc::check(cudaMemcpy(out.data, &value, sizeof(value), cudaMemcpyHostToDevice), "writing the result");
  };
  if (info(job.op).positional) {
    const key_value<T> found = job.op == op_kind::argmin ? ws.argmin(d, n) : ws.argmax(d, n);
    return put(found.index);
  }
  visit_value_op<T>(job.op, [&](auto op, auto init) { put(ws.reduce(d, n, op, init)); });
}

/// The element types and operators of the GPU's segmented and window reductions.
template <class T>
inline constexpr bool shaped_type =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;
inline constexpr unsigned shaped_ops = op_bit(op_kind::sum) | op_bit(op_kind::min) | op_bit(op_kind::max);

/// `count` elements of T on the device: the array's own memory, or a copy of a host array.
template <class T>
struct on_gpu {
  mc::device_buffer<T> copy;
  T* data = nullptr;
  on_gpu(const void* p, std::int64_t count, memory where, cudaStream_t stream) {
    if (where == memory::cuda) {
      data = static_cast<T*>(const_cast<void*>(p));
      return;
    }
    copy = mc::device_buffer<T>(static_cast<std::size_t>(count));
    data = copy.data();
    if (count > 0)
      mc::check(cudaMemcpyAsync(data, p, sizeof(T) * std::size_t(count), cudaMemcpyHostToDevice, stream), "uploading");
  }
};

/// A segmented or window job: the input (and offsets) on the device, one call, the outputs back.
template <class T>
void shaped_reduce(const reduce_job& job, const output_view& out, mc::workspace& ws, report& r) {
  if constexpr (shaped_type<T>) {
    visit_value_op<T, shaped_ops>(job.op, [&](auto op, auto init) {
      using Acc = decltype(init);
      const std::int64_t n = job.input.count, outputs = output_count(job);
      const cudaStream_t stream = ws.stream();
      mc::event_timer timer(stream);
      timer.start();
      on_gpu<T> in(job.input.data, n, job.input.where, stream);
      // The outputs: the caller's device memory, or a device buffer downloaded afterwards.
      mc::device_buffer<Acc> staged;
      Acc* result = static_cast<Acc*>(out.data);
      if (out.where == memory::host) {
        staged = mc::device_buffer<Acc>(static_cast<std::size_t>(outputs));
        result = staged.data();
      }
      std::optional<on_gpu<std::int64_t>> offsets;
      if (job.shape == shape_kind::offsets) offsets.emplace(job.offsets, job.segments + 1, memory::host, stream);
      r.transfer_seconds += timer.stop();
      timer.start();
      r.bytes_read += n * std::int64_t(sizeof(T));
      r.bytes_written += outputs * std::int64_t(sizeof(Acc));
      if (job.shape == shape_kind::offsets) {
        ws.segmented_reduce_async(in.data, n, result, job.segments, offsets->data, offsets->data + 1, op, init);
        r.bytes_read += (job.segments + 1) * 8;
      } else if (job.shape == shape_kind::fixed_segments) {
        ws.fixed_segmented_reduce_async(in.data, result, job.segments, job.length, op, init);
      } else {
        ws.window_reduce_async(in.data, n, job.length, result, op, init);
      }
      r.seconds += timer.stop();
      if (out.where == memory::host && outputs > 0) {
        timer.start();
        mc::check(cudaMemcpy(out.data, result, sizeof(Acc) * std::size_t(outputs), cudaMemcpyDeviceToHost),
                  "downloading the result");
        r.transfer_seconds += timer.stop();
      }
    });
  } else {
    throw unsupported_error(
        "cuda", "the GPU runs no segmented or window reductions of " + std::string(name_of(dtype_of<T>())));
  }
}

/// A segmented or window job on a host source: piece by piece (pieces of at most half the free GPU
/// memory), each piece's outputs to the sink as soon as they are back.
template <class T>
void shaped_reduce(const reduce_job& job, array_source& in, output_sink& out, mc::workspace& ws, report& r,
                   const execution& exec) {
  const std::size_t out_size = size_of(output_dtype(job));
  const std::int64_t cap = std::min(in.piece_elements(), chunk_elements(in.count(), sizeof(T)));
  std::vector<std::byte> outputs;
  pieces::for_each(job, cap, [&](pieces::piece& p) {
    p.sub.input.data = in.read(p.first, p.count);
    p.sub.input.where = memory::host;
    const std::int64_t count = output_count(p.sub);
    outputs.resize(std::size_t(count) * out_size);
    shaped_reduce<T>(p.sub, output_view{output_dtype(job), outputs.data(), count, memory::host, 0}, ws, r);
    out.write(outputs.data(), count);
    if (exec.progress) exec.progress(p.first + p.count, in.count());
  });
}


// ---- arrays and outputs in GPU memory: queued on the stream, never waited for --------------------

/// The temporary storage of queued jobs: one stream-ordered memory pool per GPU, made on first use
/// and kept (in a table that a mutex guards) for the process's life.
struct temporary_pool_tuning {
  /// Bytes a pool keeps between calls instead of handing them back to the driver at every
  /// synchronisation, as the device's default pool does (release threshold 0). Measured on the
  /// H200 (python -m multireduce.bench, CUDA events around one call, 2026-11-24): with the default
  /// pool a 2^14-float sum took 73 us and a 2^26-float segmented sum 188 us, 60-130 us of it
  /// mapping memory again; the library's own temporary storage is at most a few MiB but the
  /// matcher's grows with the queries, hence a generous bound.
  static constexpr std::uint64_t keep_bytes = 256ull << 20;
};

cudaMemPool_t temporary_pool(int device) {
  static std::mutex guard;
  static std::map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(guard);
  if (auto it = pools.find(device); it != pools.end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  mc::check(cudaMemPoolCreate(&pool, &props), "creating the temporary storage pool");
  std::uint64_t keep = temporary_pool_tuning::keep_bytes;
  mc::check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "creating the temporary storage pool");
  return pools[device] = pool;
}

/// Device memory from the current GPU's temporary pool, freed in stream order: unlike cudaFree,
/// neither waits for the device.
class stream_storage {
 public:
  stream_storage(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    int device = 0;
    mc::check(cudaGetDevice(&device), "allocating temporary storage");
    mc::check(cudaMallocFromPoolAsync(&data_, bytes > 0 ? bytes : 1, temporary_pool(device), stream),
              "allocating temporary storage");
  }
  ~stream_storage() { cudaFreeAsync(data_, stream_); }
  stream_storage(const stream_storage&) = delete;
  stream_storage& operator=(const stream_storage&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

/// Runs a CUB-style call (the query, then the run) in stream-ordered temporary storage.
template <class Algorithm>
void run_queued(const char* what, cudaStream_t stream, Algorithm&& algorithm) {
  std::size_t bytes = 0;
  mc::check(algorithm(nullptr, bytes), what);
  stream_storage temp(bytes, stream);
  mc::check(algorithm(temp.get(), bytes), what);
}

/// What the queued jobs of one stream keep between calls, so that a small job is one launch and no
/// allocation: a workspace (temporary storage that only grows; reduce's ticket and the segmented
/// reduce's queue header kept zero, so no clearing either), and the offsets check's mark (~0
/// between calls) with a pinned host word it is read into. A mutex keeps two host threads queueing on one stream apart; the stream's order
/// keeps their kernels apart.
struct stream_state {
  explicit stream_state(cudaStream_t stream) : ws(stream), bad_offset(1), unread_mark(1), bad_offset_host(1) {
    mc::check(cudaMemsetAsync(bad_offset.data(), 0xff, sizeof(unsigned long long), stream), "preparing the stream");
  }
  std::mutex busy;
  mc::workspace ws;
  mc::device_buffer<unsigned long long> bad_offset;
  /// The mark given to the staged kernel when the caller vouches for the offsets
  /// (reduce_job::check_offsets false): never read, so bad_offset stays ~0 for the next check.
  mc::device_buffer<unsigned long long> unread_mark;
  mc::pinned_buffer<unsigned long long> bad_offset_host;
};

struct stream_state_tuning {
  /// Streams whose state is kept (the first ones met; past that the oldest is let go, its memory
  /// freed once no call uses it). PyTorch's and CuPy's streams come from small pools.
  static constexpr std::size_t streams_kept = 32;
  /// Temporary storage a stream's workspace may grow to; a job that needs more (a window longer
  /// than the tile kernel's reach: 2n accumulators) takes it from the pool and gives it back. The
  /// reduce, statistics, fixed-length and offsets jobs need at most a few MiB.
  static constexpr std::size_t workspace_bytes_max = 16u << 20;
};

/// The state of `stream` on the current device (made on first use).
std::shared_ptr<stream_state> state_of(cudaStream_t stream) {
  static std::mutex guard;
  static std::map<std::pair<int, unsigned long long>, std::shared_ptr<stream_state>> states;
  static std::deque<std::pair<int, unsigned long long>> met;  // in the order first met
  int device = 0;
  unsigned long long id = 0;
  mc::check(cudaGetDevice(&device), "finding the stream's state");
  mc::check(cudaStreamGetId(stream, &id), "finding the stream's state");
  const std::pair<int, unsigned long long> key{device, id};
  std::lock_guard<std::mutex> lock(guard);
  if (auto it = states.find(key); it != states.end()) return it->second;
  if (states.size() >= stream_state_tuning::streams_kept) {
    states.erase(met.front());
    met.pop_front();
  }
  met.push_back(key);
  return states[key] = std::make_shared<stream_state>(stream);
}

/// Runs a CUB-style call in pool storage (run_queued) when it needs more than workspace_bytes_max,
/// else in_workspace() (by default the call in the stream state's workspace).
template <class Algorithm, class InWorkspace>
void run_on_stream(const char* what, cudaStream_t stream, Algorithm&& algorithm, InWorkspace&& in_workspace) {
  std::size_t bytes = 0;
  mc::check(algorithm(nullptr, bytes), what);
  if (bytes > stream_state_tuning::workspace_bytes_max) return run_queued(what, stream, algorithm);
  in_workspace();
}
template <class Algorithm>
void run_on_stream(stream_state& state, const char* what, cudaStream_t stream, Algorithm&& algorithm) {
  run_on_stream(what, stream, algorithm, [&] { state.ws.run_async(what, algorithm); });
}

/// A segmented reduce over one offsets array: in the stream state's workspace through its own
/// entry point (the queue header kept zero: no zeroing kernel), as run_on_stream. bad_offset: null,
/// or the mark of unchecked offsets (see mc::detail::segmented_reduce).
template <class T, class Acc, class Op>
void segmented_on_stream(stream_state& state, cudaStream_t stream, const T* in, std::int64_t n, Acc* out,
                         std::int64_t segments, const std::int64_t* o, Op op, Acc init,
                         unsigned long long* bad_offset) {
  run_on_stream(
      "segmented reduce", stream,
      [&](void* t, std::size_t& b) {
        return mc::detail::segmented_reduce(t, b, in, n, out, segments, o, o + 1, op, init, stream, bad_offset);
      },
      [&] { state.ws.segmented_reduce_async(in, n, out, segments, o, o + 1, op, init, bad_offset); });
}

/// Marks in *first_bad the smallest s whose offset breaks the rules: o[0] < 0, o[s] < o[s - 1], or
/// o[segments] > n.
__global__ void find_bad_offset_kernel(const std::int64_t* o, std::int64_t segments, std::int64_t n,
                                       unsigned long long* first_bad) {
  for (std::int64_t s = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s <= segments;
       s += std::int64_t(gridDim.x) * blockDim.x) {
    const bool bad = (s == 0 ? o[0] < 0 : o[s] < o[s - 1]) || (s == segments && o[s] > n);
    if (bad) atomicMin(first_bad, static_cast<unsigned long long>(s));
  }
}

/// Waits for the stream and reads the mark of a check of offsets in GPU memory (~0: good); when it
/// names a bad offset, sets the mark back to ~0 and throws as validate() does for host offsets
/// (throw_bad_offset words both), with the two offsets it names read back.
void read_offsets_verdict(const std::int64_t* o, std::int64_t n, unsigned long long* mark,
                          unsigned long long* host_word, cudaStream_t stream) {
  mc::check(cudaMemcpyAsync(host_word, mark, sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream),
            "checking the offsets");
  mc::check(cudaStreamSynchronize(stream), "checking the offsets");
  const unsigned long long bad = *host_word;
  if (bad == ~0ull) return;
  mc::check(cudaMemsetAsync(mark, 0xff, sizeof(unsigned long long), stream), "checking the offsets");
  const auto s = static_cast<std::int64_t>(bad);
  std::int64_t pair[2] = {0, 0};  // o[s - 1], o[s]
  mc::check(cudaMemcpy(pair + (s == 0), o + s - (s > 0), sizeof(std::int64_t) * (s == 0 ? 1 : 2), cudaMemcpyDeviceToHost),
            "reading the offsets");
  throw_bad_offset(s, pair[0], pair[1], n);
}

/// Checks offsets in GPU memory before anything reads them: one kernel marking the stream state's
/// mark, then its verdict read back (read_offsets_verdict).
void check_offsets_on_gpu(const std::int64_t* o, std::int64_t segments, std::int64_t n, stream_state& state,
                          cudaStream_t stream) {
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((segments + threads) / threads, 4096));
  mc::check(mc::launch(find_bad_offset_kernel, blocks, threads, 0, stream, o, segments, n, state.bad_offset.data()),
            "checking the offsets");
  read_offsets_verdict(o, n, state.bad_offset.data(), state.bad_offset_host.data(), stream);
}

/// A whole-array job, input and output in GPU memory: one launch in the stream's workspace.
template <class T>
void whole_reduce_queued(const reduce_job& job, const output_view& out, cudaStream_t stream) {
  const T* d = static_cast<const T*>(job.input.data);
  const std::int64_t n = job.input.count;
  const std::shared_ptr<stream_state> state = state_of(stream);
  const std::lock_guard<std::mutex> lock(state->busy);
  if (info(job.op).positional) {  // {value, index} in temporary storage; the index is the output
    stream_storage pair(sizeof(key_value<T>), stream);
    auto* found = static_cast<key_value<T>*>(pair.get());
    if (job.op == op_kind::argmin) state->ws.argmin_async(d, n, found);
    else state->ws.argmax_async(d, n, found);
    mc::check(cudaMemcpyAsync(out.data, &found->index, sizeof(std::int64_t), cudaMemcpyDeviceToDevice, stream),
              "writing the result");
    return;
  }
  visit_value_op<T>(job.op, [&](auto op, auto init) {
    using Acc = decltype(init);
    state->ws.reduce_async(d, n, static_cast<Acc*>(out.data), op, init);
  });
}

/// A segmented or window job, input, offsets and outputs in GPU memory (host offsets are uploaded).
template <class T>
void shaped_reduce_queued(const reduce_job& job, const output_view& out, cudaStream_t stream) {
  if constexpr (shaped_type<T>) {
    const std::shared_ptr<stream_state> state = state_of(stream);
    const std::lock_guard<std::mutex> lock(state->busy);
    visit_value_op<T, shaped_ops>(job.op, [&](auto op, auto init) {
      using Acc = decltype(init);
      const T* in = static_cast<const T*>(job.input.data);
      Acc* result = static_cast<Acc*>(out.data);
      const std::int64_t n = job.input.count;
      if (job.shape == shape_kind::offsets) {
        const std::size_t offset_bytes = sizeof(std::int64_t) * std::size_t(job.segments + 1);
        std::optional<stream_storage> uploaded;
        const std::int64_t* o = job.offsets;
        if (job.offsets_where == memory::host) {
          uploaded.emplace(offset_bytes, stream);
          mc::check(cudaMemcpyAsync(uploaded->get(), job.offsets, offset_bytes, cudaMemcpyHostToDevice, stream),
                    "uploading the offsets");
          o = static_cast<const std::int64_t*>(uploaded->get());
        } else if ((job.output_is_new || !job.check_offsets) &&
                   mc::detail::segmented_reduce_is_staged(in, n, job.segments, o, o + 1)) {
          // The staged kernel checks the offsets as it reads them (reading only inside the input
          // whatever they say): no check kernel and no wait before the reduction. The verdict is
          // read after it (bad offsets leave garbage only in an output made for this call), or
          // not at all when the caller vouches for the offsets.
          unsigned long long* mark = job.check_offsets ? state->bad_offset.data() : state->unread_mark.data();
          segmented_on_stream(*state, stream, in, n, result, job.segments, o, op, init, mark);
          if (job.check_offsets)
            read_offsets_verdict(o, n, state->bad_offset.data(), state->bad_offset_host.data(), stream);
          return;
        } else {
          check_offsets_on_gpu(o, job.segments, n, *state, stream);
        }
        segmented_on_stream(*state, stream, in, n, result, job.segments, o, op, init, nullptr);
      } else if (job.shape == shape_kind::fixed_segments) {
        run_on_stream(*state, "segmented reduce", stream, [&](void* t, std::size_t& b) {
          return mc::fixed_segmented_reduce(t, b, in, result, job.segments, job.length, op, init, stream);
        });
      } else {
        run_on_stream(*state, "window reduce", stream, [&](void* t, std::size_t& b) {
          return mc::window_reduce(t, b, in, n, job.length, result, op, init, stream);
        });
      }
    });
  } else {
    throw unsupported_error(
        "cuda", "the GPU runs no segmented or window reductions of " + std::string(name_of(dtype_of<T>())));
  }
}

}  // namespace

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string cuda_unsupported_reason(const reduce_job& job, int device) {
  if (std::string why = missing_device(device); !why.empty()) return why;
  if (job.input.type == dtype::float16) return "float16 runs on the CPU backend only";
  if (info(job.op).integers_only && is_floating(job.input.type)) return "bitwise operators need an integer dtype";
  if (job.shape == shape_kind::whole) return "";
  if (job.shape == shape_kind::axis)
    return "the GPU reduces contiguous runs; an axis other than the last runs on the CPU (NumPy's order, one row "
           "after another)";
  const bool type_ok = visit(job.input.type, [](auto element) { return shaped_type<decltype(element)>; });
  if (!type_ok || (shaped_ops & op_bit(job.op)) == 0)
    return "the GPU backend runs segmented and window reductions of float32, float64, int32 and int64 with sum, min "
           "or max; use --backend cpu";
  return "";
}

std::string cuda_unsupported_reason_for_statistics(dtype type, int device) {
  if (std::string why = missing_device(device); !why.empty()) return why;
  if (type == dtype::float16) return "the GPU statistics take no float16";
  return "";
}

std::string cuda_unsupported_reason_for_knn(int bytes, int device) {
  if (std::string why = missing_device(device); !why.empty()) return why;
  if (bytes > mc::match_max_bytes)
    return "the GPU matcher takes descriptors of up to " + std::to_string(mc::match_max_bytes) + " bytes";
  return "";
}

namespace {
/// Runs body(workspace) on exec's device, the report saying so.
template <class F>
void on_gpu_of(const execution& exec, const char* what, report& r, F&& body) {
  on_device(exec.device, what, [&] {
    r.used = backend::cuda;
    r.device = exec.device;
    r.device_name = device_name(exec.device);
    mc::workspace ws(stream_of(exec));
    body(ws);
  });
}
}  // namespace

namespace {
/// A reduction on the GPU: whole(T{}) for the whole array, shaped(T{}) for the other shapes.
template <class Whole, class Shaped>
void reduce_on_gpu(const reduce_job& job, const execution& exec, report& r, Whole&& whole, Shaped&& shaped) {
  on_gpu_of(exec, "reduce", r, [&](mc::workspace& ws) {
    visit(job.input.type, [&](auto element) {
      using T = decltype(element);
      if constexpr (std::is_same_v<T, float16_bits>) throw unsupported_error("cuda", "float16 runs on the CPU backend only");
      else if (job.shape == shape_kind::whole) whole(element, ws);
      else shaped(element, ws);
    });
  });
}
}  // namespace

void cuda_reduce(const reduce_job& job, const output_view& out, const execution& exec, report& r) {
  if (job.input.where == memory::cuda && out.where == memory::cuda) {
    r.bytes_read = job.input.count * std::int64_t(size_of(job.input.type));
    return reduce_on_gpu(
        job, exec, r,
        [&](auto element, mc::workspace& ws) { whole_reduce_queued<decltype(element)>(job, out, ws.stream()); },
        [&](auto element, mc::workspace& ws) { shaped_reduce_queued<decltype(element)>(job, out, ws.stream()); });
  }
  reduce_on_gpu(
      job, exec, r,
      [&](auto element, mc::workspace& ws) { whole_reduce_on_device<decltype(element)>(job, out, ws, r); },
      [&](auto element, mc::workspace& ws) { shaped_reduce<decltype(element)>(job, out, ws, r); });
}

void cuda_reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec, report& r) {
  reduce_on_gpu(
      job, exec, r,
      [&](auto element, mc::workspace& ws) { whole_reduce<decltype(element)>(job, in, out, ws, r, exec); },
      [&](auto element, mc::workspace& ws) { shaped_reduce<decltype(element)>(job, in, out, ws, r, exec); });
}

namespace {
/// The statistics of an array from its pieces' (merged in order, Chan et al.; one piece: exactly as
/// the device computed it).
template <class T, class Parts>
multireduce::statistics<T> merged(const Parts& parts) {
  if (parts.size() == 1) return parts[0].result;
  statistics_accumulator<T> acc;
  for (const auto& p : parts)
    acc = statistics_accumulator<T>::merge(acc, statistics_accumulator<T>::of_result(p.result, p.first));
  return acc.result();
}
template <class T>
struct statistics_piece {
  multireduce::statistics<T> result;
  std::int64_t first;
};
}  // namespace

void cuda_statistics(const array_view& in, any_statistics& out, const execution& exec, report& r) {
  on_gpu_of(exec, "statistics", r, [&](mc::workspace& ws) {
    visit(in.type, [&](auto element) {
      using T = decltype(element);
      if constexpr (std::is_same_v<T, float16_bits>) {
        throw unsupported_error("cuda", "the GPU statistics take no float16");
      } else {
        mc::event_timer timer(ws.stream());
        timer.start();
        out = in.count == 0 ? statistics_accumulator<T>{}.result() : ws.statistics(static_cast<const T*>(in.data), in.count);
        r.seconds += timer.stop();
        r.bytes_read += in.count * std::int64_t(sizeof(T));
      }
    });
  });
}

void cuda_statistics(array_source& in, any_statistics& out, const execution& exec, report& r) {
  on_gpu_of(exec, "statistics", r, [&](mc::workspace& ws) {
    visit(in.type(), [&](auto element) {
      using T = decltype(element);
      if constexpr (std::is_same_v<T, float16_bits>) {
        throw unsupported_error("cuda", "the GPU statistics take no float16");
      } else {
        const auto parts = fold_pieces<T>(in, ws, r, exec, [&](const T* d, std::int64_t count, std::int64_t first) {
          return statistics_piece<T>{ws.statistics(d, count), first};
        });
        out = parts.empty() ? statistics_accumulator<T>{}.result() : merged<T>(parts);
      }
    });
  });
}

void cuda_statistics(const array_view& in, const output_view& out, const execution& exec, report& r) {
  on_gpu_of(exec, "statistics", r, [&](mc::workspace& ws) {
    const cudaStream_t stream = ws.stream();
    visit(in.type, [&](auto element) {
      using T = decltype(element);
      if constexpr (std::is_same_v<T, float16_bits>) {
        throw unsupported_error("cuda", "the GPU statistics take no float16");
      } else {
        auto* d = static_cast<multireduce::statistics<T>*>(out.data);
        if (in.count == 0) {  // pageable host memory: staged before the call returns
          const multireduce::statistics<T> empty = statistics_accumulator<T>{}.result();
          mc::check(cudaMemcpyAsync(d, &empty, sizeof empty, cudaMemcpyHostToDevice, stream), "writing the result");
          return;
        }
        const T* x = static_cast<const T*>(in.data);
        const std::shared_ptr<stream_state> state = state_of(stream);
        const std::lock_guard<std::mutex> lock(state->busy);
        state->ws.statistics_async(x, in.count, d);
        r.bytes_read = in.count * std::int64_t(sizeof(T));
      }
    });
  });
}

void cuda_knn(const knn_device_job& job, const execution& exec, report& r) {
  on_gpu_of(exec, "matching", r, [&](mc::workspace& ws) {
    const cudaStream_t stream = ws.stream();
    run_queued("matching", stream, [&](void* t, std::size_t& b) {
      return mc::knn_hamming(t, b, job.query, job.queries, job.train, job.trains, job.bytes, job.k, job.idx, job.dist,
                             mc::match_path::automatic, stream);
    });
    r.bytes_read = (job.queries + job.trains) * job.bytes;
    r.bytes_written = 2 * job.queries * job.k * 4;
  });
}

void write_bytes(const output_view& out, const void* from, std::size_t bytes, const execution& exec) {
  if (out.where == memory::host) {
    std::memcpy(out.data, from, bytes);
    return;
  }
  on_device(exec.device, "writing the result", [&] {
    mc::check(cudaMemcpyAsync(out.data, from, bytes, cudaMemcpyHostToDevice, stream_of(exec)), "writing the result");
    mc::check(cudaStreamSynchronize(stream_of(exec)), "writing the result");
  });
}

void cuda_knn(const knn_job& job, knn_result& out, const execution& exec, report& r) {
  on_gpu_of(exec, "matching", r, [&](mc::workspace& ws) {
    const std::int64_t nq = job.queries, nt = job.trains;
    const int bytes = job.bytes, k = job.k;
    std::size_t free_bytes = 0, total = 0;
    mc::check(cudaMemGetInfo(&free_bytes, &total), "querying free memory");
    // Everything on the GPU at once: both sets, the outputs and the partial lists.
    std::size_t temp = 0, reverse_temp = 0;
    mc::check(mc::knn_hamming(nullptr, temp, nullptr, nq, nullptr, nt, bytes, k, nullptr, nullptr), "planning the search");
    if (job.reverse)
      mc::check(mc::knn_hamming(nullptr, reverse_temp, nullptr, nt, nullptr, nq, bytes, 1, nullptr, nullptr),
                "planning the reverse search");
    const double whole =
        double(nq + nt) * bytes + 8.0 * double(nq) * k + 8.0 * double(nt) + double(std::max(temp, reverse_temp));
    const bool streamed = job.train_chunk > 0 || whole > 0.8 * double(free_bytes);
    mc::device_buffer<std::uint8_t> dq{std::size_t(nq) * bytes};
    mc::device_buffer<std::int32_t> idx{std::size_t(nq) * k}, dist{std::size_t(nq) * k};
    mc::check(cudaMemcpy(dq.data(), job.query, dq.bytes(), cudaMemcpyHostToDevice), "uploading the queries");
    mc::event_timer timer(ws.stream());
    if (!streamed) {
      mc::device_buffer<std::uint8_t> dt{std::size_t(nt) * bytes};
      mc::check(cudaMemcpy(dt.data(), job.train, dt.bytes(), cudaMemcpyHostToDevice), "uploading the training set");
      timer.start();  // the searches alone: the copies are not the matcher's time
      mc::knn_hamming_async(ws, dq.data(), nq, dt.data(), nt, bytes, k, idx.data(), dist.data());
      if (job.reverse) {
        mc::device_buffer<std::int32_t> nearest{std::size_t(nt)}, nearest_dist{std::size_t(nt)};
        mc::knn_hamming_async(ws, dt.data(), nt, dq.data(), nq, bytes, 1, nearest.data(), nearest_dist.data());
        out.reverse_nearest = nearest.download(std::size_t(nt));
      }
      r.seconds = timer.stop();
      out.device_bytes = (nq + nt) * bytes + 2 * nq * k * 4 + (job.reverse ? 2 * nt * 4 : 0) +
                         std::int64_t(std::max(temp, reverse_temp));
    } else {
      // Only the queries and the outputs stay on the GPU; the training rows go through it a chunk
      // at a time, and the cross-check's reverse search takes them as queries, a chunk at a time,
      // against the queries on the GPU.
      std::int64_t chunk = job.train_chunk > 0 ? job.train_chunk : mc::streamed_chunk_rows(bytes);
      chunk = std::min<std::int64_t>(chunk, std::max<std::int64_t>(nt, 1));
      timer.start();
      mc::knn_hamming_streamed(ws, dq.data(), nq, job.train, nt, bytes, k, idx.data(), dist.data(), chunk);
      if (job.reverse) {
        out.reverse_nearest.resize(std::size_t(nt));
        const std::int64_t rows_max = std::min(nt, chunk);
        mc::device_buffer<std::uint8_t> rows{std::size_t(rows_max) * bytes};
        mc::device_buffer<std::int32_t> nearest{std::size_t(rows_max)}, nearest_dist{std::size_t(rows_max)};
        for (std::int64_t first = 0; first < nt; first += chunk) {
          const std::int64_t count = std::min(chunk, nt - first);
          mc::check(cudaMemcpy(rows.data(), job.train + first * bytes, std::size_t(count) * bytes, cudaMemcpyHostToDevice),
                    "uploading training rows");
          mc::knn_hamming_async(ws, rows.data(), count, dq.data(), nq, bytes, 1, nearest.data(), nearest_dist.data());
          const auto part = nearest.download(std::size_t(count));
          std::copy(part.begin(), part.end(), out.reverse_nearest.begin() + first);
        }
        out.device_bytes += 3 * rows_max * bytes;
      }
      r.seconds = timer.stop();
      out.streamed_chunk = chunk;
      out.device_bytes += nq * bytes + 2 * nq * k * 4 + 2 * chunk * bytes;
    }
    out.idx = idx.download(std::size_t(nq) * k);
    out.dist = dist.download(std::size_t(nq) * k);
    r.bytes_read = (nq + nt) * bytes;
    r.bytes_written = 2 * nq * k * 4;
  });
}

}  // namespace multireduce::runtime::backends
