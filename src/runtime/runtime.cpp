// runtime/runtime.cpp -- job checks, the backend choice, sources and sinks of host memory, and the
// CPU's timing (runtime.hpp).
#include "runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>

#include <multireduce/match/match.hpp>

#include "backends.hpp"

namespace multireduce::runtime {

namespace {

std::string text(std::int64_t v) { return std::to_string(v); }

/// Picks the backend: the GPU when asked (or, automatically, when it supports the job), else the
/// CPU. `reason` is why the GPU cannot run the job ("" if it can).
backend choose(const execution& exec, const std::string& reason, report& r) {
  if (exec.requested == backend::cpu) return backend::cpu;
  if (!reason.empty()) {
    if (exec.requested == backend::cuda) throw unsupported_error("cuda", reason);
    r.not_cuda = reason;
    return backend::cpu;
  }
  return backend::cuda;
}

/// Runs `cpu` (a CPU job) and records its wall time in the report.
template <class F>
void timed_on_cpu(report& r, F&& cpu) {
  const auto start = std::chrono::steady_clock::now();
  cpu();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.used = backend::cpu;
  r.cpu_threads = backends::cpu_threads();
}

/// a * b, or nullopt past int64.
std::optional<std::int64_t> product(std::int64_t a, std::int64_t b) {
  std::int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p)) return std::nullopt;
  return p;
}

/// The outputs of a job in host memory, written in order; counts them (a job must write exactly
/// its outputs) and the bytes.
class memory_sink final : public output_sink {
 public:
  explicit memory_sink(const output_view& out) : out_(out) {}
  void write(const void* values, std::int64_t n) override {
    if (n < 0 || n > out_.count - written_) throw std::logic_error("multireduce runtime: a job wrote past its outputs");
    const std::size_t size = size_of(out_.type);
    if (n > 0) std::memcpy(static_cast<std::byte*>(out_.data) + std::size_t(written_) * size, values, std::size_t(n) * size);
    written_ += n;
  }
  std::int64_t written() const { return written_; }

 private:
  output_view out_;
  std::int64_t written_ = 0;
};

/// Passes outputs on to the caller's sink, counting them.
class counting_sink final : public output_sink {
 public:
  explicit counting_sink(output_sink& to) : to_(to) {}
  void write(const void* values, std::int64_t n) override {
    to_.write(values, n);
    written += n;
  }
  std::int64_t written = 0;

 private:
  output_sink& to_;
};

/// Arrays in GPU memory: only the GPU runs the job; throws unsupported_error when it cannot
/// (`reason`) or the CPU was asked for.
void require_gpu_for_device_memory(const execution& exec, const std::string& reason) {
  if (exec.requested != backend::cpu && reason.empty()) return;
  throw unsupported_error(exec.requested == backend::cpu ? "cpu" : "cuda",
                          (reason.empty() ? std::string() : reason + "; ") +
                              "the arrays are in GPU memory, which the CPU does not read");
}

/// The shape checks of validate(), without the data pointer (a source has none).
void validate_shape(const reduce_job& job);

/// The job as the backends run it: an axis with nothing after it is fixed-length segments.
reduce_job normalized(const reduce_job& job) {
  reduce_job j = job;
  if (j.shape == shape_kind::axis && j.inner == 1) j.shape = shape_kind::fixed_segments;
  return j;
}

}  // namespace

memory_source::memory_source(const array_view& a)
    : array_source(a.type, a.count), data_(static_cast<const std::byte*>(a.data)) {
  if (a.where != memory::host) throw unsupported_error("cpu", "the array is in GPU memory; copy it to the host first");
  if (a.count < 0) throw std::invalid_argument("the array has a negative element count (" + text(a.count) + ")");
  if (a.count > 0 && a.data == nullptr) throw std::invalid_argument("the array's data pointer is null");
}

std::int64_t memory_source::piece_elements() const { return std::max<std::int64_t>(count(), 1); }

