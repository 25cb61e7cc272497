// runtime/cuda/unavailable.cpp -- the backend "cuda" in a build without CUDA: no devices, every job
// unsupported with the reason, so "auto" runs on the CPU and naming it says why not.
#include "../unavailable.hpp"

namespace multireduce::runtime {

const backend& cuda_backend() {
  static constexpr int dlpack_device_types[] = {2, 13};  // kDLCUDA, kDLCUDAManaged (cuda/backend.cu)
  static const unavailable_backend the_backend{{
      .name = "cuda",
      .summary = "NVIDIA GPUs through CUDA (not in this build)",
      .noun = "the GPU",
      .device_memory = memory::of("cuda"),
      .automatic_for_host_data = true,
      .device_noun = "CUDA device",
      .splits_over_devices = true,
      .dlpack_device_types = dlpack_device_types,
      .why = "this build has no CUDA support (configure with MULTIREDUCE_ENABLE_CUDA=ON)",
  }};
  return the_backend;
}

}  // namespace multireduce::runtime
