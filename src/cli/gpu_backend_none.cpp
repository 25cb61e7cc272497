// gpu_backend_none.cpp -- gpu_backend.hpp in a build without CUDA: every job is unsupported, so
// `--backend auto` runs on the CPU and `--backend cuda` stops with this reason.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "gpu_backend.hpp"

namespace multireduce::cli {

namespace {
constexpr const char* no_cuda = "this build has no CUDA support (configure with MULTIREDUCE_ENABLE_CUDA=ON)";
}

std::string gpu_unsupported_reason(const reduce_job&, int) { return no_cuda; }
std::string gpu_unsupported_reason_for_stats(npy::dtype, int) { return no_cuda; }

reduce_output gpu_reduce(const reduce_job&, int, gpu_timing*) { throw std::runtime_error(no_cuda); }

template <class T>
statistics<T> gpu_statistics(const T*, std::int64_t, int, gpu_timing*) {
  throw std::runtime_error(no_cuda);
}

#define MULTIREDUCE_INSTANTIATE(T) template statistics<T> gpu_statistics(const T*, std::int64_t, int, gpu_timing*);
MULTIREDUCE_CLI_STATISTICS_TYPES(MULTIREDUCE_INSTANTIATE)
#undef MULTIREDUCE_INSTANTIATE

std::string gpu_match_unsupported_reason(int, int) { return no_cuda; }
knn_output gpu_knn(const std::uint8_t*, std::int64_t, const std::uint8_t*, std::int64_t, int, int, bool, int, std::int64_t) {
  throw std::runtime_error(no_cuda);
}

}  // namespace multireduce::cli
