// runtime/backends.hpp -- what runtime.cpp asks of each backend (private to src/runtime). The CPU
// backend is cpu_backend.cpp; the GPU backend is cuda_backend.cu, or cuda_backend_none.cpp in a
// build without CUDA (every job unsupported, saying so).
#pragma once

#include <cstdint>
#include <string>

#include "runtime.hpp"

namespace multireduce::runtime::backends {

/// The error for offsets whose first bad entry is s (s == 0: o[0] < 0; else o[s] < o[s - 1], or
/// s == segments and o[s] > n), the message naming the entries: one wording for offsets checked on
/// the host (validate) and on the GPU (cuda_backend.cu). `previous` is o[s - 1] (unused for s = 0).
[[noreturn]] void throw_bad_offset(std::int64_t s, std::int64_t previous, std::int64_t value, std::int64_t n);

// ---- CPU (host memory only; exec.progress told between pieces) ------------------------------------
void cpu_reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec);
any_statistics cpu_statistics(array_source& in, const execution& exec);
void cpu_knn(const knn_job& job, knn_result& out, const execution& exec);
int cpu_threads();

// ---- CUDA -----------------------------------------------------------------------------------------
int cuda_device_count();
/// "" or why not, as runtime::cuda_unsupported_reason*.
std::string cuda_unsupported_reason(const reduce_job& job, int device);
std::string cuda_unsupported_reason_for_statistics(dtype type, int device);
std::string cuda_unsupported_reason_for_knn(int bytes, int device);
/// The jobs on the GPU of exec.device (the caller checked the reason is ""); fill in the report's
/// device name, times and bytes. Arrays in memory (host or device; one upload of a host input), or
/// a host source read piece by piece.
void cuda_reduce(const reduce_job& job, const output_view& out, const execution& exec, report& r);
void cuda_reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec, report& r);
void cuda_statistics(const array_view& in, any_statistics& out, const execution& exec, report& r);
void cuda_statistics(array_source& in, any_statistics& out, const execution& exec, report& r);
void cuda_knn(const knn_job& job, knn_result& out, const execution& exec, report& r);
/// Arrays and outputs in GPU memory: queued on exec.stream, not waited for.
void cuda_statistics(const array_view& in, const output_view& out, const execution& exec, report& r);
void cuda_knn(const knn_device_job& job, const execution& exec, report& r);
/// Copies `bytes` bytes of host memory to `out` (host memory, or GPU memory: a CUDA copy).
void write_bytes(const output_view& out, const void* from, std::size_t bytes, const execution& exec);

}  // namespace multireduce::runtime::backends
