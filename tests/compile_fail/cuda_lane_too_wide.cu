// A logical warp of 64 lanes on a CUDA lane (a CUDA warp has 32): a compile error with a message,
// not shuffles out of range at run time.
#include <multireduce/cuda_lane.cuh>
#include <multireduce/multireduce.hpp>
__global__ void k(int* out) {
  multireduce::cuda_lane lane;
  *out = multireduce::warp_reduce<64>(lane, 1, multireduce::sum{});
}
