// The moved CUDA include paths of 0.1 still compile (with a deprecation message).
#include <multireduce/cuda/common.cuh>
#include <multireduce/cuda/match.cuh>

void f(const float* in, float* out, std::int64_t n) {
  multireduce::cuda::workspace ws;
  ws.reduce_async(in, n, out, multireduce::sum{}, 0.0f);
  (void)multireduce::cuda::match_max_bytes;
}
