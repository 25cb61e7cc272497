// runtime/cuda/collection.cu -- the collection matcher on the GPU (match/collection_cuda.cuh):
// the rows in host memory (uploaded whole, or in image blocks when they do not fit the budget)
// or already in GPU memory, every pair's kept matches handed out as each round is read back.
#include <chrono>

#include <multireduce/match/collection_cuda.cuh>

#include "context.cuh"
#include "jobs.cuh"

namespace multireduce::runtime::cuda_backend_detail {

void collection_on_gpu(const collection_job& job, const pair_matches_callback& done, const execution& exec, report& r) {
  translating_errors("matching a collection", [&] {
    mc::workspace ws(stream_of(exec));
    mc::collection_options options;
    options.memory_budget = job.memory_budget;
    const auto start = std::chrono::steady_clock::now();
    mc::match_collection(ws, job.collection, job.pairs, job.k, job.rule, done, options);
    // The wall time: the copies, the searches and the read-back overlap, and the call waits for all.
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

}  // namespace multireduce::runtime::cuda_backend_detail
