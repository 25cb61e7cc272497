// multireduce/cuda.cuh -- the device-wide reductions on the GPU (include from .cu files).
//
// Two layers:
//  - CUB-style entry points (reduce.cuh: reduce, transform_reduce, argmin, argmax; statistics.cuh;
//    segmented_reduce.cuh; fixed_segmented_reduce.cuh; window_reduce.cuh): query the temporary
//    bytes with temp_storage == nullptr, then run on a stream; they return a cudaError_t and never
//    throw.
//  - `workspace` (workspace.cuh): owns (and grows) the temporary storage for one stream, runs the
//    same algorithms, throws multireduce::cuda::error with a message, and keeps reduce's ticket
//    zeroed between calls, so a reduction is exactly one kernel launch.
// The matcher has its own wing: multireduce/match/cuda.cuh (GPU) and multireduce/match/cpu.hpp.
#pragma once

#include "cuda/fixed_segmented_reduce.cuh"
#include "cuda/reduce.cuh"
#include "cuda/segmented_reduce.cuh"
#include "cuda/statistics.cuh"
#include "cuda/window_reduce.cuh"
#include "cuda/workspace.cuh"
#include "cuda_lane.cuh"
