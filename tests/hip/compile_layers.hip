// The warp and block layers for an AMD GPU: every test body of tests/common/wave_cases.hpp for the
// target's wavefront in a kernel with hip_lane, as tests/common/cuda_runner.cuh runs the CUDA
// suite's. Compiled by the tests hip.compile_gfx90a (wave64) and hip.compile_gfx1030 (wave32), with
// MULTIREDUCE_TEST_WAVE set to the target's wavefront; not run (no AMD GPU in CI). The emulator runs
// and checks the same bodies on warps of as many lanes (tests/hip/test_wave_cases.cpp).
#include <hip/hip_runtime.h>
#include <multireduce/hip_lane.hip.hpp>

#include <cstddef>

#include "../common/wave_cases.hpp"

#if !defined(MULTIREDUCE_TEST_WAVE)
#error "compile with -DMULTIREDUCE_TEST_WAVE=64 (gfx90a) or 32 (gfx1030)"
#endif
#if defined(__HIP_DEVICE_COMPILE__)
static_assert(multireduce::hip_lane::max_warp_size == MULTIREDUCE_TEST_WAVE,
              "MULTIREDUCE_TEST_WAVE must be the target's wavefront (__AMDGCN_WAVEFRONT_SIZE)");
#endif

namespace mr_test {

template <class Body>
__global__ void __launch_bounds__(1024) run_body_kernel(Body body) {  // any block size up to 1024
  extern __shared__ __attribute__((aligned(16))) unsigned char shared[];
  multireduce::hip_lane lane;
  body(lane, shared);
}

/// Every body's kernel, referenced from host code: the device pass compiles each one.
template <class... Bodies>
std::size_t count_kernels(case_list<Bodies...>) {
  const void* kernels[] = {reinterpret_cast<const void*>(&run_body_kernel<Bodies>)...};
  return sizeof kernels / sizeof kernels[0];
}

}  // namespace mr_test

/// The number of kernels compiled (one per body).
std::size_t multireduce_hip_compiled_kernels() {
  return mr_test::count_kernels(mr_test::wave_cases<MULTIREDUCE_TEST_WAVE>{});
}
