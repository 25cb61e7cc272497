// runtime/cuda/offsets.cu -- the check of offsets in GPU memory (offsets.cuh).
#include "offsets.cuh"

#include <algorithm>

#include "../bad_offset.hpp"

namespace multireduce::runtime::cuda_backend_detail {
namespace {

/// Marks in *first_bad the smallest s whose offset breaks the rules: o[0] < 0, o[s] < o[s - 1], or
/// o[segments] > n.
__global__ void find_bad_offset_kernel(const std::int64_t* o, std::int64_t segments, std::int64_t n,
                                       unsigned long long* first_bad) {
  for (std::int64_t s = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s <= segments;
       s += std::int64_t(gridDim.x) * blockDim.x) {
    const bool bad = (s == 0 ? o[0] < 0 : o[s] < o[s - 1]) || (s == segments && o[s] > n);
    if (bad) atomicMin(first_bad, static_cast<unsigned long long>(s));
  }
}

}  // namespace

void read_offsets_verdict(const std::int64_t* o, std::int64_t n, unsigned long long* mark,
                          unsigned long long* host_word, cudaStream_t stream) {
  mc::check(cudaMemcpyAsync(host_word, mark, sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream),
            "checking the offsets");
  mc::check(cudaStreamSynchronize(stream), "checking the offsets");
  const unsigned long long bad = *host_word;
  if (bad == ~0ull) return;
  mc::check(cudaMemsetAsync(mark, 0xff, sizeof(unsigned long long), stream), "checking the offsets");
  const auto s = static_cast<std::int64_t>(bad);
  std::int64_t pair[2] = {0, 0};  // o[s - 1], o[s]
  mc::check(cudaMemcpy(pair + (s == 0), o + s - (s > 0), sizeof(std::int64_t) * (s == 0 ? 1 : 2), cudaMemcpyDeviceToHost),
            "reading the offsets");
  throw_bad_offset(s, pair[0], pair[1], n);
}

void check_offsets_on_gpu(const std::int64_t* o, std::int64_t segments, std::int64_t n, stream_state& state,
                          cudaStream_t stream) {
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((segments + threads) / threads, 4096));
  mc::check(mc::launch(find_bad_offset_kernel, blocks, threads, 0, stream, o, segments, n, state.bad_offset.data()),
            "checking the offsets");
  read_offsets_verdict(o, n, state.bad_offset.data(), state.bad_offset_host.data(), stream);
}

}  // namespace multireduce::runtime::cuda_backend_detail