const void* memory_source::read(std::int64_t first, std::int64_t n) {
  if (first < 0 || n < 0 || first > count() || n > count() - first)
    throw std::logic_error("multireduce runtime: a job read past its input");
  return data_ + std::size_t(first) * size_of(type());
}

reduce_job axis_job(const array_view& input, op_kind op, std::span<const std::int64_t> shape, std::int64_t axis) {
  const auto ndim = static_cast<std::int64_t>(shape.size());
  if (ndim == 0) throw std::invalid_argument("a 0-d array has no axis");
  if (axis < -ndim || axis >= ndim)
    throw std::invalid_argument("axis " + text(axis) + " is out of bounds for an array of " + text(ndim) +
                                " dimension" + (ndim == 1 ? "" : "s") + " (axes " + text(-ndim) + " to " +
                                text(ndim - 1) + ")");
  const std::int64_t a = axis < 0 ? axis + ndim : axis;
  std::int64_t outer = 1, inner = 1;
  std::optional<std::int64_t> all = 1;
  for (std::int64_t d = 0; d < ndim; ++d) {
    const std::int64_t extent = shape[std::size_t(d)];
    if (extent < 0) throw std::invalid_argument("negative dimension " + text(extent) + " in the shape");
    if (all) all = product(*all, extent);
    if (d == a) continue;
    const auto grown = product(d < a ? outer : inner, extent);
    if (!grown) throw std::invalid_argument("the result would have more than 2^63 elements");
    (d < a ? outer : inner) = *grown;
  }
  if (!all || *all != input.count)
    throw std::invalid_argument("the shape does not hold the array's " + text(input.count) + " elements");
  reduce_job job;
  job.input = input;
  job.op = op;
  job.shape = shape_kind::axis;
  job.segments = outer;
  job.length = shape[std::size_t(a)];
  job.inner = inner;
  return job;
}

std::optional<backend> parse_backend(std::string_view name) {
  for (backend b : {backend::automatic, backend::cpu, backend::cuda})
    if (to_string(b) == name) return b;
  return std::nullopt;
}

std::int64_t output_count(const reduce_job& job) {
  switch (job.shape) {
    case shape_kind::whole: return 1;
    case shape_kind::axis: return product(job.segments, job.inner).value_or(-1);
    case shape_kind::fixed_segments:
    case shape_kind::offsets: return job.segments;
    case shape_kind::window: return job.input.count >= job.length ? job.input.count - job.length + 1 : 0;
  }
  return 0;
}

dtype output_dtype(const reduce_job& job) { return result_dtype(job.op, job.input.type); }

void validate(const reduce_job& job) {
  if (job.input.count > 0 && job.input.data == nullptr) throw std::invalid_argument("the input's data pointer is null");
  if (job.shape == shape_kind::offsets && job.offsets_where == memory::cuda && job.input.where != memory::cuda)
    throw std::invalid_argument("offsets in GPU memory need the input in GPU memory too");
  validate_shape(job);
}

namespace {
void validate_shape(const reduce_job& job) {
  const std::int64_t n = job.input.count;
  if (n < 0) throw std::invalid_argument("the input has a negative element count (" + text(n) + ")");
  if (info(job.op).integers_only && is_floating(job.input.type))
    throw dtype_error(std::string(name_of(job.op)) + " needs an integer dtype, not " +
                      std::string(name_of(job.input.type)));
  switch (job.shape) {
    case shape_kind::whole:
      break;
    case shape_kind::axis: {
      if (job.segments < 0 || job.length < 0 || job.inner < 0)
        throw std::invalid_argument("the axis' extents must not be negative");
      const auto outputs = product(job.segments, job.inner);
      const auto elements = outputs ? product(*outputs, job.length) : std::nullopt;
      if (!outputs) throw std::invalid_argument("the result would have more than 2^63 elements");
      if (!elements || *elements != n)
        throw std::invalid_argument(text(job.segments) + " x " + text(job.length) + " x " + text(job.inner) +
                                    " is not the " + text(n) + " elements of the input");
      break;
    }
    case shape_kind::fixed_segments:
      if (job.length < 0 || job.segments < 0)
        throw std::invalid_argument("segment length and count must not be negative");
      if (job.segments * job.length != n && !(job.length == 0 && n == 0))
        throw std::invalid_argument(text(job.segments) + " segments of length " + text(job.length) + " are not the " +
                                    text(n) + " elements of the input");
      break;
    case shape_kind::window:
      if (job.length < 1) throw std::invalid_argument("the window must be at least 1 element, got " + text(job.length));
      break;
    case shape_kind::offsets: {
      if (job.segments < 0) throw std::invalid_argument("the segment count must not be negative");
      const std::int64_t* o = job.offsets;
      if (o == nullptr) throw std::invalid_argument("offsets: none given (S + 1 offsets for S segments)");
      if (job.offsets_where == memory::cuda) break;  // checked on the GPU (cuda_backend.cu)
      for (std::int64_t s = 0; s <= job.segments; ++s)
        if ((s == 0 ? o[0] < 0 : o[s] < o[s - 1]) || (s == job.segments && o[s] > n))
          backends::throw_bad_offset(s, s > 0 ? o[s - 1] : 0, o[s], n);
      break;
    }
  }
}

}  // namespace

