// runtime/cuda/unavailable.cpp -- the backend "cuda" in a build without CUDA: no devices, every job
// unsupported with the reason, so "auto" runs on the CPU and naming it says why not.
#include "../unavailable.hpp"

namespace multireduce::runtime {

const backend& cuda_backend() {
  static const unavailable_backend the_backend{
      "cuda", "NVIDIA GPUs through CUDA (not in this build)", "the GPU", memory::of("cuda"), true, "GPU",
      "this build has no CUDA support (configure with MULTIREDUCE_ENABLE_CUDA=ON)"};
  return the_backend;
}

}  // namespace multireduce::runtime
