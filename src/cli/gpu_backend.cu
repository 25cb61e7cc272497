// gpu_backend.cu -- the CLI's GPU backend: host arrays in, multireduce::cuda, host arrays out.
//
// What runs here (anything else is CPU-only, and gpu_unsupported_reason says so):
//  - whole-array reduce and stats: every dtype but float16, every operator that fits the dtype;
//    inputs larger than the free GPU memory stream through the GPU in chunks;
//  - segmented (fixed length or offsets) and window reduce: float32, float64, int32, int64 with
//    sum, min or max.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include <multireduce/cuda.cuh>

#include "gpu_backend.hpp"

namespace multireduce::cli {
namespace {

namespace mc = multireduce::cuda;

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("GPU backend: ") + what + ": " + cudaGetErrorString(e));
}

template <class T>
struct device_array {
  T* p = nullptr;
  explicit device_array(std::int64_t count) {
    const std::size_t bytes = sizeof(T) * static_cast<std::size_t>(count > 0 ? count : 1);
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error("GPU backend: out of GPU memory allocating " + std::to_string(bytes) + " bytes");
    }
  }
  ~device_array() { cudaFree(p); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
};

template <class T>
constexpr npy::dtype dtype_for() {
  return npy::dtype_of<T>();
}

/// NumPy's accumulator for sum/prod: int64/uint64 for integers, the float type for floats.
template <class T>
using sum_acc = std::conditional_t<std::is_integral_v<T>, std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>, T>;

struct timer {
  cudaEvent_t start{}, stop{};
  timer() {
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  void begin() { cudaEventRecord(start); }
  double end() {
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    return ms * 1e-3;
  }
};

std::string missing_device(int device, int count) {
  return "device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " device(s))";
}

void select_device(int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) throw std::runtime_error("GPU backend: no CUDA device");
  if (device < 0 || device >= count) throw std::runtime_error("GPU backend: " + missing_device(device, count));
  cuda_check(cudaSetDevice(device), "selecting the device");
}

std::string device_name(int device) {
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, device);
  return p.name;
}

/// Elements per chunk when streaming n elements of `bytes_per_element` through the GPU.
std::int64_t chunk_elements(std::int64_t n, std::size_t bytes_per_element) {
  std::size_t free_bytes = 0, total = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total), "querying free memory");
  const auto fit = static_cast<std::int64_t>(free_bytes / 2 / bytes_per_element);
  return n < fit ? n : (fit > 1 ? fit : 1);
}

template <class R>
reduce_output single(npy::dtype type, R value) {
  reduce_output out;
  out.type = type;
  out.count = 1;
  out.data.resize(sizeof(R));
  std::memcpy(out.data.data(), &value, sizeof(R));
  return out;
}

/// Whole-array reduce, streamed in chunks when the input does not fit: results combine on the host
/// in chunk order.
template <class T, class Acc, class Op>
Acc whole_reduce(const T* host, std::int64_t n, Op op, Acc init, gpu_timing* timing) {
  const std::int64_t chunk = chunk_elements(n > 0 ? n : 1, sizeof(T));
  device_array<T> d(chunk);
  mc::workspace ws;
  timer t;
  Acc acc = init;
  for (std::int64_t first = 0; first < n; first += chunk) {  // chunk order: the fold stays left to right
    const std::int64_t count = n - first < chunk ? n - first : chunk;
    timer copy;
    copy.begin();
    cuda_check(cudaMemcpy(d.p, host + first, sizeof(T) * std::size_t(count), cudaMemcpyHostToDevice), "uploading the input");
    if (timing) timing->transfer_seconds += copy.end();
    t.begin();
    acc = op(acc, ws.reduce(d.p, count, op, Op::template identity<Acc>()));
    if (timing) timing->seconds += t.end();
  }
  if (timing) timing->bytes += n * std::int64_t(sizeof(T));
  return acc;
}

template <class T, class Op>
std::int64_t whole_arg(const T* host, std::int64_t n, gpu_timing* timing) {
  const std::int64_t chunk = chunk_elements(n > 0 ? n : 1, sizeof(T));
  device_array<T> d(chunk);
  mc::workspace ws;
  timer t;
  key_value<T> best = Op::template identity<key_value<T>>();
  best.index = -1;
  for (std::int64_t first = 0; first < n; first += chunk) {
    const std::int64_t count = n - first < chunk ? n - first : chunk;
    cuda_check(cudaMemcpy(d.p, host + first, sizeof(T) * std::size_t(count), cudaMemcpyHostToDevice), "uploading the input");
    t.begin();
    key_value<T> part = std::is_same_v<Op, multireduce::argmin> ? ws.argmin(d.p, count) : ws.argmax(d.p, count);
    if (timing) timing->seconds += t.end();
    part.index += first;
    if (best.index < 0) best = part;
    else best = Op{}(best, part);
  }
  if (timing) timing->bytes += n * std::int64_t(sizeof(T));
  return best.index;
}

