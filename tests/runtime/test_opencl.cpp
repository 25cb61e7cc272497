// The OpenCL backend (src/runtime/opencl): every job on the first OpenCL device here (PoCL on the
// CPU in CI, NVIDIA's OpenCL on the GPU machine) against the CPU backend's answers, element by
// element: integers, min/max/argmin/argmax and the matcher equal, float sums and products within
// the bound of docs/opencl.md. Each lane setting the device takes runs: every form it has at width
// 32, and the local-memory form at width 64. Where the CUDA backend is here too, its answers are
// compared as well. Inputs from logged seeds, outputs poisoned first. Skipped without an OpenCL
// device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <multireduce/match/collection.hpp>

#include "../common/match_reference.hpp"
#include "../common/special_values.hpp"
#include "../common/test_values.hpp"
#include "runtime/backend.hpp"
#include "runtime/opencl/algorithms.hpp"
#include "runtime/opencl/device.hpp"
#include "runtime/runtime.hpp"

namespace {

namespace rt = multireduce::runtime;
namespace ocl = multireduce::runtime::opencl;

std::uint64_t seed_for(const std::string& what) {
  const std::uint64_t s = mr_test::base_seed() ^ std::hash<std::string>{}(what);
  std::printf("[ seed ] %s: %llu\n", what.c_str(), (unsigned long long)s);
  return s;
}

#define SKIP_WITHOUT_OPENCL()                                                                        \
  do {                                                                                               \
    if (rt::device_count("opencl") == 0)                                                             \
      GTEST_SKIP() << "no OpenCL device: "                                                           \
                   << rt::unsupported_reason_for_knn("opencl", 32);                                  \
  } while (0)

rt::execution on(std::string_view backend) {
  rt::execution e;
  e.backend = backend;
  return e;
}

/// The lane settings the first OpenCL device takes: each of its forms at width 32, local at 64.
std::vector<ocl::lanes> lane_settings() {
  std::vector<ocl::lanes> all;
  for (ocl::exchange_form f : ocl::device_at(0).forms()) all.push_back({f, 32});
  all.push_back({ocl::exchange_form::local_memory, 64});
  return all;
}

/// Sets MULTIREDUCE_OPENCL_FORM and _WIDTH for the scope.
struct lanes_scope {
  explicit lanes_scope(ocl::lanes l) {
    setenv("MULTIREDUCE_OPENCL_FORM", std::string(ocl::to_string(l.form)).c_str(), 1);
    setenv("MULTIREDUCE_OPENCL_WIDTH", std::to_string(l.width).c_str(), 1);
  }
  ~lanes_scope() {
    unsetenv("MULTIREDUCE_OPENCL_FORM");
    unsetenv("MULTIREDUCE_OPENCL_WIDTH");
  }
};

/// n random elements of `type` as bytes: integers in [-20, 20] (unsigned [0, 40]: ties and
/// negatives), floats with fractions in [-20, 20], or in [0.9, 1.1] for products.
std::vector<std::byte> random_input(rt::dtype type, std::int64_t n, bool near_one, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::byte> bytes(std::size_t(n) * rt::size_of(type));
  rt::visit(type, [&](auto element) {
    using T = decltype(element);
    auto* p = reinterpret_cast<T*>(bytes.data());
    std::uniform_real_distribution<double> wide(-20, 20), one(0.9, 1.1);
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, rt::float16_bits>) p[i] = rt::to_float16(float(near_one ? one(g) : wide(g)));
      else if constexpr (std::is_floating_point_v<T>) p[i] = T(near_one ? one(g) : wide(g));
      else if constexpr (std::is_signed_v<T>) p[i] = T(int(g() % 41) - 20);
      else p[i] = T(g() % 41);
    }
  });
  return bytes;
}

/// |x| of a float input (for the sums' error bound), as float64.
std::vector<double> magnitudes(rt::dtype type, const std::vector<std::byte>& bytes) {
  std::vector<double> m;
  rt::visit(type, [&](auto element) {
    using T = decltype(element);
    const auto* p = reinterpret_cast<const T*>(bytes.data());
    m.resize(bytes.size() / sizeof(T));
    for (std::size_t i = 0; i < m.size(); ++i) {
      if constexpr (std::is_same_v<T, rt::float16_bits>) m[i] = std::fabs(double(rt::to_float(p[i])));
      else m[i] = std::fabs(double(p[i]));
    }
  });
  return m;
}

std::vector<std::byte> run(std::string_view backend, const rt::reduce_job& job) {
  const std::int64_t count = rt::output_count(job);
  std::vector<std::byte> out(std::size_t(count) * rt::size_of(rt::output_dtype(job)), std::byte{0xA5});
  rt::output_view v{rt::output_dtype(job), out.data(), count};
  const rt::report r = rt::reduce(job, v, on(backend));
  EXPECT_EQ(r.backend, backend);
  return out;
}

/// Output i as a double (for the comparisons' messages and bounds).
double value_at(rt::dtype type, const std::vector<std::byte>& out, std::size_t i) {
  double v = 0;
  rt::visit(type, [&](auto element) {
    using T = decltype(element);
    T x;
    std::memcpy(&x, out.data() + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, rt::float16_bits>) v = double(rt::to_float(x));
    else v = double(x);
  });
  return v;
}

