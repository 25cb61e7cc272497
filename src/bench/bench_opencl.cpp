// bench_opencl.cpp -- suite "opencl": the OpenCL backend on an OpenCL device (--device: its ordinal
// among the OpenCL devices, `multireduce --version` lists them). Runs only when named.
//
// 1. The multi-reduction paper's section 7 through OpenCL: the sums of every 32 consecutive
//    elements (int, float, double), each window by its own butterfly or a warp's 32 windows by one
//    multi-reduction, in every form the device takes (local memory: the paper's section 6; PTX or
//    sub-group shuffles), against the local-memory butterfly.
// 2. The backend's device algorithms beside the CUDA backend on the same GPU (a build with CUDA, the
//    OpenCL device an NVIDIA GPU of the same name as CUDA device --device), or beside the CPU
//    backend (PoCL, or no GPU): reduce, statistics, segmented (uniform 0..64) and windows (W = 1000)
//    of 2^28 floats (2^26 on the CPU; --quick 2^24).
// Inputs are multiples of 1/1024 in [0.5, 1.5), so every window and short segment sum is exact in
// float and compared exactly; the long reductions with a relative tolerance. Every result is
// verified before it is timed. OpenCL times by profiling events, CUDA by CUDA events, the CPU by
// wall time; the median of --repetitions runs after --warmup.
#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <multireduce/statistics.hpp>

#include "runtime/opencl/algorithms.hpp"
#include "runtime/opencl/device.hpp"
#include "runtime/runtime.hpp"