template <class T>
bool segmented_type() {
  return std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
         std::is_same_v<T, std::int64_t>;
}

template <class T, class Acc, class Op>
reduce_output shaped(const reduce_job& job, Op op, Acc init, gpu_timing* timing) {
  const T* host = static_cast<const T*>(job.data);
  device_array<T> d(job.n);
  cuda_check(cudaMemcpy(d.p, host, sizeof(T) * std::size_t(job.n), cudaMemcpyHostToDevice), "uploading the input");
  std::int64_t outputs = job.shape == shape_kind::window ? (job.n - job.length + 1 > 0 ? job.n - job.length + 1 : 0) : job.segments;
  device_array<Acc> out(outputs);
  mc::workspace ws;
  timer t;
  std::int64_t bytes = job.n * std::int64_t(sizeof(T)) + outputs * std::int64_t(sizeof(Acc));
  if (job.shape == shape_kind::offsets) {
    device_array<std::int64_t> off(job.segments + 1);
    cuda_check(cudaMemcpy(off.p, job.offsets, sizeof(std::int64_t) * std::size_t(job.segments + 1), cudaMemcpyHostToDevice),
               "uploading the offsets");
    t.begin();
    ws.segmented_reduce(d.p, job.n, out.p, job.segments, off.p, off.p + 1, op, init);
    if (timing) timing->seconds += t.end();
    bytes += (job.segments + 1) * 8;
  } else if (job.shape == shape_kind::fixed_segments) {
    t.begin();
    ws.fixed_segmented_reduce(d.p, out.p, job.segments, job.length, op, init);
    if (timing) timing->seconds += t.end();
  } else {
    t.begin();
    ws.window_reduce(d.p, job.n, job.length, out.p, op, init);
    if (timing) timing->seconds += t.end();
  }
  cuda_check(cudaGetLastError(), "running the reduction");
  reduce_output r;
  r.type = dtype_for<Acc>();
  r.count = outputs;
  r.data.resize(sizeof(Acc) * std::size_t(outputs));
  cuda_check(cudaMemcpy(r.data.data(), out.p, r.data.size(), cudaMemcpyDeviceToHost), "downloading the result");
  if (timing) timing->bytes += bytes;
  return r;
}

}  // namespace

std::string gpu_unsupported_reason(const reduce_job& job, int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return "no CUDA device is available";
  }
  if (device < 0 || device >= count) return missing_device(device, count);
  if (job.type == npy::dtype::float16) return "float16 runs on the CPU backend only";
  const bool is_float = job.type == npy::dtype::float32 || job.type == npy::dtype::float64;
  const bool bitwise = job.op == op_kind::bit_and || job.op == op_kind::bit_or || job.op == op_kind::bit_xor;
  if (bitwise && is_float) return "bitwise operators need an integer dtype";
  if (job.shape == shape_kind::whole) return "";
  const bool type_ok = job.type == npy::dtype::float32 || job.type == npy::dtype::float64 ||
                       job.type == npy::dtype::int32 || job.type == npy::dtype::int64;
  const bool op_ok = job.op == op_kind::sum || job.op == op_kind::min || job.op == op_kind::max;
  if (!type_ok || !op_ok)
    return "the GPU backend runs segmented and window reductions of float32, float64, int32 and int64 with sum, min "
           "or max; use --backend cpu";
  return "";
}

std::string gpu_unsupported_reason_for_stats(npy::dtype type, int device) {
  reduce_job job;
  job.type = type;
  return gpu_unsupported_reason(job, device);
}