/// The OpenCL backend's outputs (and the CUDA backend's, where it runs the job) against the CPU
/// backend's: exact, except float sums and products, within (length + 2) eps sum|x| (products:
/// (length + 2) eps |result|), float16 half an ulp more each side.
void expect_like_cpu(const rt::reduce_job& job, std::int64_t length, const std::string& what,
                     const std::vector<std::byte>& input) {
  // The OpenCL backend, and the CUDA backend where there is a GPU that runs the job.
  std::vector<std::string_view> others{"opencl"};
  if (rt::cuda_device_count() > 0 && rt::unsupported_reason("cuda", job).empty()) others.push_back("cuda");
  const std::vector<std::byte> cpu = run("cpu", job);
  const rt::dtype out = rt::output_dtype(job);
  const bool inexact = rt::is_floating(out) && (job.op == rt::op_kind::sum || job.op == rt::op_kind::prod);
  std::vector<std::byte> abs_sum;
  if (inexact && job.op == rt::op_kind::sum) {  // sum |x| of every output's elements: the CPU backend's
    const std::vector<double> m = magnitudes(job.input.type, input);
    rt::reduce_job abs_job = job;
    abs_job.input = rt::array_view{rt::dtype::float64, m.data(), job.input.count};
    abs_job.op = rt::op_kind::sum;
    abs_sum = run("cpu", abs_job);
  }
  for (const std::string_view backend : others) {
    const std::vector<std::byte> gpu = run(backend, job);
    ASSERT_EQ(cpu.size(), gpu.size()) << what << " on " << backend;
    for (std::size_t i = 0; i < cpu.size() / rt::size_of(out); ++i) {
      const double a = value_at(out, cpu, i), b = value_at(out, gpu, i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (!inexact) {
        ASSERT_EQ(0, std::memcmp(cpu.data() + i * rt::size_of(out), gpu.data() + i * rt::size_of(out), rt::size_of(out)))
            << what << " on " << backend << ": output " << i << " is " << b << ", the CPU's " << a;
        continue;
      }
      const double eps = out == rt::dtype::float32 ? 0x1p-24 : 0x1p-53;
      const double scale = job.op == rt::op_kind::sum ? value_at(rt::dtype::float64, abs_sum, i) : std::fabs(a);
      // float16 is summed in float32 and rounded: half a float16 ulp each side, more.
      const double bound = out == rt::dtype::float16
                               ? double(length + 2) * 0x1p-24 * scale + 0x1p-10 * std::fabs(a) + 0x1p-24
                               : double(length + 2) * eps * scale;
      ASSERT_LE(std::fabs(a - b), bound) << what << " on " << backend << ": output " << i << " is " << b
                                         << ", the CPU's " << a;
    }
  }
}

bool takes(rt::dtype type, rt::op_kind op) { return !(rt::info(op).integers_only && rt::is_floating(type)); }

/// Segments of `job`'s input: of each fixed length and with offsets of uniform lengths 0..most for
/// each `most` (empty segments among them).
void expect_segments(const rt::reduce_job& job, std::initializer_list<std::int64_t> lengths,
                     std::initializer_list<std::int64_t> mosts, const std::string& what,
                     const std::vector<std::byte>& input) {
  const std::int64_t n = job.input.count;
  for (const std::int64_t length : lengths) {
    if (n == 0 || n < length) continue;
    rt::reduce_job fixed = job;
    fixed.shape = rt::shape_kind::fixed_segments;
    fixed.length = length;
    fixed.segments = n / length;
    fixed.input.count = fixed.segments * length;
    expect_like_cpu(fixed, length, what + " fixed " + std::to_string(length), input);
  }
  for (const std::int64_t most : mosts) {
    const std::string name = what + " offsets 0.." + std::to_string(most);
    std::mt19937_64 g(seed_for(name));
    std::vector<std::int64_t> offsets{0};
    while (offsets.back() < n) offsets.push_back(std::min<std::int64_t>(n, offsets.back() + std::int64_t(g() % (most + 1))));
    rt::reduce_job segmented = job;
    segmented.shape = rt::shape_kind::offsets;
    segmented.offsets = offsets.data();
    segmented.segments = std::int64_t(offsets.size()) - 1;
    expect_like_cpu(segmented, most, name, input);
  }
}

/// Every shape of one dtype and operator, on sizes around the edges and one large array where
/// `large`; where not `every_kernel`, without windows and without the segments that take a warp or a
/// work-group each (whole arrays and short segments only).
void expect_every_shape(rt::dtype type, rt::op_kind op, bool large, bool every_kernel = true) {
  const std::string name = std::string(rt::name_of(type)) + " " + std::string(rt::name_of(op));
  std::vector<std::int64_t> sizes{0, 1, 31, 33, 4099};
  if (large) sizes.push_back((std::int64_t{1} << 20) + 7);
  for (const std::int64_t n : sizes) {
    const std::string what = name + " n=" + std::to_string(n);
    const auto input = random_input(type, n, op == rt::op_kind::prod, seed_for(what));
    rt::reduce_job job;
    job.input = rt::array_view{type, input.data(), n};
    job.op = op;
    expect_like_cpu(job, n, what + " whole", input);
    // Fixed lengths and offsets: staged (means up to 40, 20 for 8-byte elements), a warp's
    // multi-reduction (longer, under 1024; every lane setting in EveryLaneSetting), a work-group a
    // segment (longer).
    if (every_kernel) expect_segments(job, {1, 7, 40, 3000}, {64, 200}, what, input);
    else expect_segments(job, {1, 7, 40}, {64}, what, input);
    for (const std::int64_t w : {std::int64_t{1}, std::int64_t{5}, std::int64_t{17}, std::int64_t{1000}, n, n + 1}) {
      if (w < 1 || !every_kernel) continue;
      rt::reduce_job window = job;
      window.shape = rt::shape_kind::window;
      window.length = w;
      expect_like_cpu(window, w, what + " window " + std::to_string(w), input);
    }
  }
}

std::string lanes_name(ocl::lanes l) { return std::string(ocl::to_string(l.form)) + "/" + std::to_string(l.width); }

#ifdef MULTIREDUCE_CLANG
/// clang's verdict on program `file` (after common.cl but for knn.cl, as the backend builds it) with
/// `options`, type-checked for OpenCL C (SPIR, or NVIDIA's OpenCL target for the PTX form): "" when
/// it passes, else the command and its errors.
std::string clang_errors(const std::string& file, std::string options, ocl::exchange_form form) {
  std::string source = file == "knn" ? "" : std::string(ocl::kernel_source("common")) + '\n';
  source += ocl::kernel_source(file);
  const std::string path = testing::TempDir() + "multireduce_kernel.cl", log = path + ".log";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fwrite(source.data(), 1, source.size(), f);
    std::fclose(f);
  } else {
    return "cannot write " + path;
  }
  // clang declares the sub-group builtins from OpenCL C 2.0 only (devices take them in 1.2 with
  // cl_khr_subgroups).
  if (form == ocl::exchange_form::subgroup_shuffle) options.replace(options.find("-cl-std=CL1.2"), 13, "-cl-std=CL2.0");
  // NVIDIA's target for the inline PTX (clang's header declares vload_half there only with the
  // half extension on, though OpenCL C 1.2 has it without).
  const char* target = form == ocl::exchange_form::ptx_shuffle ? "nvptx64-nvidia-nvcl -Xclang -cl-ext=+cl_khr_fp16" : "spir64";
  const std::string command = std::string(MULTIREDUCE_CLANG) + " -x cl -Xclang -finclude-default-header --target=" +
                              target + " -fsyntax-only -Werror=implicit-function-declaration " + options + " " + path +
                              " > " + log + " 2>&1";
  if (std::system(command.c_str()) == 0) return "";
  std::string errors = command + "\n";
  if (FILE* f = std::fopen(log.c_str(), "r")) {
    char buffer[4096];
    for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, f)) > 0;) errors.append(buffer, got);
    std::fclose(f);
  }
  return errors;
}
#endif

