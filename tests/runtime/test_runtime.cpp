// The runtime (src/runtime): its operator table and result types, its job checks, every dtype x
// operator x shape on the CPU against naive loops written here, the same jobs on the GPU compared
// element by element with the CPU's (skipped without a GPU), statistics, the matcher's search, and
// calls from several threads at once. Inputs from logged seeds, outputs poisoned first.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "../common/match_reference.hpp"
#include "../common/test_values.hpp"
#include "runtime/pairwise.hpp"
#include "runtime/runtime.hpp"
#include "runtime/trace.hpp"

namespace {

namespace rt = multireduce::runtime;

std::uint64_t seed_for(const std::string& what) {
  const std::uint64_t s = mr_test::base_seed() ^ std::hash<std::string>{}(what);
  std::printf("[ seed ] %s: %llu\n", what.c_str(), (unsigned long long)s);
  return s;
}

bool gpu_here() { return rt::cuda_device_count() > 0; }

/// Where a call runs.
rt::execution on(std::string_view backend, int device = 0) {
  rt::execution e;
  e.backend = backend;
  e.devices = rt::device_set{{device}};
  return e;
}

/// n random elements of T: small integers (exact sums in every type), a few negative.
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    const int k = static_cast<int>(g() % 41) - (std::is_signed_v<T> || std::is_floating_point_v<T> ? 20 : 0);
    x = static_cast<T>(k);
  }
  return v;
}

/// The bytes of one value.
template <class V>
std::vector<std::byte> bytes_of(V x) {
  std::vector<std::byte> out(sizeof(V));
  std::memcpy(out.data(), &x, sizeof(V));
  return out;
}

/// The naive answer of one segment [b, e) of `v` for `op`, as NumPy gives it.
template <class T>
std::vector<std::byte> naive(const std::vector<T>& v, std::int64_t b, std::int64_t e, rt::op_kind op) {
  // Integer sums and products wrap like NumPy's int64/uint64: uint64 arithmetic, the same bits.
  using U = std::conditional_t<std::is_integral_v<T>, std::uint64_t, T>;
  using limits = std::numeric_limits<T>;
  const T highest = limits::has_infinity ? limits::infinity() : limits::max();
  const T lowest = limits::has_infinity ? -limits::infinity() : limits::lowest();
  U total = op == rt::op_kind::prod ? U(1) : U(0);
  T extreme = op == rt::op_kind::min ? highest : lowest;
  std::int64_t at = -1;
  for (std::int64_t i = b; i < e; ++i) {
    const T x = v[std::size_t(i)];
    if (op == rt::op_kind::sum) total = U(total + U(x));
    if (op == rt::op_kind::prod) total = U(total * U(x));
    if (op == rt::op_kind::min) extreme = x < extreme ? x : extreme;
    if (op == rt::op_kind::max) extreme = extreme < x ? x : extreme;
    if (at < 0 || (op == rt::op_kind::argmin ? x < v[std::size_t(at)] : v[std::size_t(at)] < x)) at = i;
  }
  switch (op) {
    case rt::op_kind::sum:
    case rt::op_kind::prod:
      return bytes_of(total);
    case rt::op_kind::min:
    case rt::op_kind::max:
      return bytes_of(extreme);
    case rt::op_kind::argmin:
    case rt::op_kind::argmax:
      return bytes_of(std::int64_t(at < 0 ? -1 : at - b));
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    T acc = op == rt::op_kind::bit_and ? T(~T(0)) : T(0);
    for (std::int64_t i = b; i < e; ++i) {
      const T x = v[std::size_t(i)];
      acc = op == rt::op_kind::bit_and ? T(acc & x) : op == rt::op_kind::bit_or ? T(acc | x) : T(acc ^ x);
    }
    return bytes_of(acc);
  }
  throw std::logic_error("bitwise operators on floats");
}

