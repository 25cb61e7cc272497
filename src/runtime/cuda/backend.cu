// runtime/cuda/backend.cu -- the backend "cuda": the runtime's jobs on NVIDIA GPUs
// (multireduce::cuda). What runs here, and why not when it does not (anything else runs on the
// CPU): whole-array reduce and statistics of every dtype but float16; segmented (fixed length or
// offsets) and window reduce of float32, float64, int32 and int64 with sum, min or max; the
// matcher's search for descriptors of up to match_max_bytes. On a set of several GPUs
// (devices.cuh): the whole-array jobs and the search of host data, and the collection matcher. Every job makes its device current
// and gives the caller's back when it returns; the jobs themselves are in reduce.cu,
// statistics.cu, knn.cu and collection.cu.
#include <span>
#include <string>

#include <multireduce/match/cuda.cuh>

#include "../backend.hpp"
#include "context.cuh"
#include "devices.cuh"
#include "jobs.cuh"

namespace multireduce::runtime {
namespace {

using namespace cuda_backend_detail;

/// "" when every GPU of the set exists; else why not.
std::string unusable(const device_set& devices) { return unusable_devices(devices); }

/// What a set of several GPUs runs, for the refusals of everything else.
constexpr const char* what_splits =
    "a set of several GPUs runs the whole-array reduce and statistics of host data, the matcher's search of host "
    "descriptors and the collection matcher; name one device for this job";

/// Throws for arrays in GPU memory on a set of several GPUs: they are reduced on their own GPU.
void refuse_device_arrays_on_a_set(const execution& exec) {
  if (!exec.devices.single())
    throw unsupported_error("cuda", std::string("arrays in GPU memory run on the GPU that holds them; ") + what_splits);
}

/// DLPack's kDLCUDA and kDLCUDAManaged: the memory the GPU reads in place.
constexpr int cuda_dlpack_device_types[] = {2, 13};

class cuda_runtime_backend final : public backend {
 public:
  std::string_view name() const override { return "cuda"; }
  std::string_view summary() const override { return "NVIDIA GPUs through CUDA"; }
  std::string_view noun() const override { return "the GPU"; }
  memory device_memory() const override { return cuda_memory; }
  int device_count() const override { return visible_devices(); }
  std::string_view device_noun() const override { return "CUDA device"; }
  bool splits_over_devices() const override { return true; }
  std::span<const int> dlpack_device_types() const override { return cuda_dlpack_device_types; }
  std::string describe_device(int ordinal) const override {
    return "GPU " + std::to_string(ordinal) + ", " + device_name(ordinal);
  }

  refusal unsupported(const reduce_job& job, const device_set& devices) const override {
    if (std::string why = unusable(devices); !why.empty()) return {why};
    if (job.input.type == dtype::float16) return {"float16 runs on the CPU backend only", true};
    if (info(job.op).integers_only && is_floating(job.input.type)) return {"bitwise operators need an integer dtype", true};
    if (job.shape == shape_kind::whole) return {};
    if (!devices.single()) return {what_splits};
    if (job.shape == shape_kind::axis)
      return {"the GPU reduces contiguous runs; an axis other than the last runs on the CPU (NumPy's order, one row "
              "after another)"};
    const bool type_ok = visit(job.input.type, [](auto element) { return shaped_type<decltype(element)>; });
    if (!type_ok || (shaped_ops & op_bit(job.op)) == 0)
      return {"the GPU backend runs segmented and window reductions of float32, float64, int32 and int64 with sum, "
              "min or max; use --backend cpu",
              !type_ok};
    return {};
  }
  refusal unsupported_statistics(dtype type, const device_set& devices) const override {
    if (std::string why = unusable(devices); !why.empty()) return {why};
    if (type == dtype::float16) return {"the GPU statistics take no float16", true};
    return {};
  }
  refusal unsupported_knn(int bytes, const device_set& devices) const override {
    if (std::string why = unusable(devices); !why.empty()) return {why};
    if (bytes > mc::match_max_bytes)
      return {"the GPU matcher takes descriptors of up to " + std::to_string(mc::match_max_bytes) + " bytes"};
    return {};
  }

  void reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec,
              report& r) const override {
    on_gpu(exec, r, [&] { reduce_source(job, in, out, exec, r); });
  }
  void statistics(array_source& in, any_statistics& out, const execution& exec, report& r) const override {
    on_gpu(exec, r, [&] { statistics_source(in, out, exec, r); });
  }
  void knn(const knn_job& job, knn_result& out, const execution& exec, report& r) const override {
    on_gpu(exec, r, [&] { knn_host(job, out, exec, r); });
  }
  void match_collection(const collection_job& job, const pair_matches_callback& done, const execution& exec,
                        report& r) const override {
    if (!job.where.is_host()) refuse_device_arrays_on_a_set(exec);
    on_gpu(exec, r, [&] { collection_on_gpu(job, done, exec, r); });
  }
  void reduce(const reduce_job& job, const output_view& out, const execution& exec, report& r) const override {
    refuse_device_arrays_on_a_set(exec);
    on_gpu(exec, r, [&] { reduce_arrays(job, out, exec, r); });
  }
  void statistics(const array_view& in, const output_view& out, const execution& exec, report& r) const override {
    refuse_device_arrays_on_a_set(exec);
    on_gpu(exec, r, [&] { statistics_arrays(in, out, exec, r); });
  }
  void knn(const knn_device_job& job, const execution& exec, report& r) const override {
    refuse_device_arrays_on_a_set(exec);
    on_gpu(exec, r, [&] { knn_arrays(job, exec, r); });
  }

 private:
  /// Runs body() with the device set's GPU current, the report saying which.
  template <class F>
  static void on_gpu(const execution& exec, report& r, F&& body) {
    const int device = exec.devices.first();
    const current_device current(device);
    r.device = device;
    r.device_name = device_name(device);
    body();
  }
};

}  // namespace

const backend& cuda_backend() {
  static const cuda_runtime_backend the_backend;
  return the_backend;
}

}  // namespace multireduce::runtime