TEST(OpenclKernels, EveryFormAndWidthTypeChecksWithClang) {
#ifndef MULTIREDUCE_CLANG
  GTEST_SKIP() << "no clang at configure time";
#else
  // Every program in every form and width, the sub-group form included, which no device within reach
  // runs (PoCL 3.1 and NVIDIA's OpenCL have no sub-groups): their OpenCL C type-checks with the
  // options the backend builds them with. Every dtype with sum, max and argmin in the local form;
  // in every form, the accumulators that differ (float16 read as float, float64, the integer sums'
  // uint64, argmin's pairs); the other operators once.
  const ocl::lanes every_form[] = {{ocl::exchange_form::local_memory, 32},     {ocl::exchange_form::local_memory, 64},
                                   {ocl::exchange_form::subgroup_shuffle, 32}, {ocl::exchange_form::subgroup_shuffle, 64},
                                   {ocl::exchange_form::ptx_shuffle, 32}};
  const ocl::lanes local{ocl::exchange_form::local_memory, 32};
  int checked = 0;
  auto check = [&](const std::string& file, const std::string& options, ocl::lanes l) {
    const std::string errors = clang_errors(file, options, l.form);
    EXPECT_EQ(errors, "") << file << ".cl in " << lanes_name(l);
    ++checked;
  };
  for (const rt::dtype type : rt::all_dtypes) {
    for (const rt::op_kind op : {rt::op_kind::sum, rt::op_kind::max, rt::op_kind::argmin}) {
      const bool every = type == rt::dtype::float16 || type == rt::dtype::float32 || type == rt::dtype::float64 ||
                         type == rt::dtype::int64 || type == rt::dtype::uint8;
      for (const ocl::lanes l : every_form) {
        if (!every && l.form != local.form) continue;
        for (const char* file : {"segments", "columns", "window"}) check(file, ocl::program_options(type, op, l, true), l);
      }
    }
    check("statistics", ocl::statistics_options(type, true), local);
  }
  for (const rt::op_kind op : {rt::op_kind::prod, rt::op_kind::min, rt::op_kind::argmax})
    for (const char* file : {"segments", "columns", "window"}) check(file, ocl::program_options(rt::dtype::float32, op, local, true), local);
  for (const rt::op_kind op : {rt::op_kind::bit_and, rt::op_kind::bit_or, rt::op_kind::bit_xor})
    for (const char* file : {"segments", "columns", "window"}) check(file, ocl::program_options(rt::dtype::uint64, op, local, true), local);
  for (const rt::dtype type : {rt::dtype::int32, rt::dtype::float32, rt::dtype::float64})
    for (const ocl::lanes l : every_form) check("paper", ocl::program_options(type, rt::op_kind::sum, l, true, false), l);
  check("knn", "-cl-std=CL1.2 -DWORDS=8 -DK=2", local);
  std::printf("%d programs type-checked with %s\n", checked, MULTIREDUCE_CLANG);
#endif
}

