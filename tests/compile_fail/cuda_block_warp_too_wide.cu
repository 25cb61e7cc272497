// A block of 64-lane warps on a CUDA lane: a compile error with a message.
#include <multireduce/cuda_lane.cuh>
#include <multireduce/multireduce.hpp>
__global__ void k(int* out) {
  __shared__ multireduce::block_reduce_storage<int, 128, 64> storage;
  multireduce::cuda_lane lane;
  *out = multireduce::block_reduce<128, 64>(lane, 1, multireduce::sum{}, storage);
}
