// runtime/cuda_backend_none.cpp -- the GPU backend in a build without CUDA: every job is
// unsupported, so `automatic` runs on the CPU and `cuda` stops with this reason.
#include <cstring>
#include <string>

#include "backends.hpp"

namespace multireduce::runtime::backends {

namespace {
constexpr const char* no_cuda = "this build has no CUDA support (configure with MULTIREDUCE_ENABLE_CUDA=ON)";
}

int cuda_device_count() { return 0; }
std::string cuda_unsupported_reason(const reduce_job&, int) { return no_cuda; }
std::string cuda_unsupported_reason_for_statistics(dtype, int) { return no_cuda; }
std::string cuda_unsupported_reason_for_knn(int, int) { return no_cuda; }
void cuda_reduce(const reduce_job&, const output_view&, const execution&, report&) {
  throw unsupported_error("cuda", no_cuda);
}
void cuda_reduce(const reduce_job&, array_source&, output_sink&, const execution&, report&) {
  throw unsupported_error("cuda", no_cuda);
}
void cuda_statistics(const array_view&, any_statistics&, const execution&, report&) {
  throw unsupported_error("cuda", no_cuda);
}
void cuda_statistics(array_source&, any_statistics&, const execution&, report&) {
  throw unsupported_error("cuda", no_cuda);
}
void cuda_knn(const knn_job&, knn_result&, const execution&, report&) { throw unsupported_error("cuda", no_cuda); }
void cuda_statistics(const array_view&, const output_view&, const execution&, report&) {
  throw unsupported_error("cuda", no_cuda);
}
void cuda_knn(const knn_device_job&, const execution&, report&) { throw unsupported_error("cuda", no_cuda); }
void write_bytes(const output_view& out, const void* from, std::size_t bytes, const execution&) {
  if (out.where != memory::host) throw unsupported_error("cuda", no_cuda);
  std::memcpy(out.data, from, bytes);
}

}  // namespace multireduce::runtime::backends