TEST(OpenclReduce, EveryDtypeAndOperatorLikeTheCpuBackend) {
  SKIP_WITHOUT_OPENCL();
  const ocl::lanes first = lane_settings().front();
  lanes_scope scope(first);
  std::printf("lanes %s on %s\n", lanes_name(first).c_str(), ocl::device_at(0).describe(0).c_str());
  for (const rt::dtype type : rt::all_dtypes)
    for (const auto& op : rt::op_table) {
      if (!takes(type, op.kind) || !ocl::unsupported_type(ocl::device_at(0), type).empty()) continue;
      // Every kernel for every dtype with sum, max and argmin; the other operators through the whole
      // array and short segments (the kernels differ only in the operator they are built with, and
      // PoCL builds each kernel of each dtype and operator: on 2 cores, PoCL's cache empty, 232 s
      // against 298 s for every kernel with every operator).
      const bool large = type == rt::dtype::float32 || type == rt::dtype::int32 || op.kind == rt::op_kind::argmax;
      const bool every_kernel = op.kind == rt::op_kind::sum || op.kind == rt::op_kind::max || op.kind == rt::op_kind::argmin;
      expect_every_shape(type, op.kind, large, every_kernel);
      if (HasFatalFailure()) return;
    }
}

TEST(OpenclReduce, EveryLaneSettingLikeTheCpuBackend) {
  SKIP_WITHOUT_OPENCL();
  for (const ocl::lanes l : lane_settings()) {
    lanes_scope scope(l);
    SCOPED_TRACE(lanes_name(l));
    // The shapes whose kernel exchanges lanes: segments by a warp's multi-reduction (mean lengths
    // over 40 and under 1024). The streamed windows' scans exchange lanes too, in the shuffle forms
    // only: StreamedWindowsOfEveryMiddle tests them in the device's default form (on NVIDIA, PTX,
    // its only shuffle form). Every other kernel is the same at every setting.
    for (const rt::dtype type : {rt::dtype::float32, rt::dtype::int64, rt::dtype::float64, rt::dtype::uint8})
      for (const rt::op_kind op : {rt::op_kind::sum, rt::op_kind::max, rt::op_kind::argmin}) {
        if (!ocl::unsupported_type(ocl::device_at(0), type).empty()) continue;
        std::vector<std::int64_t> sizes{0, 1, 33, 4099};
        if (type == rt::dtype::float32) sizes.push_back((std::int64_t{1} << 20) + 7);
        for (const std::int64_t n : sizes) {
          const std::string what = std::string(rt::name_of(type)) + " " + std::string(rt::name_of(op)) + " n=" + std::to_string(n);
          const auto input = random_input(type, n, false, seed_for(what));
          rt::reduce_job job;
          job.input = rt::array_view{type, input.data(), n};
          job.op = op;
          expect_segments(job, {41, 100, 700}, {200}, what, input);
        }
        if (HasFatalFailure()) return;
      }
  }
}

TEST(OpenclReduce, StreamedWindowsOfEveryMiddle) {
  SKIP_WITHOUT_OPENCL();
  // window_stream's middles (W - 1 = 16 q + r chunks of 16): q = 2 (one chunk fold), and in the
  // shuffle forms van Herk's scans within groups of 1, 2, 8, 16 and 32 lanes, q - 1 on either side
  // of a group boundary; runs of several tiles, so that the rings wrap. The lanes are the device's
  // default (NVIDIA: PTX shuffles; the local-memory form reads the q - 1 folds one by one).
  const std::int64_t n = 300007;
  for (const rt::dtype type : {rt::dtype::float32, rt::dtype::int64})
    for (const rt::op_kind op : {rt::op_kind::sum, rt::op_kind::max, rt::op_kind::argmin}) {
      const std::string what = std::string(rt::name_of(type)) + " " + std::string(rt::name_of(op)) + " streamed";
      const auto input = random_input(type, n, false, seed_for(what));
      rt::reduce_job job;
      job.input = rt::array_view{type, input.data(), n};
      job.op = op;
      job.shape = rt::shape_kind::window;
      for (const std::int64_t w : {33, 48, 49, 81, 200, 529, 530, 545, 1000, 2001}) {
        job.length = w;
        expect_like_cpu(job, w, what + " window " + std::to_string(w), input);
      }
      if (HasFatalFailure()) return;
    }
}

TEST(OpenclReduce, NaNsAndTiesFollowNumPy) {
  SKIP_WITHOUT_OPENCL();
  for (const rt::dtype type : {rt::dtype::float16, rt::dtype::float32, rt::dtype::float64}) {
    const std::int64_t n = 5000;
    auto input = random_input(type, n, false, seed_for("nan " + std::string(rt::name_of(type))));
    rt::visit(type, [&](auto element) {  // NaNs at a few places, the same value many times
      using T = decltype(element);
      if constexpr (!std::is_integral_v<T>) {
        auto* p = reinterpret_cast<T*>(input.data());
        for (const std::int64_t i : {std::int64_t{70}, std::int64_t{71}, std::int64_t{2000}, std::int64_t{4999}}) {
          if constexpr (std::is_same_v<T, rt::float16_bits>) p[i] = rt::to_float16(std::nanf(""));
          else p[i] = std::numeric_limits<T>::quiet_NaN();
        }
      }
    });
    for (const rt::op_kind op : {rt::op_kind::min, rt::op_kind::max, rt::op_kind::argmin, rt::op_kind::argmax, rt::op_kind::sum}) {
      rt::reduce_job job;
      job.input = rt::array_view{type, input.data(), n};
      job.op = op;
      const std::string what = std::string(rt::name_of(type)) + " " + std::string(rt::name_of(op)) + " with NaNs";
      expect_like_cpu(job, n, what, input);
      for (const std::int64_t w : {std::int64_t{3}, std::int64_t{100}}) {
        rt::reduce_job window = job;
        window.shape = rt::shape_kind::window;
        window.length = w;
        expect_like_cpu(window, w, what + " window", input);
      }
      rt::reduce_job fixed = job;
      fixed.shape = rt::shape_kind::fixed_segments;
      fixed.length = 50;
      fixed.segments = n / 50;
      expect_like_cpu(fixed, 50, what + " fixed 50", input);
    }
  }
}