reduce_output gpu_reduce(const reduce_job& job, int device, gpu_timing* timing) {
  if (const std::string why = gpu_unsupported_reason(job, device); !why.empty())
    throw std::runtime_error("GPU backend: " + why);
  select_device(device);
  if (timing) timing->device_name = device_name(device);
  return npy::visit(job.type, [&](auto zero) -> reduce_output {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, npy::float16_bits>) {
      throw std::runtime_error("GPU backend: float16 is CPU-only");
    } else {
    const T* host = static_cast<const T*>(job.data);
    if (job.shape == shape_kind::whole) {
      switch (job.op) {
        case op_kind::sum: return single(dtype_for<sum_acc<T>>(), whole_reduce(host, job.n, multireduce::sum{}, sum_acc<T>(0), timing));
        case op_kind::prod: return single(dtype_for<sum_acc<T>>(), whole_reduce(host, job.n, multireduce::product{}, sum_acc<T>(1), timing));
        case op_kind::min: return single(dtype_for<T>(), whole_reduce(host, job.n, multireduce::minimum{}, minimum::identity<T>(), timing));
        case op_kind::max: return single(dtype_for<T>(), whole_reduce(host, job.n, multireduce::maximum{}, maximum::identity<T>(), timing));
        case op_kind::argmin: return single(npy::dtype::int64, whole_arg<T, multireduce::argmin>(host, job.n, timing));
        case op_kind::argmax: return single(npy::dtype::int64, whole_arg<T, multireduce::argmax>(host, job.n, timing));
        default:
          if constexpr (std::is_integral_v<T>) {
            if (job.op == op_kind::bit_and) return single(dtype_for<T>(), whole_reduce(host, job.n, multireduce::bit_and{}, T(~T(0)), timing));
            if (job.op == op_kind::bit_or) return single(dtype_for<T>(), whole_reduce(host, job.n, multireduce::bit_or{}, T(0), timing));
            return single(dtype_for<T>(), whole_reduce(host, job.n, multireduce::bit_xor{}, T(0), timing));
          }
          throw std::runtime_error("GPU backend: bitwise operators need an integer dtype");
      }
    }
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                  std::is_same_v<T, std::int64_t>) {
      switch (job.op) {
        case op_kind::sum: return shaped<T>(job, multireduce::sum{}, sum_acc<T>(0), timing);
        case op_kind::min: return shaped<T>(job, multireduce::minimum{}, minimum::identity<T>(), timing);
        case op_kind::max: return shaped<T>(job, multireduce::maximum{}, maximum::identity<T>(), timing);
        default: break;
      }
    }
    throw std::runtime_error("GPU backend: this dtype/operator runs on the CPU backend only");
    }
  });
}

template <class T>
statistics<T> gpu_statistics(const T* host, std::int64_t n, int device, gpu_timing* timing) {
  select_device(device);
  if (timing) {
    timing->device_name = device_name(device);
    timing->bytes += n * std::int64_t(sizeof(T));
  }
  const std::int64_t chunk = chunk_elements(n > 0 ? n : 1, sizeof(T));
  device_array<T> d(chunk);
  mc::workspace ws;
  timer t;
  statistics_accumulator<T> acc;
  for (std::int64_t first = 0; first < n; first += chunk) {  // chunks merge in order (Chan et al.)
    const std::int64_t count = n - first < chunk ? n - first : chunk;
    cuda_check(cudaMemcpy(d.p, host + first, sizeof(T) * std::size_t(count), cudaMemcpyHostToDevice), "uploading the input");
    t.begin();
    const statistics<T> s = ws.statistics(d.p, count);
    if (timing) timing->seconds += t.end();
    if (count == n) return s;  // one chunk: exactly as the device computed it
    acc = statistics_accumulator<T>::merge(acc, statistics_accumulator<T>::of_result(s, first));
  }
  return acc.result();
}

#define MULTIREDUCE_INSTANTIATE(T) template statistics<T> gpu_statistics(const T*, std::int64_t, int, gpu_timing*);
MULTIREDUCE_CLI_STATISTICS_TYPES(MULTIREDUCE_INSTANTIATE)
#undef MULTIREDUCE_INSTANTIATE

std::string gpu_match_unsupported_reason(int bytes, int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return "no CUDA device is available";
  }
  if (device < 0 || device >= count) return missing_device(device, count);
  if (bytes > mc::detail::match_max_bytes)
    return "the GPU matcher takes descriptors of up to " + std::to_string(mc::detail::match_max_bytes) + " bytes";
  return "";
}