/// One job on `v` (1-D) for every shape: its segments' bounds.
struct shaped_case {
  rt::shape_kind shape;
  std::int64_t length;
  std::vector<std::int64_t> offsets;
};

template <class T>
void expect_jobs(std::string_view backend, const char* what) {
  const auto seed = seed_for(std::string("runtime ") + what + " " + std::string(rt::name_of(rt::dtype_of<T>())));
  const auto values = random_values<T>(1000, seed);
  // Float products of +-1 only: exact in any association (others would overflow in some orders).
  std::vector<T> signs(values.size());
  for (std::size_t i = 0; i < signs.size(); ++i) signs[i] = values[i] < 0 ? T(-1) : T(1);
  const std::int64_t n = std::int64_t(values.size());
  const std::vector<shaped_case> cases{{rt::shape_kind::whole, 0, {}},
                                       {rt::shape_kind::fixed_segments, 25, {}},
                                       {rt::shape_kind::window, 7, {}},
                                       {rt::shape_kind::offsets, 0, {0, 0, 3, 100, 101, 500, 1000}}};
  for (const auto& op : rt::op_table) {
    if (op.integers_only && std::is_floating_point_v<T>) continue;
    const std::vector<T>& v = std::is_floating_point_v<T> && op.kind == rt::op_kind::prod ? signs : values;
    for (const auto& c : cases) {
      rt::reduce_job job;
      job.input = rt::array_view{rt::dtype_of<T>(), v.data(), n};
      job.op = op.kind;
      job.shape = c.shape;
      job.length = c.length;
      job.segments = c.shape == rt::shape_kind::fixed_segments ? n / c.length : std::int64_t(c.offsets.size()) - 1;
      job.offsets = c.offsets.data();
      if (backend == "cuda" && !rt::unsupported_reason("cuda", job).empty()) continue;
      const auto count = rt::output_count(job);
      const auto type = rt::output_dtype(job);
      const std::size_t size = rt::size_of(type);
      std::vector<std::byte> out(std::size_t(count) * size, std::byte{0xA5});
      const auto r = rt::reduce(job, rt::output_view{type, out.data(), count}, on(backend, 0));
      ASSERT_EQ(r.backend, backend);
      for (std::int64_t i = 0; i < count; ++i) {
        std::int64_t b = 0, e = n;
        if (c.shape == rt::shape_kind::fixed_segments) b = i * c.length, e = b + c.length;
        if (c.shape == rt::shape_kind::window) b = i, e = i + c.length;
        if (c.shape == rt::shape_kind::offsets) b = c.offsets[std::size_t(i)], e = c.offsets[std::size_t(i) + 1];
        const auto want = naive(v, b, e, op.kind);
        ASSERT_EQ(want.size(), size);
        ASSERT_EQ(std::memcmp(out.data() + i * size, want.data(), size), 0)
            << what << " " << op.name << " shape " << int(c.shape) << " output " << i;
      }
    }
  }
}

template <class... T>
void expect_all_types(std::string_view backend, const char* what) {
  (expect_jobs<T>(backend, what), ...);
}

TEST(RuntimeOps, TableAndResultTypes) {
  for (const auto& op : rt::op_table) EXPECT_EQ(rt::parse_op(op.name), op.kind);
  EXPECT_FALSE(rt::parse_op("mean").has_value());
  EXPECT_EQ(rt::result_dtype(rt::op_kind::sum, rt::dtype::int8), rt::dtype::int64);
  EXPECT_EQ(rt::result_dtype(rt::op_kind::prod, rt::dtype::uint16), rt::dtype::uint64);
  EXPECT_EQ(rt::result_dtype(rt::op_kind::sum, rt::dtype::float16), rt::dtype::float16);
  EXPECT_EQ(rt::result_dtype(rt::op_kind::max, rt::dtype::int16), rt::dtype::int16);
  EXPECT_EQ(rt::result_dtype(rt::op_kind::argmax, rt::dtype::float32), rt::dtype::int64);
  EXPECT_EQ(rt::op_names(), "sum | prod | min | max | and | or | xor | argmin | argmax");
}

