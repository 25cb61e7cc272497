// runtime/opencl/jobs.hpp -- the OpenCL backend's jobs, one family a file: reduce.cpp (whole
// arrays, an axis, segments, windows), statistics.cpp, knn.cpp, collection.cpp. Each job comes in
// two forms: host data on one of the backend's devices (a host source uploaded piece by piece, its
// outputs back to the sink), and arrays in an OpenCL context's memory (PyOpenCL's) read in place on
// the caller's queue (exec.stream). backend.cpp says which jobs the backend takes.
#pragma once

#include <cstdint>
#include <vector>

#include "../runtime.hpp"
#include "context.hpp"

namespace multireduce::runtime::opencl_backend_detail {

// Every job fills in the report's device, times and bytes.

/// A host source read front to back on device exec.devices.first(), outputs to the sink as they are
/// produced.
void reduce_source(const reduce_job& job, array_source& in, output_sink& out, const execution& exec, report& r);
/// The input in OpenCL memory, on the caller's queue: segments and windows into a device output are
/// queued and not waited for; whole-array and axis results are finished on the host from the
/// parts' folds (a few KiB read back), so those calls wait for the queue.
void reduce_arrays(const reduce_job& job, const output_view& out, const execution& exec, report& r);

void statistics_source(array_source& in, any_statistics& out, const execution& exec, report& r);
/// Finished on the host from the parts' states: waits for the queue.
void statistics_arrays(const array_view& in, const output_view& out, const execution& exec, report& r);

void knn_host(const knn_job& job, knn_result& out, const execution& exec, report& r);
void knn_arrays(const knn_device_job& job, const execution& exec, report& r);
/// Every pair of a collection in host memory, its rows uploaded once.
void collection_on_device(const collection_job& job, const pair_matches_callback& done, const execution& exec,
                          report& r);

/// k nearest training rows of each query row, the sets already in device memory (knn.cpp; the
/// collection matcher's search too).
void knn_on_device(device& d, const cl::Buffer& query, std::int64_t query_first, std::int64_t queries,
                   const cl::Buffer& train, std::int64_t train_first, std::int64_t trains, int bytes, int k,
                   std::vector<std::int32_t>& idx, std::vector<std::int32_t>& dist, job_clock& clock);

}  // namespace multireduce::runtime::opencl_backend_detail