namespace {

/// The first `count` values of a device array, on the host.
std::vector<std::int32_t> download(const device_array<std::int32_t>& from, std::int64_t count) {
  std::vector<std::int32_t> to(static_cast<std::size_t>(count));
  cuda_check(cudaMemcpy(to.data(), from.p, to.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost), "downloading");
  return to;
}

/// The streamed search (a training set that does not fit, or --train-chunk): only the queries and
/// the outputs stay on the GPU; the training rows go through it train_chunk rows at a time
/// (workspace::knn_hamming_streamed), and the cross-check's reverse search takes them as queries,
/// a chunk at a time, against the queries on the GPU.
knn_output gpu_knn_streamed(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train,
                            std::int64_t trains, int bytes, int k, bool reverse, std::int64_t train_chunk) {
  knn_output r;
  device_array<std::uint8_t> dq(queries * bytes);
  device_array<std::int32_t> idx(queries * k), dist(queries * k);
  cuda_check(cudaMemcpy(dq.p, query, std::size_t(queries) * std::size_t(bytes), cudaMemcpyHostToDevice), "uploading the queries");
  if (train_chunk <= 0) train_chunk = mc::workspace::streamed_chunk_rows(bytes);  // with the queries in place
  train_chunk = std::min<std::int64_t>(train_chunk, std::max<std::int64_t>(trains, 1));
  mc::workspace ws;
  timer t;
  t.begin();
  try {
    ws.knn_hamming_streamed(dq.p, queries, train, trains, bytes, k, idx.p, dist.p, train_chunk);
  } catch (const mc::error& e) {
    throw std::runtime_error(std::string("GPU backend: streaming the training set: ") + e.what());
  }
  if (reverse) {
    r.reverse_nearest.resize(std::size_t(trains));
    device_array<std::uint8_t> chunk(std::min(trains, train_chunk) * bytes);
    device_array<std::int32_t> nearest(std::min(trains, train_chunk)), nearest_dist(std::min(trains, train_chunk));
    for (std::int64_t first = 0; first < trains; first += train_chunk) {
      const std::int64_t rows = std::min(train_chunk, trains - first);
      cuda_check(cudaMemcpy(chunk.p, train + first * bytes, std::size_t(rows) * std::size_t(bytes), cudaMemcpyHostToDevice),
                 "uploading training rows");
      try {
        ws.knn_hamming(chunk.p, rows, dq.p, queries, bytes, 1, nearest.p, nearest_dist.p);
      } catch (const mc::error& e) {
        throw std::runtime_error(std::string("GPU backend: searching back (cross-check): ") + e.what());
      }
      const auto part = download(nearest, rows);
      std::copy(part.begin(), part.end(), r.reverse_nearest.begin() + first);
    }
    r.device_bytes += 3 * std::min(trains, train_chunk) * bytes;
  }
  r.seconds = t.end();
  r.streamed_chunk = train_chunk;
  r.idx = download(idx, queries * k);
  r.dist = download(dist, queries * k);
  r.device_bytes += queries * bytes + 2 * queries * k * 4 + 2 * train_chunk * bytes;
  return r;
}

}  // namespace

knn_output gpu_knn(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train, std::int64_t trains,
                   int bytes, int k, bool reverse, int device, std::int64_t train_chunk) {
  if (const std::string why = gpu_match_unsupported_reason(bytes, device); !why.empty())
    throw std::runtime_error("GPU backend: " + why);
  select_device(device);
  std::size_t free_bytes = 0, total = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total), "querying free memory");
  // Everything on the GPU at once: both sets, the outputs and the partial lists.
  std::size_t temp = 0, reverse_temp = 0;
  cuda_check(mc::knn_hamming(nullptr, temp, nullptr, queries, nullptr, trains, bytes, k, nullptr, nullptr), "planning the search");
  if (reverse)
    cuda_check(mc::knn_hamming(nullptr, reverse_temp, nullptr, trains, nullptr, queries, bytes, 1, nullptr, nullptr),
               "planning the reverse search");
  const double whole = double(queries + trains) * bytes + 8.0 * queries * k + 8.0 * trains + double(std::max(temp, reverse_temp));
  if (train_chunk > 0 || whole > 0.8 * double(free_bytes)) {
    knn_output r = gpu_knn_streamed(query, queries, train, trains, bytes, k, reverse, train_chunk);
    r.device_name = device_name(device);
    return r;
  }
  knn_output r;
  r.device_name = device_name(device);
  device_array<std::uint8_t> dq(queries * bytes), dt(trains * bytes);
  device_array<std::int32_t> idx(queries * k), dist(queries * k);
  device_array<std::int32_t> rev_idx(reverse ? trains : 0), rev_dist(reverse ? trains : 0);
  cuda_check(cudaMemcpy(dq.p, query, std::size_t(queries) * std::size_t(bytes), cudaMemcpyHostToDevice), "uploading the queries");
  cuda_check(cudaMemcpy(dt.p, train, std::size_t(trains) * std::size_t(bytes), cudaMemcpyHostToDevice), "uploading the training set");
  const std::size_t storage_bytes = std::max({temp, reverse_temp, std::size_t(1)});
  device_array<std::byte> storage(static_cast<std::int64_t>(storage_bytes));
  timer t;
  t.begin();
  cuda_check(mc::knn_hamming(storage.p, temp, dq.p, queries, dt.p, trains, bytes, k, idx.p, dist.p), "searching");
  if (reverse)
    cuda_check(mc::knn_hamming(storage.p, reverse_temp, dt.p, trains, dq.p, queries, bytes, 1, rev_idx.p, rev_dist.p),
               "searching back (cross-check)");
  r.seconds = t.end();
  cuda_check(cudaGetLastError(), "running the search");
  r.idx = download(idx, queries * k);
  r.dist = download(dist, queries * k);
  if (reverse) r.reverse_nearest = download(rev_idx, trains);
  r.device_bytes = (queries + trains) * bytes + 2 * queries * k * 4 + (reverse ? 2 * trains * 4 : 0) +
                   std::int64_t(storage_bytes);
  return r;
}

}  // namespace multireduce::cli
