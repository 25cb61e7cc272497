// runtime/opencl/knn.cpp -- the matcher's search on an OpenCL device (knn.cl: every width of
// descriptor): host descriptors uploaded whole and the k-NN lists read back, or every array in an
// OpenCL context's memory, queued on the caller's queue.
#include <cstdint>
#include <vector>

#include <multireduce/match/match.hpp>

#include "context.hpp"
#include "jobs.hpp"

namespace multireduce::runtime::opencl_backend_detail {

/// k nearest training rows of each query row, the sets already in device memory.
void knn_on_device(device& d, const cl::Buffer& query, std::int64_t query_first, std::int64_t queries,
                   const cl::Buffer& train, std::int64_t train_first, std::int64_t trains, int bytes, int k,
                   std::vector<std::int32_t>& idx, std::vector<std::int32_t>& dist, job_clock& clock) {
  idx.assign(std::size_t(queries * k), -1);
  dist.assign(idx.size(), -1);
  if (queries == 0) return;
  cl::Buffer idx_d = allocate(d, idx.size() * 4, "the neighbours"), dist_d = allocate(d, idx.size() * 4, "the distances");
  events ev;
  knn_hamming(d, query, query_first, queries, train, train_first, trains, bytes, k, idx_d, dist_d, &ev);
  clock.add(ev);
  d.queue.enqueueReadBuffer(idx_d, CL_TRUE, 0, idx.size() * 4, idx.data());
  d.queue.enqueueReadBuffer(dist_d, CL_TRUE, 0, dist.size() * 4, dist.data());
}

void knn_host(const knn_job& job, knn_result& out, const execution& exec, report& r) {
  check_match_arguments(job.queries, job.trains, job.bytes, job.k);
  const int ordinal = exec.devices.first();
  on_device(ordinal, "the k-NN search", [&](device& d) {
    job_clock clock{d};
    const std::size_t qb = std::size_t(job.queries) * std::size_t(job.bytes), tb = std::size_t(job.trains) * std::size_t(job.bytes);
    cl::Buffer query = allocate(d, qb, "the queries"), train = allocate(d, tb, "the training set");
    upload(d, query, job.query, qb);
    upload(d, train, job.train, tb);
    knn_on_device(d, query, 0, job.queries, train, 0, job.trains, job.bytes, job.k, out.idx, out.dist, clock);
    if (job.reverse) {
      std::vector<std::int32_t> reverse_dist;
      knn_on_device(d, train, 0, job.trains, query, 0, job.queries, job.bytes, 1, out.reverse_nearest, reverse_dist,
                    clock);
    }
    if (exec.progress) exec.progress(job.queries * job.trains, job.queries * job.trains);
    clock.report_to(r, d, ordinal);
  });
  r.bytes_read = (job.queries + job.trains) * job.bytes;
  r.bytes_written = 2 * job.queries * job.k * 4;
}

void knn_arrays(const knn_device_job& job, const execution& exec, report& r) {
  queue_device q = on_queue(exec.stream);
  device& d = q.d;
  const std::size_t rows = std::size_t(job.queries) * std::size_t(job.k) * 4, bytes = std::size_t(job.bytes);
  try {
    const cl::Buffer query = buffer_at(d, job.query, std::size_t(job.queries) * bytes, "the queries");
    const cl::Buffer train = buffer_at(d, job.train, std::size_t(job.trains) * bytes, "the training set");
    const cl::Buffer idx = buffer_at(d, job.idx, rows, "the neighbours' output");
    const cl::Buffer dist = buffer_at(d, job.dist, rows, "the distances' output");
    if (job.queries > 0) knn_hamming(d, query, 0, job.queries, train, 0, job.trains, job.bytes, job.k, idx, dist);
  } catch (const cl::Error& e) {
    fail(e, "the k-NN search on " + d.name);
  }
  r.device = q.ordinal;
  r.device_name = d.name;
  r.bytes_read = (job.queries + job.trains) * job.bytes;
  r.bytes_written = 2 * job.queries * job.k * 4;
}

}  // namespace multireduce::runtime::opencl_backend_detail
