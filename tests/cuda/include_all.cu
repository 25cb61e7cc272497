// Every CUDA header of the library in one translation unit, with a few device-wide algorithms
// instantiated: the test cuda_headers_compile_cleanly compiles it with plain nvcc and warnings as
// errors, as a user's own command line would (CMake's targets add the toolkit as a system
// include directory, which hides some warnings).
#include <multireduce/cpu.hpp>
#include <multireduce/cuda.cuh>
#include <multireduce/cuda_lane.cuh>
#include <multireduce/match/cpu.hpp>
#include <multireduce/match/collection_cuda.cuh>
#include <multireduce/match/cuda.cuh>
#include <multireduce/multireduce.hpp>

void instantiate(const float* in, float* out, const std::int64_t* offsets, std::int64_t n, const std::uint8_t* q,
                 std::int32_t* idx) {
  multireduce::cuda::workspace ws;
  ws.reduce_async(in, n, out, multireduce::sum{}, 0.0f);
  ws.segmented_reduce_async(in, n, out, n / 2, offsets, offsets + 1, multireduce::maximum{}, -1.0f);
  ws.fixed_segmented_reduce_async(in, out, n / 4, 4, multireduce::sum{}, 0.0f);
  ws.window_reduce_async(in, n, 1000, out, multireduce::minimum{}, 1.0f);
  (void)ws.statistics(in, n);
  multireduce::cuda::knn_hamming_async(ws, q, n, q, n, 32, 2, idx, idx);
  const std::int64_t offsets_of_two[] = {0, n / 2, n};
  const multireduce::image_pair pair[] = {{0, 1}};
  multireduce::cuda::match_collection(ws, {q, offsets_of_two, 32}, pair, 2, {.ratio = 0.8},
                                      [](std::int64_t, std::span<const multireduce::match>) {});
}
