// runtime/opencl/backend.cpp -- the backend "opencl": the runtime's jobs on any OpenCL device (a GPU
// through its vendor's OpenCL, a CPU through PoCL), host arrays in, read piece by piece into the
// device's memory (algorithms.hpp has the device side); or arrays already in an OpenCL context's
// memory (PyOpenCL's), read in place on the caller's queue. Host data runs here only when named:
// "auto" keeps to CUDA and the CPU backend; data in OpenCL memory runs here with "auto" too. What
// runs here, and why not when it does not, is below; the jobs themselves are in reduce.cpp,
// statistics.cpp, knn.cpp and collection.cpp (jobs.hpp).
#include <span>
#include <string>

#include "../backend.hpp"
#include "device.hpp"
#include "jobs.hpp"

namespace multireduce::runtime {
namespace {

using namespace opencl_backend_detail;

/// DLPack's kDLOpenCL: an OpenCL context's buffers (PyOpenCL's arrays).
constexpr int opencl_dlpack_device_types[] = {4};

class opencl_runtime_backend final : public backend {
 public:
  std::string_view name() const override { return "opencl"; }
  std::string_view summary() const override {
    return "any OpenCL device: a GPU through its vendor's OpenCL, the CPU through PoCL (host arrays only when "
           "named; PyOpenCL arrays in place)";
  }
  std::string_view noun() const override { return "the OpenCL device"; }
  memory device_memory() const override { return memory::of("opencl"); }
  bool automatic_for_host_data() const override { return false; }
  int device_of_stream(void* stream) const override { return ordinal_of_queue(stream); }
  int device_count() const override { return opencl::device_count(); }
  std::string_view device_noun() const override { return "OpenCL device"; }
  std::span<const int> dlpack_device_types() const override { return opencl_dlpack_device_types; }
  std::string describe_device(int ordinal) const override {
    if (ordinal < 0 || ordinal >= opencl::device_count()) return "OpenCL device " + std::to_string(ordinal);
    return device_at(ordinal).describe(ordinal);
  }

  refusal unsupported(const reduce_job& job, const device_set& devices) const override {
    if (refusal r = unusable(devices); !r.empty()) return r;
    if (const std::string why = unsupported_type(device_at(devices.first()), job.input.type); !why.empty())
      return {why, true};
    return {};
  }
  refusal unsupported_statistics(dtype type, const device_set& devices) const override {
    if (refusal r = unusable(devices); !r.empty()) return r;
    const device& d = device_at(devices.first());
    if (!d.fp64) return {"the statistics add in float64 (cl_khr_fp64), which " + d.name + " does not have", true};
    (void)type;
    return {};
  }
  refusal unsupported_knn(int, const device_set& devices) const override { return unusable(devices); }

  void reduce(const reduce_job& job, array_source& in, output_sink& out, const execution& exec,
              report& r) const override {
    reduce_source(job, in, out, exec, r);
  }
  void statistics(array_source& in, any_statistics& out, const execution& exec, report& r) const override {
    statistics_source(in, out, exec, r);
  }
  void knn(const knn_job& job, knn_result& out, const execution& exec, report& r) const override {
    knn_host(job, out, exec, r);
  }
  void match_collection(const collection_job& job, const pair_matches_callback& done, const execution& exec,
                        report& r) const override {
    collection_on_device(job, done, exec, r);
  }

  // Arrays in an OpenCL context's memory: array_view::data and output_view::data are cl_mem handles
  // of that context (element 0 at the buffer's start), exec.stream the cl_command_queue (of that
  // context) that every command goes on, in order. Segments and windows into a device output are
  // queued and not waited for; whole-array and axis results and statistics are finished on the host
  // from the parts' folds (a few KiB read back), so those calls wait for the queue.
  void reduce(const reduce_job& job, const output_view& out, const execution& exec, report& r) const override {
    reduce_arrays(job, out, exec, r);
  }
  void statistics(const array_view& in, const output_view& out, const execution& exec, report& r) const override {
    statistics_arrays(in, out, exec, r);
  }
  void knn(const knn_device_job& job, const execution& exec, report& r) const override { knn_arrays(job, exec, r); }

 private:
  static refusal unusable(const device_set& devices) {
    if (opencl::device_count() == 0) return {why_no_device()};
    if (!devices.single()) return {"runs a job on one OpenCL device at a time (--device N)"};
    const int d = devices.first();
    if (d < 0 || d >= opencl::device_count())
      return {"there is no OpenCL device " + std::to_string(d) + " (this machine has " +
              std::to_string(opencl::device_count()) + "; multireduce --version lists them)"};
    return {};
  }
};

}  // namespace

const backend& opencl_backend() {
  static const opencl_runtime_backend the_backend;
  return the_backend;
}

}  // namespace multireduce::runtime
