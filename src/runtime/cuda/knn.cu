// runtime/cuda/knn.cu -- the matcher's search on the GPU (descriptors of up to match_max_bytes),
// in one form: queries, training rows and the k-NN lists in GPU memory, queued on the caller's
// stream. Host descriptors are the same search with the sets uploaded and the lists downloaded; a
// training set that does not fit in the free GPU memory (or a train_chunk asked for) is streamed
// through the GPU a chunk at a time instead (knn_hamming_streamed).
#include <algorithm>
#include <utility>
#include <vector>

#include <multireduce/match/cuda.cuh>

#include "context.cuh"
#include "devices.cuh"
#include "jobs.cuh"

namespace multireduce::runtime::cuda_backend_detail {
namespace {

/// The search of `queries` rows against `trains` rows, everything in GPU memory, queued.
void knn_queued(const std::uint8_t* query, std::int64_t queries, const std::uint8_t* train, std::int64_t trains,
                int bytes, int k, std::int32_t* idx, std::int32_t* dist, cudaStream_t stream) {
  run_queued("matching", stream, [&](void* t, std::size_t& b) {
    return mc::knn_hamming(t, b, query, queries, train, trains, bytes, k, idx, dist, mc::match_path::automatic, stream);
  });
}

/// `count` host bytes in a new device buffer.
mc::device_buffer<std::uint8_t> uploaded(const std::uint8_t* host, std::size_t count, const char* what) {
  mc::device_buffer<std::uint8_t> d{count};
  mc::check(cudaMemcpy(d.data(), host, count, cudaMemcpyHostToDevice), what);
  return d;
}

}  // namespace

void knn_arrays(const knn_device_job& job, const execution& exec, report& r) {
  translating_errors("matching", [&] {
    knn_queued(job.query, job.queries, job.train, job.trains, job.bytes, job.k, job.idx, job.dist, stream_of(exec));
  });
  r.bytes_read = (job.queries + job.trains) * job.bytes;
  r.bytes_written = 2 * job.queries * job.k * 4;
}

namespace {

/// The search of a host job on one GPU (exec's first device, current).
void knn_one_gpu(const knn_job& job, knn_result& out, const execution& exec, report& r) {
  translating_errors("matching", [&] {
    const cudaStream_t stream = stream_of(exec);
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
    const auto dq = uploaded(job.query, std::size_t(nq) * bytes, "uploading the queries");
    mc::device_buffer<std::int32_t> idx{std::size_t(nq) * k}, dist{std::size_t(nq) * k};
    mc::event_timer timer(stream);
    if (!streamed) {
      const auto dt = uploaded(job.train, std::size_t(nt) * bytes, "uploading the training set");
      timer.start();  // the searches alone: the copies are not the matcher's time
      knn_queued(dq.data(), nq, dt.data(), nt, bytes, k, idx.data(), dist.data(), stream);
      if (job.reverse) {
        mc::device_buffer<std::int32_t> nearest{std::size_t(nt)}, nearest_dist{std::size_t(nt)};
        knn_queued(dt.data(), nt, dq.data(), nq, bytes, 1, nearest.data(), nearest_dist.data(), stream);
        out.reverse_nearest = nearest.download(std::size_t(nt));
      }
      r.seconds = timer.stop();
      out.device_bytes = (nq + nt) * bytes + 2 * nq * k * 4 + (job.reverse ? 2 * nt * 4 : 0) +
                         std::int64_t(std::max(temp, reverse_temp));
    } else {
      // Only the queries and the outputs stay on the GPU; the training rows go through it a chunk
      // at a time, and the cross-check's reverse search takes them as queries, a chunk at a time,
      // against the queries on the GPU.
      mc::workspace ws(stream);
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
          knn_queued(rows.data(), count, dq.data(), nq, bytes, 1, nearest.data(), nearest_dist.data(), stream);
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

/// The search with the training set in shards of about equal rows, one per entry of the device set,
/// each on its own thread, GPU and stream; every query's lists merged exactly: by distance, ties by
/// the lower (global) training index, which a stable sort gives since the shards come in order. The
/// cross-check's reverse nearest query of each training row is its shard's.
void knn_sharded(const knn_job& job, knn_result& out, const execution& exec, report& r) {
  const std::size_t shards = exec.devices.size();
  const std::int64_t nq = job.queries, nt = job.trains;
  const int k = job.k;
  std::vector<std::int64_t> first(shards + 1);
  for (std::size_t s = 0; s <= shards; ++s) first[s] = nt * std::int64_t(s) / std::int64_t(shards);
  std::vector<knn_result> part(shards);
  std::vector<report> per_device(shards);
  device_threads threads(exec.devices, [&](int slot, cudaStream_t stream) {
    const auto s = std::size_t(slot);
    knn_job shard = job;
    shard.train = job.train + first[s] * job.bytes;
    shard.trains = first[s + 1] - first[s];
    execution on_one;
    on_one.backend = "cuda";
    on_one.devices = device_set{{exec.devices.ordinals[s]}};
    on_one.stream = stream;
    knn_one_gpu(shard, part[s], on_one, per_device[s]);
  });
  threads.wait();

  out.idx.assign(std::size_t(nq) * k, -1);
  out.dist.assign(std::size_t(nq) * k, -1);
  std::vector<std::pair<std::int32_t, std::int32_t>> candidates;  // (distance, global index)
  for (std::int64_t q = 0; q < nq; ++q) {
    candidates.clear();
    for (std::size_t s = 0; s < shards; ++s)
      for (int j = 0; j < k; ++j) {
        const std::size_t at = std::size_t(q) * k + std::size_t(j);
        if (part[s].idx[at] >= 0)
          candidates.emplace_back(part[s].dist[at], static_cast<std::int32_t>(part[s].idx[at] + first[s]));
      }
    std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t j = 0; j < candidates.size() && j < std::size_t(k); ++j) {
      out.idx[std::size_t(q) * k + j] = candidates[j].second;
      out.dist[std::size_t(q) * k + j] = candidates[j].first;
    }
  }
  if (job.reverse) {
    out.reverse_nearest.clear();
    for (const knn_result& p : part) out.reverse_nearest.insert(out.reverse_nearest.end(), p.reverse_nearest.begin(),
                                                                p.reverse_nearest.end());
  }
  for (const knn_result& p : part) {
    out.streamed_chunk = std::max(out.streamed_chunk, p.streamed_chunk);
    out.device_bytes += p.device_bytes;
  }
  merge_device_reports(r, per_device, exec.devices);
  r.bytes_read = (nq * std::int64_t(shards) + nt) * job.bytes;
  r.bytes_written = 2 * nq * k * 4;
}

}  // namespace

void knn_host(const knn_job& job, knn_result& out, const execution& exec, report& r) {
  if (exec.devices.size() > 1) return knn_sharded(job, out, exec, r);
  knn_one_gpu(job, out, exec, r);
}

}  // namespace multireduce::runtime::cuda_backend_detail