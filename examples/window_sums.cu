// The README's CUDA example: each warp sums 32 consecutive windows of 32 floats.
#include <cuda_runtime.h>
#include <multireduce/cuda/detail/device_buffer.cuh>
#include <multireduce/cuda/detail/launch.cuh>
#include <multireduce/cuda_lane.cuh>
#include <multireduce/multireduce.hpp>

#include <cstdio>
#include <vector>

using namespace multireduce;
namespace mc = multireduce::cuda;

__global__ void window_sums(const float* in, float* out) {
  cuda_lane lane;
  array<float, 32> v;
  MULTIREDUCE_UNROLL
  for (int w = 0; w < 32; ++w) v[w] = in[w + lane.id()];
  out[lane.id()] = warp_multi_reduce<32, 32, multi_reduce_algorithm::swap>(lane, v, sum{})[0];
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA GPU: skipped\n");
    return 0;
  }
  std::vector<float> in(64), out(32, -1.0f);
  for (int i = 0; i < 64; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(i % 7);
  const auto d_in = mc::to_device(in);  // owning device buffers; errors throw cuda::error
  mc::device_buffer<float> d_out(32);
  const bool ok = mc::launch(window_sums, 1, 32, 0, nullptr, d_in.data(), d_out.data()) == cudaSuccess;
  out = d_out.download(32);
  int wrong = 0;
  for (int w = 0; w < 32; ++w) {
    float expected = 0;
    for (int l = 0; l < 32; ++l) expected += in[static_cast<std::size_t>(w + l)];
    wrong += out[static_cast<std::size_t>(w)] != expected;
  }
  std::printf("window sums on the GPU: %d wrong\n", wrong);
  return ok && wrong == 0 ? 0 : 1;
}