int cuda_device_count() { return backends::cuda_device_count(); }
std::string cuda_unsupported_reason(const reduce_job& job, int device) {
  return backends::cuda_unsupported_reason(job, device);
}
std::string cuda_unsupported_reason_for_statistics(dtype type, int device) {
  return backends::cuda_unsupported_reason_for_statistics(type, device);
}
std::string cuda_unsupported_reason_for_knn(int bytes, int device) {
  return backends::cuda_unsupported_reason_for_knn(bytes, device);
}

report reduce(const reduce_job& job, const output_view& out, const execution& exec) {
  validate(job);
  if (out.type != output_dtype(job) || out.count != output_count(job) || (out.count > 0 && out.data == nullptr))
    throw std::invalid_argument("the output must hold " + text(output_count(job)) + " elements of " +
                                std::string(name_of(output_dtype(job))));
  if (job.input.where == memory::host && out.where == memory::host) {
    memory_source in(job.input);
    memory_sink sink(out);
    return reduce(job, in, sink, exec);
  }
  const reduce_job j = normalized(job);
  require_gpu_for_device_memory(exec, backends::cuda_unsupported_reason(j, exec.device));
  report r;
  backends::cuda_reduce(j, out, exec, r);
  r.bytes_written = out.count * std::int64_t(size_of(out.type));
  return r;
}

report reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec) {
  reduce_job j = normalized(job);
  j.input = array_view{in.type(), nullptr, in.count(), memory::host, 0};
  if (job.input.type != in.type() || job.input.count != in.count())
    throw std::invalid_argument("the job's input is " + text(job.input.count) + " elements of " +
                                std::string(name_of(job.input.type)) + ", the source's " + text(in.count()) + " of " +
                                std::string(name_of(in.type())));
  validate_shape(j);
  report r;
  counting_sink counted(out);
  const bool cpu_only = exec.requested == backend::cpu;
  if (choose(exec, cpu_only ? "" : backends::cuda_unsupported_reason(j, exec.device), r) == backend::cuda) {
    backends::cuda_reduce(j, in, counted, exec, r);
  } else {
    timed_on_cpu(r, [&] { backends::cpu_reduce(j, in, counted, exec); });
    r.bytes_read = in.count() * std::int64_t(size_of(in.type())) +
                   (j.shape == shape_kind::offsets ? (j.segments + 1) * 8 : 0);
  }
  if (counted.written != output_count(j))
    throw std::logic_error("multireduce runtime: a job wrote " + text(counted.written) + " of its " +
                           text(output_count(j)) + " outputs");
  r.bytes_written = counted.written * std::int64_t(size_of(output_dtype(j)));
  return r;
}

report statistics(const array_view& in, any_statistics& out, const execution& exec) {
  if (in.count < 0) throw std::invalid_argument("the input has a negative element count (" + text(in.count) + ")");
  if (in.where == memory::host) {
    memory_source source(in);
    return statistics(source, out, exec);
  }
  require_gpu_for_device_memory(exec, backends::cuda_unsupported_reason_for_statistics(in.type, exec.device));
  report r;
  backends::cuda_statistics(in, out, exec, r);
  return r;
}

