// runtime/runtime.cpp -- job checks, the backend choice, and the CPU's timing (runtime.hpp).
#include "runtime.hpp"

#include <chrono>
#include <string>

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

void require_host(const array_view& a, const char* what) {
  if (a.where != memory::host)
    throw unsupported_error("cpu", std::string(what) + " is in GPU memory; copy it to the host first");
}

}  // namespace

std::optional<backend> parse_backend(std::string_view name) {
  for (backend b : {backend::automatic, backend::cpu, backend::cuda})
    if (to_string(b) == name) return b;
  return std::nullopt;
}

std::int64_t output_count(const reduce_job& job) {
  switch (job.shape) {
    case shape_kind::whole: return 1;
    case shape_kind::fixed_segments:
    case shape_kind::offsets: return job.segments;
    case shape_kind::window: return job.input.count >= job.length ? job.input.count - job.length + 1 : 0;
  }
  return 0;
}

dtype output_dtype(const reduce_job& job) { return result_dtype(job.op, job.input.type); }

void validate(const reduce_job& job) {
  const std::int64_t n = job.input.count;
  if (n < 0) throw std::invalid_argument("the input has a negative element count (" + text(n) + ")");
  if (n > 0 && job.input.data == nullptr) throw std::invalid_argument("the input's data pointer is null");
  if (info(job.op).integers_only && is_floating(job.input.type))
    throw dtype_error(std::string(name_of(job.op)) + " needs an integer dtype, not " +
                      std::string(name_of(job.input.type)));
  switch (job.shape) {
    case shape_kind::whole:
      break;
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
      if (o[0] < 0) throw std::invalid_argument("offsets[0] = " + text(o[0]) + " is negative");
      for (std::int64_t s = 1; s <= job.segments; ++s)
        if (o[s] < o[s - 1])
          throw std::invalid_argument("offsets must be non-decreasing, but offsets[" + text(s - 1) + "] = " +
                                      text(o[s - 1]) + " > offsets[" + text(s) + "] = " + text(o[s]));
      if (o[job.segments] > n)
        throw std::invalid_argument("offsets[" + text(job.segments) + "] = " + text(o[job.segments]) +
                                    " is past the end of the input (" + text(n) + " elements)");
      break;
    }
  }
}

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
  report r;
  const bool cpu_only = exec.requested == backend::cpu;
  if (choose(exec, cpu_only ? "" : backends::cuda_unsupported_reason(job, exec.device), r) == backend::cuda) {
    backends::cuda_reduce(job, out, exec, r);
    return r;
  }
  require_host(job.input, "the input");
  if (out.where != memory::host) throw unsupported_error("cpu", "the output is in GPU memory");
  timed_on_cpu(r, [&] { backends::cpu_reduce(job, out); });
  r.bytes = job.input.count * std::int64_t(size_of(job.input.type)) + out.count * std::int64_t(size_of(out.type)) +
            (job.shape == shape_kind::offsets ? (job.segments + 1) * 8 : 0);
  return r;
}

report statistics(const array_view& in, any_statistics& out, const execution& exec) {
  if (in.count < 0) throw std::invalid_argument("the input has a negative element count (" + text(in.count) + ")");
  report r;
  const bool cpu_only = exec.requested == backend::cpu;
  if (choose(exec, cpu_only ? "" : backends::cuda_unsupported_reason_for_statistics(in.type, exec.device), r) ==
      backend::cuda) {
    backends::cuda_statistics(in, out, exec, r);
    return r;
  }
  require_host(in, "the input");
  timed_on_cpu(r, [&] { out = backends::cpu_statistics(in); });
  r.bytes = in.count * std::int64_t(size_of(in.type));
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
  timed_on_cpu(r, [&] { backends::cpu_knn(job, out); });
  r.bytes = (job.queries + job.trains) * job.bytes;
  return r;
}

}  // namespace multireduce::runtime
