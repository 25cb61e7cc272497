// runtime/cuda/jobs.cuh -- the CUDA backend's jobs, one family a file: reduce.cu (whole arrays,
// segments, windows), statistics.cu, knn.cu, collection.cu. Each job has one form, queued on the caller's stream
// with every array in GPU memory; arrays in host memory are the same job with staging around it
// (copies in and out, waited for), and a host source is the same job piece by piece.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../runtime.hpp"

namespace multireduce::runtime::cuda_backend_detail {

/// The element types and operators of the GPU's segmented and window reductions.
template <class T>
inline constexpr bool shaped_type = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;
inline constexpr unsigned shaped_ops = op_bit(op_kind::sum) | op_bit(op_kind::min) | op_bit(op_kind::max);

// Every job runs with its device current (the backend makes it so) and fills in the report's
// times and bytes.

/// Arrays in memory, at least one in GPU memory: queued when all are, else staged.
void reduce_arrays(const reduce_job& job, const output_view& out, const execution& exec, report& r);
/// A host source read front to back, outputs to the sink as they are produced.
void reduce_source(const reduce_job& job, array_source& in, output_sink& out, const execution& exec, report& r);

void statistics_arrays(const array_view& in, const output_view& out, const execution& exec, report& r);
void statistics_source(array_source& in, any_statistics& out, const execution& exec, report& r);

void knn_arrays(const knn_device_job& job, const execution& exec, report& r);
void knn_host(const knn_job& job, knn_result& out, const execution& exec, report& r);
void collection_on_gpu(const collection_job& job, const pair_matches_callback& done, const execution& exec, report& r);

}  // namespace multireduce::runtime::cuda_backend_detail
