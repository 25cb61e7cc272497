// Uses the installed headers from a .cu file (C++20 must reach nvcc through the package): the warp
// layer in a kernel and the device-wide reduce. Without a GPU it only compiles, and says so.
#include <multireduce/cuda.cuh>
#include <multireduce/multireduce.hpp>

#include <cstdio>
#include <vector>

__global__ void lane_sums(int* out) {
  multireduce::cuda_lane lane;
  out[lane.id()] = multireduce::warp_reduce<32>(lane, lane.id(), multireduce::sum{});
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("consumer_cuda: built; no GPU here to run it");
    return 0;
  }
  std::vector<float> x(100000, 0.5f);
  const auto d = multireduce::cuda::to_device(x);
  multireduce::cuda::workspace ws;
  const float total = ws.reduce(d.data(), std::int64_t(x.size()), multireduce::sum{}, 0.0f);
  multireduce::cuda::device_buffer<int> out(32);
  multireduce::cuda::check(multireduce::cuda::launch(lane_sums, 1, 32, 0, nullptr, out.data()), "lane_sums");
  const int lane_sum = out.download(1)[0];
  std::printf("consumer_cuda: sum %g, warp sum %d\n", total, lane_sum);
  return total == 50000.0f && lane_sum == 31 * 32 / 2 ? 0 : 1;
}
