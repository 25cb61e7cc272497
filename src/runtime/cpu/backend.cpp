// runtime/cpu/backend.cpp -- the backend "cpu": the runtime's jobs on the CPU, all cores with
// OpenMP, host memory only: reductions (reduce.cpp), statistics and the matcher's search here.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <multireduce/cpu.hpp>
#include <multireduce/match/cpu.hpp>

#include "../backend.hpp"
#include "../pairwise.hpp"
#include "../pieces.hpp"
#include "reading.hpp"

namespace multireduce::runtime {

namespace cpu_backend_detail {
void reduce_on_cpu(const reduce_job& job, array_source& in, output_sink& out, const execution& exec);
}

namespace {

using namespace cpu_backend_detail;

any_statistics statistics_on_cpu(array_source& in, const execution& exec) {
  const progress_report progress{exec, in.count()};
  return visit(in.type(), [&](auto element) -> any_statistics {
    using T = decltype(element);
    using E = element_t<T>;
    const std::int64_t n = in.count(), cap = piece_cap<T>(in);
    element_reader<T> reader(in);
    if (n <= cap) {  // one piece: exactly as cpu::statistics computes it
      const auto s = cpu::statistics(reader.read(0, n), n);
      progress(n);
      return s;
    }
    statistics_accumulator<E> acc;  // pieces merge in order (Chan et al.)
    for (std::int64_t first = 0; first < n; first += cap) {
      const std::int64_t count = std::min(cap, n - first);
      const auto s = cpu::statistics(reader.read(first, count), count);
      acc = statistics_accumulator<E>::merge(acc, statistics_accumulator<E>::of_result(s, first));
      progress(first + count);
    }
    return acc.result();
  });
}

void knn_on_cpu(const knn_job& job, knn_result& out, const execution& exec) {
  // Queries in blocks, so that progress can be told between them.
  constexpr std::int64_t block = 4096;
  const std::int64_t total = job.queries * job.trains * (job.reverse ? 2 : 1);
  const progress_report progress{exec, total};
  out.idx.assign(std::size_t(job.queries) * std::size_t(job.k), 0);
  out.dist.assign(out.idx.size(), 0);
  for (std::int64_t q = 0; q < job.queries; q += block) {
    const std::int64_t count = std::min(block, job.queries - q);
    cpu::knn_hamming(job.query + q * job.bytes, count, job.train, job.trains, job.bytes, job.k,
                     out.idx.data() + q * job.k, out.dist.data() + q * job.k);
    progress((q + count) * job.trains);
  }
  if (job.reverse) {
    out.reverse_nearest.assign(std::size_t(job.trains), 0);
    std::vector<std::int32_t> reverse_dist(out.reverse_nearest.size());
    for (std::int64_t t = 0; t < job.trains; t += block) {
      const std::int64_t count = std::min(block, job.trains - t);
      cpu::knn_hamming(job.train + t * job.bytes, count, job.query, job.queries, job.bytes, 1,
                       out.reverse_nearest.data() + t, reverse_dist.data() + t);
      progress(job.queries * job.trains + (t + count) * job.queries);
    }
  }
}

/// Runs `job` and records its wall time and the threads in the report.
template <class F>
void timed(report& r, F&& job) {
  const auto start = std::chrono::steady_clock::now();
  job();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.cpu_threads = cpu::max_threads();
}

/// The backend "cpu": every job, host memory only, all cores (OpenMP).
class cpu_runtime_backend final : public backend {
 public:
  std::string_view name() const override { return "cpu"; }
  std::string_view summary() const override { return "all CPU cores (OpenMP), NumPy's values"; }
  std::string_view noun() const override { return "the CPU"; }
  int device_count() const override { return 1; }
  /// Host memory, as DLPack names it: kDLCPU, and kDLCUDAHost (pinned host memory).
  std::span<const int> dlpack_device_types() const override {
    static constexpr int host[] = {1, 3};
    return host;
  }
  std::string describe_device(int) const override {
    const int threads = cpu::max_threads();
    return std::to_string(threads) + " CPU thread" + (threads == 1 ? "" : "s");
  }
  refusal unsupported(const reduce_job&, const device_set&) const override { return {}; }
  refusal unsupported_statistics(dtype, const device_set&) const override { return {}; }
  refusal unsupported_knn(int, const device_set&) const override { return {}; }

  void reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec,
              report& r) const override {
    timed(r, [&] { reduce_on_cpu(job, in, out, exec); });
    r.bytes_read = in.count() * std::int64_t(size_of(in.type())) +
                   (job.shape == shape_kind::offsets ? (job.segments + 1) * 8 : 0);
  }
  void statistics(array_source& in, any_statistics& out, const execution& exec, report& r) const override {
    timed(r, [&] { out = statistics_on_cpu(in, exec); });
    r.bytes_read = in.count() * std::int64_t(size_of(in.type()));
  }
  void knn(const knn_job& job, knn_result& out, const execution& exec, report& r) const override {
    timed(r, [&] { knn_on_cpu(job, out, exec); });
    r.bytes_read = (job.queries + job.trains) * job.bytes;
    r.bytes_written = 2 * job.queries * job.k * 4;
  }
  void match_collection(const collection_job& job, const pair_matches_callback& done, const execution&,
                        report& r) const override {
    if (!job.where.is_host()) throw std::invalid_argument("the CPU backend matches collections in host memory");
    timed(r, [&] { cpu::match_collection(job.collection, job.pairs, job.k, job.rule, done); });
  }
  using backend::knn;
  using backend::reduce;
  using backend::statistics;
};

}  // namespace

const backend& cpu_backend() {
  static const cpu_runtime_backend the_backend;
  return the_backend;
}

}  // namespace multireduce::runtime