TEST(OpenclReduce, LongWindowsLongSegmentsAndAxes) {
  SKIP_WITHOUT_OPENCL();
  const std::int64_t n = (std::int64_t{1} << 20) + 7;
  for (const rt::dtype type : {rt::dtype::float32, rt::dtype::int64}) {
    const auto input = random_input(type, n, false, seed_for("long " + std::string(rt::name_of(type))));
    for (const rt::op_kind op : {rt::op_kind::sum, rt::op_kind::min, rt::op_kind::argmax}) {
      const std::string what = std::string(rt::name_of(type)) + " " + std::string(rt::name_of(op));
      rt::reduce_job job;
      job.input = rt::array_view{type, input.data(), n};
      job.op = op;
      // Windows longer than a tile's local memory take the doubling kernels.
      for (const std::int64_t w : {std::int64_t{70000}, std::int64_t{600000}}) {
        rt::reduce_job window = job;
        window.shape = rt::shape_kind::window;
        window.length = w;
        expect_like_cpu(window, w, what + " window " + std::to_string(w), input);
      }
      // One segment far longer than the others: a work-group a segment.
      std::vector<std::int64_t> offsets{0, 3, 3, 100000, 100010, n - 5, n};
      rt::reduce_job skewed = job;
      skewed.shape = rt::shape_kind::offsets;
      skewed.offsets = offsets.data();
      skewed.segments = std::int64_t(offsets.size()) - 1;
      expect_like_cpu(skewed, n, what + " skewed offsets", input);
      // Short segments on average, with long ones among them: tiles whose elements do not fit the
      // staging buffer, folded from global memory (the short ones alone, the long ones together).
      std::mt19937_64 g(seed_for(what + " short with long"));
      std::vector<std::int64_t> mixed{0};
      for (std::int64_t s = 1; mixed.back() < n; ++s) {
        // (a mean under 19: staged for 8-byte elements too; a long one never fits a tile)
        const std::int64_t length = s % 600 == 0 ? 7000 + std::int64_t(g() % 3000) : s % 97 == 0 ? 50 + std::int64_t(g() % 15) : std::int64_t(g() % 9);
        mixed.push_back(std::min<std::int64_t>(n, mixed.back() + length));
      }
      rt::reduce_job short_with_long = job;
      short_with_long.shape = rt::shape_kind::offsets;
      short_with_long.offsets = mixed.data();
      short_with_long.segments = std::int64_t(mixed.size()) - 1;
      expect_like_cpu(short_with_long, 10000, what + " short segments with long ones", input);
      // Axes of a 3-d array: the first (few long columns, rows in parts), the middle, the last.
      const std::int64_t dims[] = {7, 149797};
      for (const std::int64_t axis : {0, 1}) {
        rt::reduce_job a = rt::axis_job(rt::array_view{type, input.data(), dims[0] * dims[1]}, op, dims, axis);
        expect_like_cpu(a, dims[axis], what + " axis " + std::to_string(axis), input);
      }
      const std::int64_t dims3[] = {3, 1000, 349};
      for (const std::int64_t axis : {0, 1, 2}) {
        rt::reduce_job a = rt::axis_job(rt::array_view{type, input.data(), 3 * 1000 * 349}, op, dims3, axis);
        expect_like_cpu(a, dims3[axis], what + " 3-d axis " + std::to_string(axis), input);
      }
    }
  }
}

TEST(OpenclStatistics, LikeTheCpuBackend) {
  SKIP_WITHOUT_OPENCL();
  if (!ocl::device_at(0).fp64) GTEST_SKIP() << "the device has no float64, which the statistics add in";
  for (const rt::dtype type : rt::all_dtypes)
    for (const std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{33}, (std::int64_t{1} << 20) + 7}) {
      const std::string what = std::string(rt::name_of(type)) + " statistics n=" + std::to_string(n);
      const auto input = random_input(type, n, false, seed_for(what));
      const rt::array_view a{type, input.data(), n};
      rt::any_statistics cpu, gpu;
      rt::statistics(a, cpu, on("cpu"));
      rt::statistics(a, gpu, on("opencl"));
      std::visit(
          [&](const auto& c) {
            using S = std::decay_t<decltype(c)>;
            const auto& g = std::get<S>(gpu);
            EXPECT_EQ(c.count, g.count) << what;
            EXPECT_EQ(c.argmin, g.argmin) << what;
            EXPECT_EQ(c.argmax, g.argmax) << what;
            EXPECT_EQ(0, std::memcmp(&c.min, &g.min, sizeof c.min)) << what;
            EXPECT_EQ(0, std::memcmp(&c.max, &g.max, sizeof c.max)) << what;
            auto close = [&](double x, double y, const char* field) {
              if (std::isnan(x) && std::isnan(y)) return;
              EXPECT_NEAR(x, y, 1e-9 * (1 + std::fabs(x))) << what << " " << field;
            };
            if constexpr (std::is_integral_v<decltype(c.sum)>) EXPECT_EQ(c.sum, g.sum) << what;
            else close(double(c.sum), double(g.sum), "sum");
            close(c.mean, g.mean, "mean");
            close(c.var, g.var, "var");
            close(c.std, g.std, "std");
            close(c.l1, g.l1, "l1");
            close(c.l2, g.l2, "l2");
          },
          cpu);
    }
}

