// Every CUDA header of the library in one translation unit, with a few device-wide algorithms
// instantiated: the test cuda_headers_compile_cleanly compiles it with plain nvcc and warnings as
// errors, as a user's own command line would (CMake's targets add the toolkit as a system
// include directory, which hides some warnings).
#include <multireduce/cuda.cuh>
#include <multireduce/cuda_lane.cuh>
#include <multireduce/multireduce.hpp>

void instantiate(const float* in, float* out, const std::int64_t* offsets, std::int64_t n) {
  multireduce::cuda::workspace ws;
  ws.reduce(in, n, out, multireduce::sum{}, 0.0f);
  ws.segmented_reduce(in, n, out, n / 2, offsets, offsets + 1, multireduce::maximum{}, -1.0f);
  ws.fixed_segmented_reduce(in, out, n / 4, 4, multireduce::sum{}, 0.0f);
  ws.window_reduce(in, n, 1000, out, multireduce::minimum{}, 1.0f);
  (void)ws.statistics(in, n);
}
