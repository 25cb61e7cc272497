// runtime/cuda/unavailable.cpp -- the backend "cuda" in a build without CUDA: no devices, every job
// unsupported with the reason, so "auto" runs on the CPU and naming it says why not.
#include <string>

#include "../backend.hpp"

namespace multireduce::runtime {
namespace {

constexpr const char* no_cuda = "this build has no CUDA support (configure with MULTIREDUCE_ENABLE_CUDA=ON)";

class cuda_unavailable final : public backend {
 public:
  std::string_view name() const override { return "cuda"; }
  std::string_view summary() const override { return "NVIDIA GPUs through CUDA (not in this build)"; }
  std::string_view noun() const override { return "the GPU"; }
  memory device_memory() const override { return memory::of("cuda"); }
  int device_count() const override { return 0; }
  std::string describe_device(int ordinal) const override { return "GPU " + std::to_string(ordinal); }
  refusal unsupported(const reduce_job&, const device_set&) const override { return {no_cuda}; }
  refusal unsupported_statistics(dtype, const device_set&) const override { return {no_cuda}; }
  refusal unsupported_knn(int, const device_set&) const override { return {no_cuda}; }
  void reduce(const reduce_job&, array_source&, output_sink&, const execution&, report&) const override { refuse(); }
  void statistics(array_source&, any_statistics&, const execution&, report&) const override { refuse(); }
  void knn(const knn_job&, knn_result&, const execution&, report&) const override { refuse(); }
  void match_collection(const collection_job&, const pair_matches_callback&, const execution&, report&) const override {
    refuse();
  }
  using backend::knn;
  using backend::reduce;
  using backend::statistics;

 private:
  [[noreturn]] static void refuse() { throw unsupported_error("cuda", no_cuda); }
};

}  // namespace

const backend& cuda_backend() {
  static const cuda_unavailable the_backend;
  return the_backend;
}

}  // namespace multireduce::runtime
