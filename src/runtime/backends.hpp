// runtime/backends.hpp -- what runtime.cpp asks of each backend (private to src/runtime). The CPU
// backend is cpu_backend.cpp; the GPU backend is cuda_backend.cu, or cuda_backend_none.cpp in a
// build without CUDA (every job unsupported, saying so).
#pragma once

#include <string>

#include "runtime.hpp"

namespace multireduce::runtime::backends {

// ---- CPU (host memory only) -----------------------------------------------------------------------
void cpu_reduce(const reduce_job& job, const output_view& out);
any_statistics cpu_statistics(const array_view& in);
void cpu_knn(const knn_job& job, knn_result& out);
int cpu_threads();

// ---- CUDA -----------------------------------------------------------------------------------------
int cuda_device_count();
/// "" or why not, as runtime::cuda_unsupported_reason*.
std::string cuda_unsupported_reason(const reduce_job& job, int device);
std::string cuda_unsupported_reason_for_statistics(dtype type, int device);
std::string cuda_unsupported_reason_for_knn(int bytes, int device);
/// The jobs on the GPU of exec.device (the caller checked the reason is ""); fill in the report's
/// device name, times and bytes.
void cuda_reduce(const reduce_job& job, const output_view& out, const execution& exec, report& r);
void cuda_statistics(const array_view& in, any_statistics& out, const execution& exec, report& r);
void cuda_knn(const knn_job& job, knn_result& out, const execution& exec, report& r);

}  // namespace multireduce::runtime::backends