#if defined(MULTIREDUCE_BENCH_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace multireduce::bench {
namespace {

namespace ocl = runtime::opencl;
namespace rt = runtime;

/// Element i of every input: a multiple of 1/1024 in [0.5, 1.5), from a cheap integer hash.
double input_value(std::int64_t i) {
  std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return 0.5 + static_cast<double>(h & 1023u) / 1024.0;
}

double median(std::vector<double> t) {
  std::nth_element(t.begin(), t.begin() + std::ptrdiff_t(t.size() / 2), t.end());
  return t[t.size() / 2];
}

/// The median kernel time in ms of `run` (which queues the kernels and collects their events).
double opencl_ms(const options& opts, const std::function<void(ocl::events&)>& run) {
  for (int w = 0; w < opts.warmup; ++w) {
    ocl::events ev;
    run(ev);
    ocl::elapsed_seconds(ev);
  }
  std::vector<double> t;
  for (int r = 0; r < opts.repetitions; ++r) {
    ocl::events ev;
    run(ev);
    t.push_back(ocl::elapsed_seconds(ev) * 1e3);
  }
  return median(t);
}

template <class T>
std::vector<T> download(ocl::device& d, const cl::Buffer& b, std::int64_t n) {
  std::vector<T> host(static_cast<std::size_t>(n));
  if (n > 0) d.queue.enqueueReadBuffer(b, CL_TRUE, 0, host.size() * sizeof(T), host.data());
  return host;
}

template <class T>
cl::Buffer upload(ocl::device& d, const std::vector<T>& host) {
  cl::Buffer b = ocl::allocate(d, host.size() * sizeof(T), "a benchmark input");
  d.queue.enqueueWriteBuffer(b, CL_TRUE, 0, host.size() * sizeof(T), host.data());
  return b;
}

// ---- 1. section 7 --------------------------------------------------------------------------------

template <class T>
bool paper_rows(const options& opts, ocl::device& d, const char* type_name, rt::dtype type, nlohmann::json& rows) {
  const std::int64_t n = opts.quick ? std::int64_t{1} << 22 : std::int64_t{1} << 26, windows = n - 31;
  std::vector<T> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    x[std::size_t(i)] = std::is_integral_v<T> ? T(std::int64_t(input_value(i) * 1024) - 1024) : T(input_value(i));
  const cl::Buffer in = upload(d, x);
  const cl::Buffer out = ocl::allocate(d, std::size_t(windows) * sizeof(T), "the window sums");
  std::vector<T> want(static_cast<std::size_t>(windows));
  for (std::int64_t w = 0; w < windows; ++w) {  // exact in every type: 32 multiples of 1/1024 below 1.5
    T exact = 0;
    for (std::int64_t i = w; i < w + 32; ++i) exact += x[std::size_t(i)];
    want[std::size_t(w)] = exact;
  }
  double baseline = 0;
  bool ok = true;
  std::vector<ocl::exchange_form> forms{ocl::exchange_form::local_memory};
  for (ocl::exchange_form f : d.forms())
    if (f != ocl::exchange_form::local_memory) forms.push_back(f);
  for (const ocl::exchange_form form : forms)
    for (const ocl::paper_kernel kernel : {ocl::paper_kernel::butterfly, ocl::paper_kernel::multi_reduce}) {
      const ocl::lanes l{form, 32};
      const int group = 256;
      auto run = [&](ocl::events& ev) { ocl::paper_window_sums(d, l, kernel, type, in, n, out, group, &ev); };
      d.queue.enqueueFillBuffer(out, T(-7), 0, std::size_t(windows) * sizeof(T));
      {
        ocl::events ev;
        run(ev);
        ocl::elapsed_seconds(ev);
      }
      const std::vector<T> got = download<T>(d, out, windows);
      const char* kernel_name = kernel == ocl::paper_kernel::butterfly ? "butterfly" : "multi-reduce";
      std::int64_t wrong = -1;
      for (std::int64_t w = 0; w < windows && wrong < 0; ++w)
        if (got[std::size_t(w)] != want[std::size_t(w)]) wrong = w;
      if (wrong >= 0) {
        fmt::print(stderr, "bench opencl: {} {} ({}) window {} is {}, not {}\n", type_name, kernel_name,
                   ocl::to_string(form), wrong, double(got[std::size_t(wrong)]), double(want[std::size_t(wrong)]));
        ok = false;
        continue;
      }
      const double ms = opencl_ms(opts, run);
      if (form == ocl::exchange_form::local_memory && kernel == ocl::paper_kernel::butterfly) baseline = ms;
      const double speedup = baseline > 0 ? baseline / ms : 0;
      fmt::print("{:<8} {:<13} {:<9} {:>10.3f} {:>12.2f} {:>9.2f}x\n", type_name, kernel_name, ocl::to_string(form), ms,
                 double(windows) / ms / 1e6, speedup);
      rows.push_back({{"type", type_name}, {"kernel", kernel_name}, {"form", std::string(ocl::to_string(form))},
                      {"elements", n}, {"ms", ms}, {"gwindows_per_s", double(windows) / ms / 1e6},
                      {"speedup_vs_local_butterfly", speedup}});
    }
  return ok;
}

// ---- 2. the backend beside CUDA or the CPU ---------------------------------------------------------

struct job_row {
  std::string job;
  double opencl_ms = 0, baseline_ms = 0;
};

/// The baseline's median time in ms: the CUDA backend on device memory (CUDA events) or the CPU
/// backend on host memory (wall time).
struct baseline {
  std::string name;  ///< "cuda" or "cpu"
#if defined(MULTIREDUCE_BENCH_WITH_CUDA)
  int cuda_device = -1;
  cudaStream_t stream = nullptr;
#endif
  double ms(const options& opts, const std::function<void(const rt::execution&)>& run) const {
    rt::execution exec;
    exec.backend = name;
    std::vector<double> t;
#if defined(MULTIREDUCE_BENCH_WITH_CUDA)
    if (name == "cuda") {
      exec.devices = rt::device_set{{cuda_device}};
      exec.stream = stream;
      cudaEvent_t start, stop;
      cudaEventCreate(&start);
      cudaEventCreate(&stop);
      for (int w = 0; w < opts.warmup; ++w) run(exec);
      for (int r = 0; r < opts.repetitions; ++r) {
        cudaEventRecord(start, stream);
        run(exec);
        cudaEventRecord(stop, stream);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        t.push_back(ms);
      }
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      return median(t);
    }
#endif
    for (int w = 0; w < std::min(opts.warmup, 2); ++w) run(exec);
    for (int r = 0; r < std::max(3, opts.repetitions / 5); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      run(exec);
      t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(t);
  }
};

/// Memory a baseline's job reads: device memory for CUDA, host memory for the CPU.
struct baseline_array {
  std::vector<std::byte> host;
  void* device = nullptr;
  rt::memory where;
  int ordinal = 0;
  baseline_array(const baseline& b, const void* data, std::size_t bytes) {
#if defined(MULTIREDUCE_BENCH_WITH_CUDA)
    if (b.name == "cuda") {
      cudaSetDevice(b.cuda_device);
      if (cudaMalloc(&device, std::max<std::size_t>(bytes, 1)) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
      if (data) cudaMemcpy(device, data, bytes, cudaMemcpyHostToDevice);
      where = rt::memory::of("cuda");
      ordinal = b.cuda_device;
      return;
    }
#else
    (void)b;
#endif
    host.resize(bytes);
    if (data) std::memcpy(host.data(), data, bytes);
  }
  ~baseline_array() {
#if defined(MULTIREDUCE_BENCH_WITH_CUDA)
    if (device) cudaFree(device);
#endif
  }
  baseline_array(const baseline_array&) = delete;
  baseline_array& operator=(const baseline_array&) = delete;
  void* data() { return device ? device : host.data(); }
  template <class T>
  std::vector<T> read(std::size_t count) const {
    std::vector<T> v(count);
#if defined(MULTIREDUCE_BENCH_WITH_CUDA)
    if (device) {
      cudaMemcpy(v.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost);
      return v;
    }
#endif
    std::memcpy(v.data(), host.data(), count * sizeof(T));
    return v;
  }
};

std::string relative_error(double got, double want, double tolerance) {
  const double e = std::fabs(got - want) / std::max(std::fabs(want), 1e-300);
  return e <= tolerance ? "" : fmt::format("{} against {} (relative error {:.3g} > {:.3g})", got, want, e, tolerance);
}

template <class T>
std::string first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return fmt::format("{} outputs against {}", a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return fmt::format("output {} is {}, the baseline's {}", i, double(a[i]), double(b[i]));
  return "";
}

bool backend_rows(const options& opts, ocl::device& d, int ordinal, const baseline& base, nlohmann::json& rows) {
  const bool cpu_device = d.cpu;
  const std::int64_t n = opts.quick ? std::int64_t{1} << 24 : cpu_device ? std::int64_t{1} << 26 : std::int64_t{1} << 28;
  std::vector<float> x(static_cast<std::size_t>(n));
  double exact_sum = 0;
  for (std::int64_t i = 0; i < n; ++i) exact_sum += (x[std::size_t(i)] = float(input_value(i)));
  const cl::Buffer in = upload(d, x);
  baseline_array base_in(base, x.data(), x.size() * sizeof(float));
  const ocl::lanes l = ocl::choose_lanes(d);
  bool ok = true;
  auto report = [&](const std::string& job, double ocl_ms, double base_ms, const std::string& error) {
    if (!error.empty()) {
      fmt::print(stderr, "bench opencl: {} is wrong: {}\n", job, error);
      ok = false;
      return;
    }
    const double gbs = double(n) * 4 / ocl_ms / 1e6;
    fmt::print("{:<26} {:>10.3f} {:>10.1f} {:>10.3f} {:>9.1f}%\n", job, ocl_ms, gbs, base_ms, 100 * base_ms / ocl_ms);
    rows.push_back({{"job", job}, {"elements", n}, {"opencl_ms", ocl_ms}, {"opencl_gb_per_s", gbs},
                    {"baseline", base.name}, {"baseline_ms", base_ms}, {"opencl_speed_of_baseline", base_ms / ocl_ms}});
  };
  const float zero = 0;
  const auto init = std::span<const std::byte>(reinterpret_cast<const std::byte*>(&zero), sizeof zero);

  // reduce: the parts' folds, added on the host in double (a few thousand).
  {
    const std::int64_t parts = ocl::whole_parts(d, n);
    const cl::Buffer partials = ocl::allocate(d, std::size_t(parts) * 4, "the parts");
    auto run = [&](ocl::events& ev) { ocl::reduce_parts(d, l, rt::dtype::float32, rt::op_kind::sum, init, in, n, partials, &ev); };
    ocl::events ev;
    run(ev);
    double got = 0;
    for (float p : download<float>(d, partials, parts)) got += p;
    std::string error = relative_error(got, exact_sum, 1e-5);
    baseline_array out(base, nullptr, 4);
    rt::reduce_job job;
    job.input = rt::array_view{rt::dtype::float32, base_in.data(), n, base_in.where, base_in.ordinal};
    auto base_run = [&](const rt::execution& e) {
      rt::reduce(job, rt::output_view{rt::dtype::float32, out.data(), 1, out.where, out.ordinal}, e);
    };
    const double base_ms = base.ms(opts, base_run);
    if (error.empty()) error = relative_error(out.read<float>(1)[0], exact_sum, 1e-5);
    report("reduce sum", error.empty() ? opencl_ms(opts, run) : 0, base_ms, error);
  }
  // statistics
  {
    const std::int64_t parts = ocl::statistics_parts(d, n);
    const cl::Buffer states = ocl::allocate(d, std::size_t(parts) * ocl::statistics_state_bytes(rt::dtype::float32), "the states");
    auto run = [&](ocl::events& ev) { ocl::statistics(d, rt::dtype::float32, in, n, double(x[0]), states, &ev); };
    ocl::events ev;
    run(ev);
    ocl::elapsed_seconds(ev);
    rt::any_statistics whole;  // the backend's own call: its merge of the states
    rt::execution e;
    e.backend = "opencl";
    e.devices = rt::device_set{{ordinal}};
    rt::statistics(rt::array_view{rt::dtype::float32, x.data(), n}, whole, e);
    const auto& s = std::get<statistics<float>>(whole);
    std::string error = relative_error(s.mean, exact_sum / double(n), 1e-9);
    if (error.empty() && s.count != n) error = fmt::format("count {}", s.count);
    baseline_array out(base, nullptr, rt::statistics_bytes(rt::dtype::float32));
    auto base_run = [&](const rt::execution& e2) {
      rt::array_view a{rt::dtype::float32, base_in.data(), n, base_in.where, base_in.ordinal};
      rt::statistics(a, rt::output_view{rt::dtype::uint8, out.data(), std::int64_t(rt::statistics_bytes(rt::dtype::float32)), out.where, out.ordinal}, e2);
    };
    const double base_ms = base.ms(opts, base_run);
    report("statistics", error.empty() ? opencl_ms(opts, run) : 0, base_ms, error);
  }
  // segmented: uniform lengths 0..64
  {
    std::mt19937_64 g(20261126);
    std::vector<std::int64_t> offsets{0};
    while (offsets.back() < n) offsets.push_back(std::min<std::int64_t>(n, offsets.back() + std::int64_t(g() % 65)));
    const std::int64_t segments = std::int64_t(offsets.size()) - 1;
    const cl::Buffer o = upload(d, offsets), out = ocl::allocate(d, std::size_t(segments) * 4, "the segments' sums");
    ocl::segment_shape shape;
    shape.segments = segments;
    shape.offsets = &o;
    shape.longest = 64;
    auto run = [&](ocl::events& ev) { ocl::reduce_segments(d, l, rt::dtype::float32, rt::op_kind::sum, init, in, n, shape, out, &ev); };
    ocl::events ev;
    run(ev);
    ocl::elapsed_seconds(ev);
    const std::vector<float> got = download<float>(d, out, segments);
    baseline_array base_offsets(base, offsets.data(), offsets.size() * 8), base_out(base, nullptr, std::size_t(segments) * 4);
    rt::reduce_job job;
    job.input = rt::array_view{rt::dtype::float32, base_in.data(), n, base_in.where, base_in.ordinal};
    job.shape = rt::shape_kind::offsets;
    job.segments = segments;
    job.offsets = static_cast<const std::int64_t*>(base_offsets.data());
    job.offsets_where = base_offsets.where;
    job.check_offsets = false;
    auto base_run = [&](const rt::execution& e) {
      rt::reduce(job, rt::output_view{rt::dtype::float32, base_out.data(), segments, base_out.where, base_out.ordinal}, e);
    };
    const double base_ms = base.ms(opts, base_run);
    const std::string error = first_difference(got, base_out.read<float>(std::size_t(segments)));
    report("segmented sum (0..64)", error.empty() ? opencl_ms(opts, run) : 0, base_ms, error);
  }
  // windows: W = 1000
  {
    const std::int64_t w = 1000, windows = n - w + 1;
    const cl::Buffer out = ocl::allocate(d, std::size_t(windows) * 4, "the window sums");
    auto run = [&](ocl::events& ev) { ocl::reduce_windows(d, l, rt::dtype::float32, rt::op_kind::sum, init, in, n, w, out, &ev); };
    ocl::events ev;
    run(ev);
    ocl::elapsed_seconds(ev);
    const std::vector<float> got = download<float>(d, out, windows);
    baseline_array base_out(base, nullptr, std::size_t(windows) * 4);
    rt::reduce_job job;
    job.input = rt::array_view{rt::dtype::float32, base_in.data(), n, base_in.where, base_in.ordinal};
    job.shape = rt::shape_kind::window;
    job.length = w;
    auto base_run = [&](const rt::execution& e) {
      rt::reduce(job, rt::output_view{rt::dtype::float32, base_out.data(), windows, base_out.where, base_out.ordinal}, e);
    };
    const double base_ms = base.ms(opts, base_run);
    const std::string error = first_difference(got, base_out.read<float>(std::size_t(windows)));
    report("window sum (W = 1000)", error.empty() ? opencl_ms(opts, run) : 0, base_ms, error);
  }
  return ok;
}

int run_opencl(const options& opts, nlohmann::json& record) {
  if (ocl::device_count() == 0) {
    fmt::print(stderr, "bench opencl: {}\n", ocl::why_no_device());
    return 1;
  }
  if (opts.device >= ocl::device_count()) {
    fmt::print(stderr, "bench opencl: there is no OpenCL device {} (this machine has {})\n", opts.device, ocl::device_count());
    return 1;
  }
  ocl::device& d = ocl::device_at(opts.device);
  const ocl::lanes l = ocl::choose_lanes(d);
  fmt::print("multireduce bench opencl: {}\n  the backend's lanes: {} form, width {}\n", d.describe(opts.device),
             ocl::to_string(l.form), l.width);
  record["device"] = d.name;
  record["platform"] = d.platform;
  record["version"] = d.version;
  record["form"] = std::string(ocl::to_string(l.form));
  bool ok = true;
  try {
    fmt::print("\n== Section 7: sums of every 32 consecutive elements, the windows of a warp by one multi-reduction "
               "against a butterfly each ==\nMedian of {} runs (profiling events).\n{:<8} {:<13} {:<9} {:>10} {:>12} {:>10}\n",
               opts.repetitions, "type", "kernel", "form", "ms", "Gwindows/s", "speedup");
    nlohmann::json paper = nlohmann::json::array();
    ok = paper_rows<std::int32_t>(opts, d, "int", rt::dtype::int32, paper) && ok;
    ok = paper_rows<float>(opts, d, "float", rt::dtype::float32, paper) && ok;
    if (d.fp64) ok = paper_rows<double>(opts, d, "double", rt::dtype::float64, paper) && ok;
    record["paper"] = paper;

    baseline base{"cpu"};
#if defined(MULTIREDUCE_BENCH_WITH_CUDA)
    int cuda_devices = 0;
    if (cudaGetDeviceCount(&cuda_devices) == cudaSuccess)
      for (int c = 0; c < cuda_devices && base.name == "cpu"; ++c) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, c) == cudaSuccess && d.name == p.name) {
          base.name = "cuda";
          base.cuda_device = c;
          cudaSetDevice(c);
          cudaStreamCreate(&base.stream);
        }
      }
#endif
    fmt::print("\n== The backend's algorithms on float32, beside the {} backend{} ==\n{:<26} {:>10} {:>10} {:>10} {:>10}\n",
               base.name, base.name == "cuda" ? " on the same GPU" : " on this machine's cores", "job", "OpenCL ms",
               "GB/s", base.name + " ms", "speed");
    nlohmann::json backend = nlohmann::json::array();
    ok = backend_rows(opts, d, opts.device, base, backend) && ok;
    record["backend"] = backend;
    record["baseline"] = base.name;
  } catch (const cl::Error& e) {
    fmt::print(stderr, "bench opencl: {} failed: {}\n", e.what(), ocl::status_name(e.err()));
    return 1;
  }
  return ok ? 0 : 1;
}

const bool registered = register_suite(
    {"opencl",
     "the OpenCL backend: the paper's section 7 in every form against the local-memory butterfly, and reduce, "
     "statistics, segmented and windows beside the CUDA backend on the same GPU (or the CPU backend)",
     false, &run_opencl, true});

}  // namespace
}  // namespace multireduce::bench