TEST(RuntimeJobs, EveryDtypeOperatorAndShapeOnTheCpu) {
  expect_all_types<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t,
                   std::uint64_t, float, double>("cpu", "cpu");
}

TEST(RuntimeJobs, TheGpuGivesTheCpusAnswers) {
  if (!gpu_here()) GTEST_SKIP() << "no CUDA GPU on this machine";
  expect_all_types<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t,
                   std::uint64_t, float, double>("cuda", "cuda");
}

TEST(RuntimeJobs, Float16IsWidenedAndRoundedBack) {
  std::vector<rt::float16_bits> h;
  for (float x : {0.5f, 0.25f, -2.0f, 1000.0f}) h.push_back(rt::to_float16(x));
  rt::reduce_job job;
  job.input = rt::array_view{rt::dtype::float16, h.data(), std::int64_t(h.size())};
  rt::float16_bits out{0xffff};
  rt::reduce(job, rt::output_view{rt::dtype::float16, &out, 1}, on("auto", 0));
  EXPECT_EQ(rt::to_float(out), 999.0f);  // 998.75 in float32, to the nearest float16 (ties to even)
}

TEST(RuntimeJobs, BadJobsAreErrors) {
  const std::vector<float> v(10, 1.0f);
  rt::reduce_job job;
  job.input = rt::array_view{rt::dtype::float32, v.data(), 10};
  job.op = rt::op_kind::bit_xor;
  EXPECT_THROW(rt::validate(job), rt::dtype_error);
  job.op = rt::op_kind::sum;
  job.shape = rt::shape_kind::window;
  job.length = 0;
  EXPECT_THROW(rt::validate(job), std::invalid_argument);
  job.shape = rt::shape_kind::fixed_segments;
  job.length = 3, job.segments = 3;
  EXPECT_THROW(rt::validate(job), std::invalid_argument);
  const std::vector<std::int64_t> decreasing{0, 5, 4};
  job.shape = rt::shape_kind::offsets;
  job.segments = 2, job.offsets = decreasing.data();
  try {
    rt::validate(job);
    ADD_FAILURE() << "decreasing offsets were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("offsets[1] = 5 > offsets[2] = 4"), std::string::npos) << e.what();
  }
  job.shape = rt::shape_kind::whole;
  float out = 0;
  EXPECT_THROW(rt::reduce(job, rt::output_view{rt::dtype::float64, &out, 1}), std::invalid_argument);  // wrong type
  if (!gpu_here()) {
    EXPECT_THROW(rt::reduce(job, rt::output_view{rt::dtype::float32, &out, 1}, on("cuda", 0)),
                 rt::unsupported_error);
  }
  EXPECT_THROW(rt::reduce(job, rt::output_view{rt::dtype::float32, &out, 1}, on("cuda", 99)),
               rt::unsupported_error);  // no such device
}

TEST(RuntimeStatistics, MatchesATwoPassReference) {
  const auto v = random_values<double>(100003, seed_for("runtime statistics"));
  for (std::string_view b : {"cpu", "cuda"}) {
    if (b == "cuda" && !gpu_here()) continue;
    rt::any_statistics any;
    rt::statistics(rt::array_view{rt::dtype::float64, v.data(), std::int64_t(v.size())}, any, on(b, 0));
    const auto& s = std::get<multireduce::statistics<double>>(any);
    double mean = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    var /= double(v.size());
    EXPECT_EQ(s.count, std::int64_t(v.size()));
    EXPECT_NEAR(s.mean, mean, 1e-12);
    EXPECT_NEAR(s.var, var, 1e-9 * var);
    EXPECT_EQ(s.min, -20.0);
    EXPECT_EQ(s.max, 20.0);
  }
}

