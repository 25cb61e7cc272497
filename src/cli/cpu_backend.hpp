// cpu_backend.hpp -- what `multireduce reduce|stats` runs on the CPU (multireduce::cpu, all cores
// with OpenMP): the same jobs and the same result semantics as the GPU backend (gpu_backend.hpp),
// plus what only the CPU does (float16).
#pragma once

#include <cstdint>
#include <multireduce/statistics.hpp>

#include "gpu_backend.hpp"
#include "npy/npy.hpp"

namespace multireduce::cli {

/// Runs `job` on the CPU; results as gpu_backend.hpp documents for reduce_output (NumPy's dtypes,
/// argmin/argmax: the index within the segment or window, -1 for an empty one). float16 is
/// widened to float32 exactly, reduced in float32, and sum/prod/min/max are rounded back to
/// float16 (to nearest even). Throws std::invalid_argument for a bitwise operator on floats.
reduce_output cpu_reduce(const reduce_job& job);

/// All statistics of n elements of T (any npy dtype's C++ type except float16), one pass.
template <class T>
statistics<T> cpu_statistics(const T* data, std::int64_t n);

/// float16: the statistics of the values widened to float32 (exactly).
statistics<float> cpu_statistics(const npy::float16_bits* data, std::int64_t n);

/// Threads the CPU backend runs on (1 without OpenMP), for --timing.
int cpu_threads();

}  // namespace multireduce::cli