/// Infinities, NaN and doubles near double's largest at random positions (the first now and then:
/// the shift), against the CPU backend, whose tests hold it to NumPy's rules: the same infinities
/// and NaNs, finite values within the rounding of the shifted sums.
TEST(OpenclStatistics, InfinitiesNaNAndOverflowLikeTheCpuBackend) {
  SKIP_WITHOUT_OPENCL();
  if (!ocl::device_at(0).fp64) GTEST_SKIP() << "the device has no float64, which the statistics add in";
  constexpr double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> cases = {{inf}, {-inf}, {inf, -inf}, {nan}, {inf, nan}, {1e308, 1e308},
                                                  {-1e308, -1e308, -1e308}, {1e308, inf, 1e308}, {1e308, -1e308},
                                                  {1e308, -1e308, inf}};
  std::mt19937_64 g(seed_for("opencl statistics specials"));
  auto compare = [](const auto& c, const auto& o, long double magnitude, const std::string& what) {
    auto same_rule = [&](double x, double y, long double tolerance, const char* field) {
      if (!std::isfinite(x) || !std::isfinite(y))
        EXPECT_TRUE((std::isnan(x) && std::isnan(y)) || x == y) << what << " " << field << ": cpu " << x << ", opencl " << y;
      else
        EXPECT_LE(std::abs(static_cast<long double>(x) - y), tolerance) << what << " " << field;
    };
    EXPECT_EQ(c.count, o.count) << what;
    EXPECT_EQ(c.argmin, o.argmin) << what;
    EXPECT_EQ(c.argmax, o.argmax) << what;
    EXPECT_EQ(0, std::memcmp(&c.min, &o.min, sizeof c.min)) << what;
    EXPECT_EQ(0, std::memcmp(&c.max, &o.max, sizeof c.max)) << what;
    const long double n = static_cast<long double>(c.count);
    // Recursive summation's bound, n eps times the sum of the terms' magnitudes (each engine adds
    // its pieces in its own order): huge values that cancel leave that much of their rounding.
    const long double rounding = std::max(1e-12L, 2 * n * std::numeric_limits<double>::epsilon()) * magnitude;
    same_rule(c.sum, o.sum, rounding, "sum");
    same_rule(c.mean, o.mean, rounding / n, "mean");
    same_rule(c.var, o.var, 1e-9L * std::abs(static_cast<long double>(c.var)), "var");
    same_rule(c.std, o.std, 1e-9L * std::abs(static_cast<long double>(c.std)), "std");
    same_rule(c.l1, o.l1, 1e-12L * std::abs(static_cast<long double>(c.l1)), "l1");
    same_rule(c.l2, o.l2, 1e-12L * std::abs(static_cast<long double>(c.l2)), "l2");
  };
  auto run = [&](const auto& v, const std::string& what) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    const rt::dtype type = std::is_same_v<T, double> ? rt::dtype::float64 : rt::dtype::float32;
    long double magnitude = 0;  // the shifted sums' rounding: sum |x| + n |x[0]| of the finite values
    for (const T x : v)
      if (std::isfinite(static_cast<double>(x))) magnitude += std::abs(static_cast<long double>(x));
    if (std::isfinite(static_cast<double>(v[0]))) magnitude += v.size() * std::abs(static_cast<long double>(v[0]));
    const rt::array_view a{type, v.data(), std::int64_t(v.size())};
    rt::any_statistics cpu, ocl_result;
    rt::statistics(a, cpu, on("cpu"));
    rt::statistics(a, ocl_result, on("opencl"));
    compare(std::get<multireduce::statistics<T>>(cpu), std::get<multireduce::statistics<T>>(ocl_result), magnitude,
            what);
  };
  run(std::vector<double>{1e308, 1, 2, 1e308}, "1e308, 1, 2, 1e308");
  run(std::vector<double>{1e308, -1e308}, "1e308, -1e308");
  run(std::vector<double>{-1e308, inf, 1}, "-1e308, inf, 1");
  for (const std::int64_t n : {std::int64_t{3}, std::int64_t{1000}, (std::int64_t{1} << 20) + 7})
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const std::vector<double> v = mr_test::with_specials(n, cases[c], g);
      const std::string what = "n=" + std::to_string(n) + " case " + std::to_string(c);
      run(v, "float64 " + what);
      if (c < 5) run(std::vector<float>(v.begin(), v.end()), "float32 " + what);
    }
}