TEST(RuntimeStatistics, AsBytesAreTheStruct) {
  const std::vector<std::int32_t> v{5, -3, 9, 9, -3, 0, 7};
  const rt::array_view in{rt::dtype::int32, v.data(), std::int64_t(v.size())};
  ASSERT_EQ(rt::statistics_bytes(rt::dtype::int32), sizeof(multireduce::statistics<std::int32_t>));
  ASSERT_EQ(rt::statistics_bytes(rt::dtype::float16), sizeof(multireduce::statistics<float>));
  std::vector<std::uint8_t> bytes(rt::statistics_bytes(rt::dtype::int32), 0xA5);
  rt::statistics(in, rt::output_view{rt::dtype::uint8, bytes.data(), std::int64_t(bytes.size())}, on("cpu", 0));
  multireduce::statistics<std::int32_t> s{};
  std::memcpy(&s, bytes.data(), sizeof s);
  EXPECT_EQ(s.count, 7);
  EXPECT_EQ(s.sum, 24);
  EXPECT_EQ(s.min, -3);
  EXPECT_EQ(s.argmin, 1);
  EXPECT_EQ(s.max, 9);
  EXPECT_EQ(s.argmax, 2);
  EXPECT_DOUBLE_EQ(s.l1, 36.0);
  std::vector<std::uint8_t> small(8);
  EXPECT_THROW(rt::statistics(in, rt::output_view{rt::dtype::uint8, small.data(), 8}), std::invalid_argument);
}

TEST(RuntimeKnn, BothBackendsGiveTheBruteForce) {
  const std::uint64_t seed = seed_for("runtime knn");
  const int bytes = 32, k = 3;
  const auto q = mr_test::random_descriptors(300, bytes, seed, true), t = mr_test::random_descriptors(700, bytes, seed + 1, true);
  std::vector<std::int32_t> want_idx, want_dist, want_reverse, unused;
  mr_test::reference_knn(q, t, bytes, k, want_idx, want_dist);
  mr_test::reference_knn(t, q, bytes, 1, want_reverse, unused);
  for (std::string_view b : {"cpu", "cuda"}) {
    if (b == "cuda" && !gpu_here()) continue;
    for (std::int64_t chunk : {0, 100}) {
      rt::knn_job job{{q.data(), 300, t.data(), 700, bytes, k}, true, chunk};
      rt::knn_result found;
      rt::knn(job, found, on(b, 0));
      EXPECT_EQ(found.idx, want_idx);
      EXPECT_EQ(found.dist, want_dist);
      EXPECT_EQ(found.reverse_nearest, want_reverse);
    }
  }
}

