// runtime/opencl/device.hpp -- the OpenCL devices the backend "opencl" sees, their programs and the
// errors of OpenCL calls (private to src/runtime, its tests and the benchmarks).
//
// Every device of every platform the ICD loader lists is one ordinal, in platform order. Each has
// a context of its own and an in-order queue with profiling (kernel times by events). Programs are
// OpenCL C (kernels/*.cl, embedded in the library at build time), built for a device the first time
// a job needs them and kept, per context, device and build options, for the life of the process.
//
// Arrays of another context (PyOpenCL's) are read in place on the caller's queue: on_queue() makes
// the device of that queue, in its context, with the programs of that context and device.
#pragma once

#ifndef CL_HPP_TARGET_OPENCL_VERSION
#define CL_HPP_TARGET_OPENCL_VERSION 120
#define CL_HPP_MINIMUM_OPENCL_VERSION 120
#endif
#define CL_HPP_ENABLE_EXCEPTIONS
#include <CL/opencl.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace multireduce::runtime::opencl {

/// How the lanes of a logical warp exchange values in the multi-reduction.
enum class exchange_form {
  local_memory,      ///< local memory and barriers (the paper's section 6): every OpenCL 1.2 device
  subgroup_shuffle,  ///< sub_group_shuffle_xor (cl_khr_subgroup_shuffle): Intel, PoCL >= 4
  ptx_shuffle,       ///< inline PTX shfl.sync.bfly: NVIDIA's OpenCL
};
std::string_view to_string(exchange_form f);
std::optional<exchange_form> parse_exchange_form(std::string_view name);

/// The form and the logical warp's width a program is built for.
struct lanes {
  exchange_form form = exchange_form::local_memory;
  int width = 32;  ///< 32 or 64
};

struct queue_device;

/// The programs built for one device in one context, by program and build options.
struct program_cache {
  std::mutex building;
  std::atomic<std::int64_t> building_nanoseconds{0};
  std::map<std::string, cl::Program> programs;
};

/// One OpenCL device: what it is and can do, its context and queue (a copy is the same device, on
/// the same programs).
struct device {
  cl::Device id;
  cl::Context context;
  cl::CommandQueue queue;  ///< in order, profiling enabled
  std::string name, platform, vendor, version;
  bool fp64 = false;              ///< cl_khr_fp64
  bool subgroup_shuffle = false;  ///< cl_khr_subgroup_shuffle (with cl_khr_subgroups)
  bool nvidia = false;            ///< NVIDIA's OpenCL: inline PTX builds
  bool cpu = false;               ///< a CPU device (PoCL)
  std::uint64_t local_bytes = 0, max_alloc = 0, global_bytes = 0;
  std::size_t max_group = 0;      ///< the largest work-group
  unsigned compute_units = 0;

  /// The forms it takes, the best first (PTX, sub-groups, local memory).
  std::vector<exchange_form> forms() const;
  /// "device 1, NVIDIA H200 (NVIDIA CUDA, OpenCL 3.0 CUDA 13.0.94)"
  std::string describe(int ordinal) const;
  /// The kernel `name` of program `file` (kernels/<file>.cl after common.cl; knn.cl alone) built with
  /// `options`; built on first use and kept. Throws device_error with the build log when it fails.
  cl::Kernel kernel(std::string_view file, const std::string& options, const char* name);
  /// Seconds spent building programs so far (a job's report counts them neither as kernels nor as
  /// copies).
  double seconds_building() const { return double(programs_->building_nanoseconds.load()) * 1e-9; }

 private:
  friend queue_device on_queue(void* queue);
  std::shared_ptr<program_cache> programs_ = std::make_shared<program_cache>();
};

/// The device of a caller's queue (a cl_command_queue, retained), in the queue's context, and its
/// ordinal among the backend's devices.
struct queue_device {
  device d;
  int ordinal = 0;
};
/// The device that runs `queue`, with its context and that queue, on which a job's commands run in
/// the order they are queued. Programs are cached per context and device: the first call in a new
/// context builds them. Throws std::invalid_argument for a null or invalid queue or an out-of-order
/// one, unsupported_error for a device the backend does not list.
queue_device on_queue(void* queue);
/// The ordinal of the device that runs `queue` (on_queue(queue).ordinal).
int ordinal_of_queue(void* queue);

/// Every OpenCL device here (empty when there is no platform or no ICD loader finds one).
int device_count();
/// Device `ordinal`; throws unsupported_error("opencl", why) when there is none.
device& device_at(int ordinal);
/// Why there is no device, in words with what to install ("" when there is one).
std::string why_no_device();

/// The lanes the backend builds its programs with on `d`: MULTIREDUCE_OPENCL_FORM (local, subgroup,
/// ptx) and MULTIREDUCE_OPENCL_WIDTH (32, 64) where set, else the device's best form at width 32
/// (64 on an AMD wave64 device through the local-memory form). Throws unsupported_error for a form
/// the device does not take or a width the form does not have.
lanes choose_lanes(const device& d);

/// The OpenCL C source of program `file` ("common", "segments", "columns", "window", "statistics",
/// "knn", "paper"), embedded at build time.
std::string_view kernel_source(std::string_view file);

/// Throws the runtime's error for a failed OpenCL call: device_memory_error for the allocation
/// failures, device_error (with the OpenCL status) otherwise. `what`: what was being done.
[[noreturn]] void fail(const cl::Error& e, const std::string& what);
/// The OpenCL status in words ("CL_OUT_OF_RESOURCES").
std::string status_name(int status);

/// A buffer of `bytes` on `d` (at least 1 byte); throws device_memory_error when it cannot be had.
cl::Buffer allocate(device& d, std::size_t bytes, const char* what);

}  // namespace multireduce::runtime::opencl