report statistics(array_source& in, any_statistics& out, const execution& exec) {
  report r;
  const bool cpu_only = exec.requested == backend::cpu;
  if (choose(exec, cpu_only ? "" : backends::cuda_unsupported_reason_for_statistics(in.type(), exec.device), r) ==
      backend::cuda) {
    backends::cuda_statistics(in, out, exec, r);
    return r;
  }
  timed_on_cpu(r, [&] { out = backends::cpu_statistics(in, exec); });
  r.bytes_read = in.count() * std::int64_t(size_of(in.type()));
  return r;
}

std::size_t statistics_bytes(dtype type) {
  return visit(type, [](auto element) -> std::size_t {
    using T = decltype(element);
    if constexpr (std::is_same_v<T, float16_bits>) return sizeof(multireduce::statistics<float>);
    else return sizeof(multireduce::statistics<T>);
  });
}

report statistics(const array_view& in, const output_view& out, const execution& exec) {
  const auto bytes = static_cast<std::int64_t>(statistics_bytes(in.type));
  if (out.type != dtype::uint8 || out.count != bytes || out.data == nullptr)
    throw std::invalid_argument("the statistics of " + std::string(name_of(in.type)) + " need an output of " +
                                text(bytes) + " bytes (uint8)");
  if (in.where == memory::cuda && out.where == memory::cuda) {
    if (in.count < 0) throw std::invalid_argument("the input has a negative element count (" + text(in.count) + ")");
    require_gpu_for_device_memory(exec, backends::cuda_unsupported_reason_for_statistics(in.type, exec.device));
    report r;
    backends::cuda_statistics(in, out, exec, r);
    return r;
  }
  any_statistics result;
  report r = statistics(in, result, exec);
  std::visit([&](const auto& s) { backends::write_bytes(out, &s, sizeof(s), exec); }, result);
  return r;
}

report knn(const knn_device_job& job, const execution& exec) {
  check_match_arguments(job.queries, job.trains, job.bytes, job.k);
  if ((job.queries > 0 && (job.query == nullptr || job.idx == nullptr || job.dist == nullptr)) ||
      (job.trains > 0 && job.train == nullptr))
    throw std::invalid_argument("a null pointer among the search's arrays");
  require_gpu_for_device_memory(exec, backends::cuda_unsupported_reason_for_knn(job.bytes, exec.device));
  report r;
  backends::cuda_knn(job, exec, r);
  return r;
}

report knn(const knn_job& job, knn_result& out, const execution& exec) {
  check_match_arguments(job.queries, job.trains, job.bytes, job.k);
  report r;
  const bool cpu_only = exec.requested == backend::cpu;
  if (choose(exec, cpu_only ? "" : backends::cuda_unsupported_reason_for_knn(job.bytes, exec.device), r) ==
      backend::cuda) {
    backends::cuda_knn(job, out, exec, r);
    return r;
  }
  timed_on_cpu(r, [&] { backends::cpu_knn(job, out, exec); });
  r.bytes_read = (job.queries + job.trains) * job.bytes;
  r.bytes_written = 2 * job.queries * job.k * 4;
  return r;
}

}  // namespace multireduce::runtime

namespace multireduce::runtime::backends {

void throw_bad_offset(std::int64_t s, std::int64_t previous, std::int64_t value, std::int64_t n) {
  const std::string at = "offsets[" + std::to_string(s) + "] = " + std::to_string(value);
  if (s == 0 && value < 0) throw std::invalid_argument(at + " is negative");
  if (s > 0 && value < previous)
    throw std::invalid_argument("offsets must be non-decreasing, but offsets[" + std::to_string(s - 1) + "] = " +
                                std::to_string(previous) + " > " + at);
  throw std::invalid_argument(at + " is past the end of the input (" + std::to_string(n) + " elements)");
}

}  // namespace multireduce::runtime::backends