TEST(OpenclMatcher, KnnAndCollectionLikeTheCpuBackend) {
  SKIP_WITHOUT_OPENCL();
  for (const int bytes : {32, 64, 4})
    for (const int k : {1, 2, 3, 8}) {
      const std::string what = "knn " + std::to_string(bytes) + " bytes k=" + std::to_string(k);
      std::mt19937_64 g(seed_for(what));
      const std::int64_t queries = 700, trains = 1300;
      std::vector<std::uint8_t> q(std::size_t(queries * bytes)), t(std::size_t(trains * bytes));
      for (auto& x : q) x = std::uint8_t(g());
      for (auto& x : t) x = std::uint8_t(g());
      for (std::int64_t r = 0; r < 40; ++r) std::memcpy(&t[std::size_t((r * 31) % trains * bytes)], &q[0], bytes);  // ties
      rt::knn_job job;
      job.query = q.data(), job.queries = queries, job.train = t.data(), job.trains = trains, job.bytes = bytes, job.k = k;
      job.reverse = true;
      rt::knn_result cpu, gpu;
      rt::knn(job, cpu, on("cpu"));
      rt::knn(job, gpu, on("opencl"));
      EXPECT_EQ(cpu.idx, gpu.idx) << what;
      EXPECT_EQ(cpu.dist, gpu.dist) << what;
      EXPECT_EQ(cpu.reverse_nearest, gpu.reverse_nearest) << what;
    }
  // A collection: every pair, the ratio test and the cross-check.
  std::mt19937_64 g(seed_for("collection"));
  std::vector<std::int64_t> offsets{0};
  for (int image = 0; image < 6; ++image) offsets.push_back(offsets.back() + 1 + std::int64_t(g() % 600));
  offsets.push_back(offsets.back());  // an image without descriptors
  std::vector<std::uint8_t> rows(std::size_t(offsets.back() * 32));
  for (auto& x : rows) x = std::uint8_t(g() % 4 == 0 ? g() : 0x5a);
  multireduce::descriptor_collection c{rows.data(), offsets, 32};
  const auto pairs = multireduce::all_pairs(int(offsets.size()) - 1);
  for (const bool cross : {false, true}) {
    rt::collection_job job;
    job.collection = c;
    job.pairs = pairs;
    job.rule.ratio = 0.8;
    job.rule.cross_check = cross;
    multireduce::collection_collector cpu(pairs.size()), gpu(pairs.size());
    rt::match_collection(job, cpu.callback(), on("cpu"));
    rt::match_collection(job, gpu.callback(), on("opencl"));
    const auto a = cpu.take(), b = gpu.take();
    ASSERT_EQ(a.offsets, b.offsets) << "cross-check " << cross;
    ASSERT_EQ(a.matches.size(), b.matches.size());
    EXPECT_TRUE(a.matches == b.matches) << "cross-check " << cross;
    EXPECT_GT(a.matches.size(), 0u);
  }
}

/// A buffer of `context` holding `bytes` (one byte for none).
cl::Buffer buffer_of(const cl::Context& context, const std::vector<std::byte>& bytes) {
  if (bytes.empty()) return cl::Buffer(context, CL_MEM_READ_WRITE, 1);
  return cl::Buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes.size(), const_cast<std::byte*>(bytes.data()));
}

std::vector<std::byte> read_back(const cl::CommandQueue& queue, const cl::Buffer& b, std::size_t bytes) {
  std::vector<std::byte> host(bytes);
  if (bytes > 0) queue.enqueueReadBuffer(b, CL_TRUE, 0, bytes, host.data());
  return host;
}