TEST(RuntimeThreads, ConcurrentCallsGetTheirOwnAnswers) {
  // Each thread reduces its own array, on the GPU where there is one: no state is shared.
  std::vector<std::thread> threads;
  std::vector<int> wrong(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t, &wrong] {
      const std::vector<std::int32_t> v(100000 + t, t);
      for (int round = 0; round < 20; ++round) {
        rt::reduce_job job;
        job.input = rt::array_view{rt::dtype::int32, v.data(), std::int64_t(v.size())};
        std::int64_t out = -1;
        rt::reduce(job, rt::output_view{rt::dtype::int64, &out, 1});
        wrong[std::size_t(t)] += out != std::int64_t(t) * std::int64_t(v.size());
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, std::vector<int>(8, 0));
}

// ---- arrays read in pieces, outputs as they come -----------------------------------------------------

/// A source that serves pieces of at most `piece` elements, copied into a buffer of its own (so
/// that reading outside the piece is caught by ASan), and records where each read started.
class small_pieces final : public rt::array_source {
 public:
  small_pieces(const rt::array_view& a, std::int64_t piece)
      : array_source(a.type, a.count), data_(static_cast<const std::byte*>(a.data)), piece_(piece) {}
  std::int64_t piece_elements() const override { return piece_; }
  const void* read(std::int64_t first, std::int64_t n) override {
    EXPECT_GE(first, last_) << "pieces go front to back";
    EXPECT_LE(first + n, count());
    last_ = first;
    reads.push_back(first + n);
    const std::size_t size = rt::size_of(type());
    buffer_.assign(data_ + first * std::int64_t(size), data_ + (first + n) * std::int64_t(size));
    return buffer_.data();
  }
  std::vector<std::int64_t> reads;  // where each piece ended

 private:
  const std::byte* data_;
  std::int64_t piece_, last_ = 0;
  std::vector<std::byte> buffer_;
};

/// A sink that keeps the outputs and how many pieces had been read when each batch came.
class recording_sink final : public rt::output_sink {
 public:
  recording_sink(rt::dtype type, const small_pieces* in) : size_(rt::size_of(type)), in_(in) {}
  void write(const void* values, std::int64_t n) override {
    const auto* p = static_cast<const std::byte*>(values);
    bytes.insert(bytes.end(), p, p + n * std::int64_t(size_));
    pieces_read_at_write.push_back(in_ ? in_->reads.size() : 0);
  }
  std::vector<std::byte> bytes;
  std::vector<std::size_t> pieces_read_at_write;

 private:
  std::size_t size_;
  const small_pieces* in_;
};

/// The job on the array in memory, and on the same array read `piece` elements at a time: the
/// same outputs, bit for bit.
template <class T>
void expect_pieces_give_the_whole_answer(const std::vector<T>& v, rt::reduce_job job, std::int64_t piece,
                                         const std::string& what) {
  job.input = rt::array_view{rt::dtype_of<T>(), v.data(), std::int64_t(v.size())};
  const auto type = rt::output_dtype(job);
  const auto count = rt::output_count(job);
  std::vector<std::byte> whole(std::size_t(count) * rt::size_of(type), std::byte{0xA5});
  rt::reduce(job, rt::output_view{type, whole.data(), count}, on("cpu"));
  small_pieces in(job.input, piece);
  recording_sink out(type, &in);
  rt::execution exec = on("cpu");
  std::int64_t last_done = 0;
  exec.progress = [&](std::int64_t done, std::int64_t total) {
    EXPECT_EQ(total, std::int64_t(v.size()));
    EXPECT_GE(done, last_done);
    last_done = done;
  };
  rt::reduce(job, in, out, exec);
  ASSERT_EQ(out.bytes.size(), whole.size()) << what;
  EXPECT_EQ(std::memcmp(out.bytes.data(), whole.data(), whole.size()), 0) << what << ", pieces of " << piece;
  if (job.shape != rt::shape_kind::offsets) {
    EXPECT_EQ(last_done, std::int64_t(v.size())) << what << ": progress to the end";
  }
}

TEST(RuntimeSources, PiecesGiveTheWholeAnswerForEveryShape) {
  const auto f = random_values<float>(10007, seed_for("runtime pieces float"));
  const auto i = random_values<std::int32_t>(10007, seed_for("runtime pieces int32"));
  const std::vector<std::int64_t> offsets{3, 3, 100, 5000, 5001, 9999};
  for (std::int64_t piece : {128, 1000, 4096, 20000}) {
    for (const rt::op_kind op : {rt::op_kind::sum, rt::op_kind::max, rt::op_kind::argmin, rt::op_kind::prod}) {
      const auto& data = i;  // (integer sums and products wrap exactly in any order)
      rt::reduce_job job;
      job.op = op;
      expect_pieces_give_the_whole_answer(data, job, piece, "whole int32");
      if (op != rt::op_kind::prod) expect_pieces_give_the_whole_answer(f, job, piece, "whole float");
      job.shape = rt::shape_kind::window;
      for (std::int64_t w : {1, 3, 33, 777}) {
        job.length = w;
        expect_pieces_give_the_whole_answer(data, job, piece, "window " + std::to_string(w));
      }
      job.shape = rt::shape_kind::offsets;
      job.segments = std::int64_t(offsets.size()) - 1;
      job.offsets = offsets.data();
      expect_pieces_give_the_whole_answer(f, job, piece, "offsets float");
      expect_pieces_give_the_whole_answer(data, job, piece, "offsets int32");
      const std::int64_t shape[3] = {10007, 1, 1};
      for (std::int64_t axis : {0, 1, 2}) {
        const rt::array_view view{rt::dtype::float32, f.data(), 10007};
        job = rt::axis_job(view, op, shape, axis);
        if (op != rt::op_kind::prod) expect_pieces_give_the_whole_answer(f, job, piece, "axis " + std::to_string(axis));
      }
    }
  }
}

TEST(RuntimeSources, WindowOutputsComeBeforeTheInputEnds) {
  const auto v = random_values<float>(100000, seed_for("runtime window stream"));
  rt::reduce_job job;
  job.input = rt::array_view{rt::dtype::float32, v.data(), std::int64_t(v.size())};
  job.op = rt::op_kind::max;
  job.shape = rt::shape_kind::window;
  job.length = 100;
  small_pieces in(job.input, 10000);
  recording_sink out(rt::dtype::float32, &in);
  rt::reduce(job, in, out, on("cpu"));
  ASSERT_GT(out.pieces_read_at_write.size(), 5u);
  EXPECT_EQ(out.pieces_read_at_write.front(), 1u) << "the first piece's windows are written before the second is read";
}

TEST(RuntimeAxis, EveryAxisOfAThreeDimensionalArray) {
  // (o, k, i) = (3, 5, 4), values chosen so that sums are exact; compared with loops written here.
  const std::int64_t shape[3] = {3, 5, 4};
  std::vector<std::int32_t> v(60);
  for (int x = 0; x < 60; ++x) v[std::size_t(x)] = (x * 37) % 23 - 11;
  const auto at = [&](std::int64_t a, std::int64_t b, std::int64_t c) { return v[std::size_t((a * 5 + b) * 4 + c)]; };
  for (std::int64_t axis = -3; axis < 3; ++axis) {
    const std::int64_t a = axis < 0 ? axis + 3 : axis;
    for (const rt::op_kind op : {rt::op_kind::sum, rt::op_kind::min, rt::op_kind::argmax}) {
      const rt::reduce_job job = rt::axis_job(rt::array_view{rt::dtype::int32, v.data(), 60}, op, shape, axis);
      const auto count = rt::output_count(job);
      ASSERT_EQ(count, 60 / shape[a]);
      std::vector<std::int64_t> out(std::size_t(count), -99);  // sum: int64; min: int32 (read below); argmax: int64
      std::vector<std::int32_t> out32(std::size_t(count), -99);
      if (op == rt::op_kind::min) rt::reduce(job, rt::output_view{rt::dtype::int32, out32.data(), count}, on("cpu"));
      else rt::reduce(job, rt::output_view{rt::dtype::int64, out.data(), count}, on("cpu"));
      std::int64_t index = 0;  // the kept axes, in order
      for (std::int64_t p = 0; p < (a == 0 ? 5 : 3); ++p)
        for (std::int64_t q = 0; q < (a == 2 ? 5 : 4); ++q, ++index) {
          std::int64_t sum = 0, best_at = 0;
          std::int32_t low = INT32_MAX, high = INT32_MIN;
          for (std::int64_t k = 0; k < shape[a]; ++k) {
            const std::int32_t x = a == 0 ? at(k, p, q) : a == 1 ? at(p, k, q) : at(p, q, k);
            sum += x;
            low = std::min(low, x);
            if (x > high) high = x, best_at = k;
          }
          const std::string where = "axis " + std::to_string(axis) + " output " + std::to_string(index);
          const std::int64_t got = op == rt::op_kind::min ? out32[std::size_t(index)] : out[std::size_t(index)];
          const std::int64_t want = op == rt::op_kind::sum ? sum : op == rt::op_kind::min ? low : best_at;
          EXPECT_EQ(got, want) << where << " op " << rt::name_of(op);
        }
    }
  }
  EXPECT_THROW(rt::axis_job(rt::array_view{rt::dtype::int32, v.data(), 60}, rt::op_kind::sum, shape, 3),
               std::invalid_argument);
  EXPECT_THROW(rt::axis_job(rt::array_view{rt::dtype::int32, v.data(), 60}, rt::op_kind::sum, shape, -4),
               std::invalid_argument);
  EXPECT_THROW(rt::axis_job(rt::array_view{rt::dtype::int32, v.data(), 59}, rt::op_kind::sum, shape, 0),
               std::invalid_argument);
}

TEST(RuntimePairwise, ParallelAndPiecewiseSumsAreTheSerialOnesBitForBit) {
  const auto seed = seed_for("runtime pairwise");
  std::mt19937_64 g(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(3000017);
  for (auto& x : v) x = normal(g) * 1000.0f;
  namespace pw = multireduce::runtime::pairwise;
  for (std::int64_t n : {0, 1, 7, 8, 127, 128, 129, 1000, 65536, 1000003, 3000017}) {
    const float serial = pw::serial<float>(v.data(), n);
    EXPECT_EQ(pw::parallel<float>(v.data(), n), serial) << n;
    for (std::int64_t piece : {128, 4096, 100000}) {
      const float pieces = pw::over_pieces<float>(0, n, piece, [&](std::int64_t first, std::int64_t count) {
        return pw::serial<float>(v.data() + first, count);
      });
      EXPECT_EQ(pieces, serial) << n << " in pieces of " << piece;
    }
  }
  // Pairwise loses far less than one sum after another: [1e8] + 1000 ones (exact: 100001000).
  std::vector<float> ones(1001, 1.0f);
  ones[0] = 1e8f;
  EXPECT_EQ(pw::serial<float>(ones.data(), 1001), 100000992.0f);  // what NumPy gives
  float sequential = 0;
  for (float x : ones) sequential += x;
  EXPECT_EQ(sequential, 1e8f);  // every 1 is lost
}

TEST(RuntimeStatistics, Int64SumsWrapAsNumPysDo) {
  // Sums past 2^63 wrap (unsigned arithmetic inside: no signed overflow, which UBSan would report).
  // Pieces of 128 elements each sum to INT64_MAX / 2: merging the third overflows int64.
  std::vector<std::int64_t> v(512, INT64_MAX / 256);
  v[7] = INT64_MIN;
  v.push_back(INT64_MAX);
  std::uint64_t want = 0;
  for (auto x : v) want += static_cast<std::uint64_t>(x);
  for (std::string_view b : {"cpu", "cuda"}) {
    if (b == "cuda" && !gpu_here()) continue;
    rt::any_statistics any;
    rt::statistics(rt::array_view{rt::dtype::int64, v.data(), std::int64_t(v.size())}, any, on(b));
    EXPECT_EQ(static_cast<std::uint64_t>(std::get<multireduce::statistics<std::int64_t>>(any).sum), want);
    // Merged from pieces (the CPU merges statistics of pieces in order).
    small_pieces in(rt::array_view{rt::dtype::int64, v.data(), std::int64_t(v.size())}, 128);
    rt::statistics(in, any, on(b));
    EXPECT_EQ(static_cast<std::uint64_t>(std::get<multireduce::statistics<std::int64_t>>(any).sum), want);
  }
}

TEST(RuntimeTrace, ThePapersFigureOne) {
  const std::string t = rt::trace_table({multireduce::multi_reduce_algorithm::select_merge, 4, 8});
  EXPECT_NE(t.find("7 shuffles, 7 operator applications, 3 selects"), std::string::npos) << t;
  EXPECT_THROW(rt::trace_table({multireduce::multi_reduce_algorithm::swap, 4, 6}), std::invalid_argument);
}

}  // namespace