// Arrays in the memory of a context of the caller's (as PyOpenCL makes them), run in place on the
// caller's queue (in order, without profiling): every shape against the CPU backend, statistics
// against the OpenCL backend's own of the host array, outputs poisoned first.
TEST(OpenclDeviceMemory, ArraysOfAnotherContextRunInPlaceOnItsQueue) {
  SKIP_WITHOUT_OPENCL();
  ocl::device& base = ocl::device_at(0);
  cl::Context context(base.id);
  cl::CommandQueue queue(context, base.id);
  EXPECT_EQ(rt::device_of_stream("opencl", queue()), 0);
  EXPECT_EQ(rt::device_of_stream("cpu", queue()), -1);
  EXPECT_EQ(ocl::on_queue(queue()).d.context(), context());
  EXPECT_EQ(ocl::on_queue(base.queue()).d.context(), base.context());
  rt::execution exec = on("auto");  // data in OpenCL memory: "auto" is the OpenCL backend
  exec.stream = queue();
  const rt::memory device_memory = rt::memory::of("opencl");
  const std::int64_t n = 3 * 1000 * 33;
  const auto input = random_input(rt::dtype::int32, n, false, seed_for("device memory int32"));
  const cl::Buffer in = buffer_of(context, input);
  const rt::array_view host{rt::dtype::int32, input.data(), n};
  const rt::array_view resident{rt::dtype::int32, in(), n, device_memory, 0};
  std::vector<std::int64_t> offsets{0, 0, 5, 40, 1000, 1001, 50000, n};
  const cl::Buffer offsets_buffer =
      buffer_of(context, std::vector<std::byte>(reinterpret_cast<std::byte*>(offsets.data()),
                                                reinterpret_cast<std::byte*>(offsets.data() + offsets.size())));
  const std::int64_t shape[] = {3, 1000, 33};
  std::vector<rt::reduce_job> jobs(5);
  jobs[0].op = rt::op_kind::sum;
  jobs[1].op = rt::op_kind::max, jobs[1].shape = rt::shape_kind::window, jobs[1].length = 17;
  jobs[2].op = rt::op_kind::argmin, jobs[2].shape = rt::shape_kind::offsets, jobs[2].segments = 7;
  jobs[3] = rt::axis_job(host, rt::op_kind::sum, shape, 1);
  jobs[4] = rt::axis_job(host, rt::op_kind::argmax, shape, 2);  // the last axis: fixed segments
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    rt::reduce_job on_host = jobs[i];
    on_host.input = host;
    on_host.offsets = offsets.data();
    const std::vector<std::byte> want = run("cpu", on_host);
    for (const bool offsets_on_device : {false, true}) {
      if (offsets_on_device && jobs[i].shape != rt::shape_kind::offsets) continue;
      rt::reduce_job in_place = on_host;
      in_place.input = resident;
      if (offsets_on_device) {
        in_place.offsets = static_cast<const std::int64_t*>(static_cast<const void*>(offsets_buffer()));
        in_place.offsets_where = device_memory;
      }
      const cl::Buffer out = buffer_of(context, std::vector<std::byte>(want.size(), std::byte{0xA5}));
      const rt::report r = rt::reduce(in_place, rt::output_view{rt::output_dtype(in_place), out(),
                                                                 rt::output_count(in_place), device_memory, 0}, exec);
      EXPECT_EQ(r.backend, "opencl");
      EXPECT_TRUE(read_back(queue, out, want.size()) == want) << "job " << i << ", offsets on the device " << offsets_on_device;
    }
  }
  rt::any_statistics want, got;
  rt::statistics(host, want, on("opencl"));
  rt::statistics(resident, got, exec);  // into host memory
  const std::size_t bytes = rt::statistics_bytes(rt::dtype::int32);
  const cl::Buffer record = buffer_of(context, std::vector<std::byte>(bytes, std::byte{0xA5}));
  rt::statistics(resident, rt::output_view{rt::dtype::uint8, record(), std::int64_t(bytes), device_memory, 0}, exec);
  std::visit([&](const auto& w) {
    EXPECT_EQ(0, std::memcmp(&w, &std::get<std::decay_t<decltype(w)>>(got), sizeof w));
    EXPECT_TRUE(read_back(queue, record, bytes) ==
                std::vector<std::byte>(reinterpret_cast<const std::byte*>(&w), reinterpret_cast<const std::byte*>(&w) + bytes));
  }, want);

  // A buffer of another context, one too small, no queue: clear errors.
  rt::reduce_job whole;
  whole.input = resident;
  const cl::Buffer out = buffer_of(context, std::vector<std::byte>(8));
  const rt::output_view to{rt::dtype::int64, out(), 1, device_memory, 0};
  const cl::Buffer foreign = buffer_of(base.context, input);
  whole.input.data = foreign();
  EXPECT_THROW(rt::reduce(whole, to, exec), std::invalid_argument);
  const cl::Buffer small = buffer_of(context, std::vector<std::byte>(16));
  whole.input.data = small();
  EXPECT_THROW(rt::reduce(whole, to, exec), std::invalid_argument);
  whole.input = resident;
  EXPECT_THROW(rt::reduce(whole, to, on("auto")), std::invalid_argument);  // no queue
  EXPECT_THROW(rt::reduce(whole, to, on("cuda")), rt::unsupported_error);
}

TEST(OpenclErrors, BuildFailuresMemoryAndMissingFloat64AreClearErrors) {
  SKIP_WITHOUT_OPENCL();
  ocl::device& d = ocl::device_at(0);
  try {
    d.kernel("knn", "-DWORDS=8 -DK=this_is_not_a_number", "knn_hamming");
    ADD_FAILURE() << "a program that cannot build was built";
  } catch (const rt::device_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the build log"), std::string::npos) << what;
    EXPECT_NE(what.find("this_is_not_a_number"), std::string::npos) << what;
  }
  EXPECT_THROW(ocl::allocate(d, std::size_t(d.max_alloc) + 1, "a test buffer"), rt::device_memory_error);
  ocl::device no_fp64;
  no_fp64.name = "a device without doubles";
  EXPECT_NE(ocl::unsupported_type(no_fp64, rt::dtype::float64).find("cl_khr_fp64"), std::string::npos);
  EXPECT_EQ(ocl::unsupported_type(no_fp64, rt::dtype::float32), "");
  // A device that is not there, a form the device does not take, a width that is not one.
  rt::execution far = on("opencl");
  far.devices = rt::device_set{{rt::device_count("opencl")}};
  std::vector<float> x(10, 1.0f);
  float out = 0;
  rt::reduce_job job;
  job.input = rt::array_view{rt::dtype::float32, x.data(), 10};
  EXPECT_THROW(rt::reduce(job, rt::output_view{rt::dtype::float32, &out, 1}, far), rt::unsupported_error);
  setenv("MULTIREDUCE_OPENCL_WIDTH", "48", 1);
  EXPECT_THROW(rt::reduce(job, rt::output_view{rt::dtype::float32, &out, 1}, on("opencl")), rt::unsupported_error);
  unsetenv("MULTIREDUCE_OPENCL_WIDTH");
  if (!d.nvidia) {
    setenv("MULTIREDUCE_OPENCL_FORM", "ptx", 1);
    EXPECT_THROW(rt::reduce(job, rt::output_view{rt::dtype::float32, &out, 1}, on("opencl")), rt::unsupported_error);
    unsetenv("MULTIREDUCE_OPENCL_FORM");
  }
  // "auto" never takes the OpenCL backend for host data.
  const rt::report r = rt::reduce(job, rt::output_view{rt::dtype::float32, &out, 1});
  EXPECT_NE(r.backend, "opencl");
}

}  // namespace
